"""FakeTelegramBotAPI, a local Telegram Bot API for python-telegram-bot, and the records its tests read."""

from fakes.telegram.files import StoredFile
from fakes.telegram.records import BotMessage, BotRequest, Draft, Throttle, Webhook
from fakes.telegram.server import FakeTelegramBotAPI
from fakes.telegram.state import DEFAULT_GROUP, DEFAULT_TOKEN, DEFAULT_USER
from fakes.telegram.text import HtmlParseError, parse_html, utf16_len

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
