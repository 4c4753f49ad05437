"""A question's names and numbers, and whether an FAQ carries them (the gate on verbatim FAQ answers)."""

from __future__ import annotations

import pytest

from rag.faq.distinctive import FaqWords, carried, distinctive_terms, faq_words, written_names
from rag.lexical import LexicalAnalyzer

BANK = [
    "How do I delete my Facebook account?",
    "Go to your Facebook settings and click Delete. Your account is gone after two weeks.",
    "In Gmail, open the settings and choose Forwarding, and new mail goes on through Gmail.",
    "Strikethrough with GitHub Markdown",
]


@pytest.fixture(scope="module")
def terms() -> LexicalAnalyzer:
    return LexicalAnalyzer()


@pytest.fixture(scope="module")
def bank(terms: LexicalAnalyzer) -> list[FaqWords]:
    return [faq_words([text], terms.tokens) for text in BANK]


def test_written_names_are_the_words_written_capitalised_inside_sentences(bank: list[FaqWords]) -> None:
    asked = "how go in i facebook gmail github markdown forwarding"
    # Sentence openers, "I", titles ("Strikethrough with GitHub Markdown") and one-off capitals ("Forwarding")
    # say nothing about names.
    assert written_names(asked, bank) == {"facebook", "gmail"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How do I delete my LinkedIn account?", {"linkedin"}),  # inner capital: a name wherever it stands
        ("how do i delete my facebook account", {"facebook"}),  # lower case, but the FAQs write it as a name
        ("Can I recover my Slack password?", {"slack"}),  # capitalised inside a sentence
        ("How many days of leave do I get in 2025?", {"2025"}),
        ("Is office365 free for students?", {"office365"}),
        ("How do I delete my account?", set()),
        ("HOW DO I DELETE MY ACCOUNT", set()),  # shouting marks no names
        ("Play All Videos From One User", set()),  # neither does a title
        ("I'd like to delete my account. Please help", set()),  # "I" and sentence openers are no names
        ("Tolerate commercial pages on hosting?", set()),  # rare words are not names: paraphrases use them
        ("借款5000元可以吗", {"5000"}),  # a Chinese run is not one word with a digit in it
        ("微粒贷怎么开通", set()),
    ],
)
def test_distinctive_terms(terms: LexicalAnalyzer, bank: list[FaqWords], query: str, expected: set[str]) -> None:
    assert distinctive_terms(query, terms.tokens, written_names(query, bank)) == expected


@pytest.mark.parametrize(
    ("query", "faq", "expected"),
    [
        ("How do I delete my LinkedIn account?", BANK[:2], False),
        ("How do I delete my Facebook Messenger account?", BANK[:2], False),
        ("How do I delete my Facebook account?", BANK[:2], True),
        ("how do i remove my facebook profile", BANK[:2], True),
        ("How do I delete my account?", BANK[:2], True),  # nothing distinctive asked: nothing to miss
        ("Forwarding in Gmail", BANK[2:3], True),  # the answer may carry the name
        ("How many days of leave do I get in 2025?", ["How many days of leave do I get in 2024?"], False),
    ],
)
def test_an_faq_carries_the_questions_names_in_its_questions_or_answers(
    terms: LexicalAnalyzer, bank: list[FaqWords], query: str, faq: list[str], expected: bool
) -> None:
    wanted = distinctive_terms(query, terms.tokens, written_names(query, bank))
    assert carried(wanted, faq_words(faq, terms.tokens)) is expected
