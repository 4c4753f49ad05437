"""What the newest answers recorded about their turns (message meta), read without their texts."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from storage.db import Database
from storage.models import Message


class AnswerMetaRepo:
    """The meta of stored answers, newest first: what counting questions by how they were answered reads."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def newest(self, limit: int) -> list[dict[str, Any]]:
        """The meta of the newest `limit` finished answers (role assistant, status done), newest first."""
        if limit <= 0:
            return []
        statement = (
            select(Message.meta)
            .where(Message.role == "assistant", Message.status == "done")
            .order_by(col(Message.created_at).desc(), col(Message.id).desc())
            .limit(limit)
        )
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [dict(meta) for meta in rows if isinstance(meta, dict)]
