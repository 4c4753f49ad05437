"""200 conversations at once: lag from model token to visible text, exact finals, memory (issue 8).

Each conversation asks its own numbered question of a one-document knowledge base, so `rag_stream` runs for real
(the real Weaviate, ONNX embedder, local reranker and SQLite store); the fake OpenAI-compatible model, run in this
process, answers every ticket with its own known text of 120 words (one content delta each, 132 cl100k tokens)
at 50 deltas/s after a 200 ms time to first token, and timestamps every delta as it writes it. Per scenario: a
warm-up turn, one conversation alone, then --repeats bursts of --conversations started at once (merged).

(a) ConversationManager.handle() into recording targets whose streams are bot.streaming.EditingReplyStream with a
    1 s minimum edit interval (first flush after 0.3 s, the ReplyLimits default): every send and edit recorded.
(b) `ragbot serve` in a subprocess on the same data, and 200 aiohttp clients with their own cookie jars, each
    posting its question to the web chat and reading the server-sent events.
(t) `ragbot serve` with its Telegram adapter polling FakeTelegramBotAPI, flood limits on: half private chats, half
    forum topics in --groups supergroups (bench/concurrency_telegram.py; not in the default --scenarios).
(s) `ragbot serve` with its Slack adapter against FakeSlackAPI, limits on: threads in one workspace spread over
    --channels channels, once with SLACK_STREAMING=native and once with edit (bench/concurrency_slack.py; not in the
    default --scenarios).

Lag is the time from the fake writing a delta to the first edit (a), SSE delta (b), accepted draft/edit (t) or
accepted Web API call (s) that shows it. Settings raised so 200 run at once: CHAT_MAX_CONCURRENT_TURNS and
CHAT_MAX_CONCURRENT_MODEL_CALLS 208, CHAT_RATE_LIMIT 1000.

    .venv/bin/python -m bench.concurrency [--conversations 200] [--repeats 3] [--tokens-per-second 50]
        [--scenarios abts] [--channels 20]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from bench.common import ROOT, commit, machine, percentile
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.manager import ConversationManager, TurnResult
from bot.cli.main import chat_policy
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.stream import EditingReplyStream
from bot.types import Answer, ConversationKey, IncomingMessage, MessageRef, SourceLink, UserRef
from bot.words.messages import answer_with_sources
from fakes.openai_api import FakeOpenAI, StreamedReply
from harness.processes import SETTINGS_PREFIXES, free_port, wait_until_ready
from rag.ingest.documents import SourceFile

KB = "handbook"
DOCUMENT_NAME = "vpn.md"
DOCUMENT = (
    "# VPN client\n\nThe VPN client is installed from the Software Center app on your laptop. Open the Software "
    "Center, search for VPN and press Install. Sign in with your company account when the client first starts.\n"
)
# The one source under every answer, named by the document's file name.
SOURCE_TITLE = DOCUMENT_NAME
MODEL_TTFT = 0.2
EDIT_INTERVAL = 1.0
ANSWER_WORDS = 120
RUN_TIMEOUT = 180.0
_TICKET = re.compile(r"[Tt]icket (\d+)")
# The answers' words: the document's own, so they read like answers about it.
_VOCABULARY = tuple(dict.fromkeys(re.findall(r"[a-z]+", DOCUMENT.lower())))


def question(number: int) -> str:
    """Conversation `number`'s question: the same topic for all, a ticket number of its own."""
    return f"How do I install the VPN client on my laptop? This is ticket {number}."


def known_answer(number: int) -> str:
    """The fake model's answer to ticket `number`: ANSWER_WORDS words, distinct per ticket, plain text."""
    rng = random.Random(number)
    words = ["Ticket", f"{number}:", *(rng.choice(_VOCABULARY) for _ in range(ANSWER_WORDS - 3)), "done."]
    for at in range(12, len(words) - 1, 12):
        words[at] += "."
    return " ".join(words)


def _reply_for(body: Any) -> str:
    last = str(body.get("messages", [{}])[-1].get("content", ""))
    found = _TICKET.findall(last)
    return known_answer(int(found[-1])) if found else "No ticket number in the question."


# --- what was seen, and the figures made from it ----------------------------------------------------------


@dataclass
class Seen:
    """One conversation as its person saw it: (time, text) of each send/edit (a) or SSE delta (b), and the end."""

    number: int
    started: float = 0.0
    shown: list[tuple[float, str]] = field(default_factory=list)
    # (a) only: (time, characters pushed so far) as the pipeline handed text to the reply stream.
    pushed: list[tuple[float, int]] = field(default_factory=list)
    messages: int = 0
    final: str | None = None
    sources: list[str] = field(default_factory=list)
    outcome: str = ""
    edits: int = 0
    rate_limited: int = 0
    undelivered: int = 0
    error: str = ""
    stages: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Memory:
    """Resident memory of the service's process, MB: before the burst, the burst's peak, the lifetime peak."""

    before: float
    burst_peak: float
    lifetime_peak: float
    process: str


@dataclass
class Figures:
    """One scenario's results (times in seconds)."""

    name: str
    conversations: int
    lags: list[float] = field(default_factory=list)
    lags_retrieving: list[float] = field(default_factory=list)
    lags_streaming: list[float] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    missing_tokens: int = 0
    first_visible: list[float] = field(default_factory=list)
    to_model: list[float] = field(default_factory=list)
    model_ttft: list[float] = field(default_factory=list)
    pace: list[float] = field(default_factory=list)
    exact: int = 0
    mismatches: list[str] = field(default_factory=list)
    edits: int = 0
    rate_limited: int = 0
    undelivered: int = 0
    stages: dict[str, list[float]] = field(default_factory=dict)
    memory: Memory | None = None
    loop_lag: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    wall: float = 0.0
    # The bursts merged into these figures, when there were several.
    repeats: list[Figures] = field(default_factory=list)


def _first_reaching(points: list[tuple[float, int]], need: int, cursor: int) -> int:
    """The index, from `cursor` on, of the first point whose length reaches `need` (len(points) if none)."""
    while cursor < len(points) and points[cursor][1] < need:
        cursor += 1
    return cursor


def streams_by_ticket(fake: FakeOpenAI) -> dict[int, StreamedReply]:
    """The fake model's streamed answers that wrote anything, by the ticket number they answer."""
    return {int(_TICKET.findall(record.reply)[0]): record for record in fake.streamed if record.sent}


def record_timings(
    figures: Figures, person: Seen, record: StreamedReply, *, interval: float, last_request: float, edited: bool
) -> list[float]:
    """Add one conversation's timings to `figures`: each delta's lag to the text showing it, first visible text.

    `edited`: what is shown is whole edits of the answer so far, stripped of trailing space (EditingReplyStream
    strips it), rather than SSE deltas that add the model's text as it came. `last_request`: when the last turn of
    the burst reached the model (until then other turns were still queued or retrieving beside the streams).
    Returns this conversation's lags.
    """
    ttft = record.sent[0] - record.received
    figures.model_ttft.append(ttft)
    figures.to_model.append(record.received - person.started)
    figures.pace.extend(sent - (record.sent[0] + index * interval) for index, sent in enumerate(record.sent))
    if person.shown:
        figures.first_visible.append(person.shown[0][0] - person.started - ttft)
    shown = [(at, len(text)) for at, text in person.shown]
    lags: list[float] = []
    end, cursor, pushed = 0, 0, 0
    for delta, sent in zip(record.deltas, record.sent, strict=True):
        end += len(delta)
        need = len(record.reply[:end].rstrip()) if edited else end
        cursor = _first_reaching(shown, need, cursor)
        if cursor == len(shown):
            figures.missing_tokens += 1
            continue
        lag = shown[cursor][0] - sent
        lags.append(lag)
        (figures.lags_retrieving if sent <= last_request else figures.lags_streaming).append(lag)
        if person.pushed:
            pushed = _first_reaching(person.pushed, end, pushed)
            if pushed < len(person.pushed):
                figures.arrivals.append(person.pushed[pushed][0] - sent)
    figures.lags.extend(lags)
    return lags


def _analyse(
    figures: Figures, seen: list[Seen], fake: FakeOpenAI, expected: Callable[[int], str], *, edited: bool
) -> None:
    """Match each conversation with its model stream: lags, first visible text, exactness, counts."""
    records = streams_by_ticket(fake)
    interval = 1 / fake.tokens_per_second
    last_request = max((record.received for record in records.values()), default=0.0)
    for person in seen:
        figures.edits += person.edits
        figures.rate_limited += person.rate_limited
        figures.undelivered += person.undelivered
        for name, ms in person.stages.items():
            figures.stages.setdefault(name, []).append(ms / 1000)
        record = records.get(person.number)
        if record is None:
            figures.mismatches.append(f"#{person.number}: the model was never asked ({person.outcome or person.error})")
            continue
        record_timings(figures, person, record, interval=interval, last_request=last_request, edited=edited)
        final = expected(person.number)
        prefixes = all(final.startswith(text) for _, text in person.shown)
        if person.final == final and person.outcome == "generated" and prefixes and not person.error:
            figures.exact += 1
        else:
            figures.mismatches.append(
                f"#{person.number}: outcome={person.outcome} error={person.error} prefixes={prefixes} "
                f"final={person.final!r}"
            )


class LoopLag:
    """How late this process's event loop wakes a 20 ms sleeper: the scheduling delay every task sees."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sampling."""
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.02)
            self.delays.append(time.monotonic() - before - 0.02)


def status_mb(pid: int | str, key: str) -> float:
    """A memory figure of /proc/PID/status (VmRSS, VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int | str) -> None:
    """Make VmHWM start again from the current RSS (Linux clear_refs), so a burst's own peak can be read."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def process_cpu(pid: int | str) -> float:
    """CPU seconds (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _all(converse: Callable[[Seen], Coroutine[Any, Any, None]], seen: list[Seen]) -> None:
    """Start every conversation at once; the ones not done within RUN_TIMEOUT are cancelled and marked."""
    tasks = [asyncio.create_task(converse(person)) for person in seen]
    _, pending = await asyncio.wait(tasks, timeout=RUN_TIMEOUT)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for person, task in zip(seen, tasks, strict=True):
        if task in pending:
            person.error = "timed out"
        elif (exc := task.exception()) is not None:
            person.error = repr(exc)


# --- (a) the manager into editing targets --------------------------------------------------------------------


class _Observer:
    """One conversation's stream events (bot.streaming.StreamObserver)."""

    def __init__(self, seen: Seen) -> None:
        self._seen = seen

    def first_visible(self, seconds: float) -> None:
        pass

    def edit_sent(self) -> None:
        self._seen.edits += 1

    def rate_limited(self) -> None:
        self._seen.rate_limited += 1

    def undelivered(self) -> None:
        self._seen.undelivered += 1


class _TimedStream:
    """The EditingReplyStream, with the time each piece reached it recorded first."""

    def __init__(self, stream: EditingReplyStream, seen: Seen) -> None:
        self._stream = stream
        self._seen = seen
        self._length = 0

    async def push(self, delta: str) -> None:
        self._length += len(delta)
        self._seen.pushed.append((time.monotonic(), self._length))
        await self._stream.push(delta)

    async def status(self, text: str) -> None:
        await self._stream.status(text)

    async def finish(self, answer: Answer) -> MessageRef | None:
        return await self._stream.finish(answer)

    async def fail(self, text: str) -> MessageRef | None:
        return await self._stream.fail(text)


class EditingTarget:
    """A ReplyTarget recording (time, text) of every send and edit; answers stream through EditingReplyStream."""

    def __init__(self, seen: Seen) -> None:
        self._seen = seen

    @property
    def limits(self) -> ReplyLimits:
        return ReplyLimits(max_length=4000, min_edit_interval=EDIT_INTERVAL)

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self._seen.shown.append((time.monotonic(), text))
        self._seen.messages += 1
        return MessageRef(f"{self._seen.number}-{self._seen.messages}")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        self._seen.shown.append((time.monotonic(), text))

    async def typing(self) -> None:
        pass

    def open_stream(self) -> ReplyStream:
        return _TimedStream(EditingReplyStream(self, observer=_Observer(self._seen)), self._seen)


async def _converse(manager: ConversationManager, person: Seen) -> None:
    message = IncomingMessage(
        key=ConversationKey("bench", "", f"chat-{person.number}"),
        message_id=f"m{person.number}",
        user=UserRef(f"u{person.number}"),
        text=question(person.number),
    )
    person.started = time.monotonic()
    result = await manager.handle(message, EditingTarget(person))
    _record_result(person, result)
    person.final = person.shown[-1][1] if person.shown else None
    if person.messages != 1:
        person.error = f"{person.messages} messages"


def _record_result(person: Seen, result: TurnResult | None) -> None:
    if result is None:
        person.error = person.error or "no turn"
        return
    person.outcome = result.answer.outcome
    person.sources = [source.title for source in result.answer.sources]
    if result.turn is not None:
        person.stages = {report.name: report.ms for report in result.turn.reports}


class _ManagerScenario:
    """(a): conversations handed to one ConversationManager in this process."""

    process = "this process (with the fake model)"
    pid = "self"
    edited = True
    lifetime_peak = 0.0

    def __init__(self, services: Services) -> None:
        self._manager = ConversationManager(services, chat_policy(services.settings))

    async def prepare(self, numbers: list[int]) -> None:
        pass

    async def converse(self, person: Seen) -> None:
        await _converse(self._manager, person)

    def expected(self, number: int) -> str:
        # The last edit is the whole answer with its sources, as the person reads it.
        return answer_with_sources(Answer(text=known_answer(number), sources=(SourceLink(1, SOURCE_TITLE),)))


# --- (b) the web chat over HTTP ---------------------------------------------------------------------------


class _WebScenario:
    """(b): SSE clients of `ragbot serve`, each with its own cookie jar (so its own session and conversation)."""

    process = "the `ragbot serve` process"
    edited = False
    lifetime_peak = 0.0

    def __init__(self, url: str, pid: int) -> None:
        self._url = url
        self.pid = pid
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
            await _ask(self._url, session, person)
        finally:
            await session.close()

    def expected(self, number: int) -> str:
        # The final event carries the answer's text; its sources come apart (checked in _ask).
        return known_answer(number)

    async def close(self) -> None:
        """Close every client."""
        for session in self._sessions.values():
            await session.close()
        await self._connector.close()


async def _ask(url: str, session: aiohttp.ClientSession, person: Seen) -> None:
    """Post the question and read the event stream: each delta's arrival and the text so far, then the final."""
    person.started = time.monotonic()
    text = event = ""
    async with session.post(f"{url}/api/messages", json={"text": question(person.number)}) as response:
        response.raise_for_status()
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
            elif event in ("message", "edit", "error"):
                person.error = f"unexpected {event}: {data.get('text', '')[:80]}"
    if person.final is not None and text != person.final:
        person.error = "the deltas do not add up to the final text"
    if person.final is not None and person.sources != [SOURCE_TITLE]:
        person.error = f"sources {person.sources}"


@asynccontextmanager
async def serving(env: dict[str, str], work: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """`ragbot serve` in a subprocess on a free port (output in WORK/serve.log), ready; stopped by SIGTERM after."""
    port = free_port()
    with (work / "serve.log").open("ab") as output:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "serve",
            env={**env, "RAGBOT_PORT": str(port), "LOG_LEVEL": "WARNING"},
            cwd=work,
            stdout=output,
            stderr=output,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_until_ready(url, process)
        yield url, process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)


async def _web_run(env: dict[str, str], fake: FakeOpenAI, args: argparse.Namespace, work: Path) -> list[Figures]:
    async with serving(env, work) as (url, process):
        scenario = _WebScenario(url, process.pid)
        try:
            return await _bursts("(b) web chat SSE", scenario, fake, args)
        finally:
            await scenario.close()


# --- bursts ------------------------------------------------------------------------------------------------

Scenario = _ManagerScenario | _WebScenario


async def _burst(name: str, scenario: Scenario, fake: FakeOpenAI, numbers: list[int]) -> Figures:
    """Start one conversation per number at once and measure them."""
    await scenario.prepare(numbers)
    fake.streamed.clear()
    seen = [Seen(number) for number in numbers]
    pid = scenario.pid
    before = status_mb(pid, "VmRSS")
    # The peak so far (ru_maxrss for this process), kept before the reset that lets this burst's peak be read.
    so_far = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else status_mb(pid, "VmHWM")
    scenario.lifetime_peak = max(scenario.lifetime_peak, so_far)
    reset_peak(pid)
    lag = LoopLag()
    lag.start()
    cpu, wall = process_cpu(pid), time.monotonic()
    await _all(scenario.converse, seen)
    figures = Figures(name, len(seen))
    figures.wall, figures.cpu_seconds = time.monotonic() - wall, process_cpu(pid) - cpu
    await lag.stop()
    figures.loop_lag = lag.delays
    peak = status_mb(pid, "VmHWM")
    scenario.lifetime_peak = max(scenario.lifetime_peak, peak)
    figures.memory = Memory(before, peak, scenario.lifetime_peak, scenario.process)
    _analyse(figures, seen, fake, scenario.expected, edited=scenario.edited)
    return figures


async def _bursts(label: str, scenario: Scenario, fake: FakeOpenAI, args: argparse.Namespace) -> list[Figures]:
    """A warm-up turn, one conversation alone, then `repeats` bursts of `conversations`, merged."""
    warm = await _burst("warm-up", scenario, fake, [0])
    if warm.exact != 1:
        raise SystemExit(f"the warm-up turn of {label} was not answered as expected: {warm.mismatches}")
    alone = await _burst(f"{label}, 1 alone", scenario, fake, [1])
    runs = []
    for repeat in range(args.repeats):
        first = 2 + repeat * args.conversations
        runs.append(await _burst(label, scenario, fake, list(range(first, first + args.conversations))))
        print(f"  burst {repeat + 1}: lag p95 {ms_at(runs[-1].lags, 0.95)} ms", flush=True)
    return [alone, _merged(f"{label}, {args.conversations} at once", runs)]


def _merged(name: str, runs: list[Figures]) -> Figures:
    return merge_runs(Figures(name, sum(run.conversations for run in runs), repeats=runs), runs)


F = TypeVar("F", bound=Figures)


def merge_runs(merged: F, runs: Sequence[F], keep: tuple[str, ...] = ("name", "conversations", "repeats")) -> F:
    """The bursts' figures as one (into `merged`): lists joined, counters and counts added, memory peaks kept."""
    for spec in dataclasses.fields(merged):
        if spec.name in (*keep, "memory"):
            continue
        for run in runs:
            value, total = getattr(run, spec.name), getattr(merged, spec.name)
            if isinstance(total, Counter):
                total.update(value)
            elif isinstance(total, list):
                total.extend(value)
            elif isinstance(total, dict):
                for key, times in value.items():
                    total.setdefault(key, []).extend(times)
            else:
                setattr(merged, spec.name, total + value)
    memories = [memory for run in runs if (memory := run.memory) is not None]
    merged.memory = Memory(
        memories[0].before,
        max(memory.burst_peak for memory in memories),
        max(memory.lifetime_peak for memory in memories),
        memories[0].process,
    )
    return merged


# --- wiring and report -------------------------------------------------------------------------------------


_SERVE_UNSET = (*SETTINGS_PREFIXES, "TELEGRAM_", "SLACK_")


def _values(args: argparse.Namespace, data_dir: Path, fake: FakeOpenAI) -> dict[str, str]:
    """The settings of both scenarios: the load limits raised so every conversation runs at once."""
    limit = str(args.conversations + 8)
    values = {
        "RAGBOT_DATA_DIR": str(data_dir),
        "WEAVIATE_BINARY": str(args.weaviate_binary),
        "EMBEDDING_MODEL_DIR": str(args.model_dir),
        "CHAT_MODEL": "fake",
        "CHAT_MODEL_BASE_URL": fake.base_url,
        "CHAT_MODEL_API_KEY": "test-key",
        "DEFAULT_KNOWLEDGE_BASES": KB,
        "WEB_KNOWLEDGE_BASES": KB,
        "CHAT_MAX_CONCURRENT_TURNS": limit,
        "CHAT_MAX_CONCURRENT_MODEL_CALLS": limit,
        "CHAT_RATE_LIMIT": "1000",
    }
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        values["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    return values


async def _run(args: argparse.Namespace) -> list[Figures]:
    work = Path(tempfile.mkdtemp(prefix="ragbot-bench-concurrency-"))
    try:
        results = await _scenarios(args, work)
    except BaseException:
        print(f"kept {work} (serve.log, data) for a look", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return results


async def _scenarios(args: argparse.Namespace, work: Path) -> list[Figures]:
    results = []
    async with FakeOpenAI() as fake:
        fake.first_token_delay = MODEL_TTFT
        fake.tokens_per_second = args.tokens_per_second
        fake.reply_for = _reply_for
        values = _values(args, work / "data", fake)
        # Only these values, as the serve subprocess gets them: no .env, no other variables.
        async with build_services(Settings.model_validate(values)) as services:
            kb = await services.knowledge.create(KB)
            source = SourceFile(DOCUMENT.encode(), source_uri=DOCUMENT_NAME, filename=DOCUMENT_NAME)
            await services.ingestor.ingest(kb, source)
            if "a" in args.scenarios:
                print(f"(a) {args.conversations} conversations through the manager", flush=True)
                results += await _bursts("(a) manager", _ManagerScenario(services), fake, args)
        # Only these values for `ragbot serve` too: none of this shell's settings, no chat platform but ours.
        env = {key: value for key, value in os.environ.items() if not key.startswith(_SERVE_UNSET)}
        env.update(values, PYTHONPATH=str(ROOT))
        if "b" in args.scenarios:
            print(f"(b) {args.conversations} SSE clients of `ragbot serve`", flush=True)
            results += await _web_run(env, fake, args, work)
        if "t" in args.scenarios:
            # Imported here: the Telegram scenario builds on this module's helpers, so it imports this module.
            from bench.concurrency_telegram import telegram_run

            results += await telegram_run(env, fake, args, work)
        if "s" in args.scenarios:
            # Imported here for the same reason as the Telegram scenario.
            from bench.concurrency_slack import slack_run

            results += await slack_run(env, fake, args, work)
    return results


def ms_at(values: list[float], fraction: float) -> str:
    """The percentile at `fraction` in whole milliseconds, or n/a."""
    return f"{percentile(values, fraction) * 1000:.0f}" if values else "n/a"


def spread(values: list[float]) -> str:
    """p50 / p95 in milliseconds."""
    return f"{ms_at(values, 0.5)} / {ms_at(values, 0.95)}"


def _mb(figures: Figures, part: str) -> str:
    return f"{getattr(figures.memory, part):.0f}" if figures.memory else "n/a"


_ROWS: list[tuple[str, Callable[[Figures], str]]] = [
    ("model token -> visible, p50 / p95 (ms)", lambda f: spread(f.lags)),
    ("... p95 of each burst (ms)", lambda f: ", ".join(ms_at(run.lags, 0.95) for run in f.repeats or [f])),
    ("... max (ms)", lambda f: ms_at(f.lags, 1.0)),
    ("... while turns still queued or retrieving, p50 / p95", lambda f: spread(f.lags_retrieving)),
    ("... once every turn was streaming, p50 / p95", lambda f: spread(f.lags_streaming)),
    ("model token -> reply stream's push(), p50 / p95 (ms)", lambda f: spread(f.arrivals)),
    ("tokens never shown", lambda f: str(f.missing_tokens)),
    ("first visible text minus the model's TTFT, p50 / p95 (ms)", lambda f: spread(f.first_visible)),
    ("... p50 of each burst (ms)", lambda f: ", ".join(ms_at(run.first_visible, 0.5) for run in f.repeats or [f])),
    ("turn start -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model's TTFT measured at the fake, p50 / p95 (ms)", lambda f: spread(f.model_ttft)),
    ("fake's deltas late on their 50/s schedule, p95 (ms)", lambda f: ms_at(f.pace, 0.95)),
    ("finals complete and exact", lambda f: f"{f.exact} / {f.conversations}"),
    ("sends + edits (a) / SSE deltas (b)", lambda f: str(f.edits)),
    ("rate limited / undelivered", lambda f: f"{f.rate_limited} / {f.undelivered}"),
    ("RSS before the burst (MB)", lambda f: _mb(f, "before")),
    ("peak RSS during the burst (MB)", lambda f: _mb(f, "burst_peak")),
    ("peak RSS, whole process life (MB)", lambda f: _mb(f, "lifetime_peak")),
    ("service CPU s / wall s of the burst", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("bench event-loop lag p50 / p95 / max (ms)", lambda f: f"{spread(f.loop_lag)} / {ms_at(f.loop_lag, 1.0)}"),
]


def _report(args: argparse.Namespace, results: list[Figures]) -> None:
    print(
        f"\ncommit {commit()} · {machine()} · {args.conversations} conversations at once · fake model "
        f"{args.tokens_per_second:g} deltas/s, TTFT {MODEL_TTFT * 1000:.0f} ms, {ANSWER_WORDS} deltas per answer\n"
    )
    # One table per kind of figures: the Telegram scenario's have rows of their own (TelegramFigures.rows).
    kinds: dict[type[Figures], list[Figures]] = {}
    for figures in results:
        kinds.setdefault(type(figures), []).append(figures)
    for kind, columns in kinds.items():
        print("| measure | " + " | ".join(figures.name for figures in columns) + " |")
        print("| --- | " + " | ".join("---:" for _ in columns) + " |")
        for label, cell in getattr(kind, "rows", _ROWS):
            print(f"| {label} | " + " | ".join(cell(figures) for figures in columns) + " |")
        print()
    for figures in results:
        if figures.memory:
            print(f"\n{figures.name}: RSS of {figures.memory.process}; Weaviate is a process of its own.")
        if figures.stages:
            print("\nPipeline stages, p50 / p95 (ms):\n\n| stage | p50 / p95 |\n| --- | ---: |")
            for name, times in figures.stages.items():
                print(f"| {name} | {spread(times)} |")
        for line in figures.mismatches[:5]:
            print(f"  not exact: {line[:160]} … {line[-160:]}")


def main() -> None:
    """Run the scenarios and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--tokens-per-second", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3, help="bursts of --conversations per scenario")
    parser.add_argument("--scenarios", default="ab", help="any of a, b, t (Telegram) and s (Slack), e.g. ab or s")
    parser.add_argument("--groups", type=int, default=20, help="(t) supergroups the group half is spread over")
    parser.add_argument(
        "--group-layout",
        choices=("topics", "mentions"),
        default="topics",
        help="(t) each group question in a forum topic of its own (its own conversation), or plain mentions",
    )
    parser.add_argument("--bot-per-second", type=int, default=30, help="(t) the fake Bot API's limit per bot")
    parser.add_argument("--channels", type=int, default=20, help="(s) Slack channels the threads are spread over")
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--weaviate-binary", type=Path, default=ROOT / "bin" / "weaviate-server")
    args = parser.parse_args()
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    _report(args, asyncio.run(_run(args)))


if __name__ == "__main__":
    main()
