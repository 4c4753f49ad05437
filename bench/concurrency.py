"""Conversations at once on one instance: first sign and text, lag, exact finals, CPU, memory (issues 8 and 20).

Each conversation asks its own numbered question of a one-document knowledge base, so `rag_stream` runs for real
(the real Weaviate, ONNX embedder, local reranker, and SQLite or PostgreSQL); the fake OpenAI-compatible model, in a
process of its own (bench/model_process.py), answers every ticket with its own known text of 120 words (one content
delta each, 132 cl100k tokens) at 50 deltas/s after a 200 ms time to first token, and timestamps every delta as it
writes it. Per database (--database) and size (--conversations), on fresh data: a warm-up turn, one conversation
alone, then --repeats bursts of that many conversations started at once (merged).

(a) ConversationManager.handle() into recording targets whose streams are bot.reply.stream.EditingReplyStream with a
    1 s minimum edit interval (first flush after 0.3 s, the ReplyLimits default): every send, edit and typing call
    recorded (bench/concurrency_manager.py). The service is the bench process of the run; the fake model is not in it.
(b) `ragbot serve` in a subprocess on the same data, and aiohttp clients with their own cookie jars, each posting its
    question to the web chat and reading the server-sent events (bench/concurrency_web.py).
(t) `ragbot serve` with its Telegram adapter polling FakeTelegramBotAPI, flood limits on: half private chats, half
    forum topics in --groups supergroups (bench/concurrency_telegram.py; not in the default --scenarios).
(s) `ragbot serve` with its Slack adapter against FakeSlackAPI, limits on: threads in one workspace spread over
    --channels channels, once with SLACK_STREAMING=native and once with edit (bench/concurrency_slack.py; not in the
    default --scenarios). (t) and (s) run their fake model in the bench process, as before.

--instances 1,2 (issue 21): (b) only, against N `ragbot serve` behind haproxy on one PostgreSQL and a three-node
Weaviate cluster (replication factor 3, QUORUM), every N on the same processes and data, alternating burst by burst
(bench/concurrency_instances.py); --repeats is then the rounds (one burst per N each). --database, --scenarios and
--with-ingestion do not apply: the database is a throw-away PostgreSQL cluster with pg_stat_statements loaded.

--with-ingestion: after the turn alone, a document of --ingestion-chunks one-section chunks is ingested into a
knowledge base no chat reads ((a) through the services' DocumentIngestor, (b) by `ragbot ingest` beside the server),
and bursts follow one another until it is done (bench/ingestion_load.py). The service's embedder is then the model
process's embeddings endpoint (EMBEDDING_PROVIDER=openai): the same ONNX vectors, computed there, for everything but
the archive's chunks, which get hash vectors at once; --ingestion-embedder local keeps the ONNX model in the service
for all (it embeds ~130 short chunks/s on 2 cores: 60,000 take 8 minutes).

Measured per burst: the first sign (typing, a status event, a placeholder, any text) after the event; the first
answer text minus the model's TTFT; lag from the fake writing a delta to the first edit (a) or SSE delta (b) that
shows it; finals exact, lost (the model finished, the person did not get exactly it) and failed (an apology or no
answer); the service process's CPU seconds over the burst (/proc/PID/stat utime+stime) per turn, its RSS (VmHWM reset
before each burst); turns per second (turns / burst wall); and what the service logged (records mentioning
"database is locked" or a pool timeout: a handler on the root logger in (a), serve.log in (b)). Settings raised so
every conversation runs at once: CHAT_MAX_CONCURRENT_TURNS and CHAT_MAX_CONCURRENT_MODEL_CALLS = conversations + 8
(or --turn-limit), CHAT_RATE_LIMIT 1000, WEB_ADDRESS_RATE_LIMIT 100000 (every client is 127.0.0.1). PostgreSQL:
RAGBOT_BENCH_DATABASE_URL's server (the bench creates its databases there), else a throw-away cluster. Each
database and size runs in a bench process of its own, so (a)'s memory is one service's.

    .venv/bin/python -m bench.concurrency [--database sqlite|postgres|both] [--conversations 200,1000]
        [--repeats 3,1] [--tokens-per-second 50] [--scenarios abts] [--with-ingestion] [--ingestion-chunks 60000]
    .venv/bin/python -m bench.concurrency --instances 1,2 --conversations 200,1000 --repeats 2
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

from bench.bursts import Plan, bursts
from bench.common import ROOT, commit, machine
from bench.concurrency_instances import POSTGRES_SETTINGS, InstancePlan, instances_run, print_instances
from bench.concurrency_manager import ManagerScenario
from bench.concurrency_slack import slack_run
from bench.concurrency_telegram import telegram_run
from bench.concurrency_web import web_run
from bench.conversations import ANSWER_WORDS, DOCUMENT, DOCUMENT_NAME, KB, MODEL_TTFT, reply_for
from bench.databases import DATABASES, chosen, create_database, databases
from bench.figures import Figures
from bench.ingestion_load import ARCHIVE_KB, CliIngestion, InProcessIngestion, archive_document
from bench.log_counts import TallyHandler
from bench.model_process import ModelProcess, model_process
from bench.report import print_summary, print_tables
from bench.serving import serve_env
from bot.app.services import build_services
from bot.app.settings import Settings
from fakes.openai_api import FakeOpenAI
from harness.postgres import running_postgres
from rag.ingest.documents import SourceFile


def _values(
    args: argparse.Namespace, conversations: int, data_dir: Path, fake_url: str, database_url: str | None
) -> dict[str, str]:
    """The settings of every scenario: the load limits raised so every conversation runs at once."""
    limit = str(args.turn_limit or conversations + 8)
    values = {
        "RAGBOT_DATA_DIR": str(data_dir),
        "WEAVIATE_BINARY": str(args.weaviate_binary),
        "EMBEDDING_MODEL_DIR": str(args.model_dir),
        "CHAT_MODEL": "fake",
        "CHAT_MODEL_BASE_URL": fake_url,
        "CHAT_MODEL_API_KEY": "test-key",
        "DEFAULT_KNOWLEDGE_BASES": KB,
        "WEB_KNOWLEDGE_BASES": KB,
        "CHAT_MAX_CONCURRENT_TURNS": limit,
        "CHAT_MAX_CONCURRENT_MODEL_CALLS": limit,
        "CHAT_RATE_LIMIT": "1000",
        # Every client is 127.0.0.1, which the web chat otherwise lets send 120 messages a minute.
        "WEB_ADDRESS_RATE_LIMIT": "100000",
    }
    if database_url is not None:
        values["DATABASE_URL"] = database_url
    if args.with_ingestion and args.ingestion_embedder == "fake":
        # The model process's embeddings (the same ONNX vectors, but hashes for the archive's chunks): the
        # ingestion then costs its writes, not 8 minutes of ONNX on 2 cores.
        del values["EMBEDDING_MODEL_DIR"]
        values.update(EMBEDDING_PROVIDER="openai", EMBEDDING_BASE_URL=fake_url, EMBEDDING_API_KEY="test-key")
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        values["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    return values


async def _run(args: argparse.Namespace) -> list[Figures]:
    """Every database and size, each in a bench process of its own (so (a)'s memory is one service's)."""
    results: list[Figures] = []
    embeds = args.model_dir if args.with_ingestion and args.ingestion_embedder == "fake" else None
    async with model_process(MODEL_TTFT, args.tokens_per_second, embeds) as fake:
        for database in chosen(args.database):
            async with databases(database) as fresh:
                for size, repeats in zip(args.conversations, args.repeats, strict=True):
                    results += await _in_child(args, fake.base_url, database, await fresh(str(size)), size, repeats)
    return results


async def _run_instances(args: argparse.Namespace) -> list[Figures]:
    """--instances: every size on a fresh database and Weaviate cluster, the instance counts alternating."""
    results: list[Figures] = []
    with running_postgres(POSTGRES_SETTINGS) as base:
        async with model_process(MODEL_TTFT, args.tokens_per_second, None) as fake:
            for size, rounds in zip(args.conversations, args.repeats, strict=True):
                counts = ", ".join(map(str, args.instances))
                print(f"(b) {size} SSE clients through haproxy, {counts} instances · postgres, 3 Weaviate", flush=True)
                work = Path(tempfile.mkdtemp(prefix="ragbot-bench-instances-"))
                database_url = await create_database(base, f"instances_{size}")
                values = _values(args, size, work / "cli", fake.base_url, database_url)
                plan = InstancePlan(size, rounds, tuple(args.instances))
                label = "(b) web · postgres · 3 Weaviate"
                try:
                    results += await instances_run(label, values, fake, plan, work, args.weaviate_binary, base)
                except BaseException:
                    print(f"kept {work} (the instances' logs, haproxy's, Weaviate's) for a look", file=sys.stderr)
                    raise
                shutil.rmtree(work, ignore_errors=True)
    return results


async def _in_child(
    args: argparse.Namespace, model_url: str, database: str, database_url: str | None, size: int, repeats: int
) -> list[Figures]:
    """One database and size run by `python -m bench.concurrency --child FILE`, its figures read back."""
    with tempfile.TemporaryDirectory(prefix="ragbot-bench-figures-") as folder:
        out = Path(folder) / "figures.pickle"
        # The same options, these ones last (argparse keeps the last of each).
        overrides = ["--child", str(out), "--model-url", model_url, "--database", database]
        overrides += ["--conversations", str(size), "--repeats", str(repeats)]
        overrides += ["--database-url", database_url] if database_url else []
        child = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.concurrency", *args.argv, *overrides)
        if await child.wait() != 0:
            raise SystemExit(f"the run of {size} conversations on {database} failed (exit {child.returncode})")
        with out.open("rb") as handle:
            figures: list[Figures] = pickle.load(handle)
    return figures


async def _child(args: argparse.Namespace) -> None:
    """One database and size: a fresh data dir (kept when the run fails), every chosen scenario, figures pickled."""
    fake = ModelProcess(args.model_url, args.tokens_per_second)
    plan = Plan(args.conversations[0], args.repeats[0], args.ingestion_max_bursts or None)
    work = Path(tempfile.mkdtemp(prefix="ragbot-bench-concurrency-"))
    try:
        results = await _scenarios(args, fake, args.database_url, args.database, plan, work)
    except BaseException:
        print(f"kept {work} (serve.log, data) for a look", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    with args.child.open("wb") as handle:
        pickle.dump(results, handle)


async def _scenarios(
    args: argparse.Namespace, fake: ModelProcess, database_url: str | None, database: str, plan: Plan, work: Path
) -> list[Figures]:
    """Every chosen scenario on one fresh data dir and database."""
    results = []
    suffix = f" · {database}" + (" + ingestion" if args.with_ingestion else "")
    (work / "data").mkdir(mode=0o700)
    values = _values(args, plan.conversations, work / "data", fake.base_url, database_url)
    handler = TallyHandler()
    logging.getLogger().addHandler(handler)
    try:
        # Only these values, as the serve subprocess gets them: no .env, no other variables.
        async with build_services(Settings.model_validate(values)) as services:
            kb = await services.knowledge.create(KB)
            source = SourceFile(DOCUMENT.encode(), source_uri=DOCUMENT_NAME, filename=DOCUMENT_NAME)
            await services.ingestor.ingest(kb, source)
            if args.with_ingestion:
                await services.knowledge.create(ARCHIVE_KB)
            if "a" in args.scenarios:
                print(f"(a) {plan.conversations} conversations through the manager{suffix}", flush=True)
                background = (
                    InProcessIngestion(services, archive_document(args.ingestion_chunks, "a"), "archive-a.md", handler)
                    if args.with_ingestion
                    else None
                )
                scenario = ManagerScenario(services, handler)
                results += await bursts(f"(a) manager{suffix}", scenario, fake, plan, background)
    finally:
        logging.getLogger().removeHandler(handler)
    # Only these values for `ragbot serve` too: none of this shell's settings, no chat platform but ours.
    env = serve_env(values)
    if "b" in args.scenarios:
        print(f"(b) {plan.conversations} SSE clients of `ragbot serve`{suffix}", flush=True)
        background = (
            CliIngestion(env, work, archive_document(args.ingestion_chunks, "b"), "archive-b.md")
            if args.with_ingestion
            else None
        )
        results += await web_run(f"(b) web chat SSE{suffix}", env, fake, plan, work, background)
    if "t" in args.scenarios or "s" in args.scenarios:
        results += await _platforms(args, values, plan, work)
    return results


async def _platforms(args: argparse.Namespace, values: dict[str, str], plan: Plan, work: Path) -> list[Figures]:
    """(t) and (s), with the fake model in this process as they were written for."""
    results = []
    sized = argparse.Namespace(**{**vars(args), "conversations": plan.conversations, "repeats": plan.repeats})
    async with FakeOpenAI() as local:
        local.first_token_delay = MODEL_TTFT
        local.tokens_per_second = args.tokens_per_second
        local.reply_for = reply_for
        env = serve_env({**values, "CHAT_MODEL_BASE_URL": local.base_url})
        if "t" in args.scenarios:
            results += await telegram_run(env, local, sized, work)
        if "s" in args.scenarios:
            results += await slack_run(env, local, sized, work)
    return results


def _report(args: argparse.Namespace, results: list[Figures]) -> None:
    sizes = ", ".join(str(size) for size in args.conversations)
    print(
        f"\ncommit {commit()} · {machine()} · {sizes} conversations at once · {args.database} · repeats "
        f"{', '.join(map(str, args.repeats))} · fake model {args.tokens_per_second:g} deltas/s, TTFT "
        f"{MODEL_TTFT * 1000:.0f} ms, {ANSWER_WORDS} deltas per answer\n"
    )
    print_summary(results)
    print()
    # One table per kind of figures: the Telegram and Slack scenarios' have rows of their own.
    print_tables(results)


def _report_instances(args: argparse.Namespace, results: list[Figures]) -> None:
    memory = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    print(
        f"\ncommit {commit()} · {machine()}, {int(memory.split()[1]) / 1024**2:.1f} GiB RAM · "
        f"{', '.join(map(str, args.conversations))} conversations at once · instances "
        f"{', '.join(map(str, args.instances))} (the same processes; the others out of haproxy) · rounds "
        f"{', '.join(map(str, args.repeats))} · PostgreSQL, 3 Weaviate nodes (factor 3, QUORUM) · fake model "
        f"{args.tokens_per_second:g} deltas/s, TTFT {MODEL_TTFT * 1000:.0f} ms, {ANSWER_WORDS} deltas per answer\n"
    )
    print_instances(results)


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    """Run the scenarios and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=(*DATABASES, "both"), default="both")
    parser.add_argument("--conversations", type=_numbers, default=[200], help="sizes, comma-separated: 200,1000")
    parser.add_argument("--repeats", type=_numbers, default=[3], help="bursts per size: one number, or one per size")
    parser.add_argument("--tokens-per-second", type=float, default=50.0)
    parser.add_argument("--turn-limit", type=int, default=0, help="CHAT_MAX_CONCURRENT_TURNS etc. (conversations + 8)")
    parser.add_argument("--scenarios", default="ab", help="any of a, b, t (Telegram) and s (Slack), e.g. ab or s")
    parser.add_argument(
        "--instances", type=_numbers, default=[], help="web chat on N instances behind haproxy, e.g. 1,2 (issue 21)"
    )
    parser.add_argument("--with-ingestion", action="store_true", help="a large ingestion beside the bursts")
    parser.add_argument("--ingestion-chunks", type=int, default=60_000)
    parser.add_argument("--ingestion-embedder", choices=("fake", "local"), default="fake")
    parser.add_argument(
        "--ingestion-max-bursts", type=int, default=0, help="bursts beside the ingestion at most (0: until it ends)"
    )
    parser.add_argument("--groups", type=int, default=20, help="(t) supergroups the group half is spread over")
    parser.add_argument(
        "--group-layout",
        choices=("topics", "mentions"),
        default="topics",
        help="(t) each group question in a forum topic of its own, or a plain mention (its own reply chain)",
    )
    parser.add_argument("--bot-per-second", type=int, default=30, help="(t) the fake Bot API's limit per bot")
    parser.add_argument("--channels", type=int, default=20, help="(s) Slack channels the threads are spread over")
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--weaviate-binary", type=Path, default=ROOT / "bin" / "weaviate-server")
    # A run of one database and size, started by the bench itself (_in_child).
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")
    if len(args.repeats) == 1:
        args.repeats = args.repeats * len(args.conversations)
    if len(args.repeats) != len(args.conversations):
        parser.error("--repeats: one number, or one per --conversations size")
    if args.instances and args.with_ingestion:
        parser.error("--instances runs the web chat alone: no --with-ingestion")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    if args.instances:
        _report_instances(args, asyncio.run(_run_instances(args)))
        return
    if args.child:
        asyncio.run(_child(args))
        return
    _report(args, asyncio.run(_run(args)))


if __name__ == "__main__":
    main()
