"""Data analysis over tables, the pure parts: the model's prompt, its JSON plan, and a result as a table."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.ingest.extractors.tabular import format_cell, pipe_rows
from rag.types import ChatMessage
from storage.tables.records import QueryResult, TableSchema

# The seed's data-analysis prompt shape: the schema with a few rows, a JSON answer saying whether SQL is needed.
_SYSTEM = (
    "You answer questions about spreadsheet tables stored in DuckDB by writing one SQL query when the question "
    "needs counting, summing, averaging, filtering or grouping rows. Reply with JSON only: "
    '{"needs_sql": true, "sql": "SELECT ..."} or {"needs_sql": false, "sql": ""}. '
    "Write a single read-only SELECT over the tables listed, quoting table names in double quotes exactly as given. "
    "Use the column names as given (the header as written is shown beside each)."
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
# A cell shown to the model in the samples, or under an answer, is cut past this many characters.
_CELL_CHARS = 80


@dataclass(frozen=True, slots=True)
class Plan:
    """What the model decided: whether SQL answers the question, and the query."""

    needs_sql: bool
    sql: str


def plan_messages(question: str, schemas: Sequence[TableSchema]) -> list[ChatMessage]:
    """The prompt: the question and each table's columns, types, row count and sample rows."""
    described = "\n\n".join(describe(schema) for schema in schemas)
    return [
        ChatMessage("system", _SYSTEM),
        ChatMessage("user", f"Tables:\n\n{described}\n\nQuestion: {question}"),
    ]


def describe(schema: TableSchema) -> str:
    """One table as the model reads it."""
    sheet = f" (sheet {schema.sheet!r})" if schema.sheet else ""
    columns = "\n".join(
        f"- {name} {kind}" + (f"  -- header: {original!r}" if original != name else "")
        for name, original, kind in schema.columns
    )
    samples = pipe_rows([[name for name, _, _ in schema.columns], *([_cell(v) for v in row] for row in schema.samples)])
    return f'Table "{schema.name}"{sheet}, {schema.row_count} rows. Columns:\n{columns}\nSample rows:\n' + "\n".join(
        samples
    )


def parse_plan(reply: str) -> Plan | None:
    """The model's JSON plan, tolerating a code fence around it; None when it is not that JSON."""
    try:
        value = json.loads(_FENCE.sub("", reply.strip()))
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("needs_sql"), bool):
        return None
    sql = value.get("sql", "")
    if not isinstance(sql, str) or (value["needs_sql"] and not sql.strip()):
        return None
    return Plan(value["needs_sql"], sql.strip())


def result_cells(result: QueryResult) -> list[list[str]]:
    """The result as text cells, the column names first: what sources render as a table."""
    return [list(result.columns), *([_cell(value) for value in row] for row in result.rows)]


def result_text(result: QueryResult, sql: str) -> str:
    """The result as the model reads it: the query, then a Markdown table, with a note when rows were cut."""
    rows = len(result.rows)
    more = f", the first {rows} shown" if result.truncated else ""
    lines = pipe_rows(result_cells(result)) if result.columns else []
    return f"Result of the SQL query `{sql}` ({rows} rows{more}):\n\n" + "\n".join(lines)


def _cell(value: object) -> str:
    text = format_cell(value)
    return text if len(text) <= _CELL_CHARS else text[: _CELL_CHARS - 1] + "…"
