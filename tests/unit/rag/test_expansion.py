"""Query expansion: keyword, quoted, delimiter and question-word variants, at most five, never the query itself."""

from __future__ import annotations

import re

import pytest

from rag.expansion import MAX_VARIANTS, delimiter_parts, expand_query, keywords, quoted_phrases, without_question_words


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def test_keywords_drop_stopwords_and_repeats_but_keep_order() -> None:
    assert keywords("How do I reset the password of the password manager?", _words) == "reset password manager"


@pytest.mark.parametrize(
    ("query", "phrases"),
    [
        ('Where is the "admin console" setting?', ["admin console"]),
        ("《流浪地球》的导演是谁", ["流浪地球"]),
        ("no quotes here", []),
    ],
)
def test_quoted_phrases(query: str, phrases: list[str]) -> None:
    assert quoted_phrases(query) == phrases


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        ("refunds, returns; exchanges", ["refunds", "returns", "exchanges"]),
        ("退款和换货需要多久", ["退款", "换货需要多久"]),
        ("shipping or delivery times", ["shipping", "delivery times"]),
        ("one single question", []),
    ],
)
def test_delimiter_parts(query: str, parts: list[str]) -> None:
    assert delimiter_parts(query) == parts


@pytest.mark.parametrize(
    ("query", "stripped"),
    [("What is the refund policy?", "the refund policy"), ("请问怎么开通微粒贷", "开通微粒贷")],
)
def test_without_question_words(query: str, stripped: str) -> None:
    assert without_question_words(query) == stripped


def test_variants_are_distinct_capped_and_never_the_query() -> None:
    query = 'How long do "refunds", returns, exchanges, repairs and upgrades take?'
    variants = expand_query(query, _words)
    assert 0 < len(variants) <= MAX_VARIANTS
    assert len({v.casefold() for v in variants}) == len(variants)
    assert query.casefold() not in {v.casefold() for v in variants}
    assert variants[0] == "long refunds returns exchanges repairs upgrades take"


@pytest.mark.parametrize("query", ["refunds", "what is it", "", "？？"])
def test_nothing_to_expand_gives_no_variants(query: str) -> None:
    assert expand_query(query, _words) == []
