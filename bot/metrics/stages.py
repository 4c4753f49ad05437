"""Each pipeline stage's durations, as the histogram `ragbot_stage_seconds{pipeline,stage}`."""

from __future__ import annotations

from prometheus_client import Histogram

from bot.metrics.group import MetricGroup
from rag.pipeline import StageReport

# Upper bounds in seconds: a stage takes from well under a millisecond (FILTER_TOP_K) to seconds (a model).
STAGE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class StageMetrics(MetricGroup):
    """Per (pipeline, stage) duration histograms; `observe` is a pipeline's StageObserver."""

    def __init__(self) -> None:
        super().__init__()
        self._seconds = self._add(
            Histogram(
                "ragbot_stage_seconds",
                "How long each stage of each pipeline took.",
                ["pipeline", "stage"],
                buckets=STAGE_BUCKETS,
                registry=None,
            )
        )

    def observe(self, pipeline: str, report: StageReport) -> None:
        """Count one stage run."""
        self._seconds.labels(pipeline, report.name).observe(report.ms / 1000)
