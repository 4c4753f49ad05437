"""FAQ evaluation: hit rates on answerable queries, false hits on labelled negatives and on queries matching none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.eval.retrieval_eval import RankedFaqs, evaluate_faq

QUERIES = [
    {"id": "q1", "text": "right first", "faq_id": "f1"},
    {"id": "q2", "text": "right second", "faq_id": "f2"},
    {"id": "q3", "text": "negative of f1", "faq_id": None, "pair_faq_id": "f1", "pair_label": 0},
    {"id": "q4", "text": "matches nothing", "faq_id": None},
]
ANSWERS = {
    "right first": RankedFaqs(["f1", "f2"], 0.95),
    "right second": RankedFaqs(["f1", "f2"], 0.7),
    "negative of f1": RankedFaqs(["f1"], 0.92),
    "matches nothing": RankedFaqs([], None),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(row) for row in QUERIES) + "\n", encoding="utf-8")
    return tmp_path


async def _scripted(query: str) -> RankedFaqs:
    return ANSWERS[query]


async def test_scores_count_hits_negatives_offers_and_direct_answers(folder: Path) -> None:
    [scores] = await evaluate_faq(folder, {"scripted": _scripted}, direct_threshold=0.9)
    assert (scores.answerable, scores.top1, scores.top5) == (2, 0.5, 1.0)
    assert (scores.negatives, scores.negative_top1_rate) == (1, 1.0)
    # Of the two queries matching no FAQ, one was offered an FAQ, and with 0.92 confidence: answered directly.
    assert (scores.unmatched, scores.offered_rate, scores.direct_rate) == (2, 0.5, 0.5)


async def test_a_higher_direct_threshold_answers_nothing_directly(folder: Path) -> None:
    [scores] = await evaluate_faq(folder, {"scripted": _scripted}, direct_threshold=0.95)
    assert scores.direct_rate == 0.0
