"""The vision and transcription models through the real openai client against FakeOpenAI: the request shapes
(image_url data: URL, multipart upload), the answers, and the limits (25 MB, 429 with retry-after, timeouts)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.chat.media import MediaReader, Understood
from bot.types import Attachment, ConversationKey, IncomingMessage, UserRef
from fakes.openai_api import MAX_AUDIO_BYTES, FakeOpenAI, image_urls
from rag.config import ChatModelConfig
from rag.errors import ModelError, ModelTimeout
from rag.models.media import OpenAITranscriber, OpenAIVision

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
OGG = b"OggS" + bytes(64)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as running:
        yield running


def _config(fake: FakeOpenAI, model: str, *, timeout: float = 60.0, max_retries: int = 2) -> ChatModelConfig:
    return ChatModelConfig(model, fake.base_url, "test-key", timeout=timeout, max_retries=max_retries)


async def test_a_transcription_uploads_the_file_and_model_and_returns_the_text(fake: FakeOpenAI) -> None:
    fake.transcript = "  When is lunch served?  "
    speech = OpenAITranscriber(_config(fake, "whisper-1"))
    try:
        assert await speech.transcribe(OGG, "voice.ogg", "audio/ogg") == "When is lunch served?"
    finally:
        await speech.close()
    (sent,) = fake.transcriptions
    assert (sent.model, sent.filename, sent.content_type, sent.data) == ("whisper-1", "voice.ogg", "audio/ogg", OGG)


async def test_a_transcription_over_25_mb_is_refused_with_413(fake: FakeOpenAI) -> None:
    speech = OpenAITranscriber(_config(fake, "whisper-1", max_retries=0))
    try:
        with pytest.raises(ModelError) as refused:
            await speech.transcribe(bytes(MAX_AUDIO_BYTES + 1), "long.ogg", "audio/ogg")
    finally:
        await speech.close()
    assert refused.value.status == 413
    assert fake.transcriptions == []


async def test_a_rate_limited_transcription_is_retried_after_the_wait_the_api_names(fake: FakeOpenAI) -> None:
    fake.fail_next(429, retry_after=0.2)
    speech = OpenAITranscriber(_config(fake, "whisper-1"))
    try:
        assert await speech.transcribe(OGG, "voice.ogg", "audio/ogg") == "Hello from the fake transcriber."
    finally:
        await speech.close()
    assert [r.path for r in fake.requests] == ["/v1/audio/transcriptions"] * 2


async def test_a_transcription_slower_than_the_timeout_raises_model_timeout(fake: FakeOpenAI) -> None:
    fake.delay_next(30)
    speech = OpenAITranscriber(_config(fake, "whisper-1", timeout=0.3, max_retries=0))
    try:
        with pytest.raises(ModelTimeout):
            await speech.transcribe(OGG, "voice.ogg", "audio/ogg")
    finally:
        await speech.close()


async def test_the_vision_model_gets_the_image_inline_with_the_question_and_its_answer_is_the_description(
    fake: FakeOpenAI,
) -> None:
    bodies: list[dict[str, object]] = []
    fake.reply_for = lambda body: bodies.append(body) or "ERROR 42: disk full. A dialog box."
    vision = OpenAIVision(_config(fake, "gpt-4o-mini"))
    try:
        assert await vision.describe(PNG, "image/png", "why?") == "ERROR 42: disk full. A dialog box."
    finally:
        await vision.close()
    (body,) = bodies
    assert body["model"] == "gpt-4o-mini"
    assert image_urls(body) == [f"data:image/png;base64,{base64.b64encode(PNG).decode()}"]


async def test_the_fake_refuses_content_parts_openai_refuses() -> None:
    async with FakeOpenAI() as fake, aiohttp.ClientSession() as http:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
        }
        headers = {"Authorization": "Bearer test-key"}
        async with http.post(f"{fake.base_url}/chat/completions", json=body, headers=headers) as response:
            assert response.status == 400
        async with http.post(f"{fake.base_url}/audio/transcriptions", data={"model": "m"}, headers=headers) as response:
            assert response.status == 400  # not multipart


async def test_with_vision_model_set_a_questions_image_is_described_by_it_not_read_by_ocr(fake: FakeOpenAI) -> None:
    fake.reply = "ERROR 42: disk full."

    async def read() -> bytes:
        return PNG

    vision = OpenAIVision(_config(fake, "gpt-4o-mini"))
    try:
        reader = MediaReader(vision=vision)
        photo = Attachment("shot.png", len(PNG), "image/png", read)
        question = IncomingMessage(ConversationKey("web", "", "s"), "m", UserRef("u"), "why?", (photo,))
        understood = await reader.read(question)
    finally:
        await vision.close()
    assert isinstance(understood, Understood)
    assert understood.text == "why?\n\nERROR 42: disk full."
    assert understood.shown("en") == "🖼 In the image: ERROR 42: disk full."
