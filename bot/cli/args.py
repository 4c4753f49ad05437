"""The `ragbot` command line's grammar: every command and option, importing nothing but argparse.

Kept apart from the code that runs the commands so that `ragbot --help` or a mistyped option answers at once,
without loading the service (the Weaviate client, openai, jieba and the file extractors take seconds to import).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

JOB_STATUSES = ("queued", "running", "succeeded", "failed")
JOBS_PAGE = 50
"""Jobs listed per page by `ragbot jobs` unless --limit says otherwise."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every `ragbot` command."""
    parser = argparse.ArgumentParser(prog="ragbot", description="Answers from your documents and FAQs in chat.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the service (HTTP, adapters, jobs)")
    commands.add_parser("doctor", help="check every part and say how to fix what is broken")
    commands.add_parser("weaviate", help="run the local Weaviate server in the foreground")
    _add_knowledge_commands(commands)
    secrets = commands.add_parser("secrets", help="the key sealing the Slack tokens stored in the database")
    secrets.add_subparsers(dest="secrets_command", required=True).add_parser(
        "rotate", help="a new key; every stored token sealed with it, then the old key dropped"
    )
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
    stats.add_argument(
        "--top", type=int, default=10, help="how many groups of questions that went wrong to show of each kind"
    )
    _add_backup_commands(commands)
    evaluate = commands.add_parser(
        "eval", help="measure whole conversations, retrieval, FAQ matching, rewriting and declining on labelled folders"
    )
    evaluate.add_argument("folders", nargs="+", type=Path, metavar="DIR")
    evaluate.add_argument(
        "--declines-only",
        action="store_true",
        help="multi-turn sets (tasks.jsonl): skip the retrieval rows, only count how often the answer declines",
    )
    return parser


_INDEX_FROM_SQL = (
    "The search index is not copied: the database holds every chunk, FAQ and cached vector, and `ragbot restore` "
    "rebuilds the index from it, so the two agree by construction."
)


def _add_backup_commands(commands: Any) -> None:
    """Register backup and restore on the top-level sub-parser."""
    backup = commands.add_parser(
        "backup",
        help="copy the database into DIR, with a manifest of checksums (safe while `ragbot serve` runs)",
        description="Copy the database (SQLite's online backup, or pg_dump for PostgreSQL) into DIR, then write "
        "DIR/manifest.json last: a directory without it is an unfinished backup. Safe while `ragbot serve` runs; "
        f"needs no Weaviate. {_INDEX_FROM_SQL} The key sealing Slack tokens (RAGBOT_SECRETS_KEY_FILE) is not in "
        "it: keep it apart.",
    )
    backup.add_argument("dir", type=_absolute, metavar="DIR", help="a new or empty directory")
    backup.add_argument(
        "--force",
        action="store_true",
        help="replace the backup already in DIR (it is kept until the new one is complete)",
    )
    restore = commands.add_parser(
        "restore",
        help="replace the database with a backup, migrate it, and rebuild every search index from it",
        description="Check DIR's manifest (present, checksums, a schema this ragbot knows, the same kind of store), "
        "then replace the database with the backup's, migrate it to this version's schema, and rebuild every "
        f"knowledge base's search index from it. {_INDEX_FROM_SQL} Stop `ragbot serve` first: restore refuses while "
        "a ragbot runs on this store. A refused restore changes nothing.",
    )
    restore.add_argument("dir", type=_absolute, metavar="DIR", help="a directory `ragbot backup` wrote")


def _add_knowledge_commands(commands: Any) -> None:
    """Register kb, ingest, faq, docs and jobs on the top-level sub-parser."""
    kb = commands.add_parser(
        "kb", help="create, list, inspect, rename, delete or share knowledge bases"
    ).add_subparsers(dest="kb_command", required=True)
    create = kb.add_parser("create", help="create a knowledge base")
    create.add_argument("name")
    create.add_argument("--description", default="")
    create.add_argument("--mode", choices=("general", "parent_child"))
    create.add_argument("--parent-mode", choices=("paragraph", "full_doc"))
    create.add_argument(
        "--splitter",
        choices=("structure", "recursive", "fixed", "markdown", "token"),
        help="how chunks are cut (default structure: a chunk per heading section and page, tables by rows)",
    )
    create.add_argument("--max-tokens", type=int, help="chunk size (parent size in parent-child mode), 50..2000")
    create.add_argument("--overlap", type=int, help="overlap in tokens, up to half of --max-tokens")
    create.add_argument("--separator", help=r"separator for --splitter fixed, e.g. '\n\n' or '###'")
    create.add_argument("--child-max-tokens", type=int)
    create.add_argument("--child-overlap", type=int)
    create.add_argument("--rule", type=Path, help="a JSON chunking rule (fields as in `kb info`)")
    kb.add_parser("list", help="list knowledge bases")
    info = kb.add_parser("info", help="a knowledge base's rule and counts")
    info.add_argument("name")
    rename = kb.add_parser("rename", help="rename a knowledge base")
    rename.add_argument("name")
    rename.add_argument("new_name")
    delete = kb.add_parser("delete", help="delete a knowledge base and everything in it")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="confirm the deletion")
    for verb, summary in (("grant", "let a tenant read a knowledge base"), ("revoke", "take a grant back")):
        share = kb.add_parser(verb, help=summary)
        share.add_argument("name", help="the knowledge base (a workspace's own: slack:T012AB3CD/NAME)")
        share.add_argument("tenant", help="who: slack:TEAM_ID (the workspace's team id, as `kb list` shows owners)")

    ingest = commands.add_parser("ingest", help="ingest files, folders (recursively) and URLs into a knowledge base")
    ingest.add_argument("sources", nargs="+", metavar="PATH_OR_URL")
    ingest.add_argument("--kb", required=True)
    reindex = commands.add_parser("reindex", help="rebuild a knowledge base's search index from SQL (after upgrades)")
    reindex.add_argument("--kb", required=True)

    faq = commands.add_parser("faq", help="import FAQ sheets").add_subparsers(dest="faq_command", required=True)
    faq_import = faq.add_parser("import", help="import an FAQ sheet (.csv, .xlsx, .json)")
    faq_import.add_argument("file", type=Path)
    faq_import.add_argument("--kb", required=True)
    template = faq.add_parser("template", help="print the FAQ sheet template")
    template.add_argument("--format", choices=("csv", "json"), default="csv")

    docs = commands.add_parser("docs", help="list or delete documents").add_subparsers(
        dest="docs_command", required=True
    )
    docs_list = docs.add_parser("list", help="documents of a knowledge base")
    docs_list.add_argument("--kb", required=True)
    docs_delete = docs.add_parser("delete", help="delete a document")
    docs_delete.add_argument("document_id")
    docs_delete.add_argument("--kb", required=True)

    jobs = commands.add_parser(
        "jobs", help="ingestion jobs, newest first, a page at a time; --schedules: the scheduled work instead"
    )
    jobs.add_argument("--kb")
    jobs.add_argument(
        "--schedules",
        action="store_true",
        help="list the schedules (URL re-syncs, retention) with their period, last and next run, and last outcome",
    )
    jobs.add_argument("--status", choices=JOB_STATUSES, action="append", help="only jobs in this state (repeatable)")
    jobs.add_argument("--limit", type=_positive, default=JOBS_PAGE, help=f"jobs per page (default {JOBS_PAGE})")
    pages = jobs.add_mutually_exclusive_group()
    pages.add_argument("--page", type=_positive, default=1, help="which page, counted from 1")
    pages.add_argument("--all", action="store_true", help="every job, no paging")


def _absolute(text: str) -> Path:
    """A path as given, made absolute against the working directory (what the command's messages name)."""
    return Path(text).absolute()


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value
