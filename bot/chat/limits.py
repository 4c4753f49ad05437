"""Load limits for turns: a per-user rate limit and a gate that runs one turn per conversation at a time."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `count` messages per `window` seconds from one person."""

    count: int = 10
    window: float = 60.0


class RateLimiter:
    """A sliding-window limit per key; time is injected so it is tested without waiting."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}

    def allow(self, key: str) -> bool:
        """Count one message for `key`; False when it is over the limit (and then it is not counted)."""
        now = self._clock()
        seen = self._seen.setdefault(key, deque())
        while seen and seen[0] <= now - self._limit.window:
            seen.popleft()
        if len(seen) >= self._limit.count:
            return False
        seen.append(now)
        if len(self._seen) > 10_000:  # forget idle people so the map cannot grow without bound
            self._seen = {k: v for k, v in self._seen.items() if v and v[-1] > now - self._limit.window}
        return True

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may send again (0 when it may now)."""
        seen = self._seen.get(key)
        if not seen or len(seen) < self._limit.count:
            return 0.0
        return max(0.0, seen[0] + self._limit.window - self._clock())


class TurnGate:
    """One turn at a time per conversation (the next waits its turn, in order) and a global cap on turns."""

    def __init__(self, max_turns: int) -> None:
        self._global = asyncio.Semaphore(max_turns)
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    def waiting(self, conversation_id: str) -> int:
        """How many turns of this conversation are queued or running."""
        return self._waiting.get(conversation_id, 0)

    @asynccontextmanager
    async def turn(
        self, conversation_id: str, on_wait: Callable[[int], Awaitable[None]] | None = None, notice_after: float = 2.0
    ) -> AsyncIterator[None]:
        """Hold the conversation's slot (and a global one) for the body; `on_wait(place)` once the wait is long."""
        place = self._waiting.get(conversation_id, 0)
        self._waiting[conversation_id] = place + 1
        lock = self._locks.setdefault(conversation_id, asyncio.Lock())
        try:
            await self._enter(lock, place, on_wait, notice_after)
            try:
                yield
            finally:
                self._global.release()
                lock.release()
        finally:
            self._waiting[conversation_id] -= 1
            if not self._waiting[conversation_id]:
                del self._waiting[conversation_id]
                if not lock.locked():
                    self._locks.pop(conversation_id, None)

    async def _enter(
        self,
        lock: asyncio.Lock,
        place: int,
        on_wait: Callable[[int], Awaitable[None]] | None,
        notice_after: float,
    ) -> None:
        acquired = asyncio.ensure_future(self._acquire(lock))
        try:
            done, _ = await asyncio.wait({acquired}, timeout=notice_after)
            if not done and on_wait is not None:
                await on_wait(place)
            await acquired
        except BaseException:
            # Cancelled while waiting: give back whatever the waiter got, or stop it getting anything.
            if acquired.done() and not acquired.cancelled() and acquired.exception() is None:
                self._global.release()
                lock.release()
            else:
                acquired.cancel()
            raise

    async def _acquire(self, lock: asyncio.Lock) -> None:
        await lock.acquire()
        try:
            await self._global.acquire()
        except BaseException:
            lock.release()
            raise
