"""Conversations and their messages: found or created by platform key, messages read back in write order."""

from __future__ import annotations

import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import delete, true, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import SelectOfScalar

from storage.db import Database
from storage.errors import DuplicateEvent, NotFound, ReasonRefused
from storage.models import CommandEvent, ConfigEpoch, Conversation, Message, utcnow
from storage.records import ConversationRecord, MessageRecord, MessageRole, MessageStatus

# PostgreSQL text cannot hold NUL, and lone surrogates (from bad JSON escapes) cannot be encoded for either
# backend; a person's message is stored with them replaced rather than lost.
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")


# How long a command's event key is kept: Telegram holds an unconfirmed update for 24 hours (getUpdates docs) and
# Slack retries within minutes, so a redelivery after two days cannot come; older keys are swept.
COMMAND_EVENT_TTL: Final = timedelta(days=2)
# Sweeping is one indexed DELETE; once in this while is plenty.
_SWEEP_EVERY: Final = timedelta(minutes=10)


def _storable(text: str) -> str:
    return _UNSTORABLE.sub("\ufffd", text)


def _storable_json(value: Any) -> Any:
    if isinstance(value, str):
        return _storable(value)
    if isinstance(value, Mapping):
        return {_storable(str(key)): _storable_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_storable_json(item) for item in value]
    return value


class _OrderedIds:
    """UUIDv7-layout ids (RFC 9562: unix milliseconds, a 12-bit counter, random bits), strictly increasing
    in this process. They break ties between messages stored at the same timestamp, which SQLite and a
    coarse or injected clock both produce, so a conversation always reads back in the order it was written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._counter = 0

    def __call__(self) -> str:
        with self._lock:
            now_ms = time.time_ns() // 1_000_000
            if now_ms > self._last_ms:
                self._last_ms, self._counter = now_ms, 0
            elif self._counter < 0xFFF:
                self._counter += 1
            else:  # 4096 ids in one millisecond (or a clock stepped back): borrow the next millisecond
                self._last_ms, self._counter = self._last_ms + 1, 0
            ms, counter = self._last_ms, self._counter
        value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | secrets.randbits(62)
        return str(uuid.UUID(int=value))


_next_message_id: Final = _OrderedIds()


def _conversation(row: Conversation) -> ConversationRecord:
    return ConversationRecord(
        id=row.id,
        platform=row.platform,
        workspace=row.workspace,
        chat=row.chat,
        thread=row.thread,
        created_at=row.created_at,
        reset_at=row.reset_at,
    )


def _message(row: Message) -> MessageRecord:
    role: MessageRole = row.role  # type: ignore[assignment]
    status: MessageStatus = row.status  # type: ignore[assignment]
    return MessageRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        request_id=row.request_id,
        role=role,
        text=row.text,
        status=status,
        platform_message_id=row.platform_message_id,
        meta=dict(row.meta),
        created_at=row.created_at,
        author=row.author,
        feedback=row.feedback,
        feedback_reason=row.feedback_reason,
        feedback_note=row.feedback_note,
        feedback_by=row.feedback_by,
        instance=row.instance,
    )


class ConversationRepo:
    """The conversation and message tables."""

    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._clock = clock
        self._swept: datetime | None = None

    async def resolve(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord:
        """The conversation with this key, created when there is none (safe when two turns race to create it)."""
        found = await self.find(platform, workspace, chat, thread)
        if found is not None:
            return found
        now = self._clock()
        row = Conversation(
            platform=platform, workspace=workspace, chat=chat, thread=thread, created_at=now, updated_at=now
        )
        try:
            async with self._db.session() as session:
                session.add(row)
        except IntegrityError:
            # The unique key says another turn created it between our read and our write: use theirs.
            found = await self.find(platform, workspace, chat, thread)
            if found is None:
                raise
            return found
        return _conversation(row)

    async def by_id(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with this id, or None."""
        async with self._db.session() as session:
            row = await session.get(Conversation, conversation_id)
        return _conversation(row) if row is not None else None

    async def find(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord | None:
        """The conversation with this key, or None when there is none yet."""
        async with self._db.session() as session:
            row = (
                await session.exec(
                    select(Conversation).where(
                        Conversation.platform == platform,
                        Conversation.workspace == workspace,
                        Conversation.chat == chat,
                        Conversation.thread == thread,
                    )
                )
            ).first()
        return _conversation(row) if row is not None else None

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
        """Store one message; raises NotFound without the conversation, DuplicateEvent for an event stored before."""
        row = Message(
            id=_next_message_id(),
            conversation_id=conversation_id,
            request_id=request_id,
            role=role,
            text=_storable(text),
            status=status,
            platform_message_id=platform_message_id,
            author=author[:128],
            event_key=event_key[:300] if event_key else None,
            meta=_storable_json(meta or {}),
            created_at=self._clock(),
        )
        try:
            async with self._db.session() as session:
                session.add(row)
        except IntegrityError as exc:  # the event key's unique index, else the foreign key
            if event_key and await self._event_stored(event_key):
                raise DuplicateEvent(event_key) from exc
            raise NotFound("conversation", conversation_id) from exc
        return _message(row)

    async def turn_view(self, conversation_id: str, limit: int) -> tuple[int, list[MessageRecord]]:
        """The config epoch and the conversation's newest `limit` messages since its reset, oldest first: a turn's
        whole read, in one statement (the epoch says whether the caller's cached chat settings still hold)."""
        recent = self._recent_query(conversation_id, max(limit, 0)).subquery()
        shown = aliased(Message, recent)
        statement = (
            select(ConfigEpoch.value, shown)
            .select_from(ConfigEpoch)
            .outerjoin(recent, true())
            .where(ConfigEpoch.id == 1)
            .order_by(col(shown.created_at).desc(), col(shown.id).desc())
        )
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        if not rows:
            raise NotFound("config_epoch", "1")
        epoch = int(rows[0][0])
        return epoch, [_message(row) for _, row in reversed(rows) if row is not None and limit > 0]

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
        """Store a person's question and its answer's placeholder (status `streaming`, written by `instance`) in one
        transaction.

        Raises DuplicateEvent for an event stored before, NotFound without the conversation.
        """
        now = self._clock()
        question = Message(
            id=_next_message_id(),
            conversation_id=conversation_id,
            request_id=request_id,
            role="user",
            text=_storable(text),
            author=author[:128],
            event_key=event_key[:300] if event_key else None,
            meta={},
            created_at=now,
        )
        placeholder = Message(
            id=_next_message_id(),
            conversation_id=conversation_id,
            request_id=request_id,
            role="assistant",
            text="",
            status="streaming",
            instance=instance[:64],
            meta={},
            created_at=now,
        )
        try:
            async with self._db.session() as session:
                session.add_all([question, placeholder])
        except IntegrityError as exc:  # the event key's unique index, else the foreign key
            if event_key and await self._event_stored(event_key):
                raise DuplicateEvent(event_key) from exc
            raise NotFound("conversation", conversation_id) from exc
        return _message(question), _message(placeholder)

    async def answer_to_event(self, event_key: str) -> MessageRecord | None:
        """The answer (or its placeholder) to the question a platform event brought, or None."""
        question = aliased(Message)
        statement = (
            select(Message)
            .join(question, col(question.request_id) == col(Message.request_id))
            .where(col(question.event_key) == event_key, col(Message.role) == "assistant")
            .where(col(Message.conversation_id) == col(question.conversation_id))
        )
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        return None if row is None else _message(row)

    async def orphaned_answers(self, live: Collection[str], limit: int = 50) -> list[MessageRecord]:
        """Answers still being written (`streaming`) by a process not in `live`, oldest first: their writer died."""
        statement = (
            select(Message)
            .where(col(Message.status) == "streaming", col(Message.instance).not_in(list(live)))
            .order_by(col(Message.created_at), col(Message.id))
            .limit(limit)
        )
        async with self._db.session() as session:
            return [_message(row) for row in (await session.exec(statement)).all()]

    async def claim_answer(self, answer_id: str, previous: str, instance: str) -> bool:
        """Make `instance` the writer of an answer still `streaming` under `previous`; False when another process
        claimed it first or it was finished meanwhile (one conditional UPDATE: only one claimant wins)."""
        statement = (
            update(Message)
            .where(col(Message.id) == answer_id, col(Message.status) == "streaming", col(Message.instance) == previous)
            .values(instance=instance[:64])
            .execution_options(synchronize_session=False)
        )
        async with self._db.session() as session:
            return bool((await session.exec(statement)).rowcount)

    async def question_of(self, answer: MessageRecord) -> MessageRecord | None:
        """The person's message an answer replies to (the user message of its request), or None."""
        statement = select(Message).where(
            col(Message.conversation_id) == answer.conversation_id,
            col(Message.request_id) == answer.request_id,
            col(Message.role) == "user",
        )
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        return None if row is None else _message(row)

    async def writer_of_current(self, conversation_id: str) -> str | None:
        """The process writing this conversation's answer now (its newest `streaming` one), or None when none is."""
        statement = (
            select(Message.instance)
            .where(col(Message.conversation_id) == conversation_id, col(Message.status) == "streaming")
            .order_by(col(Message.created_at).desc())
            .limit(1)
        )
        async with self._db.session() as session:
            return (await session.exec(statement)).first()

    async def complete_message(
        self, message_id: str, *, text: str, status: MessageStatus, meta: Mapping[str, Any], platform_message_id: str
    ) -> None:
        """Write a placeholder's final text, status, meta and platform id in one UPDATE (its meta is replaced)."""
        statement = (
            update(Message)
            .where(col(Message.id) == message_id)
            .values(
                text=_storable(text),
                status=status,
                meta=_storable_json(meta),
                platform_message_id=platform_message_id,
            )
            .execution_options(synchronize_session=False)
        )
        async with self._db.session() as session:
            result = await session.exec(statement)
        if not result.rowcount:
            raise NotFound("message", message_id)

    async def finish_message(
        self,
        message_id: str,
        *,
        text: str,
        status: MessageStatus = "done",
        meta: Mapping[str, Any] | None = None,
        platform_message_id: str | None = None,
    ) -> MessageRecord:
        """Set a message's final text and status (one written while its answer streamed); `meta` is merged in."""
        async with self._db.session() as session:
            row = await session.get(Message, message_id)
            if row is None:
                raise NotFound("message", message_id)
            row.text = _storable(text)
            row.status = status
            row.meta = {**row.meta, **_storable_json(meta or {})}
            if platform_message_id is not None:
                row.platform_message_id = platform_message_id
            session.add(row)
        return _message(row)

    async def claim_command(self, event_key: str) -> None:
        """Record that the event `event_key` carried a command; DuplicateEvent when it was recorded before.

        Durable, so a platform's redelivery after a restart does not run the command (an /ingest) again.
        """
        now = self._clock()
        if self._swept is None or now - self._swept >= _SWEEP_EVERY:
            self._swept = now
            async with self._db.session() as session:
                await session.exec(delete(CommandEvent).where(col(CommandEvent.created_at) < now - COMMAND_EVENT_TTL))
        try:
            async with self._db.session() as session:
                session.add(CommandEvent(key=event_key[:300], created_at=now))
        except IntegrityError as exc:  # the key is the primary key: stored before
            raise DuplicateEvent(event_key) from exc

    async def _event_stored(self, event_key: str) -> bool:
        async with self._db.session() as session:
            found = (await session.exec(select(Message.id).where(Message.event_key == event_key))).first()
        return found is not None

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        """The conversation's newest `limit` messages since its last reset, oldest first, in the order stored."""
        if limit <= 0:
            return []
        async with self._db.session() as session:
            rows = (await session.exec(self._recent_query(conversation_id, limit))).all()
        return [_message(row) for row in reversed(rows)]

    @staticmethod
    def _recent_query(conversation_id: str, limit: int) -> SelectOfScalar[Message]:
        reset_at = select(Conversation.reset_at).where(Conversation.id == conversation_id).scalar_subquery()
        return (
            select(Message)
            .where(Message.conversation_id == conversation_id)
            .where((reset_at.is_(None)) | (col(Message.created_at) > reset_at))
            .order_by(col(Message.created_at).desc(), col(Message.id).desc())
            .limit(limit)
        )

    async def reset(self, conversation_id: str) -> None:
        """Start the conversation over (`/new`): earlier messages stay stored but are no longer its history."""
        async with self._db.session() as session:
            row = await session.get(Conversation, conversation_id)
            if row is None:
                raise NotFound("conversation", conversation_id)
            row.reset_at = row.updated_at = self._clock()
            session.add(row)

    async def message(self, message_id: str) -> MessageRecord:
        """One message by id; raises NotFound."""
        async with self._db.session() as session:
            row = await session.get(Message, message_id)
        if row is None:
            raise NotFound("message", message_id)
        return _message(row)

    async def set_feedback(
        self, message_id: str, value: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        """Record `up` or `down` by `by` on an answer (the newest press wins); NotFound outside `conversation_id`.

        A new verdict or another presser clears the reason given for the old one: it answered another press."""
        async with self._db.session() as session:
            row = await self._answer(session, message_id, conversation_id)
            if row.feedback != value or row.feedback_by != by:
                row.feedback_reason = row.feedback_note = ""
            row.feedback, row.feedback_by = value, by
            session.add(row)
        return _message(row)

    async def set_feedback_reason(
        self, message_id: str, reason: str, note: str, *, conversation_id: str | None = None, by: str = ""
    ) -> MessageRecord:
        """Store why an answer got its 👎 (the newest reason wins); NotFound outside `conversation_id`,
        ReasonRefused when it has no 👎 or `by` is not who pressed it."""
        async with self._db.session() as session:
            row = await self._answer(session, message_id, conversation_id)
            if row.feedback != "down":
                raise ReasonRefused("not_down", message_id)
            if row.feedback_by and row.feedback_by != by:
                raise ReasonRefused("not_rater", message_id)
            row.feedback_reason, row.feedback_note = reason, note
            session.add(row)
        return _message(row)

    @staticmethod
    async def _answer(session: AsyncSession, message_id: str, conversation_id: str | None) -> Message:
        row = await session.get(Message, message_id)
        if (
            row is None
            or row.role != "assistant"
            or (conversation_id is not None and row.conversation_id != conversation_id)
        ):
            raise NotFound("answer", message_id)
        return row

    async def last_answer(self, conversation_id: str) -> MessageRecord | None:
        """The conversation's newest assistant message since its last reset, if any."""
        for message in reversed(await self.recent(conversation_id, 20)):
            if message.role == "assistant":
                return message
        return None

    async def messages_since(
        self, since: datetime, *, platform: str | None = None, workspace: str | None = None, chat: str | None = None
    ) -> list[MessageRecord]:
        """Every message stored at or after `since` (for `ragbot stats`; `/stats` names one chat, all its threads),
        oldest first."""
        statement = select(Message).where(col(Message.created_at) >= since)
        if platform is not None or chat is not None:
            statement = statement.join(Conversation)
        if platform is not None:
            statement = statement.where(Conversation.platform == platform)
        if chat is not None:
            statement = statement.where(Conversation.workspace == (workspace or ""), Conversation.chat == chat)
        statement = statement.order_by(col(Message.created_at), col(Message.id))
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_message(row) for row in rows]
