"""Reading chunks into the graph: their entities by rule, stored in one batch per call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from rag.graph.entities import Entity, extract_entities
from rag.graph.port import GraphStore
from storage.records import ChunkGraph, ChunkRecord, GraphEntityRecord

log = logging.getLogger(__name__)


def entity_record(entity: Entity) -> GraphEntityRecord:
    """The entity as the graph stores it."""
    return GraphEntityRecord(entity.key, entity.name, entity.label, entity.attributes)


def chunk_graphs(chunks: Sequence[ChunkRecord]) -> list[ChunkGraph]:
    """Each chunk's entities (chunks that name none are left out)."""
    graphs = []
    for chunk in chunks:
        entities = tuple(entity_record(entity) for entity in extract_entities(chunk.text) if entity.key)
        if entities:
            graphs.append(ChunkGraph(chunk.document_id, chunk.chunk_id, entities))
    return graphs


class GraphIndexer:
    """Puts the entities of a knowledge base's new chunks into its graph, when its graph is switched on."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store

    async def index(self, kb_id: str, chunks: Sequence[ChunkRecord]) -> int:
        """Store the chunks' entities if the base's graph is on; returns the mentions stored."""
        if not chunks or kb_id not in await self._store.enabled([kb_id]):
            return 0
        # jieba's tagger takes a few ms a chunk: off the event loop.
        graphs = await asyncio.to_thread(chunk_graphs, chunks)
        mentions = await self._store.add(kb_id, graphs)
        log.info("graph=indexed kb=%s chunks=%d mentions=%d", kb_id, len(chunks), mentions)
        return mentions
