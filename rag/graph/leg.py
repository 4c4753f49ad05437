"""ENTITY_SEARCH: the chunks that mention the question's entities, a search leg beside the chunk search."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from rag.graph.port import GraphStore
from rag.graph.question import QuestionEntities
from rag.graph.rank import EntityLimits, hop_chunks, rank_chunks
from rag.pipeline import TurnContext
from rag.types import Candidate, Vector

log = logging.getLogger(__name__)

GRAPH_LEG = "graph"
# The graph's chunks are scored as a fused list's ranks are (RRF's k=60, Cormack et al. 2009), so they sit among
# the chunk search's before the reranker judges both.
_RRF_K = 60
# How long a base's switch is trusted without reading it again: a turn of a base whose graph is off then costs no
# SQL, and `/graph on|off` reaches every instance within this many seconds.
SWITCH_TTL = 10.0


class GraphSwitches:
    """Which bases' graphs are on, read at most once per SWITCH_TTL; a switch made through it counts at once."""

    def __init__(self, store: GraphStore, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock
        self._known: dict[str, tuple[bool, float]] = {}

    async def enabled(self, kb_ids: Sequence[str]) -> list[str]:
        """Those of `kb_ids` whose graph is on, sorted."""
        now = self._clock()
        stale = [kb_id for kb_id in kb_ids if now - self._known.get(kb_id, (False, -SWITCH_TTL))[1] >= SWITCH_TTL]
        if stale:
            on = await self._store.enabled(stale)
            # Bounded by the bases there are; a base deleted is simply never asked about again.
            self._known.update((kb_id, (kb_id in on, now)) for kb_id in stale)
        return sorted(kb_id for kb_id in dict.fromkeys(kb_ids) if self._known[kb_id][0])

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        """Switch the base's graph in the store; this process's answers see it at once. Returns the old state."""
        before = await self._store.switch(kb_id, enabled=enabled)
        self._known[kb_id] = (enabled, self._clock())
        return before


class ChunkCandidates(Protocol):
    """Turns chunk ids into candidates (rag.retrieval.Retriever.chunk_candidates)."""

    async def chunk_candidates(
        self, scored: Sequence[tuple[str, float]], legs: dict[str, frozenset[str]]
    ) -> list[Candidate]:
        """The chunks as candidates in the given order; ids SQL lacks are dropped."""
        ...


class EntitySearch:
    """The entity leg: on for the knowledge bases whose graph is switched on, [] for the rest."""

    name = GRAPH_LEG

    def __init__(
        self,
        store: GraphStore,
        chunks: ChunkCandidates,
        question: QuestionEntities,
        limits: EntityLimits | None = None,
        *,
        switches: GraphSwitches | None = None,
    ) -> None:
        self._store = store
        self._chunks = chunks
        self._question = question
        self._limits = limits or EntityLimits()
        self._switches = switches or GraphSwitches(store)

    async def search(self, turn: TurnContext, vector: Vector) -> list[Candidate]:
        """Chunks of the turn's graph-enabled bases naming the search query's entities, best first."""
        kb_ids = await self._switches.enabled(turn.kb_ids)
        if not kb_ids:
            return []
        entities = await self._question.entities(turn.search_query)
        keys = list(dict.fromkeys(entity.key for entity in entities if entity.key))[: self._limits.entities]
        if not keys:
            return []
        found = await self._store.chunks_mentioning(kb_ids, keys, self._limits.read)
        pool = list(dict.fromkeys(chunk for chunks in found.values() for chunk in chunks))
        mentions = await self._store.mentions_among(kb_ids, keys, pool)
        ranked = [chunk for chunk, _ in rank_chunks(found, mentions, self._limits)]
        related = await self._related(kb_ids, keys, ranked)
        chosen = ranked + related
        legs = frozenset({GRAPH_LEG})
        candidates = await self._chunks.chunk_candidates(
            [(chunk, 1 / (_RRF_K + rank + 1)) for rank, chunk in enumerate(chosen)], {chunk: legs for chunk in chosen}
        )
        log.debug(
            "graph entities=%d read=%d related=%d returned=%d", len(keys), len(pool), len(related), len(candidates)
        )
        # Belt and braces: the store reads only these bases, and a chunk of any other never leaves the leg.
        return [candidate for candidate in candidates if candidate.kb_id in kb_ids]

    async def _related(self, kb_ids: Sequence[str], keys: Sequence[str], direct: Sequence[str]) -> list[str]:
        """One hop: live chunks naming an entity related to the question's, not found directly, capped."""
        limits = self._limits
        if limits.hop <= 0:
            return []
        related = await self._store.related(kb_ids, keys, limits.related)
        if not related:
            return []
        found = await self._store.chunks_mentioning(kb_ids, related, limits.hop + len(direct))
        return hop_chunks(found, direct, limits.hop)
