"""Telegram updates as platform-neutral messages: who, where (chat, forum topic), whether the bot was addressed."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from telegram import Document, Message, MessageEntity

from adapters.telegram import words as telegram_words
from bot.commands.registry import parse_command
from bot.types import Attachment, Command, ConversationKey, IncomingMessage, MessageRef, UserRef

log = logging.getLogger(__name__)

PLATFORM: Final = "telegram"
_FILE_COMMANDS: Final = frozenset({"ingest", "faq"})

FileReader = Callable[[str], Awaitable[bytes]]
"""Downloads a file by its Telegram file_id."""


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """What the bot needs to know about itself to see that it was addressed."""

    id: int
    username: str


@dataclass(frozen=True, slots=True)
class Notice:
    """No question, but the person should be told something (a sticker sent privately, a file too big).

    `say` gives the text in the chat's language, which the adapter asks the manager for.
    """

    say: Callable[[str], str]


def conversation_key(message: Message) -> ConversationKey:
    """A chat, or a forum topic within it, as a conversation."""
    thread = str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else ""
    return ConversationKey(PLATFORM, "", str(message.chat.id), thread)


def _mentions_bot(text: str, entities: tuple[MessageEntity, ...], me: BotIdentity) -> list[tuple[int, int]]:
    spans = []
    encoded = text.encode("utf-16-le")
    for entity in entities:
        # Entity offsets count UTF-16 code units.
        piece = encoded[entity.offset * 2 : (entity.offset + entity.length) * 2].decode("utf-16-le")
        if (entity.type == MessageEntity.MENTION and piece.lower() == f"@{me.username.lower()}") or (
            entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == me.id
        ):
            spans.append((entity.offset, entity.length))
    return spans


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    encoded = text.encode("utf-16-le")
    for offset, length in sorted(spans, reverse=True):
        encoded = encoded[: offset * 2] + encoded[(offset + length) * 2 :]
    return " ".join(encoded.decode("utf-16-le").split())


def _attachment(document: Document, read: FileReader) -> Attachment:
    async def fetch() -> bytes:
        return await read(document.file_id)

    return Attachment(
        name=document.file_name or f"{document.file_unique_id}.bin",
        size=document.file_size or 0,
        mime_type=document.mime_type or "",
        read=fetch,
    )


def _media(message: Message, read: FileReader) -> tuple[Attachment, ...]:
    """A photo, voice note or audio file sent as (part of) a question."""
    found = []
    if message.photo:
        # Telegram sends each photo in several sizes, smallest first: the largest reads best.
        photo = message.photo[-1]
        found.append(_file(photo.file_id, f"{photo.file_unique_id}.jpg", photo.file_size, "image/jpeg", read))
    if message.voice is not None:
        voice = message.voice
        name, mime = f"{voice.file_unique_id}.ogg", voice.mime_type or "audio/ogg"
        found.append(_file(voice.file_id, name, voice.file_size, mime, read, seconds=_seconds(voice.duration)))
    if message.audio is not None:
        audio = message.audio
        name, mime = audio.file_name or f"{audio.file_unique_id}.mp3", audio.mime_type or "audio/mpeg"
        found.append(_file(audio.file_id, name, audio.file_size, mime, read, seconds=_seconds(audio.duration)))
    return tuple(found)


def _seconds(duration: object) -> float:
    # PTB gives durations as int seconds, or timedelta with PTB_TIMEDELTA set.
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)  # type: ignore[arg-type]


def _file(
    file_id: str, name: str, size: int | None, mime: str, read: FileReader, *, seconds: float | None = None
) -> Attachment:
    async def fetch() -> bytes:
        return await read(file_id)

    return Attachment(name=name, size=size or 0, mime_type=mime, read=fetch, seconds=seconds)


def translate(
    message: Message, me: BotIdentity, read: FileReader, download_limit: int
) -> IncomingMessage | Notice | None:
    """The message as ragbot sees it; a Notice for what only deserves a short reply; None for what to ignore."""
    user = message.from_user
    if user is None or user.is_bot or message.sender_chat is not None:
        return None  # channels, anonymous admins and other bots: nobody to answer
    private = message.chat.type == "private"
    text = message.text or message.caption or ""
    entities = tuple(message.entities or message.caption_entities or ())
    mentions = _mentions_bot(text, entities, me)
    replied = message.reply_to_message
    reply_to_bot = replied is not None and replied.from_user is not None and replied.from_user.id == me.id
    cleaned = _without(text, mentions) if mentions else text.strip()
    command = parse_command(cleaned, me.username)
    if text.lstrip().startswith("/") and command is None:
        return None  # `/cmd@otherbot`: another bot's command
    if command is not None and command.name == "start":
        # A deep link's payload (`/start ref42`) is no text the person wrote: it tells nothing of their language.
        command = Command("start", command.args)
    documents = [doc for doc in (message.document, replied.document if replied else None) if doc is not None]
    if message.document is not None and command is None and private:
        command = Command("ingest", implied=True)  # a file sent to the bot privately is a file to learn
    # Unaddressed group messages go on too: the chat's answer mode (`/mode all`) decides in the manager.
    addressed = private or bool(mentions) or reply_to_bot or command is not None
    if command is not None and command.name in _FILE_COMMANDS and documents:
        too_big = [doc for doc in documents if (doc.file_size or 0) > download_limit]
        if too_big:
            log.info(
                "telegram=file_refused reason=over_download_limit size=%d limit=%d: a self-hosted Bot API server "
                "(TELEGRAM_API_BASE_URL, TELEGRAM_FILE_BASE_URL, TELEGRAM_DOWNLOAD_LIMIT_MB) lifts it",
                too_big[0].file_size or 0,
                download_limit,
            )
            name = too_big[0].file_name or too_big[0].file_unique_id
            return Notice(lambda lang: telegram_words.file_too_big(name, download_limit, lang))
    media = _media(message, read) if command is None else ()
    if media and not addressed:
        return None  # a photo or voice note in a group, not to the bot: not read (mode `all` answers text only)
    if oversized := [item for item in media if item.size > download_limit]:
        over = oversized[0].name
        log.info("telegram=media_refused reason=over_download_limit size=%d", oversized[0].size)
        return Notice(lambda lang: telegram_words.file_too_big(over, download_limit, lang))
    if not cleaned and command is None and not media:
        # A sticker or video sent to the bot gets a notice; service messages (joins, pins) and media nobody asked
        # the bot about get nothing.
        return Notice(telegram_words.text_only) if addressed and message.effective_attachment is not None else None
    attachments = tuple(_attachment(doc, read) for doc in documents) if command is not None else media
    return IncomingMessage(
        key=conversation_key(message),
        message_id=str(message.message_id),
        user=UserRef(str(user.id), user.full_name, language=user.language_code or ""),
        text=cleaned,
        attachments=attachments,
        reply_to=MessageRef(str(replied.message_id)) if replied else None,
        command=command,
        addressed=addressed,
        private=private,
        raw=message,
    )
