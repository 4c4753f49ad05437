"""Background work's figures: ingestion jobs ended (count, duration) and scheduler runs."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from bot.metrics.group import MetricGroup

# A job takes from a fraction of a second (an unchanged file) to an hour (a large folder embedded on 2 cores).
JOB_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


class JobMetrics(MetricGroup):
    """`ragbot_jobs_total{kind,outcome}` and `ragbot_job_seconds{kind}`: bot.knowledge.jobs.JobObserver."""

    def __init__(self) -> None:
        super().__init__()
        self._ended = self._add(
            Counter(
                "ragbot_jobs_total",
                "Ingestion jobs this process ran to an end, by kind and outcome (succeeded, failed).",
                ["kind", "outcome"],
                registry=None,
            )
        )
        self._seconds = self._add(
            Histogram(
                "ragbot_job_seconds",
                "How long an ingestion job ran, from its start to its end.",
                ["kind"],
                buckets=JOB_BUCKETS,
                registry=None,
            )
        )

    def job_ended(self, kind: str, outcome: str, seconds: float) -> None:
        """One job of `kind` ended with `outcome` after `seconds`."""
        self._ended.labels(kind, outcome).inc()
        self._seconds.labels(kind).observe(seconds)


class SchedulerMetrics(MetricGroup):
    """`ragbot_scheduler_runs_total{schedule_kind,outcome}`: what the scheduler calls on each firing it handled."""

    def __init__(self) -> None:
        super().__init__()
        self._runs = self._add(
            Counter(
                "ragbot_scheduler_runs_total",
                "Scheduled firings handled, by the schedule's kind and what came of them.",
                ["schedule_kind", "outcome"],
                registry=None,
            )
        )

    def scheduler_run(self, kind: str, outcome: str) -> None:
        """One firing of a schedule of `kind` (`url_sync`, `retention`) ended with `outcome` (`ran`, `skipped`: another
        process claimed the tick or its sync is still running, `failed`); each pair is a series kept for the
        process's life, so both stay a handful of fixed words."""
        self._runs.labels(kind, outcome).inc()
