"""Conversation history for the answer pipeline: stored messages paired into answered rounds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rag.stream_filter import StreamFilter
from storage.records import MessageRecord

# Keys of an assistant message's meta that this module reads (bot.turns writes them).
META_OUTCOME: Final = "outcome"
"""How the turn ended (TurnContext.outcome); a `refused` turn is no round of the conversation."""
META_QUERY: Final = "query"
"""The question as it was answered (cleaned, perhaps shortened), used in place of the raw user text."""
META_SOURCES: Final = "sources"
"""The sources the answer showed, as a list of objects with at least an "id"."""
REFUSED: Final = "refused"
SMALLTALK: Final = "smalltalk"
"""A greeting or thanks answered with the bot's own short reply: no round either, so that a later "it" or "that"
never resolves against the bot's self-introduction."""
NO_MATCH: Final = "no_match"
"""Nothing was found: the answer is the bot's own "Sorry, I couldn't find…", so the round keeps only its question
(what was asked may still be what "it" names) and no sources."""


@dataclass(frozen=True, slots=True)
class HistoryConfig:
    """How much of a conversation a turn sees: its last `limit` messages, of them the newest `max_rounds` rounds.

    WeKnora's defaults: its rewrite step reads a session's last 20 messages
    (internal/application/service/chat_pipline/rewrite.go) and config/config.yaml sets conversation.max_rounds: 5.
    """

    limit: int = 20
    max_rounds: int = 5

    def __post_init__(self) -> None:
        if self.limit < 0 or self.max_rounds < 0:
            raise ValueError(f"history limit and max_rounds must not be negative, got {self.limit}, {self.max_rounds}")


class HistorySource(Protocol):
    """Where a conversation's messages are read (met by storage.repos.conversations.ConversationRepo)."""

    async def recent(self, conversation_id: str, limit: int) -> Sequence[MessageRecord]:
        """The newest `limit` messages, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class AnsweredRound:
    """One earlier exchange that was answered: the question, the visible answer, the ids of the sources shown."""

    question: str
    answer: str
    source_ids: tuple[str, ...] = ()


def strip_thinking(text: str) -> str:
    """`text` without <think>/<thinking> blocks (an unclosed one is dropped to the end), stripped.

    The same filter the answer stream uses, so an answer starting with NO_MATCH comes back empty too.
    """
    visible = StreamFilter()
    return (visible.feed(text) + visible.finish()).strip()


def _source_ids(message: MessageRecord) -> tuple[str, ...]:
    sources = message.meta.get(META_SOURCES)
    if not isinstance(sources, list):
        return ()
    ids = (source_id for source in sources if isinstance(source, dict) for source_id in _ids_of(source))
    return tuple(dict.fromkeys(source_id for source_id in ids if isinstance(source_id, str) and source_id))


def _ids_of(source: dict[str, Any]) -> list[Any]:
    """A shown source's chunk ids when it was merged from several, else its own id."""
    chunk_ids = source.get("chunk_ids")
    return list(chunk_ids) if isinstance(chunk_ids, list) and chunk_ids else [source.get("id")]


def answered_rounds(messages: Sequence[MessageRecord], max_rounds: int) -> list[AnsweredRound]:
    """Messages (oldest first) paired into rounds by request id: the newest `max_rounds`, oldest first.

    A round counts only with both a question and an answer whose status is `done`, that was not a refusal or
    small talk, and whose answer is not empty once reasoning blocks are removed. A round that found nothing keeps
    its question with an empty answer and no sources. The current turn's own question, stored
    before its answer exists, is therefore never part of it.
    """
    questions: dict[str, MessageRecord] = {}
    answers: dict[str, MessageRecord] = {}
    for message in messages:
        if message.request_id:
            (questions if message.role == "user" else answers)[message.request_id] = message
    rounds: list[AnsweredRound] = []
    # Questions are stored before their answers, so the questions' order is the conversation's.
    for request_id, asked in questions.items():
        reply = answers.get(request_id)
        if reply is None or reply.status != "done" or reply.meta.get(META_OUTCOME) in (REFUSED, SMALLTALK):
            continue
        query = reply.meta.get(META_QUERY)
        question = (query if isinstance(query, str) and query.strip() else asked.text).strip()
        if reply.meta.get(META_OUTCOME) == NO_MATCH:
            if question:
                rounds.append(AnsweredRound(question, ""))
            continue
        answer = strip_thinking(reply.text)
        if question and answer:
            rounds.append(AnsweredRound(question, answer, _source_ids(reply)))
    return rounds[-max_rounds:] if max_rounds > 0 else []
