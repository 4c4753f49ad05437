"""SQLite's one write lock, queued for in the process first, in arrival order.

SQLite lets one connection write at a time; the others wait in its busy handler, which is no queue: each sleeps up
to 100 ms between tries, and whoever tries just after a commit wins. Under load (200 chats' writes beside an
ingestion's batches, an event loop slowed by the burst) a chat's write could lose that race for 30 s and fail with
"database is locked". Here a connection about to write first takes this process's write line, an asyncio lock,
handed on at once and first come first served; SQLite's busy handler is then left with writers of other processes
(a `ragbot ingest` beside `ragbot serve`).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Final

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.util import await_
from sqlalchemy.util.concurrency import in_greenlet

# Statements that take SQLite's write lock (a transaction's first one begins it): DML and DDL, not reads or PRAGMAs.
_WRITES: Final = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.IGNORECASE)
# Where a connection notes that it holds the line: its pool record's info, which outlives one checkout.
_HOLDS: Final = "ragbot_sqlite_write_line"


class WriteLine:
    """One writing connection of this process at a time; the next in line goes as soon as it commits or rolls back."""

    def __init__(self, timeout: float) -> None:
        """`timeout`: the longest wait for the line, then "database is locked", as SQLite's own busy timeout."""
        self._lock = asyncio.Lock()
        self._timeout = timeout
        self.waiting = 0

    def attach(self, engine: Engine) -> None:
        """Hold the line from each transaction's first write to its end, on every connection of `engine`."""
        event.listen(engine, "before_cursor_execute", self._before_execute)
        event.listen(engine, "commit", self._transaction_ended)
        event.listen(engine, "rollback", self._transaction_ended)
        # A connection returned or dropped in the middle of a transaction gives its place up too.
        event.listen(engine.pool, "checkin", self._record_ended)
        event.listen(engine.pool, "invalidate", self._record_ended_with_error)

    @property
    def held(self) -> bool:
        """Whether a connection of this process is writing now (`waiting`: how many wait for it)."""
        return self._lock.locked()

    def _before_execute(
        self, conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
    ) -> None:
        if conn.info.get(_HOLDS) or not _WRITES.match(statement) or not in_greenlet():
            return
        self.waiting += 1
        try:
            await_(self._take())
        except TimeoutError as exc:
            raise OperationalError(statement, parameters, _Locked(self._timeout)) from exc
        finally:
            self.waiting -= 1
        conn.info[_HOLDS] = True

    async def _take(self) -> None:
        # In this task, not under asyncio.wait_for: on Python 3.11 a wait_for cancelled just as the lock is handed
        # over returns nothing and leaves the lock taken by no one; Lock.acquire itself passes it on when cancelled.
        async with asyncio.timeout(self._timeout):
            await self._lock.acquire()

    def _transaction_ended(self, conn: Connection) -> None:
        # An invalidated connection (a statement cancelled mid-way) cannot be asked: the pool's invalidate event
        # gives its place up instead.
        if not (conn.invalidated or conn.closed):
            self._give_up(conn.info)

    def _record_ended(self, dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        self._give_up(record.info)

    def _record_ended_with_error(
        self, dbapi_connection: Any, record: ConnectionPoolEntry, exception: BaseException | None
    ) -> None:
        self._give_up(record.info)

    def _give_up(self, info: dict[Any, Any]) -> None:
        if info.pop(_HOLDS, False):
            self._lock.release()


class _Locked(Exception):
    """The driver-level error a timed-out wait raises as: worded as SQLite words its own."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"database is locked (waited {timeout:g} s for this process's other writers)")
