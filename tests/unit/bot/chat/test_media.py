"""The media step: a question's images and voice become its text, and what cannot be understood gets one line."""

from __future__ import annotations

import asyncio

import pytest

from bot.chat.media import MediaLimits, MediaReader, Understood, Unreadable, image_type, media_kind, question_media
from bot.errors import UserFacingError
from bot.types import Attachment, Command, ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from rag.errors import ModelTimeout, UnsupportedType

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
OGG = b"OggS" + b"\x00" * 64


class Ocr:
    """Reads a fixed text, counting calls; `gate` holds a read until it is set."""

    def __init__(self, text: str = "ERROR 42: disk full", gate: asyncio.Event | None = None) -> None:
        self.text, self.gate, self.calls = text, gate, 0

    async def read_text(self, data: bytes) -> str:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.text


class Vision:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def describe(self, data: bytes, mime_type: str, question: str) -> str:
        self.seen.append((mime_type, question))
        return "A dialog saying ERROR 42."


class Speech:
    def __init__(self, text: str = "how do I reset my password", fail: Exception | None = None) -> None:
        self.text, self.fail = text, fail
        self.heard: list[bytes] = []

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        if self.fail is not None:
            raise self.fail
        self.heard.append(data)
        return self.text


def _file(
    data: bytes, name: str, mime: str, *, size: int | None = None, seconds: float | None = None
) -> tuple[Attachment, list[int]]:
    """An attachment and the list its downloads are counted in."""
    downloads: list[int] = []

    async def read() -> bytes:
        downloads.append(1)
        return data

    return Attachment(name, len(data) if size is None else size, mime, read, seconds), downloads


def _message(text: str, *files: Attachment, command: Command | None = None) -> IncomingMessage:
    return IncomingMessage(ConversationKey("test", "", "c"), "m1", UserRef("u"), text, files, command=command)


def _said(result: Understood | Unreadable) -> str:
    assert isinstance(result, Unreadable), result
    return result.say("en")


async def test_a_photo_with_a_caption_becomes_the_caption_and_the_text_read_from_it() -> None:
    photo, _ = _file(PNG, "shot.png", "image/png")
    result = await MediaReader(ocr=Ocr()).read(_message("what does this mean?", photo))
    assert isinstance(result, Understood)
    assert result.text == "what does this mean?\n\nERROR 42: disk full"
    assert result.shown("en") == messages.media_read("ERROR 42: disk full", "en")


async def test_with_a_vision_model_the_image_is_described_instead_of_read() -> None:
    ocr, vision = Ocr(), Vision()
    photo, _ = _file(JPEG, "photo.png", "image/png")  # the name lies: the bytes say JPEG
    result = await MediaReader(ocr=ocr, vision=vision).read(_message("why?", photo))
    assert isinstance(result, Understood)
    assert result.text == "why?\n\nA dialog saying ERROR 42."
    assert vision.seen == [("image/jpeg", "why?")]
    assert ocr.calls == 0
    assert result.shown("zh") == messages.media_seen("A dialog saying ERROR 42.", "zh")


async def test_a_voice_message_becomes_its_transcript_shown_back_as_heard() -> None:
    voice, _ = _file(OGG, "voice.ogg", "audio/ogg", seconds=3)
    result = await MediaReader(transcriber=Speech()).read(_message("", voice))
    assert isinstance(result, Understood)
    assert result.text == "how do I reset my password"
    assert result.shown("en") == "🎙 Heard: “how do I reset my password”"


async def test_without_a_transcription_model_a_voice_message_gets_the_line_naming_the_setting() -> None:
    voice, downloads = _file(OGG, "voice.ogg", "audio/ogg", seconds=3)
    said = _said(await MediaReader(ocr=Ocr()).read(_message("", voice)))
    assert "TRANSCRIPTION_MODEL" in said
    assert downloads == []


async def test_without_ocr_or_a_vision_model_an_image_gets_the_line_naming_the_setting() -> None:
    photo, downloads = _file(PNG, "a.png", "image/png")
    assert "VISION_MODEL" in _said(await MediaReader(transcriber=Speech()).read(_message("hi", photo)))
    assert downloads == []


async def test_an_hour_long_voice_message_is_refused_by_its_length_before_it_is_downloaded() -> None:
    voice, downloads = _file(OGG, "voice.ogg", "audio/ogg", seconds=3600)
    speech = Speech()
    said = _said(await MediaReader(MediaLimits(audio_seconds=600), transcriber=speech).read(_message("", voice)))
    assert said == messages.audio_too_long(3600, 600, "en")
    assert "1:00:00" in said
    assert "10:00" in said
    assert downloads == []
    assert speech.heard == []


@pytest.mark.parametrize(
    ("data", "seconds", "transcript"),
    [(b"", None, "ignored"), (OGG, 0, "ignored"), (OGG, 2, ""), (OGG, 2, "   ")],
    ids=["empty-file", "zero-seconds", "silence", "blank-transcript"],
)
async def test_an_empty_or_silent_voice_message_is_told_nothing_was_heard(
    data: bytes, seconds: float | None, transcript: str
) -> None:
    voice, _ = _file(data, "voice.ogg", "audio/ogg", seconds=seconds)
    said = _said(await MediaReader(transcriber=Speech(transcript)).read(_message("", voice)))
    assert said == messages.heard_nothing("en")


@pytest.mark.parametrize(
    ("announced", "data"),
    [(30_000_000, PNG), (0, PNG + b"\x00" * 20_000)],
    ids=["announced-size", "size-found-on-download"],
)
async def test_a_huge_image_is_refused_with_its_limit(announced: int, data: bytes) -> None:
    photo, downloads = _file(data, "huge.png", "image/png", size=announced)
    ocr = Ocr()
    said = _said(await MediaReader(MediaLimits(image_bytes=10_000), ocr=ocr).read(_message("x", photo)))
    assert "huge.png" in said
    assert "0.01 MB" in said
    assert ocr.calls == 0
    assert downloads == ([] if announced else [1])


async def test_an_image_that_is_not_an_image_is_refused_by_its_content() -> None:
    fake, _ = _file(b"%PDF-1.7 not a picture", "screenshot.png", "image/png")
    ocr = Ocr()
    said = _said(await MediaReader(ocr=ocr).read(_message("x", fake)))
    assert said == messages.not_an_image("screenshot.png", "en")
    assert ocr.calls == 0


async def test_an_image_with_no_text_is_told_so() -> None:
    photo, _ = _file(PNG, "blank.png", "image/png")
    assert _said(await MediaReader(ocr=Ocr("  \n")).read(_message("", photo))) == messages.no_text_in_image("en")


async def test_a_reader_failure_is_one_line_naming_the_file() -> None:
    voice, _ = _file(OGG, "voice.ogg", "audio/ogg", seconds=2)
    reader = MediaReader(transcriber=Speech(fail=ModelTimeout("slow")))
    assert _said(await reader.read(_message("", voice))) == messages.media_unreadable("voice.ogg", "en")


async def test_an_ocr_refusal_keeps_its_reason_for_the_wording() -> None:
    class Refusing:
        async def read_text(self, data: bytes) -> str:
            raise UnsupportedType("not an image", reason="not_image")

    photo, _ = _file(PNG, "a.png", "image/png")
    said = _said(await MediaReader(ocr=Refusing()).read(_message("", photo)))
    assert said == messages.media_unreadable("a.png", "en", "not_image", {})


async def test_a_download_the_platform_refuses_says_the_platforms_reason() -> None:
    async def read() -> bytes:
        raise UserFacingError("Slack sent its sign-in page", in_language=lambda lang: f"sign-in ({lang})")

    photo = Attachment("a.png", 10, "image/png", read)
    assert _said(await MediaReader(ocr=Ocr()).read(_message("", photo))) == "sign-in (en)"


async def test_reading_is_bounded_in_time() -> None:
    photo, _ = _file(PNG, "a.png", "image/png")
    reader = MediaReader(MediaLimits(seconds=0.05), ocr=Ocr(gate=asyncio.Event()))
    assert _said(await reader.read(_message("", photo))) == messages.media_too_slow("en")


async def test_more_files_than_the_limit_are_refused_unread() -> None:
    files = [_file(PNG, f"{n}.png", "image/png") for n in range(3)]
    ocr = Ocr()
    said = _said(await MediaReader(MediaLimits(files=2), ocr=ocr).read(_message("", *(f for f, _ in files))))
    assert said == messages.media_too_many(2, "en")
    assert ocr.calls == 0


def test_only_a_questions_images_and_audio_are_media_a_commands_files_are_for_ingestion() -> None:
    photo, _ = _file(PNG, "a.png", "image/png")
    pdf, _ = _file(b"%PDF", "a.pdf", "application/pdf")
    clip, _ = _file(OGG, "clip.webm", "audio/webm;codecs=opus")
    assert question_media(_message("q", photo, pdf, clip)) == (photo, clip)
    assert question_media(_message("/ingest", photo, command=Command("ingest"))) == ()
    assert media_kind(Attachment("x.m4a", 1)) == "audio"
    assert media_kind(Attachment("x.txt", 1)) is None


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"II*\x00rest", "image/tiff"),
        (b"hello", None),
        (b"", None),
    ],
)
def test_image_type_is_judged_by_the_first_bytes(data: bytes, kind: str | None) -> None:
    assert image_type(data) == kind
