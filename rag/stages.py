"""The stages of the answer pipelines; each is a thin wrapper around one function elsewhere in rag."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from rag.errors import ModelError
from rag.fallback import extractive_answer, fixed_answer, no_answer_text
from rag.faq_search import FaqSearch
from rag.fusion import dedupe
from rag.pipeline import TurnContext
from rag.ports import ChatModel
from rag.prompt import DEFAULT, PromptTemplate, build_messages
from rag.retrieval import Retriever
from rag.rewrite import Rewriter
from rag.stream_filter import StreamFilter
from rag.tokens import TokenCounter
from rag.types import ChatMessage

log = logging.getLogger(__name__)

Fallback = Literal["fixed", "model", "extractive"]


class RewriteQuery:
    """Reads query, history; writes rewritten (the raw query when nothing needs resolving)."""

    name = "REWRITE_QUERY"

    def __init__(self, rewriter: Rewriter) -> None:
        self._rewriter = rewriter

    async def run(self, turn: TurnContext) -> str:
        if not turn.history:
            return "skipped=no_history"
        result = await self._rewriter.rewrite(turn.query, turn.history)
        turn.rewritten = result.text
        return f"method={result.method}"


class Search:
    """Reads search_query, kb_ids; writes candidates (FAQs first by confidence, then fused passages)."""

    name = "SEARCH"

    def __init__(self, retriever: Retriever, faqs: FaqSearch) -> None:
        self._retriever = retriever
        self._faqs = faqs

    async def run(self, turn: TurnContext) -> str:
        if not turn.kb_ids:
            return "skipped=no_knowledge_base"
        query = turn.search_query
        vector = await self._retriever.query_vector(query)
        faqs = await self._faqs.search(query, vector, turn.kb_ids)
        chunks = await self._retriever.search_chunks(query, turn.kb_ids)
        turn.candidates = dedupe([*faqs, *chunks])
        return f"faqs={len(faqs)} chunks={len(chunks)}"


class FilterTopK:
    """Reads merged, reranked or candidates (the first that is not empty); writes selected."""

    name = "FILTER_TOP_K"

    def __init__(self, top_k: int) -> None:
        self._top_k = top_k

    async def run(self, turn: TurnContext) -> str:
        pool = turn.merged or turn.reranked or turn.candidates
        turn.selected = list(pool[: self._top_k])
        return ""


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
    """Reads messages, selected; writes answer (a stream of visible text) and outcome."""

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
        if best.kind == "faq" and best.score >= self._config.direct_answer_threshold:
            return extractive_answer(turn.query, [best])
        return None

    def _fallback_text(self, turn: TurnContext) -> str:
        if self._config.fallback == "fixed":
            return fixed_answer(self._config.fallback_text)
        if not turn.selected:
            return no_answer_text(turn.query)
        return extractive_answer(turn.query, turn.selected)

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
        if self._config.fallback == "fixed":
            return fixed_answer(self._config.fallback_text)
        return no_answer_text(turn.query)


async def answer_once(text: str) -> AsyncIterator[str]:
    """An answer stream of one piece (a refusal, an FAQ answer, an extractive answer)."""
    yield text
