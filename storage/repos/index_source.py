"""What a reindex reads from SQL, the system of record: a knowledge base's chunks with titles, a page at a time."""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import col, select

from storage.db import Database
from storage.models import Chunk, Document
from storage.records import ChunkRecord


class IndexSourceRepo:
    """The chunk and document tables, read in chunk-id order for rebuilding the index."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def chunk_count(self, kb_id: str) -> int:
        """How many chunks the knowledge base holds."""
        async with self._db.session() as session:
            count = (await session.exec(select(func.count()).select_from(Chunk).where(Chunk.kb_id == kb_id))).one()
        return int(count)

    async def chunk_page(self, kb_id: str, after: str, limit: int) -> list[ChunkRecord]:
        """Up to `limit` of the knowledge base's chunks with ids above `after` ("" for the first page), in id order,
        each with its document's title (`bm25_text` is left empty: the caller cuts it)."""
        async with self._db.session() as session:
            statement = (
                select(Chunk, Document.title)
                .join(Document, col(Chunk.document_id) == col(Document.id))
                .where(Chunk.kb_id == kb_id, col(Chunk.id) > after)
                .order_by(col(Chunk.id))
                .limit(limit)
            )
            rows = (await session.exec(statement)).all()
        return [_record(chunk, title) for chunk, title in rows]


def _record(row: Chunk, title: str) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=row.id,
        kb_id=row.kb_id,
        document_id=row.document_id,
        segment_id=row.segment_id,
        position=row.position,
        start=row.start_offset,
        end=row.end_offset,
        text=row.text,
        bm25_text="",
        chunk_type=str(row.meta.get("chunk_type", "text")),
        metadata={key: value for key, value in row.meta.items() if key != "chunk_type"},
        title=title,
    )
