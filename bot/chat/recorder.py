"""Storing turns: the question before the pipeline runs, the answer (or what went wrong) once its stream ends."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bot.chat.parts import Conversations
from bot.chat.sources import source_page
from bot.errors import UserFacingError
from bot.words import messages
from rag.history import META_OUTCOME, META_QUERY, META_SOURCES
from rag.pipeline import TurnContext
from rag.types import Candidate
from storage.errors import first_line
from storage.records import MessageStatus

log = logging.getLogger(__name__)

_NO_SOURCES_SHOWN: Final = frozenset({"refused", "smalltalk", "no_match"})
_ERROR_CHARS: Final = 2000  # enough for any exception message worth reading; a stored row stays small
# What a stored web source keeps of its page: its snippet under `/sources` is cut from this (sources.SNIPPET_CHARS).
WEB_TEXT_KEPT: Final = 1000
# Seconds between tries to store a turn's end while the database is away: about ten minutes in all, past which a
# restart (whose recovery closes what is left `streaming`) is the likelier way back.
WRITE_RETRY_WAITS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, *(60.0,) * 9)


@dataclass(frozen=True, slots=True)
class OpenTurn:
    """A turn whose question is stored and whose answer is not yet."""

    conversation_id: str
    request_id: str
    # The assistant message written while its answer streams, when the caller stores one early.
    answer_id: str = ""


def shown_sources(turn: TurnContext) -> list[Candidate]:
    """The sources an answer shows and cites: none for a refusal, small talk, or when nothing matched."""
    return [] if turn.outcome in _NO_SOURCES_SHOWN else list(turn.selected)


def apology(error: BaseException, lang: str) -> str:
    """What the person is told when their turn failed, in `lang`: the error's own message, else the apology."""
    return messages.user_message(error, lang) if isinstance(error, UserFacingError) else messages.turn_failed(lang)


def source_entry(candidate: Candidate) -> dict[str, Any]:
    """How an answer's meta keeps one of its sources: enough to show it again (title, page, table) and to find its
    chunks (ids)."""
    meta = candidate.metadata
    title = next((value for key in ("title", "filename", "question") if isinstance(value := meta.get(key), str)), "")
    if meta.get("web") is True:
        # A web page is in no table to read back: its address and a snippet's worth of its text are kept here.
        return {
            "id": candidate.id,
            "kind": "web",
            "document_id": None,
            "title": title,
            "url": meta.get("url"),
            "text": candidate.text[:WEB_TEXT_KEPT],
            "position": candidate.position,
            "score": round(candidate.score, 6),
            "chunk_ids": [],
        }
    return {
        "id": candidate.id,
        "kind": candidate.kind,
        "document_id": candidate.document_id,
        "title": title,
        "position": candidate.position,
        "score": round(candidate.score, 6),
        # The chunks a merged passage was made of: a follow-up's history matches are searched by these.
        "chunk_ids": list(_chunk_ids(candidate)),
        # A query's result (data analysis) has no stored chunk to read back: its cells are kept here.
        **({"table": meta["table"]} if isinstance(meta.get("table"), list) else {}),
        **({"page": page} if (page := source_page(meta)) else {}),
    }


def _chunk_ids(candidate: Candidate) -> tuple[str, ...]:
    ids = candidate.metadata.get("chunk_ids")
    if isinstance(ids, list | tuple) and ids:
        return tuple(str(chunk_id) for chunk_id in ids)
    return (candidate.id,)


def turn_meta(turn: TurnContext) -> dict[str, Any]:
    """What an answer's message records about its turn: outcome, query, rewrite, sources and stage reports."""
    return {
        META_OUTCOME: turn.outcome,
        META_QUERY: turn.query,
        "rewritten": turn.rewritten,
        "kb_ids": list(turn.kb_ids),
        META_SOURCES: [source_entry(candidate) for candidate in shown_sources(turn)],
        "stages": [
            {"name": r.name, "ms": round(r.ms, 1), "in": r.items_in, "out": r.items_out, "note": r.note}
            for r in turn.reports
        ],
    }


def _error(error: BaseException) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "message": str(error)[:_ERROR_CHARS],
        # Pipeline adds "pipeline=NAME stage=STAGE" here: which stage broke.
        "notes": [str(note)[:_ERROR_CHARS] for note in getattr(error, "__notes__", ())],
    }


def _new_request_id() -> str:
    return uuid.uuid4().hex


class TurnRecorder:
    """Writes each turn of a conversation: `begin` before the pipeline runs, then `finish` or `fail`."""

    def __init__(self, repo: Conversations, *, new_request_id: Callable[[], str] = _new_request_id) -> None:
        self._repo = repo
        self._new_request_id = new_request_id

    async def begin(
        self, conversation_id: str, text: str, *, author: str = "", event_key: str | None = None
    ) -> OpenTurn:
        """Store the person's message as sent, under a fresh request id; DuplicateEvent for a retried delivery."""
        request_id = self._new_request_id()
        await self._repo.add_message(conversation_id, request_id, "user", text, author=author, event_key=event_key)
        return OpenTurn(conversation_id, request_id)

    async def open(
        self, conversation_id: str, text: str, *, author: str = "", event_key: str | None = None, instance: str = ""
    ) -> OpenTurn:
        """Store the person's message and its answer's placeholder (status `streaming`, written by `instance`) in
        one write; DuplicateEvent for a retried delivery. Finish, fail or withdraw completes the placeholder."""
        request_id = self._new_request_id()
        _, placeholder = await self._repo.open_turn(
            conversation_id, request_id, text, author=author, event_key=event_key, instance=instance
        )
        return OpenTurn(conversation_id, request_id, placeholder.id)

    async def withdraw(self, opened: OpenTurn, outcome: str) -> None:
        """Close a stored turn that will not be answered (the chat stopped answering such messages, or it came too
        late to be answered again): no text, status `failed`, the reason as its outcome."""
        await self._answer(opened, "", "failed", {META_OUTCOME: outcome, META_SOURCES: []})

    async def finish(
        self,
        opened: OpenTurn,
        turn: TurnContext,
        answer: str,
        *,
        platform_message_id: str = "",
        extra: dict[str, Any] | None = None,
        delivered: bool = True,
    ) -> None:
        """Store the answer as shown, with what its turn did (turn_meta, and `extra`) and its platform message id.

        An answer whose final text never reached the chat is stored `undelivered`: no round of the history, and
        counted apart in the statistics.
        """
        status: MessageStatus = "done" if delivered else "undelivered"
        await self._answer(opened, answer, status, {**turn_meta(turn), **(extra or {})}, platform_message_id)

    async def fail(
        self, opened: OpenTurn, error: BaseException, *, turn: TurnContext | None = None, answer: str = ""
    ) -> None:
        """Store a broken turn: status `failed`, the text shown before it broke, the error and the stages that ran."""
        meta = turn_meta(turn) if turn is not None else {META_SOURCES: []}
        meta.update({META_OUTCOME: "failed", "error": _error(error)})
        await self._answer(opened, answer, "failed", meta)

    async def when_back(
        self, opened: OpenTurn, write: Callable[[], Awaitable[None]], waits: Sequence[float] = WRITE_RETRY_WAITS
    ) -> bool:
        """Run `write` (this turn's `finish` or `fail`) again after each of `waits` seconds while the store is away;
        whether it was stored.

        For a turn whose end could not be stored when it came (the database restarting): left `streaming` under a
        process that lives on, no recovery would ever close it.
        """
        for wait in waits:
            await asyncio.sleep(wait)
            try:
                await write()
            except Exception as exc:  # the store still away (any driver's error): try again after the next wait
                log.info("turn=record_retry request=%s reason=%s", opened.request_id, first_line(exc))
                continue
            log.warning("turn=recorded_late request=%s", opened.request_id)
            return True
        return False

    async def _answer(
        self, opened: OpenTurn, text: str, status: MessageStatus, meta: dict[str, Any], platform_message_id: str = ""
    ) -> None:
        if opened.answer_id:
            await self._repo.complete_message(
                opened.answer_id, text=text, status=status, meta=meta, platform_message_id=platform_message_id
            )
            return
        await self._repo.add_message(
            opened.conversation_id,
            opened.request_id,
            "assistant",
            text,
            status,
            meta,
            platform_message_id=platform_message_id,
        )
