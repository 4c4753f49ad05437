"""Plain in-memory stand-ins of the conversation manager's parts (bot/chat/parts.py), for its unit tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from bot.chat.limits import RateLimit
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.chat.media import MediaReader
from bot.chat.parts import ChatParts, JobListener
from bot.chat.sources import SourceBook
from bot.commands.parts import CommandParts
from bot.commands.registry import parse_command
from bot.types import ConversationKey, IncomingMessage, UserRef
from storage.errors import DuplicateEvent, NotFound
from storage.records import (
    ChatSettingRecord,
    ChunkRecord,
    ConversationRecord,
    FaqRecord,
    KnowledgeBaseRecord,
    MessageRecord,
    MessageRole,
    MessageStatus,
)
from tests.support.chat import ScriptedAnswerer

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DM = ConversationKey("test", "team", "dm-alice")
ALICE = UserRef("u-alice")
ADMIN = UserRef("u-admin")


class Conversations:
    """Conversations and their messages in lists."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str, str, str], ConversationRecord] = {}
        self.messages: list[MessageRecord] = []
        self._events: set[str] = set()
        self.commands: set[str] = set()
        # What the config epoch reads now (Parts ties it to the settings and knowledge stand-ins).
        self.epoch: Callable[[], int] = lambda: 0

    async def resolve(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord:
        key = (platform, workspace, chat, thread)
        if key not in self.records:
            self.records[key] = ConversationRecord(f"c{len(self.records)}", *key, created_at=NOW)
        return self.records[key]

    async def find(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord | None:
        return self.records.get((platform, workspace, chat, thread))

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
        if event_key is not None:
            if event_key in self._events:
                raise DuplicateEvent(event_key)
            self._events.add(event_key)
        message = MessageRecord(
            f"m{len(self.messages)}",
            conversation_id,
            request_id,
            role,
            text,
            status,
            platform_message_id,
            dict(meta or {}),
            NOW,
            author,
        )
        self.messages.append(message)
        return message

    async def claim_command(self, event_key: str) -> None:
        if event_key in self.commands:
            raise DuplicateEvent(event_key)
        self.commands.add(event_key)

    async def finish_message(
        self,
        message_id: str,
        *,
        text: str,
        status: MessageStatus = "done",
        meta: Mapping[str, Any] | None = None,
        platform_message_id: str | None = None,
    ) -> MessageRecord:
        index = next(i for i, message in enumerate(self.messages) if message.id == message_id)
        old = self.messages[index]
        self.messages[index] = dataclasses.replace(
            old,
            text=text,
            status=status,
            meta=dict(meta or {}),
            platform_message_id=old.platform_message_id if platform_message_id is None else platform_message_id,
        )
        return self.messages[index]

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        return [message for message in self.messages if message.conversation_id == conversation_id][-limit:]

    async def turn_view(self, conversation_id: str, limit: int) -> tuple[int, list[MessageRecord]]:
        return self.epoch(), await self.recent(conversation_id, limit)

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
        question = await self.add_message(conversation_id, request_id, "user", text, author=author, event_key=event_key)
        return question, await self.add_message(conversation_id, request_id, "assistant", "", "streaming")

    async def complete_message(
        self, message_id: str, *, text: str, status: MessageStatus, meta: Mapping[str, Any], platform_message_id: str
    ) -> None:
        await self.finish_message(
            message_id, text=text, status=status, meta=meta, platform_message_id=platform_message_id
        )

    async def reset(self, conversation_id: str) -> None:
        self.messages = [message for message in self.messages if message.conversation_id != conversation_id]

    async def set_feedback(
        self, message_id: str, value: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        raise NotFound("message", message_id)

    async def set_feedback_reason(
        self, message_id: str, reason: str, note: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        raise NotFound("message", message_id)

    async def last_answer(self, conversation_id: str) -> MessageRecord | None:
        answers = [m for m in self.messages if m.conversation_id == conversation_id and m.role == "assistant"]
        return answers[-1] if answers else None


class ChatSettings:
    """Bindings and chat settings in dicts (none stored: no bindings, the defaults)."""

    def __init__(self) -> None:
        self.bound: dict[tuple[str, str, str], list[str]] = {}
        self.settings: dict[tuple[str, str, str], ChatSettingRecord] = {}

    async def kb_ids(self, platform: str, workspace: str, chat: str) -> list[str]:
        return list(self.bound.get((platform, workspace, chat), []))

    async def setting(self, platform: str, workspace: str, chat: str) -> ChatSettingRecord:
        return self.settings.get((platform, workspace, chat), ChatSettingRecord(platform, workspace, chat))


class KnowledgeNames:
    """Knowledge bases by name; counts how often a name was looked up."""

    def __init__(self, *names: str) -> None:
        self.bases: dict[str, KnowledgeBaseRecord] = {}
        self.lookups = 0
        for name in names:
            self.add(name)

    def add(self, name: str) -> KnowledgeBaseRecord:
        kb = KnowledgeBaseRecord(f"kb-{name}", name, "", {}, NOW)
        self.bases[name] = kb
        return kb

    async def named(self, name: str, tenant: str = "") -> KnowledgeBaseRecord | None:
        self.lookups += 1
        kb = self.bases.get(name)
        return kb if kb is not None and kb.owner == tenant else None

    async def all(self) -> list[KnowledgeBaseRecord]:
        return list(self.bases.values())

    async def visible_ids(self, tenant: str, kb_ids: Sequence[str]) -> set[str]:
        owned = {kb.id for kb in self.bases.values() if kb.owner == tenant}
        return {kb_id for kb_id in kb_ids if kb_id in owned}


class Epochs:
    """The config epoch as a fingerprint of the settings and knowledge stand-ins: it moves whenever they change."""

    def __init__(self, settings: ChatSettings, knowledge: KnowledgeNames) -> None:
        self._settings = settings
        self._knowledge = knowledge

    def now(self) -> int:
        state = (sorted(self._settings.bound.items()), sorted(self._settings.settings.items()))
        return hash((repr(state), repr(sorted(self._knowledge.bases.items()))))

    async def current(self) -> int:
        return self.now()


class JobFeed:
    """Job changes nobody makes here."""

    def __init__(self) -> None:
        self.listeners: list[JobListener] = []

    def subscribe(self, listener: JobListener) -> None:
        self.listeners.append(listener)


class _Texts:
    """No documents and no FAQs: sources are built from the candidates alone."""

    async def source_uris(self, document_ids: Sequence[str]) -> dict[str, str]:
        return {}

    async def chunks_with_titles(self, chunk_ids: Sequence[str]) -> list[tuple[ChunkRecord, str]]:
        return []

    async def by_ids(self, faq_ids: Sequence[str]) -> list[FaqRecord]:
        return []


class Posted:
    """No message is known to belong to a conversation: the unit tests' chats have no reply chains."""

    async def remember(
        self, conversation_id: str, platform: str, workspace: str, chat: str, message_ids: Sequence[str]
    ) -> None:
        return None

    async def thread_of(self, platform: str, workspace: str, chat: str, message_id: str, event_key: str) -> str | None:
        return None

    async def latest_thread(self, platform: str, workspace: str, chat: str, author: str) -> str | None:
        return None

    async def thread_of_answer(self, platform: str, workspace: str, chat: str, answer_id: str) -> str | None:
        return None

    async def earlier_round(
        self, platform: str, workspace: str, chat: str, message_id: str, event_key: str
    ) -> tuple[str, str] | None:
        return None


@dataclasses.dataclass
class Parts:
    """The stand-ins, kept at hand for a test to arrange and inspect."""

    conversations: Conversations = dataclasses.field(default_factory=Conversations)
    settings: ChatSettings = dataclasses.field(default_factory=ChatSettings)
    knowledge: KnowledgeNames = dataclasses.field(default_factory=KnowledgeNames)
    answerer: ScriptedAnswerer = dataclasses.field(default_factory=ScriptedAnswerer)
    jobs: JobFeed = dataclasses.field(default_factory=JobFeed)
    media: MediaReader = dataclasses.field(default_factory=MediaReader)

    def chat_parts(self) -> ChatParts:
        epochs = Epochs(self.settings, self.knowledge)
        self.conversations.epoch = epochs.now
        return ChatParts(
            conversations=self.conversations,
            settings=self.settings,
            knowledge=self.knowledge,
            answerer=self.answerer,
            jobs=self.jobs,
            sources=SourceBook(_Texts(), _Texts()),
            epochs=epochs,
            media=self.media,
            posted=Posted(),
        )


# Questions never reach the commands' parts; a test that runs a command needs real ones (tests/integration).
NO_COMMAND_PARTS = cast(CommandParts, object())


def manager(parts: Parts, *, clock: Any = None, **policy: Any) -> ConversationManager:
    """A manager over the stand-ins; `policy` overrides ChatPolicy's fields."""
    defaults: dict[str, Any] = {"admins": {"test": frozenset({ADMIN.id})}, "rate_limit": RateLimit(1000, 60.0)}
    chosen = ChatPolicy(**{**defaults, **policy})
    if clock is None:
        return ConversationManager(parts.chat_parts(), chosen, NO_COMMAND_PARTS)
    return ConversationManager(parts.chat_parts(), chosen, NO_COMMAND_PARTS, clock=clock)


def message(text: str, *, key: ConversationKey = DM, user: UserRef = ALICE, **fields: Any) -> IncomingMessage:
    """A message as an adapter hands it over."""
    return IncomingMessage(
        key=key, message_id=fields.pop("message_id", ""), user=user, text=text, command=parse_command(text), **fields
    )
