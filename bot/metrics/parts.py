"""The running parts' figures: uptime, whether each part is up, and the embedding cache's hits and misses."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from prometheus_client import Gauge
from prometheus_client.metrics_core import CounterMetricFamily, Metric

from bot.metrics.group import MetricGroup


class _ReadCounter:
    """A counter whose value another object keeps (the embedding cache counts its own hits)."""

    def __init__(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        self._name = name
        self._documentation = documentation
        self._read = read

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation)]

    def collect(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation, value=self._read())]


class PartMetrics(MetricGroup):
    """`ragbot_uptime_seconds`, `ragbot_part_up{part}` and the embedding cache's hit and miss counters."""

    def __init__(
        self,
        cache_hits: Callable[[], float],
        cache_misses: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        started = clock()
        uptime = self._add(Gauge("ragbot_uptime_seconds", "Seconds since this server started.", registry=None))
        uptime.set_function(lambda: clock() - started)
        self._up = self._add(
            Gauge(
                "ragbot_part_up",
                "1 when the part answers (db, weaviate, embedder, model), else 0.",
                ["part"],
                registry=None,
            )
        )
        self._add(_ReadCounter("ragbot_embedding_cache_hits_total", "Embeddings read from the cache.", cache_hits))
        self._add(
            _ReadCounter("ragbot_embedding_cache_misses_total", "Embeddings the model had to compute.", cache_misses)
        )

    def show(self, up: Mapping[str, bool]) -> None:
        """Each part's latest health check."""
        for part, is_up in up.items():
            self._up.labels(part).set(int(is_up))
