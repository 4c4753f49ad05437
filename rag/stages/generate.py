"""The CHAT_COMPLETION_STREAM stage: the model's answer, a verbatim FAQ, or the fallback without a model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence

from rag.config import AnswerConfig
from rag.errors import ModelError
from rag.extractive import Terms, passage_units, plain_terms, score_units, select_quotes
from rag.fallback import extractive_answer, faq_answers, fixed_answer
from rag.faq.candidate import answers_directly
from rag.language import language_of
from rag.pipeline import TurnContext, answer_once
from rag.ports import ChatModel, Embedder
from rag.stream_filter import StreamFilter
from rag.types import ChatMessage, Vector

log = logging.getLogger(__name__)


class Generate:
    """Reads messages, selected, fallback_text; writes answer (a stream of visible text) and outcome."""

    name = "CHAT_COMPLETION_STREAM"

    def __init__(
        self,
        model: ChatModel | None,
        config: AnswerConfig,
        *,
        terms: Terms | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """`terms` cuts text into lexical terms (the BM25 analyzer's `tokens`); `embedder`, when given, scores
        the extractive answer's sentences by meaning too, for questions in a language it serves."""
        self._model = model
        self._config = config
        self._terms = terms or plain_terms
        self._embedder = embedder

    async def run(self, turn: TurnContext) -> str:
        direct = self._direct_faq(turn)
        if direct is not None:
            turn.outcome = "faq_direct"
            turn.answer = answer_once(direct)
        elif self._model is None:
            turn.outcome = "extractive" if turn.selected else "no_match"
            turn.answer = answer_once(await self._fallback_text(turn))
        else:
            turn.outcome = "generated"
            turn.answer = self._stream(turn, self._model)
        return f"outcome={turn.outcome}"

    def _direct_faq(self, turn: TurnContext) -> str | None:
        if not self._config.answer_faq_directly or not turn.selected:
            return None
        best = turn.selected[0]
        if answers_directly(best, self._config.direct_answer_threshold):
            return extractive_answer(turn.query, [best])
        return None

    async def _fallback_text(self, turn: TurnContext) -> str:
        if self._config.fallback == "fixed" or not turn.selected:
            return self._nothing_found(turn)
        return await self._extractive(turn)

    async def _extractive(self, turn: TurnContext) -> str:
        """A top FAQ that clears the direct-answer bar verbatim; else the sentences that answer the question."""
        best = turn.selected[0]
        if faq_answers(best) and answers_directly(best, self._config.direct_answer_threshold):
            return extractive_answer(turn.query, [best])
        config = self._config.extractive
        units = passage_units(turn.selected, config.max_chars)
        vectors: Sequence[Vector | None] | None = None
        served = config.embed_languages is None or language_of(turn.query) in config.embed_languages
        if self._embedder is not None and turn.query_vector is not None and served and units:
            vectors = await self._embedder.embed([unit.text for unit in units])  # one batch for all sentences
        scores = await asyncio.to_thread(
            score_units, turn.query, units, self._terms, config, query_vector=turn.query_vector, unit_vectors=vectors
        )
        if not served and not any(scores):
            # No sentence shares a word with the question and vectors are not trusted in its language: what the
            # search found is not about it (a Chinese question over English documents, say).
            if turn.outcome == "extractive":
                turn.outcome = "no_match"
            return self._nothing_found(turn)
        quotes = select_quotes(units, scores, config)
        if not quotes.text:
            return self._nothing_found(turn)
        # The sources shown are the passages quoted, numbered as the answer numbers them.
        turn.selected = [turn.selected[passage] for passage in quotes.passages]
        return quotes.text

    def _nothing_found(self, turn: TurnContext) -> str:
        """What the caller says when nothing fits (its chat's own text, or its apology in the chat's language), else
        the configured text: rag has no words of its own for a person."""
        return turn.fallback_text.strip() or fixed_answer(self._config.fallback_text)

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
            yield await self._fallback_text(turn)
            return
        if visible.no_match or not emitted:
            turn.outcome = "no_match"
            yield await self._no_match_answer(turn, model)

    async def _no_match_answer(self, turn: TurnContext, model: ChatModel) -> str:
        if self._config.fallback == "model":
            reply = await model.complete([ChatMessage("user", turn.query)])
            return StreamFilter().feed(reply) or self._nothing_found(turn)
        if self._config.fallback == "extractive" and turn.selected:
            return await self._extractive(turn)
        return self._nothing_found(turn)
