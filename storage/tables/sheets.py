"""Each tabular document's sheets in the relational store: what every process's tables file is made from.

A sheet is written once its document's version is live, and read only while that version still is (as chunks are
joined to their document's live version), so a version being replaced, or a document being deleted, shows none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import and_, delete, insert, update
from sqlalchemy import select as sql_select
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from storage.db import Database
from storage.errors import TablesUnavailable, first_line
from storage.models import Document, DocumentSheet, new_id
from storage.tables.records import Sheet, StoredSheet

# Documents a statement names at most (bound parameters stay far under SQLite's limits).
_IN_BATCH = 500


def table_name(document_id: str, position: int) -> str:
    """The table a document's sheet makes: the document's id, then `<id>_2`, `<id>_3`... for later sheets."""
    return document_id if position == 0 else f"{document_id}_{position + 1}"


def live_sheet() -> Any:
    """A sheet row joined to its document row only while its version is the document's live one."""
    return and_(col(DocumentSheet.document_id) == col(Document.id), col(DocumentSheet.version) == col(Document.version))


class SheetRepo:
    """Stores, lists, reads and removes documents' sheets."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def replace(self, kb_id: str, document_id: str, version: str, sheets: Sequence[Sheet]) -> int | None:
        """Store the sheets that have rows as the document's, in place of those it had, while `version` is its live
        one; how many were stored, None when it is not (a newer version went live, or the document is being deleted).
        """
        kept = [sheet for sheet in sheets if sheet.rows]
        rows = [_row(kb_id, document_id, version, position, sheet) for position, sheet in enumerate(kept)]
        try:
            async with self._db.session() as session:
                connection = await session.connection()
                # Written first, the document row stays held until this commits: a newer version's switch or a delete
                # waits for it, and one that came first has changed the version, so nothing is written here.
                held = await connection.execute(
                    update(Document)
                    .where(col(Document.id) == document_id, col(Document.version) == version)
                    .values(version=col(Document.version))
                )
                if not held.rowcount:
                    return None
                await connection.execute(delete(DocumentSheet).where(col(DocumentSheet.document_id) == document_id))
                if rows:
                    await connection.execute(insert(DocumentSheet), rows)
        except SQLAlchemyError as exc:
            raise TablesUnavailable(f"document sheets: {first_line(exc)}") from exc
        return len(rows)

    async def live(
        self, *, document_ids: Sequence[str] | None = None, kb_ids: Collection[str] | None = None
    ) -> list[StoredSheet]:
        """The live sheets of these documents, or of these knowledge bases, without their rows."""
        # SQLAlchemy's own select: SQLModel's types a select of at most four columns.
        base = sql_select(
            col(DocumentSheet.id),
            col(DocumentSheet.document_id),
            col(DocumentSheet.kb_id),
            col(DocumentSheet.position),
            col(DocumentSheet.name),
            col(DocumentSheet.digest),
        ).join(Document, live_sheet())
        if kb_ids is not None:
            base = base.where(col(DocumentSheet.kb_id).in_(list(kb_ids)))
        statements = [base] if document_ids is None else list(_by_documents(base, document_ids))
        found: list[StoredSheet] = []
        async with self._db.session() as session:
            connection = await session.connection()
            for statement in statements:
                for sheet_id, document_id, kb_id, position, name, digest in (await connection.execute(statement)).all():
                    found.append(
                        StoredSheet(sheet_id, table_name(document_id, position), document_id, kb_id, name, digest)
                    )
        return sorted(found, key=lambda sheet: sheet.name)

    async def rows(self, sheet_ids: Sequence[str]) -> dict[str, tuple[str, Sheet]]:
        """By sheet id, the digest and rows of those of `sheet_ids` still stored."""
        found: dict[str, tuple[str, Sheet]] = {}
        async with self._db.session() as session:
            for first in range(0, len(sheet_ids), _IN_BATCH):
                statement = select(
                    DocumentSheet.id, DocumentSheet.digest, DocumentSheet.name, DocumentSheet.rows
                ).where(col(DocumentSheet.id).in_(list(sheet_ids[first : first + _IN_BATCH])))
                for sheet_id, digest, name, rows in (await session.exec(statement)).all():
                    found[sheet_id] = (digest, Sheet(name, json.loads(rows)))
        return found

    async def drop_documents(self, document_ids: Sequence[str]) -> None:
        """Remove these documents' sheets."""
        async with self._db.session() as session:
            for first in range(0, len(document_ids), _IN_BATCH):
                batch = list(document_ids[first : first + _IN_BATCH])
                await session.exec(delete(DocumentSheet).where(col(DocumentSheet.document_id).in_(batch)))

    async def drop_kb(self, kb_id: str) -> None:
        """Remove every sheet of a knowledge base."""
        async with self._db.session() as session:
            await session.exec(delete(DocumentSheet).where(col(DocumentSheet.kb_id) == kb_id))


def _by_documents(base: Any, document_ids: Sequence[str]) -> Any:
    unique = list(dict.fromkeys(document_ids))
    for first in range(0, len(unique), _IN_BATCH):
        yield base.where(col(DocumentSheet.document_id).in_(unique[first : first + _IN_BATCH]))


def _row(kb_id: str, document_id: str, version: str, position: int, sheet: Sheet) -> dict[str, Any]:
    rows = json.dumps([list(row) for row in sheet.rows], ensure_ascii=False, default=_iso)
    return {
        "id": new_id(),
        "document_id": document_id,
        "kb_id": kb_id,
        "position": position,
        "name": sheet.name,
        "rows": rows,
        "row_count": max(0, len(sheet.rows) - 1),
        "digest": hashlib.sha256(rows.encode()).hexdigest(),
        "version": version,
    }


def _iso(value: object) -> str:
    """Dates and times as ISO text, which the tables file reads back as dates (storage.tables.columns.typed)."""
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__} is no table cell")
