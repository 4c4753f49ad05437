"""A question's photos, screenshots and voice messages turned into text before the question is stored and answered.

Images are read by OCR, or described by a vision model when one is configured; audio is transcribed by a speech
model. Every step is bounded: sizes and lengths are checked before a download, the whole reading has a deadline,
and what cannot be understood gets one line to the sender (`Unreadable`) instead of an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Final, Literal, Protocol

from bot.errors import UserFacingError
from bot.types import Attachment, IncomingMessage
from bot.words import messages
from rag.errors import ExtractionError, RagError
from rag.ingest.extractors.detect import image_type

log = logging.getLogger(__name__)

MediaKind = Literal["image", "audio"]

_IMAGE_SUFFIXES: Final = frozenset({".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff"})
_AUDIO_SUFFIXES: Final = frozenset({".ogg", ".oga", ".opus", ".mp3", ".m4a", ".wav", ".webm", ".flac", ".mpga"})


class ImageText(Protocol):
    """OCR: the text in one image (rag.ingest.ocr meets it through a small adapter in the composition root)."""

    async def read_text(self, data: bytes) -> str:
        """The image's text ("" when it has none); raises RagError for an image it cannot read."""
        ...


class ImageDescriber(Protocol):
    """A vision model (rag.models.media.OpenAIVision)."""

    async def describe(self, data: bytes, mime_type: str, question: str) -> str:
        """The image's text and what it shows; raises RagError."""
        ...


class Transcriber(Protocol):
    """A speech-to-text model (rag.models.media.OpenAITranscriber)."""

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        """What was said ("" for silence); raises RagError."""
        ...


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """How much of a question's media is read."""

    image_bytes: int = 20_000_000
    # OpenAI's /audio/transcriptions takes files up to 25 MB.
    audio_bytes: int = 25_000_000
    audio_seconds: float = 600.0
    # Seconds reading one message's media may take in all (downloads, OCR, model calls).
    seconds: float = 60.0
    # Files read with one question (a Slack message carries up to 10).
    files: int = 4


@dataclass(frozen=True, slots=True)
class Understood:
    """The media read: the question's text as stored (what was typed, then what was read) and the lines shown back."""

    text: str
    shown: Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Nothing to answer: the one line the sender is told, in a language."""

    say: Callable[[str], str]


class _Refused(Exception):
    """One file cannot be understood; `say` tells the sender why."""

    def __init__(self, say: Callable[[str], str]) -> None:
        super().__init__("media refused")
        self.say = say


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    show: Callable[[str, str], str]


def media_kind(attachment: Attachment) -> MediaKind | None:
    """Whether a file is an image or audio to read as part of a question (by its type, else its name)."""
    mime = attachment.mime_type.split(";")[0].strip().lower()
    suffix = PurePath(attachment.name).suffix.lower()
    if mime.startswith("image/") or (not mime and suffix in _IMAGE_SUFFIXES):
        return "image"
    if mime.startswith("audio/") or (not mime and suffix in _AUDIO_SUFFIXES):
        return "audio"
    return None


def question_media(message: IncomingMessage) -> tuple[Attachment, ...]:
    """The images and audio a question (not a command: those take files to ingest) brought."""
    if message.command is not None:
        return ()
    return tuple(attachment for attachment in message.attachments if media_kind(attachment) is not None)


@dataclass(frozen=True, slots=True)
class MediaReader:
    """Reads a question's media with whichever engines are configured (None: that kind cannot be read here)."""

    limits: MediaLimits = field(default_factory=MediaLimits)
    ocr: ImageText | None = None
    vision: ImageDescriber | None = None
    transcriber: Transcriber | None = None

    async def read(self, message: IncomingMessage) -> Understood | Unreadable:
        """The question with its media as text, or the line saying why it cannot be understood."""
        media = question_media(message)
        if len(media) > self.limits.files:
            return Unreadable(lambda lang: messages.media_too_many(self.limits.files, lang))
        try:
            async with asyncio.timeout(self.limits.seconds):
                pieces = [await self._one(attachment, message.text) for attachment in media]
        except _Refused as refused:
            return Unreadable(refused.say)
        except TimeoutError:
            log.warning("media=timed_out seconds=%g files=%d", self.limits.seconds, len(media))
            return Unreadable(messages.media_too_slow)
        text = "\n\n".join([message.text.strip(), *(piece.text for piece in pieces)]).strip()
        return Understood(text, lambda lang: "\n".join(piece.show(piece.text, lang) for piece in pieces))

    async def _one(self, attachment: Attachment, question: str) -> _Piece:
        if media_kind(attachment) == "audio":
            return await self._audio(attachment)
        return await self._image(attachment, question)

    async def _image(self, attachment: Attachment, question: str) -> _Piece:
        if self.vision is None and self.ocr is None:
            raise _Refused(messages.no_image_reader)
        data = await self._download(attachment, self.limits.image_bytes)
        mime = image_type(data)
        if mime is None:
            log.info("media=refused reason=not_an_image name_type=%s bytes=%d", attachment.mime_type, len(data))
            raise _Refused(lambda lang: messages.not_an_image(attachment.name, lang))
        try:
            if self.vision is not None:
                return _Piece(await self.vision.describe(data, mime, question), messages.media_seen)
            assert self.ocr is not None
            text = await self.ocr.read_text(data)
        except RagError as exc:
            raise _unreadable(attachment, exc) from exc
        if not text.strip():
            raise _Refused(messages.no_text_in_image)
        return _Piece(text.strip(), messages.media_read)

    async def _audio(self, attachment: Attachment) -> _Piece:
        if self.transcriber is None:
            raise _Refused(messages.no_transcription)
        limit = self.limits.audio_seconds
        if attachment.seconds is not None and attachment.seconds > limit:
            log.info("media=refused reason=too_long seconds=%g limit=%g", attachment.seconds, limit)
            raise _Refused(lambda lang: messages.audio_too_long(attachment.seconds or 0.0, limit, lang))
        if attachment.seconds == 0:
            raise _Refused(messages.heard_nothing)
        data = await self._download(attachment, self.limits.audio_bytes)
        if not data:
            raise _Refused(messages.heard_nothing)
        try:
            text = await self.transcriber.transcribe(data, attachment.name, attachment.mime_type or "audio/ogg")
        except RagError as exc:
            raise _unreadable(attachment, exc) from exc
        if not text.strip():
            raise _Refused(messages.heard_nothing)
        return _Piece(text.strip(), messages.media_heard)

    @staticmethod
    async def _download(attachment: Attachment, limit: int) -> bytes:
        """The file's bytes, its announced size checked first and its real size after."""
        name = attachment.name
        if attachment.size > limit:
            log.info("media=refused reason=too_large size=%d limit=%d", attachment.size, limit)
            raise _Refused(lambda lang: messages.media_too_large(name, attachment.size, limit, lang))
        if attachment.read is None:
            raise _Refused(lambda lang: messages.media_unreadable(name, lang))
        try:
            data = await attachment.read()
        except UserFacingError as exc:
            raise _Refused(exc.message_in) from exc
        if len(data) > limit:
            log.info("media=refused reason=too_large size=%d limit=%d", len(data), limit)
            raise _Refused(lambda lang: messages.media_too_large(name, len(data), limit, lang))
        return data


def _unreadable(attachment: Attachment, exc: RagError) -> _Refused:
    log.warning("media=unreadable kind=%s reason=%s", media_kind(attachment), exc)
    if isinstance(exc, ExtractionError):
        reason, details = exc.reason, dict(exc.details)
        return _Refused(lambda lang: messages.media_unreadable(attachment.name, lang, reason, details))
    return _Refused(lambda lang: messages.media_unreadable(attachment.name, lang))
