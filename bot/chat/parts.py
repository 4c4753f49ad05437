"""What the conversation manager works with: protocols its parts meet, and the parts themselves in one bundle.

The storage repositories, the answerer and the job runner meet these structurally; a test hands the manager plain
stand-ins instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from bot.chat.media import MediaReader
from bot.chat.sources import SourceBook
from rag.pipeline import Pipeline, TurnContext
from storage.records import (
    ChatSettingRecord,
    ConversationRecord,
    JobRecord,
    KnowledgeBaseRecord,
    MessageRecord,
    MessageRole,
    MessageStatus,
)


class Conversations(Protocol):
    """Stored conversations and their messages (met by storage.repos.conversations.ConversationRepo)."""

    async def resolve(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord:
        """The conversation, created when new."""
        ...

    async def find(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord | None:
        """The conversation, or None."""
        ...

    async def add_message(
        self,
        conversation_id: str,
        request_id: str,
        role: MessageRole,
        text: str,
        status: MessageStatus = "done",
        meta: Mapping[str, Any] | None = None,
        *,
        platform_message_id: str = "",
        author: str = "",
        event_key: str | None = None,
    ) -> MessageRecord:
        """Store one message; DuplicateEvent for an event stored before."""
        ...

    async def claim_command(self, event_key: str) -> None:
        """Record that an event carried a command; DuplicateEvent for an event recorded before."""
        ...

    async def finish_message(
        self,
        message_id: str,
        *,
        text: str,
        status: MessageStatus = "done",
        meta: Mapping[str, Any] | None = None,
        platform_message_id: str | None = None,
    ) -> MessageRecord:
        """Complete a message stored while its answer streamed."""
        ...

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        """The newest messages since the last reset, oldest first."""
        ...

    async def turn_view(self, conversation_id: str, limit: int) -> tuple[int, list[MessageRecord]]:
        """The config epoch and the newest `limit` messages since the last reset, in one read."""
        ...

    async def open_turn(
        self,
        conversation_id: str,
        request_id: str,
        text: str,
        *,
        author: str = "",
        event_key: str | None = None,
        instance: str = "",
    ) -> tuple[MessageRecord, MessageRecord]:
        """Store a question and its answer's placeholder (written by `instance`) in one write; DuplicateEvent for an
        event stored before."""
        ...

    async def answer_to_event(self, event_key: str) -> MessageRecord | None:
        """The answer to the question a platform event brought, or None."""
        ...

    async def by_id(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with this id, or None."""
        ...

    async def orphaned_answers(self, live: Collection[str], limit: int = 50) -> list[MessageRecord]:
        """Answers still being written by a process not in `live`, oldest first."""
        ...

    async def claim_answer(self, answer_id: str, previous: str, instance: str) -> bool:
        """Make `instance` the writer of an answer still being written by `previous`; False when another was first."""
        ...

    async def question_of(self, answer: MessageRecord) -> MessageRecord | None:
        """The person's message an answer replies to."""
        ...

    async def writer_of_current(self, conversation_id: str) -> str | None:
        """The process writing this conversation's answer now, or None."""
        ...

    async def complete_message(
        self, message_id: str, *, text: str, status: MessageStatus, meta: Mapping[str, Any], platform_message_id: str
    ) -> None:
        """Write a placeholder's final text, status, meta and platform id."""
        ...

    async def reset(self, conversation_id: str) -> None:
        """Start the conversation over."""
        ...

    async def set_feedback(
        self, message_id: str, value: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        """Record feedback by `by` on an answer; NotFound when it is not one of the conversation's."""
        ...

    async def set_feedback_reason(
        self, message_id: str, reason: str, note: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        """Store why an answer got its 👎; NotFound or ReasonRefused when it cannot be."""
        ...

    async def last_answer(self, conversation_id: str) -> MessageRecord | None:
        """The newest answer, or None."""
        ...


class Posted(Protocol):
    """Which conversation a platform message belongs to (met by storage.repos.posted.PostedRepo)."""

    async def remember(
        self, conversation_id: str, platform: str, workspace: str, chat: str, message_ids: Sequence[str]
    ) -> None:
        """Record that the bot posted these messages in the conversation."""
        ...

    async def thread_of(self, platform: str, workspace: str, chat: str, message_id: str, event_key: str) -> str | None:
        """The thread of the conversation holding a posted message (by id) or a question (by event key), or None."""
        ...

    async def latest_thread(self, platform: str, workspace: str, chat: str, author: str) -> str | None:
        """The thread in which `author` last asked something in this chat, or None."""
        ...

    async def thread_of_answer(self, platform: str, workspace: str, chat: str, answer_id: str) -> str | None:
        """The thread of the conversation in this chat holding the stored answer, or None."""
        ...

    async def earlier_round(
        self, platform: str, workspace: str, chat: str, message_id: str, event_key: str
    ) -> tuple[str, str] | None:
        """The answered round of the chat's one conversation (thread "") a message belongs to, or None."""
        ...


class ChatSettings(Protocol):
    """What each chat reads and how it behaves (met by storage.repos.bindings.BindingRepo)."""

    async def kb_ids(self, platform: str, workspace: str, chat: str) -> list[str]:
        """The knowledge bases bound to the chat."""
        ...

    async def setting(self, platform: str, workspace: str, chat: str) -> ChatSettingRecord:
        """The chat's stored behaviour (defaults when none)."""
        ...


class Epochs(Protocol):
    """The config epoch, moved by every change to what chats read (met by storage.repos.config_epoch's repo)."""

    async def current(self) -> int:
        """The epoch now."""
        ...


class KnowledgeNames(Protocol):
    """Knowledge bases by name (met by bot.knowledge.bases.KnowledgeBases)."""

    async def named(self, name: str, tenant: str = "") -> KnowledgeBaseRecord | None:
        """The knowledge base `tenant` knows by this name, or None."""
        ...

    async def all(self) -> list[KnowledgeBaseRecord]:
        """Every knowledge base."""
        ...

    async def visible_ids(self, tenant: str, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` the tenant's chats may read."""
        ...


class Answering(Protocol):
    """Runs a question through a pipeline (met by bot.chat.answerer.Answerer)."""

    @property
    def rag_stream(self) -> Pipeline:
        """The pipeline over knowledge bases."""
        ...

    @property
    def chat_stream(self) -> Pipeline:
        """The pipeline of a chat that reads no knowledge base."""
        ...

    def prepare(
        self,
        question: str,
        kb_ids: Sequence[str],
        *,
        conversation_id: str = "",
        document_ids: Sequence[str] = (),
        history: Sequence[tuple[str, str]] = (),
        on_text: Callable[[str], Awaitable[None]] | None = None,
        stop: asyncio.Event | None = None,
        fallback_text: str = "",
        language: str | None = None,
        stored_history: Sequence[MessageRecord] | None = None,
        web_search: bool = False,
        web_scope: str = "",
    ) -> TurnContext:
        """A new turn for the question."""
        ...

    def forget(self, conversation_id: str) -> None:
        """Drop what is kept for the conversation between its turns (its web search passages): `/new`."""
        ...

    async def execute(self, turn: TurnContext, pipeline: Pipeline | None = None) -> TurnContext:
        """Run the turn to its delivered end."""
        ...


JobListener = Callable[[JobRecord], Awaitable[None]]


class JobFeed(Protocol):
    """Where job changes are heard (met by bot.knowledge.jobs.JobRunner)."""

    def subscribe(self, listener: JobListener) -> None:
        """Call `listener` on every job change."""
        ...


class TurnLocks(Protocol):
    """One turn at a time per conversation across processes (met by bot.chat.instances.ConversationLocks)."""

    def hold(self, conversation_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the conversation for the body."""
        ...


class StopBus(Protocol):
    """Stop requests for answers another process writes (met by storage.notify.Notifications)."""

    async def publish(self, payload: str) -> None:
        """Tell every process."""
        ...


class LocalStops:
    """One process alone: nobody else writes answers, so nothing to tell."""

    async def publish(self, payload: str) -> None:
        """Tell nobody."""


class _NoLocks:
    """One process alone on its database: the turn gate already keeps each conversation's order."""

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        yield


_NO_LOCKS: Final = _NoLocks()


@dataclass(frozen=True, slots=True)
class ChatParts:
    """Everything the conversation manager uses, passed explicitly."""

    conversations: Conversations
    settings: ChatSettings
    knowledge: KnowledgeNames
    answerer: Answering
    jobs: JobFeed
    sources: SourceBook
    epochs: Epochs
    posted: Posted
    # This process's name among those on the database: stored on the answers it writes.
    instance: str = ""
    turn_locks: TurnLocks = field(default_factory=lambda: _NO_LOCKS)
    stops: StopBus = field(default_factory=LocalStops)
    # The processes alive now (this one included): whose answers are not orphans.
    live: Callable[[], Collection[str]] = lambda: ()
    # Reads a question's photos and voice messages into its text (by default: nothing configured to read them).
    media: MediaReader = field(default_factory=MediaReader)
