"""What a reindex reads from SQL, the system of record: a knowledge base's chunks with titles, a page at a time."""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import col, select

from storage.db import Database
from storage.models import Chunk, Document
from storage.records import ChunkRecord
from storage.repos.document_writes import live_chunk
from storage.repos.documents import chunk_record


class IndexSourceRepo:
    """The chunk and document tables, read in chunk-id order for rebuilding the index."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def chunk_count(self, kb_id: str) -> int:
        """How many chunks the knowledge base's live document versions hold."""
        async with self._db.session() as session:
            statement = select(func.count()).select_from(Chunk).join(Document, live_chunk()).where(Chunk.kb_id == kb_id)
            count = (await session.exec(statement)).one()
        return int(count)

    async def chunk_page(self, kb_id: str, after: str, limit: int) -> list[ChunkRecord]:
        """Up to `limit` of the knowledge base's chunks with ids above `after` ("" for the first page), in id order,
        each with its document's title (`bm25_text` is left empty: the caller cuts it)."""
        async with self._db.session() as session:
            statement = (
                select(Chunk, Document.title)
                .join(Document, live_chunk())
                .where(Chunk.kb_id == kb_id, col(Chunk.id) > after)
                .order_by(col(Chunk.id))
                .limit(limit)
            )
            rows = (await session.exec(statement)).all()
        return [chunk_record(chunk, title=title) for chunk, title in rows]
