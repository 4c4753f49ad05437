"""ServiceMetrics, the figures one set of running services keeps, and the registry an app exposes them from."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

from bot.metrics.group import MetricGroup
from bot.metrics.loop import LoopTasks
from bot.metrics.model import ModelMetrics
from bot.metrics.stages import StageMetrics
from bot.metrics.work import JobMetrics, SchedulerMetrics


@dataclass(frozen=True, slots=True)
class ServiceMetrics:
    """The figures of the parts build_services starts: pipeline stages, the chat model, jobs and schedules."""

    stages: StageMetrics = field(default_factory=StageMetrics)
    model: ModelMetrics = field(default_factory=ModelMetrics)
    jobs: JobMetrics = field(default_factory=JobMetrics)
    scheduler: SchedulerMetrics = field(default_factory=SchedulerMetrics)

    def groups(self) -> tuple[MetricGroup, ...]:
        """Every group, for a registry to collect."""
        return (self.stages, self.model, self.jobs, self.scheduler)


def registry_of(*groups: MetricGroup) -> CollectorRegistry:
    """A registry of its own (never the global default) with `groups` and the process's figures: memory, CPU,
    open files (where /proc exists), the Python version, the garbage collector and the event loop's tasks."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(LoopTasks())
    for group in groups:
        registry.register(group)
    return registry
