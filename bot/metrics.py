"""Every figure /metrics shows: stage timings of each pipeline run, and the chat side (turns, first text, 429s)."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from rag.pipeline import StageReport

# Upper bounds in seconds: a stage takes from well under a millisecond (FILTER_TOP_K) to seconds (a model).
STAGE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Histogram:
    """A Prometheus histogram: counts per upper bound, total count and sum."""

    def __init__(self, buckets: Sequence[float] = STAGE_BUCKETS) -> None:
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


# Time to first visible text and turn length: from a fast FAQ answer (~50 ms) to a slow model (~a minute).
CHAT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0)


class ChatMetrics:
    """Counters and histograms of the chat side; also the StreamObserver of every reply stream."""

    def __init__(self) -> None:
        self._turns: Counter[tuple[str, str]] = Counter()
        self._edits: Counter[str] = Counter()
        self._rate_limited: Counter[str] = Counter()
        self._undelivered: Counter[str] = Counter()
        self._first_visible: dict[str, Histogram] = {}
        self._turn_seconds: dict[str, Histogram] = {}

    def turn(self, platform: str, outcome: str, seconds: float) -> None:
        """Count one finished turn."""
        self._turns[platform, outcome or "unknown"] += 1
        self._turn_seconds.setdefault(platform, Histogram(CHAT_BUCKETS)).add(seconds)

    def first_visible(self, platform: str, seconds: float) -> None:
        """How long a person waited for the first text of an answer."""
        self._first_visible.setdefault(platform, Histogram(CHAT_BUCKETS)).add(seconds)

    def edit_sent(self, platform: str) -> None:
        """One message sent or edited on a platform."""
        self._edits[platform] += 1

    def rate_limited(self, platform: str) -> None:
        """One 429 (or the platform's "slow down") met."""
        self._rate_limited[platform] += 1

    def undelivered(self, platform: str) -> None:
        """An answer whose final text could not be delivered: must stay 0."""
        self._undelivered[platform] += 1

    def observer(self, platform: str) -> PlatformObserver:
        """A reply stream's observer that counts into this platform's figures."""
        return PlatformObserver(self, platform)

    def render(self) -> list[str]:
        """Prometheus text lines."""
        lines = ["# TYPE ragbot_chat_turns_total counter"]
        lines += [
            f'ragbot_chat_turns_total{{platform="{p}",outcome="{o}"}} {n}' for (p, o), n in sorted(self._turns.items())
        ]
        for name, counter in (
            ("ragbot_chat_edits_total", self._edits),
            ("ragbot_chat_rate_limited_total", self._rate_limited),
            ("ragbot_chat_undelivered_total", self._undelivered),
        ):
            lines.append(f"# TYPE {name} counter")
            lines += [f'{name}{{platform="{p}"}} {n}' for p, n in sorted(counter.items())]
        for name, histograms in (
            ("ragbot_chat_first_visible_seconds", self._first_visible),
            ("ragbot_chat_turn_seconds", self._turn_seconds),
        ):
            lines.append(f"# TYPE {name} histogram")
            for platform, histogram in sorted(histograms.items()):
                lines += histogram.render(name, f'platform="{platform}"')
        return lines


class PlatformObserver:
    """Counts one platform's stream events into ChatMetrics (bot.reply.stream.StreamObserver)."""

    def __init__(self, metrics: ChatMetrics, platform: str) -> None:
        self._metrics = metrics
        self._platform = platform

    def first_visible(self, seconds: float) -> None:
        """See ChatMetrics.first_visible."""
        self._metrics.first_visible(self._platform, seconds)

    def edit_sent(self) -> None:
        """See ChatMetrics.edit_sent."""
        self._metrics.edit_sent(self._platform)

    def rate_limited(self) -> None:
        """See ChatMetrics.rate_limited."""
        self._metrics.rate_limited(self._platform)

    def undelivered(self) -> None:
        """See ChatMetrics.undelivered."""
        self._metrics.undelivered(self._platform)
