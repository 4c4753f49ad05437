"""The reindex's lease under faults, on a real database: renewals failing, a lease lost or taken, the switch fenced."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy.exc import OperationalError

from bot.knowledge.index_lock import REINDEX, IndexLock, IndexLockLost
from storage.clock import database_now
from storage.db import Database
from storage.repos.leases import LeaseRepo
from tests.integration.test_index_lock import expire_lease

LEASE = 60.0


class FlakyLeases(LeaseRepo):
    """Our LeaseRepo, whose renewals raise a database error: the first `fail` of them, or every one with -1."""

    def __init__(self, db: Database, fail: int) -> None:
        super().__init__(db)
        self.fail = fail
        self.renewals = 0

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        self.renewals += 1
        if self.fail:
            self.fail -= 1
            raise OperationalError("UPDATE lease ...", None, ConnectionRefusedError("the database is away"))
        return await super().renew(name, owner, lease=lease)


class Ticks:
    """The lock's own clock and sleep, driven by the test: a step ends the pending wait, moving the clock by it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.asked: list[float] = []
        self._waiting = asyncio.Event()
        self._go: asyncio.Queue[None] = asyncio.Queue()

    def clock(self) -> float:
        return self.now

    async def wait(self, seconds: float) -> None:
        self.asked.append(seconds)
        self._waiting.set()
        await self._go.get()
        self.now += seconds

    async def started(self) -> None:
        """Return once the renewal loop waits."""
        await asyncio.wait_for(self._waiting.wait(), 10)

    async def step(self, reindex: asyncio.Task[None]) -> None:
        """End the pending wait; return once the loop waits again or the reindex ended."""
        self._waiting.clear()
        self._go.put_nowait(None)
        waiting = asyncio.ensure_future(self._waiting.wait())
        try:
            await asyncio.wait_for(asyncio.wait([waiting, reindex], return_when=asyncio.FIRST_COMPLETED), 10)
        finally:
            waiting.cancel()


async def _reindex(lock: IndexLock, switched: list[str], go: asyncio.Event) -> None:
    """A reindex that fills its generation until `go`, then switches once its hold is confirmed."""
    async with lock.hold() as held:
        await go.wait()
        await held.confirm()
        switched.append("switched")


async def test_the_reindex_lease_is_renewed_after_a_failed_renewal(db: Database) -> None:
    leases, ticks = FlakyLeases(db, fail=1), Ticks()
    lock = IndexLock(leases, "reindexer", lease=LEASE, clock=ticks.clock, wait=ticks.wait)
    switched: list[str] = []
    go = asyncio.Event()
    reindex = asyncio.create_task(_reindex(lock, switched, go))
    await ticks.started()

    await ticks.step(reindex)  # the renewal fails: retried soon
    assert leases.renewals == 1
    assert ticks.asked[-1] < LEASE / 3
    before = await database_now(db)
    await ticks.step(reindex)  # and succeeds

    assert leases.renewals == 2
    holder = await leases.holder(REINDEX)
    assert holder is not None
    assert holder.owner == "reindexer"
    assert holder.expires_at >= before + timedelta(seconds=LEASE)
    go.set()
    await asyncio.wait_for(reindex, 10)
    assert switched == ["switched"]
    assert await leases.holder(REINDEX) is None


async def test_a_reindex_whose_renewals_fail_for_a_whole_lease_stops_before_its_switch(db: Database) -> None:
    leases, ticks = FlakyLeases(db, fail=-1), Ticks()
    lock = IndexLock(leases, "reindexer", lease=LEASE, clock=ticks.clock, wait=ticks.wait)
    switched: list[str] = []
    reindex = asyncio.create_task(_reindex(lock, switched, asyncio.Event()))
    await ticks.started()

    while not reindex.done():
        assert ticks.now < LEASE, "still renewing once the lease must have lapsed"
        await ticks.step(reindex)

    with pytest.raises(IndexLockLost):
        await reindex
    assert ticks.now == LEASE, "it stopped as the lease must have lapsed, not later"
    assert leases.renewals > 3, "it retried in between"
    assert switched == []


async def test_a_reindex_whose_lease_another_process_took_stops_and_leaves_that_lease_alone(db: Database) -> None:
    leases, ticks = LeaseRepo(db), Ticks()
    lock = IndexLock(leases, "first", lease=LEASE, clock=ticks.clock, wait=ticks.wait)
    switched: list[str] = []
    reindex = asyncio.create_task(_reindex(lock, switched, asyncio.Event()))
    await ticks.started()
    # The first process stalled past its lease (its clock saw no time pass) and a second reindex took over.
    await expire_lease(db, REINDEX)
    assert await leases.acquire(REINDEX, "second", lease=LEASE)

    await ticks.step(reindex)

    with pytest.raises(IndexLockLost):
        await reindex
    assert switched == []
    holder = await leases.holder(REINDEX)
    assert holder is not None
    assert holder.owner == "second"


async def test_the_switch_is_refused_once_the_lease_lapsed_even_before_a_renewal_noticed(db: Database) -> None:
    leases, ticks = LeaseRepo(db), Ticks()
    lock = IndexLock(leases, "reindexer", lease=LEASE, clock=ticks.clock, wait=ticks.wait)
    async with lock.hold() as held:
        await expire_lease(db, REINDEX)
        with pytest.raises(IndexLockLost):
            await held.confirm()
        # Meanwhile the chat's writes went on against the live generation.
        await lock.ensure_writable()
