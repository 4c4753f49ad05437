"""Telegram's flood control: the per-chat, per-group and per-bot limits on posting and changing messages."""

from __future__ import annotations

import math
from collections.abc import Callable

from fakes.limits import SlidingWindow, TokenBucket

# Methods that post or change a visible message, and so count against flood control (Bot FAQ: edits count too).
FLOODED = frozenset(
    {
        "sendmessage",
        "editmessagetext",
        "editmessagecaption",
        "editmessagereplymarkup",
        "sendmessagedraft",
        "senddocument",
        "sendphoto",
        "sendsticker",
        "sendvoice",
        "copymessage",
        "forwardmessage",
    }
)


class FloodControl:
    """Telegram's documented limits: ~1 message/s per chat (short bursts pass), 20/min per group, 30/s overall."""

    def __init__(
        self,
        *,
        chat_interval: float,
        chat_burst: int,
        group_per_minute: int,
        global_per_second: int,
        clock: Callable[[], float],
    ) -> None:
        self._interval = chat_interval
        self._burst = chat_burst
        self._group_limit = group_per_minute
        self._clock = clock
        self._chats: dict[int | str, TokenBucket] = {}
        self._groups: dict[int | str, SlidingWindow] = {}
        self._global = SlidingWindow(global_per_second, 1.0)

    def admit(self, chat_id: int | str | None) -> tuple[str, int] | None:
        """None, counting the message, when every limit has room; else the limit hit and seconds to wait."""
        now = self._clock()
        waits: list[tuple[float, str]] = []
        if (wait := self._global.wait(now)) is not None:
            waits.append((wait, "global"))
        if chat_id is not None:
            bucket = self._chats.setdefault(chat_id, TokenBucket(self._burst, self._interval))
            if (wait := bucket.wait(now)) is not None:
                waits.append((wait, "chat"))
            if _is_group(chat_id):
                window = self._groups.setdefault(chat_id, SlidingWindow(self._group_limit, 60.0))
                if (wait := window.wait(now)) is not None:
                    waits.append((wait, "group"))
        if waits:
            wait, scope = max(waits)
            return scope, max(1, math.ceil(wait))  # Telegram's retry_after is whole seconds
        self._global.count(now)
        if chat_id is not None:
            self._chats[chat_id].count(now)
            if _is_group(chat_id):
                self._groups[chat_id].count(now)
        return None


def _is_group(chat_id: int | str) -> bool:
    return isinstance(chat_id, int) and chat_id < 0
