"""Answering one question: check it, run the named pipeline, which delivers the answer piece by piece."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from bot.words import messages
from bot.words.language import detect
from rag.history import SMALLTALK
from rag.input_check import check_question, small_talk
from rag.named_pipelines import PipelineParts, chat_stream, rag_stream, search_pipeline
from rag.pipeline import Pipeline, TurnContext, answer_once
from rag.stages.stream_answer import StreamAnswer
from rag.web.leg import WebSearchLeg
from storage.records import MessageRecord

OnText = Callable[[str], Awaitable[None]]


class Answerer:
    """Holds the pipelines (built once with the services) and answers questions over given knowledge bases."""

    def __init__(self, parts: PipelineParts) -> None:
        self.parts = parts
        self.rag_stream = rag_stream(parts)
        self.search = search_pipeline(parts)
        self.chat_stream = chat_stream(
            parts.tokens,
            parts.model,
            history=parts.history,
            history_config=parts.history_config,
            observe=parts.observe,
        )
        self._refusal = Pipeline("refusal", [StreamAnswer()], parts.observe)

    def prepare(
        self,
        question: str,
        kb_ids: Sequence[str],
        *,
        conversation_id: str = "",
        document_ids: Sequence[str] = (),
        history: Sequence[tuple[str, str]] = (),
        on_text: OnText | None = None,
        stop: asyncio.Event | None = None,
        fallback_text: str = "",
        language: str | None = None,
        stored_history: Sequence[MessageRecord] | None = None,
        web_search: bool = False,
        web_scope: str = "",
    ) -> TurnContext:
        """A new turn for `question`; a question that fails the input check carries its refusal as answer, and a
        greeting or thanks alone its short reply (outcome "smalltalk").

        With `conversation_id`, LOAD_HISTORY reads the earlier rounds of that stored conversation (replacing
        `history`); store the question first, as it is not a round yet. `stored_history`, the conversation's
        messages as the caller read them before storing the question, saves LOAD_HISTORY that read. The refusal
        and the "nothing found" apology are in `language` (a bot.words code), else in the question's own.
        `web_search` lets the turn search the web too (the chat's `/web on`), its passages kept under `web_scope`.
        """
        check = check_question(question)
        lang = language or detect(question)
        if not fallback_text and self.parts.answer.fallback != "fixed":
            fallback_text = messages.no_answer(lang)
        turn = TurnContext(
            query=check.text,
            kb_ids=tuple(kb_ids),
            conversation_id=conversation_id,
            document_ids=tuple(document_ids),
            history=list(history),
            truncated=check.truncated,
            on_text=on_text,
            stop=stop,
            deadline=self.parts.answer.deadline,
            fallback_text=fallback_text,
            stored_history=tuple(stored_history) if stored_history is not None else None,
            web_search=web_search,
            web_scope=web_scope,
        )
        if check.refusal is not None:
            turn.outcome = "refused"
            turn.answer = answer_once(messages.refusal(check.refusal, lang))
        elif (kb_ids or self.parts.model is None) and (talk := small_talk(check.text)) is not None:
            # A greeting or thanks alone: nothing to look up; the reply says what the bot is for. (A chat without
            # knowledge bases talks to the model, which greets back in its own words.)
            turn.outcome = SMALLTALK
            turn.answer = answer_once(messages.small_talk(talk, lang))
        return turn

    def forget(self, conversation_id: str) -> None:
        """Drop the conversation's web search passages (`/new`); its next turn searches the web afresh."""
        for leg in self.parts.legs:
            if isinstance(leg, WebSearchLeg):
                leg.scratch.forget(conversation_id)

    async def execute(self, turn: TurnContext, pipeline: Pipeline | None = None) -> TurnContext:
        """Run the turn's pipeline (rag_stream unless named) to its delivered end; a refusal or a small-talk reply
        is just delivered."""
        if turn.outcome in ("refused", SMALLTALK):
            return await self._refusal.run(turn)
        return await (pipeline or self.rag_stream).run(turn)

    async def run(
        self,
        question: str,
        kb_ids: Sequence[str],
        history: Sequence[tuple[str, str]] = (),
        *,
        conversation_id: str = "",
        document_ids: Sequence[str] = (),
        pipeline: Pipeline | None = None,
        on_text: OnText | None = None,
    ) -> TurnContext:
        """prepare, then execute: the turn after its answer was delivered to `on_text`."""
        turn = self.prepare(
            question,
            kb_ids,
            conversation_id=conversation_id,
            document_ids=document_ids,
            history=history,
            on_text=on_text,
        )
        return await self.execute(turn, pipeline)
