"""The `ragbot` command: serve, doctor, weaviate, and the admin, ask and chat commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.chat.turn_log import TurnIdFilter
from bot.cli.args import build_parser
from bot.errors import StartupError, UserFacingError
from storage.errors import IndexUnavailable

# Each command imports what it runs, inside the function that runs it: `ragbot --help` answers without
# loading the service, and `ragbot ask` does not load the web server, the adapters, doctor or eval.
if TYPE_CHECKING:
    from aiohttp import web

    from bot.app.services import Services
    from bot.app.settings import Settings
    from bot.chat.manager import ChatPolicy

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
    from bot.chat.limits import RateLimit
    from bot.chat.manager import ChatPolicy

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
    from bot.app.settings import is_loopback

    if not is_loopback(settings.RAGBOT_HOST) and settings.WEB_ACCESS_TOKEN is None:
        raise StartupError(
            "RAGBOT_HOST",
            f"{settings.RAGBOT_HOST} is reachable from the network and no WEB_ACCESS_TOKEN is set",
            "set WEB_ACCESS_TOKEN (people open /?access=TOKEN once), or serve on 127.0.0.1 behind your proxy",
        )


async def _start_site(app: web.Application, host: str, port: int) -> web.AppRunner:
    from aiohttp import web

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
    from bot.app.platforms import load_adapters
    from bot.app.server import create_app
    from bot.app.services import build_services
    from bot.app.settings import is_loopback
    from bot.chat.manager import ConversationManager
    from bot.chat_metrics import ChatMetrics

    check_exposure(settings)
    async with build_services(settings, serving=True) as services:
        services.ensure_vectors_match()
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
    from storage.weaviate.server import WeaviateServer

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
    from bot.cli import doctor

    findings = await doctor.diagnose(settings)
    print(doctor.render(findings))
    return doctor.exit_code(findings)


async def run_stats(services: Services, days: int) -> int:
    """Print `ragbot stats` for the last `days` days."""
    from datetime import UTC, datetime, timedelta

    from bot.cli.stats import compute_stats, render_stats

    if days < 1:
        raise UserFacingError("--days must be 1 or more.")
    since = datetime.now(UTC) - timedelta(days=days)
    print(render_stats(compute_stats(await services.conversations.messages_since(since)), days))
    return 0


# The commands that embed or search: they stop while the index holds another embedding model's vectors.
_EMBEDDING_COMMANDS = frozenset({"ask", "chat", "eval", "ingest", "faq"})


async def run_admin(settings: Settings, args: argparse.Namespace) -> int:
    """The knowledge-base, ingestion, FAQ, document and job commands, on running services."""
    from bot.app.services import build_services

    async with build_services(settings) as services:
        if args.command in _EMBEDDING_COMMANDS:
            services.ensure_vectors_match()
        if args.command == "ask":
            from bot.cli import ask as cli_answer

            return await cli_answer.run_ask(
                services, args.question, args.kb, show_stages=args.show_stages, document_ids=args.doc
            )
        if args.command == "chat":
            from bot.cli import chat as cli_chat

            return await cli_chat.run_chat(services, args.kb, show_stages=args.show_stages)
        if args.command == "eval":
            from bot.cli import evaluate as eval_cli

            return await eval_cli.run_eval(services, args.folders)
        if args.command == "stats":
            return await run_stats(services, args.days)
        if args.command == "reindex":
            from bot.cli.reindex import run_reindex

            return await run_reindex(services, args.kb)
        from bot.cli import knowledge as cli_knowledge

        if args.command == "kb":
            return await cli_knowledge.run_kb(services, args)
        if args.command == "ingest":
            return await cli_knowledge.run_ingest(services, args.kb, args.sources)
        if args.command == "faq":
            return await cli_knowledge.run_ingest(services, args.kb, [str(args.file)], kind_for_files="faq")
        if args.command == "docs":
            return await cli_knowledge.run_docs(services, args)
        return await cli_knowledge.run_jobs(services, args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    from pydantic import ValidationError

    from bot.app.settings import Settings, describe_validation_error

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
            from bot.cli.knowledge import print_template

            return print_template(args.format)
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
