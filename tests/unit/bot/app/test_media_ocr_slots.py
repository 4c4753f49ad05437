"""Photos sent together take turns at Tesseract: at most `slots` images are read at once."""

from __future__ import annotations

import asyncio

import pytest

from bot.app import media
from rag.ingest.ocr import OcrLimits


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
