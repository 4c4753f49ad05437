"""Many small documents in batches: one upsert and one transaction per batch, each document still atomic."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from bot.knowledge.ingestion import IngestionLimits, IngestionWork
from bot.knowledge.jobs import JobRunner
from bot.log_context import current_job
from rag.errors import ExtractionError
from rag.ingest.addresses import AddressPolicy
from rag.ingest.documents import BatchLimits, DocumentIngestor, IngestResult, SourceFile
from rag.ingest.faq_index import FaqImporter
from rag.ingest.fetch import FetchLimits
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.types import Vector
from storage.db import Database
from storage.errors import DocumentNotStored
from storage.records import ChunkRecord, DocumentRecord, DocumentVersion, FaqQuestionRecord, JobRecord
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore
from tests.support.documents import make_pdf

FILES = 50


def _word(number: int) -> str:
    """A made-up word only file `number` contains (letters only, so BM25 keeps it whole)."""
    return "zq" + "".join(chr(ord("a") + number // 26**place % 26) for place in range(3))


def _text(number: int) -> str:
    return f"Note {_word(number)}\n\nThe {_word(number)} procedure is kept in cabinet {number}. Ask the front desk.\n"


class CountingStore:
    """Our VectorStore protocol over the real store, counting the upserts."""

    def __init__(self, inner: WeaviateStore) -> None:
        self.inner = inner
        self.upserts: list[int] = []
        self.upserted_for: list[str] = []  # the jobs each upsert's log lines name

    async def upsert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        self.upserts.append(len(chunks))
        self.upserted_for.append(current_job())
        await self.inner.upsert_chunks(chunks, vectors)

    async def upsert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        await self.inner.upsert_faq_questions(questions, vectors)

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        return await self.inner.delete_ids(collection, object_ids)

    async def delete_document(self, kb_id: str, document_id: str) -> int:
        return await self.inner.delete_document(kb_id, document_id)

    async def delete_kb(self, kb_id: str) -> int:
        return await self.inner.delete_kb(kb_id)


class CountingEmbedder:
    """The real embedder, counting its calls."""

    provider = "local"

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        return await self.inner.embed(texts)


class CountingDocuments(DocumentRepo):
    """The real repository, counting the version transactions."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.transactions: list[int] = []

    async def store_versions(self, versions: Sequence[tuple[DocumentVersion, str]], **kwargs: Any) -> Any:
        self.transactions.append(len(versions))
        return await super().store_versions(versions, **kwargs)


class CrashingDocuments(DocumentRepo):
    """The real repository whose version write dies, as a crash between the upsert and the commit would."""

    async def store_versions(self, versions: Sequence[tuple[DocumentVersion, str]], **kwargs: Any) -> Any:
        raise ConnectionError("database went away")


class RefusingDocuments(DocumentRepo):
    """The real repository, except that the database refuses the rows of sources named refused*."""

    async def store_versions(
        self, versions: Sequence[tuple[DocumentVersion, str]], **kwargs: Any
    ) -> list[DocumentRecord | DocumentNotStored]:
        accepted = [item for item in versions if "refused" not in item[0].source_uri]
        stored = iter(await super().store_versions(accepted, **kwargs))
        return [
            DocumentNotStored(version.source_uri, "value too long") if "refused" in version.source_uri else next(stored)
            for version, _ in versions
        ]


@pytest.fixture(scope="module")
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


def _sources(count: int, prefix: str = "note") -> list[SourceFile]:
    return [
        SourceFile(_text(number).encode(), source_uri=f"upload:{prefix}{number}.txt", filename=f"{prefix}{number}.txt")
        for number in range(count)
    ]


async def _answers(store: WeaviateStore, db: Database, lexical: LexicalAnalyzer, kb_id: str, number: int) -> set[str]:
    """The documents whose indexed chunks, joined to their SQL rows as search does, match file `number`'s word."""
    hits = await store.search_bm25(Collection.CHUNKS, [kb_id], lexical.bm25_text(_word(number)), limit=5)
    return {chunk.document_id for chunk, _ in await DocumentRepo(db).chunks_with_titles([hit.id for hit in hits])}


async def test_a_folder_of_small_files_runs_as_one_batch_and_every_file_answers_with_its_own_progress(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
    tmp_path: Path,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("folder", chunking={})
    counting_store, documents = CountingStore(store), CountingDocuments(db)
    limits = IngestionLimits(1_000_000, FetchLimits(), AddressPolicy())
    ingestor = DocumentIngestor(documents, counting_store, embedder, lexical, encoding)
    work = IngestionWork(KnowledgeBaseRepo(db), ingestor, FaqImporter(FaqRepo(db), store, embedder, lexical), limits)
    runner = JobRunner(JobRepo(db), work, concurrency=2, batch=work.run_batch)
    seen: dict[str, list[tuple[str, int, int]]] = {}

    async def listen(job: JobRecord) -> None:
        if job.status == "running" and job.stage:
            seen.setdefault(job.id, []).append((job.stage, job.done, job.total))

    runner.subscribe(listen)
    for number in range(FILES):
        (tmp_path / f"note{number}.txt").write_text(_text(number))
    # Queued before the workers start, as a folder's files are by the time a worker is free: one batch.
    jobs = [await runner.submit(kb.id, "file", str(tmp_path / f"note{n}.txt")) for n in range(FILES)]
    await runner.start(adopt=False)
    try:
        finished = [await asyncio.wait_for(runner.wait(job.id), 120) for job in jobs]
    finally:
        await runner.stop()

    assert [job.status for job in finished] == ["succeeded"] * FILES
    assert len(counting_store.upserts) == 1
    assert set(counting_store.upserted_for[0].split(",")) == {job.id for job in jobs}
    assert documents.transactions == [FILES]
    for number in (0, 17, FILES - 1):
        assert await _answers(store, db, lexical, kb.id, number) == {finished[number].result["document_id"]}
    for job in finished:
        chunks = job.result["chunks"]
        assert seen[job.id][0][0] == "extract"
        assert seen[job.id][-1] == ("index", chunks, chunks)


async def test_one_corrupt_file_among_fifty_fails_alone_with_its_reason(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("mixed", chunking={})
    sources = _sources(FILES - 1)
    sources.insert(20, SourceFile(make_pdf(["a page"])[:200], source_uri="upload:broken.pdf", filename="broken.pdf"))
    counting_store = CountingStore(store)
    ingestor = DocumentIngestor(DocumentRepo(db), counting_store, embedder, lexical, encoding)

    outcomes = await ingestor.ingest_many(kb, sources)

    assert isinstance(outcomes[20], ExtractionError)
    assert "PDF" in str(outcomes[20])
    assert all(isinstance(outcome, IngestResult) for index, outcome in enumerate(outcomes) if index != 20)
    stored = await DocumentRepo(db).in_kb(kb.id)
    assert len(stored) == FILES - 1
    assert "upload:broken.pdf" not in {document.source_uri for document in stored}
    indexed = await store.count(Collection.CHUNKS, [kb.id])
    assert indexed == sum(document.chunk_count for document in stored) == sum(counting_store.upserts)


async def test_batches_close_at_their_document_and_chunk_limits(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("limits", chunking={})
    counting_store, documents, counting_embedder = (
        CountingStore(store),
        CountingDocuments(db),
        CountingEmbedder(embedder),
    )
    ingestor = DocumentIngestor(
        documents, counting_store, counting_embedder, lexical, encoding, batch=BatchLimits(documents=4, chunks=100)
    )

    outcomes = await ingestor.ingest_many(kb, _sources(10))

    assert all(isinstance(outcome, IngestResult) for outcome in outcomes)
    assert documents.transactions == [4, 4, 2]
    assert len(counting_store.upserts) == 3
    assert counting_embedder.calls == 3  # one embedding call (one cache read and write) per batch


async def test_reingesting_unchanged_files_embeds_and_writes_nothing(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("again", chunking={})
    first = await DocumentIngestor(DocumentRepo(db), store, embedder, lexical, encoding).ingest_many(kb, _sources(12))
    counting_store, documents, counting_embedder = (
        CountingStore(store),
        CountingDocuments(db),
        CountingEmbedder(embedder),
    )
    ingestor = DocumentIngestor(documents, counting_store, counting_embedder, lexical, encoding)

    again = await ingestor.ingest_many(kb, _sources(12))

    assert all(isinstance(outcome, IngestResult) and outcome.unchanged for outcome in again)
    assert [o.document_id for o in again if isinstance(o, IngestResult)] == [
        o.document_id for o in first if isinstance(o, IngestResult)
    ]
    assert (counting_store.upserts, documents.transactions, counting_embedder.calls) == ([], [], 0)


async def test_a_failed_sql_write_leaves_no_chunk_of_the_batch_searchable(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("crash", chunking={})
    ingestor = DocumentIngestor(CrashingDocuments(db), store, embedder, lexical, encoding)

    with pytest.raises(ConnectionError):
        await ingestor.ingest_many(kb, _sources(8))

    assert await store.count(Collection.CHUNKS, [kb.id]) == 0
    assert await DocumentRepo(db).in_kb(kb.id) == []


async def test_a_document_the_database_refuses_fails_alone_and_leaves_nothing_indexed(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("refused", chunking={})
    sources = [*_sources(3), *_sources(1, prefix="refused"), *_sources(6)[3:]]
    ingestor = DocumentIngestor(RefusingDocuments(db), store, embedder, lexical, encoding)

    outcomes = await ingestor.ingest_many(kb, sources)

    assert isinstance(outcomes[3], DocumentNotStored)
    assert "value too long" in str(outcomes[3])
    results = [outcome for outcome in outcomes if isinstance(outcome, IngestResult)]
    assert len(results) == 6
    assert await store.count(Collection.CHUNKS, [kb.id]) == sum(result.chunks for result in results)
    refused_hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text(_word(0)), limit=10)
    assert {hit.properties["document_id"] for hit in refused_hits} <= {result.document_id for result in results}


def _version(kb_id: str, name: str, chunk_id: str) -> DocumentVersion:
    chunk = ChunkRecord(chunk_id, kb_id, "", None, 0, 0, 4, "text", "text")
    return DocumentVersion(kb_id, f"upload:{name}", name, "text/plain", name, "rule", "text", (), (chunk,))


async def test_a_row_the_database_refuses_fails_its_own_version_and_the_rest_of_the_batch_is_stored(
    db: Database,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("rows", chunking={})
    repo = DocumentRepo(db)
    await repo.store_version(_version(kb.id, "first.txt", "00000000-0000-0000-0000-000000000001"), "doc-first")
    clashing = _version(kb.id, "clash.txt", "00000000-0000-0000-0000-000000000001")  # the same chunk id again
    fine = _version(kb.id, "fine.txt", "00000000-0000-0000-0000-000000000002")

    outcomes = await repo.store_versions([(clashing, "doc-clash"), (fine, "doc-fine")])

    assert isinstance(outcomes[0], DocumentNotStored)
    assert outcomes[0].source_uri == "upload:clash.txt"
    assert not isinstance(outcomes[1], DocumentNotStored)
    assert outcomes[1].id == "doc-fine"
    assert sorted(document.source_uri for document in await repo.in_kb(kb.id)) == [
        "upload:fine.txt",
        "upload:first.txt",
    ]


class ScriptedBatchWork:
    """Our Work and BatchWork: the batch breaks (a bug) when a source named crash* is in it."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.alone: list[str] = []

    async def __call__(self, job: JobRecord, progress: Any) -> dict[str, Any]:
        self.alone.append(job.source)
        if job.source.startswith("crash"):
            raise KeyError("bug")
        await progress("index", 1, 1)
        return {"chunks": 1}

    async def run_batch(self, jobs: Sequence[JobRecord], progress_of: Any) -> list[dict[str, Any] | Exception]:
        self.batches.append([job.source for job in jobs])
        if any(job.source.startswith("crash") for job in jobs):
            raise KeyError("bug")
        for job in jobs:
            await progress_of(job)("index", 1, 1)
        return [{"chunks": 1} for _ in jobs]


async def test_a_batch_that_breaks_runs_again_one_job_at_a_time_so_only_the_culprit_fails(db: Database) -> None:
    kb = await KnowledgeBaseRepo(db).create("batches", chunking={})
    work = ScriptedBatchWork()
    runner = JobRunner(JobRepo(db), work, batch=work.run_batch)
    sources = ["a.txt", "crash.txt", "b.txt"]
    jobs = [await runner.submit(kb.id, "file", source) for source in sources]
    await runner.start(adopt=False)
    try:
        finished = [await asyncio.wait_for(runner.wait(job.id), 30) for job in jobs]
    finally:
        await runner.stop()

    assert work.batches == [sources]
    assert work.alone == sources
    assert [job.status for job in finished] == ["succeeded", "failed", "succeeded"]
    assert "internal error" in finished[1].error
