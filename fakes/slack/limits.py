"""Slack's rate limits: per-workspace windows for each method's tier, and chat.postMessage's per-channel bucket."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fakes.limits import SlidingWindow, TokenBucket


@dataclass(frozen=True, slots=True)
class Limit:
    """At most `count` calls of one method in any `per` seconds, per workspace (a sliding window)."""

    count: int
    per: float = 60.0


# Slack's rate-limit tiers: chat.update is Tier 3 (50+/min), chat.appendStream Tier 4 (100+/min), per workspace.
DEFAULT_LIMITS: Mapping[str, Limit] = {"chat.update": Limit(50), "chat.appendStream": Limit(100)}


class RateLimits:
    """The windows and buckets of every workspace, method and channel; admit() counts a call or names the limit hit."""

    def __init__(self, limits: Mapping[str, int | Limit | None] | None, *, burst: int, rate: float) -> None:
        merged: dict[str, int | Limit | None] = {**DEFAULT_LIMITS, **(limits or {})}
        self._limits = {
            name: limit if isinstance(limit, Limit) else Limit(limit)
            for name, limit in merged.items()
            if limit is not None
        }
        self._burst = burst
        self._rate = rate
        self._windows: dict[tuple[str, str], SlidingWindow] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}

    def admit(self, method: str, team_id: str, channel: str, now: float) -> tuple[str, float] | None:
        """None, counting the call, when its method window and channel bucket have room; else (scope, seconds).

        The scope is "workspace" (the method's window) or "channel" (chat.postMessage's bucket), checked in that order.
        """
        limit = self._limits.get(method)
        window: SlidingWindow | None = None
        if limit is not None:
            window = self._windows.setdefault((team_id, method), SlidingWindow(limit.count, limit.per))
            if (wait := window.wait(now)) is not None:
                return "workspace", wait
        if method == "chat.postMessage" and channel:
            bucket = self._buckets.setdefault((team_id, channel), TokenBucket(self._burst, 1 / self._rate))
            if (wait := bucket.wait(now)) is not None:
                return "channel", wait
            bucket.count(now)
        if window is not None:
            window.count(now)
        return None
