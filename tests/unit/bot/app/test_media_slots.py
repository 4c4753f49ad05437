"""The media step's shares: photos take turns at Tesseract, and the vision and speech models' calls hold the model
slots that answers hold."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from bot.app import media
from bot.chat.model_limit import LimitedChatModel
from rag.ingest.ocr import OcrLimits
from rag.types import ChatMessage


async def test_images_sent_together_are_read_at_most_slots_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    reading = 0
    most = 0
    release = asyncio.Event()
    two_reading = asyncio.Event()

    async def read(data: bytes, limits: OcrLimits) -> str:
        nonlocal reading, most
        reading += 1
        most = max(most, reading)
        if reading == 2:
            two_reading.set()
        await release.wait()
        reading -= 1
        return data.decode()

    monkeypatch.setattr(media, "read_image_text", read)
    ocr = media.TesseractText(OcrLimits(), slots=asyncio.Semaphore(2))
    reads = [asyncio.create_task(ocr.read_text(f"image {n}".encode())) for n in range(5)]
    await asyncio.wait_for(two_reading.wait(), 5)
    release.set()
    assert await asyncio.wait_for(asyncio.gather(*reads), 5) == [f"image {n}" for n in range(5)]
    assert most == 2


class _Streaming:
    """A chat model whose one stream stays open until `done` is set."""

    model_id = "chat"

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.done = asyncio.Event()

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return ""

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        self.open.set()
        await self.done.wait()
        yield "answer"


class _Heard:
    def __init__(self) -> None:
        self.calls = 0

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        self.calls += 1
        return "where is lunch"


async def test_a_voice_message_waits_for_a_model_slot_an_answer_holds_and_then_is_heard() -> None:
    slots = asyncio.Semaphore(1)
    chat, heard = _Streaming(), _Heard()
    answer = LimitedChatModel(chat, slots)

    async def answering() -> list[str]:
        return [delta async for delta in answer.stream([])]

    streaming = asyncio.create_task(answering())
    await asyncio.wait_for(chat.open.wait(), 5)
    transcribing = asyncio.create_task(media.LimitedTranscriber(heard, slots).transcribe(b"ogg", "v.ogg", "audio/ogg"))
    await asyncio.sleep(0)
    assert heard.calls == 0  # the answer holds the only model slot
    chat.done.set()
    assert await asyncio.wait_for(streaming, 5) == ["answer"]
    assert await asyncio.wait_for(transcribing, 5) == "where is lunch"
    assert heard.calls == 1
