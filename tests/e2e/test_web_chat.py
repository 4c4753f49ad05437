"""The web chat in a real browser (Debian's chromium, driven by playwright) against `ragbot serve`.

The chat model is a local fake that writes its answer a word at a time, so the page is seen streaming; its
answers are scripted per test, or quoted from the passages ragbot put in its prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, Dialog, Locator, Page, async_playwright, expect

from adapters.web.words import page_texts
from bot.words import messages
from fakes.openai_api import FakeOpenAI
from harness.processes import ROOT, SETTINGS_PREFIXES, free_port, run_ragbot, serve_logged, wait_until_ready
from storage.weaviate.server import WeaviateServer
from tests.conftest import weaviate_urls

ADMIN_TOKEN = "e2e-admin-token-7f3a-0123456789abcdef"
KB = "handbook"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Long enough for the first answer (models load on first use on a 2-core machine).
ANSWER_MS = 90_000

VPN = "# VPN\n\nThe VPN client is installed from the Software Center app on your laptop.\n"
PRINTERS = "# Printers\n\nTo install a printer, open Settings, choose Printers and add the one named on its sticker.\n"
PAYLOAD = '<script>window.__xss=1</script> <img src=x onerror="window.__xss=1"> [click](javascript:window.__xss=1)'
XSS_DOC = f"# Quasar release notes\n\nQuasar builds ship on Fridays. {PAYLOAD} Quasar is versioned by date.\n"
# FAQs of the knowledge base from the start: what an empty page offers to ask.
TEAM_FAQ = (
    "question,answer\n"
    "How do I book a meeting room?,Book it in the calendar under Rooms.\n"
    "How do I reset my password?,Use the Forgot password link on the sign-in page.\n"
)
PRICES = "Product,Region,Unit price\nTea,north,12.5\nCoffee,south,20\nGreen tea,south,11\nCocoa,north,7\n"
UPLOAD_NAME = "zorblax-manual.md"
UPLOAD_DOC = (
    "# Zorblax-7 maintenance\n\n"
    "The **Zorblax-7 coolant** must be replaced every 41 days by a `certified` technician.\n\n"
    "## Storage\n\nKeep spare Zorblax cartridges below 12 degrees.\n"
)
VPN_INTRO = "The VPN client is installed from the Software Center app on your laptop [1]."
VPN_STEPS = ["Open the Software Center", "Search for VPN", "Press Install"]
VPN_ANSWER = (
    "The VPN client is installed from the **Software Center** app on your laptop [1].\n\n"
    "1. Open the Software Center\n2. Search for `VPN`\n3. Press **Install**\n"
)
# An answer quoting rows of a table, as ragbot's extractive answers do: a table inside a quote.
COMMANDS_ANSWER = (
    "The handbook lists these commands [1]:\n\n"
    "**Chat commands**\n"
    "> | command | what it does |\n"
    "> | --- | :-- |\n"
    "> | `/kb list` | lists the **knowledge bases** this chat can search |\n"
    "> | /new | starts a new conversation \\| forgets the history |\n"
    "> | /sources | shows the [sources](https://example.com/sources) of the last answer, with the title and "
    "the place in the document each one was quoted from |\n"
    ">\n"
    "> [1]\n"
)
COMMAND_CELLS = [
    ["/kb list", "lists the knowledge bases this chat can search"],
    ["/new", "starts a new conversation | forgets the history"],
    [
        "/sources",
        "shows the sources of the last answer, with the title and the place in the document each one was quoted from",
    ],
]

# Records, per assistant bubble (data-ref), each distinct (text, status) it showed, as the page changed it.
RECORDER = """
window.__texts = {};
new MutationObserver(() => {
  for (const bubble of document.querySelectorAll('[data-testid=message][data-role=assistant][data-ref]')) {
    const body = bubble.querySelector('[data-testid=message-text]');
    const entry = {text: body ? body.textContent : '', status: bubble.getAttribute('data-status') || ''};
    const seen = (window.__texts[bubble.dataset.ref] ||= []);
    const last = seen[seen.length - 1];
    if (!last || last.text !== entry.text || last.status !== entry.status) seen.push(entry);
  }
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                      attributeFilter: ['data-status']});
"""

ANSWERS = "[data-testid=message][data-role=assistant][data-message-id]"


class PacedModel(FakeOpenAI):
    """FakeOpenAI writing its streamed answer a word at a time with a pause between words, as a model does.

    `answer` makes the streamed answer from the prompt's text. A non-streamed request is the query rewriter's,
    answered with the latest question unchanged (a well-behaved model with nothing to resolve).
    """

    def __init__(self, *, api_key: str, pause: float) -> None:
        super().__init__(api_key=api_key)
        self.pause = pause
        self.answer: Callable[[str], str] = lambda prompt: "I do not know."
        # The data-analysis plan (a non-streamed request whose prompt asks for `needs_sql`), from its prompt.
        self.plan: Callable[[str], str] = lambda prompt: '{"needs_sql": false, "sql": ""}'

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = "\n".join(str(message.get("content", "")) for message in body.get("messages", []))
        if not body.get("stream") and "needs_sql" in prompt:
            self.reply = self.plan(prompt)
            return await super()._chat(request)
        if not body.get("stream"):
            latest = re.search(r"Latest question: (.*)\nRewritten question:$", prompt)
            self.reply = latest.group(1) if latest else prompt
            return await super()._chat(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        head = {"id": "chatcmpl-paced", "created": int(time.time()), "model": body.get("model", "")}

        async def send(delta: dict[str, str], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            chunk = {**head, "object": "chat.completion.chunk", "choices": [choice]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for piece in re.split(r"(?<=\s)(?=\S)", self.answer(prompt)):
            await asyncio.sleep(self.pause)  # the model's pace, so the browser sees every piece arrive
            await send({"content": piece})
        await send({}, finish_reason="stop")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _flat(text: str) -> str:
    """Text without whitespace, Markdown marks and list numbers, to compare a rendering with its source."""
    return re.sub(r"[\s*`]|\d+\.", "", text)


def quote(keyword: str) -> Callable[[str], str]:
    """An answer quoting the prompt's first line that contains `keyword`, citing it as [1]."""

    def answer(prompt: str) -> str:
        line = next((line.strip() for line in prompt.splitlines() if keyword in line), "")
        return f"The document says: {line} [1]" if line else "The passages do not say."

    return answer


@dataclass
class Site:
    """`ragbot serve` on a knowledge base, with its fake model and its log (shown in a failing test's values)."""

    url: str
    model: PacedModel
    log: Path


def _env(
    root: Path, model: PacedModel, weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None
) -> dict[str, str]:
    """A user's environment on the embedded defaults, with the web chat on and the fake as the chat model."""
    prefixes = (*SETTINGS_PREFIXES, "WEB_", "DEFAULT_KNOWLEDGE_BASES")
    env = {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}
    env.update(
        RAGBOT_DATA_DIR=str(root / "data"),
        RAGBOT_PORT=str(free_port()),
        WEAVIATE_BINARY=str(weaviate_binary),
        EMBEDDING_MODEL_DIR=str(model_dir),
        PYTHONPATH=str(ROOT),
        WEB_ADMIN_TOKEN=ADMIN_TOKEN,
        WEB_KNOWLEDGE_BASES=KB,
        DEFAULT_KNOWLEDGE_BASES=KB,
        CHAT_MODEL="fake",
        CHAT_MODEL_BASE_URL=model.base_url,
        CHAT_MODEL_API_KEY="x",
    )
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    return env


@pytest_asyncio.fixture(scope="module")
async def site(
    tmp_path_factory: pytest.TempPathFactory,
    weaviate_binary: Path,
    weaviate_server: WeaviateServer,
    model_dir: Path,
    tiktoken_dir: Path | None,
) -> AsyncIterator[Site]:
    """A knowledge base built with the CLI (including a stored-XSS document), then `ragbot serve` on it.

    Its Weaviate is the session's (WEAVIATE_URL): the page is under test here, not how ragbot starts a Weaviate.
    """
    root = tmp_path_factory.mktemp("web-chat")
    async with PacedModel(api_key="x", pause=0.12) as model:
        env = _env(root, model, weaviate_binary, model_dir, tiktoken_dir) | weaviate_urls(weaviate_server)
        documents = (
            ("vpn.md", VPN),
            ("printers.md", PRINTERS),
            ("quasar-notes.md", XSS_DOC),
            ("prices.csv", PRICES),
            ("team-faq.csv", TEAM_FAQ),
        )
        for name, text in documents:
            (root / name).write_text(text)
        for args in (("kb", "create", KB), ("ingest", *(name for name, _ in documents), "--kb", KB)):
            code, _, err = await run_ragbot(env, root, *args)
            assert code == 0, err
        process, log = await serve_logged(env, root)
        url = f"http://127.0.0.1:{env['RAGBOT_PORT']}"
        try:
            try:
                await wait_until_ready(url, process)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; its log ends:\n{log.read_text()[-3000:]}") from None
            yield Site(url, model, log)
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 60)


@pytest_asyncio.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Debian's chromium driven by playwright (never playwright's own download)."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"chromium is missing at {CHROMIUM}: install Debian's chromium package")
    async with async_playwright() as playwright:
        # Chromium's sandbox refuses to run as root (as in CI containers).
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        await launched.close()


@dataclass
class Chat:
    """One person's browser tab on the web chat, and what it did that no page should."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def input(self) -> Locator:
        return self.page.get_by_test_id("input")

    async def open(self) -> None:
        await self.page.goto("/")
        await expect(self.page.locator("body[data-ready=true]")).to_have_count(1)

    async def ask(self, question: str) -> Locator:
        """Type `question`, press Enter, and wait for its answer to be final and the input free again."""
        answers = self.page.locator(ANSWERS)
        before = await answers.count()
        await self.input.fill(question)
        await self.input.press("Enter")
        await expect(self.page.get_by_test_id("stop")).to_be_visible()
        await expect(answers).to_have_count(before + 1, timeout=ANSWER_MS)
        await expect(self.page.get_by_test_id("send")).to_be_enabled(timeout=ANSWER_MS)
        await expect(self.page.get_by_test_id("stop")).to_be_hidden()
        return answers.nth(before)

    async def command(self, text: str) -> None:
        """Type a command, press Enter, and wait for the request to be over."""
        await self.input.fill(text)
        await self.input.press("Enter")
        await expect(self.page.get_by_test_id("send")).to_be_enabled(timeout=ANSWER_MS)

    @property
    def messages(self) -> Locator:
        return self.page.get_by_test_id("messages").get_by_test_id("message")

    async def shown(self, bubble: Locator) -> list[dict[str, str]]:
        """Every distinct (text, status) the bubble showed, in order."""
        ref = await bubble.get_attribute("data-ref")
        shown: list[dict[str, str]] = await self.page.evaluate("ref => window.__texts[ref] || []", ref)
        return shown

    async def log_in(self, token: str) -> None:
        """Send `token` to the admin login and wait for the server's answer (the button is disabled until then).

        Not waiting let a command typed next reach the server before the session was an admin's: CI saw `/tables on`
        refused that way, and the question after it answered without the tables."""
        await self.page.get_by_test_id("admin-button").click()
        await self.page.get_by_test_id("admin-token").fill(token)
        await self.page.get_by_test_id("admin-submit").click()
        await expect(self.page.get_by_test_id("admin-submit")).to_be_enabled()

    def assert_nothing_ran(self) -> None:
        assert self.dialogs == [], self.dialogs
        assert self.errors == [], self.errors


@pytest_asyncio.fixture
async def chat(site: Site, browser: Browser) -> AsyncIterator[Chat]:
    """A fresh browser context (so a new web session) at 1280x800 on the site."""
    context = await browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    await context.add_init_script(RECORDER)
    page = await context.new_page()
    tab = Chat(page)

    async def on_dialog(dialog: Dialog) -> None:
        tab.dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    page.on("request", lambda request: tab.requests.append(request.url))
    yield tab
    await context.close()


async def test_an_answer_grows_as_it_is_written_and_ends_with_its_numbered_sources(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    site.model.answer = lambda prompt: VPN_ANSWER
    await chat.open()
    await expect(chat.page.get_by_test_id("knowledge-bases")).to_have_text(KB)

    answer = await chat.ask("How do I get the VPN client?")

    await expect(chat.page.locator("[data-testid=message][data-role=user]")).to_have_text(
        ["How do I get the VPN client?"]
    )
    text = answer.get_by_test_id("message-text")
    await expect(text.locator("p")).to_have_text([VPN_INTRO])
    await expect(text.locator("p strong")).to_have_text("Software Center")
    await expect(text.locator("ol > li")).to_have_text(VPN_STEPS)
    await expect(text.locator("li code")).to_have_text("VPN")
    shown = await chat.shown(answer)
    growing = [entry["text"] for entry in shown if entry["status"] == "streaming" and entry["text"].strip()]
    assert len(set(growing)) >= 2, shown
    # Each text shown while streaming was a beginning of the answer (mid-stream, unclosed ** or ` show as typed).
    assert all(_flat(VPN_ANSWER).startswith(_flat(text)) for text in growing), growing
    assert shown[-1] == {"text": await text.text_content(), "status": "done"}

    sources = answer.get_by_test_id("sources").get_by_test_id("source")
    await expect(sources.first).to_be_visible()
    numbers = [await source.get_attribute("data-number") for source in await sources.all()]
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]
    await expect(sources.first.get_by_test_id("source-title")).to_have_text("vpn.md")
    await expect(answer.get_by_test_id("feedback-up")).to_be_visible()
    await expect(answer.get_by_test_id("feedback-down")).to_be_visible()

    screenshot = Path(os.environ.get("WEB_CHAT_SCREENSHOT") or tmp_path / "web-chat.png")
    await chat.page.screenshot(path=screenshot)
    chat.assert_nothing_ran()


async def test_an_answer_quoting_a_table_shows_a_table_with_its_cells(site: Site, chat: Chat, tmp_path: Path) -> None:
    site.model.answer = lambda prompt: COMMANDS_ANSWER
    await chat.open()

    answer = await chat.ask("Which chat commands are there?")

    text = answer.get_by_test_id("message-text")
    table = text.locator("blockquote > table")
    await expect(table.locator("thead th")).to_have_text(["command", "what it does"])
    rows = table.locator("tbody tr")
    await expect(rows).to_have_count(len(COMMAND_CELLS))
    for row, cells in zip(await rows.all(), COMMAND_CELLS, strict=True):
        await expect(row.locator("td")).to_have_text(cells)
    await expect(table.locator("td code")).to_have_text("/kb list")
    await expect(table.locator("td strong")).to_have_text("knowledge bases")
    await expect(table.locator("td a")).to_have_attribute("href", "https://example.com/sources")
    await expect(text.locator("blockquote > p")).to_have_text("[1]")
    await expect(text).not_to_contain_text("| ---")
    # The long cell wraps inside the bubble rather than widening it.
    bubble = await answer.bounding_box()
    box = await table.bounding_box()
    assert bubble is not None
    assert box is not None
    assert box["x"] + box["width"] <= bubble["x"] + bubble["width"], (box, bubble)

    screenshot = Path(os.environ.get("WEB_CHAT_TABLE_SCREENSHOT") or tmp_path / "web-chat-table.png")
    await chat.page.screenshot(path=screenshot)
    chat.assert_nothing_ran()


async def test_a_question_over_a_sheet_shows_the_query_s_result_as_a_table_under_the_answer(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    def plan(prompt: str) -> str:
        table = re.search(r'Table "([^"]+)"', prompt)
        assert table is not None, prompt
        sql = f'SELECT region, count(*) AS products FROM "{table.group(1)}" GROUP BY 1 ORDER BY 1'
        return json.dumps({"needs_sql": True, "sql": sql})

    site.model.plan = plan
    site.model.answer = lambda prompt: "Each region has two products on the price list [1]."
    await chat.open()
    await chat.log_in(ADMIN_TOKEN)
    await expect(chat.page.get_by_test_id("admin-button")).to_have_attribute("data-admin", "true")
    await chat.command("/tables on")
    await expect(chat.messages.last).to_contain_text("answered with SQL")

    answer = await chat.ask("How many products per region are on the price list?")

    table = answer.get_by_test_id("sources").get_by_test_id("source-table").locator("table")
    await expect(table.locator("thead th")).to_have_text(["region", "products"])
    rows = table.locator("tbody tr")
    await expect(rows).to_have_count(2)
    for row, cells in zip(await rows.all(), [["north", "2"], ["south", "2"]], strict=True):
        await expect(row.locator("td")).to_have_text(cells)
    # A count is right-aligned as in a spreadsheet; a name is not.
    await expect(rows.first.locator("td").nth(1)).to_have_attribute("align", "right")
    await expect(rows.first.locator("td").nth(0)).not_to_have_attribute("align", "right")
    chat.assert_nothing_ran()
    await chat.page.screenshot(path=Path(os.environ.get("WEB_CHAT_SHEET_SCREENSHOT") or tmp_path / "sheet.png"))


async def test_a_reload_restores_the_conversation_and_its_feedback(site: Site, chat: Chat) -> None:
    site.model.answer = lambda prompt: VPN_ANSWER
    await chat.open()
    answer = await chat.ask("Where is the VPN client installed from?")
    await answer.get_by_test_id("feedback-up").click()
    await expect(answer.get_by_test_id("feedback-up")).to_have_attribute("aria-pressed", "true")

    await chat.page.reload()
    await expect(chat.page.locator("body[data-ready=true]")).to_have_count(1)

    await expect(chat.messages).to_have_count(2)
    await expect(chat.messages.nth(0)).to_have_attribute("data-role", "user")
    await expect(chat.messages.nth(0)).to_have_text("Where is the VPN client installed from?")
    restored = chat.messages.nth(1)
    await expect(restored).to_have_attribute("data-role", "assistant")
    await expect(restored.get_by_test_id("message-text").locator("p")).to_have_text([VPN_INTRO])
    await expect(restored.get_by_test_id("message-text").locator("ol > li")).to_have_text(VPN_STEPS)
    await expect(restored.get_by_test_id("source-title").first).to_have_text("vpn.md")
    await expect(restored.get_by_test_id("feedback-up")).to_have_attribute("aria-pressed", "true")
    await expect(restored.get_by_test_id("feedback-down")).to_have_attribute("aria-pressed", "false")
    chat.assert_nothing_ran()


async def _ask_for_a_long_answer(site: Site, chat: Chat, topic: str, steps: int) -> None:
    """Ask for every step of `topic` and wait until the answer, `steps` sentences long, is being written."""
    long_answer = " ".join(f"Step {n} of the {topic} set-up is described in the guide [1]." for n in range(1, steps))
    site.model.answer = lambda prompt: long_answer
    await chat.open()
    await chat.input.fill(f"Describe every step of the {topic} set-up")
    await chat.input.press("Enter")
    writing = chat.page.locator("[data-testid=message][data-role=assistant][data-status=streaming]")
    await expect(writing.get_by_test_id("message-text")).to_contain_text("Step 1", timeout=ANSWER_MS)


async def test_stop_ends_the_answer_being_written(site: Site, chat: Chat) -> None:
    await _ask_for_a_long_answer(site, chat, "VPN", 9)
    await chat.page.get_by_test_id("stop").click()

    answer = chat.page.locator(ANSWERS).last
    await expect(answer.get_by_test_id("message-notice")).to_have_text(messages.stopped_note("en"), timeout=ANSWER_MS)
    await expect(chat.page.get_by_test_id("stop")).to_be_hidden()
    await expect(chat.page.get_by_test_id("send")).to_be_enabled()
    assert "Step 8" not in (await answer.get_by_test_id("message-text").text_content() or "")
    chat.assert_nothing_ran()


async def test_enter_while_an_answer_is_written_says_so_keeps_the_text_and_sends_nothing(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    await _ask_for_a_long_answer(site, chat, "printer", 13)
    await chat.input.fill("And the scanner?")
    await chat.input.press("Enter")
    notice = chat.page.get_by_test_id("composer-notice")
    await expect(notice).to_have_text("An answer is still being written: wait for it, or press Stop to end it.")
    await expect(chat.page.get_by_test_id("stop")).to_be_visible()
    await chat.page.screenshot(path=tmp_path / "busy.png")
    await expect(chat.input).to_have_value("And the scanner?")
    await expect(chat.page.locator("[data-testid=message][data-role=user]")).to_have_count(1)

    await expect(chat.page.get_by_test_id("send")).to_be_enabled(timeout=ANSWER_MS)
    await expect(notice).to_be_hidden()
    site.model.answer = lambda prompt: "The scanner is next to the printer [1]."
    answer = await chat.ask("And the scanner?")
    await expect(answer.get_by_test_id("message-text")).to_contain_text("next to the printer")
    chat.assert_nothing_ran()


async def test_new_conversation_by_button_or_command_clears_the_screen_and_the_history(site: Site, chat: Chat) -> None:
    site.model.answer = lambda prompt: VPN_ANSWER
    await chat.open()
    await chat.ask("Where is the VPN client installed from?")
    await chat.page.get_by_test_id("new-conversation").click()
    await expect(chat.messages).to_have_count(0)
    await expect(chat.page.get_by_test_id("empty-state")).to_be_visible()

    await chat.ask("How do I install a printer?")
    await chat.command("/new")
    await expect(chat.messages).to_have_count(1)  # only the command's own reply is left
    await expect(chat.messages).to_have_text([messages.new_conversation("en")])

    await chat.page.reload()
    await expect(chat.page.locator("body[data-ready=true]")).to_have_count(1)
    await expect(chat.messages).to_have_count(0)
    chat.assert_nothing_ran()


async def test_an_admin_uploads_a_file_watches_it_indexed_and_gets_answers_from_it(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    await chat.open()
    await expect(chat.page.get_by_test_id("upload-area")).to_be_hidden()
    await chat.log_in(ADMIN_TOKEN)
    await expect(chat.page.get_by_test_id("upload-area")).to_be_visible()
    await expect(chat.page.get_by_test_id("admin-button")).to_have_attribute("data-admin", "true")

    await chat.page.get_by_test_id("upload-input").set_input_files(
        {"name": UPLOAD_NAME, "mimeType": "text/markdown", "buffer": UPLOAD_DOC.encode()}
    )
    status = chat.page.locator("[data-testid=message][data-role=assistant][data-ref]").last
    await expect(status.get_by_test_id("message-text")).to_contain_text(re.compile("indexed", re.I), timeout=ANSWER_MS)
    await expect(status).to_contain_text(UPLOAD_NAME)
    shown = [entry["text"] for entry in await chat.shown(status)]
    assert len(set(shown)) >= 2, shown  # the job's status bubble was edited as the job moved

    site.model.answer = quote("Zorblax-7 coolant")
    answer = await chat.ask("How often must the Zorblax-7 coolant be replaced?")
    await expect(answer.get_by_test_id("message-text")).to_contain_text("replaced every 41 days")
    source = answer.get_by_test_id("source").first
    await expect(source.get_by_test_id("source-title")).to_have_text(UPLOAD_NAME)
    # The sentence the answer quoted, as plain text; no document id beside the title.
    await expect(source.get_by_test_id("source-snippet")).to_have_text(
        "The Zorblax-7 coolant must be replaced every 41 days by a certified technician."
    )
    document_id = await source.get_attribute("data-document-id")
    assert document_id
    assert document_id not in (await source.inner_text())
    await answer.screenshot(path=tmp_path / "sources.png")
    chat.assert_nothing_ran()


FAQ_SHEET = "question,answer\nWhere is the bike shed?,Behind building C.\nWho has the shed key?,Reception.\n"


async def test_an_admin_attaches_an_faq_sheet_to_faq_import_and_files_to_ingest(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    await chat.open()
    await expect(chat.page.get_by_test_id("attach")).to_be_hidden()
    await chat.log_in(ADMIN_TOKEN)
    await expect(chat.page.get_by_test_id("attach")).to_be_visible()
    attached = chat.page.get_by_test_id("attachment")

    async with chat.page.expect_file_chooser() as chooser:
        await chat.page.get_by_test_id("attach").click()
    await (await chooser.value).set_files({"name": "faq.csv", "mimeType": "text/csv", "buffer": FAQ_SHEET.encode()})
    await expect(attached.get_by_test_id("attachment-name")).to_have_text(["faq.csv"])
    await chat.page.screenshot(path=tmp_path / "attached.png")
    await chat.input.fill("/faq import")
    await chat.input.press("Enter")
    status = chat.page.locator("[data-testid=message][data-role=assistant][data-ref]").last
    await expect(status.get_by_test_id("message-text")).to_have_text(
        "faq.csv: FAQ sheet imported: 2 added, 0 updated, 0 unchanged.", timeout=ANSWER_MS
    )
    await expect(chat.page.locator("[data-testid=message][data-role=user]").last).to_have_text("/faq import · faq.csv")
    await expect(attached).to_have_count(0)
    await chat.command("/faq list")
    await expect(chat.messages.last).to_contain_text("Where is the bike shed?")

    # Text that is no command for files sends nothing and says why; the files stay attached.
    await chat.page.get_by_test_id("attach-input").set_input_files(
        [
            {"name": "bikes.md", "mimeType": "text/markdown", "buffer": b"# Bikes\n\nBikes are lent for a day.\n"},
            {"name": "lockers.md", "mimeType": "text/markdown", "buffer": b"# Lockers\n\nLockers open by badge.\n"},
        ]
    )
    before = await chat.messages.count()
    await chat.input.fill("What are these?")
    await chat.input.press("Enter")
    await expect(chat.page.get_by_test_id("composer-notice")).to_contain_text("/faq import or /ingest")
    assert await chat.messages.count() == before
    await expect(attached).to_have_count(2)
    await chat.page.get_by_test_id("attachment-remove").last.click()
    await expect(attached.get_by_test_id("attachment-name")).to_have_text(["bikes.md"])
    await chat.input.fill("/ingest")
    await chat.input.press("Enter")
    await expect(status.get_by_test_id("message-text")).to_have_text("bikes.md: indexed, 1 passage.", timeout=ANSWER_MS)
    await expect(chat.page.get_by_test_id("composer-notice")).to_be_hidden()
    chat.assert_nothing_ran()


async def test_a_file_dropped_on_the_page_is_uploaded(site: Site, chat: Chat) -> None:
    await chat.open()
    await chat.log_in(ADMIN_TOKEN)
    await expect(chat.page.get_by_test_id("upload-area")).to_be_visible()
    files = await chat.page.evaluate_handle(
        """() => {
          const data = new DataTransfer();
          data.items.add(new File(['# Kettles\\n\\nThe office kettle is descaled on Mondays.\\n'], 'kettle.md',
                                  {type: 'text/markdown'}));
          return data;
        }"""
    )
    drop_zone = chat.page.get_by_test_id("drop-zone")
    await chat.page.dispatch_event("body", "dragenter", {"dataTransfer": files})
    await expect(drop_zone).to_be_visible()
    await chat.page.dispatch_event("body", "drop", {"dataTransfer": files})
    await expect(drop_zone).to_be_hidden()
    status = chat.page.locator("[data-testid=message][data-role=assistant][data-ref]").last
    await expect(status.get_by_test_id("message-text")).to_contain_text(re.compile("indexed", re.I), timeout=ANSWER_MS)
    await expect(status).to_contain_text("kettle.md")
    chat.assert_nothing_ran()


async def test_a_stored_script_in_a_document_is_shown_as_text_and_never_runs(site: Site, chat: Chat) -> None:
    site.model.answer = quote("Quasar builds ship")
    await chat.open()
    answer = await chat.ask("When do Quasar builds ship?")

    text = answer.get_by_test_id("message-text")
    await expect(text).to_contain_text("Quasar builds ship on Fridays.")
    await expect(text).to_contain_text("<script>window.__xss=1</script>")
    await expect(text).to_contain_text('<img src=x onerror="window.__xss=1">')
    await expect(text).to_contain_text("[click](javascript:window.__xss=1)")
    await expect(answer.get_by_test_id("source-title").first).to_have_text("quasar-notes.md")
    messages = chat.page.get_by_test_id("messages")
    await expect(messages.locator("script, img, iframe, object, embed")).to_have_count(0)
    await expect(messages.locator("a[href]:not([href^='http:']):not([href^='https:'])")).to_have_count(0)
    assert await chat.page.evaluate("window.__xss") is None
    assert not [url for url in chat.requests if url.endswith("/x")], chat.requests
    chat.assert_nothing_ran()


async def test_a_wrong_admin_token_is_refused_and_a_non_admin_upload_is_forbidden(site: Site, chat: Chat) -> None:
    await chat.open()
    await chat.log_in("not-the-token")
    error = chat.page.get_by_test_id("admin-error")
    await expect(error).to_be_visible()
    await expect(error).not_to_have_text("")
    await expect(chat.page.get_by_test_id("admin-button")).to_have_attribute("data-admin", "false")
    await chat.page.get_by_test_id("admin-cancel").click()
    await expect(chat.page.get_by_test_id("upload-area")).to_be_hidden()

    async with chat.page.expect_response("**/api/upload") as upload:
        await chat.page.get_by_test_id("upload-input").set_input_files(
            {"name": "sneaky.md", "mimeType": "text/markdown", "buffer": b"# Sneaky\n\nNot an admin.\n"}
        )
    response = await upload.value
    assert response.status == 403
    refusal = (await response.json())["error"]
    bubble = chat.page.locator("[data-testid=message][data-kind=error]")
    await expect(bubble).to_have_text(refusal)
    chat.assert_nothing_ran()


async def test_an_empty_page_offers_the_knowledge_bases_faqs_and_one_click_asks_one(
    site: Site, chat: Chat, tmp_path: Path
) -> None:
    await chat.open()
    offered = chat.page.get_by_test_id("suggestions")
    await expect(offered).to_be_visible()
    questions = await offered.get_by_test_id("suggestion").all_text_contents()
    assert {"How do I book a meeting room?", "How do I reset my password?"} <= set(questions)
    assert len(questions) <= 4
    await chat.page.screenshot(path=tmp_path / "suggestions.png")

    answers = chat.page.locator(ANSWERS)
    await offered.get_by_test_id("suggestion").filter(has_text="How do I reset my password?").click()
    await expect(answers).to_have_count(1, timeout=ANSWER_MS)
    await expect(chat.page.locator("[data-testid=message][data-role=user]")).to_have_text("How do I reset my password?")
    await expect(answers.first).to_contain_text("Forgot password", timeout=ANSWER_MS)
    await expect(chat.page.get_by_test_id("empty-state")).to_be_hidden()
    chat.assert_nothing_ran()


async def test_a_browser_set_to_chinese_gets_the_page_in_chinese_and_one_set_to_english_in_english(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    for locale, lang in (("zh-CN", "zh"), ("en-GB", "en")):
        context = await browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 800}, locale=locale)
        try:
            page = await context.new_page()
            await page.goto("/")
            await expect(page.locator("body[data-ready=true]")).to_have_count(1)
            words = page_texts(lang)
            await expect(page.locator("html")).to_have_attribute("lang", lang)
            await expect(page.get_by_test_id("send")).to_have_text(words["send"])
            await expect(page.get_by_test_id("new-conversation")).to_have_text(words["new_conversation"])
            await expect(page.get_by_test_id("admin-button")).to_have_text(words["admin"])
            await expect(page.get_by_test_id("empty-state")).to_contain_text(words["empty_title"])
            assert await page.get_by_test_id("input").get_attribute("placeholder") == words["ask_placeholder"]
            await page.screenshot(path=tmp_path / f"page-{lang}.png")
        finally:
            await context.close()
    assert page_texts("zh")["send"] != page_texts("en")["send"]
