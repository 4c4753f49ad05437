"""Named leases: one process at a time holds a name (the reindex) until its lease expires unless renewed.

Taking a lease is one conditional UPDATE (free, expired, or already ours) or, for a name never held, one
INSERT; on SQLite and PostgreSQL alike two processes never both take it: the second statement matches no
row or hits the primary key. Expiry is set and compared in the database's own time (storage.clock), so
processes whose clocks disagree still agree on who holds a lease.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import and_, delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage.clock import database_time
from storage.db import Database
from storage.models import Lease
from storage.records import LeaseRecord

_NO_SYNC = {"synchronize_session": False}


class LeaseRepo:
    """Named leases in SQL, shared by every ragbot process on the database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def acquire(self, name: str, owner: str, *, lease: float) -> bool:
        """Hold `name` for `owner` for `lease` seconds; False when another owner's lease is still live."""
        takeable = or_(col(Lease.owner) == owner, col(Lease.expires_at) < database_time())
        statement = (
            update(Lease)
            .where(and_(col(Lease.name) == name, takeable))
            .values(owner=owner, expires_at=database_time(lease))
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            if (await session.exec(statement)).rowcount:
                return True
        try:
            async with self._db.session() as session:
                until = (await session.exec(select(database_time(lease)))).one()
                session.add(Lease(name=name, owner=owner, expires_at=until))
        except IntegrityError:
            return False
        return True

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        """Extend `owner`'s live hold on `name` by `lease` seconds from now; False when it no longer holds it (another
        took it, or its lease lapsed: another may have taken it meanwhile, so it is not revived)."""
        statement = (
            update(Lease)
            .where(and_(col(Lease.name) == name, col(Lease.owner) == owner, col(Lease.expires_at) >= database_time()))
            .values(expires_at=database_time(lease))
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            return bool((await session.exec(statement)).rowcount)

    async def renew_each(self, held: Mapping[str, str], *, lease: float) -> set[str]:
        """Extend every live hold in `held` (name to owner) by `lease` seconds in one statement; the names renewed
        (a name missing lapsed or was taken, as with `renew`)."""
        if not held:
            return set()
        statement = (
            update(Lease)
            .where(
                col(Lease.name).in_(held.keys()),
                col(Lease.owner).in_(held.values()),
                col(Lease.expires_at) >= database_time(),
            )
            .values(expires_at=database_time(lease))
            .returning(col(Lease.name), col(Lease.owner))
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return {name for name, owner in rows if held.get(name) == owner}

    async def release(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it."""
        async with self._db.session() as session:
            await session.exec(delete(Lease).where(and_(col(Lease.name) == name, col(Lease.owner) == owner)))

    async def lapse(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it, keeping its row: a name taken again and again (one per conversation)
        is then taken by one UPDATE instead of a failed UPDATE, a read of the clock and an INSERT."""
        statement = (
            update(Lease)
            .where(and_(col(Lease.name) == name, col(Lease.owner) == owner))
            .values(owner="", expires_at=database_time(-1.0))
            .execution_options(**_NO_SYNC)
        )
        async with self._db.session() as session:
            await session.exec(statement)

    async def live(self, prefix: str) -> list[LeaseRecord]:
        """Every live lease whose name starts with `prefix` (by the database's clock)."""
        statement = select(Lease).where(col(Lease.name).startswith(prefix), col(Lease.expires_at) >= database_time())
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [LeaseRecord(row.name, row.owner, row.expires_at) for row in rows]

    async def holder(self, name: str) -> LeaseRecord | None:
        """Who holds `name` now (by the database's clock); None when nobody does or the lease expired."""
        statement = select(Lease).where(col(Lease.name) == name, col(Lease.expires_at) >= database_time())
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        return None if row is None else LeaseRecord(row.name, row.owner, row.expires_at)
