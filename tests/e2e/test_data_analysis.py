"""Questions over spreadsheets answered with SQL: the fake model writes the query, DuckDB runs it read-only.

The real services (sandboxed extraction, Weaviate, the tables file) with the openai client against the fake model,
which answers the data-analysis prompt with the plan each test scripts and every other request with an answer.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import openpyxl
import pytest
import pytest_asyncio

from bot.app.services import Services, build_services
from bot.cli.ask import answer_turn, cli_manager, new_conversation_key
from bot.types import SourceLink
from fakes.openai_api import FakeOpenAI
from rag.ingest.documents import SourceFile
from rag.pipeline import TurnContext
from tests.conftest import EmbeddedSettings

# Odd headers: a repeated one, an empty one, Chinese with a space.
PRICES = (
    "Product,Region,Unit price,Unit price,,产品 名称\n"
    "Tea,north,12.5,13,x,茶\n"
    "Coffee,south,20,21,,咖啡\n"
    "Green tea,south,11,12,,绿茶\n"
    "Cocoa,north,7,8,,可可\n"
)
HANDBOOK = "# Ordering\n\nOrders for tea and coffee are placed with the purchasing team every Monday.\n"
OTHER = "Secret,Amount\nbonus,1000000\n"
ANSWER = "Here is what the price list says [1]."
RESULT_MARK = "Result of the SQL query"


@dataclass
class World:
    """The running services, the fake model, and the documents every test asks about."""

    services: Services
    model: FakeOpenAI
    kb_id: str
    prices: str
    workbook: str
    other: str
    plan: dict[str, Any]


def _workbook() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Stock"
    for row in (["Item", "Warehouse", "Units"], ["bolts", "Leeds", 400], ["nuts", "Leeds", 250], ["bolts", "York", 90]):
        sheet.append(row)
    book.create_sheet("Notes").append(["Written by the stock office"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


@pytest_asyncio.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    data = tmp_path_factory.mktemp("data-analysis")
    async with FakeOpenAI() as model:
        settings = embedded_settings(
            data,
            CHAT_MODEL="fake-model",
            CHAT_MODEL_BASE_URL=model.base_url,
            CHAT_MODEL_API_KEY="test-key",
            CHAT_MODEL_TIMEOUT=5.0,
            CHAT_MODEL_MAX_RETRIES=0,
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("shop", {})
            other = await services.knowledge.create("payroll", {})
            ingest = services.ingestor.ingest
            prices = await ingest(
                kb, SourceFile(PRICES.encode(), source_uri="upload:prices.csv", filename="prices.csv")
            )
            await ingest(kb, SourceFile(HANDBOOK.encode(), source_uri="upload:ordering.md", filename="ordering.md"))
            book = await ingest(kb, SourceFile(_workbook(), source_uri="upload:stock.xlsx", filename="stock.xlsx"))
            secret = await ingest(other, SourceFile(OTHER.encode(), source_uri="upload:pay.csv", filename="pay.csv"))
            for switched in (kb, other):
                await services.knowledge.set_tables(switched.id, on=True)
            plan: dict[str, Any] = {}

            def reply(body: Any) -> str:
                system = str(body["messages"][0]["content"])
                return json.dumps(plan) if "needs_sql" in system else ANSWER

            model.reply_for = reply
            yield World(services, model, kb.id, prices.document_id, book.document_id, secret.document_id, plan)


@dataclass
class Asked:
    """What one turn showed and sent to the model."""

    turn: TurnContext
    sources: tuple[SourceLink, ...]
    prompts: list[list[dict[str, str]]]

    @property
    def answer_prompt(self) -> str:
        return "\n".join(message["content"] for message in self.prompts[-1])

    @property
    def plan_prompt(self) -> str:
        planned = [p for p in self.prompts if "needs_sql" in p[0]["content"]]
        return "\n".join(message["content"] for message in planned[-1]) if planned else ""


async def _ask(world: World, question: str, sql: str | None, kb_id: str | None = None) -> Asked:
    world.plan.clear()
    world.plan.update({"needs_sql": sql is not None, "sql": sql or ""})
    before = len(world.model.requests)
    result = await answer_turn(
        cli_manager(world.services), new_conversation_key(), question, [kb_id or world.kb_id], io.StringIO()
    )
    assert result is not None
    assert result.turn is not None
    chats = [r.json["messages"] for r in world.model.requests[before:] if r.path.endswith("/chat/completions")]
    return Asked(result.turn, result.answer.sources, chats)


def _result_source(asked: Asked) -> SourceLink:
    tables = [source for source in asked.sources if source.table]
    assert len(tables) == 1, asked.sources
    return tables[0]


async def test_a_count_is_answered_from_the_table_and_its_chunks_leave_the_prompt(world: World) -> None:
    asked = await _ask(
        world, "How many products are on the price list?", f'SELECT count(*) AS products FROM "{world.prices}"'
    )
    assert _result_source(asked).table == (("products",), ("4",))
    assert RESULT_MARK in asked.answer_prompt
    assert "| products |" in asked.answer_prompt
    # The sheet's rows as chunks are replaced by the result; other documents stay.
    assert "Product: Tea" not in asked.answer_prompt
    assert all(c.document_id != world.prices or "table" in c.legs for c in asked.turn.selected)
    assert asked.turn.outcome == "generated"


async def test_a_sum_with_a_filter_is_answered_from_the_table(world: World) -> None:
    sql = f"SELECT sum(unit_price) AS total FROM \"{world.prices}\" WHERE region = 'south'"
    asked = await _ask(world, "What do the south region's products cost together on the price list?", sql)
    assert _result_source(asked).table == (("total",), ("31",))


async def test_a_group_by_is_answered_from_the_table(world: World) -> None:
    sql = f'SELECT region, count(*) AS products FROM "{world.prices}" GROUP BY region ORDER BY region'
    asked = await _ask(world, "How many products per region are on the price list?", sql)
    assert _result_source(asked).table == (("region", "products"), ("north", "2"), ("south", "2"))


async def test_odd_headers_become_safe_columns_and_the_model_sees_the_headers_as_written(world: World) -> None:
    sql = f'SELECT "产品_名称", unit_price_2 FROM "{world.prices}" WHERE product = \'Cocoa\''
    asked = await _ask(world, "What is the Chinese name of Cocoa on the price list?", sql)
    for shown in ("unit_price_2", "'Unit price'", "column_5", "产品_名称", "'产品 名称'", "4 rows"):
        assert shown in asked.plan_prompt
    assert _result_source(asked).table == (("产品_名称", "unit_price_2"), ("可可", "8"))


async def test_a_workbook_sheet_is_a_table_named_by_the_document(world: World) -> None:
    sql = f'SELECT warehouse, sum(units) AS units FROM "{world.workbook}" GROUP BY 1 ORDER BY 1'
    asked = await _ask(world, "How many units of stock per warehouse?", sql)
    assert "(sheet 'Stock')" in asked.plan_prompt
    assert _result_source(asked).table == (("warehouse", "units"), ("Leeds", "650"), ("York", "90"))


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "table_function=read_csv"),
        ("COPY \"{prices}\" TO '/tmp/ragbot-stolen.csv'", "type=COPY"),
        ("ATTACH '/tmp/ragbot-other.duckdb' AS other", "type=ATTACH"),
        ("INSTALL httpfs", "type=LOAD"),
        ("LOAD httpfs", "type=LOAD"),
        ('DROP TABLE "{prices}"', "type=DROP"),
        ('SELECT count(*) FROM "{prices}"; DROP TABLE "{prices}"', "statements=2"),
        ('SELECT * FROM "{other}"', "table={other}"),
        ("SELECT * FROM '/etc/passwd'", "table=/etc/passwd"),
    ],
)
async def test_a_forbidden_query_is_refused_with_one_log_line_and_the_answer_comes_from_the_passages(
    world: World, caplog: pytest.LogCaptureFixture, sql: str, reason: str
) -> None:
    names = {"prices": world.prices, "other": world.other}
    with caplog.at_level(logging.INFO):
        asked = await _ask(world, "How many products are on the price list?", sql.format(**names))
    refused = [r.getMessage() for r in caplog.records if "data_analysis=" in r.getMessage()]
    assert refused == [f"data_analysis=refused reason={reason.format(**names)}"]
    assert RESULT_MARK not in asked.answer_prompt
    assert "Product: Tea" in asked.answer_prompt
    assert not any(source.table for source in asked.sources)
    assert asked.turn.outcome == "generated"
    # Nothing was dropped or written: the table still answers.
    still = await _ask(world, "How many products are on the price list?", f'SELECT count(*) FROM "{world.prices}"')
    assert _result_source(still).table[1] == ("4",)


async def test_a_plan_that_needs_no_sql_leaves_the_passages_as_they_were(world: World) -> None:
    asked = await _ask(world, "How many products are on the price list?", None)
    assert asked.plan_prompt
    assert RESULT_MARK not in asked.answer_prompt
    assert "Product: Tea" in asked.answer_prompt


async def test_with_the_switch_off_the_model_is_not_asked_for_sql(world: World) -> None:
    await world.services.knowledge.set_tables(world.kb_id, on=False)
    try:
        asked = await _ask(world, "How many products are on the price list?", f'SELECT 1 FROM "{world.prices}"')
    finally:
        await world.services.knowledge.set_tables(world.kb_id, on=True)
    assert asked.plan_prompt == ""
    assert len(asked.prompts) == 1
    assert "Product: Tea" in asked.answer_prompt


async def test_a_document_s_table_is_replaced_on_reingestion_and_dropped_with_it(world: World) -> None:
    services = world.services
    kb = await services.knowledge.find("shop")
    source = "upload:rates.csv"
    first = await services.ingestor.ingest(kb, SourceFile(b"Rate,Value\na,1\nb,2\n", source, "rates.csv"))
    again = await services.ingestor.ingest(kb, SourceFile(b"Rate,Value\na,1\nb,2\nc,3\n", source, "rates.csv"))
    assert again.document_id == first.document_id
    (schema,) = await services.tables.schemas([first.document_id], [kb.id])
    assert schema.row_count == 3
    await services.knowledge.delete_document("shop", first.document_id)
    assert await services.tables.schemas([first.document_id], [kb.id]) == []


async def test_a_deleted_knowledge_base_takes_its_tables_and_its_switch_with_it(world: World) -> None:
    services = world.services
    kb = await services.knowledge.create("scratch", {})
    done = await services.ingestor.ingest(kb, SourceFile(b"Rate,Value\na,1\n", "upload:scratch.csv", "scratch.csv"))
    await services.knowledge.set_tables(kb.id, on=True)
    assert len(await services.tables.schemas([done.document_id], [kb.id])) == 1
    await services.knowledge.delete("scratch")
    assert await services.tables.schemas([done.document_id], [kb.id]) == []
    assert await services.knowledge.tables_on([kb.id]) == set()
