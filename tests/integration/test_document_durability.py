"""A document's version never vanishes from the index, and a deleted one never lingers, whatever runs beside it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
import tiktoken

from bot.knowledge.bases import KnowledgeBases
from rag.ingest.documents import DocumentIngestor, IngestResult, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.types import Vector
from storage.db import Database
from storage.models import Document
from storage.records import ChunkRecord, FaqQuestionRecord, KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore

GUIDE = """# Returns

Items can be returned within 30 days of purchase. The receipt is required for every return.

## Refunds

Refunds are paid to the original card within five working days.

# Shipping

Orders ship from our warehouse every weekday. Express delivery costs extra and arrives next day.
"""
CHANGED = GUIDE.replace("30 days", "60 days") + "\n# Warranty\n\nTwo years on every appliance, returned or not.\n"
# Every word the guide's chunks share with some query, so one BM25 search lists them all.
_EVERY_CHUNK = "returned refunds orders warranty"


class GatedEmbedder:
    """The real embedder, whose calls wait at a gate the test opens; `entered` is set once `callers` calls wait."""

    provider = "local"

    def __init__(self, inner: OnnxEmbedder, callers: int = 1) -> None:
        self.inner = inner
        self.callers = callers
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.callers -= 1
        if self.callers <= 0:
            self.entered.set()
        await self.gate.wait()
        return await self.inner.embed(texts)


class StallingDocuments(DocumentRepo):
    """The real repository whose version write, once reached, fails ("error") or waits to be cancelled ("cancel")."""

    def __init__(self, db: Database, ending: str) -> None:
        super().__init__(db)
        self.ending = ending
        self.reached = asyncio.Event()

    async def store_versions(self, *args: Any, **kwargs: Any) -> Any:
        self.reached.set()
        if self.ending == "error":
            raise ConnectionError("database went away")
        await asyncio.Event().wait()


class ContestedDocuments(DocumentRepo):
    """The real repository, telling when a claim on a document was refused because someone else holds it."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.refused = asyncio.Event()

    async def claim_index_write(self, *args: Any, **kwargs: Any) -> str | None:
        note = await super().claim_index_write(*args, **kwargs)
        if note is None:
            self.refused.set()
        return note


class PausingStore:
    """Our VectorStore protocol over the real store; a document delete, once done, waits until `resume` is set."""

    def __init__(self, inner: WeaviateStore) -> None:
        self.inner = inner
        self.halfway = asyncio.Event()
        self.resume = asyncio.Event()

    async def upsert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        await self.inner.upsert_chunks(chunks, vectors)

    async def upsert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        await self.inner.upsert_faq_questions(questions, vectors)

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        return await self.inner.delete_ids(collection, object_ids)

    async def delete_document(self, kb_id: str, document_id: str) -> int:
        removed = await self.inner.delete_document(kb_id, document_id)
        self.halfway.set()
        await self.resume.wait()
        return removed

    async def delete_kb(self, kb_id: str) -> int:
        return await self.inner.delete_kb(kb_id)


@pytest.fixture(scope="module")
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


def _source(text: str = GUIDE) -> SourceFile:
    return SourceFile(text.encode(), source_uri="https://example.com/guide", filename="guide.md")


async def _restart(db: Database, store: Any) -> None:
    """What the next start does before anything else: the crash repair."""
    await KnowledgeBases(KnowledgeBaseRepo(db), DocumentRepo(db), store).repair_index()


async def _assert_whole(db: Database, store: WeaviateStore, lexical: LexicalAnalyzer, kb: KnowledgeBaseRecord) -> None:
    """The knowledge base holds one document, indexed, whose every chunk, and nothing else, is in the index."""
    documents = DocumentRepo(db)
    (document,) = await documents.in_kb(kb.id)
    assert document.status == "indexed"
    stored = {chunk.chunk_id for chunk in await documents.document_chunks(document.id)}
    assert len(stored) == document.chunk_count > 0
    hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text(_EVERY_CHUNK), limit=100)
    assert {hit.id for hit in hits} == stored
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(stored)


def _ingestor(
    db: Database, store: Any, embedder: Any, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> DocumentIngestor:
    return DocumentIngestor(DocumentRepo(db), store, embedder, lexical, encoding)


async def test_a_url_given_twice_in_one_ingestion_keeps_its_chunks_in_the_index_after_a_restart(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("twice", chunking={})
    ingestor = _ingestor(db, store, embedder, lexical, encoding)

    outcomes = await ingestor.ingest_many(kb, [_source(), _source()])
    await _restart(db, store)

    assert all(isinstance(outcome, IngestResult) for outcome in outcomes)
    await _assert_whole(db, store, lexical, kb)
    assert (await ingestor.ingest(kb, _source())).unchanged
    await _assert_whole(db, store, lexical, kb)


async def test_the_same_url_ingested_five_times_at_once_ends_as_one_indexed_document_whole_in_the_index(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("five", chunking={})
    gated = GatedEmbedder(embedder, callers=5)
    # Five workers, each with its own ingestor, all past reading the document before any of them writes.
    writers = [_ingestor(db, store, gated, lexical, encoding) for _ in range(5)]
    tasks = [asyncio.create_task(writer.ingest(kb, _source())) for writer in writers]
    await asyncio.wait_for(gated.entered.wait(), 60)
    gated.gate.set()

    results = await asyncio.wait_for(asyncio.gather(*tasks), 120)
    await _restart(db, store)

    assert len({result.document_id for result in results}) == 1
    await _assert_whole(db, store, lexical, kb)


async def test_a_version_stored_again_over_itself_keeps_its_chunks_through_a_restart(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("over", chunking={})
    gated = GatedEmbedder(embedder)
    late = asyncio.create_task(_ingestor(db, store, gated, lexical, encoding).ingest(kb, _source()))
    await asyncio.wait_for(gated.entered.wait(), 60)
    # Another worker stores the same version while the first is past its read: a re-upload under the same name.
    await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source())
    gated.gate.set()

    await asyncio.wait_for(late, 120)
    await _restart(db, store)

    await _assert_whole(db, store, lexical, kb)
    assert (await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source())).unchanged


@pytest.mark.parametrize("ending", ["error", "cancel"])
async def test_a_writer_that_fails_after_another_stored_the_same_version_leaves_that_version_in_the_index(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
    ending: str,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("fails", chunking={})
    gated, stalling = GatedEmbedder(embedder), StallingDocuments(db, ending)
    failing = asyncio.create_task(DocumentIngestor(stalling, store, gated, lexical, encoding).ingest(kb, _source()))
    await asyncio.wait_for(gated.entered.wait(), 60)
    await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source())
    gated.gate.set()

    # The other writer of the same version fails at its SQL write, or is cancelled there (a job cancelled, a
    # shutdown), unless it sees in time that the version is stored already.
    reached = asyncio.create_task(stalling.reached.wait())
    await asyncio.wait({failing, reached}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    reached.cancel()
    if ending == "cancel":
        failing.cancel()
    await asyncio.gather(failing, return_exceptions=True)
    await _restart(db, store)

    await _assert_whole(db, store, lexical, kb)


@pytest.mark.parametrize("moment", ["before_its_index_write", "while_the_delete_is_half_done"])
async def test_a_document_deleted_during_its_reingestion_leaves_nothing_behind(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
    moment: str,
) -> None:
    kb = await KnowledgeBaseRepo(db).create("gone", chunking={})
    first = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source())
    gated, contested = GatedEmbedder(embedder), ContestedDocuments(db)
    writing = asyncio.create_task(
        DocumentIngestor(contested, store, gated, lexical, encoding).ingest(kb, _source(CHANGED))
    )
    await asyncio.wait_for(gated.entered.wait(), 60)

    if moment == "before_its_index_write":
        await KnowledgeBases(KnowledgeBaseRepo(db), DocumentRepo(db), store).delete_document("gone", first.document_id)
        gated.gate.set()
        await asyncio.gather(writing, return_exceptions=True)
    else:
        pausing = PausingStore(store)
        knowledge = KnowledgeBases(KnowledgeBaseRepo(db), DocumentRepo(db), pausing)
        deleting = asyncio.create_task(knowledge.delete_document("gone", first.document_id))
        await asyncio.wait_for(pausing.halfway.wait(), 60)
        # The re-ingestion goes on while the delete has cleared the index and not yet finished in SQL: it either
        # runs to its end or waits for the delete.
        gated.gate.set()
        refused = asyncio.create_task(contested.refused.wait())
        await asyncio.wait({writing, refused}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
        refused.cancel()
        pausing.resume.set()
        await asyncio.wait_for(deleting, 60)
        await asyncio.gather(writing, return_exceptions=True)
    await _restart(db, store)

    assert await DocumentRepo(db).in_kb(kb.id) == []
    assert await store.count(Collection.CHUNKS, [kb.id]) == 0
    hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text(_EVERY_CHUNK), limit=100)
    assert hits == []


async def test_the_repair_never_removes_chunks_a_live_version_holds_even_when_a_pending_list_names_them(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("listed", chunking={})
    result = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source())
    documents = DocumentRepo(db)
    live = [chunk.chunk_id for chunk in await documents.document_chunks(result.document_id)]
    # What the previous version left in a database after storing a version twice: its own ids listed for deletion.
    async with db.session() as session:
        row = await session.get(Document, result.document_id)
        assert row is not None
        row.meta = {**row.meta, "pending_index_delete": live}
        session.add(row)

    await _restart(db, store)

    await _assert_whole(db, store, lexical, kb)
    assert await documents.pending_index_deletes() == {}
