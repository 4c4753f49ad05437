"""A steady load on one `ragbot serve` for a long time (issue 22, "runs for months"): does anything grow?

One `ragbot serve` subprocess (SQLite in its data dir, its own local Weaviate, the local ONNX embedder) answers
people of the web chat (HTTP API + server-sent events), of Telegram (FakeTelegramBotAPI, flood limits on, updates by
getUpdates: private chats and forum topics) and of Slack (FakeSlackAPI, limits on, signed Events API deliveries,
native streaming), all through the real adapters. The chat model is the concurrency benches' fake in a process of its
own (bench/model_process.py): a known answer of 120 words per ticket at 50 deltas/s after 200 ms. Each person asks
one question at a time and returns with more (their conversation's history grows); each Slack question is a new
thread. Arrivals are random (Poisson) at a set rate, spread over the places by --mix.

Beside the people, an admin in the web chat (bench/soak_admin.py) scheduled a page the bench serves once
(`/ingest URL --every 1d`), sends `/sync` every --sync-every seconds (the page changing first now and then), and
uploads a small new document every --ingest-every seconds, into a knowledge base of its own.

1. Probe (unless --rate): rising rates (--probe-rates), --probe-seconds each, until one fails: an answer without its
   exact final, an arrival finding all of its place's people busy, or a place's p95 first visible text over --max-p95
   seconds. The rate sustained is the last that passed.
2. Soak: a fresh `ragbot serve` on the same data, --warmup-minutes then --minutes at that rate, and a sample of the
   serve process every --sample-every seconds (bench/soak_watch.py): RSS, open fds, threads, asyncio tasks (when
   /metrics has a gauge for them), CPU; Weaviate's RSS and the machine's load beside.

First visible text: from sending (the POST, the queued update, the event POST) to the first SSE delta or accepted
platform call that shows a piece of the answer (the model's 200 ms TTFT included). A question's final must show
exactly (answer and sources) within --question-timeout, or it is an error. The markdown section goes to stdout and,
with --markdown, to a file.

    .venv/bin/python -m bench.soak [--minutes 60] [--warmup-minutes 2] [--rate R | --probe-rates 2,4,6,8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from yarl import URL

from bench.common import ROOT, commit, machine
from bench.conversations import DOCUMENT, DOCUMENT_NAME, KB, MODEL_TTFT
from bench.log_counts import tally_log
from bench.model_process import ModelProcess, model_process
from bench.serving import serve_env, serving
from bench.soak_admin import PAGES_KB, Admin, AdminAction, Page, page_server
from bench.soak_ledger import Ledger
from bench.soak_load import Askers, Load, Step, parse_mix, skipped_in, sustained, weighted
from bench.soak_report import SoakRun, markdown, read_counts
from bench.soak_slack import SlackPeople, SlackThreads
from bench.soak_telegram import TelegramChats, TelegramPeople, private_places, topic_places
from bench.soak_watch import Sample, Watch
from bench.soak_web import WebPeople
from bot.app.services import build_services
from bot.app.settings import Settings
from harness.processes import free_port
from rag.ingest.documents import SourceFile

ACCESS_TOKEN = "soak-access-token-0123456789abcdef0123"
ADMIN_TOKEN = "soak-admin-token-0123456789abcdef01234"


@dataclass(frozen=True, slots=True)
class Running:
    """One serve process under load: its load, its admin and the admin's work, its watch, where its log starts."""

    load: Load
    admin: Admin
    admin_work: asyncio.Task[None]
    watch: Watch
    log_offset: int

    async def stop_admin(self) -> None:
        """Stop the admin's work (a command under way is cut off)."""
        self.admin_work.cancel()
        await asyncio.gather(self.admin_work, return_exceptions=True)


def _values(args: argparse.Namespace, data: Path, model_url: str) -> dict[str, str]:
    """The service's settings: defaults but for the fakes, the knowledge bases, the tokens, loopback pages."""
    values = {
        "RAGBOT_DATA_DIR": str(data),
        "WEAVIATE_BINARY": str(args.weaviate_binary),
        "EMBEDDING_MODEL_DIR": str(args.model_dir),
        "CHAT_MODEL": "fake",
        "CHAT_MODEL_BASE_URL": model_url,
        "CHAT_MODEL_API_KEY": "test-key",
        "DEFAULT_KNOWLEDGE_BASES": KB,
        "WEB_KNOWLEDGE_BASES": f"{KB},{PAGES_KB}",
        "WEB_ACCESS_TOKEN": ACCESS_TOKEN,
        "WEB_ADMIN_TOKEN": ADMIN_TOKEN,
        # Every client is 127.0.0.1, which the web chat otherwise lets send 120 messages a minute.
        "WEB_ADDRESS_RATE_LIMIT": "100000",
        "URL_FETCH_ALLOWED_NETWORKS": "127.0.0.0/8",
    }
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        values["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    return values


async def _knowledge(values: dict[str, str]) -> None:
    """The handbook (one document, every person's source) and the admin's empty knowledge base."""
    async with build_services(Settings.model_validate(values)) as services:
        kb = await services.knowledge.create(KB)
        source = SourceFile(DOCUMENT.encode(), source_uri=DOCUMENT_NAME, filename=DOCUMENT_NAME)
        await services.ingestor.ingest(kb, source)
        await services.knowledge.create(PAGES_KB)


@dataclass(frozen=True, slots=True)
class Bench:
    """What every phase shares: the options, the service's settings and folder, the page, the fakes, the questions
    and the admin's actions so far, and the one random source.

    The platforms' fakes outlive each serve process as Telegram and Slack do: a new fake would number its updates
    and messages from the start again, and the service rightly drops a message id it has already answered.
    """

    args: argparse.Namespace
    values: dict[str, str]
    work: Path
    page: Page
    model: ModelProcess
    telegram: TelegramChats
    slack: SlackThreads
    ledger: Ledger
    actions: list[AdminAction]
    rng: random.Random


async def _tidy(telegram: TelegramChats, slack: SlackThreads, model: ModelProcess) -> None:
    """Every minute, drop the fakes' call logs (nothing reads them here), so the bench's own memory stays flat."""
    while True:
        await asyncio.sleep(60)
        for calls in (telegram.fake.requests, telegram.fake.throttled, telegram.fake.draft_log):
            calls.clear()
        slack.fake.requests.clear()
        slack.fake.throttled.clear()
        await model.reset()


def objects_file(work: Path, phase: str) -> Path:
    """Where a debug run's serve process of `phase` writes its object counts (bench.soak_objects)."""
    return work / f"objects-{phase}.jsonl"


def _peers(bench: Bench, url: str, internal: int) -> dict[int, str]:
    """The ports a serve process listens on and talks to, named, for its fds by kind."""
    named = {
        url: "clients",
        f"http://127.0.0.1:{internal}": "metrics",
        bench.model.base_url: "fake model",
        bench.telegram.fake.url: "Telegram fake",
        bench.slack.fake.base_url: "Slack fake",
        bench.page.url: "page",
    }
    return {URL(address).port or 0: name for address, name in named.items()}


@asynccontextmanager
async def _running(bench: Bench, phase: str) -> AsyncIterator[Running]:
    """A fresh serve process, its people and its admin at work (the page scheduled once)."""
    args, work, page, ledger, rng = bench.args, bench.work, bench.page, bench.ledger, bench.rng
    timeout = args.question_timeout
    telegram, slack = bench.telegram, bench.slack
    internal = free_port()
    platforms = {
        "TELEGRAM_BOT_TOKEN": telegram.fake.token,
        "TELEGRAM_API_BASE_URL": telegram.fake.base_url,
        "TELEGRAM_FILE_BASE_URL": telegram.fake.base_file_url,
        "TELEGRAM_ALLOW_EVERYONE": "true",
        **slack.settings(),
        # Slack's Events API takes webhooks, so ragbot is public: /metrics moves to this loopback listener.
        "RAGBOT_INTERNAL_PORT": str(internal),
    }
    log_offset = (work / "serve.log").stat().st_size if (work / "serve.log").exists() else 0
    module = "bot.cli.main"
    if args.objects:
        module = "bench.soak_objects"
        platforms["SOAK_OBJECTS_FILE"] = str(objects_file(work, phase))
        platforms["SOAK_OBJECTS_EVERY"] = str(args.sample_every)
    async with serving(serve_env({**bench.values, **platforms}), work, module) as (url, process):
        slack.url = url
        await telegram.fake.wait_for(lambda: telegram.fake.polling, timeout=60)
        admin = Admin(url, ACCESS_TOKEN, ADMIN_TOKEN, timeout, bench.actions)
        web = WebPeople(url, ACCESS_TOKEN, args.web_people, rng, timeout)
        places: dict[str, Askers] = {
            "web": web,
            "telegram-private": TelegramPeople(
                telegram, "telegram-private", private_places(telegram, args.telegram_people), rng
            ),
            "telegram-group": TelegramPeople(
                telegram, "telegram-group", topic_places(telegram, args.telegram_groups, 4), rng
            ),
            "slack": SlackPeople(slack, args.slack_people, args.slack_channels, rng),
        }
        load = Load(weighted(places, parse_mix(args.mix)), ledger, rng)
        admin_work: asyncio.Task[None] | None = None
        tidy = asyncio.create_task(_tidy(telegram, slack, bench.model))
        try:
            await admin.open()
            if page.fetched == 0:  # not scheduled yet (the schedule outlives the serve process)
                await admin.command("schedule", f"/ingest {page.url} --every 1d")
            every = (args.sync_every, args.ingest_every)
            admin_work = asyncio.create_task(admin.work(page, rng, every, args.page_change))
            watch = Watch(process.pid, f"http://127.0.0.1:{internal}/metrics", _peers(bench, url, internal))
            yield Running(load, admin, admin_work, watch, log_offset)
        finally:
            for task in (admin_work, tidy):
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            await load.drain()
            await web.close()
            await slack.close()
            await admin.close()


async def _probe(bench: Bench) -> list[Step]:
    """Rising rates on one serve until one fails."""
    args, ledger = bench.args, bench.ledger
    steps: list[Step] = []
    async with _running(bench, "probe") as running:
        await running.load.run(args.probe_rates[0], 30, "probe warm-up")
        for rate in args.probe_rates:
            phase = f"probe {rate:g}/s"
            await running.load.run(rate, args.probe_seconds, phase)
            await running.load.drain()
            steps.append(Step(rate, ledger.by_place(phase), skipped_in(ledger, phase)))
            step = steps[-1]
            print(
                f"  probe {rate:g}/s: errors {step.errors()}, skipped {step.skipped}, worst p95 first text "
                f"{step.worst_p95() * 1000:.0f} ms -> {'passes' if step.passes(args.max_p95) else 'fails'}",
                flush=True,
            )
            if not step.passes(args.max_p95):
                break
    return steps


@dataclass(frozen=True, slots=True)
class Soaked:
    """The soak phase: its serve's parts, when it and its soak after the warm-up started, the samples taken in the
    warm-up, the soak's seconds, and the idle readings around it."""

    running: Running
    started: float
    soak_started: float
    warm_samples: int
    seconds: float
    # Readings with nothing asked: before the warm-up, and once the soak's questions and the admin's work ended.
    idle: tuple[Sample, Sample]


async def _soak(bench: Bench, rate: float) -> Soaked:
    """A fresh serve: the warm-up, then the soak, sampled all along."""
    args, ledger = bench.args, bench.ledger
    async with _running(bench, "soak") as running:
        watch = running.watch
        idle_before = await watch.sample(keep=False)
        started = time.monotonic()
        sampling = asyncio.create_task(watch.every(args.sample_every))
        await running.load.run(rate, args.warmup_minutes * 60, "warm-up")
        soak_started = time.monotonic()
        warm = len(watch.samples)
        print(f"  warm-up done: {len(ledger.of('warm-up'))} questions; soak at {rate:g}/s", flush=True)
        await running.load.run(rate, args.minutes * 60, "soak")
        soak_seconds = time.monotonic() - soak_started
        # The last sample falls due as the load stops: wait for it (its readings take a few seconds).
        due = int((time.monotonic() - started) // args.sample_every) + 1
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(args.sample_every / 2):
                while len(watch.samples) < due:  # noqa: ASYNC110
                    await asyncio.sleep(0.5)
        sampling.cancel()
        await asyncio.gather(sampling, return_exceptions=True)
        await running.load.drain()
        await running.stop_admin()
        # Idle again: the clients' kept-alive connections close after 15 s (aiohttp's client default).
        await asyncio.sleep(args.idle_seconds)
        idle_after = await watch.sample(keep=False)
    return Soaked(running, started, soak_started, warm, soak_seconds, (idle_before, idle_after))


def _conditions(args: argparse.Namespace, rate_note: str) -> list[str]:
    memory = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    return [
        f"- `ragbot serve` with SQLite, its local Weaviate and ONNX embedder; the fake model process answers "
        f"{MODEL_TTFT * 1000:.0f} ms TTFT then 120 deltas at {args.tokens_per_second:g}/s; RAM "
        f"{int(memory.split()[1]) / 1024**2:.1f} GiB; load average at the start {os.getloadavg()[0]:.2f}",
        f"- mix {args.mix}; people: web {args.web_people}, Telegram private {args.telegram_people}, Telegram "
        f"topics {args.telegram_groups} groups x 4, Slack {args.slack_people} in {args.slack_channels} channels; "
        f"question timeout {args.question_timeout:g} s",
        f"- admin: `/sync` every {args.sync_every:g} s (page changed first with chance {args.page_change:g}), a "
        f"note uploaded every {args.ingest_every:g} s",
        f"- rate: {rate_note}; warm-up {args.warmup_minutes:g} min, soak {args.minutes:g} min, a sample every "
        f"{args.sample_every:g} s",
    ]


async def _run(args: argparse.Namespace) -> str:
    work = Path(tempfile.mkdtemp(prefix="ragbot-soak-"))
    (work / "data").mkdir(mode=0o700)
    rng = random.Random(args.seed)
    ledger = Ledger()
    header = f"commit {commit()} · {machine()} · {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    try:
        async with (
            contextlib.AsyncExitStack() as stack,
            model_process(MODEL_TTFT, args.tokens_per_second, None) as model,
            page_server() as page,
        ):
            values = _values(args, work / "data", model.base_url)
            await _knowledge(values)
            telegram, slack = TelegramChats(args.question_timeout), SlackThreads(args.question_timeout)
            await stack.enter_async_context(telegram.fake)
            await stack.enter_async_context(slack.fake)
            bench = Bench(args, values, work, page, model, telegram, slack, ledger, [], rng)
            steps: list[Step] = []
            if args.rate is not None:
                rate, note = args.rate, "given by --rate"
            else:
                print(f"probe: {', '.join(f'{r:g}' for r in args.probe_rates)} questions/s", flush=True)
                steps = await _probe(bench)
                found = sustained(steps, args.max_p95)
                rate = found if found is not None else args.probe_rates[0]
                note = (
                    f"the highest probed rate that passed: p95 first text <= {args.max_p95:g} s everywhere, 0 errors"
                    if found is not None
                    else "no probed rate passed: soaked at the lowest"
                )
            print(f"soak: {args.warmup_minutes:g} min warm-up, {args.minutes:g} min at {rate:g}/s", flush=True)
            soaked = await _soak(bench, rate)
            watch = soaked.running.watch
            metrics_note = ""
            if any(sample.tasks is None for sample in watch.samples):
                metrics_note = "not measured: /metrics has no asyncio task gauge at this commit" + (
                    f" ({watch.metrics_error})" if watch.metrics_error else ""
                )
            run = SoakRun(
                header,
                _conditions(args, note),
                steps,
                args.max_p95,
                rate,
                note,
                ledger,
                watch.samples,
                soaked.started,
                soaked.soak_started,
                soaked.warm_samples,
                soaked.seconds,
                soaked.idle,
                bench.actions,
                page,
                tally_log(work / "serve.log", soaked.running.log_offset),
                metrics_note,
                read_counts(objects_file(work, "soak")) if args.objects else [],
            )
            return markdown(run)
    except BaseException:
        print(f"kept {work} (serve.log, data) for a look", file=sys.stderr)
        raise
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _rates(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def main() -> None:
    """Probe, soak, and print the markdown section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="the soak after the warm-up")
    parser.add_argument("--warmup-minutes", type=float, default=2.0)
    parser.add_argument("--rate", type=float, help="questions/s to soak at (no probe)")
    parser.add_argument("--probe-rates", type=_rates, default=[2.0, 4.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0])
    parser.add_argument("--probe-seconds", type=float, default=45.0)
    parser.add_argument("--max-p95", type=float, default=2.0, help="seconds of first visible text, any place")
    parser.add_argument("--mix", default="web=5,telegram-private=2,telegram-group=1,slack=2")
    parser.add_argument("--web-people", type=int, default=300)
    parser.add_argument("--telegram-people", type=int, default=200)
    parser.add_argument("--telegram-groups", type=int, default=30, help="supergroups of 4 forum topics each")
    parser.add_argument("--slack-people", type=int, default=200)
    parser.add_argument("--slack-channels", type=int, default=20)
    parser.add_argument("--sync-every", type=float, default=60.0)
    parser.add_argument("--ingest-every", type=float, default=180.0)
    parser.add_argument("--page-change", type=float, default=0.3, help="chance the page changed before a /sync")
    parser.add_argument("--question-timeout", type=float, default=120.0)
    parser.add_argument("--sample-every", type=float, default=60.0)
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="quiet before the idle reading at the end")
    parser.add_argument("--tokens-per-second", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--markdown", type=Path, help="also write the section to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (serve.log, data)")
    parser.add_argument(
        "--objects", action="store_true", help="debug run: serve counts its live objects (soak_objects)"
    )
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--weaviate-binary", type=Path, default=ROOT / "bin" / "weaviate-server")
    args = parser.parse_args()
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")
    section = asyncio.run(_run(args))
    print(section)
    if args.markdown:
        args.markdown.write_text(section)


if __name__ == "__main__":
    main()
