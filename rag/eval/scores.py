"""Ranking metrics (nDCG, recall, MRR, hit rate at k) and answer metrics (token F1, exact match); pure functions."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping, Sequence


def _top_k(ranked_ids: Sequence[str], k: int) -> list[str]:
    """The first k distinct ids: a repeated id is one document, as in a pytrec_eval run (a dict id -> score)."""
    if k <= 0:
        raise ValueError(f"k must be >= 1, got {k}")
    top: list[str] = []
    seen: set[str] = set()
    for doc_id in ranked_ids:
        if len(top) == k:
            break
        if doc_id not in seen:
            seen.add(doc_id)
            top.append(doc_id)
    return top


def ndcg_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG@k as BEIR reports it through pytrec_eval: gain = graded relevance, log2(rank + 1) discount.

    The ideal ranking is built from the qrels (not from the retrieved list); judgements <= 0 count as not relevant.
    A query without a relevant document scores 0.0 (BEIR leaves such queries out before averaging).
    """
    top = _top_k(ranked_ids, k)
    dcg = sum(max(relevant.get(doc_id, 0), 0) / math.log2(rank + 1) for rank, doc_id in enumerate(top, start=1))
    gains = sorted((grade for grade in relevant.values() if grade > 0), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(gains, start=1))
    return dcg / ideal if ideal else 0.0


def recall_at_k(ranked_ids: Sequence[str], relevant_ids: Collection[str], k: int) -> float:
    """Share of the relevant ids found in the top k (0.0 when nothing is relevant)."""
    wanted = set(relevant_ids)
    if not wanted:
        return 0.0
    return sum(doc_id in wanted for doc_id in _top_k(ranked_ids, k)) / len(wanted)


def mrr_at_k(ranked_ids: Sequence[str], relevant_ids: Collection[str], k: int) -> float:
    """1 / rank of the first relevant id within the top k, else 0.0."""
    wanted = set(relevant_ids)
    for rank, doc_id in enumerate(_top_k(ranked_ids, k), start=1):
        if doc_id in wanted:
            return 1.0 / rank
    return 0.0


def hit_at_k(ranked_ids: Sequence[str], relevant_ids: Collection[str], k: int) -> float:
    """1.0 when a relevant id is within the top k, else 0.0."""
    wanted = set(relevant_ids)
    return float(any(doc_id in wanted for doc_id in _top_k(ranked_ids, k)))


# SQuAD v1.1's evaluate script drops English articles before comparing answers.
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# CMRC 2018's mixed segmentation: every CJK ideograph is a token, runs of other letters and digits are words.
_MIXED_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf" for char in text)


def _strip_punctuation(text: str) -> str:
    # SQuAD removes string.punctuation (which includes symbols such as $ and +); Unicode punctuation (，。？) too.
    return "".join(
        " " if char in string.punctuation or unicodedata.category(char).startswith("P") else char for char in text
    )


def _answer_tokens(text: str, chinese: bool) -> list[str]:
    text = _strip_punctuation(text.casefold())
    if chinese:
        return _MIXED_TOKEN.findall(text)
    return _ARTICLES.sub(" ", text).split()


def _is_chinese(prediction: str, gold: str, chinese: bool | None) -> bool:
    return chinese if chinese is not None else _has_cjk(prediction) or _has_cjk(gold)


def token_f1(prediction: str, gold: str, *, chinese: bool | None = None) -> float:
    """Token-overlap F1 between an answer and the gold answer (SQuAD; CMRC 2018 character tokens for Chinese).

    `chinese=None` decides by whether either text contains CJK ideographs. When either side has no tokens left
    after normalisation, F1 is 1.0 only if both are empty (SQuAD v2's rule for unanswerable questions).
    """
    is_chinese = _is_chinese(prediction, gold, chinese)
    predicted = _answer_tokens(prediction, is_chinese)
    expected = _answer_tokens(gold, is_chinese)
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str, *, chinese: bool | None = None) -> float:
    """1.0 when both answers normalise to the same tokens (as in `token_f1`), else 0.0."""
    is_chinese = _is_chinese(prediction, gold, chinese)
    return float(_answer_tokens(prediction, is_chinese) == _answer_tokens(gold, is_chinese))
