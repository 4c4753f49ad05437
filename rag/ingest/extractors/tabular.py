"""Rows of a table as lines: 'column: value | column: value' for CSV and spreadsheets (each row names its
columns), Markdown pipe rows for the tables inside documents (Word, HTML, slides)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from rag.ingest.types import Cell, ExtractedTable

# Labelled lines may be this many times the cells they name, plus this many characters (a few pages of a sheet
# with long column names), before the header stops being repeated.
_GROWTH = 8
_SLACK = 100_000


def format_rows(rows: Iterable[Sequence[object]]) -> list[str]:
    """The first non-empty row names the columns; every later row becomes one line of its non-empty cells.

    A table that is only a header row yields that row joined by ' | ', so its words are not lost. Naming every cell
    repeats the header once a row, so long column names over short cells multiply the text (a 5 MB CSV gave
    200 MB): once the lines pass `_GROWTH` times the cells plus `_SLACK`, the rest follow as pipe rows under
    the header, said once.
    """
    header: list[str] | None = None
    lines: list[str] = []
    seen = written = 0
    piped = False
    for row in rows:
        cells = [format_cell(value) for value in row]
        if not any(cells):
            continue
        if header is None:
            header = cells
            continue
        seen += sum(len(cell) + 1 for cell in cells)
        if not piped:
            line = " | ".join(f"{_column_name(header, index)}: {cell}" for index, cell in enumerate(cells) if cell)
            if written + len(line) <= _GROWTH * seen + _SLACK:
                lines.append(line)
                written += len(line)
                continue
            piped = True
            lines.extend(pipe_rows([header, cells]))
            continue
        lines.extend(pipe_rows([cells]))
    if header is not None and not lines:
        return [" | ".join(cell for cell in header if cell)]
    return lines


def kept_table(name: str, rows: Iterable[Sequence[object]]) -> ExtractedTable:
    """A sheet's non-empty rows as cells the tables store takes: numbers as they are, dates and the rest as text."""
    kept = (tuple(_cell(value) for value in row) for row in rows)
    return ExtractedTable(name, tuple(row for row in kept if any(cell not in (None, "") for cell in row)))


def _cell(value: object) -> Cell:
    if value is None or isinstance(value, bool | int | float):
        return value
    return format_cell(value)


def pipe_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """A document's table as Markdown pipe rows, '| a | b |', with a delimiter row under the first when more follow.

    Each row stays one line that starts with '|', so the splitter keeps rows whole and repeats the header row,
    and an answer quotes a row as a row instead of running it into the next one. A '|' inside a cell is escaped.
    """
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    if len(lines) > 1:
        lines.insert(1, "|" + " --- |" * len(rows[0]))
    return lines


def format_cell(value: object) -> str:
    """A cell value as one line of text: whole floats without '.0', midnight datetimes as dates."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return " ".join(str(value).split())


def _column_name(header: list[str], index: int) -> str:
    if index < len(header) and header[index]:
        return header[index]
    return f"column {index + 1}"
