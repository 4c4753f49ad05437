"""Knowledge bases: create, find, list, rename, delete (with everything they own)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage.db import Database
from storage.errors import DuplicateName, NotFound
from storage.models import (
    ChannelBinding,
    Chunk,
    Document,
    Faq,
    IngestionJob,
    KnowledgeBase,
    Segment,
    utcnow,
)
from storage.records import KnowledgeBaseRecord


def _record(row: KnowledgeBase) -> KnowledgeBaseRecord:
    return KnowledgeBaseRecord(
        id=row.id, name=row.name, description=row.description, chunking=dict(row.chunking), created_at=row.created_at
    )


class KnowledgeBaseRepo:
    """The knowledge_base table and cascading deletes."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, name: str, *, chunking: dict[str, Any], description: str = "") -> KnowledgeBaseRecord:
        """A new knowledge base; raises DuplicateName when the name is taken."""
        row = KnowledgeBase(name=name, chunking=chunking, description=description)
        try:
            async with self._db.session() as session:
                session.add(row)
        except IntegrityError as exc:
            raise DuplicateName("knowledge base", name) from exc
        return _record(row)

    async def get(self, kb_id: str) -> KnowledgeBaseRecord:
        """By id; raises NotFound."""
        async with self._db.session() as session:
            row = await session.get(KnowledgeBase, kb_id)
        if row is None:
            raise NotFound("knowledge base", kb_id)
        return _record(row)

    async def by_name(self, name: str) -> KnowledgeBaseRecord:
        """By exact name; raises NotFound."""
        async with self._db.session() as session:
            row = (await session.exec(select(KnowledgeBase).where(KnowledgeBase.name == name))).first()
        if row is None:
            raise NotFound("knowledge base", name)
        return _record(row)

    async def all(self) -> list[KnowledgeBaseRecord]:
        """Every knowledge base, by name."""
        async with self._db.session() as session:
            rows = (await session.exec(select(KnowledgeBase).order_by(col(KnowledgeBase.name)))).all()
        return [_record(row) for row in rows]

    async def rename(self, kb_id: str, new_name: str) -> KnowledgeBaseRecord:
        """Change the name; raises NotFound or DuplicateName."""
        try:
            async with self._db.session() as session:
                row = await session.get(KnowledgeBase, kb_id)
                if row is None:
                    raise NotFound("knowledge base", kb_id)
                row.name = new_name
                row.updated_at = utcnow()
                session.add(row)
        except IntegrityError as exc:
            raise DuplicateName("knowledge base", new_name) from exc
        return _record(row)

    async def update_chunking(self, kb_id: str, chunking: dict[str, Any]) -> KnowledgeBaseRecord:
        """Replace the chunking rule (documents are re-split when next ingested)."""
        async with self._db.session() as session:
            row = await session.get(KnowledgeBase, kb_id)
            if row is None:
                raise NotFound("knowledge base", kb_id)
            row.chunking = chunking
            row.updated_at = utcnow()
            session.add(row)
        return _record(row)

    async def stats(self, kb_id: str) -> dict[str, int]:
        """Counts of what the knowledge base holds."""
        counts: dict[str, int] = {}
        async with self._db.session() as session:
            for name, column in (
                ("documents", Document.kb_id),
                ("chunks", Chunk.kb_id),
                ("segments", Segment.kb_id),
                ("faqs", Faq.kb_id),
            ):
                statement = select(func.count()).where(col(column) == kb_id)
                counts[name] = int((await session.exec(statement)).one())
        return counts

    async def delete(self, kb_id: str) -> None:
        """Remove the knowledge base and every row it owns, in one transaction."""
        async with self._db.session() as session:
            if await session.get(KnowledgeBase, kb_id) is None:
                raise NotFound("knowledge base", kb_id)
            for model, column in (
                (Chunk, Chunk.kb_id),
                (Segment, Segment.kb_id),
                (Document, Document.kb_id),
                (Faq, Faq.kb_id),
                (IngestionJob, IngestionJob.kb_id),
                (ChannelBinding, ChannelBinding.kb_id),
            ):
                await session.exec(delete(model).where(col(column) == kb_id))
            await session.exec(delete(KnowledgeBase).where(col(KnowledgeBase.id) == kb_id))
