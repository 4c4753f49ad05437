"""Document ingestion end to end on real Weaviate, SQLite and PostgreSQL, with the real embedder."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from bot.knowledge.bases import KnowledgeBases
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.rules import ChunkingRule, parse_rule
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.types import Vector
from storage.db import Database
from storage.process import this_process
from storage.records import ChunkRecord, FaqQuestionRecord, KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore
from tests.support.documents import make_docx, make_pdf, make_pptx
from tests.support.killed_ingestion import KILLED

GUIDE = """# Returns

Items can be returned within 30 days of purchase. The receipt is required for every return.

## Refunds

Refunds are paid to the original card within five working days. 退款会在五个工作日内退回原卡。

# Shipping

Orders ship from our warehouse every weekday. Express delivery costs extra and arrives next day.
"""


class CountingEmbedder:
    """The real embedder, counting the texts it embeds."""

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner
        self.embedded = 0

    provider = "local"

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.embedded += len(texts)
        return await self.inner.embed(texts)


class FailingStore:
    """Our VectorStore protocol over the real store, failing the chosen operation once."""

    def __init__(self, inner: WeaviateStore, fail_on: str) -> None:
        self.inner = inner
        self.fail_on = fail_on

    async def upsert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        if self.fail_on == "upsert":
            raise ConnectionError("index went away")
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


class FailingDocuments(DocumentRepo):
    """The real repository whose version write fails, as a crash between index and SQL would."""

    async def store_versions(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("database went away")


@pytest.fixture(scope="session")
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base")


@pytest.fixture(scope="session")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


async def _kb(db: Database, rule: ChunkingRule | None = None) -> KnowledgeBaseRecord:
    rule = rule or ChunkingRule()
    return await KnowledgeBaseRepo(db).create("guide", chunking=rule.to_dict())


def _ingestor(
    db: Database, store: Any, embedder: Any, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> DocumentIngestor:
    return DocumentIngestor(DocumentRepo(db), store, embedder, lexical, encoding)


def _source(text: str, name: str = "guide.md") -> SourceFile:
    return SourceFile(text.encode(), source_uri=f"upload:{name}", filename=name)


async def _indexed_ids(store: WeaviateStore, kb_id: str) -> set[str]:
    hits = await store.search_bm25(Collection.CHUNKS, [kb_id], "returned refunds orders 退款", limit=100)
    return {hit.id for hit in hits}


async def test_ingested_chunks_point_into_the_stored_text(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    result = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    documents = DocumentRepo(db)
    text = await documents.text(result.document_id)
    chunks = await documents.document_chunks(result.document_id)
    assert result.chunks == len(chunks) > 0
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    assert all(text[chunk.start : chunk.end] == chunk.text for chunk in chunks)
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(chunks)
    hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text("退款"), limit=3)
    assert hits
    assert "退款" in hits[0].properties["text"]
    assert hits[0].properties["document_id"] == result.document_id


async def test_each_section_is_a_chunk_indexed_under_its_heading_path(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    result = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    chunks = await DocumentRepo(db).document_chunks(result.document_id)
    # The whole guide is far under max_tokens: still a chunk per section, each with its heading path.
    assert [chunk.metadata["heading_path"] for chunk in chunks] == [["Returns"], ["Returns", "Refunds"], ["Shipping"]]
    assert chunks[1].text.startswith("## Refunds\n\nRefunds are paid")
    # "returns" is in the Refunds section's path, not in its text: BM25 finds it through the path.
    hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text("returns"), limit=5)
    assert chunks[1].chunk_id in {hit.id for hit in hits}
    assert json.loads(hits[0].properties["meta"])["heading_path"][0] == "Returns"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("opening-hours.pdf", make_pdf(["The shop opens at nine on weekdays."])),
        ("returns.docx", make_docx()),
        ("review.pptx", make_pptx()),
        ("notes.md", b"Lunch is served from noon."),
    ],
)
async def test_a_document_whose_file_has_no_title_is_titled_by_its_file_name(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
    name: str,
    data: bytes,
) -> None:
    kb = await _kb(db)
    source = SourceFile(data, source_uri=f"upload:{name}", filename=name)
    result = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, source)
    assert result.title == name
    [document] = await DocumentRepo(db).in_kb(kb.id)
    assert document.title == name
    chunks = await DocumentRepo(db).chunks_with_titles(
        [chunk.chunk_id for chunk in await DocumentRepo(db).document_chunks(document.id)]
    )
    assert {title for _, title in chunks} == {name}


async def test_identical_reingest_changes_nothing_and_embeds_nothing(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    counting = CountingEmbedder(embedder)
    ingestor = _ingestor(db, store, counting, lexical, encoding)
    first = await ingestor.ingest(kb, _source(GUIDE))
    embedded, before = counting.embedded, await _indexed_ids(store, kb.id)
    second = await ingestor.ingest(kb, _source(GUIDE))
    assert second.unchanged
    assert second.document_id == first.document_id
    assert counting.embedded == embedded
    assert await _indexed_ids(store, kb.id) == before


async def test_a_changed_document_replaces_its_old_chunks(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    ingestor = _ingestor(db, store, embedder, lexical, encoding)
    first = await ingestor.ingest(kb, _source(GUIDE))
    old_ids = {chunk.chunk_id for chunk in await DocumentRepo(db).document_chunks(first.document_id)}
    changed = GUIDE.replace("30 days", "60 days") + "\n# Warranty\n\nTwo years on every appliance.\n"
    second = await ingestor.ingest(kb, _source(changed))
    new_chunks = await DocumentRepo(db).document_chunks(second.document_id)
    assert second.document_id == first.document_id
    assert not second.unchanged
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(new_chunks)
    assert {chunk.chunk_id for chunk in new_chunks}.isdisjoint(old_ids)
    assert "pending_index_delete" not in (await DocumentRepo(db).get(second.document_id)).meta
    assert await DocumentRepo(db).writer.unsettled() == []


@pytest.mark.parametrize("failure", ["index", "sql"])
async def test_a_failed_new_version_leaves_the_old_one_whole(
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    encoding: tiktoken.Encoding,
    failure: str,
) -> None:
    kb = await _kb(db)
    first = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    before_sql = await DocumentRepo(db).document_chunks(first.document_id)
    before_index = await _indexed_ids(store, kb.id)
    if failure == "index":
        broken = DocumentIngestor(DocumentRepo(db), FailingStore(store, "upsert"), embedder, lexical, encoding)
    else:
        broken = DocumentIngestor(FailingDocuments(db), store, embedder, lexical, encoding)
    with pytest.raises(ConnectionError):
        await broken.ingest(kb, _source(GUIDE + "\nA new closing paragraph about gift cards.\n"))
    assert await DocumentRepo(db).document_chunks(first.document_id) == before_sql
    assert await _indexed_ids(store, kb.id) == before_index
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(before_sql)


async def test_parent_child_indexes_only_children_and_keeps_parents_in_sql(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    rule = parse_rule({"mode": "parent_child", "segment": {"max_tokens": 60, "overlap": 0},
                       "child": {"max_tokens": 50, "overlap": 0, "separator": "\n"}})  # fmt: skip
    kb = await _kb(db, rule)
    long_guide = GUIDE * 3
    result = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(long_guide))
    documents = DocumentRepo(db)
    segments = await documents.segments(result.document_id)
    chunks = await documents.document_chunks(result.document_id)
    text = await documents.text(result.document_id)
    assert len(segments) == result.segments > 1
    assert sum(len(segment.child_ids) for segment in segments) == len(chunks)
    by_id = {chunk.chunk_id: chunk for chunk in chunks}
    for segment in segments:
        assert text[segment.start : segment.end] == segment.text
        for child_id in segment.child_ids:
            child = by_id[child_id]
            assert child.segment_id == segment.segment_id
            assert segment.start <= child.start < child.end <= segment.end
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(chunks)


async def test_pending_deletes_left_by_a_crash_are_repaired(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    documents = DocumentRepo(db)
    first = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    old_chunks = await documents.document_chunks(first.document_id)
    # A crash after SQL switched versions but before the index dropped the old chunks:
    changed = _source(GUIDE + "\nExtra line.\n")
    crashing = DocumentIngestor(documents, _StopBeforeDelete(store), embedder, lexical, encoding)
    with pytest.raises(_Crash):
        await crashing.ingest(kb, changed)
    assert await store.count(Collection.CHUNKS, [kb.id]) > len(await documents.document_chunks(first.document_id))
    repaired = await KnowledgeBases(KnowledgeBaseRepo(db), documents, store).repair_index()
    assert repaired == len(old_chunks)
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(await documents.document_chunks(first.document_id))


async def test_chunks_of_an_ingestion_killed_before_its_commit_are_removed_at_the_next_start(
    db: Database, store: WeaviateStore, weaviate_server: WeaviateServer, model_dir: Path
) -> None:
    kb = await _kb(db)
    assert weaviate_server.endpoint is not None
    killed = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.killed_ingestion", db.config.url,
        json.dumps(dataclasses.asdict(weaviate_server.endpoint)), kb.id, str(model_dir), GUIDE,
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert await asyncio.wait_for(killed.wait(), timeout=120) == KILLED
    documents = DocumentRepo(db)
    # The dead process's chunks are in the index, searchable, with no document in SQL behind them.
    left = await store.count(Collection.CHUNKS, [kb.id])
    assert left > 0
    assert await documents.in_kb(kb.id) == []
    (note,) = await documents.unfinished_index_writes()
    assert note.owner.endswith(f":{killed.pid}")
    assert len(note.chunk_ids) == left

    assert await KnowledgeBases(KnowledgeBaseRepo(db), documents, store).repair_index() == left
    assert await store.count(Collection.CHUNKS, [kb.id]) == 0
    assert await documents.unfinished_index_writes() == []


async def test_an_index_write_is_repaired_only_once_its_writer_is_gone_or_its_note_expired(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await _kb(db)
    documents = DocumentRepo(db)
    committed = await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    chunk_ids = [chunk.chunk_id for chunk in await documents.document_chunks(committed.document_id)]
    soon = datetime.now(UTC) + timedelta(minutes=5)
    live = await documents.begin_index_write(chunk_ids, owner=this_process(), expires_at=soon)
    elsewhere = await documents.begin_index_write(chunk_ids, owner="another-host:1", expires_at=soon)
    await documents.begin_index_write(
        chunk_ids, owner="another-host:2", expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    knowledge = KnowledgeBases(KnowledgeBaseRepo(db), documents, store)
    # The expired note names committed chunks only: it goes, and the index keeps every chunk.
    assert await knowledge.repair_index() == 0
    assert {note.id for note in await documents.unfinished_index_writes()} == {live, elsewhere}
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(chunk_ids)
    # A successful ingestion leaves no note of its own behind.
    await documents.end_index_write(live)
    await documents.end_index_write(elsewhere)
    await _ingestor(db, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE + "\nMore.\n", "more.md"))
    assert await documents.unfinished_index_writes() == []


class _Crash(Exception):
    pass


class _StopBeforeDelete(FailingStore):
    def __init__(self, inner: WeaviateStore) -> None:
        super().__init__(inner, "none")

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        raise _Crash
