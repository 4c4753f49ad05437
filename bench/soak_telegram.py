"""The soak's Telegram people: private chats and forum topics, their questions delivered to the bot by getUpdates.

What each chat shows is read at the wire: the fake tells the soak of every draft, send and edit it accepted (past
its flood limits) as it accepts it, so a question's first visible text is the first accepted call showing a piece
of its answer, and its end the accepted call showing the whole final.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.concurrency_telegram import expected_plain, plain_text
from bench.conversations import question
from bench.soak_ledger import Asked, Crowd
from fakes.base import Json
from fakes.telegram import FakeTelegramBotAPI

# The calls that put an answer's text in a chat (lower-case, as the fake keys its methods).
_SHOWING = ("sendmessage", "editmessagetext", "sendmessagedraft")
_FIRST_USER = 60_000_000
_FIRST_GROUP = -1_008_000_000_000

# A chat, or a forum topic of one (chat id, thread id).
ChatKey = tuple[int, int | None]
Watcher = Callable[[str, Json, Any], None]


class WatchedTelegram(FakeTelegramBotAPI):
    """FakeTelegramBotAPI that tells `watch` (method, parameters, result) of each showing call it accepted."""

    def __init__(self, watch: Watcher, **kwargs: Any) -> None:
        self._watch = watch  # before super().__init__, which builds the handlers
        super().__init__(**kwargs)

    def _handlers(self) -> dict[str, Callable[[Json], Awaitable[Any]]]:
        handlers = super()._handlers()
        for name in _SHOWING:
            handlers[name] = self._watched(name, handlers[name])
        return handlers

    def _watched(self, name: str, handler: Callable[[Json], Awaitable[Any]]) -> Callable[[Json], Awaitable[Any]]:
        async def watched(params: Json) -> Any:
            result = await handler(params)
            self._watch(name, params, result)
            return result

        return watched


@dataclass(frozen=True, slots=True)
class Place:
    """Where one person asks: their private chat, or their forum topic in a group."""

    chat_id: int
    thread_id: int | None
    user: Json


class TelegramChats:
    """The fake Bot API and, per chat, the question being answered there and the bot's messages answering it."""

    def __init__(self, timeout: float) -> None:
        self.fake = WatchedTelegram(self._shown, limits_on=True)
        self.timeout = timeout
        self._asking: dict[ChatKey, Asked] = {}
        self._answers: dict[tuple[int, int], ChatKey] = {}

    def _shown(self, method: str, params: Json, result: Any) -> None:
        at = time.monotonic()
        if method == "sendmessagedraft":
            key: ChatKey | None = (int(params["chat_id"]), _thread(params.get("message_thread_id")))
            text = plain_text(params)
        else:
            chat, message_id = int(result["chat"]["id"]), int(result["message_id"])
            if method == "sendmessage":
                key = (chat, _thread(result.get("message_thread_id")))
                if key in self._asking:
                    self._answers[(chat, message_id)] = key
            else:
                key = self._answers.get((chat, message_id))
            text = str(result.get("text", "")).strip()
        asked = self._asking.get(key) if key is not None else None
        if asked is not None:
            asked.saw(text, at, complete=method != "sendmessagedraft")

    async def ask(self, asked: Asked, place: Place) -> None:
        """Deliver the question as a message in its place and wait for its final (or the timeout)."""
        key = (place.chat_id, place.thread_id)
        text = question(asked.number)
        if place.thread_id is None:
            update = self.fake.private_message(text, user=place.user)
        else:
            update = self.fake.topic_message(text, thread_id=place.thread_id, chat_id=place.chat_id, user=place.user)
        self._asking[key] = asked
        asked.sent = time.monotonic()
        self.fake.queue_update(update)
        try:
            async with asyncio.timeout(self.timeout):
                await asked.ended.wait()
        except TimeoutError:
            asked.fail(f"no final within {self.timeout:g} s")
        finally:
            del self._asking[key]
            for message, owner in list(self._answers.items()):
                if owner == key:
                    del self._answers[message]


def _thread(value: Any) -> int | None:
    return int(value) if value is not None else None


class TelegramPeople(Crowd[Place]):
    """People asking in one kind of place: private chats, or forum topics spread over groups."""

    def __init__(self, chats: TelegramChats, where: str, places: list[Place], rng: random.Random) -> None:
        super().__init__(places, rng)
        self.where = where
        self._chats = chats

    def expected(self, number: int) -> str:
        """The final as a person reads it: the answer and its source, rendered as Telegram parses it."""
        return expected_plain(number)

    async def ask_as(self, asked: Asked, person: Place) -> None:
        """Ask in the person's chat or topic."""
        await self._chats.ask(asked, person)


def private_places(chats: TelegramChats, count: int) -> list[Place]:
    """`count` people, each in their private chat with the bot."""
    users = [chats.fake.user(_FIRST_USER + index, f"Person {index}", None) for index in range(count)]
    return [Place(int(user["id"]), None, user) for user in users]


def topic_places(chats: TelegramChats, groups: int, topics: int) -> list[Place]:
    """`topics` forum topics in each of `groups` supergroups, each topic one person's (their conversation)."""
    places = []
    for group in range(groups):
        for topic in range(topics):
            number = group * topics + topic
            user = chats.fake.user(_FIRST_USER + 500_000 + number, f"Member {number}", None)
            places.append(Place(_FIRST_GROUP - group, 100 + topic, user))
    return places
