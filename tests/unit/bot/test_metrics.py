"""Stage metrics: each pipeline stage's durations as a Prometheus histogram."""

from __future__ import annotations

from bot.metrics import StageMetrics
from rag.pipeline import Pipeline, StageReport, TurnContext


def _report(name: str, ms: float) -> StageReport:
    return StageReport(name=name, ms=ms, items_in=0, items_out=0)


def test_durations_fall_into_cumulative_buckets_with_sum_and_count() -> None:
    metrics = StageMetrics()
    for ms in (0.5, 3.0, 40.0, 20_000.0):
        metrics.observe("search", _report("SEARCH", ms))
    lines = metrics.render()
    labels = 'pipeline="search",stage="SEARCH"'
    assert f'ragbot_stage_seconds_bucket{{{labels},le="0.001"}} 1' in lines
    assert f'ragbot_stage_seconds_bucket{{{labels},le="0.005"}} 2' in lines
    assert f'ragbot_stage_seconds_bucket{{{labels},le="0.05"}} 3' in lines
    assert f'ragbot_stage_seconds_bucket{{{labels},le="10"}} 3' in lines
    assert f'ragbot_stage_seconds_bucket{{{labels},le="+Inf"}} 4' in lines
    assert f"ragbot_stage_seconds_count{{{labels}}} 4" in lines
    assert f"ragbot_stage_seconds_sum{{{labels}}} 20.043500" in lines


def test_nothing_observed_renders_only_the_type_line() -> None:
    assert StageMetrics().render() == ["# TYPE ragbot_stage_seconds histogram"]


class _Named:
    """Writes nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, turn: TurnContext) -> str:
        return ""


async def test_a_pipeline_reports_every_stage_to_its_observer() -> None:
    metrics = StageMetrics()
    pipeline = Pipeline("rag_stream", [_Named("SEARCH"), _Named("RERANK")], observe=metrics.observe)
    await pipeline.run(TurnContext(query="q", kb_ids=("kb",)))
    await pipeline.run(TurnContext(query="q", kb_ids=("kb",)))
    counts = [line for line in metrics.render() if line.startswith("ragbot_stage_seconds_count")]
    assert counts == [
        'ragbot_stage_seconds_count{pipeline="rag_stream",stage="RERANK"} 2',
        'ragbot_stage_seconds_count{pipeline="rag_stream",stage="SEARCH"} 2',
    ]
