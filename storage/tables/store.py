"""The tables: each tabular document's sheets kept in the relational store, queried in this process's DuckDB copy.

SQL holds the rows (storage.tables.sheets), so every instance and every command sees what any of them ingested, and a
backup of the store holds them too. Each process keeps a DuckDB file of its own as a cache: before a read, the tables
it needs are made from SQL when missing or when their rows' digest differs, and those of documents gone are dropped.
Queries open the file read-only with external access, extension loading and the configuration locked, so a query the
guard let through still cannot read a file, fetch a URL or load code. DuckDB lets one process hold the file for
writing, and a process may not open it twice with different settings: a lock serialises this process's uses of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import duckdb

from storage.db import Database
from storage.errors import RefusedQuery, TablesUnavailable
from storage.tables.columns import as_type, column_type, safe_names, typed
from storage.tables.guard import check_query
from storage.tables.records import QueryResult, Sheet, StoredSheet, TableConfig, TableSchema
from storage.tables.sheets import SheetRepo

log = logging.getLogger(__name__)

# The catalog of document tables: no model-written query may read it (it is no document's table).
_CATALOG = "_ragbot_tables"
_LOCKED = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}
_SAMPLE_ROWS = 3
_INSERT_ROWS = 50_000


@dataclass(frozen=True, slots=True)
class _Cached:
    """A table this process's file holds, and the digest of the rows it was made from (None: an older file's)."""

    document_id: str
    kb_id: str
    digest: str | None


class TableStore:
    """Stores documents' sheets in SQL; describes and queries them in this process's DuckDB copy, made up to date."""

    def __init__(self, config: TableConfig, db: Database) -> None:
        self.config = config
        self._sheets = SheetRepo(db)
        self._lock = threading.Lock()

    async def write(self, kb_id: str, document_id: str, sheets: Sequence[Sheet], *, version: str) -> int:
        """Replace the document's tables with these sheets' (none: its tables go) while `version` is its live one;
        the tables written (0 too when a newer version went live meanwhile: its own write follows)."""
        stored = await self._sheets.replace(kb_id, document_id, version, sheets)
        if stored is None:
            log.info("tables=not_written document=%s reason=version_not_live", document_id)
            return 0
        log.info("tables=written document=%s tables=%d", document_id, stored)
        return stored

    async def drop_documents(self, document_ids: Sequence[str]) -> None:
        """Drop these documents' tables."""
        await self._sheets.drop_documents(document_ids)

    async def drop_kb(self, kb_id: str) -> None:
        """Drop every table of a knowledge base."""
        await self._sheets.drop_kb(kb_id)

    async def schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        """The tables of these documents that belong to these knowledge bases, with a few sample rows each."""
        if not document_ids or not kb_ids:
            return []
        live = await self._sheets.live(document_ids=document_ids)
        documents, names = set(document_ids), {sheet.name for sheet in live}
        wanted = [sheet for sheet in live if sheet.kb_id in kb_ids]
        await self._refresh(wanted, lambda name, table: table.document_id in documents and name not in names)
        if not wanted:
            return []
        return await asyncio.to_thread(self._schemas, [sheet.name for sheet in wanted])

    async def run(self, sql: str, kb_ids: Collection[str]) -> QueryResult:
        """Run one checked SELECT over the tables of `kb_ids`; RefusedQuery when the guard or DuckDB refuses it."""
        live = await self._sheets.live(kb_ids=kb_ids) if kb_ids else []
        if not live:
            raise RefusedQuery("no_tables")
        allowed, knowledge_bases = {sheet.name for sheet in live}, set(kb_ids)
        # Checked before anything is made, so only the tables it reads are brought up to date (checked again below,
        # against every table the file holds).
        read = check_query(sql, allowed, allowed)
        await self._refresh(
            [sheet for sheet in live if sheet.name in read],
            lambda name, table: table.kb_id in knowledge_bases and name not in allowed,
        )
        return await asyncio.to_thread(self._run, sql, allowed)

    async def _refresh(self, needed: Sequence[StoredSheet], gone: Callable[[str, _Cached], bool]) -> None:
        """Make the `needed` tables the file lacks or holds other rows for, and drop the tables that are `gone`."""
        cached = await asyncio.to_thread(self._cached)
        stale = [sheet for sheet in needed if (table := cached.get(sheet.name)) is None or table.digest != sheet.digest]
        dropped = [name for name, table in cached.items() if gone(name, table)]
        if not stale and not dropped:
            return
        began = time.monotonic()
        loaded = await self._sheets.rows([sheet.id for sheet in stale]) if stale else {}
        made = await asyncio.to_thread(self._make, stale, loaded, dropped)
        log.info("tables=refreshed made=%d dropped=%d ms=%.1f", made, len(dropped), (time.monotonic() - began) * 1000)

    @contextmanager
    def _open(self, *, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            try:
                if read_only:
                    config: dict[str, str | bool | int | float | list[str]] = {
                        **_LOCKED,
                        "memory_limit": self.config.memory_limit,
                        "threads": 1,
                    }
                    connection = duckdb.connect(str(self.config.path), read_only=True, config=config)
                else:
                    self.config.path.parent.mkdir(parents=True, exist_ok=True)
                    connection = duckdb.connect(
                        str(self.config.path),
                        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
                    )
            except duckdb.Error as exc:
                raise TablesUnavailable(f"tables file {self.config.path}: {exc}") from exc
            try:
                yield connection
            finally:
                connection.close()

    def _cached(self) -> dict[str, _Cached]:
        """The tables the file holds (made, with its catalog, when there is none yet, or brought to this catalog)."""
        listing = f"SELECT name, document_id, kb_id, digest FROM {_CATALOG}"
        rows = None
        if self.config.path.exists():
            # Read-only first, as most reads find the file as it should be (it opens a little faster).
            with self._open(read_only=True) as db, suppress(duckdb.CatalogException, duckdb.BinderException):
                rows = db.execute(listing).fetchall()
        if rows is None:
            with self._open(read_only=False) as db:
                _ensure_catalog(db)
                rows = db.execute(listing).fetchall()
        return {name: _Cached(document_id, kb_id, digest) for name, document_id, kb_id, digest in rows}

    def _make(
        self, stale: Sequence[StoredSheet], loaded: Mapping[str, tuple[str, Sheet]], dropped: Sequence[str]
    ) -> int:
        """In one transaction: drop the `dropped` tables, and make each stale one from its rows (one replaced since it
        was listed is dropped too, and made by the next read); how many were made."""
        made = 0
        with self._open(read_only=False) as db:
            _ensure_catalog(db)
            db.execute("BEGIN TRANSACTION")
            try:
                digests = dict(db.execute(f"SELECT name, digest FROM {_CATALOG}").fetchall())
                # Another turn of this process may have made the same rows meanwhile.
                todo = [s for s in stale if s.id not in loaded or digests.get(s.name) != loaded[s.id][0]]
                _drop_tables(db, [*dropped, *(sheet.name for sheet in todo)])
                for sheet in todo:
                    if sheet.id in loaded:
                        digest, rows = loaded[sheet.id]
                        _create(db, sheet, rows, digest)
                        made += 1
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return made

    def _schemas(self, names: Sequence[str]) -> list[TableSchema]:
        with self._open(read_only=True) as db:
            rows = db.execute(
                f"SELECT name, document_id, kb_id, sheet, columns, row_count FROM {_CATALOG} "
                "WHERE list_contains(?, name) ORDER BY name",
                [list(names)],
            ).fetchall()
            return [
                TableSchema(
                    name=name,
                    document_id=document_id,
                    kb_id=kb_id,
                    sheet=sheet,
                    columns=tuple(tuple(column) for column in json.loads(columns)),
                    row_count=row_count,
                    samples=tuple(db.execute(f"SELECT * FROM {_quoted(name)} LIMIT {_SAMPLE_ROWS}").fetchall()),
                )
                for name, document_id, kb_id, sheet, columns, row_count in rows
            ]

    def _run(self, sql: str, allowed: Collection[str]) -> QueryResult:
        with self._open(read_only=True) as db:
            held = {name for (name,) in db.execute(f"SELECT name FROM {_CATALOG}").fetchall()}
            read = check_query(sql, allowed, held | set(allowed) | {_CATALOG})
            timer = threading.Timer(self.config.timeout, db.interrupt)
            timer.start()
            try:
                cursor = db.execute(sql)
                rows = cursor.fetchmany(self.config.max_rows + 1)
            except duckdb.InterruptException as exc:
                raise RefusedQuery(f"timeout={self.config.timeout:g}s") from exc
            except duckdb.Error as exc:
                raise RefusedQuery(f"failed={type(exc).__name__}") from exc
            finally:
                timer.cancel()
            columns = tuple(str(column[0]) for column in cursor.description or ())
        return QueryResult(
            columns=columns,
            rows=tuple(tuple(row) for row in rows[: self.config.max_rows]),
            truncated=len(rows) > self.config.max_rows,
            tables=tuple(sorted(read)),
        )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ensure_catalog(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {_CATALOG} (name VARCHAR PRIMARY KEY, document_id VARCHAR, kb_id VARCHAR, "
        "sheet VARCHAR, columns VARCHAR, row_count BIGINT, digest VARCHAR)"
    )
    # A file written before the rows lived in SQL: its tables have no digest, so each is made again when read.
    db.execute(f"ALTER TABLE {_CATALOG} ADD COLUMN IF NOT EXISTS digest VARCHAR")


def _drop_tables(db: duckdb.DuckDBPyConnection, names: Sequence[str]) -> None:
    for name in names:
        db.execute(f"DROP TABLE IF EXISTS {_quoted(name)}")
    db.execute(f"DELETE FROM {_CATALOG} WHERE list_contains(?, name)", [list(names)])


def _create(db: duckdb.DuckDBPyConnection, stored: StoredSheet, sheet: Sheet, digest: str) -> None:
    name = stored.name
    header = [("" if cell is None else str(cell)).strip() for cell in sheet.rows[0]]
    body = [[typed(cell) if isinstance(cell, str) else cell for cell in row] for row in sheet.rows[1:]]
    width = max([len(header), *(len(row) for row in body)])
    header += [""] * (width - len(header))
    body = [row + [None] * (width - len(row)) for row in body]
    names = safe_names(header)
    kinds = [column_type([row[index] for row in body]) for index in range(width)]
    definition = ", ".join(f"{_quoted(column)} {kind}" for column, kind in zip(names, kinds, strict=True))
    db.execute(f"CREATE TABLE {_quoted(name)} ({definition})")
    for start in range(0, len(body), _INSERT_ROWS):
        # One list per column, zipped by unnest: a statement per slice instead of one per row (~100x faster).
        piece = body[start : start + _INSERT_ROWS]
        lists = [[as_type(row[index], kind) for row in piece] for index, kind in enumerate(kinds)]
        unnests = ", ".join(f"unnest(?::{kind}[])" for kind in kinds)
        db.execute(f"INSERT INTO {_quoted(name)} SELECT {unnests}", lists)
    columns = [[safe, original, kind] for safe, original, kind in zip(names, header, kinds, strict=True)]
    db.execute(
        f"INSERT INTO {_CATALOG} (name, document_id, kb_id, sheet, columns, row_count, digest) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            name,
            stored.document_id,
            stored.kb_id,
            sheet.name,
            json.dumps(columns, ensure_ascii=False),
            len(body),
            digest,
        ],
    )
