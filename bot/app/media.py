"""The reader of a question's photos and voice messages, from the settings: OCR, a vision model, a speech model."""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from bot.app.settings import Settings
from bot.chat.media import ImageDescriber, MediaReader, Transcriber
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


@dataclass(frozen=True, slots=True)
class LimitedVision:
    """A vision model whose calls hold one of the model slots the chat model's calls hold too."""

    model: ImageDescriber
    slots: asyncio.Semaphore

    async def describe(self, data: bytes, mime_type: str, question: str) -> str:
        """The image described, once a model slot is free."""
        async with self.slots:
            return await self.model.describe(data, mime_type, question)


@dataclass(frozen=True, slots=True)
class LimitedTranscriber:
    """A speech model whose calls hold one of the model slots the chat model's calls hold too."""

    model: Transcriber
    slots: asyncio.Semaphore

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        """What was said, once a model slot is free."""
        async with self.slots:
            return await self.model.transcribe(data, name, mime_type)


def open_media_reader(settings: Settings, stack: AsyncExitStack, model_slots: asyncio.Semaphore) -> MediaReader:
    """The models the settings name, each closed with `stack`, their calls counted in `model_slots` (the cap on
    model calls at once that answers share: a provider's rate limit is the same for every call)."""
    vision: LimitedVision | None = None
    transcriber: LimitedTranscriber | None = None
    if (vision_config := settings.vision_model()) is not None:
        described = OpenAIVision(vision_config)
        stack.push_async_callback(described.close)
        vision = LimitedVision(described, model_slots)
    if (transcription_config := settings.transcription_model()) is not None:
        heard = OpenAITranscriber(transcription_config)
        stack.push_async_callback(heard.close)
        transcriber = LimitedTranscriber(heard, model_slots)
    ocr = TesseractText(settings.ocr_limits())
    return MediaReader(settings.media_limits(), ocr=ocr, vision=vision, transcriber=transcriber)
