"""Slack's per-workspace, per-method rate limits kept on our side: answers in flight share one budget."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Rate:
    """Calls allowed per minute, and how many may go at once after a quiet spell."""

    per_minute: float
    burst: float
    # Tokens a progress call leaves for final deliveries: a finished answer never waits behind progress edits.
    reserve: float = 2.0


# Slack's tiers are "per method per workspace per app" (docs.slack.dev rate limits): chat.update is Tier 3
# (50+ a minute), chat.appendStream Tier 4 (100+). A bucket lets rate + burst through in any 60 s, so both stay
# 5-10 under the tier: the headroom keeps a 429 away when something else of the app edits at the same time
# (at 200 answers at once, 45 + 5 made exactly 50 in every minute: bench/RESULTS.md, issue 10).
# conversations.replies is 1 a minute for commercially distributed apps outside the Marketplace (changelog
# 2025-05-29).
RATES: Final[dict[str, Rate]] = {
    "chat.update": Rate(per_minute=40, burst=5),
    "chat.appendStream": Rate(per_minute=80, burst=10),
    "conversations.replies": Rate(per_minute=1, burst=1, reserve=0),
    # chat.postMessage: about one message a second per channel, short bursts allowed (special tier). The burst is one
    # under Slack's: calls sent 1.2 s apart can arrive closer together on a loaded machine or network, and the spare
    # token absorbs that (12 answers started at once in one channel met a 429 in 2 of 7 full test runs at burst 3).
    "chat.postMessage": Rate(per_minute=50, burst=2),
}
# Methods whose limit is per channel rather than per workspace.
PER_CHANNEL: Final = frozenset({"chat.postMessage"})


# A budget unused this long has refilled (the slowest, 1 a minute with a burst of 1, in a minute): it is dropped at
# the next sweep, so channels seen once do not stay in memory.
_IDLE_AFTER: Final = 120.0
_SWEEP_EVERY: Final = 60.0


class Budget:
    """A token bucket for one method in one workspace; final deliveries wait in line, progress only takes spares."""

    def __init__(
        self,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        share: Callable[[], float] = lambda: 1.0,
    ) -> None:
        self._rate = rate
        # This process's part of the budget: Slack counts every process of the app in the workspace as one.
        self._share = share
        self._tokens = self._burst
        self._clock = clock
        self._sleep = sleep
        self._at = clock()
        self._blocked_until = float("-inf")
        self._finals_waiting = 0
        self._line = asyncio.Lock()
        self._used = self._at

    @property
    def _per_second(self) -> float:
        return self._rate.per_minute / 60.0 * self._share()

    @property
    def _burst(self) -> float:
        return max(self._rate.burst * self._share(), 1.0)

    @property
    def _reserve(self) -> float:
        return min(self._rate.reserve, self._burst - 1)

    def _refill(self) -> None:
        now = self._clock()
        if now > self._at:
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._per_second)
            self._at = now

    def idle(self, now: float, after: float) -> bool:
        """Whether unused for `after` seconds, with nothing waiting and no 429 pending: a fresh budget is the same."""
        quiet = now - self._used >= after and now >= self._blocked_until
        return quiet and not self._finals_waiting and not self._line.locked()

    def try_take(self) -> float:
        """Take a spare token for a progress call: 0.0 when taken, else the seconds until one may be spare."""
        self._used = self._clock()
        self._refill()
        blocked = self._blocked_until - self._clock()
        if blocked > 0:
            return blocked
        need = 1.0 + self._reserve
        if self._finals_waiting or self._tokens < need:
            return max((need - self._tokens) / self._per_second, 1.0 / self._per_second)
        self._tokens -= 1.0
        return 0.0

    async def take(self) -> None:
        """Wait for a token for a final delivery (in arrival order among finals); reserved tokens count here."""
        self._finals_waiting += 1
        self._used = self._clock()
        try:
            async with self._line:
                while True:
                    self._refill()
                    wait = max(self._blocked_until - self._clock(), 0.0)
                    if not wait and self._tokens >= 1.0:
                        self._tokens -= 1.0
                        return
                    await self._sleep(wait or (1.0 - self._tokens) / self._per_second)
        finally:
            self._finals_waiting -= 1

    def penalise(self, retry_after: float) -> None:
        """Slack answered 429: nothing goes out before Retry-After, and the bucket starts empty after it."""
        self._used = self._clock()
        self._blocked_until = max(self._blocked_until, self._clock() + retry_after)
        self._tokens = 0.0
        self._at = self._blocked_until


class Pacer:
    """The budgets of every workspace's rate-limited methods (a method without a rate only honours 429s).

    `share` is this process's part of each budget (one over the processes alive): Slack's limits are per app and
    workspace, so three processes that each spent a whole budget would meet 429s.
    """

    def __init__(
        self,
        rates: dict[str, Rate] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        share: Callable[[], float] = lambda: 1.0,
    ) -> None:
        self._rates = RATES if rates is None else rates
        self._clock = clock
        self._sleep = sleep
        self._share = share
        self._budgets: dict[tuple[str, str, str], Budget] = {}
        self._swept = clock()

    def budget(self, workspace: str, method: str, channel: str = "") -> Budget:
        """The budget of `method` in `workspace` (in `channel` for a per-channel method)."""
        key = (workspace, channel if method in PER_CHANNEL else "", method)
        now = self._clock()
        if now - self._swept >= _SWEEP_EVERY:
            self._swept = now
            self._budgets = {k: kept for k, kept in self._budgets.items() if not kept.idle(now, _IDLE_AFTER)}
        budget = self._budgets.get(key)
        if budget is None:
            # An unlisted method has no known rate: a generous bucket that only a 429 empties.
            rate = self._rates.get(method, Rate(per_minute=6000, burst=100, reserve=0))
            budget = self._budgets[key] = Budget(rate, clock=self._clock, sleep=self._sleep, share=self._share)
        return budget

    @property
    def held(self) -> int:
        """Budgets kept (for tests and /metrics)."""
        return len(self._budgets)
