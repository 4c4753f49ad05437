"""Conversation history: stored messages paired into rounds, reasoning stripped, the newest kept, LOAD_HISTORY."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from rag.history import AnsweredRound, HistoryConfig, LoadHistory, answered_rounds, strip_thinking
from rag.pipeline import TurnContext
from storage.records import MessageRecord, MessageRole, MessageStatus

AT = datetime(2025, 1, 1, tzinfo=UTC)


def _message(
    request_id: str, role: MessageRole, text: str, status: MessageStatus = "done", **meta: Any
) -> MessageRecord:
    return MessageRecord(
        id=f"{request_id}-{role}",
        conversation_id="c",
        request_id=request_id,
        role=role,
        text=text,
        status=status,
        platform_message_id="",
        meta=meta,
        created_at=AT,
    )


def _round(request_id: str, question: str, answer: str, **meta: Any) -> list[MessageRecord]:
    return [_message(request_id, "user", question), _message(request_id, "assistant", answer, **meta)]


def _sources(*ids: str) -> list[dict[str, Any]]:
    return [{"id": source_id, "kind": "chunk", "document_id": "d", "title": "t", "position": 0} for source_id in ids]


def _pairs(messages: Sequence[MessageRecord], max_rounds: int = 5) -> list[tuple[str, str]]:
    return [(done.question, done.answer) for done in answered_rounds(messages, max_rounds)]


def test_messages_pair_by_request_id_not_by_adjacency() -> None:
    messages = [
        _message("r1", "user", "Where do visitors park?"),
        _message("r2", "user", "When does the office open?"),
        _message("r2", "assistant", "From 9 to 17."),
        _message("r1", "assistant", "In garage B."),
    ]
    assert _pairs(messages) == [
        ("Where do visitors park?", "In garage B."),
        ("When does the office open?", "From 9 to 17."),
    ]


@pytest.mark.parametrize(
    "incomplete",
    [
        [_message("x", "user", "the current question, not answered yet")],
        [_message("x", "assistant", "an answer whose question fell outside the window")],
        [_message("x", "user", "q"), _message("x", "assistant", "half an answer", "failed")],
        [_message("x", "user", "q"), _message("x", "assistant", "", "streaming")],
        [_message("x", "user", "q"), _message("x", "assistant", "   ")],
        [_message("x", "user", "q"), _message("x", "assistant", "<think>only reasoning</think>")],
        [_message("x", "user", "   "), _message("x", "assistant", "an answer")],
        _round("x", "🙂🙂", "I can only answer questions written in words.", outcome="refused"),
        [_message("", "user", "q"), _message("", "assistant", "no request id to pair by")],
    ],
    ids=[
        "no-answer",
        "no-question",
        "failed",
        "streaming",
        "blank-answer",
        "only-thinking",
        "blank-question",
        "refused",
        "no-request-id",
    ],
)
def test_incomplete_rounds_are_dropped(incomplete: list[MessageRecord]) -> None:
    messages = [*_round("r1", "Where do visitors park?", "In garage B."), *incomplete]
    assert _pairs(messages) == [("Where do visitors park?", "In garage B.")]


@pytest.mark.parametrize(
    ("stored", "visible"),
    [
        ("<think>They mean garage B.</think>In garage B.", "In garage B."),
        ("<think>\nfirst line\n\nsecond line\n</think>\n\nIn garage B.", "In garage B."),
        ("<THINK>upper case</Think>In garage B.", "In garage B."),
        ("<thinking>long form</thinking>In garage B.", "In garage B."),
        ("In <think>a</think>garage <think>b</think>B.", "In garage B."),
        ("In garage B.<think>cut off before it closed", "In garage B."),
        ("  In garage B.  ", "In garage B."),
    ],
    ids=["block", "multi-line", "case", "thinking-tag", "several", "unclosed-trailing", "whitespace"],
)
def test_reasoning_is_stripped_from_answers(stored: str, visible: str) -> None:
    assert strip_thinking(stored) == visible
    assert _pairs(_round("r1", "Where do visitors park?", stored)) == [("Where do visitors park?", visible)]


def test_an_unclosed_leading_think_leaves_no_answer_and_drops_the_round() -> None:
    assert strip_thinking("<think>the model was cut off while reasoning") == ""
    assert _pairs(_round("r1", "q", "<think>the model was cut off while reasoning")) == []


def test_the_newest_rounds_are_kept_oldest_first() -> None:
    messages = [message for n in range(1, 8) for message in _round(f"r{n}", f"q{n}", f"a{n}")]
    assert _pairs(messages, max_rounds=3) == [("q5", "a5"), ("q6", "a6"), ("q7", "a7")]
    assert _pairs(messages, max_rounds=0) == []


def test_the_question_as_answered_replaces_the_raw_text() -> None:
    messages = _round(
        "r1", "  where do visitors PARK?\x07 " + "x" * 20_000, "In garage B.", query="where do visitors PARK?"
    )
    assert _pairs(messages) == [("where do visitors PARK?", "In garage B.")]


def test_each_round_keeps_the_ids_of_the_sources_its_answer_showed() -> None:
    sources = [*_sources("c1", "f1", "c1"), {"kind": "chunk"}, "not a source", {"id": 7}]
    rounds = answered_rounds(_round("r1", "q", "a", sources=sources), 5)
    assert rounds == [AnsweredRound("q", "a", ("c1", "f1"))]


class FakeHistory:
    """Our HistorySource protocol over a list, recording what it was asked."""

    def __init__(self, messages: Sequence[MessageRecord]) -> None:
        self.messages = list(messages)
        self.calls: list[tuple[str, int]] = []

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        self.calls.append((conversation_id, limit))
        return self.messages[-limit:]


def test_a_merged_source_stands_for_the_chunks_it_was_made_of() -> None:
    sources = [{"id": "parent", "chunk_ids": ["c1", "c2"]}, {"id": "c3", "chunk_ids": []}, {"id": "f1"}]
    [answered] = answered_rounds(_round("r1", "q", "a", sources=sources), 5)
    assert answered.source_ids == ("c1", "c2", "c3", "f1")


async def test_load_history_writes_the_rounds_and_the_latest_answers_sources() -> None:
    source = FakeHistory(
        [
            *_round(
                "r1", "What is the VPN client?", "It is installed from the Software Center.", sources=_sources("a")
            ),
            *_round("r2", "Who runs it?", "The IT desk.", sources=_sources("b", "c")),
            _message("r3", "user", "And on weekends?"),
            _message("r3", "assistant", "partial", "failed", sources=_sources("z")),
            _message("r4", "user", "How do I install it?"),
        ]
    )
    turn = TurnContext(query="How do I install it?", kb_ids=("kb",), conversation_id="c")
    note = await LoadHistory(source, HistoryConfig(limit=7, max_rounds=5)).run(turn)
    assert source.calls == [("c", 7)]
    assert turn.history == [
        ("What is the VPN client?", "It is installed from the Software Center."),
        ("Who runs it?", "The IT desk."),
    ]
    assert turn.history_refs == ("b", "c")
    assert note == "messages=7 rounds=2 refs=2"


async def test_the_latest_answer_without_sources_leaves_no_refs() -> None:
    source = FakeHistory(
        [*_round("r1", "q1", "a1", sources=_sources("a")), *_round("r2", "thanks!", "You're welcome.")]
    )
    turn = TurnContext(query="q", kb_ids=(), conversation_id="c")
    await LoadHistory(source).run(turn)
    assert [question for question, _ in turn.history] == ["q1", "thanks!"]
    assert turn.history_refs == ()


async def test_the_limit_bounds_the_messages_read() -> None:
    source = FakeHistory([message for n in range(1, 4) for message in _round(f"r{n}", f"q{n}", f"a{n}")])
    turn = TurnContext(query="q", kb_ids=(), conversation_id="c")
    # Three messages reach back to the middle of round 2: its answer alone is no round.
    await LoadHistory(source, HistoryConfig(limit=3)).run(turn)
    assert turn.history == [("q3", "a3")]


async def test_without_a_conversation_the_stage_is_skipped_and_given_history_kept() -> None:
    source = FakeHistory(_round("r1", "q1", "a1"))
    turn = TurnContext(query="q", kb_ids=(), history=[("given", "history")])
    note = await LoadHistory(source).run(turn)
    assert note == "skipped=no_conversation"
    assert source.calls == []
    assert turn.history == [("given", "history")]


def test_defaults_are_twenty_messages_and_five_rounds() -> None:
    assert HistoryConfig() == HistoryConfig(limit=20, max_rounds=5)
    with pytest.raises(ValueError, match="must not be negative"):
        HistoryConfig(max_rounds=-1)
