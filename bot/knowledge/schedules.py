"""Scheduled work: APScheduler in every serving process is only the clock; the database decides who runs a firing.

APScheduler 3's own FAQ warns that a job store shared by several processes runs jobs twice or misses them, so no
job store is shared. Each process keeps one interval job per schedule row, aligned to the epoch so every process's
clock fires at the same moments, and each firing inserts (schedule, tick) into a table where that pair is unique:
the one process whose insert succeeds runs it (on one SQLite process as on many instances on PostgreSQL). A URL
re-sync becomes an ingestion job, which the job runner claims and leases like any other (and a crashed runner's
job is taken over); the retention sweep runs in the process that claimed it, and the next tick repeats what a
crash cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from bot.errors import UserFacingError
from bot.knowledge.ingestion import URL_KINDS
from bot.knowledge.retention import Retention
from bot.types import ConversationKey
from bot.words import messages
from bot.words.catalogue import DEFAULT_LANGUAGE
from storage.errors import NotFound
from storage.records import JobRecord, ScheduleRecord
from storage.repos.jobs import JobRepo
from storage.repos.schedules import RunOutcome, ScheduleRepo

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = logging.getLogger(__name__)

URL_SYNC: Final = "url_sync"
RETENTION: Final = "retention"
SYNC_DEFAULT: Final = "sync_default"
"""A knowledge base's default period for the URLs ingested into it without `--every` (a row that never fires)."""
FIRING_KINDS: Final = (URL_SYNC, RETENTION)
# Failures in a row after which the chat that set a schedule is told.
TELL_AFTER: Final = 3
# Statuses of a gone page: reported, not deleted (a moved page, an outage of the site's routing).
GONE_STATUSES: Final = frozenset({404, 410})
_UNITS: Final = {"m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_EVERY = re.compile(r"(\d{1,4})\s*([mhdw])", re.IGNORECASE)
MIN_EVERY: Final = 15 * 60
MAX_EVERY: Final = 365 * 86_400
# How long a stopping process waits for the firings it started (a retention batch, a sync being queued).
_STOP_WAIT = 5.0


class EveryError(UserFacingError):
    """A schedule period that does not parse or is out of bounds."""

    @classmethod
    def missing(cls) -> EveryError:
        """`--every` with no period after it."""
        return cls(
            messages.bad_every("--every", DEFAULT_LANGUAGE),
            in_language=lambda lang: messages.bad_every("--every", lang),
        )


def parse_every(text: str, *, minimum: int = MIN_EVERY) -> int:
    """Seconds in a period written as a number and a unit (`30m`, `6h`, `1d`, `2w`)."""
    match = _EVERY.fullmatch(text.strip())
    if match is None:
        raise EveryError(
            messages.bad_every(text, DEFAULT_LANGUAGE), in_language=lambda lang: messages.bad_every(text, lang)
        )
    seconds = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if not minimum <= seconds <= MAX_EVERY:
        raise EveryError(
            messages.every_out_of_bounds(text, minimum, MAX_EVERY, DEFAULT_LANGUAGE),
            in_language=lambda lang: messages.every_out_of_bounds(text, minimum, MAX_EVERY, lang),
        )
    return seconds


def next_run(every_seconds: int, now: datetime) -> datetime:
    """When a schedule fires next: its clocks are aligned to the epoch."""
    return datetime.fromtimestamp((int(now.timestamp()) // every_seconds + 1) * every_seconds, UTC)


class Submitting(Protocol):
    """What queues a sync (met by bot.knowledge.jobs.JobRunner)."""

    async def submit(
        self,
        kb_id: str,
        kind: str,
        source: str,
        *,
        requested_by: str = "",
        requested_from: dict[str, Any] | None = None,
    ) -> JobRecord:
        """Store a queued job and hand it to the workers."""
        ...


Tell = Callable[[ConversationKey, Callable[[str], str]], Awaitable[bool]]
"""Posts a notice into a chat (ConversationManager.tell): the chat and its text in a language."""
RunObserver = Callable[[str, str], None]
"""Counts one run of a schedule: its kind and how it went (`ran`, `skipped`, `failed`)."""


@dataclass(frozen=True, slots=True)
class SchedulerParts:
    """What the scheduler reads and drives."""

    schedules: ScheduleRepo
    jobs: Submitting
    job_repo: JobRepo
    retention: Retention


class Scheduler:
    """The clock of one process, and what each firing it wins does."""

    def __init__(
        self,
        parts: SchedulerParts,
        *,
        owner: str,
        retention_every: int,
        refresh_every: float = 60.0,
        wall: Callable[[], float] = time.time,
        observe: RunObserver | None = None,
    ) -> None:
        self._parts = parts
        self._owner = owner
        self._retention_every = retention_every
        self._refresh_every = refresh_every
        self._wall = wall
        self._observe = observe
        self._tell: Tell | None = None
        self._clock: AsyncIOScheduler | None = None
        self._periods: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def tell_through(self, tell: Tell) -> None:
        """Where notices about failing schedules go (set once the chat side exists)."""
        self._tell = tell

    async def start(self) -> None:
        """Store the retention schedule, read every schedule and start the clock."""
        # Imported here: every command checks RETENTION_EVERY with parse_every, and only `serve` runs a clock.
        from apscheduler.schedulers.asyncio import AsyncIOScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        await self._parts.schedules.put(RETENTION, self._retention_every)
        self._clock = AsyncIOScheduler(timezone=UTC)
        self._clock.add_job(self._spawning(self.refresh), IntervalTrigger(seconds=self._refresh_every), id="refresh")
        await self.refresh()
        self._clock.start()

    async def stop(self) -> None:
        """Stop the clock; firings already started get a few seconds to finish."""
        if self._clock is not None and self._clock.running:
            self._clock.shutdown(wait=False)
        self._clock = None
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=_STOP_WAIT)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def refresh(self) -> None:
        """Match the clock's jobs to the schedule rows (added, removed or changed by any process)."""
        from apscheduler.jobstores.base import JobLookupError
        from apscheduler.triggers.interval import IntervalTrigger

        clock = self._clock
        if clock is None:
            return
        rows = {row.id: row for row in await self._parts.schedules.all() if row.kind in FIRING_KINDS}
        for gone in set(self._periods) - set(rows):
            with contextlib.suppress(JobLookupError):
                clock.remove_job(gone)
            del self._periods[gone]
        for row in rows.values():
            if self._periods.get(row.id) == row.every_seconds:
                continue
            # Aligned to the epoch: every process's clock fires a schedule at the same moments.
            trigger = IntervalTrigger(seconds=row.every_seconds, start_date=datetime.fromtimestamp(0, UTC))
            clock.add_job(
                self._spawning(self.fire, row.id),
                trigger,
                id=row.id,
                replace_existing=True,
                coalesce=True,
                max_instances=1,
                misfire_grace_time=max(1, row.every_seconds // 2),
            )
            self._periods[row.id] = row.every_seconds

    def _spawning(self, work: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Callable[[], Awaitable[None]]:
        """An APScheduler job that starts `work` as a task of this scheduler, which stop() waits for."""

        async def due() -> None:
            task = asyncio.create_task(self._guarded(work, *args), name=f"schedule-{work.__name__}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return due

    async def _guarded(self, work: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        try:
            await work(*args)
        except Exception:
            # A firing's boundary: the database out of reach or a bug must not stop the clock; the next tick retries.
            log.exception("schedule=failed work=%s", work.__name__)

    async def fire(self, schedule_id: str) -> bool:
        """One firing: claim this tick of the schedule and, when this process won it, run it. True when it ran."""
        try:
            schedule = await self._parts.schedules.get(schedule_id)
        except NotFound:
            return False
        tick = int(self._wall() // schedule.every_seconds)
        if not await self._parts.schedules.claim_tick(schedule.id, tick, self._owner):
            self._count(schedule.kind, "skipped")
            return False
        await self.run(schedule)
        return True

    async def run(self, schedule: ScheduleRecord) -> None:
        """Do a schedule's work now (a firing this process won, or `/sync`)."""
        if schedule.kind == URL_SYNC:
            await self._sync(schedule)
        elif schedule.kind == RETENTION:
            await self._sweep(schedule)

    async def _sync(self, schedule: ScheduleRecord) -> None:
        if await self._parts.job_repo.unfinished(schedule.kb_id, "sync", schedule.source) is not None:
            log.info("schedule=busy id=%s source=%s", schedule.id, schedule.source)
            self._count(URL_SYNC, "skipped")
            return
        await self._parts.jobs.submit(
            schedule.kb_id, "sync", schedule.source, requested_by="schedule", requested_from=schedule.requested_from
        )
        self._count(URL_SYNC, "ran")

    async def _sweep(self, schedule: ScheduleRecord) -> None:
        try:
            summary = await self._parts.retention.sweep()
        except Exception as exc:
            await self._parts.schedules.record_run(schedule.id, RunOutcome(False, f"failed: {exc}"))
            self._count(RETENTION, "failed")
            raise
        await self._parts.schedules.record_run(schedule.id, RunOutcome(True, summary))
        self._count(RETENTION, "ran")

    async def job_changed(self, job: JobRecord) -> None:
        """A job runner's listener: a finished URL job of a scheduled source records how its sync went."""
        if job.kind not in URL_KINDS or job.status not in ("succeeded", "failed"):
            return
        schedule = await self._parts.schedules.find(URL_SYNC, kb_id=job.kb_id, source=job.source)
        if schedule is None:
            return
        run = sync_outcome(job)
        stored = await self._parts.schedules.record_run(schedule.id, run)
        if stored is None or run.ok:
            return
        if job.kind == "sync":
            self._count(URL_SYNC, "failed")
        gone = _gone_status(job)
        if (gone is not None and stored.failures == 1) or stored.failures == TELL_AFTER:
            await self._tell_admins(stored, gone)

    async def _tell_admins(self, schedule: ScheduleRecord, gone: int | None) -> None:
        where = schedule.requested_from
        if self._tell is None or not where.get("platform") or not where.get("chat"):
            log.warning("schedule=failing id=%s source=%s failures=%d", schedule.id, schedule.source, schedule.failures)
            return
        key = ConversationKey(str(where["platform"]), str(where.get("workspace", "")), str(where["chat"]))

        def text_in(lang: str) -> str:
            if gone is not None:
                return messages.sync_gone(schedule.source, gone, lang)
            return messages.sync_failing(schedule.source, schedule.failures, schedule.last_outcome, lang)

        if not await self._tell(key, text_in):
            log.warning("schedule=notice_undelivered id=%s chat=%s", schedule.id, key.chat)

    def _count(self, kind: str, outcome: str) -> None:
        if self._observe is not None:
            self._observe(kind, outcome)


def sync_outcome(job: JobRecord) -> RunOutcome:
    """How a URL job's run reads on its schedule, with the validators its server sent."""
    result = job.result
    etag = result.get("etag")
    last_modified = result.get("last_modified")
    if job.status == "failed":
        return RunOutcome(False, f"failed: {job.error}")
    if result.get("not_modified"):
        said = "not modified"
    elif result.get("unchanged"):
        said = "unchanged"
    else:
        said = f"updated: {int(result.get('chunks', 0))} chunks"
    return RunOutcome(
        True,
        said,
        etag=str(etag) if etag is not None else None,
        last_modified=str(last_modified) if last_modified is not None else None,
        conditional=bool(result.get("conditional")),
    )


def _gone_status(job: JobRecord) -> int | None:
    failure = job.result.get("failure", {})
    details = failure.get("details", {}) if isinstance(failure, dict) else {}
    status = details.get("status") if isinstance(details, dict) else None
    return status if isinstance(status, int) and status in GONE_STATUSES else None
