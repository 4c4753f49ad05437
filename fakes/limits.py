"""The rate limits the fakes enforce: a sliding window and a token bucket, on times from the fake's clock."""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """At most `limit` counted calls in any `seconds`."""

    def __init__(self, limit: int, seconds: float) -> None:
        self._limit = limit
        self._seconds = seconds
        self._times: deque[float] = deque()

    def wait(self, now: float) -> float | None:
        """None when a call fits at `now`; else the seconds until the oldest counted call leaves the window."""
        while self._times and self._times[0] <= now - self._seconds:
            self._times.popleft()
        if len(self._times) >= self._limit:
            return self._times[0] + self._seconds - now
        return None

    def count(self, now: float) -> None:
        """Count a call made at `now`."""
        self._times.append(now)


class TokenBucket:
    """Bursts of up to `burst` calls, then one every `interval` seconds (a token comes back each interval)."""

    def __init__(self, burst: int, interval: float) -> None:
        self._burst = float(burst)
        self._interval = interval
        self._tokens = float(burst)
        self._counted: float | None = None

    def wait(self, now: float) -> float | None:
        """None when a token is free at `now`; else the seconds until one is."""
        tokens = self._level(now)
        return None if tokens >= 1.0 else (1.0 - tokens) * self._interval

    def count(self, now: float) -> None:
        """Spend a token on a call made at `now`."""
        self._tokens, self._counted = self._level(now) - 1.0, now

    def _level(self, now: float) -> float:
        if self._counted is None:
            return self._tokens
        return min(self._burst, self._tokens + (now - self._counted) / self._interval)
