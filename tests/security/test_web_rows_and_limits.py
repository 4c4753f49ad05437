"""Anonymous requests store nothing, and a new session per message does not escape the web's rate limit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from sqlalchemy import func
from sqlmodel import select

from storage.models import Conversation
from tests.conftest import EmbeddedSettings
from tests.security.web_support import Served, opened, serve, settings_in


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    settings = settings_in(embedded_settings, tmp_path_factory.mktemp("rows"), WEB_ADDRESS_RATE_LIMIT=5)
    async with serve(settings) as served:
        await served.services.knowledge.create("docs", {})
        yield served


async def _conversations(served: Served) -> int:
    async with served.services.db.session() as session:
        return int((await session.exec(select(func.count()).select_from(Conversation))).one())


async def test_a_hundred_anonymous_history_reads_create_no_conversation(served: Served) -> None:
    before = await _conversations(served)
    async with aiohttp.ClientSession(served.url) as client:  # no cookie jar kept: a new session each time
        for _ in range(100):
            async with client.get("/api/history", cookies={}) as response:
                assert response.status == 200
                assert (await response.json())["messages"] == []
            client.cookie_jar.clear()
    assert await _conversations(served) == before


async def test_a_session_that_only_stops_rates_and_starts_over_creates_no_conversation(served: Served) -> None:
    before = await _conversations(served)
    async with served.browser() as browser:
        await opened(browser)
        for path, body in (("/api/stop", {}), ("/api/new", {}), ("/api/feedback", {"message_id": "x", "value": "up"})):
            async with browser.post(path, json=body) as response:
                assert response.status in (200, 404)
        async with browser.get("/api/session") as response:
            assert response.status == 200
    assert await _conversations(served) == before


async def test_a_new_session_per_message_does_not_escape_the_rate_limit_of_its_address(served: Served) -> None:
    statuses = []
    for _ in range(6):
        async with served.browser() as browser:  # a fresh session, one GET away
            await opened(browser)
            async with browser.post("/api/messages", json={"text": "/kb list"}) as response:
                statuses.append(response.status)
                if response.status == 429:
                    assert "Retry-After" in response.headers
                    assert "error" in await response.json()
                else:
                    await response.text()
    assert statuses == [200] * 5 + [429]
