"""200 conversations at once: lag from model token to visible text, exact finals, memory (issue 8).

Each conversation asks its own numbered question of a one-document knowledge base, so `rag_stream` runs for real
(the real Weaviate, ONNX embedder, local reranker and SQLite store); the fake OpenAI-compatible model, run in this
process, answers every ticket with its own known text of 120 words (one content delta each, 132 cl100k tokens)
at 50 deltas/s after a 200 ms time to first token, and timestamps every delta as it writes it. Per scenario: a
warm-up turn, one conversation alone, then --repeats bursts of --conversations started at once (merged).

(a) ConversationManager.handle() into recording targets whose streams are bot.reply.stream.EditingReplyStream with a
    1 s minimum edit interval (first flush after 0.3 s, the ReplyLimits default): every send and edit recorded
    (bench/concurrency_manager.py).
(b) `ragbot serve` in a subprocess on the same data, and 200 aiohttp clients with their own cookie jars, each
    posting its question to the web chat and reading the server-sent events (bench/concurrency_web.py).
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
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.bursts import bursts
from bench.common import ROOT, commit, machine
from bench.concurrency_manager import ManagerScenario
from bench.concurrency_slack import slack_run
from bench.concurrency_telegram import telegram_run
from bench.concurrency_web import web_run
from bench.conversations import ANSWER_WORDS, DOCUMENT, DOCUMENT_NAME, KB, MODEL_TTFT, reply_for
from bench.figures import Figures
from bench.report import print_tables
from bench.serving import serve_env
from bot.app.services import build_services
from bot.app.settings import Settings
from fakes.openai_api import FakeOpenAI
from rag.ingest.documents import SourceFile


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
        fake.reply_for = reply_for
        values = _values(args, work / "data", fake)
        # Only these values, as the serve subprocess gets them: no .env, no other variables.
        async with build_services(Settings.model_validate(values)) as services:
            kb = await services.knowledge.create(KB)
            source = SourceFile(DOCUMENT.encode(), source_uri=DOCUMENT_NAME, filename=DOCUMENT_NAME)
            await services.ingestor.ingest(kb, source)
            if "a" in args.scenarios:
                print(f"(a) {args.conversations} conversations through the manager", flush=True)
                results += await bursts("(a) manager", ManagerScenario(services), fake, args)
        # Only these values for `ragbot serve` too: none of this shell's settings, no chat platform but ours.
        env = serve_env(values)
        if "b" in args.scenarios:
            print(f"(b) {args.conversations} SSE clients of `ragbot serve`", flush=True)
            results += await web_run(env, fake, args, work)
        if "t" in args.scenarios:
            results += await telegram_run(env, fake, args, work)
        if "s" in args.scenarios:
            results += await slack_run(env, fake, args, work)
    return results


def _report(args: argparse.Namespace, results: list[Figures]) -> None:
    print(
        f"\ncommit {commit()} · {machine()} · {args.conversations} conversations at once · fake model "
        f"{args.tokens_per_second:g} deltas/s, TTFT {MODEL_TTFT * 1000:.0f} ms, {ANSWER_WORDS} deltas per answer\n"
    )
    # One table per kind of figures: the Telegram and Slack scenarios' have rows of their own.
    print_tables(results)


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
