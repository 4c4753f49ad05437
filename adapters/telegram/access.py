"""Who may use the Telegram bot: listed people in their private chats, listed groups by chat id, or everyone."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

# A stranger who keeps writing is told once in this while (seconds), not on every message.
_TELL_EVERY: Final = 600.0
_REMEMBERED: Final = 10_000


@dataclass(frozen=True, slots=True)
class Access:
    """The allow-lists. A private chat is let in when its person is listed (admins are), a group when its chat id is.

    A listed person does not bring a group in: whoever is in it would read the knowledge bases through them.
    """

    users: frozenset[int] = frozenset()
    chats: frozenset[int] = frozenset()
    everyone: bool = False

    def admits(self, chat_id: int, *, private: bool, user_id: int | None) -> bool:
        """Whether the bot answers in this chat (to this person, in a private chat)."""
        if self.everyone or chat_id in self.chats:
            return True
        return private and user_id is not None and user_id in self.users

    @property
    def nobody(self) -> bool:
        """No one at all may use the bot (not even an admin is listed)."""
        return not (self.everyone or self.users or self.chats)


class Refusals:
    """The chats told they may not use the bot, so each is told once a while however much it writes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._told: OrderedDict[int, float] = OrderedDict()

    def first(self, chat_id: int) -> bool:
        """Whether to tell this chat now (and count it told)."""
        now = self._clock()
        told = self._told.get(chat_id)
        if told is not None and now - told < _TELL_EVERY:
            return False
        self._told[chat_id] = now
        self._told.move_to_end(chat_id)
        while len(self._told) > _REMEMBERED:
            self._told.popitem(last=False)
        return True
