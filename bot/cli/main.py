"""The `ragbot` command: reads the settings, configures logging, and runs the command's own module."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.chat.turn_log import TurnIdFilter
from bot.cli.args import build_parser
from bot.cli.log_format import formatter
from bot.errors import StartupError, UserFacingError
from storage.errors import IndexUnavailable

# Each command imports what it runs, inside the function that runs it: `ragbot --help` answers without
# loading the service, and `ragbot ask` does not load the web server, the adapters, doctor or eval.
if TYPE_CHECKING:
    from bot.app.settings import Settings

log = logging.getLogger("ragbot")

EXIT_CONFIG = 2


def _configure_logging(level: str, log_format: str = "text") -> None:
    ours = logging.StreamHandler(sys.stderr)
    ours.setFormatter(formatter(log_format))
    logging.basicConfig(level=level, handlers=[ours])  # a no-op where logging is set up already (a test run)
    for handler in logging.getLogger().handlers:
        handler.addFilter(TurnIdFilter())
    for noisy in ("httpx", "httpcore", "weaviate-client", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # weaviate-client sets its logger's level from this variable when it is first imported, after this runs: its
    # INFO lines (a batch's retries while the server stops) would otherwise reach a command's one-line error.
    os.environ.setdefault("WEAVIATE_LOG_LEVEL", "WARNING")
    logging.getLogger("jieba").setLevel(logging.WARNING)


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

            return await eval_cli.run_eval(services, args.folders, declines_only=args.declines_only)
        if args.command == "stats":
            from bot.cli.stats import run_stats

            return await run_stats(services, args.days, args.top)
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
    _configure_logging("ERROR" if quiet else settings.LOG_LEVEL, settings.LOG_FORMAT)
    try:
        if args.command == "serve":
            from bot.cli.serve import serve

            asyncio.run(serve(settings))
        elif args.command == "doctor":
            from bot.cli.doctor import run_doctor

            return asyncio.run(run_doctor(settings))
        elif args.command == "weaviate":
            from bot.cli.weaviate import run_weaviate

            asyncio.run(run_weaviate(settings))
        elif args.command == "backup":
            from bot.cli.backup import run_backup

            return asyncio.run(run_backup(settings, args.dir, force=args.force))
        elif args.command == "restore":
            from bot.cli.restore import run_restore

            return asyncio.run(run_restore(settings, args.dir))
        elif args.command == "secrets":
            from bot.cli.secrets import run_secrets

            return asyncio.run(run_secrets(settings, args))
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
