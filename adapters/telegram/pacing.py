"""Telegram's flood limits kept by the bot itself: about 1 message a second per chat, 20 a minute per group,
30 a second per bot, and after a 429 nothing more to that scope until its retry_after has passed."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

# Bot FAQ (core.telegram.org/bots/faq) and python-telegram-bot's constants.FloodLimit.
PER_BOT_PER_SECOND: Final = 30
PER_CHAT_INTERVAL: Final = 1.0
PER_GROUP_PER_MINUTE: Final = 20
# Seconds between sweeps of the chats with nothing in any window: a chat seen once is not kept for ever.
SWEEP_EVERY: Final = 60.0


@dataclass(slots=True)
class _Window:
    """At most `count` calls in any `seconds`-long window."""

    count: int
    seconds: float
    times: deque[float] = field(default_factory=deque)

    def wait(self, now: float, share: float = 1.0) -> float:
        """Seconds until one more call fits, in this process's `share` of the window's count (at least one)."""
        count = max(int(self.count * share), 1)
        while self.times and self.times[0] <= now - self.seconds:
            self.times.popleft()
        return 0.0 if len(self.times) < count else self.times[-count] + self.seconds - now

    def take(self, now: float) -> None:
        self.times.append(now)

    def empty(self, now: float) -> bool:
        """Whether no call counts any more: a fresh window is the same."""
        return not self.times or self.times[-1] <= now - self.seconds


class Pacer:
    """One per bot: every message call waits for its chat's and the bot's budget, and for any 429 penalty.

    `share` is this process's part of the bot's budget (one over the processes alive): every process of one bot
    spends the same 30 a second. A chat's own limits are not divided: one conversation's answers are written by one
    process at a time.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        per_bot_per_second: int = PER_BOT_PER_SECOND,
        share: Callable[[], float] = lambda: 1.0,
    ) -> None:
        self._share = share
        self._clock = clock
        self._sleep = sleep
        self._bot = _Window(per_bot_per_second, 1.0)
        self._chats: dict[int, list[_Window]] = {}
        self._blocked: dict[int | None, float] = {}  # chat id, or None for the whole bot
        self._lock = asyncio.Lock()
        self._swept = clock()

    def _windows(self, chat_id: int) -> list[_Window]:
        windows = self._chats.get(chat_id)
        if windows is None:
            windows = [_Window(1, PER_CHAT_INTERVAL)]
            if chat_id < 0:  # groups and channels have negative ids
                windows.append(_Window(PER_GROUP_PER_MINUTE, 60.0))
            self._chats[chat_id] = windows
        return windows

    def _delay(self, chat_id: int, now: float) -> float:
        penalty = max(self._blocked.get(chat_id, 0.0), self._blocked.get(None, 0.0)) - now
        budgets = [self._bot.wait(now, self._share()), *(window.wait(now) for window in self._windows(chat_id))]
        return max(penalty, *budgets)

    async def acquire(self, chat_id: int) -> None:
        """Wait until a message call to `chat_id` fits every limit, and count it."""
        while True:
            async with self._lock:
                now = self._clock()
                if now - self._swept >= SWEEP_EVERY:
                    self._sweep(now)
                delay = self._delay(chat_id, now)
                if delay <= 0:
                    for window in (self._bot, *self._windows(chat_id)):
                        window.take(now)
                    return
            await self._sleep(delay)

    def penalised(self, chat_id: int) -> bool:
        """Whether a 429 penalty is running for this chat or the bot (typing can wait for a better moment)."""
        now = self._clock()
        return max(self._blocked.get(chat_id, 0.0), self._blocked.get(None, 0.0)) > now

    def rate_limited(self, chat_id: int, retry_after: float, *, bot_wide: bool) -> None:
        """Telegram said 429: nothing more to this chat (or from this bot) for `retry_after` seconds."""
        scope = None if bot_wide else chat_id
        until = self._clock() + retry_after
        self._blocked[scope] = max(self._blocked.get(scope, 0.0), until)

    def _sweep(self, now: float) -> None:
        """Forget the chats whose windows count nothing and the penalties that ended: the maps hold what is live."""
        self._swept = now
        self._chats = {chat: windows for chat, windows in self._chats.items() if not all(w.empty(now) for w in windows)}
        self._blocked = {scope: until for scope, until in self._blocked.items() if until > now}

    @property
    def chats_held(self) -> int:
        """Chats with a window kept (for tests and /metrics)."""
        return len(self._chats)
