"""Two `ragbot serve` on one PostgreSQL and one Weaviate behind haproxy (round robin, no stickiness): what must
hold whichever instance a request lands on. The web chat, Slack's Events API and a Telegram webhook all come in
through haproxy; the chat model, Slack and Telegram are the fakes, in this process."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from adapters.slack.app import EVENTS_PATH
from adapters.telegram.app import WEBHOOK_PATH
from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI, events
from fakes.telegram import FakeTelegramBotAPI
from harness.instances import SERVED_BY, Instances, poll, running_instances, start_refused
from harness.processes import ROOT, SETTINGS_PREFIXES, free_port, run_ragbot
from storage.weaviate.server import WeaviateServer
from tests.conftest import fresh_postgres_database, weaviate_urls

KB = "handbook"
HANDBOOK = (
    "# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    "# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)
ACCESS_TOKEN = "multi-instance-access-token-0123456789abcdef"
SLACK_SECRET = "multi-instance-signing-secret"
TEAM = "T0MULTI"
SLACK_TOKEN = "xoxb-multi"
TELEGRAM_SECRET = "multi_instance_webhook_secret"
TELEGRAM_USER: dict[str, Any] = {"id": 7300, "is_bot": False, "first_name": "Cy", "username": "cy"}
FIRST_QUESTION = "How do I install the VPN client?"
FOLLOW_UP = "How does it connect?"
REWRITTEN = "How does the VPN client connect?"


@dataclass
class Site:
    """The instances behind haproxy, the fakes they talk to, and the environment they were started with."""

    instances: Instances
    model: FakeOpenAI
    slack: FakeSlackAPI
    telegram: FakeTelegramBotAPI
    env: dict[str, str]


def _model_reply(body: Any) -> str:
    """The rewriter's answer (a non-streamed request) resolves "it"; a streamed answer quotes the handbook."""
    if body.get("stream"):
        return "The VPN client is installed from the Software Center [1]."
    latest = re.search(r"Latest question: (.*)\nRewritten question:$", str(body["messages"][-1]["content"]))
    question = latest.group(1) if latest else ""
    return REWRITTEN if question == FOLLOW_UP else question


def _env(
    database_url: str,
    weaviate: WeaviateServer,
    model: FakeOpenAI,
    slack: FakeSlackAPI,
    telegram: FakeTelegramBotAPI,
    proxy_port: int,
    model_dir: Path,
    tiktoken_dir: Path | None,
) -> dict[str, str]:
    """Every instance's settings: one database, one Weaviate, the fakes; Telegram's webhook is haproxy's URL."""
    prefixes = (*SETTINGS_PREFIXES, "SLACK_", "TELEGRAM_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}
    env.update(
        PYTHONPATH=str(ROOT),
        DATABASE_URL=database_url,
        EMBEDDING_MODEL_DIR=str(model_dir),
        DEFAULT_KNOWLEDGE_BASES=KB,
        WEB_ACCESS_TOKEN=ACCESS_TOKEN,
        CHAT_MODEL="fake",
        CHAT_MODEL_BASE_URL=model.base_url,
        CHAT_MODEL_API_KEY="x",
        SLACK_BOT_TOKEN=SLACK_TOKEN,
        SLACK_SIGNING_SECRET=SLACK_SECRET,
        SLACK_API_BASE_URL=slack.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_ALLOWED_USERS=str(TELEGRAM_USER["id"]),
        TELEGRAM_MODE="webhook",
        TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{proxy_port}{WEBHOOK_PATH}",
        TELEGRAM_WEBHOOK_SECRET=TELEGRAM_SECRET,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_FILE_BASE_URL=telegram.base_file_url,
        **weaviate_urls(weaviate),
    )
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    return env


@pytest_asyncio.fixture(scope="module")
async def site(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_url: str,
    weaviate_server: WeaviateServer,
    model_dir: Path,
    tiktoken_dir: Path | None,
) -> AsyncIterator[Site]:
    """A knowledge base made with the CLI on a fresh PostgreSQL database, then two instances and haproxy on it."""
    work = tmp_path_factory.mktemp("instances")
    database_url = await fresh_postgres_database(postgres_url)
    async with FakeOpenAI(api_key="x") as model, FakeSlackAPI() as slack, FakeTelegramBotAPI() as telegram:
        model.reply_for = _model_reply
        slack.add_workspace(TEAM, bot_token=SLACK_TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0MULTI")
        proxy_port = free_port()
        env = _env(database_url, weaviate_server, model, slack, telegram, proxy_port, model_dir, tiktoken_dir)
        cli = {**env, "RAGBOT_DATA_DIR": str(work / "cli")}
        (work / "handbook.md").write_text(HANDBOOK)
        for args in (("kb", "create", KB), ("ingest", "handbook.md", "--kb", KB)):
            code, _, err = await run_ragbot(cli, work, *args)
            assert code == 0, err
        async with running_instances(env, work, count=2, proxy_port=proxy_port) as instances:
            yield Site(instances, model, slack, telegram, env)


async def _any_logged(instances: Instances, text: str, seconds: float = 30.0) -> str:
    """The name of the first instance whose log shows `text`, waiting up to `seconds`."""

    async def logged() -> bool:
        return any(text in instance.log_text() for instance in instances.instances)

    assert await poll(logged, seconds), f"no instance logged {text!r}:\n{instances.logs()}"
    return next(instance.name for instance in instances.instances if text in instance.log_text())


# --- the web chat -------------------------------------------------------------------------------------------------


def _browser(url: str) -> aiohttp.ClientSession:
    """A browser on the page through haproxy: its own cookie jar and the headers the page's requests carry."""
    headers = {"Origin": url, "X-Ragbot-Request": "1"}
    return aiohttp.ClientSession(url, cookie_jar=aiohttp.CookieJar(unsafe=True), headers=headers)


async def _ask(browser: aiohttp.ClientSession, text: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Post a question and read its whole answer stream: the instance that served it, and its events."""
    async with browser.post("/api/messages", json={"text": text}) as response:
        body = await response.text()
        assert response.status == 200, body
        served_by = response.headers[SERVED_BY]
    events_ = []
    for block in body.split("\n\n"):
        if block.strip():
            name, data = block.split("\n", 1)
            events_.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return served_by, events_


async def test_a_web_session_made_on_one_instance_asks_a_follow_up_on_the_other_with_its_history(site: Site) -> None:
    async with _browser(site.instances.url) as browser:
        async with browser.get("/", params={"access": ACCESS_TOKEN}) as page:
            assert page.status == 200
            issued_by = page.headers[SERVED_BY]
        first_by, first = await _ask(browser, FIRST_QUESTION)
        second_by, second = await _ask(browser, FOLLOW_UP)
        async with browser.get("/api/history") as response:
            history = (await response.json())["messages"]

    # Round robin: the cookie issued by one instance was accepted by the other, and the two turns were split.
    assert issued_by != first_by
    assert first_by != second_by
    assert first[-2][0] == "final"
    assert second[-2][0] == "final"
    assert second[-2][1]["outcome"] == "generated"
    rewrites = [request.json for request in site.model.requests if request.json and not request.json.get("stream")]
    [rewrite] = [body for body in rewrites if f"Latest question: {FOLLOW_UP}" in body["messages"][-1]["content"]]
    assert f"User: {FIRST_QUESTION}" in rewrite["messages"][-1]["content"]
    assert "handbook.md" in [source["title"] for source in second[-2][1]["sources"]]
    assert [(entry["role"], entry["text"]) for entry in history] == [
        ("user", FIRST_QUESTION),
        ("assistant", first[-2][1]["text"]),
        ("user", FOLLOW_UP),
        ("assistant", second[-2][1]["text"]),
    ]


# --- Slack's Events API ---------------------------------------------------------------------------------------------


async def _post_slack(url: str, body: bytes, headers: dict[str, str]) -> str:
    """POST a signed delivery through haproxy; the instance that acknowledged it."""
    async with aiohttp.ClientSession() as session, session.post(url + EVENTS_PATH, data=body, headers=headers) as r:
        assert r.status == 200, await r.text()
        return r.headers[SERVED_BY]


@pytest.mark.parametrize("redelivery", ["slack_retry", "proxy_retry"])
async def test_a_slack_event_delivered_to_both_instances_is_answered_once(site: Site, redelivery: str) -> None:
    channel = f"C0{redelivery.upper().replace('_', '')}"
    ts = site.slack.user_message(TEAM, channel, "U0BOB", "When is lunch served?")
    event = events.app_mention(channel=channel, user="U0BOB", text="When is lunch served?", team=TEAM, ts=ts)
    body = events.json_body(events.envelope(event, team_id=TEAM))
    url = site.instances.url
    if redelivery == "slack_retry":
        # Slack sends the event again, signed anew, with X-Slack-Retry-Num; haproxy passes it to the other instance.
        first = await _post_slack(url, body, events.signed_headers(body, SLACK_SECRET))
        again = await _post_slack(url, body, events.signed_headers(body, SLACK_SECRET, retry_num=1))
        served = [first, again]
    else:
        # A proxy that retries a POST sends the very same request, while the first may still be handled.
        headers = events.signed_headers(body, SLACK_SECRET)
        served = list(await asyncio.gather(_post_slack(url, body, headers), _post_slack(url, body, headers)))
    assert len(set(served)) == 2, served

    def answered() -> bool:
        replies = [shown for shown in site.slack.thread(channel, ts) if shown.bot_id and shown.ts != ts]
        return bool(replies) and not replies[0].streaming

    await site.slack.wait_for(answered, timeout=60)
    await _any_logged(site.instances, f"turn=duplicate platform=slack message={ts}")
    replies = [shown for shown in site.slack.thread(channel, ts) if shown.bot_id and shown.ts != ts]
    assert len(replies) == 1, replies
    assert "Software Center" in replies[0].text or "noon" in replies[0].text


# --- a Telegram webhook ---------------------------------------------------------------------------------------------


async def _post_update(url: str, update: dict[str, Any]) -> str:
    """POST an update to the webhook through haproxy as Telegram does; the instance that acknowledged it."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    async with aiohttp.ClientSession() as session, session.post(url + WEBHOOK_PATH, json=update, headers=headers) as r:
        assert r.status == 200, await r.text()
        return r.headers[SERVED_BY]


async def test_a_telegram_update_delivered_to_both_instances_is_answered_once(site: Site) -> None:
    telegram = site.telegram
    assert telegram.webhook is not None
    assert telegram.webhook.url == f"{site.instances.url}{WEBHOOK_PATH}"
    update = telegram.private_message("When is lunch served?", user=TELEGRAM_USER)
    served = [await _post_update(site.instances.url, update), await _post_update(site.instances.url, update)]
    assert len(set(served)) == 2, served

    def answered() -> bool:
        shown = telegram.bot_messages(TELEGRAM_USER["id"])
        return bool(shown) and "Sources" in shown[0].text

    await telegram.wait_for(answered, timeout=60)
    message_id = update["message"]["message_id"]
    await _any_logged(site.instances, f"turn=duplicate platform=telegram message={message_id}")
    assert len(telegram.bot_messages(TELEGRAM_USER["id"])) == 1


# --- the embedding model ------------------------------------------------------------------------------------------


async def test_an_instance_with_another_embedding_model_refuses_to_start_and_says_why(site: Site) -> None:
    other = {**site.env, "EMBEDDING_MODEL": "sentence-transformers/paraphrase-MiniLM-L6-v2"}
    code, log = await start_refused(other, site.instances.work_dir, "other-model")
    assert code != 0
    assert "the search index holds vectors of sentence-transformers/all-MiniLM-L6-v2@" in log
    assert "but the embedding model is now sentence-transformers/paraphrase-MiniLM-L6-v2@" in log
    assert "ragbot reindex" in log
    # The two running instances still answer: the refused one changed nothing they read.
    states = await site.instances.haproxy.states()
    assert states == {"i0": "UP", "i1": "UP"}, states


# --- an instance killed (last: the module's instances are one fewer after it) ----------------------------------------


async def test_after_an_instance_is_killed_mid_answer_the_other_answers_the_same_browser(site: Site) -> None:
    site.model.first_token_delay = 30.0  # the answer is still being waited for when its instance dies
    try:
        async with _browser(site.instances.url) as browser:
            async with browser.get("/", params={"access": ACCESS_TOKEN}) as page:
                assert page.status == 200
            async with browser.post("/api/messages", json={"text": "When is lunch served?"}) as response:
                assert response.status == 200
                dying = response.headers[SERVED_BY]
                assert (await response.content.readuntil(b"\n\n")).startswith(b"event: status")
                await site.instances.kill(dying)
                with pytest.raises(aiohttp.ClientPayloadError):
                    await response.read()
            site.model.first_token_delay = 0.0
            survivor_by, answer = await _ask(browser, FIRST_QUESTION)
            async with browser.get("/api/history") as response:
                history = (await response.json())["messages"]
    finally:
        site.model.first_token_delay = 0.0
    assert survivor_by != dying
    assert answer[-2][1]["outcome"] == "generated"
    assert [(entry["role"], entry["text"]) for entry in history][-2:] == [
        ("user", FIRST_QUESTION),
        ("assistant", answer[-2][1]["text"]),
    ]
