"""Slack and the web chat for the command drills, over real services; the admin commands and admin-only forms
taken from the command registry; the state a refused command must leave as it was."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from sqlmodel import select

from adapters.slack.app import EVENTS_PATH, SlackAdapter
from adapters.slack.app import create as create_slack
from adapters.web.app import create as create_web
from bot.app.manager import build_manager, chat_policy
from bot.app.server import create_app
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.commands.builtin import default_registry
from bot.commands.registry import Asker
from bot.metrics import ChatMetrics
from fakes.slack import FakeSlackAPI, events
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from rag.ingest.faq_sheet import FaqEntry
from storage.models import ChannelBinding, ChatSetting
from tests.conftest import EmbeddedSettings
from tests.security.telegram_support import HANDBOOK

SLACK_SECRET = "test-signing-secret"
SLACK_TEAM = "T0ACME"
SLACK_TOKEN = "xoxb-acme"
SLACK_ADMIN = "U0ADMIN"
# Long enough for any rule on admin tokens.
WEB_ADMIN_TOKEN = "a-web-admin-token-long-enough-for-any-rule-0123456789"
# The words after the command's name that write each form (`usage.<command>.<form>` in the catalogue) well, so a
# refusal is about rights and not about usage. An admin command is refused before its words are read, so a form not
# named here gets its key and "x"; an admin-only form of a command anyone may run needs its words here (the drill
# fails until it has them).
_WORDS = {
    "ingest.urls": "https://example.com/handbook",
    "ingest.files": "",
    "faq.add": 'add "Where is the gym?" "In the basement."',
    "faq.import": "import",
    "faq.delete": "delete {faq}",
    "fallback.text": "Ask HR instead.",
    "kb.use": "use secrets",
    "kb.create": "create stolen A copy",
    "kb.info": "info handbook",
}


@dataclass(frozen=True)
class AdminCase:
    """One way a non-admin may try an admin's command: the words after the slash, and the refusals that fit."""

    words: str
    files: bool
    refusals: tuple[str, ...]

    def __str__(self) -> str:
        return self.words


def admin_cases(admin: Asker, person: Asker) -> list[AdminCase]:
    """Every admin command in every form, and every form only admins may run, as the registry has them."""
    registry = default_registry()
    cases = []
    for spec in registry.visible_to(admin):
        allowed = {form.key for form in registry.forms_for(spec, person)}
        for form in registry.forms_for(spec, admin):
            if form.key in allowed:
                continue
            words = (
                form.key if form.literal else _WORDS.get(f"{spec.name}.{form.key}", f"{form.key} x" if form.key else "")
            )
            refusals = (spec.name,) if spec.admin else (spec.name, f"{spec.name} {form.key}")
            cases.append(AdminCase(f"{spec.name} {words}".strip(), form.files, refusals))
    return cases


async def seed(services: Services) -> str:
    """The handbook (read by default), then `seed_more`; returns the FAQ's id."""
    kb = await services.knowledge.create("handbook", {})
    await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
    return await seed_more(services)


async def seed_more(services: Services) -> str:
    """Beside the handbook, a second knowledge base "secrets" and an FAQ in the handbook; returns the FAQ's id."""
    kb = await services.knowledge.find("handbook")
    await services.knowledge.create("secrets", {})
    await services.faq_importer.import_entries(kb, [FaqEntry("Where is lunch?", ("In the atrium.",))])
    (faq,) = await services.faqs.in_kb(kb.id)
    return faq.id


async def state(services: Services) -> tuple[Any, ...]:
    """Everything a command could change: knowledge bases, documents, FAQs, jobs, every chat's settings and bindings,
    and the schedules."""
    kbs = await services.knowledge.all()
    documents = {kb.name: sorted(d.title for d in await services.knowledge.documents(kb.name)) for kb in kbs}
    faqs = {
        kb.name: sorted((f.id, f.question, f.answers, f.enabled) for f in await services.faqs.in_kb(kb.id))
        for kb in kbs
    }
    jobs = len(await services.job_repo.recent(limit=None))
    async with services.db.session() as session:
        settings = sorted(
            (row.platform, row.workspace, row.chat, row.answer_mode, row.fallback_text, row.language)
            for row in (await session.exec(select(ChatSetting))).all()
        )
        bindings = sorted(
            (row.platform, row.workspace, row.chat, row.kb_id)
            for row in (await session.exec(select(ChannelBinding))).all()
        )
    schedules = sorted((row.kind, row.kb_id, row.source, row.every_seconds) for row in await services.schedules.all())
    return sorted(kb.name for kb in kbs), documents, faqs, jobs, settings, bindings, schedules


@dataclass
class SlackApp:
    """ragbot's Slack adapter served on its own port, over `services`, against the fake Web API."""

    fake: FakeSlackAPI
    url: str

    async def post(self, payload: dict[str, Any], *, form: bool = False) -> int:
        """POST a signed delivery to /slack/events as Slack would."""
        body = events.form_body(payload) if form else events.json_body(payload)
        content_type = "application/x-www-form-urlencoded" if form else "application/json"
        headers = events.signed_headers(body, SLACK_SECRET, content_type=content_type)
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + EVENTS_PATH, data=body, headers=headers) as r,
        ):
            return r.status


def slack_settings(data: Path, fake: FakeSlackAPI, embedded_settings: EmbeddedSettings) -> Settings:
    """A single-workspace Slack app with SLACK_ADMIN as its admin, reading the handbook."""
    return embedded_settings(
        data,
        DEFAULT_KNOWLEDGE_BASES="handbook",
        SLACK_BOT_TOKEN=SLACK_TOKEN,
        SLACK_SIGNING_SECRET=SLACK_SECRET,
        SLACK_ADMINS=SLACK_ADMIN,
        SLACK_API_BASE_URL=fake.base_url,
    )


def fake_slack() -> FakeSlackAPI:
    """The fake Web API with the one workspace installed."""
    fake = FakeSlackAPI()
    fake.add_workspace(SLACK_TEAM, bot_token=SLACK_TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0ACME")
    return fake


@asynccontextmanager
async def slack_app(services: Services, settings: Settings, fake: FakeSlackAPI) -> AsyncIterator[SlackApp]:
    """A manager and the Slack adapter over `services`, served: what `ragbot serve` runs, then stopped again."""
    adapter = create_slack(build_manager(services, chat_policy(settings)), settings, services.db)
    assert isinstance(adapter, SlackAdapter)
    app = web.Application()
    adapter.mount(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await adapter.start()
    try:
        yield SlackApp(fake, f"http://127.0.0.1:{port}")
    finally:
        await adapter.stop()
        await runner.cleanup()


@asynccontextmanager
async def web_chat(data: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[tuple[Services, str, str]]:
    """The web chat served over seeded services: the services, its URL and the FAQ's id."""
    settings = embedded_settings(data, DEFAULT_KNOWLEDGE_BASES="handbook", WEB_ADMIN_TOKEN=WEB_ADMIN_TOKEN)
    async with build_services(settings) as services:
        faq = await seed(services)
        metrics = ChatMetrics()
        manager = build_manager(services, chat_policy(settings), metrics=metrics)
        app = create_app(services, metrics)
        adapter = create_web(manager, settings, services.db)
        assert adapter is not None
        adapter.mount(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        await services.jobs.start()
        try:
            yield services, f"http://127.0.0.1:{port}", faq
        finally:
            await services.jobs.stop()
            await adapter.stop()
            await runner.cleanup()


class LoggedLine(logging.Handler):
    """Sets `seen` once a log line containing `text` is emitted (log lines come from the test's own event loop)."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@asynccontextmanager
async def watching(logger: str, text: str) -> AsyncIterator[LoggedLine]:
    """A LoggedLine on `logger` for the body (its level lowered to INFO at least)."""
    handler, log = LoggedLine(text), logging.getLogger(logger)
    level = log.level
    log.addHandler(handler)
    log.setLevel(min(level or logging.INFO, logging.INFO))
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


async def first_of(*waits: Awaitable[object], timeout: float) -> None:  # noqa: ASYNC109
    """Return when the first of `waits` is done (the rest are cancelled); TimeoutError when none is in time."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
    if not done:
        raise TimeoutError(f"nothing of {len(tasks)} happened in {timeout}s")
    for task in done:
        task.result()


@asynccontextmanager
async def web_session(url: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A browser's session on the web chat: its own cookie jar, opened on the page."""
    async with aiohttp.ClientSession(url, cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get("/") as page:
            assert page.status == 200
        yield session


async def web_command(browser: aiohttp.ClientSession, text: str) -> str:
    """Send `text` from the page as a same-origin fetch does; the text of the reply."""
    origin = str(browser._base_url).rstrip("/")
    async with browser.post("/api/messages", json={"text": text}, headers={"Origin": origin}) as response:
        assert response.status == 200, await response.text()
        body = await response.text()
    events = [block.split("\n", 1) for block in body.split("\n\n") if block.strip()]
    # The reply is the event before the stream's closing one, as the page reads it ("" when nothing was said).
    if len(events) < 2:
        return ""
    return str(json.loads(events[-2][1].removeprefix("data: "))["text"])
