"""Stage timings of every pipeline run, kept as Prometheus histograms for /metrics."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from rag.pipeline import StageReport

# Upper bounds in seconds: a stage takes from well under a millisecond (FILTER_TOP_K) to seconds (a model).
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(slots=True)
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: int = 0
    seconds: float = 0.0

    def add(self, seconds: float) -> None:
        index = bisect.bisect_left(BUCKETS, seconds)
        if index < len(BUCKETS):
            self.counts[index] += 1
        self.total += 1
        self.seconds += seconds


class StageMetrics:
    """Per (pipeline, stage) duration histograms; `observe` is a pipeline's StageObserver."""

    def __init__(self) -> None:
        self._histograms: dict[tuple[str, str], _Histogram] = {}

    def observe(self, pipeline: str, report: StageReport) -> None:
        """Count one stage run."""
        self._histograms.setdefault((pipeline, report.name), _Histogram()).add(report.ms / 1000)

    def render(self) -> list[str]:
        """Prometheus text lines for `ragbot_stage_seconds` (cumulative buckets, sum, count)."""
        lines = ["# TYPE ragbot_stage_seconds histogram"]
        for (pipeline, stage), histogram in sorted(self._histograms.items()):
            labels = f'pipeline="{pipeline}",stage="{stage}"'
            running = 0
            for bound, count in zip(BUCKETS, histogram.counts, strict=True):
                running += count
                lines.append(f'ragbot_stage_seconds_bucket{{{labels},le="{bound:g}"}} {running}')
            lines.append(f'ragbot_stage_seconds_bucket{{{labels},le="+Inf"}} {histogram.total}')
            lines.append(f"ragbot_stage_seconds_sum{{{labels}}} {histogram.seconds:.6f}")
            lines.append(f"ragbot_stage_seconds_count{{{labels}}} {histogram.total}")
        return lines
