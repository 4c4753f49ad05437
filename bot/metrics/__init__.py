"""Every figure /metrics shows, as prometheus-client metrics that each app's own registry collects.

`ServiceMetrics` (one per build_services) holds the stage timings, the chat model's tokens and errors, the ingestion
jobs and the scheduler's runs; `ChatMetrics` the chat side (turns, first visible text, edits, 429s, platform
errors, undelivered answers); `PartMetrics` the parts' health. `registry_of` puts them in a registry beside the
process's own figures.
"""

from bot.metrics.chat import CHAT_BUCKETS, ChatMetrics, PlatformObserver
from bot.metrics.group import MetricGroup
from bot.metrics.model import ModelMetrics
from bot.metrics.parts import PartMetrics
from bot.metrics.service import ServiceMetrics, registry_of
from bot.metrics.stages import STAGE_BUCKETS, StageMetrics
from bot.metrics.work import JOB_BUCKETS, JobMetrics, SchedulerMetrics

__all__ = [
    "CHAT_BUCKETS",
    "JOB_BUCKETS",
    "STAGE_BUCKETS",
    "ChatMetrics",
    "JobMetrics",
    "MetricGroup",
    "ModelMetrics",
    "PartMetrics",
    "PlatformObserver",
    "SchedulerMetrics",
    "ServiceMetrics",
    "StageMetrics",
    "registry_of",
]
