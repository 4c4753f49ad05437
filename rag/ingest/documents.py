"""Document ingestion: bytes in, a fully indexed new version out, the old one removed only afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tiktoken import Encoding

from rag.errors import NoTextFound, RagError
from rag.graph.index import GraphIndexer
from rag.ingest.cleanup import discard_uncommitted, settle, shielded
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.parent_child import CleanedDocument, ParentChunk, build_chunks, clean_document
from rag.ingest.rules import ChunkingRule, parse_rule
from rag.ingest.sandbox import ExtractionSandbox
from rag.ingest.split.structure import indexed_text
from rag.ingest.types import ExtractedTable
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder, Progress, TableStore, VectorStore, no_progress
from storage.errors import DocumentNotStored, IndexWriteError, StorageError, TablesUnavailable
from storage.process import this_process
from storage.records import ChunkRecord, DocumentRecord, DocumentVersion, KnowledgeBaseRecord, SegmentRecord
from storage.repos.document_writes import DELETING, version_key
from storage.repos.documents import DocumentRepo
from storage.tables.records import Sheet

log = logging.getLogger(__name__)

_EMBED_BATCH = 64
_IDS = uuid.UUID("6f1c1a52-7f0e-4c55-9d0f-3b8f2a9e5d10")
# How long another host waits before it repairs an unfinished index write of ours; a batch's upsert and
# commit take seconds, so only a dead writer's note gets this old. This host repairs a dead pid's at once.
_WRITE_EXPIRY = timedelta(minutes=30)
# While another ingestion or a delete holds a document, its next writer asks again after these waits (seconds).
_CLAIM_FIRST_WAIT = 0.05
_CLAIM_LONGEST_WAIT = 1.0


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to ingest: its bytes, what it calls itself, and the identity it is stored under."""

    data: bytes
    source_uri: str
    filename: str | None = None
    content_type: str | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one ingestion did."""

    document_id: str
    title: str
    unchanged: bool
    segments: int
    chunks: int
    characters: int
    # Pages of a scan or an image read with OCR, and those left unread past the OCR limits.
    ocr_pages: int = 0
    ocr_unread_pages: int = 0


IngestOutcome = IngestResult | RagError | StorageError
"""What ingesting one document of a batch came to: its result, or the error that failed it alone."""


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """How many documents, and how many of their chunks, share one embedding call, upsert and transaction."""

    # 64 small files cost one round trip each way instead of 64; 512 chunks of 256 tokens keep one batch's
    # vectors (~0.8 MB) and gRPC messages small, and a batch of big documents still reports progress often.
    documents: int = 64
    chunks: int = 512


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A document split into records, waiting for its batch to be embedded and stored."""

    document_id: str
    version: DocumentVersion
    progress: Progress
    # Whether the document had a stored version when this one was read: then it is never made again if deleted since.
    existed: bool
    tables: tuple[ExtractedTable, ...] = ()

    @property
    def chunks(self) -> tuple[ChunkRecord, ...]:
        return self.version.chunks

    def result(self) -> IngestResult:
        version = self.version
        unread = version.meta.get("ocr_unread_pages")
        return IngestResult(
            self.document_id,
            version.title,
            False,
            len(version.segments),
            len(version.chunks),
            len(version.text),
            ocr_pages=int(version.meta.get("ocr_pages", 0)),
            ocr_unread_pages=len(unread) if isinstance(unread, list) else 0,
        )


def _stable_id(*parts: object) -> str:
    # The same version of the same document always gets the same ids, so a retried
    # ingestion overwrites its own index objects instead of leaving orphans behind.
    return str(uuid.uuid5(_IDS, "|".join(str(part) for part in parts)))


class DocumentIngestor:
    """Extract, clean, split, embed and index documents into a knowledge base, small ones in batches."""

    def __init__(
        self,
        documents: DocumentRepo,
        store: VectorStore,
        embedder: Embedder,
        lexical: LexicalAnalyzer,
        encoding: Encoding,
        limits: ExtractLimits | None = None,
        batch: BatchLimits | None = None,
        owner: str | None = None,
        *,
        sandbox: ExtractionSandbox | None = None,
        tables: TableStore | None = None,
        graph: GraphIndexer | None = None,
    ) -> None:
        self._documents = documents
        self._store = store
        self._embedder = embedder
        self._lexical = lexical
        self._encoding = encoding
        self._limits = limits or ExtractLimits()
        self._batch = batch or BatchLimits()
        self._owner = owner or this_process()
        # The service reads files in child processes (rag.ingest.sandbox); without one, files are read in a
        # thread here, which only trusted input (tests, benchmarks of the rest) may use.
        self._sandbox = sandbox
        # CSV and spreadsheet rows are kept as SQL tables too, for data analysis; None: not kept.
        self._tables = tables
        self._graph = graph

    async def ingest(
        self, kb: KnowledgeBaseRecord, source: SourceFile, progress: Progress = no_progress
    ) -> IngestResult:
        """Index `source`; identical content under the same rule is a no-op that embeds nothing."""
        (outcome,) = await self.ingest_many(kb, [source], [progress])
        if isinstance(outcome, IngestResult):
            return outcome
        raise outcome

    async def ingest_many(
        self, kb: KnowledgeBaseRecord, sources: Sequence[SourceFile], progress: Sequence[Progress] = ()
    ) -> list[IngestOutcome]:
        """Index each source, in batches that share one embedding call, one upsert and one transaction.

        Each document stays atomic: one whose file is bad (a RagError) or whose rows the database
        refuses (a StorageError) fails alone and is returned as that error, in its place; no chunk of it
        stays visible. `progress`, when given, has one reporter per source. Errors of any other kind,
        and a vector index that cannot be written at all, propagate and leave no document of the
        unfinished batch half-visible.
        """
        if progress and len(progress) != len(sources):
            raise ValueError(f"{len(progress)} progress reporters for {len(sources)} sources")
        reporters = list(progress) or [no_progress] * len(sources)
        rule = parse_rule(kb.chunking)
        existing = await self._documents.find_many(kb.id, [source.source_uri for source in sources])
        outcomes: dict[int, IngestOutcome] = {}
        batch: dict[int, _Prepared] = {}
        for index, (source, reporter) in enumerate(zip(sources, reporters, strict=True)):
            try:
                prepared = await self._prepare(kb, rule, source, existing.get(source.source_uri), reporter)
            except RagError as exc:
                log.warning("ingest=failed kb=%s source=%s reason=%s", kb.id, source.source_uri, exc)
                outcomes[index] = exc
                continue
            if isinstance(prepared, IngestResult):
                outcomes[index] = prepared
                continue
            if batch and not self._fits(batch.values(), prepared):
                outcomes.update(await self._index(kb, batch))
                batch = {}
            batch[index] = prepared
        if batch:
            outcomes.update(await self._index(kb, batch))
        return [outcomes[index] for index in range(len(sources))]

    def _fits(self, batch: Iterable[_Prepared], more: _Prepared) -> bool:
        members = list(batch)
        return (
            len(members) < self._batch.documents
            and sum(len(member.chunks) for member in members) + len(more.chunks) <= self._batch.chunks
            # Two versions of one document in one transaction would both insert its row.
            and all(member.version.source_uri != more.version.source_uri for member in members)
        )

    async def _prepare(
        self,
        kb: KnowledgeBaseRecord,
        rule: ChunkingRule,
        source: SourceFile,
        existing: DocumentRecord | None,
        progress: Progress,
    ) -> _Prepared | IngestResult:
        """The document's new version as records, or its unchanged result when content and rule are the same."""
        content_hash = hashlib.sha256(source.data).hexdigest()
        rule_hash = rule.fingerprint()
        if existing and (existing.content_hash, existing.rule_hash, existing.status) == (
            content_hash,
            rule_hash,
            "indexed",
        ):
            return IngestResult(
                existing.id, existing.title, True, existing.segment_count, existing.chunk_count, existing.char_count
            )

        await progress("extract", 0, 1)
        if self._sandbox is not None:
            extracted = await self._sandbox.extract(
                source.data, filename=source.filename, content_type=source.content_type, limits=self._limits
            )
        else:
            extracted = await asyncio.to_thread(
                extract, source.data, filename=source.filename, content_type=source.content_type, limits=self._limits
            )
        await progress("split", 0, 1)
        cleaned = clean_document(extracted, rule)
        parents = await asyncio.to_thread(build_chunks, cleaned.text, rule, self._encoding, cleaned.section_starts)
        if not parents:
            raise NoTextFound(
                "no text left after cleaning: the document is empty or only whitespace", reason="blank_after_cleaning"
            )
        existed = existing is not None and existing.status == "indexed"
        document_id = existing.id if existing and existing.status != DELETING else _stable_id(kb.id, source.source_uri)
        version_key = (kb.id, source.source_uri, content_hash, rule_hash)
        # jieba runs inside _records: a few ms a chunk, kept off the event loop.
        segments, chunks = await asyncio.to_thread(
            self._records, kb.id, document_id, version_key, cleaned, parents, parent_child=rule.mode == "parent_child"
        )
        version = DocumentVersion(
            kb_id=kb.id,
            source_uri=source.source_uri,
            title=extracted.title or source.filename or source.source_uri,
            mime_type=extracted.mime_type,
            content_hash=content_hash,
            rule_hash=rule_hash,
            text=cleaned.text,
            segments=tuple(segments),
            chunks=tuple(chunks),
            meta={"filename": source.filename or "", **dict(extracted.metadata)},
        )
        return _Prepared(document_id, version, progress, existed, extracted.tables)

    async def _index(self, kb: KnowledgeBaseRecord, batch: dict[int, _Prepared]) -> dict[int, IngestOutcome]:
        """Embed, upsert and store one batch; a document the index or the database refuses fails alone."""
        outcomes: dict[int, IngestOutcome] = {}
        vectors = await self._embed(list(batch.values()))
        for prepared in batch.values():
            await prepared.progress("index", 0, len(prepared.chunks))
        # Hits are answered from the index alone: should this process die before the SQL commit, the note lets
        # the next start remove chunks that no committed version holds (KnowledgeBases.repair_index). It also
        # claims the documents, so another writer of one of them waits instead of undoing this one's work.
        note = await self._claim(
            [chunk.chunk_id for prepared in batch.values() for chunk in prepared.chunks],
            [prepared.document_id for prepared in batch.values()],
        )
        settled = False
        try:
            needed = await self._still_needed(kb, batch, outcomes)
            if needed:
                outcomes.update(await self._write(kb, needed, vectors))
            settled = True
        finally:
            await shielded(self._release(note, settled=settled))
        for index, prepared in batch.items():
            if isinstance(outcomes[index], IngestResult):
                await prepared.progress("index", len(prepared.chunks), len(prepared.chunks))
        log.info("ingest=batch kb=%s documents=%d", kb.id, len(batch))
        return outcomes

    async def _claim(self, chunk_ids: Sequence[str], document_ids: Sequence[str]) -> str:
        """Note the index write and claim its documents, waiting while another writer or a delete holds one."""
        wait = _CLAIM_FIRST_WAIT
        while True:
            now = datetime.now(UTC)
            note = await self._documents.claim_index_write(
                chunk_ids, document_ids, owner=self._owner, expires_at=now + _WRITE_EXPIRY, now=now
            )
            if note is not None:
                return note
            if wait == _CLAIM_FIRST_WAIT:
                log.info("ingest=waiting reason=document_held documents=%d", len(document_ids))
            await asyncio.sleep(wait)
            wait = min(wait * 2, _CLAIM_LONGEST_WAIT)

    async def _release(self, note: str, *, settled: bool) -> None:
        # A note whose clean-up did not finish stays for the next start's repair, but no longer holds its documents.
        if settled:
            await self._documents.end_index_write(note)
        else:
            await self._documents.expire_index_write(note, datetime.now(UTC))

    async def _still_needed(
        self, kb: KnowledgeBaseRecord, batch: dict[int, _Prepared], outcomes: dict[int, IngestOutcome]
    ) -> dict[int, _Prepared]:
        """The batch less what changed while it was prepared: a version another writer has stored since is
        unchanged; a document deleted since is not made again."""
        current = await self._documents.find_many(kb.id, [prepared.version.source_uri for prepared in batch.values()])
        needed: dict[int, _Prepared] = {}
        for index, prepared in batch.items():
            version, document = prepared.version, current.get(prepared.version.source_uri)
            same = document is not None and document.id == prepared.document_id
            if (
                same
                and document
                and (document.content_hash, document.rule_hash, document.status)
                == (
                    version.content_hash,
                    version.rule_hash,
                    "indexed",
                )
            ):
                outcomes[index] = IngestResult(
                    document.id, document.title, True, document.segment_count, document.chunk_count, document.char_count
                )
            elif prepared.existed and (not same or (document and document.status == DELETING)):
                outcomes[index] = DocumentNotStored(version.source_uri, "it was deleted while being ingested")
            else:
                needed[index] = prepared
        return needed

    async def _write(
        self, kb: KnowledgeBaseRecord, batch: dict[int, _Prepared], vectors: dict[str, list[float]]
    ) -> dict[int, IngestOutcome]:
        """Upsert the batch's chunks and store its versions; what fails is removed again, as far as no live
        version holds it."""
        outcomes: dict[int, IngestOutcome] = {}
        chunks = [replace(c, title=prepared.version.title) for prepared in batch.values() for c in prepared.chunks]
        try:
            try:
                await self._store.upsert_chunks(chunks, [vectors[chunk.chunk_id] for chunk in chunks])
            except IndexWriteError as exc:
                failed = {
                    index for index, prepared in batch.items() if any(c.chunk_id in exc.errors for c in prepared.chunks)
                }
                if len(failed) == len(batch):
                    raise
                # Only those documents lose: what the index did take of them is removed again.
                await self._discard([batch[index] for index in failed])
                outcomes.update((index, exc) for index in failed)
                batch = {index: prepared for index, prepared in batch.items() if index not in failed}
            stored = await self._documents.store_versions(
                [(prepared.version, prepared.document_id) for prepared in batch.values()],
                existing={prepared.document_id for prepared in batch.values() if prepared.existed},
            )
        except BaseException:
            # SQL still points at the previous versions: drop what was just written for these.
            await shielded(self._discard(list(batch.values())))
            raise
        refused = [
            batch[index] for index, done in zip(batch, stored, strict=True) if isinstance(done, DocumentNotStored)
        ]
        if refused:
            await shielded(self._discard(refused))
        for (index, prepared), done in zip(batch.items(), stored, strict=True):
            if isinstance(done, DocumentNotStored):
                log.warning("ingest=failed kb=%s source=%s reason=%s", kb.id, done.source_uri, done.reason)
                outcomes[index] = done
                continue
            if prepared.existed:
                # The replaced version's rows and index objects, and anything a crash left of older ones.
                await settle(self._documents, self._store, done.id)
            await self._keep_tables(kb, prepared)
            outcomes[index] = prepared.result()
        await self._index_graph(kb, [batch[index] for index in batch if isinstance(outcomes[index], IngestResult)])
        return outcomes

    async def _keep_tables(self, kb: KnowledgeBaseRecord, prepared: _Prepared) -> None:
        """Store the new version's rows as its tables (replacing the old version's); tables that cannot be written
        cost the analysis of this document, not its ingestion, so that is logged and passed over."""
        if self._tables is None or (not prepared.tables and not prepared.existed):
            return
        sheets = [Sheet(table.name, table.rows) for table in prepared.tables]
        try:
            await self._tables.write(kb.id, prepared.document_id, sheets, version=version_key(prepared.version))
        except TablesUnavailable as exc:
            log.warning("ingest=tables_not_kept kb=%s document=%s reason=%s", kb.id, prepared.document_id, exc)

    async def _index_graph(self, kb: KnowledgeBaseRecord, stored: Sequence[_Prepared]) -> None:
        # The graph is a further leg of search, not the document: a graph the store refuses costs its entities only.
        if self._graph is None or not stored:
            return
        try:
            await self._graph.index(kb.id, [chunk for prepared in stored for chunk in prepared.chunks])
        except StorageError as exc:
            log.warning("graph=not_indexed kb=%s documents=%d reason=%s", kb.id, len(stored), exc)

    async def _discard(self, prepared: Sequence[_Prepared]) -> None:
        """Remove what these versions wrote and did not make live: their staged rows, then their index objects
        that no live version holds (another writer's identical version may be live by now)."""
        await self._documents.writer.discard([(p.document_id, version_key(p.version)) for p in prepared])
        await discard_uncommitted(self._documents, self._store, [c.chunk_id for p in prepared for c in p.chunks])

    def _records(
        self,
        kb_id: str,
        document_id: str,
        version_key: tuple[str, ...],
        cleaned: CleanedDocument,
        parents: list[ParentChunk],
        *,
        parent_child: bool,
    ) -> tuple[list[SegmentRecord], list[ChunkRecord]]:
        segments: list[SegmentRecord] = []
        chunks: list[ChunkRecord] = []
        for parent_position, parent in enumerate(parents):
            segment_id = _stable_id(*version_key, "segment", parent_position) if parent_child else None
            children = parent.children if parent_child else (parent.chunk,)
            child_ids = []
            for child in children:
                chunk_id = _stable_id(*version_key, "chunk", child.position if parent_child else parent_position)
                child_ids.append(chunk_id)
                metadata = {**dict(cleaned.metadata_at(child.start)), **dict(child.metadata)}
                chunks.append(
                    ChunkRecord(
                        chunk_id=chunk_id,
                        kb_id=kb_id,
                        document_id=document_id,
                        segment_id=segment_id,
                        position=len(chunks),
                        start=child.start,
                        end=child.end,
                        text=child.text,
                        bm25_text=self._lexical.bm25_text(indexed_text(child.text, metadata)),
                        metadata=metadata,
                    )
                )
            if segment_id is not None:
                segments.append(
                    SegmentRecord(
                        segment_id=segment_id,
                        document_id=document_id,
                        kb_id=kb_id,
                        position=parent_position,
                        start=parent.chunk.start,
                        end=parent.chunk.end,
                        text=parent.chunk.text,
                        child_ids=tuple(child_ids),
                        metadata={**dict(cleaned.metadata_at(parent.chunk.start)), **dict(parent.chunk.metadata)},
                    )
                )
        return segments, chunks

    async def _embed(self, batch: list[_Prepared]) -> dict[str, list[float]]:
        """Vectors by chunk id: a batch of several documents in one call (one cache read and write),
        a lone document in slices so that its progress moves."""
        chunks = [chunk for prepared in batch for chunk in prepared.chunks]
        for prepared in batch:
            await prepared.progress("embed", 0, len(prepared.chunks))
        lone = len(batch) == 1
        step = _EMBED_BATCH if lone else max(1, len(chunks))
        vectors: list[list[float]] = []
        for start in range(0, len(chunks), step):
            page = chunks[start : start + step]
            vectors.extend(await self._embedder.embed([indexed_text(chunk.text, chunk.metadata) for chunk in page]))
            if lone:
                await batch[0].progress("embed", len(vectors), len(chunks))
        if not lone:
            for prepared in batch:
                await prepared.progress("embed", len(prepared.chunks), len(prepared.chunks))
        return {chunk.chunk_id: vector for chunk, vector in zip(chunks, vectors, strict=True)}
