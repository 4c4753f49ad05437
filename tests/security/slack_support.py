"""What the Slack drills share: ragbot's Slack adapter on real services against the fake Web API, and a reading of
everything the fake received for live mentions and links."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from adapters.slack.app import EVENTS_PATH, SlackAdapter
from adapters.slack.app import create as create_slack
from bot.app.manager import build_manager, chat_policy
from bot.app.services import build_services
from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI, events
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import ADMIN, SECRET, TEAM, TOKEN, Slack, _serve

BOT_ID = "B0ACME"
# Slack syntax that notifies or links, as mrkdwn (`text`, mrkdwn elements) reads it, and as a Markdown renderer that
# decodes entities first might (markdown_text, markdown blocks, stream text): the stricter reading for Markdown.
_LIVE_MRKDWN = re.compile(r"<(?:[!@#]|[a-z][a-z0-9+.\-]*:(?!:))", re.IGNORECASE)
_LIVE_MARKDOWN = re.compile(r"(?:<|&lt;?|&#0*60;|&#x0*3c;)(?:[!@#]|[a-z][a-z0-9+.\-]*:(?!:))", re.IGNORECASE)
_POSTING = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream")


@asynccontextmanager
async def slack_scene(
    data_dir: Path,
    embedded_settings: EmbeddedSettings,
    documents: dict[str, bytes],
    *,
    model: FakeOpenAI | None = None,
    **settings: Any,
) -> AsyncIterator[Slack]:
    """ragbot's Slack adapter served on a local port, its knowledge base "handbook" holding `documents`; answers
    written by `model` when one is given (else extractive)."""
    if model is not None:
        settings.update(
            CHAT_MODEL="fake-model",
            CHAT_MODEL_BASE_URL=model.base_url,
            CHAT_MODEL_API_KEY="test-key",
            CHAT_MODEL_MAX_RETRIES=0,
        )
    async with FakeSlackAPI() as fake:
        fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=events.BOT_USER_ID, bot_id=BOT_ID)
        defaults = {"DEFAULT_KNOWLEDGE_BASES": "handbook", "SLACK_ADMINS": ADMIN}
        configured = embedded_settings(
            data_dir,
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_BASE_URL=fake.base_url,
            **{**defaults, **settings},
        )
        async with build_services(configured) as services:
            kb = await services.knowledge.create("handbook", {})
            for name, content in documents.items():
                await services.ingestor.ingest(kb, SourceFile(content, f"upload:{name}", name))
            manager = build_manager(services, chat_policy(configured))
            adapter = create_slack(manager, configured, services.db)
            assert isinstance(adapter, SlackAdapter)
            runner, url = await _serve(adapter)
            await adapter.start()
            try:
                yield Slack(services, fake, adapter, url, manager, configured)
            finally:
                await adapter.stop()
                await runner.cleanup()


def _texts(value: Any, markdown: bool) -> Iterator[tuple[str, bool]]:
    """Every text in a block structure, with whether Slack reads it as standard Markdown."""
    if isinstance(value, list):
        for item in value:
            yield from _texts(item, markdown)
    elif isinstance(value, dict):
        kind = value.get("type")
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                yield item, markdown or kind in ("markdown", "markdown_text")
            else:
                yield from _texts(item, markdown)


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


Mark = tuple[int, int]
"""How many Web API calls and response_url posts the fake had received at some moment."""


def mark(fake: FakeSlackAPI) -> Mark:
    """Where the fake's records stand now: texts received from here on are what a test's own steps sent."""
    return len(fake.calls()), len(fake.responses())


def posted_texts(fake: FakeSlackAPI, since: Mark = (0, 0)) -> list[tuple[str, bool]]:
    """Every text the bot sent to Slack (posts, edits, streams, response_url) after `since`, with whether it is
    Markdown."""
    found: list[tuple[str, bool]] = []
    for call in fake.calls()[since[0] :]:
        if call.method not in _POSTING:
            continue
        params = call.params
        if isinstance(params.get("text"), str):
            found.append((params["text"], False))
        if isinstance(params.get("markdown_text"), str):
            found.append((params["markdown_text"], True))
        found += _texts(_decoded(params.get("blocks")), False)
        found += _texts(_decoded(params.get("chunks")), True)
    for post in fake.responses()[since[1] :]:
        if isinstance(post.body.get("text"), str):
            found.append((post.body["text"], False))
        found += _texts(post.body.get("blocks"), False)
    return found


def live_syntax(fake: FakeSlackAPI, since: Mark, *, composed: tuple[str, ...] = ()) -> list[str]:
    """The texts the bot sent after `since` that hold a live mention or link, less the `composed` ones ragbot
    writes itself (the asker's mention over a question asked with the slash command)."""
    live = []
    for text, markdown in posted_texts(fake, since):
        rest = text
        for own in composed:
            rest = rest.replace(own, "")
        if (_LIVE_MARKDOWN if markdown else _LIVE_MRKDWN).search(rest):
            live.append(text)
    return live


async def deliver(slack: Slack, body: bytes, headers: dict[str, str]) -> int:
    """POST exactly these bytes and headers to ragbot's /slack/events (a capture sent again, a forgery); the status."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(slack.url + EVENTS_PATH, data=body, headers=headers) as response,
    ):
        return response.status


async def settled(slack: Slack) -> None:
    """Wait until the events, commands and clicks being handled are done (an accepted copy would be by now)."""
    work = set(slack.adapter._listeners.work)
    if work:
        await asyncio.wait(work, timeout=30)
