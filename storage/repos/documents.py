"""Documents with their segments (parents) and chunks (children); versions replace each other atomically.

Only the rows of a document's live version are read (storage.repos.document_writes explains why others exist).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, delete, false, func, literal, or_, union_all
from sqlalchemy import select as sql_select
from sqlalchemy import text as sql_text
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.db import Database
from storage.errors import DocumentNotStored, NotFound
from storage.graph.mirror import GraphMirror
from storage.models import Chunk, Document, IndexWrite, Segment
from storage.process import may_be_running
from storage.records import (
    ChunkRecord,
    DocumentRecord,
    DocumentVersion,
    IndexWriteRecord,
    SegmentRecord,
    TextSpan,
)
from storage.repos.document_writes import (
    PENDING_DELETE,
    ROWS_PER_TRANSACTION,
    DocumentWriter,
    live_chunk,
    live_segment,
)

log = logging.getLogger(__name__)

__all__ = ["PENDING_DELETE", "DocumentRepo", "chunk_record", "segment_record"]

_IN_BATCH = 500
# Any fixed number: the advisory lock PostgreSQL transactions on index notes take, so they run one at a time.
_NOTES_LOCK = 0x7261_6762_6F74
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

    def __init__(
        self, db: Database, rows_per_transaction: int = ROWS_PER_TRANSACTION, graph: GraphMirror | None = None
    ) -> None:
        self._db = db
        self.writer = DocumentWriter(db, rows_per_transaction, graph)

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

    async def store_version(self, version: DocumentVersion, document_id: str) -> DocumentRecord:
        """Make `version` the document's content (`document_id` names a new document); raises DocumentNotStored."""
        (stored,) = await self.store_versions([(version, document_id)])
        if isinstance(stored, DocumentNotStored):
            raise stored
        return stored

    async def store_versions(
        self, versions: Sequence[tuple[DocumentVersion, str]], *, existing: Collection[str] = ()
    ) -> list[DocumentRecord | DocumentNotStored]:
        """Make each version its document's content; one outcome per version, in order.

        The rows are written in transactions of bounded size beside the live ones, then every document switches in
        one short transaction, each atomically: readers see the old version or the new one, whole. A version the
        database refuses, or whose document was deleted meanwhile (one of `existing`, which the caller read as
        stored, is never made again), fails alone as a DocumentNotStored, leaving its document as it was. The
        replaced version's rows stay, invisible, until rag.ingest.cleanup.settle clears them.
        """
        staged = await self.writer.stage(versions, existing)
        ready = [item for item in staged if not isinstance(item, DocumentNotStored)]
        switched = iter(await self.writer.switch(ready))
        outcomes: list[DocumentRecord | DocumentNotStored] = []
        refused: list[tuple[str, str]] = []
        for item in staged:
            if isinstance(item, DocumentNotStored):
                outcomes.append(item)
                continue
            done = next(switched)
            if isinstance(done, DocumentNotStored):
                refused.append((item.document_id, item.key))
                outcomes.append(done)
            else:
                outcomes.append(_record(done))
        for outcome in outcomes:
            if isinstance(outcome, DocumentNotStored):
                log.warning("documents=not_stored source=%s reason=%s", outcome.source_uri, outcome.reason)
        await self.writer.discard(refused)
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

    async def claim_index_write(
        self, chunk_ids: Sequence[str], document_ids: Sequence[str], *, owner: str, expires_at: datetime, now: datetime
    ) -> str | None:
        """Note chunks about to be written to the index, and claim their documents: None, with nothing noted, while
        another owner that may still be running holds an unexpired note on any of them.

        While the note lasts, only its owner (and a delete) writes or removes these documents' index objects, so no
        writer's clean-up can remove what another writer of the same document just stored.
        """
        row = IndexWrite(
            owner=owner, chunk_ids=list(chunk_ids), document_ids=sorted(set(document_ids)), expires_at=expires_at
        )
        async with self._db.session() as session:
            await self._one_at_a_time(session)
            if await self._claimed(session, set(document_ids), now, but=""):
                return None
            session.add(row)
        return row.id

    async def take_over_index_write(
        self, write_id: str, *, owner: str, expires_at: datetime, now: datetime
    ) -> IndexWriteRecord | None:
        """Make a note whose owner is gone or whose time is up `owner`'s, so no writer claims its documents while
        `owner` repairs it; None when it is gone, still live, or another live note claims one of its documents."""
        async with self._db.session() as session:
            await self._one_at_a_time(session)
            row = await session.get(IndexWrite, write_id)
            if row is None or _live(row.owner, row.expires_at, now):
                return None
            if await self._claimed(session, set(row.document_ids), now, but=write_id):
                return None
            row.owner = owner
            row.expires_at = expires_at
            session.add(row)
            return _note(row)

    async def begin_delete(self, document_id: str, *, owner: str, expires_at: datetime) -> tuple[DocumentRecord, str]:
        """Hide the document and its rows at once, mark it as being deleted and note the delete (which claims the
        document for its owner); returns the document as it was and the note's id. Raises NotFound.

        A writer already holding the document finds it deleted at its switch and removes what it wrote.
        """
        found = await self.writer.mark_deleting(document_id)
        if found is None:
            raise NotFound("document", document_id)
        row = IndexWrite(owner=owner, chunk_ids=[], document_ids=[document_id], expires_at=expires_at)
        async with self._db.session() as session:
            session.add(row)
        return _record(found), row.id

    async def _one_at_a_time(self, session: AsyncSession) -> None:
        """Serialize the transactions that read notes to write one: without it two could both see no claim."""
        if self._db.config.is_sqlite:
            # SQLite takes its one write lock at a transaction's first write; a write that changes nothing will do.
            await session.exec(delete(IndexWrite).where(false()))
        else:
            await session.exec(sql_text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=_NOTES_LOCK))  # type: ignore[call-overload]

    async def _claimed(self, session: AsyncSession, document_ids: set[str], now: datetime, *, but: str) -> bool:
        if not document_ids:
            return False
        statement = select(IndexWrite.id, IndexWrite.owner, IndexWrite.expires_at, IndexWrite.document_ids)
        for note_id, owner, expires_at, claimed in (await session.exec(statement)).all():
            if note_id != but and _live(owner, expires_at, now) and document_ids & set(claimed):
                return True
        return False

    async def end_index_write(self, write_id: str) -> None:
        """Drop the note: the chunks it names are committed, or were removed from the index again."""
        async with self._db.session() as session:
            await session.exec(delete(IndexWrite).where(col(IndexWrite.id) == write_id))

    async def expire_index_write(self, write_id: str, now: datetime) -> None:
        """End the note's hold on its documents but keep it for the repair: its clean-up did not finish."""
        async with self._db.session() as session:
            row = await session.get(IndexWrite, write_id)
            if row is not None:
                row.expires_at = now
                session.add(row)

    async def unfinished_index_writes(self) -> list[IndexWriteRecord]:
        """Every index write whose end was not recorded (in flight, or left by a crash)."""
        async with self._db.session() as session:
            rows = (await session.exec(select(IndexWrite))).all()
        return [_note(row) for row in rows]

    async def committed_chunk_ids(self, chunk_ids: Sequence[str]) -> set[str]:
        """Those of `chunk_ids` that a document's live version holds."""
        found: set[str] = set()
        async with self._db.session() as session:
            for first in range(0, len(chunk_ids), _IN_BATCH):
                batch = list(chunk_ids[first : first + _IN_BATCH])
                statement = select(Chunk.id).join(Document, live_chunk()).where(col(Chunk.id).in_(batch))
                found.update((await session.exec(statement)).all())
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
                statement = select(Chunk, Document.title).join(Document, live_chunk()).where(col(Chunk.id).in_(batch))
                rows = (await session.exec(statement)).all()
                found.extend((chunk_record(chunk), title) for chunk, title in rows)
        return found

    async def document_chunks(self, document_id: str) -> list[ChunkRecord]:
        """Every chunk of a document, in position order."""
        async with self._db.session() as session:
            rows = (
                await session.exec(
                    select(Chunk)
                    .join(Document, live_chunk())
                    .where(Chunk.document_id == document_id)
                    .order_by(col(Chunk.position))
                )
            ).all()
        return [chunk_record(row) for row in rows]

    async def segments(self, document_id: str) -> list[SegmentRecord]:
        """Every parent of a document, in position order."""
        async with self._db.session() as session:
            rows = (
                await session.exec(
                    select(Segment)
                    .join(Document, live_segment())
                    .where(Segment.document_id == document_id)
                    .order_by(col(Segment.position))
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
                statement = select(Segment).join(Document, live_segment()).where(col(Segment.id).in_(batch))
                rows = (await session.exec(statement)).all()
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
                rows = (await session.exec(select(Chunk).join(Document, live_chunk()).where(or_(*overlaps)))).all()
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


def _live(owner: str, expires_at: datetime, now: datetime) -> bool:
    """Whether a note's owner may still be at work: its time is not up and its process may be running."""
    return expires_at > now and may_be_running(owner)


def _note(row: IndexWrite) -> IndexWriteRecord:
    return IndexWriteRecord(row.id, row.owner, tuple(row.chunk_ids), row.expires_at, tuple(row.document_ids))
