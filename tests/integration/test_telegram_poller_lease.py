"""One Telegram poller among the instances on a database: the lease's holder polls, the others stand by and one of
them takes over when the holder dies or leaves; a holder that cannot renew (the database failing, hanging, or gone)
stops polling before its lease lapses, so two never poll at once.

The real lease repository on SQLite and PostgreSQL (and a real PostgreSQL outage); polling itself is a recorder
that notes any overlap, as Telegram answers one with 409 (the e2e drill polls the fake Bot API with two real
processes)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest_asyncio
from sqlalchemy.exc import OperationalError

from adapters.telegram.poller import FENCE, PollerLease
from bot.app.settings import Settings
from bot.cli.doctor import database_finding
from storage.db import Database, DatabaseConfig
from storage.errors import DatabaseUnavailable
from storage.repos.leases import LeaseRepo

NAME = "telegram-poller:4242"
PERIOD = 3.0
RETRY = 0.2


class Telegram:
    """Stands for Telegram's getUpdates as the processes' updaters meet it: who polls, and every overlap (a 409)."""

    def __init__(self) -> None:
        self.polling: set[str] = set()
        self.conflicts: list[tuple[str, str]] = []

    def updater(self, owner: str) -> Updater:
        return Updater(self, owner)


class Updater:
    """One process's python-telegram-bot updater: its starts and stops, recorded with Telegram's view of them."""

    def __init__(self, telegram: Telegram, owner: str) -> None:
        self.telegram = telegram
        self.owner = owner
        self.log: list[str] = []
        self.fail_starts = 0

    async def start(self) -> None:
        if self.fail_starts:
            self.fail_starts -= 1
            raise ConnectionError("api.telegram.org unreachable")
        assert self.owner not in self.telegram.polling
        self.telegram.conflicts.extend((other, self.owner) for other in self.telegram.polling)
        self.telegram.polling.add(self.owner)
        self.log.append("start")

    async def stop(self) -> None:
        if self.owner in self.telegram.polling:
            self.telegram.polling.discard(self.owner)
            self.log.append("stop")


def _process(leases: LeaseRepo, updater: Updater) -> PollerLease:
    return PollerLease(leases, NAME, updater.owner, start=updater.start, stop=updater.stop, period=PERIOD, retry=RETRY)


async def _until(lease: PollerLease, polling: bool, seconds: float) -> float:
    """Wait until `lease` polls (or not); the seconds it took."""
    started = time.monotonic()
    async with asyncio.timeout(seconds):
        while lease.polling != polling:
            lease.changed.clear()
            await lease.changed.wait()
    return time.monotonic() - started


async def _either(a: PollerLease, b: PollerLease, seconds: float) -> None:
    """Wait until one of the two polls."""
    async with asyncio.timeout(seconds):
        while not (a.polling or b.polling):
            a.changed.clear()
            b.changed.clear()
            waits = [asyncio.ensure_future(a.changed.wait()), asyncio.ensure_future(b.changed.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()


async def _kill(lease: PollerLease) -> None:
    """What kill -9 does to the lease: no more renewals and no release (its updater's connection is gone too)."""
    assert lease._task is not None
    lease._task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await lease._task


async def test_the_first_polls_the_second_stands_by_and_takes_over_when_the_first_leaves(db: Database) -> None:
    leases, telegram = LeaseRepo(db), Telegram()
    a_updater, b_updater = telegram.updater("a"), telegram.updater("b")
    a, b = _process(leases, a_updater), _process(leases, b_updater)
    await a.begin()
    await b.begin()
    try:
        assert (a.polling, b.polling) == (True, False)
        await a.end()  # a clean stop gives the lease up
        assert await _until(b, True, 5) < 1.0
        assert a_updater.log == ["start", "stop"]
        assert b_updater.log == ["start"]
        assert telegram.conflicts == []
    finally:
        await a.end()
        await b.end()


async def test_a_poller_that_dies_is_replaced_within_its_lease_and_never_overlaps(db: Database) -> None:
    leases, telegram = LeaseRepo(db), Telegram()
    dead, alive = telegram.updater("a"), telegram.updater("b")
    a, b = _process(leases, dead), _process(leases, alive)
    await a.begin()
    await b.begin()
    try:
        assert a.polling
        await _kill(a)
        telegram.polling.discard("a")  # its held getUpdates ended with its connection
        took = await _until(b, True, PERIOD + 5)
        assert took <= PERIOD + 2 * RETRY + 1.0, took
        holder = await leases.holder(NAME)
        assert holder is not None
        assert holder.owner == "b"
        assert telegram.conflicts == []
    finally:
        await b.end()


class _CutOff(LeaseRepo):
    """Our LeaseRepo, whose statements for this process go wrong once armed: raise the database's error, or hang."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.fault: BaseException | None = None
        self.hang = False
        self.armed = False
        self.renewals = 0

    async def _reach(self) -> None:
        if self.armed and self.hang:
            await asyncio.Event().wait()  # a database that never answers (a network partition)
        if self.armed and self.fault is not None:
            raise self.fault

    async def acquire(self, name: str, owner: str, *, lease: float) -> bool:
        await self._reach()
        return await super().acquire(name, owner, lease=lease)

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        self.renewals += 1
        await self._reach()
        return await super().renew(name, owner, lease=lease)


async def _stops_before_its_lease_lapses(db: Database, cut_off: _CutOff) -> None:
    """`cut_off` starts failing its holder's renewals: the holder lets go while its lease still holds, after trying
    again in between; the other process polls once the lease lapsed, never beside it."""
    telegram = Telegram()
    a_updater, b_updater = telegram.updater("a"), telegram.updater("b")
    a, b = _process(cut_off, a_updater), _process(LeaseRepo(db), b_updater)
    await a.begin()
    await b.begin()
    try:
        assert a.polling
        renewals = cut_off.renewals
        cut_off.armed = True
        stopped_after = await _until(a, False, PERIOD + 2)
        holder = await LeaseRepo(db).holder(NAME)
        assert holder is not None
        assert holder.owner == "a", "it let go while its lease still held: nobody else could have been polling yet"
        assert stopped_after < PERIOD * FENCE + 0.5, stopped_after
        if not cut_off.hang:
            assert cut_off.renewals - renewals >= 2, "a failed renewal is tried again before the holder lets go"
        assert a_updater.log == ["start", "stop"]
        await _until(b, True, PERIOD + 2)  # the lease lapsed: the other process polls
        assert telegram.conflicts == []
    finally:
        await a.end()
        await b.end()


async def test_a_holder_whose_renewals_raise_the_databases_error_stops_polling_before_its_lease_lapses(
    db: Database,
) -> None:
    # What SQLAlchemy raises when the server is away (not a StorageError: Database passes it through).
    cut_off = _CutOff(db)
    cut_off.fault = OperationalError("UPDATE lease ...", None, ConnectionRefusedError("the database is away"))
    await _stops_before_its_lease_lapses(db, cut_off)


async def test_a_holder_whose_renewals_raise_a_storage_error_stops_polling_before_its_lease_lapses(
    db: Database,
) -> None:
    cut_off = _CutOff(db)
    cut_off.fault = DatabaseUnavailable("postgresql://db", "connection refused")
    await _stops_before_its_lease_lapses(db, cut_off)


async def test_a_holder_whose_renewals_hang_stops_polling_before_its_lease_lapses(db: Database) -> None:
    cut_off = _CutOff(db)
    cut_off.hang = True
    await _stops_before_its_lease_lapses(db, cut_off)


async def test_a_holder_that_cannot_start_polling_gives_the_lease_to_another(db: Database) -> None:
    leases, telegram = LeaseRepo(db), Telegram()
    a_updater, b_updater = telegram.updater("a"), telegram.updater("b")
    a_updater.fail_starts = 1_000  # Telegram unreachable from this process
    a, b = _process(leases, a_updater), _process(leases, b_updater)
    await a.begin()
    await b.begin()
    try:
        assert not a.polling
        await _until(b, True, 2.0)  # within retries, not a lease period: a gave the lease up
        holder = await leases.holder(NAME)
        assert holder is not None
        assert holder.owner == "b"
        assert a_updater.log == []
    finally:
        await a.end()
        await b.end()


class Outage:
    """A database of this test's own on the test cluster, and a superuser connection to take it away and back."""

    def __init__(self, url: str, name: str, admin: asyncpg.Connection) -> None:
        self.url = url
        self.name = name
        self.admin = admin

    async def go_away(self) -> None:
        """What a restart or a lost network does to clients: every connection dropped, new ones refused."""
        await self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        await self.admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", self.name)

    async def come_back(self) -> None:
        await self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')


@pytest_asyncio.fixture
async def outage(postgres_url: str) -> AsyncIterator[Outage]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(f"{postgres_url}/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield Outage(f"{postgres_url}/{name}", name, admin)
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        await admin.close()


async def test_when_postgresql_goes_away_the_holder_stops_polling_and_one_polls_again_once_it_is_back(
    outage: Outage,
) -> None:
    # Two processes: a database connection pool each.
    db_a, db_b = Database(DatabaseConfig(url=outage.url)), Database(DatabaseConfig(url=outage.url))
    await db_a.open()
    await db_b.open()
    telegram = Telegram()
    a = _process(LeaseRepo(db_a), telegram.updater("a"))
    b = _process(LeaseRepo(db_b), telegram.updater("b"))
    try:
        await a.begin()
        await b.begin()
        assert (a.polling, b.polling) == (True, False)
        await outage.go_away()
        stopped_after = await _until(a, False, PERIOD + 2)
        assert stopped_after < PERIOD, stopped_after  # before its lease could have lapsed
        assert not b.polling
        await outage.come_back()
        await _either(a, b, PERIOD + 5)
        assert telegram.conflicts == []
        assert len(telegram.polling) == 1
    finally:
        await a.end()
        await b.end()
        await db_a.close()
        await db_b.close()


async def test_doctor_names_the_process_that_polls(db: Database, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, DATABASE_URL=db.config.url)
    telegram = Telegram()
    a = _process(LeaseRepo(db), telegram.updater("host-a:41:c0ffee"))
    await a.begin()
    try:
        finding = await database_finding(settings)
        assert finding.detail.endswith(f"; held: {NAME} by host-a:41:c0ffee"), finding.detail
    finally:
        await a.end()
    finding = await database_finding(settings)
    assert "held:" not in finding.detail, "a clean stop gives the lease up"
