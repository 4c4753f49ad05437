"""What retention removes: conversations idle past a cutoff (their figures kept as tallies), expired OAuth states,
old command events and schedule ticks, and embedding-cache entries past an age or over a count."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func
from sqlmodel import col, select

from storage.db import Database
from storage.models import (
    CommandEvent,
    Conversation,
    EmbeddingCacheEntry,
    FeedbackTally,
    Message,
    PostedMessage,
    ScheduleTick,
    SlackOAuthState,
)

# Conversations removed per transaction: a first sweep over a year of chats must not hold one huge transaction.
_BATCH = 200


@dataclass(frozen=True, slots=True)
class Removed:
    """How much one sweep removed."""

    conversations: int = 0
    messages: int = 0
    oauth_states: int = 0
    command_events: int = 0
    ticks: int = 0
    cached_embeddings: int = 0


class RetentionRepo:
    """The deletes of the retention sweep; each batch is one transaction, so a crash leaves nothing half-removed."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remove_conversations(self, idle_before: datetime) -> tuple[int, int]:
        """Remove conversations with no message since `idle_before`, tallying their questions and feedback per day
        first; (conversations, messages) removed."""
        conversations = messages = 0
        while True:
            removed = await self._remove_batch(idle_before)
            if removed is None:
                return conversations, messages
            conversations += removed[0]
            messages += removed[1]

    async def _remove_batch(self, idle_before: datetime) -> tuple[int, int] | None:
        async with self._db.session() as session:
            recent = select(Message.id).where(
                col(Message.conversation_id) == Conversation.id, col(Message.created_at) >= idle_before
            )
            idle = (
                select(Conversation.id)
                .where(col(Conversation.created_at) < idle_before, ~recent.exists())
                .limit(_BATCH)
            )
            ids = list(await session.exec(idle))
            if not ids:
                return None
            rows = await session.exec(
                select(Message.role, Message.feedback, Message.created_at).where(col(Message.conversation_id).in_(ids))
            )
            days: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
            count = 0
            for role, feedback, created_at in rows:
                count += 1
                figures = days[created_at.date().isoformat()]
                figures[0] += role == "user"
                figures[1] += feedback == "up"
                figures[2] += feedback == "down"
            for day, (questions, helpful, unhelpful) in days.items():
                row = await session.get(FeedbackTally, day)
                if row is None:
                    row = FeedbackTally(day=day)
                row.questions += questions
                row.helpful += helpful
                row.unhelpful += unhelpful
                session.add(row)
            await session.exec(delete(Message).where(col(Message.conversation_id).in_(ids)))
            await session.exec(delete(PostedMessage).where(col(PostedMessage.conversation_id).in_(ids)))
            await session.exec(delete(Conversation).where(col(Conversation.id).in_(ids)))
        return len(ids), count

    async def remove_expired(self, now: datetime, *, events_before: datetime, ticks_before: datetime) -> Removed:
        """Expired OAuth states, command events and schedule ticks past their use."""
        async with self._db.session() as session:
            states = await session.exec(delete(SlackOAuthState).where(col(SlackOAuthState.expires_at) <= now))
            events = await session.exec(delete(CommandEvent).where(col(CommandEvent.created_at) < events_before))
            ticks = await session.exec(delete(ScheduleTick).where(col(ScheduleTick.created_at) < ticks_before))
        return Removed(oauth_states=states.rowcount, command_events=events.rowcount, ticks=ticks.rowcount)

    async def prune_embeddings(self, older_than: datetime, keep: int) -> int:
        """Drop cached embeddings made before `older_than`, then the oldest beyond the newest `keep`."""
        async with self._db.session() as session:
            aged = await session.exec(
                delete(EmbeddingCacheEntry).where(col(EmbeddingCacheEntry.created_at) < older_than)
            )
            removed = int(aged.rowcount)
            total = (await session.exec(select(func.count()).select_from(EmbeddingCacheEntry))).one()
            if total > keep:
                oldest = (
                    select(EmbeddingCacheEntry.id)
                    .order_by(col(EmbeddingCacheEntry.created_at), col(EmbeddingCacheEntry.id))
                    .limit(total - keep)
                )
                extra = await session.exec(
                    delete(EmbeddingCacheEntry).where(col(EmbeddingCacheEntry.id).in_(oldest.scalar_subquery()))
                )
                removed += int(extra.rowcount)
        return removed

    async def tallies(self, since_day: str) -> list[tuple[str, int, int, int]]:
        """(day, questions, helpful, unhelpful) kept of removed conversations, from `since_day` (ISO date) on."""
        statement = select(FeedbackTally).where(col(FeedbackTally.day) >= since_day).order_by(col(FeedbackTally.day))
        async with self._db.session() as session:
            return [(row.day, row.questions, row.helpful, row.unhelpful) for row in await session.exec(statement)]
