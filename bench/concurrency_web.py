"""(b) of bench.concurrency: `ragbot serve` in a subprocess, and aiohttp clients of its web chat reading SSE.

Each client has its own cookie jar (so its own session and conversation), posts its question and reads the events:
a `status` or `message` event before the answer is a visible sign, `delta`s are the answer's text, `final` its end.
The service's log (WORK/serve.log) is counted per record (bench.log_counts).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
from multidict import CIMultiDictProxy

from bench.bursts import Plan, bursts
from bench.conversations import RUN_TIMEOUT, SOURCE_TITLE, known_answer, question
from bench.figures import Figures, Seen
from bench.ingestion_load import Background
from bench.log_counts import LogTally, tally_log
from bench.model_process import ModelProcess
from bench.serving import serving


class WebScenario:
    """(b): SSE clients of `ragbot serve`, each with its own cookie jar (so its own session and conversation)."""

    process = "the `ragbot serve` process"
    edited = False

    def __init__(self, url: str, pid: int, log: Path) -> None:
        self._url = url
        self.pid = pid
        self._log = log
        self._connector = aiohttp.TCPConnector(limit=0)
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    async def prepare(self, numbers: list[int]) -> None:
        """A session cookie for each client first, as a browser gets one with the page."""
        for number in numbers:
            jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1 (an IP) are kept only when unsafe
            self._sessions[number] = aiohttp.ClientSession(
                connector=self._connector,
                connector_owner=False,
                cookie_jar=jar,
                timeout=aiohttp.ClientTimeout(total=RUN_TIMEOUT),
            )
        await asyncio.gather(*(self._open(self._sessions[number]) for number in numbers))

    async def _open(self, session: aiohttp.ClientSession) -> None:
        async with session.get(f"{self._url}/api/session") as response:
            response.raise_for_status()

    async def converse(self, person: Seen) -> None:
        session = self._sessions.pop(person.number)
        try:
            await ask(self._url, session, person)
        finally:
            await session.close()

    def expected(self, number: int) -> str:
        # The final event carries the answer's text; its sources come apart (checked in _ask).
        return known_answer(number)

    def log_mark(self) -> int:
        return self._log.stat().st_size

    def log_since(self, mark: int) -> LogTally:
        return tally_log(self._log, mark)

    async def close(self) -> None:
        """Close every client."""
        for session in self._sessions.values():
            await session.close()
        await self._connector.close()


async def ask(url: str, session: aiohttp.ClientSession, person: Seen) -> CIMultiDictProxy[str]:
    """Post the question and read the event stream: each delta's arrival and the text so far, then the final.

    Returns the response's headers (behind haproxy they name the instance that answered)."""
    person.started = time.monotonic()
    text = event = ""
    # The Origin a browser on the chat page sends (adapters/web/guard.py refuses a post without it).
    post = session.post(f"{url}/api/messages", json={"text": question(person.number)}, headers={"Origin": url})
    async with post as response:
        response.raise_for_status()
        headers = response.headers
        async for raw in response.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
                continue
            if not line.startswith("data: "):
                continue
            data = json.loads(line.removeprefix("data: "))
            if event == "delta":
                text += data["text"]
                person.shown.append((time.monotonic(), text))
                person.edits += 1
            elif event == "final":
                person.final, person.outcome = data["text"], data["outcome"]
                person.sources = [source["title"] for source in data["sources"]]
            elif event in ("status", "message", "edit"):
                # A status line, a placeholder or a queue notice: the bot is at it (an apology has no final).
                person.signs.append(time.monotonic())
            elif event == "error":
                person.outcome, person.error = "failed", f"error event: {data.get('text', '')[:80]}"
    if person.final is not None and text != person.final:
        person.error = "the deltas do not add up to the final text"
    if person.final is not None and person.sources != [SOURCE_TITLE]:
        person.error = f"sources {person.sources}"
    return headers


async def web_run(
    label: str, env: dict[str, str], fake: ModelProcess, plan: Plan, work: Path, background: Background | None = None
) -> list[Figures]:
    """Scenario (b): SSE clients of a `ragbot serve` on the same data, a warm-up, one alone, then the bursts
    (beside `background`'s ingestion, started after the turn alone, when given)."""
    async with serving(env, work) as (url, process):
        scenario = WebScenario(url, process.pid, work / "serve.log")
        try:
            return await bursts(label, scenario, fake, plan, background)
        finally:
            await scenario.close()
