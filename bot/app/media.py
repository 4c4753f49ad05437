"""The reader of a question's photos and voice messages, from the settings: OCR, a vision model, a speech model."""

from __future__ import annotations

from contextlib import AsyncExitStack

from bot.app.settings import Settings
from bot.chat.media import MediaReader
from rag.models.media import OpenAITranscriber, OpenAIVision


def open_media_reader(settings: Settings, stack: AsyncExitStack) -> MediaReader:
    """The models the settings name, each closed with `stack`."""
    vision = transcriber = None
    if (vision_config := settings.vision_model()) is not None:
        vision = OpenAIVision(vision_config)
        stack.push_async_callback(vision.close)
    if (transcription_config := settings.transcription_model()) is not None:
        transcriber = OpenAITranscriber(transcription_config)
        stack.push_async_callback(transcriber.close)
    return MediaReader(settings.media_limits(), vision=vision, transcriber=transcriber)
