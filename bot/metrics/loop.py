"""`ragbot_asyncio_tasks`: the tasks alive on the serving loop, read at each scrape (a soak watches it stay flat)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector


class LoopTasks(Collector):
    """Counts the event loop's tasks when scraped from it; nothing when scraped off the loop (no loop to count)."""

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("ragbot_asyncio_tasks", "Tasks alive on the serving event loop.")

    def collect(self) -> Iterator[Metric]:
        try:
            count = len(asyncio.all_tasks())
        except RuntimeError:
            return
        yield GaugeMetricFamily("ragbot_asyncio_tasks", "Tasks alive on the serving event loop.", value=count)
