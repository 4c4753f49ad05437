"""The tables file: each tabular document's rows as one DuckDB table per sheet, and read-only queries over them.

One file beside the other data files. Writes open it read-write for the one transaction and close it; queries open it
read-only with external access, extension loading and the configuration locked, so a query the guard let through
still cannot read a file, fetch a URL or load code. DuckDB lets one process hold the file for writing, and a
process may not open it twice with different settings: a lock serialises this process's uses of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

import duckdb

from storage.errors import RefusedQuery, TablesUnavailable
from storage.tables.columns import as_type, column_type, safe_names, typed
from storage.tables.guard import check_query
from storage.tables.records import QueryResult, Sheet, TableConfig, TableSchema

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


class TableStore:
    """Writes, drops, describes and queries the document tables of one DuckDB file."""

    def __init__(self, config: TableConfig) -> None:
        self.config = config
        self._lock = threading.Lock()

    async def write(self, kb_id: str, document_id: str, sheets: Sequence[Sheet]) -> int:
        """Replace the document's tables with these sheets' (none: its tables are dropped); the tables written."""
        return await asyncio.to_thread(self._write, kb_id, document_id, sheets)

    async def drop_documents(self, document_ids: Sequence[str]) -> None:
        """Drop these documents' tables."""
        await asyncio.to_thread(self._drop, "document_id", document_ids)

    async def drop_kb(self, kb_id: str) -> None:
        """Drop every table of a knowledge base."""
        await asyncio.to_thread(self._drop, "kb_id", [kb_id])

    async def schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        """The tables of these documents that belong to these knowledge bases, with a few sample rows each."""
        return await asyncio.to_thread(self._schemas, document_ids, kb_ids)

    async def run(self, sql: str, kb_ids: Collection[str]) -> QueryResult:
        """Run one checked SELECT over the tables of `kb_ids`; RefusedQuery when the guard or DuckDB refuses it."""
        return await asyncio.to_thread(self._run, sql, kb_ids)

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

    def _exists(self) -> bool:
        return self.config.path.exists()

    def _write(self, kb_id: str, document_id: str, sheets: Sequence[Sheet]) -> int:
        if not sheets and not self._exists():
            return 0
        written = 0
        with self._open(read_only=False) as db:
            _ensure_catalog(db)
            db.execute("BEGIN TRANSACTION")
            try:
                _drop_tables(db, "document_id", [document_id])
                for sheet in sheets:
                    if len(sheet.rows) < 1:
                        continue
                    name = document_id if written == 0 else f"{document_id}_{written + 1}"
                    _create(db, name, kb_id, document_id, sheet)
                    written += 1
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        log.info("tables=written document=%s tables=%d", document_id, written)
        return written

    def _drop(self, column: str, values: Sequence[str]) -> None:
        if not values or not self._exists():
            return
        with self._open(read_only=False) as db:
            _ensure_catalog(db)
            db.execute("BEGIN TRANSACTION")
            _drop_tables(db, column, values)
            db.execute("COMMIT")

    def _schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        if not document_ids or not kb_ids or not self._exists():
            return []
        with self._open(read_only=True) as db:
            if not _has_catalog(db):
                return []
            rows = db.execute(
                f"SELECT name, document_id, kb_id, sheet, columns, row_count FROM {_CATALOG} "
                "WHERE list_contains(?, document_id) AND list_contains(?, kb_id) ORDER BY name",
                [list(document_ids), list(kb_ids)],
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

    def _run(self, sql: str, kb_ids: Collection[str]) -> QueryResult:
        if not self._exists():
            raise RefusedQuery("no_tables")
        with self._open(read_only=True) as db:
            if not _has_catalog(db):
                raise RefusedQuery("no_tables")
            catalog = db.execute(f"SELECT name, kb_id FROM {_CATALOG}").fetchall()
            allowed = {name for name, kb_id in catalog if kb_id in kb_ids}
            read = check_query(sql, allowed, {name for name, _ in catalog})
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


def _has_catalog(db: duckdb.DuckDBPyConnection) -> bool:
    found = db.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [_CATALOG]
    ).fetchone()
    return bool(found and found[0])


def _ensure_catalog(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {_CATALOG} (name VARCHAR PRIMARY KEY, document_id VARCHAR, kb_id VARCHAR, "
        "sheet VARCHAR, columns VARCHAR, row_count BIGINT)"
    )


def _drop_tables(db: duckdb.DuckDBPyConnection, column: str, values: Sequence[str]) -> None:
    names = db.execute(f"SELECT name FROM {_CATALOG} WHERE list_contains(?, {column})", [list(values)]).fetchall()
    for (name,) in names:
        db.execute(f"DROP TABLE IF EXISTS {_quoted(name)}")
    db.execute(f"DELETE FROM {_CATALOG} WHERE list_contains(?, {column})", [list(values)])


def _create(db: duckdb.DuckDBPyConnection, name: str, kb_id: str, document_id: str, sheet: Sheet) -> None:
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
        f"INSERT INTO {_CATALOG} VALUES (?, ?, ?, ?, ?, ?)",
        [name, document_id, kb_id, sheet.name, json.dumps(columns, ensure_ascii=False), len(body)],
    )
