"""What FakeTelegramBotAPI records and the tests read: calls, the bot's messages, drafts, 429s, the webhook."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fakes.base import Json


@dataclass(frozen=True, slots=True)
class BotRequest:
    """One call as the fake received it: the Bot API method (or "file" for a download), its parameters, when."""

    method: str
    params: Json
    time: float
    http_method: str
    path: str
    content_type: str


@dataclass(slots=True)
class BotMessage:
    """A message the bot sent, as it stands now; `history` holds every text it has shown, first to last."""

    chat_id: int
    message_id: int
    text: str
    entities: list[Json]
    reply_markup: Json | None
    date: int
    thread_id: int | None = None
    reply_to: int | None = None
    edit_date: int | None = None
    deleted: bool = False
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Draft:
    """One sendMessageDraft call that Telegram accepted."""

    chat_id: int
    draft_id: int
    text: str
    thread_id: int | None
    time: float


@dataclass(frozen=True, slots=True)
class Throttle:
    """One 429 the fake answered: which method and chat, which limit (chat, group, global or scripted), for how long."""

    method: str
    chat_id: int | str | None
    scope: str
    retry_after: int
    time: float


@dataclass(frozen=True, slots=True)
class Webhook:
    """The webhook setWebhook registered."""

    url: str
    secret_token: str | None
    allowed_updates: list[str] | None
    max_connections: int


@dataclass(slots=True)
class Poll:
    """The getUpdates call being held open: set `wake` to answer it, with a `conflict` to answer 409 instead."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    conflict: str | None = None
