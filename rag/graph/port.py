"""The graph store port: the relational store by default (storage.repos.graph.GraphRepo meets it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from storage.records import ChunkGraph


class GraphStore(Protocol):
    """Entities per knowledge base, linked to the live chunks that mention them."""

    async def enabled(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` whose graph is switched on."""
        ...

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        """Switch the knowledge base's graph on or off; returns whether it was on before."""
        ...

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        """Store what the chunks mention; returns how many mentions."""
        ...

    async def forget_document(self, document_id: str) -> None:
        """Remove what the document's chunks mention."""
        ...

    async def chunks_mentioning(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Per folded name, up to `limit` live chunks of `kb_ids` that mention it."""
        ...

    async def mentions_among(
        self, kb_ids: Sequence[str], keys: Sequence[str], chunk_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """Per chunk of `chunk_ids`, which of `keys` it mentions."""
        ...

    async def related(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` folded names of `kb_ids`' entities one relation away from those of `keys` (not in `keys`)."""
        ...
