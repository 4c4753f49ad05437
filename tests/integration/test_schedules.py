"""Schedules on a real database (SQLite and PostgreSQL): a tick runs once however many clocks fire it, and the
retention sweep removes what is past its time and keeps the figures `ragbot stats` shows."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func
from sqlmodel import col, select

from bot.cli.stats import compute_stats, with_tallies
from bot.knowledge.retention import Retention, RetentionPolicy
from bot.knowledge.schedules import RETENTION, URL_SYNC, Scheduler, SchedulerParts, next_run
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.models import ScheduleTick
from storage.records import JobRecord
from storage.repos.conversations import ConversationRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.retention import RetentionRepo
from storage.repos.schedules import ScheduleRepo

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


class Queued:
    """Stands in for the job runner: records each sync queued, as a stored job (so a busy source is seen)."""

    def __init__(self, jobs: JobRepo) -> None:
        self._jobs = jobs
        self.sources: list[str] = []

    async def submit(
        self,
        kb_id: str,
        kind: str,
        source: str,
        *,
        requested_by: str = "",
        requested_from: dict[str, Any] | None = None,
    ) -> JobRecord:
        self.sources.append(source)
        return await self._jobs.create(kb_id, kind, source, requested_by=requested_by, requested_from=requested_from)


def _scheduler(
    db: Database, queued: Queued, *, owner: str, wall: Any = None, observe: Any = None, every: int = 3600
) -> Scheduler:
    retention = Retention(RetentionRepo(db), RetentionPolicy(), jobs=JobRepo(db))
    parts = SchedulerParts(ScheduleRepo(db), queued, JobRepo(db), retention)
    if wall is None:
        return Scheduler(parts, owner=owner, retention_every=every, observe=observe)
    return Scheduler(parts, owner=owner, retention_every=every, wall=wall, observe=observe)


async def test_a_tick_fired_by_two_processes_runs_once_and_the_next_tick_runs_again(db: Database) -> None:
    kb = await KnowledgeBaseRepo(db).create("handbook", chunking={})
    schedule = await ScheduleRepo(db).put(URL_SYNC, 3600, kb_id=kb.id, source="https://example.com/a")
    clock = [NOW.timestamp()]
    queued = Queued(JobRepo(db))
    first = _scheduler(db, queued, owner="one", wall=lambda: clock[0])
    second = _scheduler(db, queued, owner="two", wall=lambda: clock[0])

    assert await first.fire(schedule.id) is True
    assert await second.fire(schedule.id) is False
    assert queued.sources == ["https://example.com/a"]

    # The next hour's tick: the sync queued an hour ago is still unfinished, so nothing is queued twice.
    clock[0] += 3600
    assert await second.fire(schedule.id) is True
    assert queued.sources == ["https://example.com/a"]


async def test_two_running_clocks_fire_a_schedule_once_per_tick(db: Database) -> None:
    outcomes: Counter[str] = Counter()
    seen = asyncio.Event()

    def observe(kind: str, outcome: str) -> None:
        outcomes[outcome] += 1
        if outcomes["ran"] >= 2 and outcomes["skipped"] >= 2:
            seen.set()

    queued = Queued(JobRepo(db))
    # A one-second retention period (shorter than parse_every allows), so the clocks fire within the test.
    clocks = [_scheduler(db, queued, owner=name, observe=observe, every=1) for name in ("one", "two")]
    for clock in clocks:
        await clock.start()
    try:
        async with asyncio.timeout(30):
            await seen.wait()
    finally:
        for clock in clocks:
            await clock.stop()
    schedule = await ScheduleRepo(db).find(RETENTION)
    assert schedule is not None
    assert schedule.last_outcome.endswith("removed")
    async with db.session() as session:
        ticks = (await session.exec(select(func.count()).where(col(ScheduleTick.schedule_id) == schedule.id))).one()
    # Both clocks fired each tick, and each tick ran once: in the process that claimed it.
    assert outcomes["ran"] == ticks, (outcomes, ticks)


async def test_a_removed_schedule_no_longer_fires(db: Database) -> None:
    schedules = ScheduleRepo(db)
    kb = await KnowledgeBaseRepo(db).create("handbook", chunking={})
    schedule = await schedules.put(URL_SYNC, 3600, kb_id=kb.id, source="https://example.com/a")
    queued = Queued(JobRepo(db))
    assert await schedules.remove(schedule.id) is True
    assert await _scheduler(db, queued, owner="one").fire(schedule.id) is False
    assert queued.sources == []


def test_every_process_computes_the_same_next_run() -> None:
    assert next_run(3600, NOW + timedelta(minutes=1)) == NOW + timedelta(hours=1)
    assert next_run(86_400, NOW) == datetime(2026, 11, 28, tzinfo=UTC)


async def test_retention_removes_idle_conversations_and_keeps_their_figures(db: Database) -> None:
    old = NOW - timedelta(days=40)
    past = ConversationRepo(db, clock=lambda: old)
    idle = await past.resolve("web", "", "idle")
    await past.add_message(idle.id, "r1", "user", "How do I reset my VPN?")
    answer = await past.add_message(idle.id, "r1", "assistant", "Open the VPN app.")
    await past.set_feedback(answer.id, "down")
    # A conversation started long ago but spoken in yesterday stays whole.
    kept = await past.resolve("web", "", "kept")
    await past.add_message(kept.id, "r2", "user", "Where is the office?")
    recent = ConversationRepo(db, clock=lambda: NOW - timedelta(days=1))
    await recent.add_message(kept.id, "r3", "user", "And the parking?")

    retention = Retention(RetentionRepo(db), RetentionPolicy(conversation_days=30), jobs=JobRepo(db))
    summary = await retention.sweep(NOW)

    assert summary.startswith("1 conversations (2 messages)")
    now_repo = ConversationRepo(db)
    assert await now_repo.by_id(idle.id) is None
    assert await now_repo.by_id(kept.id) is not None
    assert len(await now_repo.messages_since(NOW - timedelta(days=365))) == 2
    tallies = await RetentionRepo(db).tallies((NOW - timedelta(days=60)).date().isoformat())
    assert tallies == [(old.date().isoformat(), 1, 0, 1)]
    stats = with_tallies(compute_stats([]), tallies)
    assert (stats.questions, stats.unhelpful) == (1, 1)


async def test_retention_keeps_conversations_when_no_period_is_set(db: Database) -> None:
    repo = ConversationRepo(db, clock=lambda: NOW - timedelta(days=3000))
    conversation = await repo.resolve("web", "", "old")
    await repo.add_message(conversation.id, "r1", "user", "Hello?")
    await Retention(RetentionRepo(db), RetentionPolicy(), jobs=JobRepo(db)).sweep(NOW)
    assert await ConversationRepo(db).by_id(conversation.id) is not None


@pytest.mark.parametrize("keep", [3])
async def test_the_embedding_cache_is_pruned_by_age_then_by_count(db: Database, keep: int) -> None:
    cache = SqlEmbeddingCache(db)
    await cache.put_many("local", "m", {f"h{index}": [0.1, 0.2] for index in range(5)})
    removed = await RetentionRepo(db).prune_embeddings(NOW - timedelta(days=3650), keep)
    assert removed == 5 - keep
    assert len(await cache.get_many("local", "m", [f"h{index}" for index in range(5)])) == keep
