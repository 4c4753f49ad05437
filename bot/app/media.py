"""The reader of a question's photos and voice messages, from the settings: OCR, a vision model, a speech model."""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from bot.app.settings import Settings
from bot.chat.media import MediaReader
from rag.ingest.ocr import OcrLimits, read_image_text
from rag.models.media import OpenAITranscriber, OpenAIVision


@dataclass(frozen=True, slots=True)
class TesseractText:
    """OCR for a question's image: Tesseract in a killable, memory-limited child (rag.ingest.ocr)."""

    limits: OcrLimits
    # Tesseract keeps a core busy per image: photos arriving together take turns rather than starve every answer of
    # CPU (the wait counts within the media deadline, so it stays bounded).
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(os.cpu_count() or 1))

    async def read_text(self, data: bytes) -> str:
        """The image's text ("" when it shows none); raises ExtractionError."""
        async with self.slots:
            return await read_image_text(data, self.limits)


def open_media_reader(settings: Settings, stack: AsyncExitStack) -> MediaReader:
    """The models the settings name, each closed with `stack`."""
    vision = transcriber = None
    if (vision_config := settings.vision_model()) is not None:
        vision = OpenAIVision(vision_config)
        stack.push_async_callback(vision.close)
    if (transcription_config := settings.transcription_model()) is not None:
        transcriber = OpenAITranscriber(transcription_config)
        stack.push_async_callback(transcriber.close)
    ocr = TesseractText(settings.ocr_limits())
    return MediaReader(settings.media_limits(), ocr=ocr, vision=vision, transcriber=transcriber)
