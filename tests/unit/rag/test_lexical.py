"""Lexical analysis: jieba terms for BM25, English stemmed, the same at index and query time, remembered per text."""

from __future__ import annotations

import pytest

from rag.lexical import ENGLISH_STOP_WORDS, LexicalAnalyzer
from storage.weaviate import schema


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Refunds, returns & REPAIRS!", ["refund", "return", "repair"]),
        ("退款需要多久？", ["退款", "需要", "多久"]),
        ("   ", []),
    ],
)
def test_terms_are_lower_cased_stemmed_words_without_punctuation(
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
    assert lexical.tokens("the same words") == ["same", "word"]


def test_the_oldest_remembered_texts_are_forgotten_first() -> None:
    lexical = LexicalAnalyzer()
    lexical.remember("first", "marker")
    for number in range(9000):
        lexical.remember(f"text {number}", "x")
    assert lexical.tokens("first") == ["first"]


@pytest.mark.parametrize(
    "forms",
    [
        ("vaccines", "vaccination", "Vaccinated", "vaccine's"),
        ("study", "studies", "studied"),
        ("running", "runs", "run"),
    ],
)
def test_forms_of_an_english_word_share_one_term(lexical: LexicalAnalyzer, forms: tuple[str, ...]) -> None:
    terms = {tuple(lexical.tokens(form)) for form in forms}
    assert len(terms) == 1
    assert len(terms.pop()) == 1


def test_english_stop_words_are_left_out_at_index_and_query_time(lexical: LexicalAnalyzer) -> None:
    assert lexical.tokens("What is the effect of a vaccine on the immune system?") == [
        "what",
        "effect",
        "vaccin",
        "immun",
        "system",
    ]
    assert lexical.tokens("To be or not to be") == []
    assert all(lexical.tokens(word) == [] for word in ENGLISH_STOP_WORDS)


def test_chinese_is_cut_by_jieba_and_not_stemmed(lexical: LexicalAnalyzer) -> None:
    assert lexical.tokens("疫苗接种的效果") == ["疫苗", "接种", "的", "效果"]


def test_only_plain_english_words_are_stemmed_in_mixed_text(lexical: LexicalAnalyzer) -> None:
    # Numbers, ids mixing letters and digits, and Chinese stay as they are; the English words around them are stemmed.
    assert lexical.tokens("COVID-19 vaccines: h1n1 and p53 studies, 疫苗接种 in 2021") == [
        "covid",
        "19",
        "vaccin",
        "h1n1",
        "p53",
        "studi",
        "疫苗",
        "接种",
        "2021",
    ]


def test_the_analyzer_version_is_the_one_the_index_records() -> None:
    # Storage cannot import rag: the two constants are kept equal here. Bump both when the terms change.
    assert LexicalAnalyzer.VERSION == schema.BM25_TERMS_VERSION
    assert schema.terms_version(schema.description()) == LexicalAnalyzer.VERSION


@pytest.mark.parametrize("description", [None, "", "RagbotChunk made by an earlier ragbot"])
def test_an_index_recording_no_terms_version_was_cut_by_the_first_analyzer(description: str | None) -> None:
    assert schema.terms_version(description) == 1


def test_surface_words_are_the_same_cut_without_stems() -> None:
    lexical = LexicalAnalyzer()
    text = "Do vaccines cause autism in children?"
    assert lexical.tokens(text, stem=False) == ["do", "vaccines", "cause", "autism", "children"]
    assert lexical.tokens(text) == ["do", "vaccin", "caus", "autism", "children"]
