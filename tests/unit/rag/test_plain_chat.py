"""chat_stream: a conversation without retrieval, with its history in the prompt; a polite note without a model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rag.named_pipelines import chat_stream
from rag.pipeline import TurnContext
from rag.plain_chat import NO_CHAT_MODEL
from rag.tokens import TokenCounter
from rag.types import ChatMessage
from storage.records import MessageRecord, MessageRole

AT = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def tokens(tiktoken_dir: Path | None) -> TokenCounter:
    return TokenCounter("cl100k_base", cache_dir=tiktoken_dir)


def _message(request_id: str, role: MessageRole, text: str) -> MessageRecord:
    return MessageRecord(f"{request_id}-{role}", "c", request_id, role, text, "done", "", {}, AT)


class FakeHistory:
    """Our HistorySource protocol over one stored round and the current question."""

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        return [
            _message("r1", "user", "My name is Ada."),
            _message("r1", "assistant", "Nice to meet you, Ada."),
            _message("r2", "user", "What is my name?"),
        ]


class RecordingModel:
    """Our ChatModel protocol: streams a reply with a reasoning block and records the prompt."""

    model_id = "recording"

    def __init__(self) -> None:
        self.prompts: list[Sequence[ChatMessage]] = []

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return "unused"

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        self.prompts.append(messages)
        for delta in ("<think>the user said", " Ada</think>", "Your name ", "is Ada."):
            yield delta


async def _answer(turn: TurnContext) -> str:
    """The answer as STREAM_ANSWER delivered it."""
    assert turn.reports[-1].name == "STREAM_ANSWER"
    return turn.text


async def test_the_model_sees_the_history_and_the_question_without_sources(tokens: TokenCounter) -> None:
    model = RecordingModel()
    pipeline = chat_stream(tokens, model, history=FakeHistory())
    turn = await pipeline.run(TurnContext(query="What is my name?", kb_ids=(), conversation_id="c"))
    assert await _answer(turn) == "Your name is Ada."
    assert [report.name for report in turn.reports] == [
        "LOAD_HISTORY",
        "INTO_CHAT_MESSAGE",
        "CHAT_COMPLETION_STREAM",
        "STREAM_ANSWER",
    ]
    (prompt,) = model.prompts
    assert [(m.role, m.content) for m in prompt[1:]] == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]
    assert "source" not in prompt[0].content.lower()


async def test_without_a_model_it_says_so_politely(tokens: TokenCounter) -> None:
    turn = await chat_stream(tokens, None, history=FakeHistory()).run(
        TurnContext(query="What is my name?", kb_ids=(), conversation_id="c")
    )
    assert await _answer(turn) == NO_CHAT_MODEL
