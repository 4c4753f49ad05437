"""The job runner on a real database: bad sources fail with a reason while others go on; restarts recover."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.jobs import JobRunner
from rag.errors import CorruptDocument
from rag.ports import Progress
from storage.db import Database
from storage.records import JobRecord
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo


class ScriptedWork:
    """Our Work callable: fails for sources named bad*, crashes for crash*, reports progress otherwise."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, job: JobRecord, progress: Progress) -> dict[str, Any]:
        self.ran.append(job.source)
        if job.source.startswith("bad"):
            raise CorruptDocument(f"{job.source} is not a valid PDF: re-export it and upload again")
        if job.source.startswith("crash"):
            raise KeyError("bug")
        if job.source.startswith("slow"):
            await self.release.wait()
        await progress("embed", 1, 2)
        await progress("embed", 2, 2)
        return {"chunks": 2}


async def _kb_id(db: Database) -> str:
    return (await KnowledgeBaseRepo(db).create("jobs", chunking={})).id


async def test_failures_are_recorded_with_their_reason_and_other_jobs_go_on(db: Database) -> None:
    kb_id = await _kb_id(db)
    seen: list[tuple[str, str, str]] = []

    async def listener(job: JobRecord) -> None:
        seen.append((job.source, job.status, job.stage))

    runner = JobRunner(JobRepo(db), ScriptedWork(), concurrency=2)
    runner.subscribe(listener)
    await runner.start()
    try:
        jobs = [
            await runner.submit(kb_id, "file", name, requested_by="U1") for name in ("bad.pdf", "good.md", "crash.md")
        ]
        done = {job.source: await asyncio.wait_for(runner.wait(job.id), 10) for job in jobs}
    finally:
        await runner.stop()
    assert done["good.md"].status == "succeeded"
    assert done["good.md"].result == {"chunks": 2}
    assert (done["good.md"].done, done["good.md"].total) == (2, 2)
    assert done["bad.pdf"].status == "failed"
    assert done["bad.pdf"].error == "bad.pdf is not a valid PDF: re-export it and upload again"
    assert done["crash.md"].status == "failed"
    assert done["crash.md"].error == "internal error (KeyError); see the server log"
    assert ("good.md", "running", "embed") in seen
    assert ("good.md", "succeeded", "done") in seen
    assert all(job.finished_at is not None for job in done.values())


async def test_a_job_left_running_by_a_crash_is_run_again_on_start(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    interrupted = await repo.create(kb_id, "file", "good.md")
    await repo.start(interrupted.id)  # the process died here
    work = ScriptedWork()
    runner = JobRunner(repo, work)
    await runner.start()
    try:
        finished = await asyncio.wait_for(runner.wait(interrupted.id), 10)
    finally:
        await runner.stop()
    assert finished.status == "succeeded"
    assert finished.attempts == 2
    assert work.ran == ["good.md"]


async def test_a_job_interrupted_too_often_is_failed_not_retried_forever(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    job = await repo.create(kb_id, "file", "good.md")
    for _ in range(3):
        await repo.start(job.id)
    work = ScriptedWork()
    runner = JobRunner(repo, work)
    await runner.start()
    await runner.stop()
    failed = await repo.get(job.id)
    assert failed.status == "failed"
    assert "interrupted 3 times" in failed.error
    assert work.ran == []


async def test_stopping_requeues_a_running_job_instead_of_leaving_it_running(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    work = ScriptedWork()
    runner = JobRunner(repo, work)
    running = asyncio.Event()

    async def listener(job: JobRecord) -> None:
        if job.status == "running":
            running.set()

    runner.subscribe(listener)
    await runner.start()
    job = await runner.submit(kb_id, "file", "slow.md")
    await asyncio.wait_for(running.wait(), 10)
    await runner.stop()
    assert (await repo.get(job.id)).status == "queued"
