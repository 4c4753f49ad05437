"""`ragbot serve` told to stop (SIGTERM, as in a deploy) while an answer is being written, in the web chat.

The answer finishes when it can within SHUTDOWN_GRACE, and is cut off with what it wrote and a note when it cannot;
either way the person sees a final answer and the process exits cleanly. A second SIGTERM exits at once.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.words import messages
from harness.instances import poll
from harness.processes import free_port, serve_logged, wait_until_ready
from storage.weaviate.server import WeaviateServer
from tests.conftest import weaviate_urls
from tests.e2e.test_web_chat import PacedModel, _env

WORDS = 40


@dataclass
class Serving:
    url: str
    process: asyncio.subprocess.Process
    log: Path


@asynccontextmanager
async def _serving(
    root: Path,
    grace: float,
    words: int,
    paths: tuple[Path, WeaviateServer, Path, Path | None],
    log_format: str = "text",
) -> AsyncIterator[Serving]:
    """`ragbot serve` on the embedded store, no knowledge base (the model answers), a model writing `words` words
    at 0.1 s each, and SHUTDOWN_GRACE `grace`."""
    weaviate_binary, weaviate_server, model_dir, tiktoken_dir = paths
    async with PacedModel(api_key="x", pause=0.1) as model:
        model.answer = lambda prompt: " ".join(f"word{n}" for n in range(words))
        env = _env(root, model, weaviate_binary, model_dir, tiktoken_dir) | weaviate_urls(weaviate_server)
        env.update(SHUTDOWN_GRACE=str(grace), RAGBOT_PORT=str(free_port()), LOG_FORMAT=log_format)
        for key in ("WEB_KNOWLEDGE_BASES", "DEFAULT_KNOWLEDGE_BASES"):
            env.pop(key, None)
        process, log = await serve_logged(env, root)
        url = f"http://127.0.0.1:{env['RAGBOT_PORT']}"
        try:
            await wait_until_ready(url, process)
            yield Serving(url, process, log)
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()


@pytest.fixture
def paths(
    weaviate_binary: Path, weaviate_server: WeaviateServer, model_dir: Path, tiktoken_dir: Path | None
) -> tuple[Path, WeaviateServer, Path, Path | None]:
    return weaviate_binary, weaviate_server, model_dir, tiktoken_dir


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The answer stream's events as they come."""
    name = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


async def _ask_then_stop(serving: Serving) -> tuple[dict[str, Any], str]:
    """Ask a question, send SIGTERM once its first words are shown, and read the stream to its end: the final
    event (empty if none came) and the text streamed before it."""
    headers = {"Origin": serving.url, "X-Ragbot-Request": "1"}
    jar = aiohttp.CookieJar(unsafe=True)
    final: dict[str, Any] = {}
    streamed = ""
    async with aiohttp.ClientSession(serving.url, cookie_jar=jar, headers=headers) as browser:
        async with browser.get("/") as page:
            assert page.status == 200
        async with browser.post("/api/messages", json={"text": "Tell me everything."}) as response:
            assert response.status == 200
            async for name, data in _events(response):
                if name == "delta":
                    if not streamed:
                        serving.process.send_signal(signal.SIGTERM)
                    streamed += data["text"]
                elif name == "final":
                    final = data
    return final, streamed


async def test_an_answer_that_finishes_within_the_grace_is_delivered_whole_and_serve_exits_cleanly(
    tmp_path: Path, paths: tuple[Path, WeaviateServer, Path, Path | None]
) -> None:
    async with _serving(tmp_path, grace=30, words=WORDS, paths=paths, log_format="json") as serving:
        final, _ = await asyncio.wait_for(_ask_then_stop(serving), 60)
        assert final["text"] == " ".join(f"word{n}" for n in range(WORDS))
        assert final["notice"] == ""
        assert await asyncio.wait_for(serving.process.wait(), 30) == 0
    # LOG_FORMAT=json: ragbot's lines are JSON objects, the turn's stages carrying its id.
    text = serving.log.read_text()
    assert not re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", text, re.MULTILINE), text[-2000:]
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert any(line["message"] == "serve=stopping" for line in lines)
    (streamed,) = [line for line in lines if "stage=STREAM_ANSWER" in line["message"]]
    assert streamed["turn"] not in ("", "-")


async def test_an_answer_past_the_grace_is_cut_with_what_it_wrote_and_a_note(
    tmp_path: Path, paths: tuple[Path, WeaviateServer, Path, Path | None]
) -> None:
    async with _serving(tmp_path, grace=1, words=600, paths=paths) as serving:
        final, streamed = await asyncio.wait_for(_ask_then_stop(serving), 60)
        assert final["notice"] == messages.interrupted_note("en")
        assert final["text"].startswith("word0 word1")
        assert final["text"] == streamed  # what was shown is what it ends with: nothing lost, nothing invented
        assert await asyncio.wait_for(serving.process.wait(), 30) == 0
    log = serving.log.read_text()
    assert "shutdown=cutting turns=1" in log


async def test_a_second_sigterm_exits_at_once(
    tmp_path: Path, paths: tuple[Path, WeaviateServer, Path, Path | None]
) -> None:
    async with _serving(tmp_path, grace=300, words=600, paths=paths) as serving:
        asking = asyncio.create_task(_ask_then_stop(serving))

        async def draining() -> bool:
            return "shutdown=draining" in serving.log.read_text()

        # Signals of one kind sent together arrive as one: the second is sent once the first is being served.
        assert await poll(draining, 30), serving.log.read_text()[-3000:]
        serving.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(serving.process.wait(), 30) == 128 + signal.SIGTERM
        with pytest.raises(aiohttp.ClientError):  # the stream ended with the process
            await asyncio.wait_for(asking, 30)
    assert "serve=exiting_now signal=SIGTERM" in serving.log.read_text()
