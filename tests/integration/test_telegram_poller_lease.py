"""One Telegram poller among the instances on a database: the lease's holder polls, the others stand by and one of
them takes over when the holder dies or leaves; a holder that cannot renew stops polling before its lease lapses.

The real lease repository on SQLite and PostgreSQL; polling itself is a recorder (the e2e drill polls the fake
Bot API with two real processes)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from adapters.telegram.poller import PollerLease
from storage.db import Database
from storage.errors import DatabaseUnavailable
from storage.repos.leases import LeaseRepo

NAME = "telegram-poller:4242"
PERIOD = 3.0
RETRY = 0.2


class Updater:
    """Stands for one process's python-telegram-bot updater: whether it polls, and every change."""

    def __init__(self) -> None:
        self.polling = False
        self.log: list[str] = []

    async def start(self) -> None:
        assert not self.polling
        self.polling = True
        self.log.append("start")

    async def stop(self) -> None:
        self.polling = False
        self.log.append("stop")


def _process(leases: LeaseRepo, owner: str, updater: Updater) -> PollerLease:
    return PollerLease(leases, NAME, owner, start=updater.start, stop=updater.stop, period=PERIOD, retry=RETRY)


async def _until(lease: PollerLease, polling: bool, seconds: float) -> float:
    """Wait until `lease` polls (or not); the seconds it took."""
    started = time.monotonic()
    async with asyncio.timeout(seconds):
        while lease.polling != polling:
            lease.changed.clear()
            await lease.changed.wait()
    return time.monotonic() - started


async def test_the_first_polls_the_second_stands_by_and_takes_over_when_the_first_leaves(db: Database) -> None:
    leases = LeaseRepo(db)
    a_updater, b_updater = Updater(), Updater()
    a, b = _process(leases, "a", a_updater), _process(leases, "b", b_updater)
    await a.begin()
    await b.begin()
    try:
        assert (a.polling, b.polling) == (True, False)
        await a.end()  # a clean stop gives the lease up
        assert await _until(b, True, 5) < 1.0
        assert a_updater.log == ["start", "stop"]
        assert b_updater.log == ["start"]
    finally:
        await a.end()
        await b.end()


async def test_a_poller_that_dies_is_replaced_within_its_lease_and_never_overlaps(db: Database) -> None:
    leases = LeaseRepo(db)
    dead, alive = Updater(), Updater()
    a, b = _process(leases, "a", dead), _process(leases, "b", alive)
    await a.begin()
    await b.begin()
    try:
        assert a.polling
        assert a._task is not None
        a._task.cancel()  # killed: no renewal, no release
        with contextlib.suppress(asyncio.CancelledError):
            await a._task
        took = await _until(b, True, PERIOD + 5)
        assert took <= PERIOD + 2 * RETRY + 1.0, took
        holder = await leases.holder(NAME)
        assert holder is not None
        assert holder.owner == "b"
    finally:
        await b.end()


class _FailingRenewals(LeaseRepo):
    """The database goes away for this process's renewals (its acquire still works, for the other process)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.failing = False

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        if self.failing:
            raise DatabaseUnavailable("postgresql://db", "connection refused")
        return await super().renew(name, owner, lease=lease)


async def test_a_holder_that_cannot_renew_stops_polling_before_its_lease_lapses(db: Database) -> None:
    cut_off = _FailingRenewals(db)
    updater = Updater()
    a = _process(cut_off, "a", updater)
    await a.begin()
    try:
        assert a.polling
        cut_off.failing = True
        stopped_after = await _until(a, False, PERIOD + 2)
        holder = await LeaseRepo(db).holder(NAME)
        # It let go while its lease still held: nobody else could have been polling yet.
        assert holder is not None
        assert holder.owner == "a"
        assert stopped_after < PERIOD
        assert updater.log == ["start", "stop"]
    finally:
        await a.end()
