"""Stage timings of every pipeline run, kept as Prometheus histograms for /metrics."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from rag.pipeline import StageReport

# Upper bounds in seconds: a stage takes from well under a millisecond (FILTER_TOP_K) to seconds (a model).
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Histogram:
    """A Prometheus histogram: counts per upper bound, total count and sum."""

    def __init__(self, buckets: Sequence[float] = BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * len(self.buckets)
        self.total = 0
        self.seconds = 0.0

    def add(self, seconds: float) -> None:
        """Count one observation."""
        index = bisect.bisect_left(self.buckets, seconds)
        if index < len(self.buckets):
            self.counts[index] += 1
        self.total += 1
        self.seconds += seconds

    def render(self, name: str, labels: str) -> list[str]:
        """Text lines: cumulative buckets, sum and count, each with `labels` (`a="b",c="d"`)."""
        lines = []
        running = 0
        for bound, count in zip(self.buckets, self.counts, strict=True):
            running += count
            lines.append(f'{name}_bucket{{{labels},le="{bound:g}"}} {running}')
        lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.total}')
        lines.append(f"{name}_sum{{{labels}}} {self.seconds:.6f}")
        lines.append(f"{name}_count{{{labels}}} {self.total}")
        return lines


class StageMetrics:
    """Per (pipeline, stage) duration histograms; `observe` is a pipeline's StageObserver."""

    def __init__(self) -> None:
        self._histograms: dict[tuple[str, str], Histogram] = {}

    def observe(self, pipeline: str, report: StageReport) -> None:
        """Count one stage run."""
        self._histograms.setdefault((pipeline, report.name), Histogram()).add(report.ms / 1000)

    def render(self) -> list[str]:
        """Prometheus text lines for `ragbot_stage_seconds` (cumulative buckets, sum, count)."""
        lines = ["# TYPE ragbot_stage_seconds histogram"]
        for (pipeline, stage), histogram in sorted(self._histograms.items()):
            lines += histogram.render("ragbot_stage_seconds", f'pipeline="{pipeline}",stage="{stage}"')
        return lines
