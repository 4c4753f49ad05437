"""Throttles of the web chat: admin-token guesses per client address and per session, locked out after a few."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

# Five wrong tokens in a quarter of an hour lock that address (and that session) out for the next quarter: a
# person who mistyped twice is not hindered; a guesser gets 20 tries an hour instead of thousands a second.
MAX_FAILURES: Final = 5
WINDOW: Final = 15 * 60.0
LOCKOUT: Final = 15 * 60.0
_MAX_KEYS: Final = 100_000  # past this many clients remembered, the quiet ones are forgotten


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """At most `max_failures` wrong tokens per `window` seconds from one key, then `lockout` seconds refused."""

    max_failures: int = MAX_FAILURES
    window: float = WINDOW
    lockout: float = LOCKOUT


class LoginThrottle:
    """Wrong-token counts per key (a client address, a session); time is injected so it is tested without waiting."""

    def __init__(self, policy: LoginPolicy = LoginPolicy(), clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._locked: dict[str, float] = {}

    def locked_for(self, *keys: str) -> float:
        """Seconds until every one of `keys` may try again (0 when none is locked out)."""
        now = self._clock()
        return max((until - now for key in keys if (until := self._locked.get(key, 0.0)) > now), default=0.0)

    def failed(self, *keys: str) -> None:
        """Count one wrong token against each key; one at its limit is locked out."""
        now = self._clock()
        for key in keys:
            failures = self._failures.setdefault(key, deque())
            while failures and failures[0] <= now - self._policy.window:
                failures.popleft()
            failures.append(now)
            if len(failures) >= self._policy.max_failures:
                self._locked[key] = now + self._policy.lockout
                failures.clear()
        if len(self._failures) > _MAX_KEYS:
            self._forget(now)

    def _forget(self, now: float) -> None:
        recent = now - self._policy.window
        self._failures = {key: seen for key, seen in self._failures.items() if seen and seen[-1] > recent}
        self._locked = {key: until for key, until in self._locked.items() if until > now}
