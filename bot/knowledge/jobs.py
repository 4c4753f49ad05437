"""The ingestion job runner: durable rows, a worker pool, leases that survive crashes, progress listeners."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import secrets
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Final, Protocol

from bot.errors import UserFacingError
from bot.knowledge.ingestion import stored_source
from bot.knowledge.uploads import UploadFolder
from bot.log_context import job_scope
from rag.errors import ExtractionError, FaqImportError, RagError
from rag.ports import Progress
from storage.errors import NotFound, StorageError, first_line
from storage.records import JobRecord
from storage.repos.jobs import JobRepo

log = logging.getLogger(__name__)

Work = Callable[[JobRecord, Progress], Awaitable[dict[str, Any]]]
BatchWork = Callable[
    [Sequence[JobRecord], Callable[[JobRecord], Progress]], Awaitable[Sequence[dict[str, Any] | Exception]]
]
"""Runs several jobs at once, given each job's progress reporter; one result or error per job, in order."""
Listener = Callable[[JobRecord], Awaitable[None]]
Clock = Callable[[], float]
"""A monotonic clock in seconds: the runner's own reckoning of when a lease must have lapsed."""
Wait = Callable[[float], Awaitable[None]]
MAX_ATTEMPTS = 3
FINISHED = ("succeeded", "failed")
# Seconds a finished job's event is kept for waiters already on their way; later ones read the database.
FORGET_AFTER: Final = 600.0
# The first retry after the database failed a worker or the heartbeat, doubled on each failure up to renew_every.
_FIRST_RETRY = 1.0


class JobObserver(Protocol):
    """What the runner reports for metrics (bot.metrics.JobMetrics implements it)."""

    def job_ended(self, kind: str, outcome: str, seconds: float) -> None:
        """A job this runner ran (or gave up on) ended `outcome` ("succeeded", "failed") `seconds` after it started."""
        ...


def failure_reason(exc: BaseException) -> str:
    """The one line an admin sees for a failed job."""
    if isinstance(exc, UserFacingError):
        return exc.user_message
    if isinstance(exc, RagError | StorageError):
        return first_line(exc)
    return f"internal error ({type(exc).__name__}); see the server log"


# How many of an FAQ sheet's problems a failed job keeps for the chat (the English error keeps five too).
_PROBLEMS_KEPT = 5


def failure_data(exc: BaseException) -> dict[str, Any]:
    """What a chat needs to word a failed job in its own language: the failure's reason id and its details.

    Stored as the failed job's result; `failure_reason` is the English line beside it (operators, logs).
    """
    if isinstance(exc, FaqImportError):
        problems = [[problem.row, problem.reason, dict(problem.details)] for problem in exc.found[:_PROBLEMS_KEPT]]
        more = max(0, len(exc.found) - _PROBLEMS_KEPT)
        return {"failure": {"reason": "faq_sheet", "problems": problems, "more": more}}
    if isinstance(exc, ExtractionError):
        return {"failure": {"reason": exc.reason, "details": dict(exc.details)}}
    if isinstance(exc, UserFacingError):
        return {}  # already said in words a person reads
    if isinstance(exc, RagError):
        return {"failure": {"reason": "model"}}
    if isinstance(exc, StorageError):
        return {"failure": {"reason": "storage"}}
    return {"failure": {"reason": "internal"}}


def runner_id() -> str:
    """A name for this runner that says where it runs: host, process id and a random tag."""
    return f"{socket.gethostname()[:80]}:{os.getpid()}:{secrets.token_hex(3)}"


class _LeaseLost(Exception):
    """This runner no longer holds the job (its lease lapsed, or another runner took it over): stop working on it."""


class _NotStarted(Exception):
    """The database failed while starting jobs: those not started stay held here and are queued again later."""


class JobRunner:
    """Runs jobs with bounded concurrency, holding each through a lease it renews while alive.

    A job this runner submits is held by it from the start. Every `renew_every` seconds a heartbeat
    renews the leases of the jobs it holds, stops work whose lease another runner took or that must have
    lapsed, settles jobs waited on but run elsewhere and, when started with `adopt=True` (the service),
    claims queued jobs nobody holds and running jobs whose runner died (its lease expired), as far as free
    workers allow. Given a `batch` work, a worker takes every job queued by then (up to `batch_size`) and
    runs them together.

    Leases are set and compared by the database's clock. This runner's own monotonic `clock` only tells it
    when a lease it could not renew must have lapsed (a whole lease after the last renewal it sent): its work
    on that job stops then, and the job's progress and outcome are written only while the lease is live in
    SQL, so a stalled runner and the one that took over never both finish a job. A database error never ends
    a worker or the heartbeat: each logs it, waits (`wait`, doubling from one second up to `renew_every`)
    and tries again, as long as the lease allows.
    """

    def __init__(
        self,
        jobs: JobRepo,
        work: Work,
        *,
        concurrency: int = 2,
        lease: float = 30.0,
        renew_every: float = 10.0,
        clock: Clock = time.monotonic,
        wait: Wait = asyncio.sleep,
        owner: str | None = None,
        batch: BatchWork | None = None,
        batch_size: int = 64,
        before_start: Callable[[], Awaitable[None]] | None = None,
        uploads: UploadFolder | None = None,
        observer: JobObserver | None = None,
    ) -> None:
        # A lease three heartbeats long survives two missed renewals (a slow database, a busy event loop).
        self._jobs = jobs
        self._work = work
        self._batch = batch
        self._batch_size = batch_size
        # Awaited before jobs start: the service waits out a reindex here, which would lose what they write.
        self._before_start = before_start
        self._concurrency = concurrency
        self._lease = lease
        self._renew_every = renew_every
        self._clock = clock
        self._wait = wait
        self.owner = owner or runner_id()
        self._adopt = False
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._heartbeat: asyncio.Task[None] | None = None
        self._listeners: list[Listener] = []
        self._finished: dict[str, asyncio.Event] = {}
        # When each job this runner saw end ended (by `clock`), oldest first: its event is dropped FORGET_AFTER later.
        self._ended: deque[tuple[float, str]] = deque()
        # The jobs this runner holds and renews, each with the moment (by `clock`) its lease must have lapsed.
        self._held: dict[str, float] = {}
        self._running: dict[str, asyncio.Task[dict[str, Any]]] = {}
        self._lost: set[str] = set()
        self._watched: set[str] = set()
        self._wake = asyncio.Event()
        self._round = asyncio.Lock()
        # Sources as given, by job id, where the stored one hides a credential: kept in memory only, so a job
        # another runner takes over after a crash fetches its URL without them (and says why it failed).
        self._given: dict[str, str] = {}
        # Where uploads are saved: each is removed when its job ends, and a restart sweeps those left behind.
        self._uploads = uploads
        self._observer = observer
        if uploads is not None:
            self._listeners.append(uploads.discard)

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` with the job on every status or progress change this runner sees."""
        self._listeners.append(listener)

    async def start(self, *, adopt: bool = True) -> None:
        """Start the workers and the heartbeat; with `adopt`, take over waiting and orphaned jobs too.

        `ragbot serve` adopts; a one-off command (`ragbot ingest`) runs only the jobs it submits or resumes.
        A job whose lease is still live belongs to a runner that is alive: it is never taken here.
        """
        self._adopt = adopt
        if adopt:
            if self._uploads is not None:
                await self._uploads.sweep(self._jobs)
            await self.claim_waiting()
        self._workers = [
            asyncio.create_task(self._worker(), name=f"ingest-worker-{i}") for i in range(self._concurrency)
        ]
        self._heartbeat = asyncio.create_task(self._beat(), name="ingest-heartbeat")

    async def stop(self) -> None:
        """Stop the heartbeat and workers; the jobs this runner held go back to the queue for any runner."""
        tasks = [*self._workers, *([self._heartbeat] if self._heartbeat else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers, self._heartbeat = [], None
        self._held.clear()
        try:
            released = await self._jobs.release(self.owner)
        except Exception:
            # Part of the job boundary: the database out of reach at shutdown; the leases lapse by themselves.
            log.exception(
                "jobs=release_failed owner=%s; other runners take them over once their leases lapse", self.owner
            )
            return
        if released:
            log.info("jobs=released owner=%s count=%d", self.owner, released)

    async def submit(
        self,
        kb_id: str,
        kind: str,
        source: str,
        *,
        requested_by: str = "",
        requested_from: dict[str, Any] | None = None,
        resume: bool = False,
    ) -> JobRecord:
        """Store a queued job held by this runner and hand it to the workers.

        With `resume`, an unfinished job for the same source (left by an interrupted run) is taken over
        instead of adding a second one; when a live runner holds it, this runner waits on it instead.
        """
        stored = stored_source(kind, source)
        if resume:
            existing = await self._jobs.unfinished(kb_id, kind, stored)
            if existing is not None:
                if stored != source:
                    self._given[existing.id] = source
                return await self._resume(existing)
        sent = self._clock()
        job = await self._jobs.create(
            kb_id,
            kind,
            stored,
            requested_by=requested_by,
            requested_from=requested_from,
            owner=self.owner,
            lease=self._lease,
        )
        if stored != source:
            self._given[job.id] = source
        self._enqueue(job.id, sent)
        await self._notify(job)
        return job

    async def wait(self, job_id: str) -> JobRecord:
        """Wait until the job has succeeded or failed, wherever it runs."""
        event = self._finished.setdefault(job_id, asyncio.Event())
        if job_id not in self._held and not event.is_set():
            job = await self._jobs.get(job_id)
            if job.status in FINISHED:
                self._ended_now(job_id, event)
                return job
            self._watched.add(job_id)
        await event.wait()
        return await self._jobs.get(job_id)

    async def heartbeat(self) -> None:
        """One round: renew leases, drop work another runner took or whose lease must have lapsed, settle watched
        jobs, claim waiting ones. Raises what the database raises (after dropping what it must)."""
        async with self._round:
            try:
                await self._renew()
            finally:
                self._drop_lapsed()
            for job_id in list(self._watched):
                await self._settle(job_id)
            if self._adopt:
                await self.claim_waiting()

    async def claim_waiting(self) -> int:
        """Claim queued jobs nobody holds and orphaned running ones, up to the free workers; how many were claimed."""
        free = self._concurrency - len(self._held)
        if free <= 0:
            return 0
        claimed = 0
        for job in await self._jobs.claimable(limit=free):
            claimed += await self._take(job, lapsed_only=True) is not None
        return claimed

    async def run_jobs(self, job_ids: Sequence[str]) -> list[JobRecord]:
        """Run jobs to succeeded or failed: the job boundary, where any error is caught and recorded per job.

        With a batch work, the jobs run together (one folder's small files share the embedding call, the
        upsert and the transaction), each still succeeding or failing on its own; should the batch as a
        whole break, each job runs again alone. Returns each job as it stands; one another runner holds
        is only watched from here. Raises _NotStarted, after running the others, when the database failed to
        start some: those stay held, for the worker to queue again.
        """
        if self._before_start is not None:
            await self._before_start()
        started, unstarted = await self._start_all(job_ids)
        outcomes = await self._perform_held(started)
        results: list[JobRecord] = []
        ran = {job.id: job for job in started}
        for job_id in dict.fromkeys(job_ids):
            if job_id in unstarted:
                continue
            try:
                finished = await self._record(ran[job_id], outcomes.get(job_id)) if job_id in ran else None
                if finished is None:
                    results.append(await self._follow(job_id))
                    continue
            except NotFound:
                log.info("job=deleted id=%s", job_id)
                self._held.pop(job_id, None)
                continue
            self._count(finished)
            await self._finish(finished)
            results.append(finished)
        if unstarted:
            raise _NotStarted(unstarted)
        return results

    async def _start_all(self, job_ids: Sequence[str]) -> tuple[list[JobRecord], list[str]]:
        """Mark the jobs running for this runner: those started, and those the database failed to start."""
        started: list[JobRecord] = []
        unstarted: list[str] = []
        for job_id in dict.fromkeys(job_ids):
            if unstarted:
                unstarted.append(job_id)  # the database just failed: the rest waits for the retry too
                continue
            sent = self._clock()
            try:
                job = await self._jobs.start(job_id, self.owner, lease=self._lease)
            except NotFound:
                log.info("job=deleted id=%s", job_id)
                self._held.pop(job_id, None)
                continue
            except Exception:
                # Part of the job boundary: the database out of reach must not end the worker (nor leave the
                # job held here and renewed for ever with nobody running it).
                log.warning("job=start_failed id=%s owner=%s", job_id, self.owner, exc_info=True)
                unstarted.append(job_id)
                continue
            if job is None:
                if job_id not in self._running:
                    self._held.pop(job_id, None)
                continue
            self._hold(job_id, sent)
            await self._notify(job)
            started.append(job)
        return started, unstarted

    async def _perform_held(self, started: list[JobRecord]) -> dict[str, dict[str, Any] | BaseException]:
        """The outcome of each started job's work; none for work stopped because its lease was lost."""
        if not started:
            return {}
        # Its own task, so that losing the lease can stop this work without stopping the worker.
        task = asyncio.create_task(self._perform(started), name=f"ingest-job-{started[0].id}")
        for job in started:
            self._running[job.id] = task
        try:
            return await task
        except asyncio.CancelledError:
            if not any(job.id in self._lost for job in started) or self._cancelling():
                raise
            return {}
        finally:
            for job in started:
                self._running.pop(job.id, None)
                self._lost.discard(job.id)

    async def _perform(self, jobs: list[JobRecord]) -> dict[str, dict[str, Any] | BaseException]:
        """Each job's result or error: all at once through the batch work, else one by one."""
        if self._batch is not None and len(jobs) > 1:
            try:
                # The lines of a batch's shared steps (embedding, upsert) carry every one of its jobs' ids.
                with job_scope(",".join(job.id for job in jobs)):
                    outcomes = await self._batch([self._as_given(job) for job in jobs], self._progress)
            except _LeaseLost:
                log.warning("jobs=batch_lost_a_lease count=%d; running them one by one", len(jobs))
            except Exception:
                # Part of the job boundary: a bug one file triggers must fail that file alone, not its batch.
                log.exception("jobs=batch_failed count=%d; running them one by one", len(jobs))
            else:
                return {job.id: outcome for job, outcome in zip(jobs, outcomes, strict=True)}
        return {job.id: await self._perform_one(job) for job in jobs}

    async def _perform_one(self, job: JobRecord) -> dict[str, Any] | BaseException:
        if job.id not in self._held:
            return _LeaseLost(job.id)
        try:
            with job_scope(job.id):
                return await self._work(self._as_given(job), self._progress(job))
        except Exception as exc:
            return exc

    def _as_given(self, job: JobRecord) -> JobRecord:
        """The job with its source as given (credentials included) for the work; only its stored form is kept."""
        given = self._given.get(job.id)
        return job if given is None else dataclasses.replace(job, source=given)

    def _progress(self, job: JobRecord) -> Progress:
        """Where `job`'s work reports its stage: the job row, then the listeners; raises once the lease is lost."""

        async def progress(stage: str, done: int, total: int) -> None:
            if not self._holds(job.id):
                raise _LeaseLost(job.id)
            current = await self._jobs.progress(job.id, self.owner, stage, done, total)
            if current is None:
                raise _LeaseLost(job.id)
            await self._notify(current)

        return progress

    async def _record(self, job: JobRecord, outcome: dict[str, Any] | BaseException | None) -> JobRecord | None:
        """Store how the job ended, retrying while its lease lasts; None when it did not end here (its lease was lost
        or lapsed, or it was taken over): the job is then watched instead, and run again by whoever takes it."""
        if outcome is None or isinstance(outcome, _LeaseLost):
            self._lose(job.id)
            return None
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, RagError | UserFacingError):
                log.error("job=failed id=%s kind=%s", job.id, job.kind, exc_info=outcome)
            else:
                log.warning("job=failed id=%s kind=%s reason=%s", job.id, job.kind, failure_reason(outcome))
        failures = 0
        while self._holds(job.id):
            try:
                recorded = await self._store_outcome(job, outcome)
            except NotFound:
                raise
            except Exception:
                # Part of the job boundary: the work is done; losing its outcome to a database blip would run it again.
                failures += 1
                log.warning("job=record_failed id=%s attempt=%d", job.id, failures, exc_info=True)
                await self._wait(self._backoff(failures))
                continue
            if recorded is None:
                log.warning("job=taken_over id=%s owner=%s", job.id, self.owner)
                break
            self._held.pop(job.id, None)
            return recorded
        log.warning("job=outcome_not_recorded id=%s owner=%s: no longer held here", job.id, self.owner)
        self._lose(job.id)
        return None

    async def _store_outcome(self, job: JobRecord, outcome: dict[str, Any] | BaseException) -> JobRecord | None:
        if isinstance(outcome, BaseException):
            return await self._jobs.fail(job.id, self.owner, failure_reason(outcome), failure_data(outcome))
        return await self._jobs.succeed(job.id, self.owner, outcome)

    async def _resume(self, job: JobRecord) -> JobRecord:
        if job.id in self._held:
            return job
        taken = await self._take(job)
        if taken is None:
            # A live runner holds it (or it just ended): follow it from here.
            return await self._follow(job.id)
        return taken

    async def _take(self, job: JobRecord, *, lapsed_only: bool = False) -> JobRecord | None:
        """Hold `job` (queued nobody holds, or orphaned) and queue it here; fail it if it keeps killing runners.

        With `lapsed_only`, a job whose lease this runner itself still has in SQL (but let go of) is not taken.
        """
        if job.id in self._held:
            return None
        if job.status == "running" and job.attempts >= MAX_ATTEMPTS:
            failed = await self._jobs.abandon(
                job.id,
                f"interrupted {job.attempts} times (the process stopped while running it); giving up",
                result={"failure": {"reason": "interrupted", "details": {"attempts": job.attempts}}},
            )
            if failed is not None:
                log.warning("job=abandoned id=%s attempts=%d", job.id, job.attempts)
                self._count(failed)
                await self._finish(failed)
            return failed
        sent = self._clock()
        taken = await self._jobs.reserve(job.id, self.owner, lease=self._lease, lapsed_only=lapsed_only)
        if taken is None:
            return None
        if job.status == "running":
            log.warning("job=taken_over id=%s from=%s attempts=%d", job.id, job.lease_owner or "-", job.attempts)
        self._enqueue(job.id, sent)
        await self._notify(taken)
        return taken

    async def _follow(self, job_id: str) -> JobRecord:
        """Watch a job another runner holds (or that just ended) until it ends; the job as it stands now."""
        self._finished.setdefault(job_id, asyncio.Event())
        self._watched.add(job_id)
        await self._settle(job_id)
        return await self._jobs.get(job_id)

    async def _settle(self, job_id: str) -> None:
        """A job waited on but not run here: finish the wait when it ended, take it once its lease lapsed."""
        try:
            job = await self._jobs.get(job_id)
        except NotFound:
            # Deleted with its knowledge base: release the waiters, whose own lookup then says so.
            self._watched.discard(job_id)
            self._finished.setdefault(job_id, asyncio.Event()).set()
            return
        if job.status in FINISHED:
            self._watched.discard(job_id)
            await self._finish(job)
            return
        if job_id in self._held or await self._take(job, lapsed_only=True) is not None:
            self._watched.discard(job_id)

    async def _renew(self) -> None:
        """Extend the leases of the jobs held here (no other: a job let go of lapses, for any runner to take)."""
        if not self._held:
            return
        # Only jobs held before the renewal can be missing from it: one taken meanwhile is not lost.
        before = set(self._held)
        sent = self._clock()
        async with asyncio.timeout(self._renew_every):
            renewed = await self._jobs.renew(self.owner, before, lease=self._lease)
        for job_id in before:
            if job_id not in self._held:
                continue
            if job_id in renewed:
                self._hold(job_id, sent)
            else:
                log.warning("job=lease_lost id=%s owner=%s", job_id, self.owner)
                self._lose(job_id)

    def _drop_lapsed(self) -> None:
        """Let go of the jobs whose lease must have lapsed by now (renewals failed for a whole lease)."""
        now = self._clock()
        for job_id, deadline in list(self._held.items()):
            if deadline <= now:
                log.warning("job=lease_lapsed id=%s owner=%s: renewals failed for a whole lease", job_id, self.owner)
                self._lose(job_id)

    def _holds(self, job_id: str) -> bool:
        """Whether this runner holds the job and, by its own clock, the lease cannot have lapsed yet."""
        deadline = self._held.get(job_id)
        return deadline is not None and self._clock() < deadline

    def _hold(self, job_id: str, sent: float) -> None:
        """Hold the job, its lease live for a whole term from `sent` (taken before the statement that set it)."""
        self._held[job_id] = max(self._held.get(job_id, sent), sent + self._lease)

    def _lose(self, job_id: str) -> None:
        """This runner no longer holds `job_id`: stop its work here (when nothing else shares it) and follow it."""
        self._held.pop(job_id, None)
        self._watched.add(job_id)
        task = self._running.get(job_id)
        if task is None or task.done():
            return
        # A batch goes on while it holds another job; this one's outcome is then not recorded here.
        if not any(self._holds(other) for other, running in self._running.items() if running is task):
            self._lost.update(other for other, running in self._running.items() if running is task)
            task.cancel()

    def _backoff(self, failures: int) -> float:
        return float(min(self._renew_every, _FIRST_RETRY * 2 ** min(failures - 1, 16)))

    @staticmethod
    def _cancelling() -> bool:
        current = asyncio.current_task()
        return current is not None and current.cancelling() > 0

    def _enqueue(self, job_id: str, sent: float) -> None:
        self._hold(job_id, sent)
        self._finished.setdefault(job_id, asyncio.Event())
        self._queue.put_nowait(job_id)

    def _requeue(self, job_ids: Collection[str]) -> None:
        """Queue again the jobs still held here that no worker runs (the database failed before they started)."""
        for job_id in job_ids:
            if job_id in self._held and job_id not in self._running:
                self._queue.put_nowait(job_id)

    def _count(self, job: JobRecord) -> None:
        """Report a job whose end this runner recorded (not one it only saw end: another runner counts that)."""
        if self._observer is None:
            return
        seconds = 0.0
        if job.started_at is not None and job.finished_at is not None:
            # The database's timestamps; each attempt starts anew, so a job taken over counts its last attempt.
            seconds = max((job.finished_at - job.started_at).total_seconds(), 0.0)
        self._observer.job_ended(job.kind, job.status, seconds)

    async def _finish(self, job: JobRecord) -> None:
        event = self._finished.setdefault(job.id, asyncio.Event())
        if event.is_set():
            return  # told already (by the worker that recorded it, or a heartbeat that saw it end)
        self._given.pop(job.id, None)
        await self._notify(job)
        self._ended_now(job.id, event)

    def _ended_now(self, job_id: str, event: asyncio.Event) -> None:
        """Wake the job's waiters, and forget the events of jobs that ended long enough ago: a waiter that comes
        later reads the job's end from the database."""
        event.set()
        now = self._clock()
        self._ended.append((now, job_id))
        while self._ended and self._ended[0][0] <= now - FORGET_AFTER:
            _, old = self._ended.popleft()
            if (kept := self._finished.get(old)) is not None and kept.is_set():
                del self._finished[old]

    @property
    def remembered(self) -> int:
        """Jobs whose end event is kept (for tests and /metrics)."""
        return len(self._finished)

    async def _worker(self) -> None:
        failures = 0
        while True:
            taken = [await self._queue.get()]
            # Jobs queued meanwhile (the rest of a folder or an upload) run together when the work batches.
            while self._batch is not None and len(taken) < self._batch_size and not self._queue.empty():
                taken.append(self._queue.get_nowait())
            held: list[str] = []
            try:
                held = [job_id for job_id in taken if job_id in self._held]
                if held:
                    await self.run_jobs(held)
                failures = 0
            except Exception:
                # Part of the job boundary: a database error (PostgreSQL restarting) must not end this worker.
                # The jobs it could not start stay held (renewed) and run once the database answers again.
                failures += 1
                log.warning("jobs=worker_failed owner=%s attempt=%d", self.owner, failures, exc_info=True)
                await self._wait(self._backoff(failures))
                self._requeue(held)
            finally:
                for _ in taken:
                    self._queue.task_done()
            if self._adopt and self._queue.empty():
                self._wake.set()

    async def _beat(self) -> None:
        failures = 0
        while True:
            # A worker that went idle wakes the heartbeat early, so an adopting runner claims the next job now.
            # (asyncio.timeout, not wait_for: 3.11's wait_for swallows a cancel that lands as the event is set,
            # and stop() would then wait forever for this task.)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._next_beat(failures)):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.heartbeat()
            except Exception:
                # Part of the job boundary: one failed round (the database briefly away) must not end
                # lease renewal for good, or every job here would soon be taken over; retried sooner.
                failures += 1
                log.warning("jobs=heartbeat_failed owner=%s attempt=%d", self.owner, failures, exc_info=True)
            else:
                failures = 0

    def _next_beat(self, failures: int) -> float:
        """Seconds to the next round: sooner after a failure, and no later than a held lease must lapse."""
        pause = self._backoff(failures) if failures else self._renew_every
        if self._held:
            # Floored, so a lease about to lapse does not spin the loop: it is dropped at the next round.
            pause = min(pause, max(min(self._held.values()) - self._clock(), self._renew_every / 10))
        return pause

    async def _notify(self, job: JobRecord) -> None:
        for listener in self._listeners:
            try:
                await listener(job)
            except Exception:
                # A broken progress display (a chat edit that failed) must not fail the ingestion.
                log.exception("job=listener_failed id=%s", job.id)
