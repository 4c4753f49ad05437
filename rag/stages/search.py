"""The SEARCH stage: hybrid chunk search, FAQs, directly targeted documents, expansion and history refs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Protocol

from rag.expansion import expand_query
from rag.faq.search import FaqSearch
from rag.followup import leans_on_history
from rag.fusion import dedupe
from rag.pipeline import TurnContext
from rag.retrieval import Retriever
from rag.types import Candidate, Vector
from rag.web.leg import WEB_ID_PREFIX

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """How many results count as thin, whether to expand the query then, and when targeted documents load whole."""

    top_k: int = 5
    expand: bool = True
    # WeKnora loads the documents a question targets directly when they hold this many chunks or fewer in all.
    direct_max_chunks: int = 50


class SearchLeg(Protocol):
    """Another search run beside the chunk search (web, knowledge graph): its candidates join the chunks'."""

    name: str

    async def search(self, turn: TurnContext, vector: Vector) -> list[Candidate]:
        """Candidates for the turn's search query; [] when the leg is off for this turn."""
        ...


class Search:
    """Reads search_query, kb_ids, document_ids, history_refs; writes query_vector, candidates (FAQs first)."""

    name = "SEARCH"

    def __init__(
        self,
        retriever: Retriever,
        faqs: FaqSearch,
        config: SearchConfig | None = None,
        legs: Sequence[SearchLeg] = (),
    ) -> None:
        self._retriever = retriever
        self._faqs = faqs
        self._config = config or SearchConfig(top_k=retriever.config.top_k)
        self._legs = tuple(legs)

    async def run(self, turn: TurnContext) -> str:
        if not turn.kb_ids:
            return "skipped=no_knowledge_base"
        query = turn.search_query
        vector = turn.query_vector = await self._retriever.query_vector(query)
        direct, faqs, chunks, *legs = await asyncio.gather(
            self._direct(turn),
            self._faqs.search(query, vector, turn.kb_ids),
            self._retriever.search_chunks(query, turn.kb_ids, vector=vector),
            *(_leg_or_nothing(leg, turn, vector) for leg in self._legs),
        )
        found = dedupe([*direct, *faqs, *chunks, *(candidate for leg in legs for candidate in leg)])
        expanded: list[Candidate] = []
        if self._config.expand and len(found) < max(1, self._config.top_k // 2):
            expanded = await self._expanded(query, turn.kb_ids)
        history = await self._history(turn)
        turn.candidates = dedupe([*found, *expanded, *history])
        return (
            f"direct={len(direct)} faqs={len(faqs)} chunks={len(chunks)} expanded={len(expanded)} "
            f"history={len(history)}"
            + "".join(f" {leg.name}={len(found)}" for leg, found in zip(self._legs, legs, strict=True))
        )

    async def _direct(self, turn: TurnContext) -> list[Candidate]:
        if not turn.document_ids:
            return []
        if await self._retriever.document_chunk_count(turn.document_ids) > self._config.direct_max_chunks:
            return []
        return await self._retriever.document_candidates(turn.document_ids, turn.kb_ids)

    async def _expanded(self, query: str, kb_ids: Sequence[str]) -> list[Candidate]:
        # Surface words: a variant is searched by meaning too, and "vaccin caus autism" embeds worse than the words.
        words = partial(self._retriever.lexical.tokens, stem=False, remember=False)
        variants = await asyncio.to_thread(expand_query, query, words)
        results = await asyncio.gather(*(self._retriever.search_chunks(variant, kb_ids) for variant in variants))
        return [replace(candidate, legs=candidate.legs | {"expansion"}) for found in results for candidate in found]

    async def _history(self, turn: TurnContext) -> list[Candidate]:
        # A self-contained question must not get the last answer back ("Who is the CEO?" after the lunch FAQ).
        if not turn.history_refs or not leans_on_history(turn.query, turn.rewritten):
            return []
        legs = frozenset({"history"})
        # A web reference of the last answer is no chunk: the web leg finds it again in the conversation's passages.
        refs = [ref for ref in dict.fromkeys(turn.history_refs) if not ref.startswith(WEB_ID_PREFIX)]
        chunks = await self._retriever.chunk_candidates([(ref, 0.0) for ref in refs], dict.fromkeys(refs, legs))
        faqs = await self._faqs.by_ids(refs, turn.kb_ids, legs=legs)
        return [*[chunk for chunk in chunks if chunk.kb_id in turn.kb_ids], *faqs]


async def _leg_or_nothing(leg: SearchLeg, turn: TurnContext, vector: Vector) -> list[Candidate]:
    # A leg beside the knowledge base (a web provider down, a graph store gone) must not cost the answer.
    try:
        return await leg.search(turn, vector)
    except Exception as exc:
        log.warning("search leg %s failed, answering without it: %s", leg.name, exc)
        return []
