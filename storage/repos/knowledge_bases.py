"""Knowledge bases: create, find, list, rename, delete (with everything they own)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage.db import Database
from storage.errors import DuplicateName, NotFound
from storage.graph.mirror import GraphMirror, tell
from storage.models import (
    ChannelBinding,
    Chunk,
    Document,
    DocumentSheet,
    Faq,
    GraphEdge,
    GraphMention,
    GraphNode,
    GraphSwitch,
    IngestionJob,
    KnowledgeBase,
    KnowledgeBaseGrant,
    KnowledgeBaseTables,
    Schedule,
    Segment,
    utcnow,
)
from storage.records import KnowledgeBaseRecord
from storage.repos.config_epoch import bump_epoch
from storage.repos.document_writes import live_chunk, live_segment


def _record(row: KnowledgeBase) -> KnowledgeBaseRecord:
    return KnowledgeBaseRecord(
        id=row.id,
        name=row.name,
        description=row.description,
        chunking=dict(row.chunking),
        created_at=row.created_at,
        owner=row.owner,
    )


def _visible_to(tenant: str) -> Any:
    """The condition a knowledge base meets when `tenant` may read it: it owns it, or the operator granted it."""
    granted = select(KnowledgeBaseGrant.kb_id).where(KnowledgeBaseGrant.tenant == tenant)
    return or_(col(KnowledgeBase.owner) == tenant, col(KnowledgeBase.id).in_(granted))


class KnowledgeBaseRepo:
    """The knowledge_base table and cascading deletes."""

    def __init__(self, db: Database, graph: GraphMirror | None = None) -> None:
        self._db = db
        # A graph kept outside SQL (Neo4j): a deleted base's graph goes with its rows.
        self._graph = graph

    async def create(
        self, name: str, *, chunking: dict[str, Any], description: str = "", owner: str = ""
    ) -> KnowledgeBaseRecord:
        """A new knowledge base of `owner`; raises DuplicateName when the owner already has one of this name."""
        row = KnowledgeBase(name=name, chunking=chunking, description=description, owner=owner)
        try:
            async with self._db.session() as session:
                session.add(row)
                await session.flush()
                await bump_epoch(session)
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

    async def by_name(self, name: str, owner: str = "") -> KnowledgeBaseRecord:
        """`owner`'s knowledge base of this exact name; raises NotFound."""
        statement = select(KnowledgeBase).where(KnowledgeBase.name == name, KnowledgeBase.owner == owner)
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        if row is None:
            raise NotFound("knowledge base", name)
        return _record(row)

    async def all(self) -> list[KnowledgeBaseRecord]:
        """Every knowledge base of every owner, by name."""
        async with self._db.session() as session:
            rows = (await session.exec(select(KnowledgeBase).order_by(col(KnowledgeBase.name)))).all()
        return [_record(row) for row in rows]

    async def visible(self, tenant: str) -> list[KnowledgeBaseRecord]:
        """The knowledge bases `tenant` owns or was granted, by name."""
        statement = select(KnowledgeBase).where(_visible_to(tenant)).order_by(col(KnowledgeBase.name))
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_record(row) for row in rows]

    async def visible_named(self, tenant: str, name: str) -> KnowledgeBaseRecord | None:
        """The knowledge base `tenant` knows by `name`: its own first, else one it was granted; None otherwise."""
        statement = (
            select(KnowledgeBase)
            .where(KnowledgeBase.name == name, _visible_to(tenant))
            .order_by(col(KnowledgeBase.owner) != tenant, col(KnowledgeBase.created_at))
        )
        async with self._db.session() as session:
            row = (await session.exec(statement)).first()
        return None if row is None else _record(row)

    async def visible_ids(self, tenant: str, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` that `tenant` owns or was granted."""
        if not kb_ids:
            return set()
        statement = select(KnowledgeBase.id).where(col(KnowledgeBase.id).in_(list(kb_ids)), _visible_to(tenant))
        async with self._db.session() as session:
            return set((await session.exec(statement)).all())

    async def grant(self, kb_id: str, tenant: str) -> bool:
        """Let `tenant` read the knowledge base; False when it already could."""
        try:
            async with self._db.session() as session:
                session.add(KnowledgeBaseGrant(kb_id=kb_id, tenant=tenant))
                await session.flush()
                await bump_epoch(session)
        except IntegrityError:
            return False
        return True

    async def revoke(self, kb_id: str, tenant: str) -> bool:
        """Take back `tenant`'s grant; False when it had none."""
        async with self._db.session() as session:
            result = await session.exec(
                delete(KnowledgeBaseGrant).where(
                    col(KnowledgeBaseGrant.kb_id) == kb_id, col(KnowledgeBaseGrant.tenant) == tenant
                )
            )
            await bump_epoch(session)
        return bool(result.rowcount)

    async def grants(self) -> dict[str, list[str]]:
        """Per knowledge-base id, the tenants granted it."""
        async with self._db.session() as session:
            rows = (await session.exec(select(KnowledgeBaseGrant).order_by(col(KnowledgeBaseGrant.tenant)))).all()
        granted: dict[str, list[str]] = {}
        for row in rows:
            granted.setdefault(row.kb_id, []).append(row.tenant)
        return granted

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
                await session.flush()
                await bump_epoch(session)
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

    async def set_tables(self, kb_id: str, on: bool) -> None:
        """Switch data analysis of its tables on or off (on twice is on)."""
        try:
            async with self._db.session() as session:
                if await session.get(KnowledgeBase, kb_id) is None:
                    raise NotFound("knowledge base", kb_id)
                switched = await session.get(KnowledgeBaseTables, kb_id)
                if on and switched is None:
                    session.add(KnowledgeBaseTables(kb_id=kb_id))
                elif not on and switched is not None:
                    await session.delete(switched)
        except IntegrityError:
            if not on:
                raise
            # Another admin switched it on at the same moment: it is on.

    async def tables_on(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` whose tables may be queried."""
        if not kb_ids:
            return set()
        statement = select(KnowledgeBaseTables.kb_id).where(col(KnowledgeBaseTables.kb_id).in_(list(kb_ids)))
        async with self._db.session() as session:
            return set((await session.exec(statement)).all())

    async def stats(self, kb_id: str) -> dict[str, int]:
        """Counts of what the knowledge base holds."""
        counts: dict[str, int] = {}
        async with self._db.session() as session:
            for name, column in (("documents", Document.kb_id), ("faqs", Faq.kb_id)):
                statement = select(func.count()).where(col(column) == kb_id)
                counts[name] = int((await session.exec(statement)).one())
            # Only live versions' rows: one being written, or replaced and not yet removed, is not held yet or still.
            for name, model, live in (("chunks", Chunk, live_chunk()), ("segments", Segment, live_segment())):
                statement = select(func.count()).select_from(model).join(Document, live).where(model.kb_id == kb_id)
                counts[name] = int((await session.exec(statement)).one())
        return {name: counts[name] for name in ("documents", "chunks", "segments", "faqs")}

    async def delete(self, kb_id: str) -> None:
        """Remove the knowledge base and every row it owns, in one transaction."""
        async with self._db.session() as session:
            if await session.get(KnowledgeBase, kb_id) is None:
                raise NotFound("knowledge base", kb_id)
            for model, column in (
                (Chunk, Chunk.kb_id),
                (Segment, Segment.kb_id),
                (DocumentSheet, DocumentSheet.kb_id),
                (Document, Document.kb_id),
                (Faq, Faq.kb_id),
                (IngestionJob, IngestionJob.kb_id),
                (ChannelBinding, ChannelBinding.kb_id),
                (KnowledgeBaseGrant, KnowledgeBaseGrant.kb_id),
                (KnowledgeBaseTables, KnowledgeBaseTables.kb_id),
                (Schedule, Schedule.kb_id),
                (GraphMention, GraphMention.kb_id),
                (GraphEdge, GraphEdge.kb_id),
                (GraphNode, GraphNode.kb_id),
                (GraphSwitch, GraphSwitch.kb_id),
            ):
                await session.exec(delete(model).where(col(column) == kb_id))
            await session.exec(delete(KnowledgeBase).where(col(KnowledgeBase.id) == kb_id))
            await bump_epoch(session)
        if self._graph is not None:
            await tell(self._graph.forget_kb(kb_id), f"kb={kb_id}")
