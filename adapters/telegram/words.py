"""What the Telegram adapter says itself, in the chat's language (texts: adapters/telegram/locales/<code>.toml)."""

from __future__ import annotations

from bot.words.catalogue import catalogue
from bot.words.messages import megabytes


def text_only(lang: str) -> str:
    """A sticker or video sent to the bot."""
    return catalogue(lang).text("telegram.text_only")


def file_too_big(name: str, limit: int, lang: str) -> str:
    """A document over what the Bot API lets a bot download (the self-hosted server that lifts it: in the log)."""
    return catalogue(lang).text("telegram.file_too_big", name=name, limit=megabytes(limit))


def private_bot(user_id: int, lang: str) -> str:
    """A person the bot is not open to: their id, for the operator to list."""
    return catalogue(lang).text("telegram.private_bot", id=user_id)


def group_not_allowed(chat_id: int, lang: str) -> str:
    """A group the bot was added to but is not open to (it leaves): the group's id, for the operator to list."""
    return catalogue(lang).text("telegram.group_not_allowed", id=chat_id)
