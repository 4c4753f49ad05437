"""Admin commands in the terminal: knowledge bases, ingestion, FAQs, documents and jobs."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bot.cli.args import JOBS_PAGE
from bot.knowledge.bases import qualified
from bot.knowledge.ingestion import describe_result
from bot.knowledge.schedules import FIRING_KINDS, next_run
from bot.knowledge.tenancy import parse_tenant, shown
from bot.words.messages import job_outcome, shown_period
from rag.errors import ExtractionError, UnsupportedType
from rag.ingest.extract import detect_type
from rag.ingest.extractors.detect import IMAGES
from rag.ingest.faq_sheet import is_faq_sheet, template_path
from storage.repos.jobs import UNFINISHED

if TYPE_CHECKING:
    from bot.app.services import Services
    from bot.knowledge.bases import KnowledgeBases
    from bot.knowledge.jobs import JobRunner
    from storage.records import JobRecord, KnowledgeBaseRecord
    from storage.repos.jobs import JobRepo


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
        grants = await knowledge.grants()
        for kb in await knowledge.all():
            counts = (await knowledge.info_of(kb)).counts
            shared = f"\tread by {', '.join(grants[kb.id])}" if kb.id in grants else ""
            out.write(
                f"{qualified(kb)}\t{counts['documents']} documents\t{counts['chunks']} chunks\t{counts['faqs']} FAQs"
                f"\towner {shown(kb.owner)}{shared}\n"
            )
    elif args.kb_command in ("grant", "revoke"):
        return await _share(knowledge, args, out)
    elif args.kb_command == "info":
        info = await knowledge.info(args.name)
        summary: dict[str, Any] = {"id": info.kb.id, "name": info.kb.name, "description": info.kb.description}
        summary |= {"owner": shown(info.kb.owner), "read_by": (await knowledge.grants()).get(info.kb.id, [])}
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


async def _share(knowledge: KnowledgeBases, args: argparse.Namespace, out: TextIO) -> int:
    """`kb grant` / `kb revoke`: what a tenant's chats may read beyond their own."""
    tenant = parse_tenant(args.tenant)
    if args.kb_command == "grant":
        changed = await knowledge.grant(args.name, tenant)
        out.write(f"{shown(tenant)} {'may now read' if changed else 'could already read'} {args.name}\n")
    else:
        changed = await knowledge.revoke(args.name, tenant)
        out.write(f"{shown(tenant)} {'no longer reads' if changed else 'had no grant for'} {args.name}\n")
    return 0


def collect_sources(items: Sequence[str]) -> list[Source]:
    """URLs as given; files as absolute paths; folders expanded recursively, hidden entries skipped, sorted.

    Absolute, because whichever runner ends up running the job (this command, or `ragbot serve` taking
    it over) reads the file from its own working directory. Each source appears once; a file named on
    the command line counts as named even when a folder also holds it.
    """
    found: dict[str, bool] = {}
    for item in items:
        if item.startswith(("http://", "https://")):
            found[item] = True
            continue
        path = Path(item).absolute()
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and not any(part.startswith(".") for part in child.relative_to(path).parts):
                    found.setdefault(str(child), False)
        else:
            found[str(path)] = True
    return [Source(location, named) for location, named in found.items()]


@dataclass(frozen=True, slots=True)
class Source:
    """One thing to ingest, and whether the person named it (a file of a folder was only found)."""

    location: str
    named: bool


def unreadable_kind(path: str, max_bytes: int) -> str | None:
    """Why ragbot does not read the file at `path` when a folder holds it (an image, an archive...), or None.

    Only the kind is judged here: a file too large to read, damaged or empty is left to its job, which
    says so as a failure. Files over `max_bytes` are not read, for the same reason.
    """
    file = Path(path)
    try:
        if file.stat().st_size > max_bytes:
            return None
        kind = detect_type(file.read_bytes(), filename=file.name)
    except UnsupportedType as exc:
        return str(exc)
    except (OSError, ExtractionError):
        return None
    if kind in IMAGES:
        # A docs folder's images are mostly screenshots and diagrams: their words out of context would only crowd
        # the search. A scan is read when it is named, or uploaded in a chat.
        return "an image in a folder is taken for an illustration: name it to read its text with OCR"
    return None


class _ProgressLine:
    """One line per source on a terminal, rewritten in place; one line per stage change elsewhere.

    Sources are numbered by their place in the command line, so [n/total] never passes the total
    whatever else the runner hears about.
    """

    def __init__(self, stream: TextIO, sources: Sequence[str]) -> None:
        self._stream = stream
        self._numbers = {source: number for number, source in enumerate(sources, start=1)}
        self._total = len(sources)
        self._last: dict[str, str] = {}
        self._tty = stream.isatty()

    async def __call__(self, job: JobRecord) -> None:
        number = self._numbers.get(job.source)
        if number is None or job.status in ("succeeded", "failed"):
            return
        bar = ""
        if job.total:
            filled = int(20 * job.done / job.total)
            bar = f" [{'#' * filled}{'.' * (20 - filled)}] {job.done}/{job.total}"
        name = Path(job.source).name or job.source
        line = f"[{number}/{self._total}] {name}: {job.stage or job.status}{bar}"
        if self._tty:
            self._stream.write("\r\033[K" + line[:200])
        elif self._last.get(job.id) != f"{job.stage}{job.status}":
            self._stream.write(line + "\n")
        self._last[job.id] = f"{job.stage}{job.status}"
        self._stream.flush()

    def finished(self, job: JobRecord, note: str = "") -> None:
        prefix = "\r\033[K" if self._tty else ""
        mark = "ok " if job.status == "succeeded" else "ERR"
        number = self._numbers.get(job.source, 0)
        self._stream.write(f"{prefix}{mark} [{number}/{self._total}] {job.source}: {describe_result(job)}{note}\n")


async def run_ingest(
    services: Services, kb_name: str, items: Sequence[str], kind_for_files: str = "file", out: TextIO = sys.stderr
) -> int:
    """Queue a job per source, run them with the worker pool, report each; 1 when any failed."""
    kb = await services.knowledge.find(kb_name)
    found = collect_sources(items)
    sources = _readable(found, services.settings.extract_limits().max_bytes, out)
    if not sources:
        out.write(f"nothing to ingest: {'no file ragbot can read' if found else 'no files found'}\n")
        return 1
    return await ingest_sources(services.jobs, services.job_repo, kb, sources, kind_for_files=kind_for_files, out=out)


def _readable(found: Sequence[Source], max_bytes: int, out: TextIO) -> list[str]:
    """The sources to ingest: every named one, and each file found in a folder that is of a kind ragbot reads.

    A folder of documents often holds a screenshot or an archive too; skipping those (one line each) keeps
    one unreadable file from failing the whole folder, while a file the person named fails loudly.
    """
    kept: list[str] = []
    for source in found:
        reason = None if source.named else unreadable_kind(source.location, max_bytes)
        if reason is None:
            kept.append(source.location)
        else:
            out.write(f"skipped {source.location}: {reason}\n")
    return kept


async def ingest_sources(
    runner: JobRunner,
    jobs: JobRepo,
    kb: KnowledgeBaseRecord,
    sources: Sequence[str],
    *,
    kind_for_files: str = "file",
    out: TextIO = sys.stderr,
) -> int:
    """Run one job per source, resuming what an interrupted run left unfinished; report each and a summary.

    The runner runs only these jobs: other queued jobs are left to `ragbot serve`.
    """
    display = _ProgressLine(out, sources)
    runner.subscribe(display)
    began = datetime.now(UTC)
    outcomes: Counter[str] = Counter()
    try:
        submitted = []
        for number, source in enumerate(sources, start=1):
            kind = _job_kind(source, kind_for_files)
            job = await runner.submit(kb.id, kind, source, requested_by="cli", resume=True)
            if job.status in UNFINISHED and job.lease_owner not in ("", runner.owner):
                out.write(
                    f"[{number}/{len(sources)}] {Path(source).name or source}: already being ingested by "
                    f"{job.lease_owner}; waiting for it (taken over here if that runner stops)\n"
                )
            submitted.append(job)
        # Started once every source is queued, so a folder's small files reach the workers in full batches.
        await runner.start(adopt=False)
        for job in submitted:
            finished = await runner.wait(job.id)
            resumed = job.created_at < began
            display.finished(finished, " (resumed the job an interrupted run left)" if resumed else "")
            outcomes[_outcome(finished)] += 1
    finally:
        await runner.stop()
    failed = outcomes["failed"]
    counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()) if count)
    out.write(f"{len(sources) - failed} of {len(sources)} ingested into {kb.name} ({counts})\n")
    others = await jobs.count(statuses=UNFINISHED)
    if others:
        out.write(
            f"{others} other {'job is' if others == 1 else 'jobs are'} queued or running: `ragbot serve` runs "
            "them; `ragbot jobs --status queued --status running` lists them\n"
        )
    return 1 if failed else 0


_OUTCOMES = {"faq": "imported", "unchanged": "already indexed"}


_SHEET_SUFFIXES = (".csv", ".xlsx", ".json")


def _job_kind(source: str, kind_for_files: str) -> str:
    """What a source's job does: fetch a web page, import an FAQ sheet (known by its header row, as in a chat
    upload: never indexed as a document that repeats the FAQs as prose) or read a document."""
    if source.startswith(("http://", "https://")):
        return "url"
    path = Path(source)
    if kind_for_files == "file" and path.suffix.lower() in _SHEET_SUFFIXES and path.is_file():
        return "faq" if is_faq_sheet(path.read_bytes(), path.name) else kind_for_files
    return kind_for_files


def _outcome(job: JobRecord) -> str:
    outcome = job_outcome(job)
    return _OUTCOMES.get(outcome, outcome)


async def run_docs(services: Services, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """The `docs` sub-commands."""
    if args.docs_command == "list":
        for document in await services.knowledge.documents(args.kb):
            out.write(f"{document.id}\t{document.title}\t{document.chunk_count} chunks\t{document.source_uri}\n")
    else:
        document = await services.knowledge.delete_document(args.kb, args.document_id)
        out.write(f"deleted {document.title}\n")
    return 0


async def run_jobs(
    services: Services, args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """List jobs newest first, a page at a time; say on `err` how many more there are (or the schedules)."""
    kb_id = (await services.knowledge.find(args.kb)).id if args.kb else None
    if args.schedules:
        return await _list_schedules(services, kb_id, out)
    statuses = tuple(args.status or ())
    limit, offset = (None, 0) if args.all else (args.limit, (args.page - 1) * args.limit)
    jobs = await services.job_repo.recent(kb_id=kb_id, statuses=statuses, limit=limit, offset=offset)
    now = datetime.now(UTC)
    for job in jobs:
        out.write(f"{job.id}\t{job.status}\t{job.kind}\t{job.source}\t{_job_state(job, now)}\n")
    if limit is None:
        return 0
    total = await services.job_repo.count(kb_id=kb_id, statuses=statuses)
    later = total - offset - len(jobs)
    if later > 0:
        size = f"--limit {limit} " if limit != JOBS_PAGE else ""
        err.write(
            f"jobs {offset + 1}-{offset + len(jobs)} of {total}; {later} more: "
            f"`{size}--page {args.page + 1}` shows the next {min(limit, later)}, `--all` shows every one\n"
        )
    elif not jobs and total:
        err.write(f"page {args.page} is past the last job ({total} in all)\n")
    return 0


async def _list_schedules(services: Services, kb_id: str | None, out: TextIO) -> int:
    """One tab-separated line per schedule: id, kind, knowledge base, source, period, last run, next run, outcome."""
    names = {kb.id: kb.name for kb in await services.knowledge.all()}
    rows = await services.schedules.all(kb_ids=[kb_id] if kb_id else None)
    out.write("id\tkind\tkb\tsource\tevery\tlast run\tnext run\tlast outcome\n")
    now = datetime.now(UTC)
    for row in rows:
        if row.kind not in FIRING_KINDS:
            continue
        last = row.last_run_at.isoformat(timespec="seconds") if row.last_run_at else "never"
        outcome = row.last_outcome or "-"
        if row.failures:
            outcome += f" ({row.failures} failures in a row)"
        fields = (
            row.id,
            row.kind,
            names.get(row.kb_id, "-"),
            row.source or "-",
            shown_period(row.every_seconds),
            last,
            next_run(row.every_seconds, now).isoformat(timespec="seconds"),
            outcome,
        )
        out.write("\t".join(fields) + "\n")
    return 0


def _job_state(job: JobRecord, now: datetime) -> str:
    """What a job is doing, and for an unfinished one which runner holds it and whether that runner is alive."""
    if job.status in ("succeeded", "failed"):
        return describe_result(job)
    doing = f"{job.stage or 'starting'} {job.done}/{job.total}" if job.status == "running" else "waiting"
    if not job.lease_owner or job.lease_expires_at is None:
        holder = "interrupted: `ragbot serve` or the same `ragbot ingest` resumes it" if job.status == "running" else ""
        return f"{doing}; {holder}" if holder else doing
    if job.lease_expires_at < now:
        ago = _duration(now - job.lease_expires_at)
        return (
            f"{doing}; its runner {job.lease_owner} stopped {ago} ago: `ragbot serve` or the same `ragbot ingest` "
            "resumes it"
        )
    return f"{doing} in {job.lease_owner}"


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
