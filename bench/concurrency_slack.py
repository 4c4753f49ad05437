"""(s) of bench.concurrency: 200 Slack threads at once in one workspace, through the real adapter, limits on (issue 10).

`ragbot serve` runs in a subprocess whose Slack adapter talks to FakeSlackAPI in the bench process, limits on:
chat.update 50 and chat.appendStream 100 a minute per workspace (sliding 60 s windows), chat.postMessage 1/s per
channel (bursts of 3). Each conversation is a person's message mentioning the bot at the top of a channel, delivered
as a signed app_mention to /slack/events and answered in its thread; threads are spread evenly over --channels
channels. The model is the bench's FakeOpenAI (known answer per ticket, 50 deltas/s). Run once per SLACK_STREAMING
mode (native, edit), each in its own process: a warm-up, one conversation alone, then --repeats bursts, each started
once the fake's 60 s windows hold at most 5 calls.

Read at the wire: the fake's accepted calls are replayed message by message with the fake's reading rules, so each
thread's visible text is known at the instant the fake took each call. Exact: the thread's one bot message, no longer
streaming, reads the known answer, a newline and "*Sources:* [1] vpn.md", and every earlier state is a prefix of it.

    .venv/bin/python -m bench.concurrency --scenarios s [--conversations 200] [--channels 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import aiohttp

from adapters.slack.app import EVENTS_PATH
from adapters.slack.render import sources_block
from bench.conversations import SOURCE_TITLE, known_answer, question, streams_by_ticket
from bench.figures import Figures, Seen, merge_runs, record_timings
from bench.process_stats import BurstWatch
from bench.report import ms_at, spread, top
from bench.serving import log_since, serving, warning_key
from bot.types import SourceLink
from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI, Shown, SlackCall, Throttle, blocks_text, events
from fakes.slack.content import reads
from fakes.slack.records import Message
from fakes.slack.wire import opt

TEAM = "T0BENCH"
TOKEN = "xoxb-bench"
SECRET = "bench-signing-secret"
MODES = ("native", "edit")
# Edit mode's finals share ~45 chat.update a minute: 200 of them alone need minutes, so a burst may take this long.
SETTLE_TIMEOUT = 900.0
# The fake's windows are 60 s (Slack's tiers are per minute); a burst starts when they are nearly empty.
WINDOW = 60.0
_WINDOWED = ("chat.update", "chat.appendStream")
_CREATES = frozenset({"chat.postMessage", "chat.startStream"})
_WRITES = _CREATES | {"chat.update", "chat.appendStream", "chat.stopStream"}
# Where a new line of the service's log starts (the lines between belong to a traceback).
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:")

Json = dict[str, Any]


def expected_text(number: int) -> str:
    """Ticket `number`'s final as a person reads it in Slack: the answer, then the sources context block's line."""
    block = sources_block((SourceLink(1, SOURCE_TITLE),))
    assert block is not None
    return f"{known_answer(number)}\n{blocks_text([block])}"


@dataclass(slots=True)
class Thread:
    """One conversation: the person's message (the thread's root) in its channel, and what the bot replied."""

    number: int
    channel: str
    ts: str = ""
    started: float = 0.0
    status: int = 0
    replies: list[Shown] = field(default_factory=list)


@dataclass
class SlackFigures(Figures):
    """One Slack scenario's results: Figures, and what the Web API saw."""

    rows: ClassVar[list[tuple[str, Callable[[Any], str]]]]
    first_from_event: list[float] = field(default_factory=list)
    first_after_model: list[float] = field(default_factory=list)
    to_final: list[float] = field(default_factory=list)
    # Answers whose first visible text was already their whole final (nothing shown while the model wrote).
    whole_at_once: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    throttles: Counter[str] = field(default_factory=Counter)
    inside_wait: int = 0
    # Per method, one "most in any 60 s / per minute" per burst, for the calls the fake accepted.
    per_minute: dict[str, list[str]] = field(default_factory=dict)
    log_lines: Counter[str] = field(default_factory=Counter)
    log_examples: list[str] = field(default_factory=list)


def _with_max(values: list[float]) -> str:
    return f"{spread(values)} / {ms_at(values, 1.0)}"


def _minute(f: SlackFigures, method: str) -> str:
    return ", ".join(f.per_minute.get(method, [])) or "0"


def _rss(f: SlackFigures) -> str:
    memory = f.memory
    return f"{memory.before:.0f} / {memory.burst_peak:.0f} / {memory.lifetime_peak:.0f}" if memory else "n/a"


SlackFigures.rows = [
    ("conversations (bursts)", lambda f: f"{f.conversations} ({len(f.repeats) or 1})"),
    ("first visible text after the event POST, p50 / p95 (ms)", lambda f: spread(f.first_from_event)),
    ("... after the model's first token, p50 / p95 (ms)", lambda f: spread(f.first_after_model)),
    ("event POST -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model token -> visible, p50 / p95 / max (ms)", lambda f: _with_max(f.lags)),
    ("... p95 of each burst (ms)", lambda f: ", ".join(ms_at(run.lags, 0.95) for run in f.repeats or [f])),
    ("... while turns still queued or retrieving, p50 / p95", lambda f: spread(f.lags_retrieving)),
    ("... once every turn was streaming, p50 / p95", lambda f: spread(f.lags_streaming)),
    ("tokens never shown", lambda f: str(f.missing_tokens)),
    ("model's last token -> complete final, p50 / p95 / max (ms)", lambda f: _with_max(f.to_final)),
    ("answers first seen whole, as their final", lambda f: str(f.whole_at_once)),
    ("finals complete and exact / mismatches", lambda f: f"{f.exact} / {f.conversations} ({len(f.mismatches)})"),
    ("Web API calls by method", lambda f: top(f.calls, 8)),
    ("429s by limit and method", lambda f: top(f.throttles, 8)),
    ("calls of a 429's limit made inside its Retry-After", lambda f: str(f.inside_wait)),
    ("chat.update accepted: most in any 60 s / per minute, each burst", lambda f: _minute(f, "chat.update")),
    ("chat.appendStream accepted: most in any 60 s / per minute", lambda f: _minute(f, "chat.appendStream")),
    ("model's TTFT measured at the fake, p50 / p95 (ms)", lambda f: spread(f.model_ttft)),
    ("fake's deltas late on their 50/s schedule, p95 (ms)", lambda f: ms_at(f.pace, 0.95)),
    ("service log lines WARNING+", lambda f: top(f.log_lines, 4)),
    ("RSS before / burst peak / process peak (MB)", _rss),
    ("service CPU s / wall s of the bursts", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("wall s of each burst", lambda f: ", ".join(f"{run.wall:.0f}" for run in f.repeats or [f])),
    ("bench event-loop lag p50 / p95 / max (ms)", lambda f: _with_max(f.loop_lag)),
]


# --- replaying what the fake accepted -----------------------------------------------------------------------------


def _replay(message: Message, call: SlackCall) -> None:
    """Change a bot message, rebuilt as the fake keeps it, as the fake did for this accepted call."""
    params = call.params
    markdown = opt(params, "markdown_text")
    blocks = _blocks(params.get("blocks"))
    if call.method == "chat.postMessage":
        message.text, message.markdown, message.blocks = opt(params, "text"), markdown, blocks or []
    elif call.method == "chat.update":
        if markdown is not None:
            message.text, message.markdown, message.blocks = None, markdown, []
        else:
            message.text = opt(params, "text") or message.text
            message.blocks = blocks if blocks is not None else message.blocks
            message.markdown = None
        message.deltas = None
    else:  # a stream's start, append or stop (the adapter sends markdown_text, never chunks)
        message.deltas = message.deltas if message.deltas is not None else []
        if markdown:
            message.deltas.append(markdown)
        message.blocks += blocks or []


def _blocks(value: Any) -> list[Json] | None:
    parsed = json.loads(value) if isinstance(value, str) else value
    return list(parsed) if isinstance(parsed, list) else None


def timelines(calls: list[SlackCall], threads: list[Thread]) -> dict[int, list[tuple[float, str]]]:
    """Each thread's bot text (its messages joined) after every accepted call that changed it, with the call's time.

    A postMessage or startStream in a thread made that thread's next bot message (the fake gives ts in order).
    """
    by_root = {(thread.channel, thread.ts): thread for thread in threads}
    by_message = {(thread.channel, reply.ts): thread for thread in threads for reply in thread.replies}
    made: Counter[int] = Counter()
    messages: dict[int, dict[str, Message]] = {}
    shown: dict[int, list[tuple[float, str]]] = {}
    for call in calls:
        if call.error is not None or call.method not in _WRITES:
            continue
        channel = str(call.params.get("channel", ""))
        if call.method in _CREATES:
            owner = by_root.get((channel, str(call.params.get("thread_ts"))))
            if owner is None or made[owner.number] >= len(owner.replies):
                continue
            ts = owner.replies[made[owner.number]].ts
            made[owner.number] += 1
        else:
            ts = str(call.params.get("ts"))
            owner = by_message.get((channel, ts))
            if owner is None:
                continue
        mine = messages.setdefault(owner.number, {})
        _replay(mine.setdefault(ts, Message(channel, ts, "")), call)
        text = "".join(reads(message) for message in mine.values())
        line = shown.setdefault(owner.number, [])
        if not line or line[-1][1] != text:
            line.append((call.time, text))
    return shown


# --- one burst ------------------------------------------------------------------------------------------------


class _SlackScenario:
    """Conversations as signed app_mention deliveries to the Slack adapter of a `ragbot serve` process."""

    def __init__(self, fake: FakeSlackAPI, model: FakeOpenAI, url: str, pid: int, channels: int, log: Path) -> None:
        self.fake = fake
        self.model = model
        self.url = url
        self.channels = channels
        self._watch = BurstWatch(pid, "the `ragbot serve` process")
        self._log = log

    async def burst(self, name: str, numbers: list[int]) -> SlackFigures:
        """Deliver one mention per number at once and measure until every thread shows its final."""
        fake = self.fake
        await self._quiet_windows()
        threads = [Thread(number, f"C0BENCH{index % self.channels:02d}") for index, number in enumerate(numbers)]
        self.model.streamed.clear()
        marks = len(fake.requests), len(fake.throttled), self._log.stat().st_size
        self._watch.start()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            await asyncio.gather(*(self._mention(session, thread) for thread in threads))
        await self._settle(threads)
        figures = SlackFigures(name, len(threads))
        await self._watch.stop(figures)
        self._analyse(figures, threads, marks)
        return figures

    async def _quiet_windows(self) -> None:
        """Wait until the fake's 60 s windows hold at most 5 calls, so a burst does not inherit the last one's."""
        recent = [call.time for call in self.fake.requests if call.method in _WINDOWED]
        if len(recent) > 5 and (wait := recent[-6] + WINDOW - time.monotonic()) > 0:
            print(f"  waiting {wait:.0f} s for the fake's 60 s windows to empty", flush=True)
            await asyncio.sleep(wait + 0.1)

    async def _mention(self, session: aiohttp.ClientSession, thread: Thread) -> None:
        user = f"U0P{thread.number:06d}"
        text = question(thread.number)
        thread.ts = self.fake.user_message(TEAM, thread.channel, user, f"<@{events.BOT_USER_ID}> {text}")
        event = events.app_mention(channel=thread.channel, user=user, text=text, team=TEAM, ts=thread.ts)
        body = events.json_body(events.envelope(event, team_id=TEAM))
        thread.started = time.monotonic()
        async with session.post(self.url + EVENTS_PATH, data=body, headers=events.signed_headers(body, SECRET)) as got:
            thread.status = got.status

    def _replies(self, thread: Thread) -> list[Shown]:
        return [
            shown for shown in self.fake.thread(thread.channel, thread.ts) if shown.bot_id and shown.ts != thread.ts
        ]

    async def _settle(self, threads: list[Thread]) -> None:
        """Poll until each thread shows a final (or something that is not a step towards it), then a quiet 2 s."""

        def settled(thread: Thread) -> bool:
            replies = self._replies(thread)
            text, want = "".join(reply.text for reply in replies), expected_text(thread.number)
            return bool(replies) and not replies[-1].streaming and (text == want or not want.startswith(text))

        pending = [thread for thread in threads if thread.status == 200]
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while pending and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            pending = [thread for thread in pending if not settled(thread)]
        if pending:
            print(f"  {len(pending)} threads had no final after {SETTLE_TIMEOUT:.0f} s", flush=True)
        while True:
            count = len(self.fake.requests)
            await asyncio.sleep(2.0)
            if len(self.fake.requests) == count:
                break
        for thread in threads:
            thread.replies = self._replies(thread)

    def _analyse(self, figures: SlackFigures, threads: list[Thread], marks: tuple[int, int, int]) -> None:
        calls = self.fake.requests[marks[0] :]
        throttles = self.fake.throttled[marks[1] :]
        figures.calls = Counter(call.method for call in calls)
        figures.throttles = Counter(f"{throttle.scope} {throttle.method}" for throttle in throttles)
        figures.inside_wait = _inside_waits(calls, throttles)
        _rates(figures, calls)
        _read_log(figures, self._log, marks[2])
        shown = timelines(calls, threads)
        records = streams_by_ticket(self.model)
        interval = 1 / self.model.tokens_per_second
        last_request = max((record.received for record in records.values()), default=0.0)
        for thread in threads:
            person = Seen(thread.number, started=thread.started, shown=shown.get(thread.number, []))
            person.final = "".join(reply.text for reply in thread.replies) if thread.replies else None
            record = records.get(thread.number)
            if record is None:
                figures.mismatches.append(f"#{thread.number}: the model was never asked (POST {thread.status})")
                continue
            record_timings(figures, person, record, interval=interval, last_request=last_request, edited=True)
            want = expected_text(thread.number)
            if person.shown:
                figures.first_from_event.append(person.shown[0][0] - thread.started)
                figures.first_after_model.append(person.shown[0][0] - record.sent[0])
            if (done := next((at for at, text in person.shown if text == want), None)) is not None:
                figures.to_final.append(done - record.sent[-1])
                figures.whole_at_once += done == person.shown[0][0]
            prefixes = all(want.startswith(text) for _, text in person.shown)
            replayed = person.shown[-1][1] if person.shown else None
            one = len(thread.replies) == 1 and not thread.replies[0].streaming
            if one and person.final == want and replayed == want and prefixes:
                figures.exact += 1
            else:
                figures.mismatches.append(
                    f"#{thread.number}: messages={len(thread.replies)} prefixes={prefixes} "
                    f"replayed={replayed == person.final} final={person.final!r}"
                )


def _inside_waits(calls: list[SlackCall], throttles: list[Throttle]) -> int:
    """Calls of a throttled method (in the same channel, for a channel limit) made before its Retry-After passed."""
    times = [call.time for call in calls]
    return sum(
        call.method == throttle.method and throttle.channel in (None, call.params.get("channel"))
        for throttle in throttles
        for call in calls[
            bisect.bisect_right(times, throttle.time) : bisect.bisect_left(times, throttle.time + throttle.retry_after)
        ]
    )


def _rates(figures: SlackFigures, calls: list[SlackCall]) -> None:
    """Accepted chat.update and appendStream calls: the most in any 60 s, and per minute from the first to the last
    (taken as at least a minute, so a short spell is not blown up to a rate it never kept)."""
    for method in _WINDOWED:
        times = [call.time for call in calls if call.method == method and call.error is None]
        most = max((bisect.bisect_right(times, at + WINDOW) - index for index, at in enumerate(times)), default=0)
        span = max(times[-1] - times[0], WINDOW) if times else WINDOW
        figures.per_minute[method] = [f"{most} / {len(times) * 60 / span:.1f}"]


def _read_log(figures: SlackFigures, log: Path, offset: int) -> None:
    """The service's WARNING and worse lines since `offset`, counted by level, logger and first word; the first
    few kept whole, with the traceback lines under them (lines that do not start like a log line)."""
    keeping = False
    for line in log_since(log, offset):
        if (key := warning_key(line)) is not None:
            figures.log_lines[key] += 1
            keeping = len(figures.log_examples) < 3
            if keeping:
                figures.log_examples.append(line)
        elif keeping and not _LOG_LINE.match(line):
            figures.log_examples[-1] += "\n    " + line
        else:
            keeping = False


def _merged(name: str, runs: list[SlackFigures]) -> SlackFigures:
    """The bursts' figures as one: lists joined, counts added, the memory peaks kept."""
    return merge_runs(SlackFigures(name, sum(run.conversations for run in runs), repeats=list(runs)), runs)


# --- the run --------------------------------------------------------------------------------------------------


async def _mode_run(
    mode: str, env: dict[str, str], model: FakeOpenAI, args: argparse.Namespace, work: Path
) -> list[Figures]:
    """One streaming mode in a `ragbot serve` of its own against a fresh fake: warm-up, 1 alone, the bursts."""
    count = args.conversations
    async with FakeSlackAPI() as fake:
        fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0BENCH")
        slack = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_BASE_URL": fake.base_url}
        async with serving({**env, **slack, "SLACK_STREAMING": mode}, work) as (url, process):
            scenario = _SlackScenario(fake, model, url, process.pid, args.channels, work / "serve.log")
            warm = await scenario.burst("warm-up", [0])
            if warm.exact != 1:
                raise SystemExit(f"the Slack {mode} warm-up turn was not answered as expected: {warm.mismatches}")
            label = f"(s) Slack {mode}"
            alone = await scenario.burst(f"{label}, 1 alone", [1])
            runs = []
            for repeat in range(args.repeats):
                first = 2 + repeat * count
                runs.append(await scenario.burst(label, list(range(first, first + count))))
                run = runs[-1]
                print(
                    f"  {mode} burst {repeat + 1}: {run.wall:.0f} s, lag p95 {ms_at(run.lags, 0.95)} ms, "
                    f"final p50/p95/max {_with_max(run.to_final)} ms, exact {run.exact}/{run.conversations}, "
                    f"429s {sum(run.throttles.values())}",
                    flush=True,
                )
    return [alone, _merged(f"{label}, {count} at once in {args.channels} channels", runs)]


async def slack_run(env: dict[str, str], model: FakeOpenAI, args: argparse.Namespace, work: Path) -> list[Figures]:
    """Scenario (s): both streaming modes, each in its own `ragbot serve` against a fresh fake."""
    print(f"(s) {args.conversations} Slack threads, one workspace, {args.channels} channels, limits on", flush=True)
    figures: list[Figures] = []
    for mode in MODES:
        figures += await _mode_run(mode, env, model, args, work)
    for result in figures:
        assert isinstance(result, SlackFigures)
        for line in result.log_examples:
            print(f"  {result.name}: log: {line}")
    return figures
