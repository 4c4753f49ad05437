"""The metric groups: stage durations as a Prometheus histogram, the chat side's counters, a registry of one's own."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics import ChatMetrics, PartMetrics, ServiceMetrics, StageMetrics, registry_of
from rag.pipeline import Pipeline, StageReport, TurnContext


def _report(name: str, ms: float) -> StageReport:
    return StageReport(name=name, ms=ms, items_in=0, items_out=0)


def test_durations_fall_into_cumulative_buckets_with_sum_and_count() -> None:
    metrics = StageMetrics()
    for ms in (0.5, 3.0, 40.0, 20_000.0):
        metrics.observe("search", _report("SEARCH", ms))
    labels = {"pipeline": "search", "stage": "SEARCH"}
    buckets = {
        bound: metrics.sample("ragbot_stage_seconds_bucket", **labels, le=bound)
        for bound in ("0.001", "0.005", "0.05", "10.0", "+Inf")
    }
    assert buckets == {"0.001": 1, "0.005": 2, "0.05": 3, "10.0": 3, "+Inf": 4}
    assert metrics.sample("ragbot_stage_seconds_count", **labels) == 4
    assert metrics.sample("ragbot_stage_seconds_sum", **labels) == pytest.approx(20.0435)


def test_nothing_observed_exposes_the_family_without_samples() -> None:
    (family,) = StageMetrics().collect()
    assert (family.name, family.type, family.samples) == ("ragbot_stage_seconds", "histogram", [])


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
    for stage in ("SEARCH", "RERANK"):
        assert metrics.sample("ragbot_stage_seconds_count", pipeline="rag_stream", stage=stage) == 2


def test_a_platforms_failure_counters_read_0_from_its_first_stream_on() -> None:
    metrics = ChatMetrics()
    assert metrics.sample("ragbot_chat_undelivered_total", platform="slack") is None
    observer = metrics.observer("slack")
    for name in ("ragbot_chat_undelivered_total", "ragbot_chat_rate_limited_total", "ragbot_platform_errors_total"):
        assert metrics.sample(name, platform="slack") == 0
    observer.platform_error()
    observer.rate_limited()
    observer.edit_sent()
    metrics.turn("slack", "", 1.5)
    assert metrics.sample("ragbot_platform_errors_total", platform="slack") == 1
    assert metrics.sample("ragbot_chat_rate_limited_total", platform="slack") == 1
    assert metrics.sample("ragbot_chat_edits_total", platform="slack") == 1
    assert metrics.sample("ragbot_chat_turns_total", platform="slack", outcome="unknown") == 1


def test_each_registry_is_its_own_and_holds_the_process_figures_beside_ragbots() -> None:
    services, chat = ServiceMetrics(), ChatMetrics()
    first = registry_of(*services.groups(), chat, PartMetrics(lambda: 3, lambda: 4))
    second = registry_of(*ServiceMetrics().groups(), ChatMetrics(), PartMetrics(lambda: 0, lambda: 0))
    services.scheduler.scheduler_run("ingest", "queued")
    chat.turn("web", "generated", 0.2)
    assert first.get_sample_value("ragbot_scheduler_runs_total", {"schedule_kind": "ingest", "outcome": "queued"}) == 1
    assert first.get_sample_value("ragbot_chat_turns_total", {"platform": "web", "outcome": "generated"}) == 1
    assert first.get_sample_value("ragbot_embedding_cache_hits_total") == 3
    assert second.get_sample_value("ragbot_chat_turns_total", {"platform": "web", "outcome": "generated"}) is None
    names = {family.name for family in text_string_to_metric_families(generate_latest(first).decode())}
    assert {"process_resident_memory_bytes", "process_open_fds", "python_info", "ragbot_scheduler_runs"} <= names


def test_part_health_shows_as_1_or_0_per_part() -> None:
    parts = PartMetrics(lambda: 0, lambda: 0)
    parts.show({"db": True, "model": False})
    assert (parts.sample("ragbot_part_up", part="db"), parts.sample("ragbot_part_up", part="model")) == (1, 0)
    uptime = parts.sample("ragbot_uptime_seconds")
    assert uptime is not None
    assert uptime >= 0


async def test_the_tasks_of_the_serving_loop_are_counted_at_each_scrape() -> None:
    registry = registry_of()
    before = registry.get_sample_value("ragbot_asyncio_tasks")
    assert before is not None
    release = asyncio.Event()
    waiting = [asyncio.create_task(release.wait()) for _ in range(5)]
    assert registry.get_sample_value("ragbot_asyncio_tasks") == before + 5
    release.set()
    await asyncio.gather(*waiting)
    assert registry.get_sample_value("ragbot_asyncio_tasks") == before


def test_off_the_loop_the_task_count_is_left_out() -> None:
    assert registry_of().get_sample_value("ragbot_asyncio_tasks") is None
