"""What each kind of ingestion job does: read or fetch its source, then ingest a document or import FAQs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bot.log_context import job_scope
from rag.errors import DocumentTooLarge, ExtractionError, RagError
from rag.ingest.addresses import AddressPolicy
from rag.ingest.documents import DocumentIngestor, IngestResult, SourceFile
from rag.ingest.extractors.limits import format_size
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import parse_faq_file
from rag.ingest.fetch import FetchedFile, FetchLimits, Validators, fetch_url, without_credentials
from rag.ports import Progress
from storage.records import JobRecord
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.schedules import ScheduleRepo

log = logging.getLogger(__name__)

JobKind = Literal["file", "url", "upload", "faq", "sync"]
JOB_KINDS: tuple[JobKind, ...] = ("file", "url", "upload", "faq", "sync")
URL_KINDS = frozenset({"url", "sync"})
"""A `sync` job fetches a scheduled URL source again, conditionally: an unchanged page costs one request."""
# Every so many syncs one is sent without validators: a server whose ETag stays while its page changes is caught.
FULL_FETCH_EVERY = 10
# The most bytes of read files one batch holds at once (many small files, or one or two big ones).
_BATCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class IngestionLimits:
    """Size and network limits for sources."""

    max_file_bytes: int
    fetch: FetchLimits
    address_policy: AddressPolicy


def _read_file(path: Path, max_bytes: int) -> bytes:
    if not path.is_file():
        raise ExtractionError(f"{path} is not a readable file", reason="file_missing", name=path.name)
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentTooLarge(
            f"{path.name} is {format_size(size)}, over the {format_size(max_bytes)} limit (INGEST_MAX_FILE_MB)",
            reason="too_large",
            size=size,
            max_size=max_bytes,
        )
    return path.read_bytes()


class IngestionWork:
    """Runs one job's work; raises rag errors with a one-line reason when the source is bad."""

    def __init__(
        self,
        knowledge_bases: KnowledgeBaseRepo,
        documents: DocumentIngestor,
        faqs: FaqImporter,
        limits: IngestionLimits,
        schedules: ScheduleRepo | None = None,
    ) -> None:
        self._knowledge_bases = knowledge_bases
        self._documents = documents
        self._faqs = faqs
        self._limits = limits
        self._schedules = schedules

    async def __call__(self, job: JobRecord, progress: Progress) -> dict[str, Any]:
        """Do the job; the returned counts are stored as its result."""
        kb = await self._knowledge_bases.get(job.kb_id)
        if job.kind == "faq":
            path = Path(job.source)
            data = await asyncio.to_thread(_read_file, path, self._limits.max_file_bytes)
            entries = await asyncio.to_thread(parse_faq_file, data, _original_name(path))
            return asdict(await self._faqs.import_entries(kb, entries, progress))
        source = await self._source(job, progress)
        if not isinstance(source, SourceFile):
            return source
        return {**asdict(await self._documents.ingest(kb, source, progress)), **_validators_result(source)}

    async def run_batch(
        self, jobs: Sequence[JobRecord], progress_of: Callable[[JobRecord], Progress]
    ) -> list[dict[str, Any] | Exception]:
        """Do several jobs: each knowledge base's documents in batched ingestions, FAQ sheets one by one.

        One result per job, in order; a job whose source is bad gets its RagError (or the StorageError that
        refused its rows) instead, and the others go on.
        """
        outcomes: dict[str, dict[str, Any] | Exception] = {}
        pending: dict[str, list[tuple[JobRecord, SourceFile, Progress]]] = {}

        async def ingest(kb_id: str) -> None:
            group = pending.pop(kb_id)
            kb = await self._knowledge_bases.get(kb_id)
            results = await self._documents.ingest_many(
                kb, [source for _, source, _ in group], [progress for *_, progress in group]
            )
            for (job, source, _), result in zip(group, results, strict=True):
                if isinstance(result, IngestResult):
                    outcomes[job.id] = {**asdict(result), **_validators_result(source)}
                else:
                    outcomes[job.id] = result

        for job in jobs:
            progress = progress_of(job)
            try:
                with job_scope(job.id):
                    if job.kind == "faq":
                        outcomes[job.id] = await self(job, progress)
                        continue
                    source = await self._source(job, progress)
            except RagError as exc:
                outcomes[job.id] = exc
                continue
            if not isinstance(source, SourceFile):
                outcomes[job.id] = source
                continue
            group = pending.setdefault(job.kb_id, [])
            group.append((job, source, progress))
            # Files read but not yet ingested stay in memory: a few large ones make a batch of their own.
            if sum(len(source.data) for _, source, _ in group) >= _BATCH_BYTES:
                await ingest(job.kb_id)
        for kb_id in list(pending):
            await ingest(kb_id)
        return [outcomes[job.id] for job in jobs]

    async def _source(self, job: JobRecord, progress: Progress) -> SourceFile | dict[str, Any]:
        """The job's file; for a sync whose page did not change, its result instead (nothing to ingest)."""
        if job.kind in URL_KINDS:
            await progress("fetch", 0, 1)
            validators = await self._validators(job) if job.kind == "sync" else None
            fetched = await fetch_url(
                job.source, limits=self._limits.fetch, policy=self._limits.address_policy, validators=validators
            )
            kept = _fetch_result(fetched, conditional=validators is not None)
            if fetched.not_modified:
                return {"unchanged": True, "not_modified": True, **kept}
            return _FetchedSource(
                fetched.data,
                source_uri=stored_source(job.kind, job.source),
                filename=fetched.filename,
                content_type=fetched.content_type,
                kept=kept,
            )
        path = Path(job.source)
        data = await asyncio.to_thread(_read_file, path, self._limits.max_file_bytes)
        if job.kind == "upload":
            name = _original_name(path)
            return SourceFile(data, source_uri=f"upload:{name}", filename=name)
        absolute = await asyncio.to_thread(path.resolve)
        return SourceFile(data, source_uri=absolute.as_uri(), filename=path.name)

    async def _validators(self, job: JobRecord) -> Validators | None:
        """What to send back to the source's server, unless this sync is due to fetch in full."""
        if self._schedules is None:
            return None
        schedule = await self._schedules.find("url_sync", kb_id=job.kb_id, source=job.source)
        if schedule is None or schedule.conditional_runs >= FULL_FETCH_EVERY - 1:
            return None
        validators = Validators(schedule.etag, schedule.last_modified)
        return validators if validators.headers() else None


@dataclass(frozen=True, slots=True)
class _FetchedSource(SourceFile):
    """A fetched URL's file, with what its job's result keeps of the fetch (`_fetch_result`)."""

    kept: dict[str, Any] = field(default_factory=dict)


def _fetch_result(fetched: FetchedFile, *, conditional: bool) -> dict[str, Any]:
    """What a URL job's result keeps of its fetch: the server's validators, which its schedule sends back next time,
    and whether this fetch sent them."""
    validators = fetched.validators
    return {"etag": validators.etag, "last_modified": validators.last_modified, "conditional": conditional}


def _validators_result(source: SourceFile) -> dict[str, Any]:
    return source.kept if isinstance(source, _FetchedSource) else {}


def stored_source(kind: str, source: str) -> str:
    """A job's source as it is stored and shown: a URL without the credentials it may carry (`?token=`,
    `user:password@`), which every reader of its answers and of /jobs would otherwise see."""
    return without_credentials(source) if kind in URL_KINDS else source


def _original_name(path: Path) -> str:
    # Uploads are stored as <data>/uploads/<job-folder>/<original name>.
    return path.name


def describe_result(job: JobRecord) -> str:
    """A short human summary of a finished job."""
    if job.status == "failed":
        return f"failed: {job.error}"
    result = job.result
    if job.kind == "faq":
        return (
            f"{result.get('created', 0)} FAQs added, {result.get('updated', 0)} updated, "
            f"{result.get('unchanged', 0)} unchanged"
        )
    chunks = int(result.get("chunks", 0))
    if result.get("not_modified"):
        return "not modified since the last fetch"
    if result.get("unchanged"):
        return f"unchanged ({_count(chunks, 'chunk')} already indexed)"
    parts = int(result.get("segments", 0) or chunks)
    ocr = int(result.get("ocr_pages") or 0), int(result.get("ocr_unread_pages") or 0)
    read = f", {_count(ocr[0], 'page')} read with OCR" if ocr[0] else ""
    unread = f", {_count(ocr[1], 'page')} not read (over OCR_MAX_PAGES or INGEST_EXTRACT_SECONDS)" if ocr[1] else ""
    return f"{_count(chunks, 'chunk')} in {_count(parts, 'part')} indexed{read}{unread}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def job_summary(job: JobRecord) -> str:
    """One JSON line describing a job (for logs and `ragbot jobs --json`)."""
    return json.dumps(
        {
            "id": job.id,
            "kind": job.kind,
            "source": job.source,
            "status": job.status,
            "stage": job.stage,
            "error": job.error,
        },
        ensure_ascii=False,
    )
