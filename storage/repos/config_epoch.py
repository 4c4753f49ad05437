"""The config epoch: moved by every change to what chats read, read by each turn beside its history."""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.db import Database
from storage.models import ConfigEpoch

_ROW = 1


async def bump_epoch(session: AsyncSession) -> None:
    """Move the epoch inside `session`'s transaction, so the change and its notice commit together."""
    await session.exec(
        update(ConfigEpoch)
        .where(col(ConfigEpoch.id) == _ROW)
        .values(value=col(ConfigEpoch.value) + 1)
        .execution_options(synchronize_session=False)
    )


class ConfigEpochRepo:
    """Reads and moves the epoch on its own (commands that change nothing else in SQL, tests)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def current(self) -> int:
        """The epoch now."""
        async with self._db.session() as session:
            return int((await session.exec(select(ConfigEpoch.value).where(ConfigEpoch.id == _ROW))).one())

    async def bump(self) -> None:
        """Move the epoch: every process drops its cached view of what chats read on its next turn."""
        async with self._db.session() as session:
            await bump_epoch(session)
