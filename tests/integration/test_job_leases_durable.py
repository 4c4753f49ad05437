"""Job leases under faults, on a real database: database errors, a stalled runner, clocks that disagree."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Collection
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from bot.knowledge.jobs import JobRunner
from rag.ports import Progress
from storage.clock import database_now
from storage.db import Database
from storage.records import JobRecord
from storage.repos.jobs import JobRepo
from tests.integration.test_jobs import LEASE, FakeClock, ScriptedWork, _kb_id, expire_leases


def _database_away() -> OperationalError:
    return OperationalError("UPDATE ingestion_job ...", None, ConnectionRefusedError("the database is away"))


class FlakyJobs(JobRepo):
    """Our JobRepo, whose named methods raise a database error their first N calls (`always` for every call)."""

    def __init__(self, db: Database, *, always: Collection[str] = (), **failures: int) -> None:
        super().__init__(db)
        self.failures = Counter(failures)
        self.always = set(always)
        self.calls: Counter[str] = Counter()

    def _call(self, name: str) -> None:
        self.calls[name] += 1
        if name in self.always:
            raise _database_away()
        if self.failures[name] > 0:
            self.failures[name] -= 1
            raise _database_away()

    async def start(self, job_id: str, owner: str, *, lease: float) -> JobRecord | None:
        self._call("start")
        return await super().start(job_id, owner, lease=lease)

    async def succeed(self, job_id: str, owner: str, result: dict[str, Any]) -> JobRecord | None:
        self._call("succeed")
        return await super().succeed(job_id, owner, result)

    async def renew(self, owner: str, job_ids: Collection[str], *, lease: float) -> set[str]:
        self._call("renew")
        return await super().renew(owner, job_ids, lease=lease)


class Waits:
    """The runner's back-off, ended at once; each wait moves the runner's own clock by what it asked for."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.asked: list[float] = []
        self._clock = clock

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        if self._clock is not None:
            self._clock.advance(seconds)
        await asyncio.sleep(0)


async def test_workers_survive_database_errors_starting_jobs_and_run_them_once_it_answers(db: Database) -> None:
    kb_id = await _kb_id(db)
    # Two failed starts used to end both workers of a default runner: nothing ran after them.
    repo, work, waits = FlakyJobs(db, start=2), ScriptedWork(), Waits()
    runner = JobRunner(repo, work, wait=waits)
    await runner.start()
    try:
        first = [await runner.submit(kb_id, "file", f"doc{i}.md") for i in range(3)]
        done = [await asyncio.wait_for(runner.wait(job.id), 10) for job in first]
        later = await runner.submit(kb_id, "file", "later.md")
        after = await asyncio.wait_for(runner.wait(later.id), 10)
    finally:
        await runner.stop()
    assert [job.status for job in [*done, after]] == ["succeeded"] * 4
    assert [job.attempts for job in [*done, after]] == [1] * 4
    assert sorted(work.ran) == ["doc0.md", "doc1.md", "doc2.md", "later.md"]
    assert waits.asked, "the workers backed off before trying again"


async def test_an_outcome_the_database_failed_to_store_is_stored_on_a_retry(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo, work, waits = FlakyJobs(db, succeed=2), ScriptedWork(), Waits()
    runner = JobRunner(repo, work, concurrency=1, wait=waits)
    await runner.start()
    try:
        job = await runner.submit(kb_id, "file", "good.md")
        finished = await asyncio.wait_for(runner.wait(job.id), 10)
        # The one worker is still there for the next job.
        another = await runner.submit(kb_id, "file", "next.md")
        next_finished = await asyncio.wait_for(runner.wait(another.id), 10)
    finally:
        await runner.stop()
    assert (finished.status, finished.attempts, finished.lease_owner) == ("succeeded", 1, "")
    assert next_finished.status == "succeeded"
    assert work.ran == ["good.md", "next.md"]
    assert repo.calls["succeed"] == 4


async def test_a_job_whose_outcome_cannot_be_stored_is_let_go_and_another_runner_finishes_it(db: Database) -> None:
    kb_id = await _kb_id(db)
    clock = FakeClock()
    broken, work = FlakyJobs(db, always=["succeed"]), ScriptedWork()
    stuck = JobRunner(broken, work, concurrency=1, lease=LEASE, renew_every=3600, clock=clock, wait=Waits(clock))
    await stuck.start(adopt=False)
    other_work = ScriptedWork()
    other = JobRunner(JobRepo(db), other_work, lease=LEASE, renew_every=3600, owner="other")
    next_started = asyncio.Event()

    async def listener(job: JobRecord) -> None:
        if job.source == "next.md" and job.status == "running":
            next_started.set()

    stuck.subscribe(listener)
    try:
        job = await stuck.submit(kb_id, "file", "good.md")
        waiting = asyncio.ensure_future(stuck.wait(job.id))
        # Its one worker moves on once it has retried for a whole lease of its own time and let the job go.
        await stuck.submit(kb_id, "file", "next.md")
        await asyncio.wait_for(next_started.wait(), 10)
        let_go = await broken.get(job.id)
        assert let_go.status == "running"
        await stuck.heartbeat()
        assert (await broken.get(job.id)).lease_expires_at == let_go.lease_expires_at, "no longer renewed"

        await expire_leases(db, job.id)  # a lease's worth of real time later
        await other.start()
        finished = await asyncio.wait_for(other.wait(job.id), 10)
        await stuck.heartbeat()
        seen_by_stuck = await asyncio.wait_for(waiting, 10)
    finally:
        await stuck.stop()
        await other.stop()
    assert (finished.status, finished.lease_owner, finished.attempts) == ("succeeded", "", 2)
    assert seen_by_stuck.status == "succeeded"
    assert other_work.ran == ["good.md"]


async def test_a_runner_whose_renewals_fail_stops_its_work_once_the_lease_must_have_lapsed(db: Database) -> None:
    kb_id = await _kb_id(db)
    clock = FakeClock()
    repo, work = FlakyJobs(db, always=["renew"]), ScriptedWork()
    runner = JobRunner(repo, work, lease=LEASE, renew_every=3600, clock=clock, wait=Waits())
    await runner.start(adopt=False)
    try:
        job = await runner.submit(kb_id, "file", "slow.md")
        await asyncio.wait_for(work.started.wait(), 10)
        clock.advance(LEASE / 3)
        with pytest.raises(OperationalError):
            await runner.heartbeat()
        assert work.cancelled == [], "one failed renewal leaves the lease time to spare"

        clock.advance(LEASE)
        with pytest.raises(OperationalError):
            await runner.heartbeat()
        await asyncio.wait_for(work.stopped.wait(), 10)
    finally:
        await runner.stop()
    assert work.cancelled == ["slow.md"]
    stored = await repo.get(job.id)
    assert stored.status in ("queued", "running")
    assert stored.result == {}


class _CommittingWork:
    """A work that writes what it made only after asking the runner (progress) whether it still holds the job.

    With `stall`, its first run stalls twice: before asking (until `resume`) and before writing (until `commit`).
    """

    def __init__(self, name: str, committed: list[str], *, stall: bool = False) -> None:
        self._name = name
        self._committed = committed
        self._stall = stall
        self.started = asyncio.Event()
        self.resume = asyncio.Event()
        self.asked = asyncio.Event()
        self.commit = asyncio.Event()
        self.first_over = asyncio.Event()

    async def __call__(self, job: JobRecord, progress: Progress) -> dict[str, Any]:
        stall, self._stall = self._stall, False
        self.started.set()
        try:
            if stall:
                await self.resume.wait()
            try:
                await progress("index", 0, 1)
            finally:
                self.asked.set()
            if stall:
                await self.commit.wait()
            self._committed.append(self._name)
            return {"by": self._name}
        finally:
            if stall:
                self.first_over.set()


async def test_a_stalled_runner_and_the_one_that_took_its_job_over_never_both_commit_it(db: Database) -> None:
    kb_id = await _kb_id(db)
    committed: list[str] = []
    stalled_work, new_work = _CommittingWork("stalled", committed, stall=True), _CommittingWork("new", committed)
    # The stalled runner's heartbeat never fires (an hour apart), nor does its own clock move.
    stalled = JobRunner(JobRepo(db), stalled_work, lease=LEASE, renew_every=3600, clock=FakeClock(), owner="stalled")
    new = JobRunner(JobRepo(db), new_work, lease=LEASE, renew_every=3600, owner="new")
    succeeded = asyncio.Event()

    async def listener(job: JobRecord) -> None:
        if job.status == "succeeded":
            succeeded.set()

    stalled.subscribe(listener)
    new.subscribe(listener)
    await stalled.start(adopt=False)
    try:
        job = await stalled.submit(kb_id, "file", "doc.md")
        await asyncio.wait_for(stalled_work.started.wait(), 10)
        await expire_leases(db, job.id)  # stalled for a whole lease: nobody has taken the job over yet
        stalled_work.resume.set()
        await asyncio.wait_for(stalled_work.asked.wait(), 10)
        await new.start()  # takes over whatever has lapsed
        stalled_work.commit.set()
        await asyncio.wait_for(succeeded.wait(), 10)
        await asyncio.wait_for(stalled_work.first_over.wait(), 10)
        finished = await JobRepo(db).get(job.id)
    finally:
        await stalled.stop()
        await new.stop()
    assert len(committed) == 1, f"committed by {committed}"
    assert (finished.status, finished.result) == ("succeeded", {"by": committed[0]})


async def test_an_old_holder_cannot_write_progress_or_an_outcome_once_its_lease_lapsed(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    job = await repo.create(kb_id, "file", "doc.md")
    assert await repo.start(job.id, "old", lease=LEASE) is not None
    await expire_leases(db, job.id)

    assert await repo.progress(job.id, "old", "index", 1, 2) is None
    assert await repo.succeed(job.id, "old", {"chunks": 1}) is None
    assert await repo.fail(job.id, "old", "boom") is None
    assert await repo.renew("old", {job.id}, lease=LEASE) == set()
    stored = await repo.get(job.id)
    assert (stored.status, stored.lease_owner, stored.stage) == ("running", "old", "")


async def test_two_runners_whose_clocks_differ_by_a_minute_do_not_take_each_others_jobs(db: Database) -> None:
    kb_id = await _kb_id(db)
    repo = JobRepo(db)
    # Each runner reads its own clock, a minute apart; leases are set and compared by the database's alone.
    slow_clock, fast_clock = FakeClock(1000.0), FakeClock(1060.0)
    work, other_work = ScriptedWork(), ScriptedWork()
    behind = JobRunner(repo, work, lease=LEASE, renew_every=3600, clock=slow_clock, owner="behind")
    ahead = JobRunner(repo, other_work, lease=LEASE, renew_every=3600, clock=fast_clock, owner="ahead")
    await behind.start(adopt=False)
    await ahead.start()
    try:
        job = await behind.submit(kb_id, "file", "slow.md")
        await asyncio.wait_for(work.started.wait(), 10)
        for _ in range(3):
            before = await database_now(db)
            await ahead.heartbeat()
            await behind.heartbeat()
            held = await repo.get(job.id)
            assert (held.status, held.lease_owner, held.attempts) == ("running", "behind", 1)
            assert held.lease_expires_at is not None
            assert held.lease_expires_at >= before + timedelta(seconds=LEASE)
        work.release.set()
        finished = await asyncio.wait_for(behind.wait(job.id), 10)
    finally:
        await behind.stop()
        await ahead.stop()
    assert (finished.status, finished.attempts) == ("succeeded", 1)
    assert other_work.ran == []
