"""Admin commands in the terminal: knowledge bases, ingestion, FAQs, documents and jobs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bot.ingestion import describe_result
from bot.services import Services
from rag.ingest.faq_import import template_path
from storage.records import JobRecord


def add_commands(commands: Any) -> None:
    """Register kb, ingest, faq, docs and jobs on the top-level sub-parser."""
    kb = commands.add_parser("kb", help="create, list, inspect, rename or delete knowledge bases").add_subparsers(
        dest="kb_command", required=True
    )
    create = kb.add_parser("create", help="create a knowledge base")
    create.add_argument("name")
    create.add_argument("--description", default="")
    create.add_argument("--mode", choices=("general", "parent_child"))
    create.add_argument("--parent-mode", choices=("paragraph", "full_doc"))
    create.add_argument("--splitter", choices=("recursive", "fixed", "markdown", "token"), help="how chunks are cut")
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

    ingest = commands.add_parser("ingest", help="ingest files, folders (recursively) and URLs into a knowledge base")
    ingest.add_argument("sources", nargs="+", metavar="PATH_OR_URL")
    ingest.add_argument("--kb", required=True)

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

    jobs = commands.add_parser("jobs", help="recent ingestion jobs")
    jobs.add_argument("--kb")


def _rule_from_args(args: argparse.Namespace) -> dict[str, Any]:
    rule: dict[str, Any] = json.loads(args.rule.read_text()) if args.rule else {}
    if args.mode:
        rule["mode"] = args.mode
    if args.parent_mode:
        rule["parent_mode"] = args.parent_mode
    segment = dict(rule.get("segment") or {})
    for key, value in (("mode", args.splitter), ("max_tokens", args.max_tokens), ("overlap", args.overlap)):
        if value is not None:
            segment[key] = value
    if args.separator is not None:
        segment["separator"] = args.separator
    if segment:
        rule["segment"] = segment
    child = dict(rule.get("child") or {})
    for key, value in (("max_tokens", args.child_max_tokens), ("overlap", args.child_overlap)):
        if value is not None:
            child[key] = value
    if child:
        rule["child"] = child
    return rule


def print_template(fmt: str, out: TextIO = sys.stdout) -> int:
    """Print the packaged FAQ template."""
    # utf-8-sig: the CSV template carries a BOM so Excel shows Chinese correctly; a terminal must not.
    out.write(template_path("json" if fmt == "json" else "csv").read_text(encoding="utf-8-sig"))
    return 0


async def run_kb(services: Services, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """The `kb` sub-commands."""
    knowledge = services.knowledge
    if args.kb_command == "create":
        kb = await knowledge.create(args.name, _rule_from_args(args), args.description)
        out.write(f"created {kb.name} ({kb.id})\n")
    elif args.kb_command == "list":
        for kb in await knowledge.all():
            counts = (await knowledge.info(kb.name)).counts
            out.write(f"{kb.name}\t{counts['documents']} documents\t{counts['chunks']} chunks\t{counts['faqs']} FAQs\n")
    elif args.kb_command == "info":
        info = await knowledge.info(args.name)
        summary: dict[str, Any] = {"id": info.kb.id, "name": info.kb.name, "description": info.kb.description}
        summary |= {"chunking": info.kb.chunking, **info.counts}
        out.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    elif args.kb_command == "rename":
        kb = await knowledge.rename(args.name, args.new_name)
        out.write(f"renamed to {kb.name}\n")
    elif args.kb_command == "delete":
        if not args.yes:
            out.write(f"this deletes {args.name!r} and everything in it: run again with --yes\n")
            return 1
        await knowledge.delete(args.name)
        out.write(f"deleted {args.name}\n")
    return 0


def collect_sources(items: Sequence[str]) -> list[str]:
    """URLs as given; files as given; folders expanded recursively, hidden entries skipped, sorted."""
    found: list[str] = []
    for item in items:
        if item.startswith(("http://", "https://")):
            found.append(item)
            continue
        path = Path(item)
        if path.is_dir():
            found.extend(
                str(child)
                for child in sorted(path.rglob("*"))
                if child.is_file() and not any(part.startswith(".") for part in child.relative_to(path).parts)
            )
        else:
            found.append(str(path))
    return found


class _ProgressLine:
    """One line per job on a terminal, rewritten in place; one line per stage change elsewhere."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self._stream = stream
        self._total = total
        self._order: dict[str, int] = {}
        self._last: dict[str, str] = {}
        self._tty = stream.isatty()

    def number(self, job_id: str) -> int:
        return self._order.setdefault(job_id, len(self._order) + 1)

    async def __call__(self, job: JobRecord) -> None:
        if job.status in ("succeeded", "failed"):
            return
        bar = ""
        if job.total:
            filled = int(20 * job.done / job.total)
            bar = f" [{'#' * filled}{'.' * (20 - filled)}] {job.done}/{job.total}"
        name = Path(job.source).name or job.source
        line = f"[{self.number(job.id)}/{self._total}] {name}: {job.stage or job.status}{bar}"
        if self._tty:
            self._stream.write("\r\033[K" + line[:200])
        elif self._last.get(job.id) != f"{job.stage}{job.status}":
            self._stream.write(line + "\n")
        self._last[job.id] = f"{job.stage}{job.status}"
        self._stream.flush()

    def finished(self, job: JobRecord) -> None:
        prefix = "\r\033[K" if self._tty else ""
        mark = "ok " if job.status == "succeeded" else "ERR"
        self._stream.write(
            f"{prefix}{mark} [{self.number(job.id)}/{self._total}] {job.source}: {describe_result(job)}\n"
        )


async def run_ingest(
    services: Services, kb_name: str, items: Sequence[str], kind_for_files: str = "file", out: TextIO = sys.stderr
) -> int:
    """Queue a job per source, run them with the worker pool, report each; 1 when any failed."""
    kb = await services.knowledge.find(kb_name)
    sources = collect_sources(items)
    if not sources:
        out.write("nothing to ingest: no files found\n")
        return 1
    display = _ProgressLine(out, len(sources))
    services.jobs.subscribe(display)
    await services.jobs.start()
    try:
        jobs = []
        for source in sources:
            kind = "url" if source.startswith(("http://", "https://")) else kind_for_files
            job = await services.jobs.submit(kb.id, kind, source, requested_by="cli")
            display.number(job.id)
            jobs.append(job)
        failed = 0
        for job in jobs:
            finished = await services.jobs.wait(job.id)
            display.finished(finished)
            failed += finished.status == "failed"
    finally:
        await services.jobs.stop()
    out.write(f"{len(sources) - failed} of {len(sources)} ingested into {kb.name}\n")
    return 1 if failed else 0


async def run_docs(services: Services, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """The `docs` sub-commands."""
    if args.docs_command == "list":
        for document in await services.knowledge.documents(args.kb):
            out.write(f"{document.id}\t{document.title}\t{document.chunk_count} chunks\t{document.source_uri}\n")
    else:
        document = await services.knowledge.delete_document(args.kb, args.document_id)
        out.write(f"deleted {document.title}\n")
    return 0


async def run_jobs(services: Services, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """List recent jobs."""
    kb_id = (await services.knowledge.find(args.kb)).id if args.kb else None
    for job in await services.job_repo.recent(kb_id=kb_id):
        progress = f"{job.stage} {job.done}/{job.total}" if job.status == "running" else describe_result(job)
        out.write(f"{job.id}\t{job.status}\t{job.kind}\t{job.source}\t{progress}\n")
    return 0
