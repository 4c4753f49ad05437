"""CSRF drills: another origin of the same site (another localhost port) posting as a logged-in admin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from adapters.web.session import SESSION_COOKIE
from bot.words import messages
from tests.conftest import EmbeddedSettings
from tests.security.web_support import Served, cookie, login, opened, serve, settings_in

EVIL = "http://127.0.0.1:1"  # another port of the same host: same site, another origin


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    settings = settings_in(embedded_settings, tmp_path_factory.mktemp("csrf"), WEB_KNOWLEDGE_BASES="docs,other")
    async with serve(settings) as served:
        await served.services.knowledge.create("docs", {})
        await served.services.knowledge.create("other", {})
        yield served


@pytest_asyncio.fixture
async def admin(served: Served) -> AsyncIterator[aiohttp.ClientSession]:
    """A logged-in admin's browser (the page's own requests carry its Origin)."""
    async with served.browser() as browser:
        await opened(browser)
        assert (await login(browser))[0] == 200
        yield browser


async def _bound(served: Served, browser: aiohttp.ClientSession) -> list[str]:
    session = cookie(browser, SESSION_COOKIE)
    assert session is not None
    return await served.services.bindings.kb_ids("web", "", session.split(".")[0])


async def test_a_text_plain_form_from_another_origin_cannot_ingest_or_rebind_as_an_admin(
    served: Served, admin: aiohttp.ClientSession
) -> None:
    # What <form enctype="text/plain" method="post" action="http://127.0.0.1:PORT/api/messages"> on another port
    # of the same host sends, with the admin's cookies (same site: SameSite=Strict lets them through).
    jobs, bound = await served.services.job_repo.count(), await _bound(served, admin)
    for command in ("/ingest https://example.com/a.md", "/kb use other", "/faq delete lunch"):
        body = '{"text": "' + command + '", "x": "="}'
        headers = {"Content-Type": "text/plain", "Origin": EVIL}
        async with admin.post("/api/messages", data=body, headers=headers) as response:
            assert response.status in (403, 415), await response.text()
            assert "error" in await response.json()
    assert await served.services.job_repo.count() == jobs, "nothing was queued"
    assert await _bound(served, admin) == bound, "the chat's knowledge base did not change"
    # The same command from the page itself does act: the refusal is the origin's, not the command's.
    async with admin.post("/api/messages", json={"text": "/kb use other"}) as response:
        assert response.status == 200
        await response.text()
    assert await _bound(served, admin) != bound


@pytest.mark.parametrize("path", ["/api/messages", "/api/new", "/api/stop", "/api/feedback", "/api/admin/logout"])
async def test_json_from_another_origin_is_refused_on_every_state_changing_route(
    admin: aiohttp.ClientSession, path: str
) -> None:
    async with admin.post(path, json={"text": "/kb use other"}, headers={"Origin": EVIL}) as response:
        assert (response.status, (await response.json())["error"]) == (403, messages.WEB_NOT_FROM_THE_PAGE)


@pytest.mark.parametrize("origin", ["null", "", EVIL, "http://127.0.0.1.evil.example"])
async def test_a_request_without_its_own_origin_or_referer_is_refused(served: Served, origin: str) -> None:
    async with served.browser() as browser:
        await opened(browser)
        headers = {"Origin": origin} if origin else {}
        browser.headers.pop("Origin")
        async with browser.post("/api/new", json={}, headers=headers) as response:
            assert response.status == 403


async def test_a_referer_of_the_page_itself_stands_in_for_a_missing_origin(served: Served) -> None:
    async with served.browser() as browser:
        await opened(browser)
        browser.headers.pop("Origin")
        async with browser.post("/api/new", json={}, headers={"Referer": f"{served.url}/"}) as response:
            assert response.status == 200, await response.text()


@pytest.mark.parametrize(("origin", "header"), [(EVIL, "1"), (None, None)])
async def test_a_multipart_form_from_another_origin_cannot_upload(
    served: Served, admin: aiohttp.ClientSession, origin: str | None, header: str | None
) -> None:
    # A cross-origin <form enctype="multipart/form-data"> can neither set X-Ragbot-Request nor fake the Origin.
    form = aiohttp.FormData()
    form.add_field("text", "/ingest")
    form.add_field("file", b"# Forged\n\nPlanted by another origin.", filename="forged.md")
    headers = {"X-Ragbot-Request": header} if header else {}
    if origin:
        headers["Origin"] = origin
    documents = len(await served.services.knowledge.documents("docs"))
    async with admin.post("/api/upload", data=form, headers=headers) as response:
        assert response.status == 403
    assert len(await served.services.knowledge.documents("docs")) == documents


async def test_the_page_own_json_and_upload_requests_still_pass(served: Served, admin: aiohttp.ClientSession) -> None:
    async with admin.post("/api/messages", json={"text": "/kb list"}) as response:
        assert response.status == 200
        assert "docs" in await response.text()
    form = aiohttp.FormData()
    form.add_field("file", b"# Hours\n\nThe gym opens at six.", filename="gym.md")
    async with admin.post("/api/upload", data=form, headers={"X-Ragbot-Request": "1"}) as response:
        assert response.status == 200, await response.text()
        await response.text()


def test_the_page_sends_the_upload_header() -> None:
    script = (Path(__file__).parents[2] / "adapters" / "web" / "static" / "app.js").read_text()
    assert '"X-Ragbot-Request": "1"' in script
