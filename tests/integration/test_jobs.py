"""The job runner on a real database: failures recorded, leases renewed, crashed runners' jobs taken over once."""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import col

from bot.cli.knowledge import ingest_sources
from bot.knowledge.jobs import FORGET_AFTER, JobRunner
from bot.metrics import JobMetrics
from rag.errors import CorruptDocument
from rag.ports import Progress
from storage.clock import database_now, database_time
from storage.db import Database
from storage.models import IngestionJob
from storage.records import JobRecord
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo

LEASE = 30.0


class FakeClock:
    """A runner's own monotonic clock, moved by the test: when the runner reckons its leases lapsed."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def expire_leases(db: Database, *job_ids: str) -> None:
    """The leases on these jobs ran out (by the database's clock): what a lease's worth of real time would do."""
    statement = (
        update(IngestionJob)
        .where(col(IngestionJob.id).in_(job_ids))
        .values(lease_expires_at=database_time(-1.0))
        .execution_options(synchronize_session=False)
    )
    async with db.session() as session:
        await session.exec(statement)


class ScriptedWork:
    """Our Work callable: fails for sources named bad*, crashes for crash*, waits for slow*, reports progress."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.cancelled: list[str] = []
        self.stopped = asyncio.Event()
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def __call__(self, job: JobRecord, progress: Progress) -> dict[str, Any]:
        self.ran.append(job.source)
        self.started.set()
        if job.source.startswith("bad"):
            raise CorruptDocument(f"{job.source} is not a valid PDF: re-export it and upload again")
        if job.source.startswith("crash"):
            raise KeyError("bug")
        if job.source.startswith("slow"):
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(job.source)
                self.stopped.set()
                raise
        await progress("embed", 1, 2)
        await progress("embed", 2, 2)
        return {"chunks": 2, "unchanged": job.source.startswith("same")}


def _runner(repo: JobRepo, work: ScriptedWork, clock: FakeClock, owner: str, concurrency: int = 2) -> JobRunner:
    # The heartbeat loop never fires by itself here (an hour apart): tests call heartbeat() when they mean it.
    return JobRunner(repo, work, concurrency=concurrency, lease=LEASE, renew_every=3600, clock=clock, owner=owner)


async def _kb_id(db: Database) -> str:
    return (await KnowledgeBaseRepo(db).create("jobs", chunking={})).id


async def _crashed_while_running(
    db: Database, kb_id: str, source: str, *, times: int = 1, expired: bool = True
) -> JobRecord:
    """A job a runner started and then died on (`times` runners in a row), its last lease expired or not yet."""
    repo = JobRepo(db)
    job = await repo.create(kb_id, "file", source)
    for attempt in range(times):
        if attempt:
            await expire_leases(db, job.id)
        started = await repo.start(job.id, f"dead-{attempt}", lease=LEASE)
        assert started is not None
    if expired:
        await expire_leases(db, job.id)
    return await repo.get(job.id)


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
    assert done["good.md"].result == {"chunks": 2, "unchanged": False}
    assert (done["good.md"].done, done["good.md"].total) == (2, 2)
    assert done["bad.pdf"].status == "failed"
    assert done["bad.pdf"].error == "bad.pdf is not a valid PDF: re-export it and upload again"
    assert done["crash.md"].status == "failed"
    assert done["crash.md"].error == "internal error (KeyError); see the server log"
    assert ("good.md", "running", "embed") in seen
    assert ("good.md", "succeeded", "done") in seen
    assert all(job.finished_at is not None for job in done.values())
    assert all(job.lease_owner == "" and job.lease_expires_at is None for job in done.values())


async def test_each_job_a_runner_ends_is_counted_once_by_kind_and_outcome_with_its_duration(db: Database) -> None:
    kb_id = await _kb_id(db)
    abandoned = await _crashed_while_running(db, kb_id, "good.md", times=3)
    metrics = JobMetrics()
    runner = JobRunner(JobRepo(db), ScriptedWork(), concurrency=2, observer=metrics)
    await runner.start()
    try:
        jobs = [
            await runner.submit(kb_id, kind, source)
            for kind, source in (("file", "bad.pdf"), ("file", "good.md"), ("url", "https://example.com/good"))
        ]
        for job in [*jobs, abandoned]:
            await asyncio.wait_for(runner.wait(job.id), 10)
    finally:
        await runner.stop()
    counts = {
        (kind, outcome): metrics.sample("ragbot_jobs_total", kind=kind, outcome=outcome)
        for kind in ("file", "url")
        for outcome in ("succeeded", "failed")
    }
    # The file a crash interrupted three times is given up on: a failure too.
    assert counts == {("file", "succeeded"): 1, ("file", "failed"): 2, ("url", "succeeded"): 1, ("url", "failed"): None}
    assert metrics.sample("ragbot_job_seconds_count", kind="file") == 3
    assert metrics.sample("ragbot_job_seconds_count", kind="url") == 1
    seconds = metrics.sample("ragbot_job_seconds_sum", kind="file")
    assert seconds is not None
    assert seconds >= 0


class _ReadRepo(JobRepo):
    """A JobRepo that says when a job was read."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.read = asyncio.Event()

    async def get(self, job_id: str) -> JobRecord:
        job = await super().get(job_id)
        self.read.set()
        return job


async def test_a_job_is_counted_by_the_runner_that_ran_it_not_by_one_that_waited_on_it(db: Database) -> None:
    kb_id = await _kb_id(db)
    clock, work, watching = FakeClock(), ScriptedWork(), _ReadRepo(db)
    ran_here, waited_here = JobMetrics(), JobMetrics()
    runners = [
        JobRunner(repo, work, lease=LEASE, renew_every=3600, clock=clock, owner=owner, observer=metrics)
        for repo, owner, metrics in ((JobRepo(db), "serve-a", ran_here), (watching, "serve-b", waited_here))
    ]
    for runner in runners:
        await runner.start(adopt=False)
    try:
        job = await runners[0].submit(kb_id, "file", "slow.md")
        await asyncio.wait_for(work.started.wait(), 10)
        waiting = asyncio.create_task(runners[1].wait(job.id))
        await asyncio.wait_for(watching.read.wait(), 10)  # the waiter read it running: it watches it
        work.release.set()
        await asyncio.wait_for(runners[0].wait(job.id), 10)
        await runners[1].heartbeat()  # the watcher sees it ended
        assert (await asyncio.wait_for(waiting, 10)).status == "succeeded"
    finally:
        for runner in runners:
            await runner.stop()
    assert ran_here.sample("ragbot_jobs_total", kind="file", outcome="succeeded") == 1
    assert waited_here.sample("ragbot_jobs_total", kind="file", outcome="succeeded") is None


async def test_a_submitted_job_is_held_by_its_runner_from_the_start(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    runner = _runner(repo, ScriptedWork(), clock, "cli")

    before = await database_now(db)
    job = await runner.submit(kb_id, "file", "good.md")
    after = await database_now(db)

    assert (job.status, job.lease_owner) == ("queued", "cli")
    assert job.lease_expires_at is not None
    assert before + timedelta(seconds=LEASE) <= job.lease_expires_at <= after + timedelta(seconds=LEASE)
    assert await repo.claimable(limit=10) == []


async def test_a_job_left_running_by_a_crash_is_taken_over_once_its_lease_expires(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    interrupted = await _crashed_while_running(db, kb_id, "good.md")
    work = ScriptedWork()
    runner = _runner(repo, work, clock, "serve")
    await runner.start()
    try:
        finished = await asyncio.wait_for(runner.wait(interrupted.id), 10)
    finally:
        await runner.stop()
    assert finished.status == "succeeded"
    assert finished.attempts == 2
    assert work.ran == ["good.md"]


async def test_recovery_at_start_leaves_a_job_whose_runner_is_alive_until_its_lease_expires(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    elsewhere = await _crashed_while_running(db, kb_id, "good.md", expired=False)
    work = ScriptedWork()
    runner = _runner(repo, work, clock, "serve")
    await runner.start()
    try:
        await runner.heartbeat()
        untouched = await repo.get(elsewhere.id)
        assert (untouched.status, untouched.lease_owner, untouched.attempts) == ("running", "dead-0", 1)
        assert work.ran == []

        await expire_leases(db, elsewhere.id)
        await runner.heartbeat()
        finished = await asyncio.wait_for(runner.wait(elsewhere.id), 10)
    finally:
        await runner.stop()
    assert (finished.status, finished.attempts) == ("succeeded", 2)
    assert work.ran == ["good.md"]


async def test_a_job_that_keeps_killing_its_runner_is_failed_not_retried_forever(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    job = await _crashed_while_running(db, kb_id, "good.md", times=3)
    work = ScriptedWork()
    runner = _runner(repo, work, clock, "serve")
    await runner.start()
    await runner.stop()
    failed = await repo.get(job.id)
    assert failed.status == "failed"
    assert "interrupted 3 times" in failed.error
    assert work.ran == []


async def test_the_live_runner_renews_its_lease_so_no_other_runner_takes_the_job(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    work, other_work = ScriptedWork(), ScriptedWork()
    runner, other = _runner(repo, work, clock, "one"), _runner(repo, other_work, clock, "two")
    await runner.start(adopt=False)
    await other.start()
    try:
        job = await runner.submit(kb_id, "file", "slow.md")
        await asyncio.wait_for(work.started.wait(), 10)
        for _ in range(4):  # two minutes of heartbeats, far past one lease
            clock.advance(LEASE * 2 / 3)
            before = await database_now(db)
            await runner.heartbeat()
            await other.heartbeat()
            held = await repo.get(job.id)
            assert (held.status, held.lease_owner) == ("running", "one")
            assert held.lease_expires_at is not None
            assert held.lease_expires_at >= before + timedelta(seconds=LEASE)
        work.release.set()
        finished = await asyncio.wait_for(runner.wait(job.id), 10)
    finally:
        await runner.stop()
        await other.stop()
    assert (finished.status, finished.attempts) == ("succeeded", 1)
    assert other_work.ran == []


async def test_a_runner_that_stalled_past_its_lease_stops_and_the_new_holder_finishes_the_job(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    stalled_work, new_work = ScriptedWork(), ScriptedWork()
    stalled, new = _runner(repo, stalled_work, clock, "stalled"), _runner(repo, new_work, clock, "new")
    await stalled.start(adopt=False)
    await new.start()
    try:
        job = await stalled.submit(kb_id, "file", "slow.md")
        await asyncio.wait_for(stalled_work.started.wait(), 10)
        await expire_leases(db, job.id)  # the stalled runner missed every renewal
        await new.heartbeat()
        await asyncio.wait_for(new_work.started.wait(), 10)
        waiting = asyncio.ensure_future(stalled.wait(job.id))

        await stalled.heartbeat()  # finds its lease gone: stops its own work on the job

        await asyncio.wait_for(stalled_work.stopped.wait(), 10)
        assert stalled_work.cancelled == ["slow.md"]
        new_work.release.set()
        finished = await asyncio.wait_for(new.wait(job.id), 10)
        await stalled.heartbeat()  # and learns how the job it waits on ended
        seen_by_stalled = await asyncio.wait_for(waiting, 10)
    finally:
        await stalled.stop()
        await new.stop()
    assert (finished.status, finished.attempts) == ("succeeded", 2)
    assert seen_by_stalled.status == "succeeded"
    assert new_work.ran == ["slow.md"]


async def test_stopping_requeues_a_running_job_for_any_runner_without_counting_the_attempt(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    work = ScriptedWork()
    runner = JobRunner(repo, work)
    await runner.start()
    job = await runner.submit(kb_id, "file", "slow.md")
    await asyncio.wait_for(work.started.wait(), 10)
    assert (await repo.get(job.id)).attempts == 1
    await runner.stop()
    requeued = await repo.get(job.id)
    assert (requeued.status, requeued.lease_owner, requeued.attempts) == ("queued", "", 0)


async def test_stopping_leaves_other_runners_jobs_alone(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    elsewhere = await _crashed_while_running(db, kb_id, "good.md", expired=False)
    runner = _runner(repo, ScriptedWork(), clock, "cli")
    await runner.start(adopt=False)
    await runner.stop()
    assert (await repo.get(elsewhere.id)).lease_owner == "dead-0"


async def test_only_one_of_many_runners_racing_for_a_job_gets_it(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    job = await repo.create(kb_id, "file", "good.md")

    reserved = await asyncio.gather(*(repo.reserve(job.id, f"r{i}", lease=LEASE) for i in range(8)))
    started = await asyncio.gather(*(repo.start(job.id, f"s{i}", lease=LEASE) for i in range(8)))

    winners = [record.lease_owner for record in reserved if record is not None]
    assert len(winners) == 1
    assert [record.lease_owner for record in started if record is not None] == []
    assert (await repo.start(job.id, winners[0], lease=LEASE)) is not None


async def test_two_serving_runners_share_the_queue_and_run_every_job_exactly_once(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    jobs = [await repo.create(kb_id, "file", f"doc{i}.md") for i in range(12)]
    work = ScriptedWork()
    runners = [_runner(repo, work, clock, f"serve-{i}", concurrency=3) for i in range(2)]
    finished: set[str] = set()
    changed = asyncio.Event()

    async def listener(job: JobRecord) -> None:
        if job.status == "succeeded":
            finished.add(job.id)
            changed.set()

    for runner in runners:
        runner.subscribe(listener)
    await asyncio.gather(*(runner.start() for runner in runners))
    try:
        while len(finished) < len(jobs):
            changed.clear()
            await asyncio.gather(*(runner.heartbeat() for runner in runners))
            await asyncio.wait_for(changed.wait(), 10)
    finally:
        await asyncio.gather(*(runner.stop() for runner in runners))
    assert Counter(work.ran) == Counter(job.source for job in jobs)
    assert {(await repo.get(job.id)).attempts for job in jobs} == {1}


async def test_a_serving_runner_claims_the_next_waiting_job_as_soon_as_a_worker_is_free(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    jobs = [await repo.create(kb_id, "file", f"doc{i}.md") for i in range(3)]
    runner = _runner(repo, ScriptedWork(), clock, "serve", concurrency=1)
    await runner.start()
    try:
        finished = [await asyncio.wait_for(runner.wait(job.id), 10) for job in jobs]
    finally:
        await runner.stop()
    assert [job.status for job in finished] == ["succeeded"] * 3


async def test_resuming_a_source_a_live_runner_holds_waits_for_it_and_takes_over_when_it_dies(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    held = await _crashed_while_running(db, kb_id, "b.md", expired=False)
    work = ScriptedWork()
    runner = _runner(repo, work, clock, "rerun")
    await runner.start(adopt=False)
    try:
        job = await runner.submit(kb_id, "file", "b.md", resume=True)
        assert (job.id, job.status, job.lease_owner) == (held.id, "running", "dead-0")
        waiting = asyncio.ensure_future(runner.wait(job.id))
        await runner.heartbeat()
        assert not waiting.done()
        assert work.ran == []

        await expire_leases(db, job.id)
        await runner.heartbeat()
        finished = await asyncio.wait_for(waiting, 10)
    finally:
        await runner.stop()
    assert (finished.status, finished.attempts) == ("succeeded", 2)
    assert await repo.count(kb_id=kb_id) == 1


async def test_a_rerun_resumes_the_unfinished_jobs_of_its_sources_and_counts_only_them(db: Database) -> None:
    kb = await KnowledgeBaseRepo(db).create("handbook", chunking={})
    repo, clock = JobRepo(db), FakeClock()
    # The killed run: a.md done, b.md cut short while running, c.md still queued for it, and a job of another run.
    done = await repo.create(kb.id, "file", "same-a.md")
    await repo.start(done.id, "killed", lease=LEASE)
    await repo.succeed(done.id, "killed", {"chunks": 2})
    cut_short = await _crashed_while_running(db, kb.id, "b.md")
    waiting = await repo.create(kb.id, "file", "c.md", owner="killed", lease=LEASE)
    await expire_leases(db, waiting.id)
    unrelated = await repo.create(kb.id, "file", "z.md")
    work = ScriptedWork()
    out = io.StringIO()

    code = await ingest_sources(_runner(repo, work, clock, "rerun"), repo, kb, ["same-a.md", "b.md", "c.md"], out=out)

    lines = out.getvalue().splitlines()
    reports = [line for line in lines if line.startswith("ok")]
    assert code == 0
    assert sorted(work.ran) == ["b.md", "c.md", "same-a.md"]
    assert [line.split(":")[0] for line in reports] == ["ok  [1/3] same-a.md", "ok  [2/3] b.md", "ok  [3/3] c.md"]
    assert "unchanged" in reports[0]
    assert all(line.endswith("(resumed the job an interrupted run left)") for line in reports[1:])
    assert all(f"/{len(reports)}]" in line for line in lines if line.startswith("["))
    assert "3 of 3 ingested into handbook (1 already indexed, 2 indexed)" in lines
    assert lines[-1].startswith("1 other job is queued or running")
    assert (await repo.get(cut_short.id)).status == "succeeded"
    assert (await repo.get(waiting.id)).status == "succeeded"
    assert (await repo.get(unrelated.id)).status == "queued"
    assert await repo.count(kb_id=kb.id) == 5


async def test_a_runner_forgets_the_jobs_that_ended_long_ago_and_a_late_waiter_still_hears_the_end(
    db: Database,
) -> None:
    kb_id = await _kb_id(db)
    repo, clock = JobRepo(db), FakeClock()
    runner = _runner(repo, ScriptedWork(), clock, "forgetful")
    await runner.start()
    try:
        first = [await runner.submit(kb_id, "file", f"good-{n}.md") for n in range(5)]
        for job in first:
            await asyncio.wait_for(runner.wait(job.id), 10)
        assert runner.remembered == 5
        clock.advance(FORGET_AFTER + 1)
        later = await runner.submit(kb_id, "file", "good-later.md")
        await asyncio.wait_for(runner.wait(later.id), 10)
        assert runner.remembered == 1  # the five that ended long ago are forgotten
        again = await asyncio.wait_for(runner.wait(first[0].id), 10)  # read from the database
        assert again.status == "succeeded"
    finally:
        await runner.stop()
