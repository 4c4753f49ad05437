"""OpenAIChatModel and OpenAIEmbedder driving the real openai client against FakeOpenAI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fakes.openai_api import FakeOpenAI, StreamFaultKind, fake_embedding
from rag.config import ChatModelConfig, EmbedderConfig
from rag.errors import ModelError, ModelTimeout
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import OpenAIEmbedder
from rag.types import ChatMessage

MESSAGES = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Hi?")]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    """A running fake with default settings."""
    async with FakeOpenAI() as running:
        yield running


def _chat_model(
    fake: FakeOpenAI, *, api_key: str = "test-key", timeout: float = 5.0, max_retries: int = 0
) -> OpenAIChatModel:
    return OpenAIChatModel(
        ChatModelConfig(
            model="fake-chat", base_url=fake.base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
    )


@pytest.fixture
async def chat(fake: FakeOpenAI) -> AsyncIterator[OpenAIChatModel]:
    """A chat model pointed at the fake, without retries."""
    model = _chat_model(fake)
    yield model
    await model.close()


def _embedder_config(fake: FakeOpenAI, api_key: str = "test-key") -> EmbedderConfig:
    return EmbedderConfig(
        provider="openai",
        model="m",
        model_dir=None,
        cache_dir=Path("/tmp"),
        batch_size=2,
        base_url=fake.base_url,
        api_key=api_key,
    )


async def _collect(model: OpenAIChatModel) -> list[str]:
    return [delta async for delta in model.stream(MESSAGES)]


async def test_complete_returns_the_reply_and_sends_model_and_messages(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.reply = "Hello there."
    assert await chat.complete(MESSAGES) == "Hello there."
    sent = fake.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "fake-chat"
    assert sent.json["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    assert sent.headers["Authorization"] == "Bearer test-key"


async def test_stream_yields_several_deltas_that_join_to_the_reply(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.reply = "Streaming works one word at a time."
    deltas = await _collect(chat)
    assert len(deltas) > 1
    assert "".join(deltas) == fake.reply
    assert fake.requests[-1].json["stream"] is True


async def test_429_with_retry_after_is_retried_by_the_client_and_succeeds(fake: FakeOpenAI) -> None:
    fake.fail_next(429, retry_after=0.01)
    model = _chat_model(fake, max_retries=2)
    try:
        assert await model.complete(MESSAGES) == fake.reply
    finally:
        await model.close()
    assert len(fake.requests) == 2


async def test_429_without_retries_left_carries_retry_after(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.fail_next(429, retry_after=7)
    with pytest.raises(ModelError) as caught:
        await chat.complete(MESSAGES)
    assert caught.value.status == 429
    assert caught.value.retry_after == 7.0


@pytest.mark.parametrize("status", [400, 404, 500, 503])
async def test_error_status_raises_model_error_carrying_the_status(
    fake: FakeOpenAI, chat: OpenAIChatModel, status: int
) -> None:
    fake.fail_next(status, times=3)
    with pytest.raises(ModelError) as caught:
        await chat.complete(MESSAGES)
    assert caught.value.status == status
    assert len(fake.requests) == 1  # max_retries=0: the client gave up at once


async def test_error_status_before_a_stream_starts_raises_model_error(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.fail_next(500)
    with pytest.raises(ModelError) as caught:
        await _collect(chat)
    assert caught.value.status == 500


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_answer_slower_than_the_timeout_raises_model_timeout(fake: FakeOpenAI, streaming: bool) -> None:
    fake.delay_next(5.0)
    model = _chat_model(fake, timeout=0.3)
    try:
        with pytest.raises(ModelTimeout):
            await (_collect(model) if streaming else model.complete(MESSAGES))
    finally:
        await model.close()


async def test_malformed_stream_raises_model_error(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.malformed_stream_next()
    with pytest.raises(ModelError, match="malformed"):
        await _collect(chat)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("garbage", "malformed"), ("error", "had an error"), ("cut", "no finish_reason"), ("reset", "Connection error")],
)
async def test_a_stream_broken_mid_answer_raises_model_error_after_the_words_before_it(
    fake: FakeOpenAI, chat: OpenAIChatModel, kind: StreamFaultKind, reason: str
) -> None:
    """A clean end without finish_reason ("cut") is an error too: the openai client reads it as a normal end."""
    fake.reply = "one two three four"
    fake.stream_fault_next(kind, after=2)
    words: list[str] = []

    async def read() -> None:
        async for delta in chat.stream(MESSAGES):
            words.append(delta)

    with pytest.raises(ModelError, match=reason):
        await read()
    assert words == ["one ", "two "]


async def test_sse_comments_between_events_are_ignored(fake: FakeOpenAI, chat: OpenAIChatModel) -> None:
    fake.reply = "one two three"
    fake.stream_fault_next("noise")
    assert await _collect(chat) == ["one ", "two ", "three"]


async def test_embeddings_keep_input_order_across_batches_and_learn_the_dimension(fake: FakeOpenAI) -> None:
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    embedder = OpenAIEmbedder(_embedder_config(fake), max_retries=0)
    try:
        assert embedder.dimension is None
        vectors = await embedder.embed(texts)
    finally:
        await embedder.close()
    assert vectors == [fake_embedding(text) for text in texts]
    assert embedder.dimension == 8
    batches = [seen.json["input"] for seen in fake.requests]
    assert batches == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]


async def test_wrong_api_key_raises_model_error_401_from_the_chat_model(fake: FakeOpenAI) -> None:
    model = _chat_model(fake, api_key="wrong-key")
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(MESSAGES)
    finally:
        await model.close()
    assert caught.value.status == 401


async def test_wrong_api_key_raises_model_error_401_from_the_embedder(fake: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(_embedder_config(fake, api_key="wrong-key"), max_retries=0)
    try:
        with pytest.raises(ModelError) as caught:
            await embedder.embed(["alpha"])
    finally:
        await embedder.close()
    assert caught.value.status == 401
