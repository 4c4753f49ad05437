"""Which questions lean on the conversation (and may get the previous answer's sources back)."""

from __future__ import annotations

import pytest

from rag.followup import leans_on_history


@pytest.mark.parametrize(
    "query",
    [
        "Can my kids be added to it?",
        "Can I carry them over?",
        "And when do they expire?",
        "What about Telegram?",
        "how about the weekend",
        "what if that doesn't work",
        "Why?",
        "How so?",
        "那它多少钱？",
        "年假呢？",
        "为什么？",
    ],
)
def test_a_follow_up_leans_on_history(query: str) -> None:
    assert leans_on_history(query)


@pytest.mark.parametrize(
    "query",
    [
        "Who is the CEO?",
        "How do I set up the VPN?",
        "When are performance reviews?",
        "公司的年假政策是什么？",
        "午饭补贴是多少？",
    ],
)
def test_a_self_contained_question_does_not(query: str) -> None:
    assert not leans_on_history(query)


def test_a_question_the_rewriter_changed_leans_on_history() -> None:
    assert leans_on_history("Does it cover dental care?", "Does health insurance cover dental care?")
    assert leans_on_history("Can children join?", "Can children join the health insurance?")
    assert not leans_on_history("Who is the CEO?", "who is the CEO?")
