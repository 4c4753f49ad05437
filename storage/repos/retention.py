"""What retention removes: conversations idle past a cutoff (their figures kept as tallies), expired OAuth states,
old command events and schedule ticks, and embedding-cache entries past an age or over a count."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
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


@dataclass(slots=True)
class _DayFigures:
    """One day's figures of the messages a sweep removes."""

    questions: int = 0
    helpful: int = 0
    unhelpful: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, role: str, feedback: str, reason: str) -> None:
        self.questions += role == "user"
        self.helpful += feedback == "up"
        self.unhelpful += feedback == "down"
        if feedback == "down" and reason:
            self.reasons[reason] += 1


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
                select(Message.role, Message.feedback, Message.feedback_reason, Message.created_at).where(
                    col(Message.conversation_id).in_(ids)
                )
            )
            days: dict[str, _DayFigures] = defaultdict(_DayFigures)
            count = 0
            for role, feedback, reason, created_at in rows:
                count += 1
                days[created_at.date().isoformat()].add(role, feedback, reason)
            for day, figures in days.items():
                row = await session.get(FeedbackTally, day)
                if row is None:
                    row = FeedbackTally(day=day)
                row.questions += figures.questions
                row.helpful += figures.helpful
                row.unhelpful += figures.unhelpful
                # A new dict, so the JSON column is seen as changed.
                row.reasons = dict(Counter(row.reasons) + figures.reasons)
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

    async def tallied_reasons(self, since_day: str) -> Counter[str]:
        """How many 👎 gave each reason in the conversations retention removed, from `since_day` (ISO date) on."""
        statement = select(FeedbackTally.reasons).where(col(FeedbackTally.day) >= since_day)
        total: Counter[str] = Counter()
        async with self._db.session() as session:
            for reasons in await session.exec(statement):
                total.update({str(name): int(n) for name, n in dict(reasons).items()})
        return total
