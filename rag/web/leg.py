"""WEB search leg of SEARCH: the provider asked with the search query, its results ranked as the chat's passages."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from rag.pipeline import TurnContext
from rag.ports import Embedder
from rag.types import Candidate, Vector
from rag.web.blacklist import Blacklist
from rag.web.compress import WebReference, consolidate, passage_tokens, passages_of, rank_passages, round_robin
from rag.web.pages import PageReader
from rag.web.scratch import ScratchKnowledge, ScratchStore
from rag.web.types import WebResult, WebSearchError, WebSearchProvider

log = logging.getLogger(__name__)

WEB_LEG = "web"
# Web candidates belong to no knowledge base; this stands in their kb_id (no knowledge base id looks like it).
WEB_KB_ID = "web:"
# A web candidate's id is this and its URL.
WEB_ID_PREFIX = "web:"


@dataclass(frozen=True, slots=True)
class WebLegConfig:
    """How many web references a turn gets and how many passages are chosen to build them."""

    references: int = 5
    # Passages chosen round robin before they are joined per URL; twice the references lets a site add a second.
    passages: int = 10
    # Seconds the provider and the page reads may take together: past it the turn goes on without the web.
    deadline: float = 15.0


class WebSearchLeg:
    """Searches the web when the turn allows it; a provider failure raises, and SEARCH answers without the leg."""

    name = WEB_LEG

    def __init__(
        self,
        provider: WebSearchProvider,
        blacklist: Blacklist,
        embedder: Embedder,
        tokens: Callable[[str], list[str]],
        *,
        pages: PageReader | None = None,
        scratch: ScratchStore | None = None,
        config: WebLegConfig | None = None,
    ) -> None:
        self._provider = provider
        self._blacklist = blacklist
        self._embedder = embedder
        self._tokens = tokens
        self._pages = pages
        self._scratch = scratch or ScratchStore()
        self._config = config or WebLegConfig()

    @property
    def scratch(self) -> ScratchStore:
        """The conversations' web passages (dropped by `/new`)."""
        return self._scratch

    async def search(self, turn: TurnContext, vector: Vector) -> list[Candidate]:
        """The turn's web references as candidates; [] when the chat has web search off."""
        if not turn.web_search:
            return []
        query = turn.search_query.strip()
        if not query:
            return []
        # A turn of no conversation (`ragbot eval`) keeps its passages to itself.
        knowledge = self._scratch.scope(turn.web_scope) if turn.web_scope else ScratchKnowledge()
        if query not in knowledge.queries:
            try:
                async with asyncio.timeout(self._config.deadline):
                    await self._learn(query, knowledge)
            except TimeoutError as exc:
                raise WebSearchError(f"web search took over {self._config.deadline:g}s", failure="timeout") from exc
        passages = list(knowledge.passages.values())
        terms = [knowledge.terms[p.id] for p in passages]
        vectors = [knowledge.vectors[p.id] for p in passages]
        query_terms = await asyncio.to_thread(self._tokens, query)
        ranked = rank_passages(query_terms, vector, passages, terms, vectors)
        references = consolidate(round_robin(ranked, self._config.passages))[: self._config.references]
        return [_candidate(reference, rank) for rank, reference in enumerate(references)]

    async def _learn(self, query: str, knowledge: ScratchKnowledge) -> None:
        results = [r for r in await self._provider.search(query) if not self._blacklist.blocks(r.url)]
        texts = await self._page_texts(results)
        fresh = [p for r, text in zip(results, texts, strict=True) for p in passages_of(r, text)]
        fresh = [p for p in fresh if p.id not in knowledge.passages]
        vectors = await self._embedder.embed([f"{p.title}\n{p.text}" for p in fresh]) if fresh else []
        terms = await asyncio.to_thread(lambda: [passage_tokens(p, self._tokens) for p in fresh])
        knowledge.add(fresh, terms, vectors)
        knowledge.queries.add(query)
        log.info("web_search provider=%s results=%d passages=%d", self._provider.name, len(results), len(fresh))

    async def _page_texts(self, results: list[WebResult]) -> list[str]:
        if self._pages is None or self._pages.pages == 0:
            return [""] * len(results)
        top = results[: self._pages.pages]
        texts = await asyncio.gather(*(self._pages.text(result.url) for result in top))
        return [*texts, *[""] * (len(results) - len(top))]


def _candidate(reference: WebReference, rank: int) -> Candidate:
    return Candidate(
        id=WEB_ID_PREFIX + reference.url,
        kind="chunk",
        kb_id=WEB_KB_ID,
        text=reference.text,
        score=reference.score,
        base_score=reference.score,
        legs=frozenset({WEB_LEG}),
        position=rank,
        metadata={"url": reference.url, "title": reference.title, "web": True, "chunk_ids": []},
    )
