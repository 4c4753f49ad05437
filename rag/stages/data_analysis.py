"""The DATA_ANALYSIS stage: questions over spreadsheets answered with SQL on their rows, the result a source."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rag.errors import ModelError
from rag.pipeline import TurnContext
from rag.ports import ChatModel, TableStore
from rag.tables import parse_plan, plan_messages, result_cells, result_text
from rag.types import Candidate
from storage.errors import RefusedQuery, TablesUnavailable
from storage.tables.records import QueryResult, TableSchema

log = logging.getLogger(__name__)

TABLE_LEG = "table"


class TableSwitch(Protocol):
    """Which knowledge bases an admin opened for data analysis (met by storage.repos.knowledge_bases)."""

    async def tables_on(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` switched on (`/tables on`)."""
        ...


@dataclass(frozen=True, slots=True)
class TableParts:
    """What data analysis needs besides the model: the tables and the knowledge bases' switches."""

    store: TableStore
    switch: TableSwitch


class DataAnalysis:
    """Reads search_query, kb_ids, selected; writes selected (the query's result first, its tables' chunks dropped).

    Runs only with a model, when a selected passage comes from a tabular document of a knowledge base switched on.
    Whatever goes wrong (an unreadable plan, a refused or failed query) is logged once and the answer is given from
    the passages as they were.
    """

    name = "DATA_ANALYSIS"

    def __init__(self, model: ChatModel | None, parts: TableParts) -> None:
        self._model = model
        self._tables = parts.store
        self._switch = parts.switch

    async def run(self, turn: TurnContext) -> str:
        if self._model is None:
            return "skipped=no_model"
        documents = list(dict.fromkeys(c.document_id for c in turn.selected if c.document_id))
        readable = sorted({c.kb_id for c in turn.selected if c.document_id} & set(turn.kb_ids))
        if not documents or not readable:
            return "skipped=no_documents"
        # Every table of the chat's switched-on knowledge bases may be read, not only those of the passages shown.
        allowed = await self._switch.tables_on(list(turn.kb_ids))
        kb_ids = sorted(allowed.intersection(readable))
        if not kb_ids:
            return "skipped=tables_off"
        try:
            schemas = await self._tables.schemas(documents, kb_ids)
        except TablesUnavailable as exc:
            # Another process writing the file (an ingestion from the terminal): this answer goes without it.
            log.warning("data_analysis=skipped reason=tables_unavailable error=%s", exc)
            return "tables_unavailable"
        if not schemas:
            return f"skipped=no_tables documents={len(documents)}"
        try:
            reply = await self._model.complete(plan_messages(turn.search_query, schemas))
        except ModelError as exc:
            log.warning("data_analysis=skipped reason=model_error error=%s", type(exc).__name__)
            return "model_error"
        plan = parse_plan(reply)
        if plan is None:
            log.warning("data_analysis=skipped reason=unreadable_plan")
            return "unreadable_plan"
        if not plan.needs_sql:
            return "sql=not_needed"
        try:
            result = await self._tables.run(plan.sql, allowed)
        except RefusedQuery as exc:
            log.warning("data_analysis=refused reason=%s", exc.reason)
            return f"refused {exc.reason}"
        except TablesUnavailable as exc:
            log.warning("data_analysis=skipped reason=tables_unavailable error=%s", exc)
            return "tables_unavailable"
        turn.selected = _with_result(turn.selected, schemas, result, plan.sql)
        return f"rows={len(result.rows)} tables={len(result.tables)}"


def _with_result(
    selected: Sequence[Candidate], schemas: Sequence[TableSchema], result: QueryResult, sql: str
) -> list[Candidate]:
    """The result as the first passage, and the passages of the documents it read dropped (the seed's rule: their
    rows are in the result, and the chunks would only repeat some of them)."""
    read = {schema.document_id for schema in schemas if schema.name in result.tables}
    shown = next((s for s in schemas if s.name in result.tables), schemas[0])
    source = _source_candidate(selected, shown, result, sql)
    return [source, *(c for c in selected if c.document_id not in read)]


def _source_candidate(selected: Sequence[Candidate], schema: TableSchema, result: QueryResult, sql: str) -> Candidate:
    sibling = next((c for c in selected if c.document_id == schema.document_id), None)
    title = sibling.metadata.get("title") if sibling else None
    digest = hashlib.sha256(f"{schema.name}\n{sql}".encode()).hexdigest()[:16]
    return Candidate(
        id=f"table:{digest}",
        kind="chunk",
        kb_id=schema.kb_id,
        text=result_text(result, sql),
        score=max((c.score for c in selected), default=1.0),
        legs=frozenset({TABLE_LEG}),
        document_id=schema.document_id,
        metadata={
            "title": title if isinstance(title, str) else "",
            "sql": sql,
            "table": result_cells(result),
            "truncated": result.truncated,
        },
    )
