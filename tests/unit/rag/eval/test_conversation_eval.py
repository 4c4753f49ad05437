"""Conversation evaluation: reading the labelled conversations, judging each turn, and the table of figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.eval.conversation_eval import (
    PlayedTurn,
    ScriptedTurn,
    judge,
    kind_scores,
    load_conversations,
    score_table,
)

VACATION = ScriptedTurn("How many vacation days?", "answer", ("25 vacation days",), ("handbook.md",))
CEO = ScriptedTurn("Who is the CEO?", "decline")
HI = ScriptedTurn("hi", "smalltalk")


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def test_conversations_are_read_with_their_turns_in_order(tmp_path: Path) -> None:
    rows = [
        {
            "name": "vacation",
            "turns": [
                {"question": "How many vacation days?", "expect": "answer", "facts": ["25"], "sources": ["a.md"]},
                {"question": "Who is the CEO?", "expect": "decline"},
            ],
        }
    ]
    [conversation] = load_conversations(_write(tmp_path / "conversations.jsonl", rows))
    assert conversation.name == "vacation"
    assert conversation.turns == (
        ScriptedTurn("How many vacation days?", "answer", ("25",), ("a.md",)),
        ScriptedTurn("Who is the CEO?", "decline"),
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"turns": [{"question": "q", "expect": "guess"}]}, "expect must be one of answer, decline, smalltalk"),
        ({"turns": [{"question": "q", "expect": "answer"}]}, "an answer turn needs facts"),
        ({"turns": []}, "a conversation without turns"),
        ({"turns": [{"expect": "decline"}]}, "'question'"),
    ],
)
def test_a_bad_conversation_is_named_by_its_line(tmp_path: Path, row: object, message: str) -> None:
    path = _write(tmp_path / "conversations.jsonl", [{"turns": [{"question": "fine", "expect": "decline"}]}, row])
    with pytest.raises(ValueError, match=r"conversations\.jsonl line 2: ") as raised:
        load_conversations(path)
    assert message in str(raised.value)


def test_an_answer_passes_when_it_quotes_every_fact_whatever_the_case_and_line_breaks() -> None:
    played = PlayedTurn("> Full-time employees get 25\nVacation  days a year.", "extractive", cited=("handbook.md",))
    verdict = judge("c", 1, VACATION, played)
    assert (verdict.passed, verdict.sources_ok, verdict.reasons) == (True, True, ())


def test_chinese_facts_match_across_a_layout_space_between_characters() -> None:
    turn = ScriptedTurn("年假有多少天？", "answer", ("全职员工每年",), ("faq.csv",))
    assert judge("c", 1, turn, PlayedTurn("全职员工 每年有 25 天年假。", "faq_direct", cited=("faq.csv",))).passed


def test_an_answer_missing_a_fact_fails_and_says_which() -> None:
    verdict = judge("c", 1, VACATION, PlayedTurn("You get 30 days.", "extractive", cited=("handbook.md",)))
    assert not verdict.passed
    assert verdict.reasons == ("missing '25 vacation days'",)


def test_wrong_sources_fail_only_the_sources_of_a_right_answer() -> None:
    played = PlayedTurn("Full-time employees get 25 vacation days a year.", "extractive", cited=("handbook.md", "x"))
    verdict = judge("c", 1, VACATION, played)
    assert (verdict.passed, verdict.sources_ok) == (True, False)
    assert verdict.reasons == ("cited x (not expected)",)


def test_an_answer_that_cites_nothing_has_wrong_sources() -> None:
    verdict = judge("c", 1, VACATION, PlayedTurn("25 vacation days", "faq_direct"))
    assert (verdict.passed, verdict.sources_ok, verdict.reasons) == (True, False, ("cited nothing",))


def test_a_declined_answer_turn_fails_as_declined() -> None:
    verdict = judge("c", 1, VACATION, PlayedTurn("Sorry, nothing about 25 vacation days.", "no_match"))
    assert not verdict.passed
    assert verdict.reasons == ("declined", "cited nothing")


@pytest.mark.parametrize(
    ("outcome", "passed"),
    [("no_match", True), ("extractive", False), ("faq_direct", False), ("failed", False), ("refused", False)],
)
def test_a_decline_is_told_by_the_turns_outcome_not_its_words(outcome: str, passed: bool) -> None:
    assert judge("c", 1, CEO, PlayedTurn("I couldn't find anything.", outcome)).passed is passed


@pytest.mark.parametrize(("outcome", "passed"), [("no_match", False), ("extractive", True), ("failed", False)])
def test_small_talk_passes_unless_declined_or_broken(outcome: str, passed: bool) -> None:
    assert judge("c", 1, HI, PlayedTurn("Hello!", outcome)).passed is passed


def test_figures_per_kind_count_answers_twice_and_list_every_turn_that_fell_short() -> None:
    verdicts = [
        judge("vacation", 1, VACATION, PlayedTurn("25 vacation days", "extractive", cited=("handbook.md",))),
        judge("vacation", 2, VACATION, PlayedTurn("25 vacation days", "extractive", "days carried over", ("x",))),
        judge("vacation", 3, CEO, PlayedTurn("The CEO " + "is someone " * 20, "extractive", cited=("x",))),
        judge("greeting", 1, HI, PlayedTurn("Sorry.", "no_match")),
    ]
    scores = {score.kind: (score.turns, score.passed) for score in kind_scores(verdicts)}
    assert scores == {
        "answer: facts": (2, 2),
        "answer: sources": (2, 1),
        "decline": (1, 0),
        "smalltalk": (1, 0),
        "all turns": (4, 2),
    }
    table = score_table("team", verdicts)
    assert "| answer: sources | 2 | 1 | 50.0% |" in table
    assert "Turns that fell short (3):" in table
    assert "- [vacation #2] 'How many vacation days?' (expect answer): cited x (not expected)" in table
    assert "    searched as: 'days carried over'" in table
    assert "    outcome extractive, cited x: The CEO " + ("is someone " * 20)[:112] + "…" in table
    assert "- [greeting #1] 'hi' (expect smalltalk): declined small talk" in table
