"""Body-size drills: megabytes posted to the chat API and the webhooks are refused before they are read."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from adapters.web.session import SESSION_COOKIE
from tests.conftest import EmbeddedSettings
from tests.security.web_support import Served, cookie, login, opened, raw_request, serve, settings_in

TWO_MB = 2_000_000


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    settings = settings_in(
        embedded_settings,
        tmp_path_factory.mktemp("bodies"),
        INGEST_MAX_FILE_MB=3,
        SLACK_BOT_TOKEN="xoxb-drill",
        SLACK_SIGNING_SECRET="drill-signing-secret",
        SLACK_API_BASE_URL="http://127.0.0.1:1/api/",
        TELEGRAM_BOT_TOKEN="123:drill",
        TELEGRAM_MODE="webhook",
        TELEGRAM_WEBHOOK_URL="https://bot.example.com/telegram/webhook",
        TELEGRAM_WEBHOOK_SECRET="drill_secret",
        TELEGRAM_API_BASE_URL="http://127.0.0.1:1/bot",
    )
    async with serve(settings, platforms=True) as served:
        await served.services.knowledge.create("docs", {})
        yield served


def _head(served: Served, path: str, length: int, session: str = "", **headers: str) -> str:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{served.port}", f"Content-Length: {length}"]
    lines += [f"Origin: {served.url}", "Content-Type: application/json"]
    if session:
        lines.append(f"Cookie: {SESSION_COOKIE}={session}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("path", ["/api/messages", "/slack/events", "/telegram/webhook", "/api/admin/login"])
async def test_a_2mb_post_is_refused_before_its_body_is_read(served: Served, path: str) -> None:
    async with served.browser() as browser:
        session = cookie(await opened(browser), SESSION_COOKIE) or ""
    # Only the head is sent: a server that waited for the 2 MB would never answer.
    status, _ = await raw_request(served.port, _head(served, path, TWO_MB, session))
    assert status == 413


async def test_a_chunked_json_body_over_1mb_is_refused(served: Served) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": "/kb list", "padding": "'
        for _ in range(20):
            yield b"x" * 100_000
        yield b'"}'

    async with served.browser() as browser:
        await opened(browser)
        headers = {"Content-Type": "application/json"}
        async with browser.post("/api/messages", data=chunks(), headers=headers) as response:
            assert response.status == 413


async def test_an_upload_over_its_request_cap_is_refused_before_it_is_read(served: Served) -> None:
    async with served.browser() as browser:
        await opened(browser)
        assert (await login(browser))[0] == 200
        session = cookie(browser, SESSION_COOKIE) or ""
        admin = cookie(browser, "ragbot_admin") or ""
    head = _head(served, "/api/upload", 10**9, session, X_Ragbot_Request="1").replace(
        f"{SESSION_COOKIE}={session}", f"{SESSION_COOKIE}={session}; ragbot_admin={admin}"
    )
    status, _ = await raw_request(served.port, head.replace("application/json", "multipart/form-data; boundary=b"))
    assert status == 413


async def test_an_upload_still_streams_a_file_larger_than_the_json_limit(served: Served) -> None:
    async with served.browser() as browser:
        await opened(browser)
        assert (await login(browser))[0] == 200
        form = aiohttp.FormData()
        # A file object: aiohttp warns (an error here) on megabytes of raw bytes in a form.
        # Of a type ragbot does not read: the upload is received whole and refused at once, not indexed for seconds.
        form.add_field("file", io.BytesIO(b"GIF89a" + bytes(1_500_000)), filename="big.gif")
        async with browser.post("/api/upload", data=form, headers={"X-Ragbot-Request": "1"}) as response:
            assert response.status == 200, await response.text()
            assert "big.gif: not ingested" in await response.text()


async def test_an_upload_of_too_many_files_is_refused(served: Served) -> None:
    async with served.browser() as browser:
        await opened(browser)
        assert (await login(browser))[0] == 200
        form = aiohttp.FormData()
        for index in range(21):
            form.add_field("file", b"# A\n\nA.", filename=f"a{index}.md")
        async with browser.post("/api/upload", data=form, headers={"X-Ragbot-Request": "1"}) as response:
            assert response.status == 413
            assert "at most 20" in (await response.json())["error"]
