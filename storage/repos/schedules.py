"""Schedules and their ticks: each firing of a schedule is claimed by one INSERT, so one process runs it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage.db import Database
from storage.errors import NotFound, StorageError
from storage.models import Schedule, ScheduleTick, utcnow
from storage.records import ScheduleRecord

_NO_SYNC = {"synchronize_session": False}


def _record(row: Schedule) -> ScheduleRecord:
    return ScheduleRecord(
        id=row.id,
        kind=row.kind,
        kb_id=row.kb_id,
        source=row.source,
        every_seconds=row.every_seconds,
        created_by=row.created_by,
        requested_from=dict(row.requested_from),
        etag=row.etag,
        last_modified=row.last_modified,
        conditional_runs=row.conditional_runs,
        last_run_at=row.last_run_at,
        last_outcome=row.last_outcome,
        failures=row.failures,
        created_at=row.created_at,
    )


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How one run of a schedule went: `ok` resets the failure count, else it grows by one."""

    ok: bool
    outcome: str
    etag: str | None = None
    last_modified: str | None = None
    conditional: bool = False


class ScheduleRepo:
    """Schedules in SQL, shared by every ragbot process on the database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(
        self,
        kind: str,
        every_seconds: int,
        *,
        kb_id: str = "",
        source: str = "",
        created_by: str = "",
        requested_from: dict[str, Any] | None = None,
    ) -> ScheduleRecord:
        """The schedule of (kind, kb_id, source) at this period, made or changed; its run history stays."""
        for _ in range(2):
            async with self._db.session() as session:
                row = (await session.exec(_where(kind, kb_id, source))).first()
                if row is not None:
                    row.every_seconds = every_seconds
                    if created_by:
                        row.created_by = created_by
                    if requested_from:
                        row.requested_from = dict(requested_from)
                    session.add(row)
                    await session.flush()
                    return _record(row)
            try:
                async with self._db.session() as session:
                    row = Schedule(
                        kind=kind,
                        kb_id=kb_id,
                        source=source,
                        every_seconds=every_seconds,
                        created_by=created_by,
                        requested_from=dict(requested_from or {}),
                    )
                    session.add(row)
                    await session.flush()
                    return _record(row)
            except IntegrityError:
                continue  # another process made it between the read and the insert: change that one
        raise StorageError(f"schedule {kind} {source!r} could not be stored")

    async def find(self, kind: str, *, kb_id: str = "", source: str = "") -> ScheduleRecord | None:
        """The schedule of (kind, kb_id, source), if any."""
        async with self._db.session() as session:
            row = (await session.exec(_where(kind, kb_id, source))).first()
        return None if row is None else _record(row)

    async def get(self, schedule_id: str) -> ScheduleRecord:
        """One schedule; NotFound when it was removed."""
        async with self._db.session() as session:
            row = await session.get(Schedule, schedule_id)
        if row is None:
            raise NotFound("schedule", schedule_id)
        return _record(row)

    async def all(self, *, kb_ids: Collection[str] | None = None) -> list[ScheduleRecord]:
        """Every schedule (or those of `kb_ids`), by kind and source."""
        statement = select(Schedule).order_by(col(Schedule.kind), col(Schedule.source))
        if kb_ids is not None:
            statement = statement.where(col(Schedule.kb_id).in_(list(kb_ids)))
        async with self._db.session() as session:
            return [_record(row) for row in await session.exec(statement)]

    async def remove(self, schedule_id: str) -> bool:
        """Stop a schedule; False when it was already gone."""
        async with self._db.session() as session:
            removed = await session.exec(delete(Schedule).where(col(Schedule.id) == schedule_id))
            await session.exec(delete(ScheduleTick).where(col(ScheduleTick.schedule_id) == schedule_id))
        return bool(removed.rowcount)

    async def remove_source(self, kb_id: str, source: str) -> int:
        """Stop the schedules of one source of a knowledge base (its document was deleted)."""
        async with self._db.session() as session:
            removed = await session.exec(
                delete(Schedule).where(col(Schedule.kb_id) == kb_id, col(Schedule.source) == source)
            )
        return int(removed.rowcount)

    async def claim_tick(self, schedule_id: str, tick: int, owner: str) -> bool:
        """Claim one firing of a schedule; False when another process claimed that tick first."""
        try:
            async with self._db.session() as session:
                session.add(ScheduleTick(schedule_id=schedule_id, tick=tick, claimed_by=owner))
        except IntegrityError:
            return False
        return True

    async def forget_ticks(self, before: datetime) -> int:
        """Drop ticks claimed before `before`: only the current ones keep processes from running one twice."""
        async with self._db.session() as session:
            removed = await session.exec(delete(ScheduleTick).where(col(ScheduleTick.created_at) < before))
        return int(removed.rowcount)

    async def record_run(self, schedule_id: str, run: RunOutcome) -> ScheduleRecord | None:
        """Store how a run went; the schedule as it now stands, or None when it was removed meanwhile."""
        async with self._db.session() as session:
            row = await session.get(Schedule, schedule_id)
            if row is None:
                return None
            row.last_run_at = utcnow()
            row.last_outcome = run.outcome[:512]
            row.failures = 0 if run.ok else row.failures + 1
            if run.etag is not None:
                row.etag = run.etag[:512]
            if run.last_modified is not None:
                row.last_modified = run.last_modified[:128]
            if run.ok:
                row.conditional_runs = row.conditional_runs + 1 if run.conditional else 0
            session.add(row)
            await session.flush()
            return _record(row)


def _where(kind: str, kb_id: str, source: str) -> Any:
    return select(Schedule).where(
        col(Schedule.kind) == kind, col(Schedule.kb_id) == kb_id, col(Schedule.source) == source
    )
