"""Keys every instance on one database must hold alike: made by the first instance that needs one, read by all."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from storage.db import Database
from storage.errors import StorageError
from storage.models import SharedKey


async def shared_key(db: Database, name: str, candidate: bytes) -> bytes:
    """The key stored under `name`; `candidate` is stored as it when none is yet, so the first instance's wins."""
    stored = await _stored(db, name)
    if stored is not None:
        return stored
    try:
        async with db.session() as session:
            session.add(SharedKey(name=name, value=candidate))
    except IntegrityError as exc:
        # Another instance stored its candidate between the read and this write: the primary key kept one.
        stored = await _stored(db, name)
        if stored is None:
            raise StorageError(f"shared key {name!r} was neither stored nor found") from exc
        return stored
    return candidate


async def _stored(db: Database, name: str) -> bytes | None:
    async with db.session() as session:
        value = (await session.exec(select(SharedKey.value).where(SharedKey.name == name))).first()
    return None if value is None else bytes(value)
