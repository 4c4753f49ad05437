"""Conversation history: stored messages paired into rounds, reasoning stripped, the newest kept."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag.history import AnsweredRound, HistoryConfig, answered_rounds, strip_thinking
from storage.records import MessageRecord
from tests.support.history_messages import _message, _round, _sources


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
        _round("x", "hi", "Hi! I'm ragbot. Ask me a question about your team's documents.", outcome="smalltalk"),
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
        "smalltalk",
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


def test_a_merged_source_stands_for_the_chunks_it_was_made_of() -> None:
    sources = [{"id": "parent", "chunk_ids": ["c1", "c2"]}, {"id": "c3", "chunk_ids": []}, {"id": "f1"}]
    [answered] = answered_rounds(_round("r1", "q", "a", sources=sources), 5)
    assert answered.source_ids == ("c1", "c2", "c3", "f1")


def test_defaults_are_twenty_messages_and_five_rounds() -> None:
    assert HistoryConfig() == HistoryConfig(limit=20, max_rounds=5)
    with pytest.raises(ValueError, match="must not be negative"):
        HistoryConfig(max_rounds=-1)


def test_a_round_that_found_nothing_keeps_its_question_and_nothing_else() -> None:
    sources = _sources("c1")
    messages = [
        *_round("r1", "What does health insurance cover?", "It covers 80% of the premium.", sources=sources),
        *_round("r2", "How do I request parking?", "Sorry, nothing.", outcome="no_match", sources=sources),
    ]
    rounds = answered_rounds(messages, 5)
    assert [(done.question, done.answer, done.source_ids) for done in rounds] == [
        ("What does health insurance cover?", "It covers 80% of the premium.", ("c1",)),
        ("How do I request parking?", "", ()),
    ]
