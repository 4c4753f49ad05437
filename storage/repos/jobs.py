"""Ingestion jobs: durable rows that survive restarts, carry progress, and are leased to one runner at a time.

A runner holds a job through a lease (owner id, expiry). Every change of hands is one conditional UPDATE
whose WHERE clause re-checks the status and the lease, so on SQLite and PostgreSQL alike two runners
never both take a job: the second UPDATE matches no row. Leases are set and compared in the database's
own time (storage.clock), never a runner's, so clocks skewed between hosts cannot make them flap; and a
job's progress and outcome are written only while its runner's lease is unexpired.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, or_, update
from sqlmodel import col, select

from storage.clock import database_time
from storage.db import Database
from storage.errors import NotFound
from storage.models import IngestionJob
from storage.records import JobRecord, JobStatus

UNFINISHED: tuple[JobStatus, ...] = ("queued", "running")
_NO_SYNC = {"synchronize_session": False}
# Ids per renewal statement: well under SQLite's and asyncpg's limits on bound parameters.
_RENEW_BATCH = 500


def _record(row: IngestionJob) -> JobRecord:
    status: JobStatus = row.status  # type: ignore[assignment]
    return JobRecord(
        id=row.id,
        kb_id=row.kb_id,
        kind=row.kind,
        source=row.source,
        status=status,
        stage=row.stage,
        done=row.done,
        total=row.total,
        error=row.error,
        requested_by=row.requested_by,
        requested_from=dict(row.requested_from),
        result=dict(row.result),
        attempts=row.attempts,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        lease_owner=row.lease_owner,
        lease_expires_at=row.lease_expires_at,
    )


def _lapsed() -> ColumnElement[bool]:
    """Nobody holds the job: no owner, or an owner whose lease ran out (or predates leases)."""
    return or_(
        col(IngestionJob.lease_owner) == "",
        col(IngestionJob.lease_expires_at).is_(None),
        col(IngestionJob.lease_expires_at) < database_time(),
    )


def _orphaned() -> ColumnElement[bool]:
    """Left `running` by a runner that stopped renewing its lease (it crashed, was killed or stalled)."""
    return and_(col(IngestionJob.status) == "running", _lapsed())


def _held_by(owner: str) -> ColumnElement[bool]:
    """`owner`'s lease on the job is live: it may still write the job's progress and outcome."""
    return and_(col(IngestionJob.lease_owner) == owner, col(IngestionJob.lease_expires_at) >= database_time())


class JobRepo:
    """The ingestion_job table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        kb_id: str,
        kind: str,
        source: str,
        *,
        requested_by: str = "",
        requested_from: dict[str, Any] | None = None,
        owner: str = "",
        lease: float = 0.0,
    ) -> JobRecord:
        """A queued job, held from the start by `owner` for `lease` seconds when given (so no other runner takes it)."""
        row = IngestionJob(
            kb_id=kb_id,
            kind=kind,
            source=source,
            requested_by=requested_by,
            requested_from=requested_from or {},
            lease_owner=owner,
        )
        async with self._db.session() as session:
            if owner:
                row.lease_expires_at = (await session.exec(select(database_time(lease)))).one()
            session.add(row)
        return _record(row)

    async def get(self, job_id: str) -> JobRecord:
        """By id; raises NotFound."""
        async with self._db.session() as session:
            row = await session.get(IngestionJob, job_id)
        if row is None:
            raise NotFound("job", job_id)
        return _record(row)

    async def recent(
        self, *, kb_id: str | None = None, statuses: Sequence[str] = (), limit: int | None = 50, offset: int = 0
    ) -> list[JobRecord]:
        """Newest first, optionally for one knowledge base or some statuses; `limit=None` for all."""
        statement = select(IngestionJob).order_by(col(IngestionJob.created_at).desc(), col(IngestionJob.id))
        if kb_id is not None:
            statement = statement.where(IngestionJob.kb_id == kb_id)
        if statuses:
            statement = statement.where(col(IngestionJob.status).in_(list(statuses)))
        statement = statement.offset(offset).limit(limit)
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_record(row) for row in rows]

    async def count(self, *, kb_id: str | None = None, statuses: Sequence[str] = ()) -> int:
        """How many jobs `recent` would list without a limit."""
        statement = select(func.count()).select_from(IngestionJob)
        if kb_id is not None:
            statement = statement.where(IngestionJob.kb_id == kb_id)
        if statuses:
            statement = statement.where(col(IngestionJob.status).in_(list(statuses)))
        async with self._db.session() as session:
            return int((await session.exec(statement)).one())

    async def unfinished(self, kb_id: str, kind: str, source: str) -> JobRecord | None:
        """The newest queued or running job for this source, if any (a re-run resumes it instead of adding one)."""
        statement = (
            select(IngestionJob)
            .where(IngestionJob.kb_id == kb_id, IngestionJob.kind == kind, IngestionJob.source == source)
            .where(col(IngestionJob.status).in_(UNFINISHED))
            .order_by(col(IngestionJob.created_at).desc())
            .limit(1)
        )
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        return None if row is None else _record(row)

    async def claimable(self, *, limit: int) -> list[JobRecord]:
        """Oldest first: queued jobs nobody holds, and running jobs whose runner stopped renewing its lease."""
        statement = (
            select(IngestionJob)
            .where(col(IngestionJob.status).in_(UNFINISHED), _lapsed())
            .order_by(col(IngestionJob.created_at), col(IngestionJob.id))
            .limit(limit)
        )
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_record(row) for row in rows]

    async def reserve(self, job_id: str, owner: str, *, lease: float, lapsed_only: bool = False) -> JobRecord | None:
        """Hold an unfinished job for `owner` for `lease` seconds, queued; None when another runner holds it or it
        ended. With `lapsed_only`, a job `owner` itself still holds in SQL is not taken either (it let go of it).

        An orphaned running job goes back to queued here, keeping its attempts, so that the owner starts it anew.
        """
        takeable = _lapsed() if lapsed_only else or_(col(IngestionJob.lease_owner) == owner, _lapsed())
        return await self._change(
            job_id,
            and_(col(IngestionJob.status).in_(UNFINISHED), takeable),
            status="queued",
            stage="",
            done=0,
            total=0,
            lease_owner=owner,
            lease_expires_at=database_time(lease),
        )

    async def start(self, job_id: str, owner: str, *, lease: float) -> JobRecord | None:
        """Mark running for `owner` for `lease` seconds and count the attempt; None when another runner holds the
        job, `owner`'s own lease on it lapsed, or it ended."""
        takeable = or_(
            and_(col(IngestionJob.status) == "queued", or_(_held_by(owner), _lapsed())),
            and_(_orphaned(), col(IngestionJob.lease_owner) != owner),
        )
        return await self._change(
            job_id,
            takeable,
            status="running",
            started_at=database_time(),
            error="",
            stage="",
            done=0,
            total=0,
            attempts=col(IngestionJob.attempts) + 1,
            lease_owner=owner,
            lease_expires_at=database_time(lease),
        )

    async def renew(self, owner: str, job_ids: Collection[str], *, lease: float) -> set[str]:
        """Extend `owner`'s live leases on `job_ids` by `lease` seconds; the ids renewed (one missing was taken over,
        ended, or its lease had lapsed: it is no longer `owner`'s to work on)."""
        ids = sorted(job_ids)
        renewed: set[str] = set()
        async with self._db.session() as session:
            for first in range(0, len(ids), _RENEW_BATCH):
                statement = (
                    update(IngestionJob)
                    .where(
                        col(IngestionJob.id).in_(ids[first : first + _RENEW_BATCH]),
                        col(IngestionJob.status).in_(UNFINISHED),
                        _held_by(owner),
                    )
                    .values(lease_expires_at=database_time(lease))
                    .returning(col(IngestionJob.id))
                    .execution_options(**_NO_SYNC)
                )
                renewed.update((await session.exec(statement)).scalars())
        return renewed

    async def release(self, owner: str) -> int:
        """Hand back every job `owner` holds, queued for any runner; a cut-short attempt does not count."""
        statement = (
            update(IngestionJob)
            .where(col(IngestionJob.lease_owner) == owner, col(IngestionJob.status).in_(UNFINISHED))
            .values(
                status="queued",
                stage="",
                done=0,
                total=0,
                lease_owner="",
                lease_expires_at=None,
                attempts=col(IngestionJob.attempts) - case((col(IngestionJob.status) == "running", 1), else_=0),
            )
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            result = await session.exec(statement)
        return int(result.rowcount)

    async def abandon(self, job_id: str, error: str, *, result: dict[str, Any] | None = None) -> JobRecord | None:
        """Fail an orphaned running job (one that keeps killing its runner); None unless it is still orphaned.

        `result` keeps what the failure's wording needs (its reason id and details), beside the one-line `error`.
        """
        return await self._change(
            job_id,
            _orphaned(),
            status="failed",
            error=error[:2000],
            result=result or {},
            finished_at=database_time(),
            lease_owner="",
            lease_expires_at=None,
        )

    async def progress(self, job_id: str, owner: str, stage: str, done: int, total: int) -> JobRecord | None:
        """Record the current stage and how far it got; None when `owner` no longer runs the job (or its lease
        lapsed: then another runner may take it over, and this one must stop)."""
        return await self._change(job_id, self._running_for(owner), stage=stage, done=done, total=total)

    async def succeed(self, job_id: str, owner: str, result: dict[str, Any]) -> JobRecord | None:
        """Mark succeeded with its result counts; None when `owner` no longer runs the job or its lease lapsed."""
        return await self._change(
            job_id,
            self._running_for(owner),
            status="succeeded",
            stage="done",
            result=result,
            finished_at=database_time(),
            lease_owner="",
            lease_expires_at=None,
        )

    async def fail(self, job_id: str, owner: str, error: str, result: dict[str, Any] | None = None) -> JobRecord | None:
        """Mark failed with a one-line reason (and in `result`, what its wording needs); None when `owner` no longer
        runs the job or its lease lapsed."""
        return await self._change(
            job_id,
            self._running_for(owner),
            status="failed",
            error=error[:2000],
            result=result or {},
            finished_at=database_time(),
            lease_owner="",
            lease_expires_at=None,
        )

    @staticmethod
    def _running_for(owner: str) -> ColumnElement[bool]:
        return and_(col(IngestionJob.status) == "running", _held_by(owner))

    async def _change(self, job_id: str, condition: ColumnElement[bool], **values: Any) -> JobRecord | None:
        """One conditional UPDATE, then the row as it now is; None when the condition matched nothing.

        The UPDATE comes first in its transaction: SQLite then waits for a concurrent writer (busy_timeout)
        instead of failing a read transaction's upgrade, and PostgreSQL re-checks the condition on the row
        a concurrent transaction just committed.
        """
        statement = (
            update(IngestionJob)
            .where(col(IngestionJob.id) == job_id, condition)
            .values(**values)
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            result = await session.exec(statement)
            if result.rowcount == 0:
                return None
            row = await session.get(IngestionJob, job_id)
        assert row is not None
        return _record(row)
