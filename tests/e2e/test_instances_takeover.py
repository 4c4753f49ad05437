"""The drill of issue 21: three `ragbot serve` behind haproxy on one PostgreSQL, a hundred questions from
twenty-five browsers, and instances killed -9 at random moments (mid-answer, between answers). Every question the
service accepted ends with exactly one complete answer its asker sees: streamed to the page, or, when the page's
stream broke off with its instance, read back once another instance has written it again.

A browser here does what the page does (adapters/web/static/app.js): post, read the stream, and when it breaks
after the `accepted` event, read the history until that answer is no longer being written; a question never
accepted (the instance died before storing it, or haproxy had not yet seen it die) is sent again.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import async_playwright, expect

from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI
from fakes.telegram import FakeTelegramBotAPI
from harness.instances import SERVED_BY, Instances, poll, running_instances
from harness.processes import free_port, run_ragbot
from storage.weaviate.server import WeaviateServer
from tests.conftest import fresh_postgres_database
from tests.e2e.test_instances import ACCESS_TOKEN, HANDBOOK, KB, _browser, _env

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ANSWER = "Lunch is served from noon in the atrium on the second floor, every working day of the week."
QUESTIONS_PER_BROWSER = 4
BROWSERS = 25
# An instance's leases (presence, a conversation's turn) last this long: another takes its answers over after it.
LEASE = "3"
_ACCEPT_TRIES = 20
_READ_BACK_SECONDS = 60.0


def _model_reply(body: Any) -> str:
    """A streamed answer is the one complete answer; a rewrite (not streamed) keeps the question as it is."""
    if body.get("stream"):
        return ANSWER
    content = str(body["messages"][-1]["content"])
    return content.rsplit("Latest question: ", 1)[-1].split("\n", 1)[0]


@dataclass
class Site:
    """The instances behind haproxy and the chat model they share."""

    instances: Instances
    model: FakeOpenAI


@pytest_asyncio.fixture(scope="module")
async def site(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_url: str,
    weaviate_server: WeaviateServer,
    model_dir: Path,
    tiktoken_dir: Path | None,
) -> AsyncIterator[Site]:
    """Four instances on a fresh database with a handbook, their chat model writing about 15 words a second (one
    is killed under a browser's answer, two in the drill, and one answers on)."""
    work = tmp_path_factory.mktemp("takeover")
    database_url = await fresh_postgres_database(postgres_url)
    async with FakeOpenAI(api_key="x") as model, FakeSlackAPI() as slack, FakeTelegramBotAPI() as telegram:
        model.reply_for = _model_reply
        model.tokens_per_second = 15.0
        env = _env(database_url, weaviate_server, model, slack, telegram, free_port(), model_dir, tiktoken_dir)
        for name in [key for key in env if key.startswith(("SLACK_", "TELEGRAM_"))]:
            del env[name]  # the web chat is the asker here
        env["INSTANCE_LEASE"] = LEASE
        cli = {**env, "RAGBOT_DATA_DIR": str(work / "cli")}
        (work / "handbook.md").write_text(HANDBOOK)
        for args in (("kb", "create", KB), ("ingest", "handbook.md", "--kb", KB)):
            code, _, err = await run_ragbot(cli, work, *args)
            assert code == 0, err
        async with running_instances(env, work, count=4) as instances:
            yield Site(instances, model)


@dataclass
class Seen:
    """What one browser saw of one question: the answer's stored id, its text, and how it reached the page."""

    answer_id: str
    text: str
    read_back: bool


@dataclass
class Drill:
    """The run's shared state: how many questions were accepted so far, and when to kill."""

    instances: Instances
    accepted: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    tries: list[str] = field(default_factory=list)

    async def haproxy_has_an_instance(self) -> None:
        """Wait until haproxy sees an instance up: a loaded machine can fail its health checks for a moment."""

        async def up() -> bool:
            return "UP" in (await self.instances.haproxy.states()).values()

        assert await poll(up, 60), await self.instances.haproxy.states()

    def accept(self) -> None:
        self.accepted += 1
        self.changed.set()

    async def until_accepted(self, count: int) -> None:
        while self.accepted < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 120)


async def _ask(browser: aiohttp.ClientSession, text: str, drill: Drill) -> Seen:
    """Ask until the service accepts the question, then see its answer through, as the page does: the question
    keeps its id when sent again, so one stored before its instance died is not asked twice."""
    question_id = uuid.uuid4().hex
    for _ in range(_ACCEPT_TRIES):
        answer_id, final = "", ""
        try:
            async with browser.post("/api/messages", json={"text": text, "id": question_id}) as response:
                if response.status == 200:
                    answer_id, final = await _read_stream(response, drill)
                else:
                    drill.tries.append(f"HTTP {response.status}")  # no instance up for it: not accepted
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            drill.tries.append(type(exc).__name__)
        if final:
            return Seen(answer_id, final, read_back=False)
        if answer_id:
            return Seen(answer_id, await _read_back(browser, answer_id), read_back=True)
        await drill.haproxy_has_an_instance()  # then send it again
    raise AssertionError(f"{text!r} was never accepted in {_ACCEPT_TRIES} tries: {drill.tries[-5:]}")


async def _read_stream(response: aiohttp.ClientResponse, drill: Drill) -> tuple[str, str]:
    """The accepted answer's id and its final text ("" when the stream broke off first)."""
    answer_id, final = "", ""
    async for block in _events(response):
        name, data = block
        if name == "accepted":
            answer_id = data["answer_id"]
            drill.accept()
        elif name == "final":
            final = data["text"]
    return answer_id, final


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    buffer = ""
    async for chunk in response.content.iter_any():
        buffer += chunk.decode()
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            name, data = block.split("\n", 1)
            yield name.removeprefix("event: "), json.loads(data.removeprefix("data: "))


async def _read_back(browser: aiohttp.ClientSession, answer_id: str) -> str:
    """The page's reconnection: the history until that answer is no longer being written; its text."""
    found: dict[str, Any] = {}

    async def written() -> bool:
        try:
            async with browser.get("/api/history") as response:
                if response.status != 200:
                    return False
                entries = (await response.json())["messages"]
        except aiohttp.ClientConnectionError:
            return False
        mine = [entry for entry in entries if entry["id"] == answer_id]
        if mine and mine[0]["status"] != "streaming":
            found.update(mine[0])
            return True
        return False

    assert await poll(written, _READ_BACK_SECONDS), f"answer {answer_id} was still being written after 60 s"
    assert found["status"] == "done", found
    return str(found["text"])


async def _browse(url: str, number: int, drill: Drill) -> tuple[list[Seen], list[dict[str, Any]]]:
    """One browser's session: its questions one after another; what it saw, and its conversation's history."""
    async with _browser(url) as browser:
        for _ in range(_ACCEPT_TRIES):
            try:
                async with browser.get("/", params={"access": ACCESS_TOKEN}) as page:
                    if page.status == 200:
                        break
            except aiohttp.ClientConnectionError:
                pass
            await drill.haproxy_has_an_instance()
        questions = [f"When is lunch served? (browser {number}, question {q})" for q in range(QUESTIONS_PER_BROWSER)]
        seen = [await _ask(browser, question, drill) for question in questions]
        history: list[dict[str, Any]] = []

        async def read() -> bool:
            async with browser.get("/api/history") as response:
                history[:] = (await response.json())["messages"] if response.status == 200 else []
                return response.status == 200

        assert await poll(read, 30)
    return seen, history


async def _kill_at_random_moments(instances: Instances, drill: Drill, randomness: random.Random) -> list[str]:
    """Kill two of those alive, each once a random number of questions has been accepted; one answers on."""
    killed = []
    for low, high in ((10, 35), (45, 75)):
        await drill.until_accepted(randomness.randint(low, high))
        alive = [instance.name for instance in instances.instances if instance.process.returncode is None]
        victim = randomness.choice(alive)
        await instances.kill(victim)
        killed.append(victim)
    return killed


async def test_a_page_whose_answer_broke_off_with_its_instance_shows_the_answer_written_again(
    site: Site, tmp_path: Path
) -> None:
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"chromium is missing at {CHROMIUM}: install Debian's chromium package")
    site.model.tokens_per_second = 3.0  # about six seconds of answer: its instance dies while it is written
    served_by: list[str] = []
    try:
        async with async_playwright() as playwright:
            args = ["--no-sandbox"] if os.geteuid() == 0 else []
            chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
            page = await chromium.new_page(base_url=site.instances.url, viewport={"width": 1280, "height": 800})
            page.on(
                "response",
                lambda r: served_by.append(r.headers.get(SERVED_BY.lower(), "")) if "/api/messages" in r.url else None,
            )
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"/?access={ACCESS_TOKEN}")
            await expect(page.locator("body[data-ready=true]")).to_have_count(1)
            await page.get_by_test_id("input").fill("When is lunch served?")
            await page.get_by_test_id("input").press("Enter")
            answer = page.locator("[data-testid=message][data-role=assistant]")
            await expect(answer.get_by_test_id("message-text")).to_contain_text("Lunch is served", timeout=30_000)
            assert served_by, "the question's response never came"
            assert served_by[0], served_by
            await site.instances.kill(served_by[0])
            await expect(page.get_by_test_id("status")).to_contain_text("waiting for the answer", timeout=15_000)
            await expect(answer.get_by_test_id("message-text")).to_have_text(ANSWER, timeout=60_000)
            await expect(page.get_by_test_id("send")).to_be_enabled()
            await expect(page.locator("[data-testid=message][data-role=error]")).to_have_count(0)
            await page.screenshot(path=str(tmp_path / "answer-written-again.png"), full_page=True)
            await chromium.close()
    finally:
        site.model.tokens_per_second = 15.0
    assert errors == []


async def test_every_accepted_question_ends_with_one_complete_answer_its_asker_sees(site: Site) -> None:
    three = site.instances
    assert sum(instance.process.returncode is None for instance in three.instances) == 3
    randomness = random.Random(21)
    drill = Drill(three)
    killer = asyncio.create_task(_kill_at_random_moments(three, drill, randomness))
    results = await asyncio.gather(*(_browse(three.url, number, drill) for number in range(BROWSERS)))
    killed = await asyncio.wait_for(killer, 60)
    assert len(killed) == 2, killed

    read_back = 0
    for seen, history in results:
        assert [entry.text for entry in seen] == [ANSWER] * QUESTIONS_PER_BROWSER, three.logs()
        read_back += sum(entry.read_back for entry in seen)
        # Exactly one answer per question, complete, each the one its asker saw: no duplicate, none left open.
        assert [(entry["role"], entry["status"]) for entry in history] == [
            ("user", "done"),
            ("assistant", "done"),
        ] * QUESTIONS_PER_BROWSER, history
        assert [entry["text"] for entry in history if entry["role"] == "assistant"] == [ANSWER] * QUESTIONS_PER_BROWSER
        assert [entry["id"] for entry in history if entry["role"] == "assistant"] == [s.answer_id for s in seen]
    print(f"drill: killed {killed}; {read_back} answers read back; sent again after {Counter(drill.tries)}")
    # The kills broke streams mid-answer: some answers reached their page only by being written again.
    assert read_back >= 1, f"no stream was broken by the kills ({drill.tries})"
    logs = "\n".join(instance.log_text() for instance in three.instances)
    assert "turn=resumed" in logs
