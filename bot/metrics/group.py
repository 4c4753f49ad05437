"""MetricGroup: prometheus-client metrics registered on no registry, so each app's own registry collects them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from prometheus_client.metrics_core import Metric


class _Collected(Protocol):
    def describe(self) -> Iterable[Metric]: ...

    def collect(self) -> Iterable[Metric]: ...


M = TypeVar("M", bound=_Collected)


class MetricGroup:
    """A few related metrics that any number of registries collect (a process builds many apps in tests, and the
    global default registry would see every test's figures at once)."""

    def __init__(self) -> None:
        self._metrics: list[_Collected] = []

    def _add(self, metric: M) -> M:
        """Keep `metric` (built with `registry=None`) in this group."""
        self._metrics.append(metric)
        return metric

    def describe(self) -> Iterator[Metric]:
        """The families this group exposes, without samples (a registry checks names against its others)."""
        for metric in self._metrics:
            yield from metric.describe()

    def collect(self) -> Iterator[Metric]:
        """The families with their samples now."""
        for metric in self._metrics:
            yield from metric.collect()

    def sample(self, name: str, **labels: str) -> float | None:
        """The value of one sample (`ragbot_chat_turns_total`, platform="web", ...); None when it has none."""
        for family in self.collect():
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return sample.value
        return None
