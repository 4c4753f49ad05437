"""The ingestion job runner: durable rows, a worker pool, crash recovery, progress listeners."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.errors import UserFacingError
from rag.errors import RagError
from storage.errors import StorageError
from storage.records import JobRecord
from storage.repos.jobs import JobRepo

log = logging.getLogger(__name__)

Work = Callable[[JobRecord, Callable[[str, int, int], Awaitable[None]]], Awaitable[dict[str, Any]]]
Listener = Callable[[JobRecord], Awaitable[None]]
MAX_ATTEMPTS = 3


def failure_reason(exc: BaseException) -> str:
    """The one line an admin sees for a failed job."""
    if isinstance(exc, UserFacingError):
        return exc.user_message
    if isinstance(exc, RagError | StorageError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"internal error ({type(exc).__name__}); see the server log"


class JobRunner:
    """Runs queued jobs with bounded concurrency; a job never stays `running` across a restart."""

    def __init__(self, jobs: JobRepo, work: Work, *, concurrency: int = 2) -> None:
        self._jobs = jobs
        self._work = work
        self._concurrency = concurrency
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._listeners: list[Listener] = []
        self._finished: dict[str, asyncio.Event] = {}

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` with the job on every status or progress change."""
        self._listeners.append(listener)

    async def start(self) -> None:
        """Recover interrupted jobs, queue waiting ones and start the workers."""
        for job in await self._jobs.recent(statuses=("running",), limit=10_000):
            if job.attempts >= MAX_ATTEMPTS:
                await self._jobs.fail(job.id, f"interrupted {job.attempts} times by restarts; giving up")
            else:
                log.warning("job=recovered id=%s attempts=%d", job.id, job.attempts)
                await self._jobs.requeue(job.id)
        for job in reversed(await self._jobs.recent(statuses=("queued",), limit=10_000)):
            self._enqueue(job.id)
        self._workers = [
            asyncio.create_task(self._worker(), name=f"ingest-worker-{i}") for i in range(self._concurrency)
        ]

    async def stop(self) -> None:
        """Stop the workers; a job cut short goes back to the queue for the next start."""
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        for job in await self._jobs.recent(statuses=("running",), limit=10_000):
            await self._jobs.requeue(job.id)

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
        job = await self._jobs.create(kb_id, kind, source, requested_by=requested_by, requested_from=requested_from)
        self._enqueue(job.id)
        await self._notify(job)
        return job

    async def wait(self, job_id: str) -> JobRecord:
        """Wait until the job has succeeded or failed."""
        await self._finished.setdefault(job_id, asyncio.Event()).wait()
        return await self._jobs.get(job_id)

    def _enqueue(self, job_id: str) -> None:
        self._finished.setdefault(job_id, asyncio.Event())
        self._queue.put_nowait(job_id)

    async def _worker(self) -> None:
        while True:
            job_id = await self._queue.get()
            try:
                await self.run_job(job_id)
            finally:
                self._queue.task_done()

    async def run_job(self, job_id: str) -> JobRecord:
        """Run one job to succeeded or failed: the job boundary, where any error is caught and recorded."""
        job = await self._jobs.start(job_id)
        await self._notify(job)

        async def progress(stage: str, done: int, total: int) -> None:
            await self._notify(await self._jobs.progress(job_id, stage, done, total))

        try:
            result = await self._work(job, progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not isinstance(exc, RagError | UserFacingError):
                log.exception("job=failed id=%s kind=%s", job_id, job.kind)
            else:
                log.warning("job=failed id=%s kind=%s reason=%s", job_id, job.kind, failure_reason(exc))
            job = await self._jobs.fail(job_id, failure_reason(exc))
        else:
            job = await self._jobs.succeed(job_id, result)
        await self._notify(job)
        self._finished.setdefault(job_id, asyncio.Event()).set()
        return job

    async def _notify(self, job: JobRecord) -> None:
        for listener in self._listeners:
            try:
                await listener(job)
            except Exception:
                # A broken progress display (a chat edit that failed) must not fail the ingestion.
                log.exception("job=listener_failed id=%s", job.id)
