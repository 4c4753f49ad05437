"""Answers without a model: FAQ answer verbatim, quoted passages with source numbers, fixed text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.fallback import extractive_answer, fixed_answer
from rag.types import Candidate


def chunk(n: int, text: str, **metadata: Any) -> Candidate:
    return Candidate(
        id=f"c{n}", kind="chunk", kb_id="kb", text=text, score=0.5, document_id=f"doc{n}", metadata=metadata
    )


def faq(n: int, answers: Any, question: str = "How do I reset?", text: str = "") -> Candidate:
    return Candidate(
        id=f"f{n}", kind="faq", kb_id="kb", text=text, score=0.9, metadata={"question": question, "answers": answers}
    )


def test_faq_first_gives_its_first_answer_verbatim() -> None:
    answer = "Open **Settings** → Reset.\n\nThen sign in again."
    passages = [faq(1, [answer, "Other answer."]), chunk(2, "Unrelated text.")]
    assert extractive_answer("reset?", passages) == answer


def test_faq_without_answers_falls_back_to_its_text() -> None:
    assert (
        extractive_answer("q", [faq(1, [], text="Q: reset? A: press the button.")]) == "Q: reset? A: press the button."
    )


def test_passages_are_quoted_with_source_numbers() -> None:
    passages = [chunk(1, "Backups run nightly. They keep 30 days."), chunk(2, "Restores take an hour.\nAsk IT.")]
    assert extractive_answer("backups?", passages) == (
        "> Backups run nightly. They keep 30 days. [1]\n\n> Restores take an hour.\n> Ask IT. [2]"
    )


def test_quotes_are_trimmed_at_sentence_ends_to_max_chars() -> None:
    first = "First sentence is here. Second sentence is here. Third sentence is here."
    answer = extractive_answer("q", [chunk(1, first), chunk(2, "Never reached because no room.")], max_chars=60)
    assert answer == "> First sentence is here. Second sentence is here. [1]"


def test_chinese_passages_are_cut_after_full_width_stops() -> None:
    answer = extractive_answer("备份？", [chunk(1, "每天晚上备份。保留三十天。恢复需要一小时。")], max_chars=20)
    assert answer == "> 每天晚上备份。保留三十天。 [1]"


def test_an_unbroken_top_passage_is_clipped_rather_than_skipped() -> None:
    answer = extractive_answer("q", [chunk(1, "word " * 100)], max_chars=50)
    assert len(answer) <= 50
    assert answer.startswith("> word word")
    assert answer.endswith("… [1]")


def test_numbers_follow_passage_positions_even_when_one_is_empty() -> None:
    answer = extractive_answer("q", [chunk(1, "   "), chunk(2, "Only this one.")])
    assert answer == "> Only this one. [2]"


@given(
    texts=st.lists(st.text(alphabet="abc .。!\n中", min_size=0, max_size=200), max_size=6),
    max_chars=st.integers(min_value=30, max_value=400),
)
def test_extractive_answer_stays_within_max_chars(texts: list[str], max_chars: int) -> None:
    answer = extractive_answer("question", [chunk(n, text) for n, text in enumerate(texts)], max_chars=max_chars)
    assert len(answer) <= max_chars


def test_nothing_to_quote_gives_nothing_so_the_caller_says_it_found_nothing() -> None:
    assert extractive_answer("How?", []) == ""
    assert extractive_answer("怎么备份数据？", [chunk(1, " \n ")]) == ""


def test_fixed_answer_is_stripped_and_must_not_be_empty() -> None:
    assert fixed_answer("  Ask the helpdesk.\n") == "Ask the helpdesk."
    with pytest.raises(ValueError, match="empty"):
        fixed_answer("  ")
