"""This process's presence beating on a thread of its own, with its own database connection.

A burst can keep the serving event loop seconds between steps; leases renewed from that loop then lapse, and the
other processes take over answers this one is still writing. Beats on their own loop renew on time however busy
the serving loop is, while a pulse from that loop still lets a truly stuck process go.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any, TypeVar

from bot.chat.instances import HeldLeases, LoopPulse, Presence
from storage.db import Database, DatabaseConfig
from storage.repos.leases import LeaseRepo

T = TypeVar("T")


class OwnLoop:
    """An event loop on a thread of its own, for the few steps a busy serving loop must not delay."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def start(self) -> None:
        """Start the thread and its loop."""
        started: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name=self._name, daemon=True)
        self._thread.start()
        self._loop = await asyncio.wrap_future(started)

    @staticmethod
    def _run(started: concurrent.futures.Future[asyncio.AbstractEventLoop]) -> None:
        loop = asyncio.new_event_loop()
        started.set_result(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the own loop and wait for its result here."""
        if self._loop is None:
            raise RuntimeError("OwnLoop.start() has not been awaited")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))

    async def stop(self) -> None:
        """Stop the loop and wait for its thread to end."""
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join)
        self._loop = self._thread = None


@asynccontextmanager
async def beating_apart(
    config: DatabaseConfig, instance_id: str, held: HeldLeases, *, period: float, stall_limit: float | None = None
) -> AsyncIterator[Presence]:
    """The presence of this process, renewing its own lease and the `held` ones from a thread of its own, until it
    has not heard from this loop for `stall_limit` seconds (two periods unless given)."""
    pulse = LoopPulse(limit=2 * period if stall_limit is None else stall_limit)
    own = OwnLoop("presence")
    db = Database(replace(config, pool_size=1, max_overflow=1))
    presence = Presence(LeaseRepo(db), instance_id, period=period, held=held, pulse=pulse)
    async with AsyncExitStack() as stack:
        pulsing = asyncio.create_task(pulse.run(), name="loop-pulse")
        stack.callback(pulsing.cancel)
        await own.start()
        stack.push_async_callback(own.stop)
        await own.call(db.open(migrate=False))
        stack.push_async_callback(lambda: own.call(db.close()))
        await own.call(presence.start())
        stack.push_async_callback(lambda: own.call(presence.stop()))
        yield presence
