"""LlmRewriter driving the real openai client against FakeOpenAI: the rewrite it uses and every fallback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from fakes.openai_api import FakeOpenAI
from rag.config import ChatModelConfig
from rag.models.chat import OpenAIChatModel
from rag.rewrite import LlmRewriter, RewriteResult

HISTORY = [("Who founded Tesla?", "Tesla was founded in 2003 by Martin Eberhard and Marc Tarpenning.")]
QUERY = "When did it go public?"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    """A running fake OpenAI API."""
    async with FakeOpenAI() as running:
        yield running


@pytest.fixture
async def model(fake: FakeOpenAI) -> AsyncIterator[OpenAIChatModel]:
    """A chat model on the fake, without retries and with a client timeout far above the rewriter's."""
    chat = OpenAIChatModel(
        ChatModelConfig(model="fake-chat", base_url=fake.base_url, api_key="test-key", timeout=30.0, max_retries=0)
    )
    yield chat
    await chat.close()


async def test_the_models_rewrite_is_used(fake: FakeOpenAI, model: OpenAIChatModel) -> None:
    fake.reply = "When did Tesla go public?"
    result = await LlmRewriter(model).rewrite(QUERY, HISTORY)
    assert result == RewriteResult("When did Tesla go public?", "model", "rewritten")
    messages = fake.requests[-1].json["messages"]
    assert [message["role"] for message in messages] == ["system", "user"]
    assert "Output ONLY the rewritten question" in messages[0]["content"]
    assert "User: Who founded Tesla?" in messages[1]["content"]
    assert "Assistant: Tesla was founded in 2003" in messages[1]["content"]
    assert messages[1]["content"].endswith(f"Latest question: {QUERY}\nRewritten question:")


@pytest.mark.parametrize(
    "reply",
    [
        'Rewritten question: "When did Tesla go public?"',
        "“When did Tesla go public?”",
        "<think>The user means Tesla.</think>\nWhen did Tesla go public?",
    ],
    ids=["prefix-and-quotes", "curly-quotes", "think-block"],
)
async def test_prefixes_quotes_and_thinking_are_stripped(fake: FakeOpenAI, model: OpenAIChatModel, reply: str) -> None:
    fake.reply = reply
    result = await LlmRewriter(model).rewrite(QUERY, HISTORY)
    assert (result.text, result.method) == ("When did Tesla go public?", "model")


async def test_a_chinese_rewrite_is_used(fake: FakeOpenAI, model: OpenAIChatModel) -> None:
    fake.reply = "改写后的问题：流浪地球的导演是谁"
    result = await LlmRewriter(model).rewrite("它的导演是谁", [("你看过流浪地球吗", "看过，特效很震撼。")])
    assert (result.text, result.method) == ("流浪地球的导演是谁", "model")


async def test_empty_history_does_not_call_the_model(fake: FakeOpenAI, model: OpenAIChatModel) -> None:
    result = await LlmRewriter(model).rewrite(QUERY, [])
    assert result == RewriteResult(QUERY, "none", "no history")
    assert fake.requests == []


async def test_a_slow_model_times_out_to_the_raw_query(
    fake: FakeOpenAI, model: OpenAIChatModel, caplog: pytest.LogCaptureFixture
) -> None:
    fake.delay_next(5.0)
    with caplog.at_level(logging.WARNING, logger="rag.rewrite"):
        result = await LlmRewriter(model, timeout=0.2).rewrite(QUERY, HISTORY)
    assert result == RewriteResult(QUERY, "fallback", "timeout after 0.2s")
    assert "rewrite=fallback" in caplog.text


async def test_a_server_error_falls_back_to_the_raw_query(fake: FakeOpenAI, model: OpenAIChatModel) -> None:
    fake.fail_next(500)
    result = await LlmRewriter(model).rewrite(QUERY, HISTORY)
    assert (result.text, result.method) == (QUERY, "fallback")
    assert result.reason.startswith("model error: chat model answered 500")


async def test_an_overlong_output_falls_back_to_the_raw_query(fake: FakeOpenAI, model: OpenAIChatModel) -> None:
    fake.reply = "When did Tesla go public " + "and why " * 40 + "?"
    result = await LlmRewriter(model, max_ratio=3.0).rewrite(QUERY, HISTORY)
    assert (result.text, result.method) == (QUERY, "fallback")
    assert result.reason.startswith("output too long")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty output"),
        ('""', "empty output"),
        ("Sure! When did Tesla go public?", "output looks like an answer"),
        ("The answer is 2010.", "output looks like an answer"),
        ("Tesla went public in 2010.\nIts IPO raised $226 million.", "output has several lines, looks like an answer"),
    ],
    ids=["empty", "empty-quotes", "sure", "the-answer", "several-lines"],
)
async def test_an_output_that_is_no_question_falls_back_to_the_raw_query(
    fake: FakeOpenAI, model: OpenAIChatModel, reply: str, reason: str
) -> None:
    fake.reply = reply
    assert await LlmRewriter(model).rewrite(QUERY, HISTORY) == RewriteResult(QUERY, "fallback", reason)


async def test_only_the_last_rounds_reach_the_model_and_long_answers_are_cut(
    fake: FakeOpenAI, model: OpenAIChatModel
) -> None:
    history = [(f"Question {number}?", "x" * 1000) for number in range(10)]
    fake.reply = "Question 9 again?"
    await LlmRewriter(model).rewrite("And again?", history)
    prompt = fake.requests[-1].json["messages"][1]["content"]
    assert "Question 4?" not in prompt
    assert "Question 5?" in prompt
    assert "x" * 301 not in prompt
