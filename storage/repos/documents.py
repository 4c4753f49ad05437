"""Documents with their segments (parents) and chunks (children); versions replace each other atomically."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, delete, func, literal, or_, union_all
from sqlalchemy import select as sql_select
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.db import Database
from storage.errors import DocumentNotStored, NotFound
from storage.models import Chunk, Document, IndexWrite, Segment, utcnow
from storage.records import (
    ChunkRecord,
    DocumentRecord,
    DocumentVersion,
    IndexWriteRecord,
    SegmentRecord,
    TextSpan,
)

log = logging.getLogger(__name__)

PENDING_DELETE = "pending_index_delete"
_IN_BATCH = 500
# Spans per statement: each adds an OR term or a UNION arm, and SQLite caps expression depth at 1000.
_SPAN_BATCH = 100


def _record(row: Document) -> DocumentRecord:
    return DocumentRecord(
        id=row.id,
        kb_id=row.kb_id,
        title=row.title,
        source_uri=row.source_uri,
        mime_type=row.mime_type,
        content_hash=row.content_hash,
        rule_hash=row.rule_hash,
        status=row.status,
        segment_count=row.segment_count,
        chunk_count=row.chunk_count,
        char_count=row.char_count,
        meta=dict(row.meta),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def chunk_record(row: Any, meta: Mapping[str, Any] | None = None, bm25_text: str = "", title: str = "") -> ChunkRecord:
    """A chunk row (or a row of the same columns from a union) as a record; `meta` when the row's is still JSON."""
    meta = row.meta if meta is None else meta
    return ChunkRecord(
        chunk_id=row.id,
        kb_id=row.kb_id,
        document_id=row.document_id,
        segment_id=row.segment_id,
        position=row.position,
        start=row.start_offset,
        end=row.end_offset,
        text=row.text,
        bm25_text=bm25_text,
        chunk_type=str(meta.get("chunk_type", "text")),
        metadata={key: value for key, value in meta.items() if key != "chunk_type"},
        title=title,
    )


def segment_record(
    row: Any, child_ids: Sequence[str] | None = None, meta: Mapping[str, Any] | None = None
) -> SegmentRecord:
    """A segment row (or a union row of its columns) as a record; `child_ids`/`meta` when the row's are JSON."""
    return SegmentRecord(
        segment_id=row.id,
        document_id=row.document_id,
        kb_id=row.kb_id,
        position=row.position,
        start=row.start_offset,
        end=row.end_offset,
        text=row.text,
        child_ids=tuple(row.child_ids if child_ids is None else child_ids),
        metadata=dict(row.meta if meta is None else meta),
    )


class DocumentRepo:
    """The document, segment and chunk tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def find(self, kb_id: str, source_uri: str) -> DocumentRecord | None:
        """The document ingested from `source_uri` into the knowledge base, if any."""
        async with self._db.session() as session:
            row = (
                await session.exec(select(Document).where(Document.kb_id == kb_id, Document.source_uri == source_uri))
            ).first()
        return _record(row) if row else None

    async def find_many(self, kb_id: str, source_uris: Sequence[str]) -> dict[str, DocumentRecord]:
        """The documents ingested from any of `source_uris` into the knowledge base, by source URI."""
        unique = list(dict.fromkeys(source_uris))
        found: dict[str, DocumentRecord] = {}
        async with self._db.session() as session:
            for first in range(0, len(unique), _IN_BATCH):
                statement = select(Document).where(
                    Document.kb_id == kb_id, col(Document.source_uri).in_(unique[first : first + _IN_BATCH])
                )
                found.update((row.source_uri, _record(row)) for row in (await session.exec(statement)).all())
        return found

    async def get(self, document_id: str) -> DocumentRecord:
        """By id; raises NotFound."""
        async with self._db.session() as session:
            row = await session.get(Document, document_id)
        if row is None:
            raise NotFound("document", document_id)
        return _record(row)

    async def in_kb(self, kb_id: str) -> list[DocumentRecord]:
        """The knowledge base's documents, newest first."""
        async with self._db.session() as session:
            rows = (
                await session.exec(
                    select(Document).where(Document.kb_id == kb_id).order_by(col(Document.updated_at).desc())
                )
            ).all()
        return [_record(row) for row in rows]

    async def store_version(self, version: DocumentVersion, document_id: str) -> tuple[DocumentRecord, list[str]]:
        """Make `version` the document's content in one transaction (`document_id` names a new document).

        Returns the document and the chunk ids of the version it replaced; those ids stay listed
        under the document's `pending_index_delete` until `forget_pending` confirms the index
        no longer holds them, so a crash in between is repaired on the next start.
        """
        async with self._db.session() as session:
            (stored,) = await _write_versions(session, [(version, document_id)])
        return stored

    async def store_versions(
        self, versions: Sequence[tuple[DocumentVersion, str]]
    ) -> list[tuple[DocumentRecord, list[str]] | DocumentNotStored]:
        """`store_version` for many documents in one transaction; one outcome per version, in order.

        When that transaction fails, each version is stored in its own, so a row the database refuses
        fails only its own document (as a DocumentNotStored); the others are stored all the same.
        """
        if not versions:
            return []
        try:
            async with self._db.session() as session:
                return list(await _write_versions(session, versions))
        except SQLAlchemyError as exc:
            log.warning("documents=batch_write_failed versions=%d reason=%s", len(versions), _first_line(exc))
        outcomes: list[tuple[DocumentRecord, list[str]] | DocumentNotStored] = []
        for version, document_id in versions:
            try:
                outcomes.append(await self.store_version(version, document_id))
            except SQLAlchemyError as exc:
                outcomes.append(DocumentNotStored(version.source_uri, _first_line(exc)))
        return outcomes

    async def forget_pending(self, document_id: str, chunk_ids: Sequence[str]) -> None:
        """Record that the index no longer holds these replaced chunks."""
        async with self._db.session() as session:
            row = await session.get(Document, document_id)
            if row is None:
                return
            remaining = sorted(set(row.meta.get(PENDING_DELETE, [])) - set(chunk_ids))
            row.meta = {**row.meta, PENDING_DELETE: remaining}
            session.add(row)

    async def pending_index_deletes(self) -> dict[str, list[str]]:
        """Replaced chunk ids the index may still hold, by document (crash repair)."""
        async with self._db.session() as session:
            rows = (await session.exec(select(Document))).all()
        return {row.id: list(row.meta[PENDING_DELETE]) for row in rows if row.meta.get(PENDING_DELETE)}

    async def begin_index_write(self, chunk_ids: Sequence[str], *, owner: str, expires_at: datetime) -> str:
        """Note chunks about to be written to the index ahead of their SQL commit; returns the note's id."""
        row = IndexWrite(owner=owner, chunk_ids=list(chunk_ids), expires_at=expires_at)
        async with self._db.session() as session:
            session.add(row)
        return row.id

    async def end_index_write(self, write_id: str) -> None:
        """Drop the note: the chunks it names are committed, or were removed from the index again."""
        async with self._db.session() as session:
            await session.exec(delete(IndexWrite).where(col(IndexWrite.id) == write_id))

    async def unfinished_index_writes(self) -> list[IndexWriteRecord]:
        """Every index write whose end was not recorded (in flight, or left by a crash)."""
        async with self._db.session() as session:
            rows = (await session.exec(select(IndexWrite))).all()
        return [IndexWriteRecord(row.id, row.owner, tuple(row.chunk_ids), row.expires_at) for row in rows]

    async def committed_chunk_ids(self, chunk_ids: Sequence[str]) -> set[str]:
        """Those of `chunk_ids` that a committed document version holds."""
        found: set[str] = set()
        async with self._db.session() as session:
            for first in range(0, len(chunk_ids), _IN_BATCH):
                batch = list(chunk_ids[first : first + _IN_BATCH])
                found.update((await session.exec(select(Chunk.id).where(col(Chunk.id).in_(batch)))).all())
        return found

    async def titles(self, document_ids: Sequence[str]) -> dict[str, str]:
        """Each document's title by id (for citing sources)."""
        unique = list(dict.fromkeys(document_ids))
        async with self._db.session() as session:
            rows = (await session.exec(select(Document.id, Document.title).where(col(Document.id).in_(unique)))).all()
        return {document_id: title for document_id, title in rows}

    async def source_uris(self, document_ids: Sequence[str]) -> dict[str, str]:
        """Each document's source URI by id (a file URI, `upload:NAME` or the URL it was fetched from)."""
        unique = list(dict.fromkeys(document_ids))
        if not unique:
            return {}
        async with self._db.session() as session:
            statement = select(Document.id, Document.source_uri).where(col(Document.id).in_(unique))
            rows = (await session.exec(statement)).all()
        return {document_id: uri for document_id, uri in rows}

    async def chunks_with_titles(self, chunk_ids: Sequence[str]) -> list[tuple[ChunkRecord, str]]:
        """The stored chunks among `chunk_ids`, each with its document's title, in one round trip per batch."""
        found: list[tuple[ChunkRecord, str]] = []
        unique = list(dict.fromkeys(chunk_ids))
        if not unique:
            return found
        async with self._db.session() as session:
            for start in range(0, len(unique), _IN_BATCH):
                batch = unique[start : start + _IN_BATCH]
                statement = (
                    select(Chunk, Document.title)
                    .join(Document, col(Chunk.document_id) == col(Document.id))
                    .where(col(Chunk.id).in_(batch))
                )
                rows = (await session.exec(statement)).all()
                found.extend((chunk_record(chunk), title) for chunk, title in rows)
        return found

    async def document_chunks(self, document_id: str) -> list[ChunkRecord]:
        """Every chunk of a document, in position order."""
        async with self._db.session() as session:
            rows = (
                await session.exec(select(Chunk).where(Chunk.document_id == document_id).order_by(col(Chunk.position)))
            ).all()
        return [chunk_record(row) for row in rows]

    async def segments(self, document_id: str) -> list[SegmentRecord]:
        """Every parent of a document, in position order."""
        async with self._db.session() as session:
            rows = (
                await session.exec(
                    select(Segment).where(Segment.document_id == document_id).order_by(col(Segment.position))
                )
            ).all()
        return [segment_record(row) for row in rows]

    async def segments_by_ids(self, segment_ids: Sequence[str]) -> list[SegmentRecord]:
        """The stored parents among `segment_ids`, in no particular order (ids SQL lacks are dropped)."""
        found: list[SegmentRecord] = []
        unique = list(dict.fromkeys(segment_ids))
        async with self._db.session() as session:
            for start in range(0, len(unique), _IN_BATCH):
                batch = unique[start : start + _IN_BATCH]
                rows = (await session.exec(select(Segment).where(col(Segment.id).in_(batch)))).all()
                found.extend(segment_record(row) for row in rows)
        return found

    async def chunks_overlapping(self, spans: Sequence[TextSpan]) -> list[ChunkRecord]:
        """Each chunk whose [start, end) intersects a span of its document, once, by document id then position."""
        # An empty span intersects nothing, though "starts before its end, ends after its start" would say otherwise.
        unique = [span for span in dict.fromkeys(spans) if span.start < span.end]
        found: dict[str, ChunkRecord] = {}
        async with self._db.session() as session:
            for first in range(0, len(unique), _SPAN_BATCH):
                overlaps = [
                    and_(
                        col(Chunk.document_id) == span.document_id,
                        col(Chunk.start_offset) < span.end,
                        col(Chunk.end_offset) > span.start,
                    )
                    for span in unique[first : first + _SPAN_BATCH]
                ]
                rows = (await session.exec(select(Chunk).where(or_(*overlaps)))).all()
                found.update((row.id, chunk_record(row)) for row in rows)
        return sorted(found.values(), key=lambda chunk: (chunk.document_id, chunk.position))

    async def text_slices(self, spans: Sequence[TextSpan]) -> dict[TextSpan, str]:
        """Each span's stretch of its document's cleaned text, cut by the database so the whole text never loads.

        A span reaching past the end of the text is cut short, as a Python slice is; spans of documents SQL lacks
        are left out. Raises ValueError for a span with start < 0 or end < start.
        """
        unique = list(dict.fromkeys(spans))
        for span in unique:
            if not 0 <= span.start <= span.end:
                raise ValueError(f"a text span needs 0 <= start <= end, got {span}")
        found: dict[TextSpan, str] = {}
        async with self._db.session() as session:
            connection = await session.connection()
            for first in range(0, len(unique), _SPAN_BATCH):
                batch = unique[first : first + _SPAN_BATCH]
                # One UNION ALL arm per span: a single round trip, and SUBSTR counts characters on both backends.
                arms = [
                    sql_select(
                        literal(slot).label("slot"),
                        func.substr(col(Document.text), span.start + 1, span.end - span.start, type_=String).label(
                            "text"
                        ),
                    ).where(col(Document.id) == span.document_id)
                    for slot, span in enumerate(batch)
                ]
                rows = (await connection.execute(union_all(*arms))).all()
                found.update((batch[slot], text) for slot, text in rows)
        return found

    async def text(self, document_id: str) -> str:
        """The cleaned text the chunks' offsets point into."""
        async with self._db.session() as session:
            row = await session.get(Document, document_id)
        if row is None:
            raise NotFound("document", document_id)
        return row.text

    async def delete(self, document_id: str) -> None:
        """Remove the document and its segments and chunks."""
        async with self._db.session() as session:
            if await session.get(Document, document_id) is None:
                raise NotFound("document", document_id)
            await session.exec(delete(Chunk).where(col(Chunk.document_id) == document_id))
            await session.exec(delete(Segment).where(col(Segment.document_id) == document_id))
            await session.exec(delete(Document).where(col(Document.id) == document_id))


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


async def _write_versions(
    session: AsyncSession, versions: Sequence[tuple[DocumentVersion, str]]
) -> list[tuple[DocumentRecord, list[str]]]:
    """Write each version over its document's previous one inside `session` (three flushes, however many)."""
    rows: dict[tuple[str, str], Document] = {}
    for kb_id in {version.kb_id for version, _ in versions}:
        uris = [version.source_uri for version, _ in versions if version.kb_id == kb_id]
        for first in range(0, len(uris), _IN_BATCH):
            statement = select(Document).where(
                Document.kb_id == kb_id, col(Document.source_uri).in_(uris[first : first + _IN_BATCH])
            )
            rows.update(((row.kb_id, row.source_uri), row) for row in (await session.exec(statement)).all())
    stored: list[tuple[Document, list[str]]] = []
    for version, document_id in versions:
        row = rows.get((version.kb_id, version.source_uri))
        old_ids: list[str] = []
        if row is None:
            row = Document(id=document_id, kb_id=version.kb_id, source_uri=version.source_uri)
        else:
            old_ids = list((await session.exec(select(Chunk.id).where(Chunk.document_id == row.id))).all())
            await session.exec(delete(Chunk).where(col(Chunk.document_id) == row.id))
            await session.exec(delete(Segment).where(col(Segment.document_id) == row.id))
        pending = sorted(set(row.meta.get(PENDING_DELETE, [])) | set(old_ids))
        row.title = version.title
        row.mime_type = version.mime_type
        row.content_hash = version.content_hash
        row.rule_hash = version.rule_hash
        row.text = version.text
        row.status = "indexed"
        row.segment_count = len(version.segments)
        row.chunk_count = len(version.chunks)
        row.char_count = len(version.text)
        row.meta = {**version.meta, PENDING_DELETE: pending}
        row.updated_at = utcnow()
        session.add(row)
        stored.append((row, pending))
    # Parents before children: segments reference documents, chunks reference segments.
    await session.flush()
    session.add_all(
        Segment(
            id=segment.segment_id,
            document_id=row.id,
            kb_id=version.kb_id,
            position=segment.position,
            text=segment.text,
            start_offset=segment.start,
            end_offset=segment.end,
            child_ids=list(segment.child_ids),
            meta=dict(segment.metadata),
        )
        for (version, _), (row, _) in zip(versions, stored, strict=True)
        for segment in version.segments
    )
    await session.flush()
    session.add_all(
        Chunk(
            id=chunk.chunk_id,
            segment_id=chunk.segment_id,
            document_id=row.id,
            kb_id=version.kb_id,
            position=chunk.position,
            text=chunk.text,
            start_offset=chunk.start,
            end_offset=chunk.end,
            content_hash="",
            meta={**chunk.metadata, "chunk_type": chunk.chunk_type},
        )
        for (version, _), (row, _) in zip(versions, stored, strict=True)
        for chunk in version.chunks
    )
    await session.flush()
    return [(_record(row), pending) for row, pending in stored]
