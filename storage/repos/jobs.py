"""Ingestion jobs: durable rows that survive restarts and carry progress."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlmodel import col, select

from storage.db import Database
from storage.errors import NotFound
from storage.models import IngestionJob, utcnow
from storage.records import JobRecord, JobStatus


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
    )


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
    ) -> JobRecord:
        """A queued job."""
        row = IngestionJob(
            kb_id=kb_id, kind=kind, source=source, requested_by=requested_by, requested_from=requested_from or {}
        )
        async with self._db.session() as session:
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
        self, *, kb_id: str | None = None, statuses: Sequence[str] = (), limit: int = 50
    ) -> list[JobRecord]:
        """Newest first, optionally for one knowledge base or some statuses."""
        statement = select(IngestionJob).order_by(col(IngestionJob.created_at).desc()).limit(limit)
        if kb_id is not None:
            statement = statement.where(IngestionJob.kb_id == kb_id)
        if statuses:
            statement = statement.where(col(IngestionJob.status).in_(list(statuses)))
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_record(row) for row in rows]

    async def start(self, job_id: str) -> JobRecord:
        """Mark running and count the attempt."""
        return await self._update(job_id, status="running", started_at=utcnow(), error="", attempts_delta=1)

    async def progress(self, job_id: str, stage: str, done: int, total: int) -> JobRecord:
        """Record the current stage and how far it got."""
        return await self._update(job_id, stage=stage, done=done, total=total)

    async def succeed(self, job_id: str, result: dict[str, Any]) -> JobRecord:
        """Mark succeeded with its result counts."""
        return await self._update(job_id, status="succeeded", stage="done", result=result, finished_at=utcnow())

    async def fail(self, job_id: str, error: str) -> JobRecord:
        """Mark failed with a one-line reason."""
        return await self._update(job_id, status="failed", error=error[:2000], finished_at=utcnow())

    async def requeue(self, job_id: str) -> JobRecord:
        """Put an interrupted job back in the queue."""
        return await self._update(job_id, status="queued", stage="", done=0, total=0)

    async def _update(self, job_id: str, *, attempts_delta: int = 0, **values: Any) -> JobRecord:
        async with self._db.session() as session:
            row = await session.get(IngestionJob, job_id)
            if row is None:
                raise NotFound("job", job_id)
            for key, value in values.items():
                setattr(row, key, value)
            row.attempts += attempts_delta
            session.add(row)
        return _record(row)
