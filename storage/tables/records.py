"""What goes into the tables and comes out of them: sheets, stored sheets, table schemas, query results, limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.tables.columns import Cell


@dataclass(frozen=True, slots=True)
class Sheet:
    """A table as extracted: its sheet's name ('' for a CSV) and its rows, the header row first."""

    name: str
    rows: Sequence[Sequence[Cell]]


@dataclass(frozen=True, slots=True)
class StoredSheet:
    """A sheet as the relational store holds it, without its rows: the table it makes and the digest of its rows."""

    id: str
    name: str
    document_id: str
    kb_id: str
    sheet: str
    digest: str


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Where this process keeps its copy of the tables, and how far a query may go."""

    path: Path
    # Rows of a result shown and given to the model; the seed shows a page, not the sheet.
    max_rows: int = 50
    timeout: float = 5.0
    memory_limit: str = "256MB"


@dataclass(frozen=True, slots=True)
class TableSchema:
    """What the model is shown of a table: its name, columns (safe name, header as written, type), size, samples."""

    name: str
    document_id: str
    kb_id: str
    sheet: str
    columns: tuple[tuple[str, str, str], ...]
    row_count: int
    samples: tuple[tuple[object, ...], ...]


@dataclass(frozen=True, slots=True)
class QueryResult:
    """A query's columns and rows, at most the row cap of them; `truncated` when there were more."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    truncated: bool
    # The document tables it read.
    tables: tuple[str, ...]
