"""A knowledge base's entity graph switched on or off, and built for the documents it already holds."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rag.graph.index import GraphIndexer
from rag.graph.leg import GraphSwitches
from rag.graph.port import GraphStore
from storage.repos.documents import DocumentRepo

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GraphBuilt:
    """What switching a graph on read: documents and the entity mentions stored for them."""

    documents: int
    mentions: int


class GraphBuilder:
    """Switches a base's graph and reads its documents into it (new ones are read at ingestion)."""

    def __init__(
        self, store: GraphStore, switches: GraphSwitches, documents: DocumentRepo, indexer: GraphIndexer | None = None
    ) -> None:
        self._store = store
        self._switches = switches
        self._documents = documents
        self._indexer = indexer or GraphIndexer(store)

    async def switch_on(self, kb_id: str) -> GraphBuilt:
        """Switch the graph on and read every document the base holds into it, one document at a time.

        Asked again, it reads them again: a document's old mentions are dropped first, so this is also the rebuild.
        """
        await self._switches.switch(kb_id, enabled=True)
        documents = mentions = 0
        for document in await self._documents.in_kb(kb_id):
            chunks = await self._documents.document_chunks(document.id)
            await self._store.forget_document(document.id)
            mentions += await self._indexer.index(kb_id, chunks)
            documents += 1
        log.info("graph=built kb=%s documents=%d mentions=%d", kb_id, documents, mentions)
        return GraphBuilt(documents, mentions)

    async def switch_off(self, kb_id: str) -> None:
        """Switch the graph off: answers stop searching it and ingestion stops filling it (what it holds stays)."""
        await self._switches.switch(kb_id, enabled=False)
