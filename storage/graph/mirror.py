"""What the relational repositories tell a graph kept outside SQL when they drop the rows its mentions point at."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from typing import Protocol

from storage.errors import StorageError

log = logging.getLogger(__name__)


class GraphMirror(Protocol):
    """A graph outside the relational store (storage.graph.neo4j.Neo4jGraph); it forgets what SQL dropped."""

    async def forget_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove these chunks and what they mention."""
        ...

    async def forget_document(self, document_id: str) -> None:
        """Remove the document's chunks, what they mention and the relations read from it."""
        ...

    async def forget_kb(self, kb_id: str) -> None:
        """Remove the knowledge base's whole graph."""
        ...


async def tell(work: Awaitable[None], what: str) -> None:
    """Await what the graph is told to forget; a graph that refuses is logged in one line, never raised.

    SQL has dropped the rows already, and the graph's reads ask SQL which chunks are live, so what it keeps costs
    reads only: a delete must not fail on it.
    """
    try:
        await work
    except StorageError as exc:
        log.warning("graph=not_forgotten %s reason=%s", what, exc)
