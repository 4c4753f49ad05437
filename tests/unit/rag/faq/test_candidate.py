"""FAQ confidence without a trusted embedder: how nearly the question repeats one of the FAQ's questions."""

from __future__ import annotations

import pytest

from rag.faq.search import bigram_dice


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("微粒贷怎么开通", "微粒贷怎么开通", 1.0),
        ("微粒贷怎么开通？", "微粒贷 怎么开通", 1.0),  # punctuation and spaces do not count
        ("Reset PASSWORD", "reset password", 1.0),
        ("开通", "取消", 0.0),
        ("", "anything", 0.0),
        ("a", "a", 1.0),  # a one-character text is its own bigram
    ],
)
def test_bigram_dice(a: str, b: str, expected: float) -> None:
    assert bigram_dice(a, b) == pytest.approx(expected)


def test_partial_overlap_is_between_zero_and_one_and_symmetric() -> None:
    score = bigram_dice("怎么取消借款", "借款可以取消吗")
    assert 0.0 < score < 1.0
    assert score == bigram_dice("借款可以取消吗", "怎么取消借款")
