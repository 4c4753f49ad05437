"""The stages of the answer pipelines; each is a thin wrapper around one function elsewhere in rag."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from rag.errors import ModelError
from rag.expansion import expand_query
from rag.fallback import extractive_answer, fixed_answer, no_answer_text
from rag.faq_search import FaqSearch
from rag.faq_text import faq_confidence
from rag.fusion import dedupe
from rag.pipeline import TurnContext
from rag.ports import ChatModel
from rag.prompt import DEFAULT, PromptTemplate, build_messages
from rag.retrieval import Retriever
from rag.rewrite import Rewriter
from rag.stream_filter import StreamFilter
from rag.tokens import TokenCounter
from rag.types import Candidate, ChatMessage

log = logging.getLogger(__name__)

Fallback = Literal["fixed", "model", "extractive"]


class RewriteQuery:
    """Reads query, history; writes rewritten (the raw query when nothing needs resolving)."""

    name = "REWRITE_QUERY"

    def __init__(self, rewriter: Rewriter | None) -> None:
        self._rewriter = rewriter

    async def run(self, turn: TurnContext) -> str:
        if self._rewriter is None:
            return "skipped=disabled"
        if not turn.history:
            return "skipped=no_history"
        result = await self._rewriter.rewrite(turn.query, turn.history)
        turn.rewritten = result.text
        return f"method={result.method}"


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """How many results count as thin, whether to expand the query then, and when targeted documents load whole."""

    top_k: int = 5
    expand: bool = True
    # WeKnora loads the documents a question targets directly when they hold this many chunks or fewer in all.
    direct_max_chunks: int = 50


class Search:
    """Reads search_query, kb_ids, document_ids, history_refs; writes query_vector, candidates (FAQs first)."""

    name = "SEARCH"

    def __init__(self, retriever: Retriever, faqs: FaqSearch, config: SearchConfig | None = None) -> None:
        self._retriever = retriever
        self._faqs = faqs
        self._config = config or SearchConfig(top_k=retriever.config.top_k)

    async def run(self, turn: TurnContext) -> str:
        if not turn.kb_ids:
            return "skipped=no_knowledge_base"
        query = turn.search_query
        vector = turn.query_vector = await self._retriever.query_vector(query)
        direct, faqs, chunks = await asyncio.gather(
            self._direct(turn),
            self._faqs.search(query, vector, turn.kb_ids),
            self._retriever.search_chunks(query, turn.kb_ids, vector=vector),
        )
        found = dedupe([*direct, *faqs, *chunks])
        expanded: list[Candidate] = []
        if self._config.expand and len(found) < max(1, self._config.top_k // 2):
            expanded = await self._expanded(query, turn.kb_ids)
        history = await self._history(turn)
        turn.candidates = dedupe([*found, *expanded, *history])
        return (
            f"direct={len(direct)} faqs={len(faqs)} chunks={len(chunks)} expanded={len(expanded)} "
            f"history={len(history)}"
        )

    async def _direct(self, turn: TurnContext) -> list[Candidate]:
        if not turn.document_ids:
            return []
        if await self._retriever.document_chunk_count(turn.document_ids) > self._config.direct_max_chunks:
            return []
        return await self._retriever.document_candidates(turn.document_ids, turn.kb_ids)

    async def _expanded(self, query: str, kb_ids: Sequence[str]) -> list[Candidate]:
        variants = await asyncio.to_thread(expand_query, query, self._retriever.lexical.tokens)
        results = await asyncio.gather(*(self._retriever.search_chunks(variant, kb_ids) for variant in variants))
        return [replace(candidate, legs=candidate.legs | {"expansion"}) for found in results for candidate in found]

    async def _history(self, turn: TurnContext) -> list[Candidate]:
        if not turn.history_refs:
            return []
        legs = frozenset({"history"})
        refs = list(dict.fromkeys(turn.history_refs))
        chunks = await self._retriever.chunk_candidates([(ref, 0.0) for ref in refs], dict.fromkeys(refs, legs))
        faqs = await self._faqs.by_ids(refs, turn.kb_ids, legs=legs)
        return [*[chunk for chunk in chunks if chunk.kb_id in turn.kb_ids], *faqs]


class FilterTopK:
    """Reads merged, else reranked, else candidates (unless a reranker judged them all irrelevant); writes selected."""

    name = "FILTER_TOP_K"

    def __init__(self, top_k: int) -> None:
        self._top_k = top_k

    async def run(self, turn: TurnContext) -> str:
        pool = turn.merged or turn.ranked
        turn.selected = list(pool[: self._top_k])
        return "none_relevant" if turn.judged and not pool else ""


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """How the answer is written: context budget, FAQ priority, fallback."""

    budget: int = 6000
    faq_priority: bool = True
    direct_answer_threshold: float = 0.9
    answer_faq_directly: bool = True
    fallback: Fallback = "extractive"
    fallback_text: str = "I could not find an answer to that in the knowledge base."
    template: PromptTemplate = field(default_factory=lambda: DEFAULT)


class IntoChatMessage:
    """Reads search_query, selected, history; writes messages."""

    name = "INTO_CHAT_MESSAGE"

    def __init__(
        self, tokens: TokenCounter, config: AnswerConfig, clock: Callable[[], datetime] = datetime.now
    ) -> None:
        self._tokens = tokens
        self._config = config
        self._clock = clock

    async def run(self, turn: TurnContext) -> str:
        built = build_messages(
            turn.query,
            turn.selected,
            history=turn.history,
            tokens=self._tokens,
            budget=self._config.budget,
            template=self._config.template,
            faq_priority=self._config.faq_priority,
            direct_answer_threshold=self._config.direct_answer_threshold,
            now=self._clock(),
        )
        turn.messages = list(built.messages)
        turn.selected = list(built.used)
        return f"dropped={built.dropped}"


class Generate:
    """Reads messages, selected, fallback_text; writes answer (a stream of visible text) and outcome."""

    name = "CHAT_COMPLETION_STREAM"

    def __init__(self, model: ChatModel | None, config: AnswerConfig) -> None:
        self._model = model
        self._config = config

    async def run(self, turn: TurnContext) -> str:
        direct = self._direct_faq(turn)
        if direct is not None:
            turn.outcome = "faq_direct"
            turn.answer = answer_once(direct)
        elif self._model is None:
            turn.outcome = "extractive" if turn.selected else "no_match"
            turn.answer = answer_once(self._fallback_text(turn))
        else:
            turn.outcome = "generated"
            turn.answer = self._stream(turn, self._model)
        return f"outcome={turn.outcome}"

    def _direct_faq(self, turn: TurnContext) -> str | None:
        if not self._config.answer_faq_directly or not turn.selected:
            return None
        best = turn.selected[0]
        if best.kind == "faq" and faq_confidence(best) >= self._config.direct_answer_threshold:
            return extractive_answer(turn.query, [best])
        return None

    def _fallback_text(self, turn: TurnContext) -> str:
        if self._config.fallback == "fixed" or not turn.selected:
            return self._nothing_found(turn)
        return extractive_answer(turn.query, turn.selected)

    def _nothing_found(self, turn: TurnContext) -> str:
        """The chat's own fallback text when it has one, else the configured fixed text or the apology."""
        if turn.fallback_text.strip():
            return turn.fallback_text.strip()
        if self._config.fallback == "fixed":
            return fixed_answer(self._config.fallback_text)
        return no_answer_text(turn.query)

    async def _stream(self, turn: TurnContext, model: ChatModel) -> AsyncIterator[str]:
        visible = StreamFilter()
        emitted = False
        try:
            async for delta in model.stream(turn.messages):
                text = visible.feed(delta)
                if text:
                    emitted = True
                    yield text
                if visible.no_match:
                    break
            tail = "" if visible.no_match else visible.finish()
            if tail:
                emitted = True
                yield tail
        except ModelError as exc:
            if emitted:
                raise
            log.warning("generate=fallback reason=%s", exc)
            turn.outcome = "model_error"
            yield self._fallback_text(turn)
            return
        if visible.no_match or not emitted:
            turn.outcome = "no_match"
            yield await self._no_match_answer(turn, model)

    async def _no_match_answer(self, turn: TurnContext, model: ChatModel) -> str:
        if self._config.fallback == "model":
            reply = await model.complete([ChatMessage("user", turn.query)])
            return StreamFilter().feed(reply) or no_answer_text(turn.query)
        if self._config.fallback == "extractive" and turn.selected:
            return extractive_answer(turn.query, turn.selected)
        return self._nothing_found(turn)


class StreamAnswer:
    """Reads answer, on_text, stop; writes text and outcome (`stopped` when the asker stopped it)."""

    name = "STREAM_ANSWER"

    async def run(self, turn: TurnContext) -> str:
        if turn.answer is None:
            return "skipped=no_answer"
        pieces = 0
        answer = turn.answer
        try:
            while (piece := await _next_unless_stopped(answer, turn.stop)) is not None:
                if not piece:
                    continue
                turn.text += piece
                pieces += 1
                if turn.on_text is not None:
                    await turn.on_text(piece)
        except _Stopped:
            turn.outcome = "stopped"
        return f"pieces={pieces} chars={len(turn.text)} outcome={turn.outcome}"


class _Stopped(Exception):
    pass


async def _next_unless_stopped(answer: AsyncIterator[str], stop: asyncio.Event | None) -> str | None:
    """The answer's next piece (None at its end); raises _Stopped as soon as `stop` is set, even mid-wait."""
    if stop is not None and stop.is_set():
        raise _Stopped
    if stop is None:
        return await anext(answer, None)
    piece = asyncio.ensure_future(anext(answer, None))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({piece, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if stop.is_set():
        # The model is cut off mid-token; its stream is closed so the provider stops generating too.
        piece.cancel()
        await asyncio.gather(piece, return_exceptions=True)
        raise _Stopped
    return piece.result()


async def answer_once(text: str) -> AsyncIterator[str]:
    """An answer stream of one piece (a refusal, an FAQ answer, an extractive answer)."""
    yield text
