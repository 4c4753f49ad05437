"""PostgreSQL's LISTEN/NOTIFY on one channel: a message one ragbot process publishes, every process hears.

The listener holds one connection of its own (outside the pool) for as long as it runs; when that connection
drops (the server restarted) it connects again, backing off, and what was published meanwhile is missed: what
goes through here (a /stop) is worth little after seconds anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.db import Database

log = logging.getLogger(__name__)

_RETRY_MAX = 5.0


class Notifications:
    """Publish to and hear one PostgreSQL channel."""

    def __init__(self, db: Database, channel: str) -> None:
        self._db = db
        self._channel = channel
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def publish(self, payload: str) -> None:
        """Tell every listening process (this one too)."""
        async with self._db.session() as session:
            connection = await session.connection()
            await connection.execute(
                text("SELECT pg_notify(:channel, :payload)"), {"channel": self._channel, "payload": payload}
            )

    async def start(self, heard: Callable[[str], None]) -> None:
        """Call `heard` with each payload published from now on, until stopped."""
        self._task = asyncio.create_task(self._listen(heard), name=f"listen-{self._channel}")
        await self._listening.wait()

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    async def _listen(self, heard: Callable[[str], None]) -> None:
        wait = 0.1
        while True:
            try:
                async with self._db.engine.connect() as connection:
                    try:
                        lost = await self._subscribe(connection, heard)
                        wait = 0.1
                        await lost.wait()
                    finally:
                        # Never back into the pool with a listener on it.
                        with suppress(Exception):
                            await connection.invalidate()
            except Exception as exc:  # the driver's and the pool's errors alike: listen again, backing off
                log.warning("notify=listen_failed channel=%s reason=%s", self._channel, exc)
            self._listening.set()  # never keep a starting process waiting on a channel it cannot hear yet
            await asyncio.sleep(wait)
            wait = min(wait * 2, _RETRY_MAX)

    async def _subscribe(self, connection: AsyncConnection, heard: Callable[[str], None]) -> asyncio.Event:
        raw = await connection.get_raw_connection()
        driver: Any = raw.driver_connection
        lost = asyncio.Event()

        def on_notification(_connection: object, _pid: int, _channel: str, payload: str) -> None:
            heard(payload)

        driver.add_termination_listener(lambda _connection: lost.set())
        await driver.add_listener(self._channel, on_notification)
        self._listening.set()
        return lost
