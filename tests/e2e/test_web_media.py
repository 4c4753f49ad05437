"""A pasted screenshot and a recorded voice question in the web chat, in a real browser (Debian's chromium with its
fake microphone), against real services, real Tesseract and the fake transcription API; and the media route's
refusals as a browser meets them."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from adapters.web.app import create as create_web
from bot.app.manager import build_manager, chat_policy
from bot.app.server import create_app
from bot.app.services import build_services
from bot.words import messages
from fakes.base import start_local
from fakes.openai_api import FakeOpenAI
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.support.media import HANDBOOK, OGG, screenshot

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ANSWER_MS = 90_000
IMAGE_LIMIT_MB = 1
ASSISTANT = "[data-testid=message][data-role=assistant]"
PASTE = """async (encoded) => {
  const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
  const clipboard = new DataTransfer();
  clipboard.items.add(new File([bytes], "image.png", {type: "image/png"}));
  const input = document.querySelector("[data-testid=input]");
  input.focus();
  input.dispatchEvent(new ClipboardEvent("paste", {clipboardData: clipboard, bubbles: true, cancelable: true}));
}"""


@dataclass
class Served:
    url: str
    openai: FakeOpenAI


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    async with FakeOpenAI() as openai:
        settings = embedded_settings(
            tmp_path_factory.mktemp("web-media"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            TRANSCRIPTION_MODEL="whisper-1",
            TRANSCRIPTION_BASE_URL=openai.base_url,
            TRANSCRIPTION_API_KEY="test-key",
            MEDIA_MAX_IMAGE_MB=IMAGE_LIMIT_MB,
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            app = create_app(services)
            adapter = create_web(build_manager(services, chat_policy(settings)), settings, services.db)
            assert adapter is not None
            adapter.mount(app)
            runner, port = await start_local(app)
            try:
                yield Served(f"http://127.0.0.1:{port}", openai)
            finally:
                await adapter.stop()
                await runner.cleanup()


@pytest_asyncio.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Debian's chromium, with a fake microphone (a tone) that needs no permission prompt."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"chromium is missing at {CHROMIUM}: install Debian's chromium package")
    args = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # chromium's sandbox refuses to run as root (as in CI containers)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        await launched.close()


@pytest_asyncio.fixture
async def page(served: Served, browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=served.url, permissions=["microphone"])
    context.set_default_timeout(15_000)
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    await opened.goto("/")
    await expect(opened.locator("body[data-ready=true]")).to_have_count(1)
    yield opened
    await context.close()
    assert errors == []


async def test_a_pasted_screenshot_is_previewed_sent_with_the_question_read_and_answered(page: Page) -> None:
    encoded = base64.b64encode(screenshot("Where is the VPN client installed from?")).decode()
    await page.evaluate(PASTE, encoded)
    preview = page.get_by_test_id("media-preview")
    await expect(preview.locator("img")).to_be_visible()
    await page.get_by_test_id("input").fill("what is this about?")
    await page.get_by_test_id("input").press("Enter")
    await expect(preview).to_be_hidden()
    user = page.locator("[data-testid=message][data-role=user]")
    await expect(user).to_have_text("what is this about?")
    await expect(user.get_by_test_id("message-media")).to_be_visible()
    answers = page.locator(ASSISTANT)
    await expect(answers).to_have_count(2, timeout=ANSWER_MS)
    await expect(answers.nth(0)).to_have_text("🖼 Read from the image: “Where is the VPN client installed from?”")
    await expect(answers.nth(1)).to_contain_text("Software Center", timeout=ANSWER_MS)


async def test_a_recorded_voice_question_is_sent_as_webm_heard_shown_back_and_answered(
    page: Page, served: Served
) -> None:
    served.openai.transcript = "When is lunch served?"
    before = len(served.openai.transcriptions)
    record = page.get_by_test_id("record")
    await record.click()
    await expect(record).to_have_attribute("aria-pressed", "true")
    await expect(page.get_by_test_id("composer-notice")).to_contain_text("0:01")  # a second of the fake microphone
    await record.click()
    await expect(page.get_by_test_id("media-preview")).to_contain_text("🎙")
    await page.get_by_test_id("input").press("Enter")
    answers = page.locator(ASSISTANT)
    await expect(answers).to_have_count(2, timeout=ANSWER_MS)
    await expect(answers.nth(0)).to_have_text(messages.media_heard("When is lunch served?", "en"))
    await expect(answers.nth(1)).to_contain_text("noon", timeout=ANSWER_MS)
    (sent,) = served.openai.transcriptions[before:]
    assert sent.content_type == "audio/webm"
    assert sent.data.startswith(b"\x1aE\xdf\xa3")  # a real WebM (EBML) recording from the browser


def _session(url: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(url, cookie_jar=aiohttp.CookieJar(unsafe=True), headers={"Origin": url})


async def _post_media(
    session: aiohttp.ClientSession, data: bytes, *, seconds: str = "", header: bool = True, **more: Any
) -> tuple[int, str]:
    form = aiohttp.FormData()
    form.add_field("text", "")
    if seconds:
        form.add_field("seconds", seconds)
    name, mime = more.get("name", "voice.webm"), more.get("mime", "audio/webm")
    form.add_field("file", io.BytesIO(data), filename=name, content_type=mime)
    headers = {"X-Ragbot-Request": "1"} if header else {}
    async with session.post("/api/media", data=form, headers=headers) as response:
        return response.status, await response.text()


async def test_the_media_route_refuses_other_origins_huge_files_and_an_hour_of_audio_unheard(served: Served) -> None:
    async with _session(served.url) as session:
        async with session.get("/"):
            pass
        before = len(served.openai.transcriptions)
        status, _ = await _post_media(session, OGG, header=False)
        assert status == 403  # no page of ragbot's sent it
        # Past the 25 MB read for a question (within the body the route allows): refused naming the file.
        status, body = await _post_media(session, bytes(25_000_001), name="big.webm")
        assert (status, json.loads(body)) == (
            413,
            {"error": messages.media_too_large("big.webm", None, 25_000_000, "en")},
        )
        status, body = await _post_media(session, OGG, seconds="3600")
        assert status == 200
        assert json.dumps(messages.audio_too_long(3600, 600, "en"), ensure_ascii=False) in body
        assert len(served.openai.transcriptions) == before
