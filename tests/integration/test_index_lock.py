"""One reindex at a time, and no index write while it runs: the lease in SQL that every ragbot process shares."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update
from sqlmodel import col

from bot.errors import UserFacingError
from bot.knowledge.index_lock import REINDEX, IndexLock
from bot.knowledge.jobs import JobRunner
from bot.words import messages
from storage.clock import database_time
from storage.db import Database
from storage.models import Lease
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.leases import LeaseRepo
from tests.integration.test_jobs import ScriptedWork

MINUTE = 60.0


async def expire_lease(db: Database, name: str) -> None:
    """The lease ran out (by the database's clock): what a lease's worth of real time without renewal would do."""
    statement = (
        update(Lease)
        .where(col(Lease.name) == name)
        .values(expires_at=database_time(-1.0))
        .execution_options(synchronize_session=False)
    )
    async with db.session() as session:
        await session.exec(statement)


async def test_a_lease_has_one_holder_until_it_expires_or_is_released(db: Database) -> None:
    leases = LeaseRepo(db)
    assert await leases.acquire(REINDEX, "a", lease=MINUTE)
    assert not await leases.acquire(REINDEX, "b", lease=MINUTE)
    holder = await leases.holder(REINDEX)
    assert holder is not None
    assert holder.owner == "a"
    # Its holder renews it; another owner cannot.
    assert await leases.renew(REINDEX, "a", lease=2 * MINUTE)
    assert not await leases.renew(REINDEX, "b", lease=3 * MINUTE)
    assert not await leases.acquire(REINDEX, "b", lease=3 * MINUTE)
    # Expired, it is anyone's, and its old holder cannot revive it.
    await expire_lease(db, REINDEX)
    assert await leases.holder(REINDEX) is None
    assert not await leases.renew(REINDEX, "a", lease=MINUTE)
    assert await leases.acquire(REINDEX, "b", lease=MINUTE)
    # Released only by its holder.
    await leases.release(REINDEX, "a")
    assert await leases.holder(REINDEX) is not None
    await leases.release(REINDEX, "b")
    assert await leases.holder(REINDEX) is None


async def test_a_second_reindex_and_index_writes_are_refused_while_one_runs(db: Database) -> None:
    leases = LeaseRepo(db)
    first, second = IndexLock(leases, "host:1:aaa"), IndexLock(leases, "host:2:bbb")
    async with first.hold():
        with pytest.raises(UserFacingError) as refused:
            async with second.hold():
                pytest.fail("two reindexes ran at once")
        assert str(refused.value) == messages.reindex_running("host:1:aaa")
        with pytest.raises(UserFacingError) as write:
            await second.ensure_writable()
        assert str(write.value) == messages.index_rebuilding()
    await second.ensure_writable()
    async with second.hold():
        assert (await second.holder()) is not None


async def test_a_job_queued_during_a_reindex_waits_for_it_and_then_runs(db: Database) -> None:
    leases, jobs = LeaseRepo(db), JobRepo(db)
    kb_id = (await KnowledgeBaseRepo(db).create("locked", chunking={})).id
    reindex, service = IndexLock(leases, "reindexer"), IndexLock(leases, "service", poll=0.05)
    waiting = asyncio.Event()

    async def before_start() -> None:
        if await service.holder() is not None:
            waiting.set()
        await service.wait_writable()

    work = ScriptedWork()
    runner = JobRunner(jobs, work, concurrency=1, renew_every=3600, before_start=before_start)
    await runner.start(adopt=False)
    try:
        async with reindex.hold():
            job = await runner.submit(kb_id, "file", "guide.md")
            await asyncio.wait_for(waiting.wait(), timeout=10)
            assert (await jobs.get(job.id)).status == "queued"
            assert work.ran == []
        finished = await asyncio.wait_for(runner.wait(job.id), timeout=10)
    finally:
        await runner.stop()
    assert finished.status == "succeeded"
    assert work.ran == ["guide.md"]
