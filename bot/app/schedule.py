"""The scheduler of one serving process, over its services, telling its chats through the conversation manager."""

from __future__ import annotations

from bot.app.services import Services
from bot.chat.manager import ConversationManager
from bot.knowledge.retention import Retention
from bot.knowledge.schedules import Scheduler, SchedulerParts, parse_every
from bot.knowledge.uploads import UploadFolder
from storage.repos.retention import RetentionRepo


def build_scheduler(services: Services, manager: ConversationManager, *, owner: str) -> Scheduler:
    """The clock and the work of every schedule, counted in /metrics; its sync jobs' outcomes are recorded as the job
    runner ends them."""
    settings = services.settings
    retention = Retention(
        RetentionRepo(services.db),
        settings.retention_policy(),
        jobs=services.job_repo,
        uploads=UploadFolder(settings.data_dir / "uploads"),
    )
    parts = SchedulerParts(services.schedules, services.jobs, services.job_repo, retention)
    every = parse_every(settings.RETENTION_EVERY)
    scheduler = Scheduler(parts, owner=owner, retention_every=every, observe=services.metrics.scheduler.scheduler_run)
    scheduler.tell_through(manager.tell)
    services.jobs.subscribe(scheduler.job_changed)
    return scheduler
