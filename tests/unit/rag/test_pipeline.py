"""Pipeline: stages run in order over one turn, each timed and counted; failures name their stage."""

from __future__ import annotations

import pytest

from rag.pipeline import Pipeline, TurnContext
from rag.types import Candidate


def _candidate(n: int) -> Candidate:
    return Candidate(id=str(n), kind="chunk", kb_id="kb", text=f"text {n}", score=1.0 / (n + 1))


class Find:
    """Writes candidates."""

    name = "SEARCH"

    async def run(self, turn: TurnContext) -> str:
        turn.candidates = [_candidate(n) for n in range(6)]
        return "legs=2"


class KeepHalf:
    """Reads candidates; writes reranked."""

    name = "RERANK"

    async def run(self, turn: TurnContext) -> str:
        turn.reranked = turn.candidates[:3]
        return ""


class Explode:
    """Fails."""

    name = "MERGE"

    async def run(self, turn: TurnContext) -> str:
        raise ValueError("bad merge")


async def test_each_stage_is_reported_with_its_counts_in_order() -> None:
    turn = await Pipeline("search", [Find(), KeepHalf()]).run(TurnContext(query="q", kb_ids=("kb",)))
    assert [(r.name, r.items_in, r.items_out, r.note) for r in turn.reports] == [
        ("SEARCH", 0, 6, "legs=2"),
        ("RERANK", 6, 3, ""),
    ]
    assert all(report.ms >= 0 for report in turn.reports)


async def test_a_failing_stage_is_named_on_the_exception() -> None:
    turn = TurnContext(query="q", kb_ids=("kb",))
    with pytest.raises(ValueError, match="bad merge") as caught:
        await Pipeline("rag_stream", [Find(), Explode()]).run(turn)
    assert "pipeline=rag_stream stage=MERGE" in caught.value.__notes__
    assert [report.name for report in turn.reports] == ["SEARCH"]


def test_search_query_prefers_the_rewrite() -> None:
    turn = TurnContext(query="how much is it?", kb_ids=())
    assert turn.search_query == "how much is it?"
    turn.rewritten = "how much is the premium plan?"
    assert turn.search_query == "how much is the premium plan?"
