"""One poller per bot among every `ragbot serve` on a database: Telegram answers a second getUpdates on the same
token with 409 Conflict, so the instances hold a lease for the bot and only its holder polls.

The holder renews the lease every third of a period (sooner again after a failed renewal); the others try to take
it every `retry` seconds, so one of them polls within a period (plus a retry) of the holder's death, and at once
(within a retry) after a clean stop, which gives the lease up.

The fence: a holder stops polling once two thirds of a period have passed since it *sent* its last successful
renewal. The database set that lease's expiry no earlier than the send, so no other process can take the lease
for another third of a period, which is the time left to stop the updater (cancel the held getUpdates, send
python-telegram-bot's closing one). Each renewal is bounded by the same fence, so a database that hangs instead of
failing cannot keep an unfenced holder polling either. Two pollers of one bot therefore never overlap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

from storage.errors import first_line
from storage.records import LeaseRecord

log = logging.getLogger(__name__)

Wait = Callable[[float], Awaitable[None]]
# The share of a period a holder may go without a renewal before it stops polling; the rest is the time it has to
# stop before another process can take the lease (see the module's docstring).
FENCE: Final = 2 / 3
# The first retry of a failed renewal (seconds), doubled on each failure up to the usual third of a period.
_FIRST_RETRY: Final = 0.5


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

    async def holder(self, name: str) -> LeaseRecord | None:
        """Who holds `name` now; None when nobody does."""
        ...


class PollerLease:
    """Starts and stops polling as this process takes and loses the bot's lease.

    `start` begins polling (it may raise: the lease is then given up and taken again later); `stop` ends it.
    `clock` and `wait` are this process's monotonic clock and sleep, injected so the fence is tested without sleeping.
    """

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
        wait: Wait = asyncio.sleep,
    ) -> None:
        self._leases = leases
        self._name = name
        self._owner = owner
        self._start = start
        self._stop = stop
        self._period = period
        self._retry = retry
        self._clock = clock
        self._wait = wait
        self._task: asyncio.Task[None] | None = None
        self.polling = False
        # By this process's clock: when the holder must have stopped polling unless a renewal succeeds first.
        self._fence = float("-inf")
        self._said_unreachable = False
        self.changed = asyncio.Event()

    @property
    def name(self) -> str:
        """The lease's name: `telegram-poller:<bot id>`."""
        return self._name

    async def begin(self) -> None:
        """Poll now if the lease is free, else stand by; either way keep at it until `end`."""
        if not await self._try_take():
            holder = await self._current_holder()
            log.info("telegram=poller role=standby lease=%s holder=%s", self._name, holder)
        self._task = asyncio.create_task(self._run(), name="telegram-poller-lease")

    async def end(self) -> None:
        """Stop polling and give the lease up, so another process polls within its next retry."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self.polling:
            await self._let_go("stopping")
        await asyncio.shield(self._release())

    async def _run(self) -> None:
        while True:
            try:
                if self.polling:
                    await self._hold()
                else:
                    await self._wait(self._retry)
                    await self._try_take()
            except Exception:
                # A background loop that must outlive any one failure (stopping the updater broke, say): it goes on
                # standing by or holding, as its flags say.
                log.exception("telegram=poller_failed lease=%s", self._name)
                await self._wait(self._retry)

    async def _try_take(self) -> bool:
        """Take the lease if it is free and start polling; True when this process polls now."""
        sent = self._clock()
        try:
            async with asyncio.timeout(self._period * FENCE):
                taken = await self._leases.acquire(self._name, self._owner, lease=self._period)
        except Exception as exc:
            # The database out of reach: stand by (said once per outage) and try again at the next retry.
            if not self._said_unreachable:
                log.warning("telegram=poller_lease_unreachable lease=%s reason=%s", self._name, first_line(exc))
                self._said_unreachable = True
            return False
        self._said_unreachable = False
        if not taken:
            return False
        self._fence = sent + self._period * FENCE
        try:
            await self._start()
        except Exception as exc:
            # Telegram out of reach (its deleteWebhook at the start of polling): give the lease to whoever can poll.
            log.warning("telegram=poller_start_failed lease=%s reason=%s", self._name, first_line(exc))
            await self._stop()
            await self._release()
            return False
        self.polling = True
        log.info("telegram=poller role=holder lease=%s owner=%s", self._name, self._owner)
        self.changed.set()
        return True

    async def _hold(self) -> None:
        """Renew every third of a period, sooner after a failure, until the lease is lost or the fence is reached;
        then stop polling."""
        interval = self._period / 3
        pause = interval
        while True:
            await self._wait(max(0.0, min(pause, self._fence - self._clock())))
            sent = self._clock()
            if sent >= self._fence:
                reason = "renewals failed"
                break
            try:
                async with asyncio.timeout(self._fence - sent):
                    held = await self._leases.renew(self._name, self._owner, lease=self._period)
            except Exception as exc:
                # The database away for a moment must not cost the role: retry, sooner at first, until the fence.
                log.warning("telegram=poller_renew_failed lease=%s reason=%s", self._name, first_line(exc))
                pause = _FIRST_RETRY if pause == interval else min(interval, pause * 2)
                continue
            if not held:
                reason = "lease lost"
                break
            self._fence = sent + self._period * FENCE
            pause = interval
        await self._let_go(reason)

    async def _let_go(self, reason: str) -> None:
        self.polling = False
        await self._stop()
        log.info("telegram=poller role=standby lease=%s reason=%r", self._name, reason)
        self.changed.set()

    async def _release(self) -> None:
        try:
            await self._leases.release(self._name, self._owner)
        except Exception as exc:
            # Left to expire: another process polls within a period instead of at its next retry.
            log.warning("telegram=poller_release_failed lease=%s reason=%s", self._name, first_line(exc))

    async def _current_holder(self) -> str:
        try:
            holder = await self._leases.holder(self._name)
        except Exception as exc:
            return f"unknown ({first_line(exc)})"
        return holder.owner if holder is not None else "none"
