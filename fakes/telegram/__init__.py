"""FakeTelegramBotAPI, a local Telegram Bot API for python-telegram-bot, and the records its tests read."""

from fakes.telegram.server import (
    DEFAULT_GROUP,
    DEFAULT_TOKEN,
    DEFAULT_USER,
    BotMessage,
    BotRequest,
    Draft,
    FakeTelegramBotAPI,
    HtmlParseError,
    StoredFile,
    Throttle,
    Webhook,
    parse_html,
    utf16_len,
)

__all__ = [
    "DEFAULT_GROUP",
    "DEFAULT_TOKEN",
    "DEFAULT_USER",
    "BotMessage",
    "BotRequest",
    "Draft",
    "FakeTelegramBotAPI",
    "HtmlParseError",
    "StoredFile",
    "Throttle",
    "Webhook",
    "parse_html",
    "utf16_len",
]
