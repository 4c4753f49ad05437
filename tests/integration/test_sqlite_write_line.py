"""SQLite: a process's writers take SQLite's one write lock in the order they asked, and never wait for ever."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from storage.db import Database, DatabaseConfig
from storage.sqlite_writes import WriteLine


@pytest_asyncio.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(DatabaseConfig(url=f"sqlite:///{tmp_path / 'ragbot.sqlite3'}"))
    await database.open()
    await _run(database, "CREATE TABLE arrivals (n INTEGER PRIMARY KEY AUTOINCREMENT, writer INTEGER)")
    try:
        yield database
    finally:
        await database.close()


async def _run(db: Database, sql: str, **values: object) -> list[object]:
    """One statement in a transaction of its own; the first column of what it returns."""
    async with db.session() as session:
        result = await (await session.connection()).execute(text(sql), values)
        return list(result.scalars().all()) if result.returns_rows else []


async def _write(db: Database, writer: int) -> None:
    await _run(db, "INSERT INTO arrivals (writer) VALUES (:w)", w=writer)


async def _until_waiting(line: WriteLine, count: int) -> None:
    for _ in range(10_000):  # each pass lets the writers' tasks run up to their wait
        if line.waiting == count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{line.waiting} writers waiting, expected {count}")


async def test_writers_waiting_on_a_long_write_go_in_the_order_they_came(db: Database) -> None:
    line = db.write_line
    assert line is not None
    release = asyncio.Event()

    async def long_write() -> None:
        async with db.session() as session:
            await (await session.connection()).execute(text("INSERT INTO arrivals (writer) VALUES (0)"))
            await release.wait()  # an ingestion batch, or a turn on a loop slowed by 200 others

    holder = asyncio.create_task(long_write())
    await asyncio.wait_for(_until_held(line), timeout=10)
    writers = []
    for writer in range(1, 9):
        writers.append(asyncio.create_task(_write(db, writer)))
        await _until_waiting(line, writer)
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, *writers), timeout=30)
    assert await _run(db, "SELECT writer FROM arrivals ORDER BY n") == list(range(9))
    assert not line.held


async def _until_held(line: WriteLine) -> None:
    for _ in range(10_000):
        if line.held:
            return
        await asyncio.sleep(0)
    raise AssertionError("the long write never took the line")


async def test_a_failed_write_gives_its_place_up(db: Database) -> None:
    await _run(db, "CREATE UNIQUE INDEX one_writer ON arrivals (writer)")
    await _write(db, 1)
    with pytest.raises(IntegrityError):
        await _write(db, 1)
    await asyncio.wait_for(_write(db, 2), timeout=10)
    assert db.write_line is not None
    assert not db.write_line.held


async def test_a_write_that_waits_past_the_timeout_fails_as_sqlite_would_and_frees_nothing_it_never_held(
    tmp_path: Path,
) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'short.sqlite3'}")
    line = WriteLine(timeout=0.2)
    line.attach(engine.sync_engine)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE t (n INTEGER)"))
        async with engine.connect() as holder:
            await holder.execute(text("INSERT INTO t VALUES (1)"))
            with pytest.raises(OperationalError, match="database is locked"):
                async with engine.begin() as other:
                    await other.execute(text("INSERT INTO t VALUES (2)"))
            assert line.held
            await holder.commit()
        assert not line.held
        async with engine.begin() as connection:
            await connection.execute(text("INSERT INTO t VALUES (3)"))
            rows = (await connection.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all()
        assert rows == [1, 3]
    finally:
        await engine.dispose()


async def test_postgresql_and_in_memory_sqlite_have_no_line(tmp_path: Path) -> None:
    memory = Database(DatabaseConfig(url="sqlite://"))
    await memory.open()
    try:
        assert memory.write_line is None
    finally:
        await memory.close()


async def test_a_writer_cancelled_while_it_holds_the_line_gives_it_up(db: Database) -> None:
    line = db.write_line
    assert line is not None
    wrote = asyncio.Event()

    async def cancelled_write() -> None:
        async with db.session() as session:
            await (await session.connection()).execute(text("INSERT INTO arrivals (writer) VALUES (1)"))
            wrote.set()
            await asyncio.Event().wait()  # a stop button, a lapsed lease: the task is cancelled here

    task = asyncio.create_task(cancelled_write())
    await asyncio.wait_for(wrote.wait(), timeout=10)
    assert line.held
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(_write(db, 2), timeout=10)
    assert await _run(db, "SELECT writer FROM arrivals ORDER BY n") == [2]
