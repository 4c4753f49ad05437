"""Named leases: one process at a time holds a name (the reindex) until its lease expires unless renewed.

Taking a lease is one conditional UPDATE (free, expired, or already ours) or, for a name never held, one
INSERT; on SQLite and PostgreSQL alike two processes never both take it: the second statement matches no
row or hits the primary key.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from storage.db import Database
from storage.models import Lease
from storage.records import LeaseRecord

_NO_SYNC = {"synchronize_session": False}


class LeaseRepo:
    """Named leases in SQL, shared by every ragbot process on the database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def acquire(self, name: str, owner: str, *, now: datetime, until: datetime) -> bool:
        """Hold `name` for `owner` until `until`; False when another owner's lease is still live."""
        takeable = or_(col(Lease.owner) == owner, col(Lease.expires_at) < now)
        statement = (
            update(Lease)
            .where(and_(col(Lease.name) == name, takeable))
            .values(owner=owner, expires_at=until)
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            if (await session.exec(statement)).rowcount:
                return True
        try:
            async with self._db.session() as session:
                session.add(Lease(name=name, owner=owner, expires_at=until))
        except IntegrityError:
            return False
        return True

    async def renew(self, name: str, owner: str, *, until: datetime) -> bool:
        """Extend `owner`'s hold on `name`; False when it no longer holds it."""
        statement = (
            update(Lease)
            .where(and_(col(Lease.name) == name, col(Lease.owner) == owner))
            .values(expires_at=until)
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            return bool((await session.exec(statement)).rowcount)

    async def release(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it."""
        async with self._db.session() as session:
            await session.exec(delete(Lease).where(and_(col(Lease.name) == name, col(Lease.owner) == owner)))

    async def holder(self, name: str, *, now: datetime) -> LeaseRecord | None:
        """Who holds `name` now; None when nobody does or the lease expired."""
        async with self._db.session() as session:
            row = await session.get(Lease, name)
        if row is None or row.expires_at < now:
            return None
        return LeaseRecord(row.name, row.owner, row.expires_at)
