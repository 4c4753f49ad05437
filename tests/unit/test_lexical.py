"""Lexical analysis: jieba terms for BM25, the same at index and query time, remembered per text."""

from __future__ import annotations

import pytest

from rag.lexical import LexicalAnalyzer


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Refunds, returns & REPAIRS!", ["refunds", "returns", "repairs"]),
        ("退款需要多久？", ["退款", "需要", "多久"]),
        ("   ", []),
    ],
)
def test_terms_are_lower_cased_words_without_punctuation(
    lexical: LexicalAnalyzer, text: str, expected: list[str]
) -> None:
    assert lexical.tokens(text) == expected
    assert lexical.bm25_text(text) == " ".join(expected)


def test_a_remembered_text_gives_back_its_stored_terms(lexical: LexicalAnalyzer) -> None:
    lexical.remember("stored passage", "stored passag")  # a stand-in, to tell the remembered terms from a new cut
    assert lexical.tokens("stored passage") == ["stored", "passag"]


def test_terms_come_back_as_a_fresh_list_each_time(lexical: LexicalAnalyzer) -> None:
    first = lexical.tokens("the same words")
    first.append("mutated")
    assert lexical.tokens("the same words") == ["the", "same", "words"]


def test_the_oldest_remembered_texts_are_forgotten_first() -> None:
    lexical = LexicalAnalyzer()
    lexical.remember("first", "marker")
    for number in range(9000):
        lexical.remember(f"text {number}", "x")
    assert lexical.tokens("first") == ["first"]
