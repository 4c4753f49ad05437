"""The DATA_ANALYSIS stage's doors: no model, no tabular passage, no switch: the passages stay as they were."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Sequence

import pytest

from rag.pipeline import TurnContext
from rag.stages.data_analysis import DataAnalysis, TableParts
from rag.tables import parse_plan
from rag.types import Candidate, ChatMessage
from storage.errors import TablesUnavailable
from storage.tables.records import QueryResult, Sheet, TableSchema

SCHEMA = TableSchema("doc", "doc", "kb", "", (("n", "N", "BIGINT"),), 2, ((1,), (2,)))
CHUNK = Candidate("c1", "chunk", "kb", "N: 1", 0.9, document_id="doc")


class Tables:
    """The tables port over one table, recording what was asked of it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def write(self, kb_id: str, document_id: str, sheets: Sequence[Sheet], *, version: str) -> int:
        return 0

    async def drop_documents(self, document_ids: Sequence[str]) -> None: ...

    async def drop_kb(self, kb_id: str) -> None: ...

    async def schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        self.asked.append("schemas")
        return [SCHEMA] if "doc" in document_ids and "kb" in kb_ids else []

    async def run(self, sql: str, kb_ids: Collection[str]) -> QueryResult:
        self.asked.append(sql)
        return QueryResult(("total",), ((3,),), False, ("doc",))


class Switch:
    def __init__(self, on: set[str]) -> None:
        self.on = on

    async def tables_on(self, kb_ids: Sequence[str]) -> set[str]:
        return self.on & set(kb_ids)


class Model:
    """A chat model that always plans the same query."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    @property
    def model_id(self) -> str:
        return "scripted"

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        self.calls += 1
        return self.reply

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        yield self.reply


PLAN = '{"needs_sql": true, "sql": "SELECT sum(n) AS total FROM \\"doc\\""}'


async def test_without_a_model_the_stage_does_nothing() -> None:
    tables = Tables()
    turn = TurnContext("How many?", ("kb",), selected=[CHUNK])
    assert await DataAnalysis(None, TableParts(tables, Switch({"kb"}))).run(turn) == "skipped=no_model"
    assert turn.selected == [CHUNK]
    assert tables.asked == []


async def test_with_the_switch_off_the_model_is_not_asked() -> None:
    model, tables = Model(PLAN), Tables()
    turn = TurnContext("How many?", ("kb",), selected=[CHUNK])
    await DataAnalysis(model, TableParts(tables, Switch(set()))).run(turn)
    assert (model.calls, tables.asked, turn.selected) == (0, [], [CHUNK])


async def test_the_result_leads_the_passages_and_replaces_its_documents_chunks() -> None:
    other = Candidate("c2", "chunk", "kb", "Orders ship Mondays.", 0.5, document_id="doc2")
    turn = TurnContext("How many?", ("kb",), selected=[CHUNK, other])
    await DataAnalysis(Model(PLAN), TableParts(Tables(), Switch({"kb"}))).run(turn)
    first, *rest = turn.selected
    assert first.legs == frozenset({"table"})
    assert first.metadata["table"] == [["total"], ["3"]]
    assert "| total |" in first.text
    assert rest == [other]


def test_a_plan_is_read_from_json_even_in_a_code_fence_and_anything_else_is_none() -> None:
    assert parse_plan('```json\n{"needs_sql": true, "sql": "SELECT 1"}\n```') is not None
    assert parse_plan('{"needs_sql": false}') is not None
    for reply in ("SELECT 1", '{"needs_sql": "yes"}', '{"needs_sql": true, "sql": ""}', "[]"):
        assert parse_plan(reply) is None


class BusyTables(Tables):
    """A tables file another process holds."""

    async def schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        raise TablesUnavailable("tables file held by another process")


async def test_a_tables_file_held_elsewhere_leaves_the_passages_as_they_were(caplog: pytest.LogCaptureFixture) -> None:
    turn = TurnContext("How many?", ("kb",), selected=[CHUNK])
    assert await DataAnalysis(Model(PLAN), TableParts(BusyTables(), Switch({"kb"}))).run(turn) == "tables_unavailable"
    assert turn.selected == [CHUNK]
    assert [r.getMessage().split(" error=")[0] for r in caplog.records] == [
        "data_analysis=skipped reason=tables_unavailable"
    ]
