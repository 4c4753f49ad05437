"""FAQ evaluation of verbatim answers: how often, how often the gold FAQ, and with the gold FAQ left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.eval.retrieval_eval import RankedFaqs, VerbatimScores, evaluate_faq

QUERIES = [
    {"id": "q1", "text": "gold first, quoted and direct", "faq_id": "f1"},
    {"id": "q2", "text": "wrong first, quoted", "faq_id": "f2"},
    {"id": "q3", "text": "gold first, next one quoted", "faq_id": "f3"},
    {"id": "q4", "text": "nothing offered", "faq_id": "f4"},
    {"id": "q5", "text": "matches none", "faq_id": None},
]
ANSWERS = {
    "gold first, quoted and direct": RankedFaqs(["f1", "f2"], 0.95, quoted=frozenset({"f1"}), direct=frozenset({"f1"})),
    "wrong first, quoted": RankedFaqs(["f1", "f2"], 0.7, quoted=frozenset({"f1"}), direct=frozenset()),
    "gold first, next one quoted": RankedFaqs(
        ["f3", "f1"], 0.8, quoted=frozenset({"f3", "f1"}), direct=frozenset({"f1"})
    ),
    "nothing offered": RankedFaqs([], None, quoted=frozenset(), direct=frozenset()),
    # Confidence over the threshold, but the ranker's own decision says no direct answer.
    "matches none": RankedFaqs(["f9"], 0.99, quoted=frozenset(), direct=frozenset()),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(row) for row in QUERIES) + "\n", encoding="utf-8")
    return tmp_path


async def _scripted(query: str) -> RankedFaqs:
    return ANSWERS[query]


async def _plain(query: str) -> RankedFaqs:
    return RankedFaqs(ANSWERS[query].ids, ANSWERS[query].top_confidence)


async def test_verbatim_rates_count_the_first_faq_and_the_next_one_once_the_gold_faq_is_left_out(
    folder: Path,
) -> None:
    [scores] = await evaluate_faq(folder, {"scripted": _scripted}, direct_threshold=0.9)
    # Of 4 queries with a gold FAQ: quoted first in q1 (gold), q2 (wrong), q3 (gold); direct only in q1.
    # Gold left out: q1 gets f2 (not quoted), q2 gets f1 (quoted), q3 gets f1 (quoted and direct), q4 nothing.
    assert scores.verbatim == VerbatimScores(
        quoted=0.75, quoted_gold=2 / 3, direct=0.25, direct_gold=1.0, gold_out_quoted=0.5, gold_out_direct=0.25
    )
    assert scores.direct_rate == 0.0  # the ranker's decision, not the bare confidence


async def test_a_ranker_that_makes_no_verbatim_decision_has_no_verbatim_scores(folder: Path) -> None:
    [scores] = await evaluate_faq(folder, {"plain": _plain}, direct_threshold=0.9)
    assert scores.verbatim is None
    assert scores.direct_rate == 1.0  # confidence 0.99 on the query matching none
