"""The web page under a long streamed answer: it renders at most once per animation frame, however fast the
model sends pieces, and its last render shows the whole answer (issue 19, item 16).

Frames are the test's to give: playwright's clock is paused once the page is open, so the page gets an
animation frame only when the test runs one. The model sends its answer in bursts the test releases, so what
the page has received when a frame comes is known, and the counts below hold on any machine.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, Locator, Page, expect

from adapters.web.app import create as create_web
from bot.app.manager import build_manager, chat_policy
from bot.app.server import create_app
from bot.app.services import build_services
from bot.metrics import ChatMetrics
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.security.web_page_support import FRAME_COUNTER, RENDER_PROBE, BurstModel, chromium

QUESTION = "When and where is lunch served?"
LUNCH = b"# Lunch\n\nLunch is served from noon in the atrium. The menu is posted each morning."
# One frame of the paused clock (playwright's fake requestAnimationFrame runs every 16 ms).
FRAME_MS = 16
ANSWER_MS = 90_000
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
PLACES = ["the atrium", "the roof terrace", "the second floor", "the library", "the canteen"]


def _burst(n: int) -> str:
    """Part `n` of a long Markdown answer (about a hundred words), ending with the only mention of DAYS[n]."""
    steps = "\n".join(
        f"{k}. Walk to **{PLACES[(n + k) % len(PLACES)]}** and pick `tray {n}.{k}` from the rack" for k in range(1, 6)
    )
    return (
        f"## Part {n + 1}: lunch in {PLACES[n]}\n\n"
        f"Lunch is served *from noon* in the atrium [1]. The kitchen posts each menu at "
        f"[the menu page](https://example.com/menu/{n}) and keeps ~~paper~~ copies at https://example.com/print.\n\n"
        f"{steps}\n"
        f"   - vegetarian dishes are marked with a _leaf_\n\n"
        f"```text\nmenu --day today --part {n + 1}\n```\n\n"
        f"> Bring your own cup on {DAYS[n]}.\n\n"
    )


BURSTS = [_burst(n) for n in range(len(DAYS))]

# Whether the page has received the whole event that carried `marker` (an event ends with a blank line).
RECEIVED = """marker => {
  const at = window.__received.indexOf(marker);
  return at > -1 && window.__received.indexOf("\\n\\n", at) > -1;
}"""


@dataclass
class Served:
    url: str
    model: BurstModel


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    """The web chat over real services on a knowledge base about lunch, with the bursting fake as its model."""
    data = tmp_path_factory.mktemp("web-page")
    async with BurstModel() as model:
        settings = embedded_settings(
            data,
            CHAT_MODEL="fake-model",
            CHAT_MODEL_BASE_URL=model.base_url,
            CHAT_MODEL_API_KEY="test-key",
            CHAT_MODEL_MAX_RETRIES=0,
            DEFAULT_KNOWLEDGE_BASES="docs",
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("docs", {})
            await services.ingestor.ingest(kb, SourceFile(LUNCH, "upload:lunch.md", "lunch.md"))
            metrics = ChatMetrics()
            app = create_app(services, metrics)
            adapter = create_web(build_manager(services, chat_policy(settings), metrics=metrics), settings, services.db)
            assert adapter is not None
            adapter.mount(app)
            runner = web.AppRunner(app)
            await runner.setup()
            port = free_port()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            try:
                yield Served(f"http://127.0.0.1:{port}", model)
            finally:
                model.release_all()
                await adapter.stop()
                await runner.cleanup()


@pytest_asyncio.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def _renders(body: Locator) -> int:
    renders: int = await body.evaluate("element => element.__renders || 0")
    return renders


async def _rendering(page: Page, text: str) -> str:
    """The page renderer's HTML for `text`, rendered apart from the chat."""
    html: str = await page.evaluate(
        """text => {
          const element = document.createElement("div");
          RagbotMarkdown.renderInto(element, text);
          return element.innerHTML;
        }""",
        text,
    )
    return html


async def test_a_model_streaming_hundreds_of_pieces_gets_one_render_a_frame_and_the_last_shows_the_whole_answer(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    context = await browser.new_context(base_url=served.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    await context.add_init_script(RENDER_PROBE)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.clock.install(time=0)
    await page.goto("/")
    await expect(page.locator("body[data-ready=true]")).to_have_count(1)
    await page.clock.pause_at(60_000)  # from here on, a frame comes only when the test runs one
    await page.evaluate(FRAME_COUNTER)
    served.model.script(BURSTS)

    await page.get_by_test_id("input").fill(QUESTION)
    await page.get_by_test_id("input").press("Enter")
    answer = page.locator("[data-testid=message][data-role=assistant][data-ref]")
    body = answer.get_by_test_id("message-text")
    streamed = ""
    for n, burst in enumerate(BURSTS[:-1]):
        served.model.release(n)
        streamed += burst
        await page.wait_for_function(RECEIVED, arg=DAYS[n], timeout=ANSWER_MS)
        assert await _renders(body) == n  # the whole burst is in, and no frame came since the last
        await page.clock.run_for(FRAME_MS)
        assert await _renders(body) == n + 1
        assert await body.inner_html() == await _rendering(page, streamed)
    served.model.release(len(BURSTS) - 1)
    await expect(answer).to_have_attribute("data-status", "done", timeout=ANSWER_MS)
    await page.clock.run_for(FRAME_MS)  # the frame asked for during the last burst was called off

    deltas = await page.evaluate("window.__received.split('event: delta').length - 1")
    frames = await page.evaluate("window.__frames")
    renders = await _renders(body)
    assert deltas >= 400, deltas
    assert frames == len(BURSTS)
    assert renders == len(BURSTS), (renders, deltas)  # one render a frame while streaming, and the final one
    assert await body.inner_html() == await _rendering(page, "".join(BURSTS))
    screenshot = Path(os.environ.get("WEB_PAGE_SCREENSHOT") or tmp_path / "long-answer.png")
    await page.screenshot(path=screenshot)
    assert errors == []
    await context.close()
