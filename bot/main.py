"""The `ragbot` command: serve, doctor, weaviate, and the admin, ask and chat commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from pydantic import ValidationError

from bot import cli_answer, cli_chat, cli_knowledge, doctor, eval_cli
from bot.adapters import load_adapters
from bot.chat_metrics import ChatMetrics
from bot.conversation import ChatPolicy, ConversationManager
from bot.errors import StartupError, UserFacingError
from bot.limits import RateLimit
from bot.server import create_app
from bot.services import Services, build_services
from bot.settings import Settings, describe_validation_error, is_loopback
from bot.stats import compute_stats, render_stats
from bot.turn_log import TurnIdFilter
from storage.errors import IndexUnavailable
from storage.weaviate.server import WeaviateServer

log = logging.getLogger("ragbot")

EXIT_CONFIG = 2


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s turn=%(turn)s %(message)s", stream=sys.stderr
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(TurnIdFilter())
    for noisy in ("httpx", "httpcore", "weaviate-client", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("jieba").setLevel(logging.WARNING)


async def _wait_for_stop_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


def chat_policy(settings: Settings) -> ChatPolicy:
    """Who may do what where, from the settings."""
    return ChatPolicy(
        default_kbs=settings.default_knowledge_bases(),
        allowed_kbs={"web": settings.web_knowledge_bases()},
        admins={"telegram": settings.telegram_admins(), "slack": settings.slack_admins()},
        group_answer_mode=settings.CHAT_ANSWER_MODE,
        rate_limit=RateLimit(count=settings.CHAT_RATE_LIMIT, window=60.0),
        max_turns=settings.CHAT_MAX_CONCURRENT_TURNS,
    )


def check_exposure(settings: Settings) -> None:
    """Refuse to serve the chat to a network without an access token."""
    if not is_loopback(settings.RAGBOT_HOST) and settings.WEB_ACCESS_TOKEN is None:
        raise StartupError(
            "RAGBOT_HOST",
            f"{settings.RAGBOT_HOST} is reachable from the network and no WEB_ACCESS_TOKEN is set",
            "set WEB_ACCESS_TOKEN (people open /?access=TOKEN once), or serve on 127.0.0.1 behind your proxy",
        )


async def _start_site(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


async def serve(settings: Settings) -> None:
    """Start every part and the chat adapters, serve HTTP until SIGINT/SIGTERM, then stop in reverse order."""
    check_exposure(settings)
    async with build_services(settings, serving=True) as services:
        chat_metrics = ChatMetrics()
        manager = ConversationManager(services, chat_policy(settings), metrics=chat_metrics)
        adapters = load_adapters(manager, settings)
        public = not is_loopback(settings.RAGBOT_HOST)
        app = create_app(services, chat_metrics, public=public)
        for adapter in adapters:
            adapter.mount(app)
        runners: list[web.AppRunner] = []
        # Jobs queued or interrupted before this start are picked up here.
        await services.jobs.start()
        try:
            runners.append(await _start_site(app, settings.RAGBOT_HOST, settings.RAGBOT_PORT))
            if public:
                internal = create_app(services, chat_metrics)
                runners.append(await _start_site(internal, "127.0.0.1", settings.internal_port()))
                log.info("serve=internal url=http://127.0.0.1:%s/metrics", settings.internal_port())
            for adapter in adapters:
                await adapter.start()
            log.info("serve=listening url=http://%s:%s/ (web chat)", settings.RAGBOT_HOST, settings.RAGBOT_PORT)
            await _wait_for_stop_signal()
            log.info("serve=stopping")
        finally:
            for adapter in reversed(adapters):
                await adapter.stop()
            for runner in reversed(runners):
                await runner.cleanup()
            await services.jobs.stop()


async def run_weaviate(settings: Settings) -> None:
    """Run the local Weaviate in the foreground until interrupted."""
    server = WeaviateServer(settings.weaviate_server(), log_to_terminal=True)
    endpoint = await server.start()
    print(f"weaviate ready: http {endpoint.http_url}  grpc {endpoint.grpc_host}:{endpoint.grpc_port}", flush=True)
    try:
        stop = asyncio.create_task(_wait_for_stop_signal())
        exited = asyncio.create_task(server.wait())
        await asyncio.wait({stop, exited}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
    finally:
        await server.stop()


async def run_doctor(settings: Settings) -> int:
    """Print every part's state; non-zero when one is broken."""
    findings = await doctor.diagnose(settings)
    print(doctor.render(findings))
    return doctor.exit_code(findings)


async def run_stats(services: Services, days: int) -> int:
    """Print `ragbot stats` for the last `days` days."""
    if days < 1:
        raise UserFacingError("--days must be 1 or more.")
    since = datetime.now(UTC) - timedelta(days=days)
    print(render_stats(compute_stats(await services.conversations.messages_since(since)), days))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragbot", description="Answers from your documents and FAQs in chat.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the service (HTTP, adapters, jobs)")
    commands.add_parser("doctor", help="check every part and say how to fix what is broken")
    commands.add_parser("weaviate", help="run the local Weaviate server in the foreground")
    cli_knowledge.add_commands(commands)
    ask = commands.add_parser("ask", help="answer one question from knowledge bases, streamed, with sources")
    ask.add_argument("question")
    ask.add_argument("--kb", action="append", required=True, help="a knowledge base to search (repeatable)")
    ask.add_argument("--show-stages", action="store_true", help="print each stage's time and counts")
    ask.add_argument(
        "--doc",
        action="append",
        default=[],
        metavar="ID",
        help="a document (id from `ragbot docs list`) the question is about; small ones are read whole",
    )
    chat = commands.add_parser(
        "chat", help="a conversation with history: each line read is a question (/new starts over, /quit ends)"
    )
    chat.add_argument("--kb", action="append", required=True, help="a knowledge base to search (repeatable)")
    chat.add_argument("--show-stages", action="store_true", help="print each stage's time and counts")
    stats = commands.add_parser(
        "stats", help="questions per day, outcomes, feedback, speed, and what people asked that found nothing"
    )
    stats.add_argument("--days", type=int, default=7, help="how many days back (default 7)")
    evaluate = commands.add_parser("eval", help="measure retrieval and FAQ matching on labelled folders")
    evaluate.add_argument("folders", nargs="+", type=Path, metavar="DIR")
    return parser


async def run_admin(settings: Settings, args: argparse.Namespace) -> int:
    """The knowledge-base, ingestion, FAQ, document and job commands, on running services."""
    async with build_services(settings) as services:
        if args.command == "kb":
            return await cli_knowledge.run_kb(services, args)
        if args.command == "ingest":
            return await cli_knowledge.run_ingest(services, args.kb, args.sources)
        if args.command == "faq":
            return await cli_knowledge.run_ingest(services, args.kb, [str(args.file)], kind_for_files="faq")
        if args.command == "docs":
            return await cli_knowledge.run_docs(services, args)
        if args.command == "ask":
            return await cli_answer.run_ask(
                services, args.question, args.kb, show_stages=args.show_stages, document_ids=args.doc
            )
        if args.command == "chat":
            return await cli_chat.run_chat(services, args.kb, show_stages=args.show_stages)
        if args.command == "eval":
            return await eval_cli.run_eval(services, args.folders)
        if args.command == "stats":
            return await run_stats(services, args.days)
        return await cli_knowledge.run_jobs(services, args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        for line in describe_validation_error(exc):
            print(f"ragbot: {line}", file=sys.stderr)
        return EXIT_CONFIG
    # Admin commands talk to a person through their own output; their logs would only repeat it.
    quiet = args.command not in ("serve", "weaviate") and settings.LOG_LEVEL != "DEBUG"
    _configure_logging("ERROR" if quiet else settings.LOG_LEVEL)
    try:
        if args.command == "serve":
            asyncio.run(serve(settings))
        elif args.command == "doctor":
            return asyncio.run(run_doctor(settings))
        elif args.command == "weaviate":
            asyncio.run(run_weaviate(settings))
        elif args.command == "faq" and args.faq_command == "template":
            return cli_knowledge.print_template(args.format)
        else:
            return asyncio.run(run_admin(settings, args))
    except UserFacingError as exc:
        print(f"ragbot: {exc.user_message}", file=sys.stderr)
        return 1
    except StartupError as exc:
        print(f"ragbot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except IndexUnavailable as exc:
        print(f"ragbot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
