"""One poller per bot among every `ragbot serve` on a database: Telegram answers a second getUpdates on the same
token with 409 Conflict, so the instances hold a lease for the bot and only its holder polls.

The holder renews the lease every third of a period; the others try to take it every `retry` seconds, so one of
them polls within a period (plus a retry) of the holder's death. A holder that cannot renew (the lease taken, or
the database away for two thirds of a period) stops polling before the lease can lapse: two pollers never overlap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Protocol

from storage.errors import StorageError

log = logging.getLogger(__name__)


class Leases(Protocol):
    """Named leases by the database's clock (met by storage.repos.leases.LeaseRepo)."""

    async def acquire(self, name: str, owner: str, *, lease: float) -> bool:
        """Hold `name` for `lease` seconds; False while another owner's lease is live."""
        ...

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        """Extend a live hold; False when it lapsed or another took it."""
        ...

    async def release(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it."""
        ...


class PollerLease:
    """Starts and stops polling as this process takes and loses the bot's lease."""

    def __init__(
        self,
        leases: Leases,
        name: str,
        owner: str,
        *,
        start: Callable[[], Awaitable[None]],
        stop: Callable[[], Awaitable[None]],
        period: float = 15.0,
        retry: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._leases = leases
        self._name = name
        self._owner = owner
        self._start = start
        self._stop = stop
        self._period = period
        self._retry = retry
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self.polling = False
        # When this holder last renewed: past two thirds of a period without one, it lets go.
        self._renewed = float("-inf")
        self.changed = asyncio.Event()

    async def begin(self) -> None:
        """Poll now if the lease is free, else stand by; either way keep at it until `end`."""
        await self._try_take()
        self._task = asyncio.create_task(self._run(), name="telegram-poller-lease")

    async def end(self) -> None:
        """Stop polling and give the lease up, so another process polls at once."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        if self.polling:
            await self._let_go("stopping")
            with suppress(StorageError):
                await self._leases.release(self._name, self._owner)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._period / 3 if self.polling else self._retry)
            try:
                if self.polling:
                    await self._keep()
                else:
                    await self._try_take()
            except Exception:
                # Starting or stopping the updater broke (the network): stand by and try again.
                log.exception("telegram=poller_failed lease=%s", self._name)

    async def _try_take(self) -> None:
        try:
            taken = await self._leases.acquire(self._name, self._owner, lease=self._period)
        except StorageError as exc:
            log.warning("telegram=poller_lease_failed reason=%s", exc)
            return
        if taken:
            self._renewed = self._clock()
            await self._start()
            self.polling = True
            log.info("telegram=poller role=holder lease=%s", self._name)
            self.changed.set()

    async def _keep(self) -> None:
        try:
            held = await self._leases.renew(self._name, self._owner, lease=self._period)
        except StorageError as exc:
            log.warning("telegram=poller_renew_failed reason=%s", exc)
            held = self._clock() - self._renewed < self._period * 2 / 3
        else:
            if held:
                self._renewed = self._clock()
        if not held:
            await self._let_go("lease lost")

    async def _let_go(self, reason: str) -> None:
        self.polling = False
        await self._stop()
        log.info("telegram=poller role=standby reason=%r lease=%s", reason, self._name)
        self.changed.set()
