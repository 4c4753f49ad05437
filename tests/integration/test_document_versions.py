"""Big document versions written in short transactions, switched atomically, and cleared after a crash."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
import tiktoken
from sqlalchemy import event

from bot.knowledge.bases import KnowledgeBases
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.records import ChunkRecord, DocumentVersion, TextSpan
from storage.repos.document_writes import ROWS_PER_TRANSACTION, DocumentWriter, StagedVersion
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore
from tests.integration.test_document_durability import PausingStore

BIG = 2 * ROWS_PER_TRANSACTION + 500


class _Died(Exception):
    """A process dying here: nothing after it runs, clean-up included."""


@contextmanager
def rows_per_transaction(db: Database) -> Iterator[list[int]]:
    """The rows each committed transaction inside the block inserted, updated or deleted, in commit order."""
    committed: list[int] = []
    open_rows: dict[int, int] = {}

    def count(conn: Any, cursor: Any, statement: str, parameters: Any, _context: Any, executemany: bool) -> None:
        if statement.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
            rows = len(parameters) if executemany else max(cursor.rowcount, 0)
            open_rows[id(conn)] = open_rows.get(id(conn), 0) + rows

    def commit(conn: Any) -> None:
        committed.append(open_rows.pop(id(conn), 0))

    def rollback(conn: Any) -> None:
        open_rows.pop(id(conn), None)

    engine = db.engine.sync_engine
    listeners = (("after_cursor_execute", count), ("commit", commit), ("rollback", rollback))
    for name, listener in listeners:
        event.listen(engine, name, listener)
    try:
        yield committed
    finally:
        for name, listener in listeners:
            event.remove(engine, name, listener)


def _version(kb_id: str, chunks: int, content: str) -> DocumentVersion:
    """A version of upload:big.txt with `chunks` one-line chunks; `content` tells versions apart."""
    lines = [f"{content} line {n}\n" for n in range(chunks)]
    text = "".join(lines)
    records, start = [], 0
    for n, line in enumerate(lines):
        chunk_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kb_id}/{content}/{n}"))
        records.append(ChunkRecord(chunk_id, kb_id, "", None, n, start, start + len(line), line, line))
        start += len(line)
    return DocumentVersion(kb_id, "upload:big.txt", "big.txt", "text/plain", content, "rule", text, (), tuple(records))


class PeekingWriter(DocumentWriter):
    """The real writer, running `peek` after the rows are written and before the switch."""

    peek: Callable[[], Awaitable[None]] | None = None

    async def switch(self, staged: Sequence[StagedVersion]) -> Any:
        if self.peek is not None:
            await self.peek()
        return await super().switch(staged)


class DyingWriter(DocumentWriter):
    """The real writer, whose process dies between writing a version's rows and switching to it."""

    async def switch(self, staged: Sequence[StagedVersion]) -> Any:
        raise _Died

    async def discard(self, staged: Sequence[tuple[str, str]]) -> None:
        raise _Died


class FailingDeletes(PausingStore):
    """The real store, whose deletes by id fail (the index went away mid-delete)."""

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        raise ConnectionError("index went away")


async def test_a_big_version_is_written_in_transactions_of_bounded_size(db: Database) -> None:
    kb = await KnowledgeBaseRepo(db).create("big", chunking={})
    documents = DocumentRepo(db)
    await documents.store_versions([(_version(kb.id, 10, "first"), "doc-big")])

    with rows_per_transaction(db) as committed:
        (stored,) = await documents.store_versions([(_version(kb.id, BIG, "second"), "doc-big")], existing={"doc-big"})

    assert not isinstance(stored, Exception)
    assert stored.chunk_count == len(await documents.document_chunks("doc-big")) == BIG
    assert sum(committed) >= BIG
    assert max(committed) <= ROWS_PER_TRANSACTION


async def test_readers_see_the_old_version_whole_until_the_switch_and_the_new_one_whole_after(db: Database) -> None:
    kb = await KnowledgeBaseRepo(db).create("switch", chunking={})
    documents = DocumentRepo(db, rows_per_transaction=4)
    old = _version(kb.id, 10, "first")
    await documents.store_versions([(old, "doc-big")])
    new = _version(kb.id, 15, "second")
    writer = PeekingWriter(db, rows_per_transaction=4)
    documents.writer = writer
    whole = TextSpan("doc-big", 0, 10_000)
    seen: dict[str, Any] = {}

    async def peek() -> None:
        seen["chunks"] = [chunk.text for chunk in await documents.document_chunks("doc-big")]
        seen["merge"] = [chunk.text for chunk in (await MergeReadRepo(db).merge_reads([], [whole])).chunks]
        seen["by_id"] = await documents.chunks_with_titles([chunk.chunk_id for chunk in new.chunks])
        seen["stats"] = (await KnowledgeBaseRepo(db).stats(kb.id))["chunks"]

    writer.peek = peek
    await documents.store_versions([(new, "doc-big")], existing={"doc-big"})

    assert seen == {
        "chunks": [c.text for c in old.chunks],
        "merge": [c.text for c in old.chunks],
        "by_id": [],
        "stats": 10,
    }
    assert [chunk.text for chunk in await documents.document_chunks("doc-big")] == [c.text for c in new.chunks]
    merged = (await MergeReadRepo(db).merge_reads([], [whole])).chunks
    assert [chunk.text for chunk in merged] == [c.text for c in new.chunks]
    assert (await KnowledgeBaseRepo(db).stats(kb.id))["chunks"] == 15
    assert await documents.committed_chunk_ids([c.chunk_id for c in old.chunks]) == set()


@pytest.fixture(scope="module")
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


GUIDE = "# Returns\n\nItems can be returned within 30 days.\n\n# Shipping\n\nOrders ship every weekday.\n"


def _source(text: str) -> SourceFile:
    return SourceFile(text.encode(), source_uri="upload:guide.md", filename="guide.md")


async def test_a_writer_dying_between_its_rows_and_its_switch_leaves_the_old_version_and_the_next_start_clears_the_rest(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("dies", chunking={})
    first = await DocumentIngestor(DocumentRepo(db), store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    documents = DocumentRepo(db)
    live = [chunk.chunk_id for chunk in await documents.document_chunks(first.document_id)]
    dying = DocumentRepo(db)
    dying.writer = DyingWriter(db)

    with pytest.raises(_Died):
        await DocumentIngestor(dying, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE + "More.\n"))

    assert [chunk.chunk_id for chunk in await documents.document_chunks(first.document_id)] == live
    assert await store.count(Collection.CHUNKS, [kb.id]) > len(live)
    await KnowledgeBases(KnowledgeBaseRepo(db), documents, store).repair_index()
    assert await store.count(Collection.CHUNKS, [kb.id]) == len(live)
    assert await documents.committed_chunk_ids(live) == set(live)
    assert await documents.writer.unsettled() == []
    assert await documents.unfinished_index_writes() == []
    assert (await DocumentIngestor(documents, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))).unchanged


async def test_a_delete_the_index_interrupts_hides_the_document_at_once_and_the_next_start_finishes_it(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, encoding: tiktoken.Encoding
) -> None:
    kb = await KnowledgeBaseRepo(db).create("half", chunking={})
    first = await DocumentIngestor(DocumentRepo(db), store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    documents = DocumentRepo(db)

    with pytest.raises(ConnectionError):
        await KnowledgeBases(KnowledgeBaseRepo(db), documents, FailingDeletes(store)).delete_document(
            "half", first.document_id
        )

    assert await documents.document_chunks(first.document_id) == []
    await KnowledgeBases(KnowledgeBaseRepo(db), documents, store).repair_index()
    assert await documents.in_kb(kb.id) == []
    assert await store.count(Collection.CHUNKS, [kb.id]) == 0
    again = await DocumentIngestor(documents, store, embedder, lexical, encoding).ingest(kb, _source(GUIDE))
    assert not again.unchanged
    assert await store.count(Collection.CHUNKS, [kb.id]) == again.chunks


async def test_deleting_a_big_document_writes_in_transactions_of_bounded_size(
    db: Database, store: WeaviateStore
) -> None:
    kb = await KnowledgeBaseRepo(db).create("bigdel", chunking={})
    documents = DocumentRepo(db)
    await documents.store_versions([(_version(kb.id, BIG, "first"), "doc-big")])

    with rows_per_transaction(db) as committed:
        await KnowledgeBases(KnowledgeBaseRepo(db), documents, store).delete_document("bigdel", "doc-big")

    assert await documents.in_kb(kb.id) == []
    assert sum(committed) >= BIG
    assert max(committed) <= ROWS_PER_TRANSACTION
