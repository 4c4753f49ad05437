"""Two instances on one PostgreSQL, each with its own data directory: a spreadsheet ingested by one is answered with
SQL by the other, its new rows after a re-ingestion too, and a deleted one's table is gone from both."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from bot.app.services import Services, build_services
from bot.cli.ask import answer_turn, cli_manager, new_conversation_key
from fakes.openai_api import FakeOpenAI
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings, fresh_postgres_database

PRICES = "Product,Region,Price\nTea,north,12\nCoffee,south,20\n"
MORE_PRICES = PRICES + "Cocoa,north,7\n"


@dataclass
class Pair:
    """Two instances' services on one database, and the plan the fake model gives for SQL."""

    ingesting: Services
    answering: Services
    plan: dict[str, Any]


@pytest_asyncio.fixture
async def pair(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings, request: pytest.FixtureRequest
) -> AsyncIterator[Pair]:
    url = await fresh_postgres_database(request.getfixturevalue("postgres_url"))
    plan: dict[str, Any] = {}
    async with FakeOpenAI() as model, AsyncExitStack() as stack:
        model.reply_for = lambda body: json.dumps(plan) if "needs_sql" in str(body["messages"][0]["content"]) else "ok"
        instances = []
        for name in ("a", "b"):
            settings = embedded_settings(
                tmp_path_factory.mktemp(f"instance-{name}"),
                DATABASE_URL=url,
                CHAT_MODEL="fake-model",
                CHAT_MODEL_BASE_URL=model.base_url,
                CHAT_MODEL_API_KEY="test-key",
                CHAT_MODEL_TIMEOUT=5.0,
                CHAT_MODEL_MAX_RETRIES=0,
            )
            instances.append(await stack.enter_async_context(build_services(settings)))
        yield Pair(instances[0], instances[1], plan)


async def _count(pair: Pair, kb_id: str, document_id: str) -> tuple[tuple[str, ...], ...] | None:
    """What the answering instance's table source shows for a count of the price list, None when it has none."""
    pair.plan.update({"needs_sql": True, "sql": f'SELECT count(*) AS products FROM "{document_id}"'})
    manager = cli_manager(pair.answering)
    result = await answer_turn(
        manager, new_conversation_key(), "How many products are on the price list?", [kb_id], io.StringIO()
    )
    assert result is not None
    tables = [source.table for source in result.answer.sources if source.table]
    return tables[0] if tables else None


async def test_a_sheet_ingested_by_one_instance_is_answered_by_another_and_follows_its_changes(pair: Pair) -> None:
    knowledge = pair.ingesting.knowledge
    kb = await knowledge.create("shop", {})
    await knowledge.set_tables(kb.id, on=True)
    source = "upload:prices.csv"
    done = await pair.ingesting.ingestor.ingest(kb, SourceFile(PRICES.encode(), source, "prices.csv"))

    assert await _count(pair, kb.id, done.document_id) == (("products",), ("2",))

    await pair.ingesting.ingestor.ingest(kb, SourceFile(MORE_PRICES.encode(), source, "prices.csv"))
    assert await _count(pair, kb.id, done.document_id) == (("products",), ("3",))

    await knowledge.delete_document("shop", done.document_id)
    assert await pair.answering.tables.schemas([done.document_id], [kb.id]) == []
