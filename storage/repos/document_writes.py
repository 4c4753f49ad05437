"""A document version's rows written in short transactions beside the live ones, then made live in one switch.

Segments and chunks carry the version they belong to, and the document row names its live version: readers join on
it, so rows of a version being written, or of one replaced, are invisible until the switch, or after it. No
transaction writes more than `rows_per_transaction` rows, so SQLite's one write lock is never held for long.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, insert, literal, or_, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel import col, select

from storage.db import Database
from storage.errors import DocumentNotStored, first_line
from storage.graph.mirror import GraphMirror, tell
from storage.models import Chunk, Document, DocumentSheet, GraphEdge, GraphMention, Segment, utcnow
from storage.records import DocumentVersion

PENDING_DELETE = "pending_index_delete"
# A document row made for a version still being written; it has no live rows until its switch.
PENDING = "pending"
# A document being deleted: its rows go in short transactions, then the row itself.
DELETING = "deleting"
# A version no row carries: a document being deleted shows none of its rows.
NO_VERSION = "-"
# Rows a transaction writes or deletes at most: a few thousand rows take SQLite tens of milliseconds
# (bench/ingest_lock.py), short enough for a chat write to wait on, big enough to keep round trips few.
ROWS_PER_TRANSACTION = 2000
# The longest pause after a bulk transaction on SQLite: the longest sleep of its busy handler between retries.
_MOST_BREATH = 0.1
# Documents whose rows a statement names at most (bound parameters stay far under SQLite's limits).
_IN_BATCH = 500


def version_key(version: DocumentVersion) -> str:
    """The version's key: the same document, content and rule always give the same one (as its chunk ids do)."""
    parts = (version.kb_id, version.source_uri, version.content_hash, version.rule_hash)
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class StagedVersion:
    """A version whose rows are written but not live; `replaces` is the live version it will switch from."""

    version: DocumentVersion
    document_id: str
    key: str
    replaces: str
    pending: tuple[str, ...]

    @property
    def source_uri(self) -> str:
        """The document's source."""
        return self.version.source_uri


def live_chunk() -> Any:
    """A chunk row joined to its document row only while its version is the document's live one."""
    return and_(col(Chunk.document_id) == col(Document.id), col(Chunk.version) == col(Document.version))


def live_segment() -> Any:
    """A segment row joined to its document row only while its version is the document's live one."""
    return and_(col(Segment.document_id) == col(Document.id), col(Segment.version) == col(Document.version))


class DocumentWriter:
    """Stages, switches and clears document versions in transactions of bounded size."""

    def __init__(
        self, db: Database, rows_per_transaction: int = ROWS_PER_TRANSACTION, graph: GraphMirror | None = None
    ) -> None:
        self._db = db
        self._rows = rows_per_transaction
        # A graph kept outside SQL (Neo4j): told what the relational graph rows here go with.
        self._graph = graph

    async def stage(
        self, versions: Sequence[tuple[DocumentVersion, str]], existing: Container[str]
    ) -> list[StagedVersion | DocumentNotStored]:
        """Write each version's rows beside the live ones; one outcome per version, in order.

        `existing` names the documents the caller read with a live version: one of them deleted since is refused,
        never made again. A version the database refuses fails alone, and its rows are removed again.
        """
        try:
            prepared = await self._prepare(versions, existing)
        except SQLAlchemyError as exc:
            if len(versions) == 1:
                return [DocumentNotStored(versions[0][0].source_uri, first_line(exc))]
            prepared = [outcome for item in versions for outcome in await self.stage([item], existing)]
        for group in self._groups([item for item in prepared if isinstance(item, StagedVersion)]):
            if await self._write_rows(group):
                continue
            for staged in group:
                if len(group) > 1 and await self._write_rows([staged]):
                    continue
                await self.discard([(staged.document_id, staged.key)])
                prepared[prepared.index(staged)] = DocumentNotStored(
                    staged.source_uri, "the database refused its rows, or the document was deleted meanwhile"
                )
        return prepared

    async def switch(self, staged: Sequence[StagedVersion]) -> list[Document | DocumentNotStored]:
        """Make each staged version live in one transaction: a document deleted or replaced meanwhile is refused."""
        if not staged:
            return []
        try:
            async with self._db.session() as session:
                connection = await session.connection()
                switched = [await _switch_one(connection, item) for item in staged]
                rows = await _rows_by_id(
                    session, [item.document_id for item, done in zip(staged, switched, strict=True) if done]
                )
        except SQLAlchemyError as exc:
            if len(staged) == 1:
                return [DocumentNotStored(staged[0].source_uri, first_line(exc))]
            outcomes: list[Document | DocumentNotStored] = []
            for item in staged:
                outcomes.extend(await self.switch([item]))
            return outcomes
        return [
            rows[item.document_id] if done else DocumentNotStored(item.source_uri, "it was deleted while being stored")
            for item, done in zip(staged, switched, strict=True)
        ]

    async def discard(self, staged: Sequence[tuple[str, str]]) -> None:
        """Remove the rows of these (document, version) pairs unless that version is live, then any document row
        made for one of them that never had a live version."""
        for document_id, key in staged:
            for model in (Chunk, Segment):
                while await self._delete_batch(model, document_id, key=key):
                    pass
        async with self._db.session() as session:
            ids = [document_id for document_id, _ in staged]
            for first in range(0, len(ids), _IN_BATCH):
                await session.exec(
                    delete(Document).where(
                        col(Document.id).in_(ids[first : first + _IN_BATCH]),
                        col(Document.status) == PENDING,
                        col(Document.version) == "",
                        ~select(Chunk.id).where(col(Chunk.document_id) == col(Document.id)).exists(),
                        ~select(Segment.id).where(col(Segment.document_id) == col(Document.id)).exists(),
                    )
                )

    async def unlive_versions(self, document_id: str) -> list[str]:
        """The versions of which the document holds segment or chunk rows, other than its live one."""
        async with self._db.session() as session:
            held = await _versions_held(session, [document_id])
            row = await session.get(Document, document_id)
        live = row.version if row is not None else None
        return sorted({version for _, version in held if version != live})

    async def chunk_ids(self, document_id: str, version: str, limit: int) -> list[str]:
        """Up to `limit` ids of the document's chunks of `version`."""
        async with self._db.session() as session:
            statement = (
                select(Chunk.id)
                .where(col(Chunk.document_id) == document_id, col(Chunk.version) == version)
                .limit(limit)
            )
            return list((await session.exec(statement)).all())

    async def drop_chunks(self, document_id: str, version: str, chunk_ids: Sequence[str]) -> int:
        """Remove these chunk rows of the document's `version`, unless that version is live; how many went."""
        dropped = 0
        for first in range(0, len(chunk_ids), self._rows):
            began = time.monotonic()
            gone: list[str] = []
            async with self._db.session() as session:
                connection = await session.connection()
                for start in range(first, min(first + self._rows, len(chunk_ids)), _IN_BATCH):
                    batch = list(chunk_ids[start : min(start + _IN_BATCH, first + self._rows)])
                    result = await connection.execute(
                        delete(Chunk).where(
                            col(Chunk.id).in_(batch), col(Chunk.version) == version, _not_live(document_id, version)
                        )
                    )
                    dropped += result.rowcount
                    if result.rowcount:
                        gone.extend(batch)
                    # What the dropped chunks mention goes with them (a live version's chunks stayed, and so do theirs).
                    await connection.execute(
                        delete(GraphMention).where(
                            col(GraphMention.chunk_id).in_(batch),
                            ~select(Chunk.id).where(col(Chunk.id) == col(GraphMention.chunk_id)).exists(),
                        )
                    )
            if self._graph is not None and gone:
                await tell(self._graph.forget_chunks(gone), f"document={document_id} chunks={len(gone)}")
            await self._breathe(began)
        return dropped

    async def drop_segments(self, document_id: str, version: str) -> None:
        """Remove the document's segments of `version`, unless it is live, a bounded batch per transaction."""
        while await self._delete_batch(Segment, document_id, key=version):
            pass

    async def mark_deleting(self, document_id: str) -> Document | None:
        """Hide every row of the document at once and mark it as being deleted; None when there is no such row."""
        async with self._db.session() as session:
            connection = await session.connection()
            result = await connection.execute(
                update(Document)
                .where(col(Document.id) == document_id)
                .values(status=DELETING, version=NO_VERSION, updated_at=utcnow())
            )
            if not result.rowcount:
                return None
            return await session.get(Document, document_id)

    async def drop_document_row(self, document_id: str) -> bool:
        """Remove a document row being deleted, or made for a version that never went live, once no row of it
        remains; False while some still do."""
        async with self._db.session() as session:
            connection = await session.connection()
            # Its sheets (storage.tables.sheets) are one row each, written only while a version is live: they go here.
            await connection.execute(
                delete(DocumentSheet).where(
                    col(DocumentSheet.document_id) == document_id,
                    select(Document.id).where(col(Document.id) == document_id, _going()).exists(),
                )
            )
            result = await connection.execute(
                delete(Document).where(
                    col(Document.id) == document_id,
                    _going(),
                    ~select(Chunk.id).where(col(Chunk.document_id) == document_id).exists(),
                    ~select(Segment.id).where(col(Segment.document_id) == document_id).exists(),
                )
            )
            if result.rowcount:
                for model in (GraphMention, GraphEdge):
                    await connection.execute(delete(model).where(col(model.document_id) == document_id))
            else:
                return await session.get(Document, document_id) is None
        if self._graph is not None:
            await tell(self._graph.forget_document(document_id), f"document={document_id}")
        return True

    async def unsettled(self) -> list[str]:
        """Documents being deleted, made for a version that never went live, or holding rows of other versions."""
        found: set[str] = set()
        async with self._db.session() as session:
            found.update((await session.exec(select(Document.id).where(_going()))).all())
            found.update((await session.exec(_unlive_documents(Chunk))).all())
            found.update((await session.exec(_unlive_documents(Segment))).all())
        return sorted(found)

    async def _prepare(
        self, versions: Sequence[tuple[DocumentVersion, str]], existing: Container[str]
    ) -> list[StagedVersion | DocumentNotStored]:
        """Each version's document row, made (as pending) for a new document, and its leftover rows cleared."""
        outcomes: list[StagedVersion | DocumentNotStored] = []
        async with self._db.session() as session:
            rows = await _rows_by_id(session, [document_id for _, document_id in versions])
            for version, document_id in versions:
                row = rows.get(document_id)
                if row is None and document_id in existing:
                    outcomes.append(DocumentNotStored(version.source_uri, "it was deleted while being ingested"))
                    continue
                if row is not None and row.status == DELETING:
                    outcomes.append(DocumentNotStored(version.source_uri, "it is being deleted"))
                    continue
                if row is None:
                    row = Document(id=document_id, kb_id=version.kb_id, source_uri=version.source_uri, status=PENDING)
                    session.add(row)
                    rows[document_id] = row
                pending = tuple(row.meta.get(PENDING_DELETE, ()))
                outcomes.append(StagedVersion(version, document_id, version_key(version), row.version, pending))
        staged = [item for item in outcomes if isinstance(item, StagedVersion) and item.key != item.replaces]
        async with self._db.session() as session:
            # Read apart from the writes above: SQLite would hold its write lock through the scan.
            leftover = await _versions_held(session, [item.document_id for item in staged])
        for item in staged:
            if (item.document_id, item.key) in leftover:
                # Rows of this very version, left by a writer that died before its switch: the same ids again.
                for model in (Chunk, Segment):
                    while await self._delete_batch(model, item.document_id, key=item.key):
                        pass
        return outcomes

    def _groups(self, staged: Sequence[StagedVersion]) -> Iterator[list[StagedVersion]]:
        """Versions to write together: small ones share a transaction, a big one has its own transactions."""
        group: list[StagedVersion] = []
        size = 0
        for item in staged:
            rows = 0 if item.key == item.replaces else len(item.version.segments) + len(item.version.chunks)
            if group and size + rows > self._rows:
                yield group
                group, size = [], 0
            group.append(item)
            size += rows
        if group:
            yield group

    async def _write_rows(self, group: Sequence[StagedVersion]) -> bool:
        """Insert the group's rows, `rows_per_transaction` at a time; False when the database refused some."""
        rows = [row for item in group if item.key != item.replaces for row in _rows(item)]
        documents = [item.document_id for item in group]
        try:
            for first in range(0, len(rows), self._rows):
                began = time.monotonic()
                async with self._db.session() as session:
                    connection = await session.connection()
                    for model, values in _by_table(rows[first : first + self._rows]):
                        await connection.execute(insert(model), values)
                    # Read after the insert, inside its write transaction: a delete that began since stops the rest.
                    deleting = await connection.execute(
                        select(literal(1)).where(col(Document.id).in_(documents), col(Document.status) == DELETING)
                    )
                    if deleting.first() is not None:
                        raise _Deleted
                await self._breathe(began)
        except (_Deleted, SQLAlchemyError):
            return False
        return True

    async def _delete_batch(self, model: Any, document_id: str, *, key: str) -> bool:
        """Delete up to `rows_per_transaction` of the document's rows of version `key`, unless it is live; whether
        any were."""
        began = time.monotonic()
        async with self._db.session() as session:
            batch = (
                select(model.id)
                .where(col(model.document_id) == document_id, col(model.version) == key)
                .limit(self._rows)
                .scalar_subquery()
            )
            connection = await session.connection()
            result = await connection.execute(
                delete(model).where(col(model.id).in_(batch), _not_live(document_id, key))
            )
        await self._breathe(began)
        return bool(result.rowcount)

    async def _breathe(self, began: float) -> None:
        """On SQLite, leave the write lock free a while after a bulk transaction: a chat write waiting in SQLite's
        busy handler retries at most every 100 ms, and would otherwise find the next bulk transaction holding it."""
        if self._db.config.is_sqlite:
            await asyncio.sleep(min(_MOST_BREATH, time.monotonic() - began))


def _not_live(document_id: str, version: str) -> Any:
    """`version` is not the document's live one (true too when the document row is gone)."""
    live = select(Document.version).where(col(Document.id) == document_id).scalar_subquery()
    return or_(live.is_(None), live != version)


def _going() -> Any:
    """A document row being deleted, or made for a first version that never went live."""
    return or_(col(Document.status) == DELETING, and_(col(Document.status) == PENDING, col(Document.version) == ""))


def _unlive_documents(model: type[Chunk] | type[Segment]) -> Any:
    """The documents holding rows of `model` whose version is not their live one."""
    return (
        select(model.document_id)
        .join(Document, col(model.document_id) == col(Document.id))
        .where(col(model.version) != col(Document.version))
        .distinct()
    )


class _Deleted(Exception):
    """The document was marked for deletion while its rows were being written."""


def _rows(item: StagedVersion) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The version's segment rows, then its chunk rows (chunks reference segments)."""
    version = item.version
    for segment in version.segments:
        yield (
            Segment,
            {
                "id": segment.segment_id,
                "document_id": item.document_id,
                "kb_id": version.kb_id,
                "position": segment.position,
                "text": segment.text,
                "start_offset": segment.start,
                "end_offset": segment.end,
                "child_ids": list(segment.child_ids),
                "meta": dict(segment.metadata),
                "version": item.key,
            },
        )
    for chunk in version.chunks:
        yield (
            Chunk,
            {
                "id": chunk.chunk_id,
                "segment_id": chunk.segment_id,
                "document_id": item.document_id,
                "kb_id": version.kb_id,
                "position": chunk.position,
                "text": chunk.text,
                "start_offset": chunk.start,
                "end_offset": chunk.end,
                "content_hash": "",
                "token_count": 0,
                "meta": {**chunk.metadata, "chunk_type": chunk.chunk_type},
                "version": item.key,
            },
        )


def _by_table(rows: Sequence[tuple[Any, dict[str, Any]]]) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """Consecutive rows of one table together, in order, so segments still go in before their chunks."""
    run: list[dict[str, Any]] = []
    model: Any = None
    for row_model, values in rows:
        if row_model is not model and run:
            yield model, run
            run = []
        model = row_model
        run.append(values)
    if run:
        yield model, run


async def _rows_by_id(session: Any, document_ids: Sequence[str]) -> dict[str, Document]:
    found: dict[str, Document] = {}
    unique = list(dict.fromkeys(document_ids))
    for first in range(0, len(unique), _IN_BATCH):
        statement = select(Document).where(col(Document.id).in_(unique[first : first + _IN_BATCH]))
        found.update((row.id, row) for row in (await session.exec(statement)).all())
    return found


async def _versions_held(session: Any, document_ids: Sequence[str]) -> set[tuple[str, str]]:
    """The (document, version) pairs of which some segment or chunk row exists."""
    found: set[tuple[str, str]] = set()
    for first in range(0, len(document_ids), _IN_BATCH):
        batch = list(document_ids[first : first + _IN_BATCH])
        for model in (Chunk, Segment):
            statement = select(model.document_id, model.version).where(col(model.document_id).in_(batch)).distinct()
            found.update((await session.exec(statement)).all())
    return found


async def _switch_one(connection: AsyncConnection, item: StagedVersion) -> bool:
    """Point the document at the staged version, if it is still the one it was staged over and not being deleted."""
    version = item.version
    new_ids = {chunk.chunk_id for chunk in version.chunks}
    pending = sorted(set(item.pending) - new_ids)
    meta = {**version.meta, **({PENDING_DELETE: pending} if pending else {})}
    result = await connection.execute(
        update(Document)
        .where(
            col(Document.id) == item.document_id,
            col(Document.version) == item.replaces,
            col(Document.status) != DELETING,
        )
        .values(
            title=version.title,
            mime_type=version.mime_type,
            content_hash=version.content_hash,
            rule_hash=version.rule_hash,
            text=version.text,
            status="indexed",
            version=item.key,
            segment_count=len(version.segments),
            chunk_count=len(version.chunks),
            char_count=len(version.text),
            meta=meta,
            updated_at=utcnow(),
        )
    )
    return bool(result.rowcount)
