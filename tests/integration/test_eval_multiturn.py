"""`ragbot eval` on a conversation set over real services: both tables, each task answered once, nothing left."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest_asyncio

from bot.app.services import Services, build_services
from bot.cli.evaluate import run_eval
from bot.cli.evaluate_multiturn import conversation_set, decline_rates
from rag.types import KnownVectors
from tests.conftest import EmbeddedSettings

MINI = Path(__file__).resolve().parents[1] / "data" / "mtrag-mini"


@pytest_asyncio.fixture
async def services(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[Services]:
    async with build_services(embedded_settings(tmp_path / "data")) as running:
        yield running


async def test_eval_prints_retrieval_by_query_form_and_declines_by_answerability(services: Services) -> None:
    out = io.StringIO()

    assert await run_eval(services, [MINI], out) == 0

    text = out.getvalue()
    assert "### mtrag-mini: retrieval by query form (3 answerable and partial tasks with gold passages)" in text
    for row in (
        "| bm25, last turn |",
        "| hybrid (product weights), last turn |",
        "| hybrid, every user turn joined |",
        "| hybrid, rule rewrite (REWRITE_QUERY without a model) |",
        "| hybrid, model rewrite (echo model: checks the plumbing only) |",
    ):
        assert row in text
    declines = text.split("### mtrag-mini: declines through the answer pipeline")[1]
    assert [line.split(" | ")[0:2] for line in declines.splitlines() if line.startswith("| ") and "%" in line] == [
        ["| UNANSWERABLE", "1"],
        ["| ANSWERABLE", "2"],
        ["| PARTIAL", "1"],
        ["| UNDERSPECIFIED", "1"],
    ]
    assert await services.knowledge.all() == []


class _Unconvinced:
    """A reranker that finds nothing relevant: RERANK keeps no passage, whatever its threshold."""

    model_id = "unconvinced"

    async def rerank(self, query: str, texts: Sequence[str], vectors: KnownVectors | None = None) -> list[float]:
        return [0.0] * len(texts)


async def test_declines_can_be_rerun_with_other_pipeline_parts_on_one_ingested_set(services: Services) -> None:
    parts = services.answerer.parts
    async with conversation_set(services, MINI, io.StringIO()) as prepared:
        product = await prepared.declines(parts)
        unconvinced = await prepared.declines(replace(parts, reranker=_Unconvinced()))

    answerable = next(s for s in product if s.answerability == "ANSWERABLE")
    assert (answerable.tasks, answerable.declined, answerable.answered_from_gold) == (2, 0.0, 1.0)
    assert [(s.tasks, s.declined, s.outcomes) for s in unconvinced] == [
        (s.tasks, 1.0, (("no_match", s.tasks),)) for s in product
    ]
    assert await services.knowledge.all() == []


async def test_decline_rates_is_one_call_from_folder_to_shares(services: Services) -> None:
    scores = await decline_rates(services, MINI, out=io.StringIO())

    assert [(s.answerability, s.tasks) for s in scores] == [
        ("UNANSWERABLE", 1),
        ("ANSWERABLE", 2),
        ("PARTIAL", 1),
        ("UNDERSPECIFIED", 1),
    ]
