"""The chat model's tokens and errors counted into ModelMetrics, the real openai client talking to FakeOpenAI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.metrics import ModelMetrics
from fakes.openai_api import FakeOpenAI
from rag.config import ChatModelConfig
from rag.models.chat import OpenAIChatModel
from rag.prompt import count_messages
from rag.tokens import TokenCounter
from rag.types import ChatMessage

MESSAGES = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="What is on today?")]
REPLY = "Lunch is served from noon in the atrium."
MODEL = "fake-chat"


@pytest.fixture
def tokens(tiktoken_dir: Path | None) -> TokenCounter:
    return TokenCounter("cl100k_base", cache_dir=tiktoken_dir)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as running:
        running.reply = REPLY
        yield running


@pytest.fixture
async def counted(fake: FakeOpenAI, tokens: TokenCounter) -> AsyncIterator[tuple[OpenAIChatModel, ModelMetrics]]:
    metrics = ModelMetrics()
    config = ChatModelConfig(model=MODEL, base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=5.0)
    model = OpenAIChatModel(config, observer=metrics, tokens=tokens)
    yield model, metrics
    await model.close()


def _tokens(metrics: ModelMetrics, direction: str) -> float | None:
    return metrics.sample("ragbot_model_tokens_total", direction=direction, model=MODEL)


def _errors(metrics: ModelMetrics, kind: str) -> float | None:
    return metrics.sample("ragbot_model_errors_total", kind=kind)


async def test_a_stream_asks_for_its_usage_and_counts_the_tokens_the_api_reports(
    fake: FakeOpenAI, counted: tuple[OpenAIChatModel, ModelMetrics]
) -> None:
    model, metrics = counted
    assert "".join([delta async for delta in model.stream(MESSAGES)]) == REPLY
    assert fake.requests[-1].json["stream_options"] == {"include_usage": True}
    # The fake reports words as tokens, which tiktoken would not count alike: these are the API's figures.
    assert _tokens(metrics, "in") == 2 + 4
    assert _tokens(metrics, "out") == len(REPLY.split())


async def test_a_completion_counts_the_usage_in_its_response(counted: tuple[OpenAIChatModel, ModelMetrics]) -> None:
    model, metrics = counted
    await model.complete(MESSAGES)
    await model.complete(MESSAGES)
    assert _tokens(metrics, "in") == 2 * 6
    assert _tokens(metrics, "out") == 2 * len(REPLY.split())


async def test_a_stream_without_usage_is_counted_with_tiktoken(
    fake: FakeOpenAI, counted: tuple[OpenAIChatModel, ModelMetrics], tokens: TokenCounter
) -> None:
    fake.stream_usage = False
    model, metrics = counted
    assert "".join([delta async for delta in model.stream(MESSAGES)]) == REPLY
    assert _tokens(metrics, "in") == count_messages(MESSAGES, tokens)
    assert _tokens(metrics, "out") == tokens.count(REPLY)


async def test_a_stream_the_caller_leaves_early_counts_what_was_written(
    fake: FakeOpenAI, counted: tuple[OpenAIChatModel, ModelMetrics], tokens: TokenCounter
) -> None:
    model, metrics = counted
    stream = model.stream(MESSAGES)
    first = await anext(stream)
    await stream.aclose()
    assert _tokens(metrics, "out") == tokens.count(first)
    assert _tokens(metrics, "in") == count_messages(MESSAGES, tokens)


async def test_an_api_refusing_stream_options_is_asked_again_without_them_and_counted_with_tiktoken(
    fake: FakeOpenAI, counted: tuple[OpenAIChatModel, ModelMetrics], tokens: TokenCounter
) -> None:
    fake.refuse_stream_options = True
    model, metrics = counted
    for _ in range(2):
        assert "".join([delta async for delta in model.stream(MESSAGES)]) == REPLY
    asked = [request.json.get("stream_options") for request in fake.requests]
    assert asked == [{"include_usage": True}, None, None], "refused once, then never asked again"
    assert _tokens(metrics, "out") == 2 * tokens.count(REPLY)
    assert _errors(metrics, "refused") is None, "the refusal of an option is not a failed call"


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "rate_limited"), (500, "server"), (503, "server"), (401, "auth"), (400, "refused")]
)
async def test_a_failed_call_is_counted_by_kind(
    fake: FakeOpenAI, counted: tuple[OpenAIChatModel, ModelMetrics], status: int, kind: str
) -> None:
    model, metrics = counted
    fake.fail_next(status)
    with pytest.raises(Exception, match=str(status)):
        await model.complete(MESSAGES)
    fake.fail_next(status)
    with pytest.raises(Exception, match=str(status)):
        [delta async for delta in model.stream(MESSAGES)]
    assert _errors(metrics, kind) == 2
    assert _tokens(metrics, "in") is None, "a refused call used no tokens"


async def test_a_timeout_and_a_malformed_stream_are_counted_by_kind(
    fake: FakeOpenAI, tokens: TokenCounter, counted: tuple[OpenAIChatModel, ModelMetrics]
) -> None:
    model, metrics = counted
    fake.malformed_stream_next()
    with pytest.raises(Exception, match="malformed"):
        [delta async for delta in model.stream(MESSAGES)]
    config = ChatModelConfig(model=MODEL, base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=0.3)
    slow = OpenAIChatModel(config, observer=metrics, tokens=tokens)
    fake.delay_next(5.0)
    try:
        with pytest.raises(Exception, match="timed out"):
            await slow.complete(MESSAGES)
    finally:
        await slow.close()
    assert (_errors(metrics, "malformed"), _errors(metrics, "timeout")) == (1, 1)
