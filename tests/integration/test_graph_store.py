"""The relational graph store on SQLite and PostgreSQL: live chunks only, bounded reads, one base's entities."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

import pytest
import tiktoken
from sqlalchemy import func, insert, text
from sqlalchemy.dialects import sqlite
from sqlmodel import col, select

from rag.graph.entities import entity_key
from rag.graph.index import GraphIndexer
from rag.graph.leg import EntitySearch
from rag.graph.question import RuleEntities
from rag.graph.rank import EntityLimits
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.pipeline import TurnContext
from rag.retrieval import chunk_candidate
from rag.types import Candidate
from storage.db import Database
from storage.errors import StorageError
from storage.models import Chunk, Document, GraphEdge, GraphMention, GraphNode, GraphSwitch
from storage.records import ChunkGraph, ChunkRecord, DocumentVersion, GraphEntityRecord, GraphRelationRecord
from storage.repos.documents import DocumentRepo
from storage.repos.graph import GraphRepo, mentioning, node_id
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.store import WeaviateStore

# The bad input of issue 23: one entity that a hundred thousand chunks mention.
MANY = 100_000


class SqlChunks:
    """Chunk ids to candidates from SQL alone, as the Retriever does for ids without index hits."""

    def __init__(self, documents: DocumentRepo) -> None:
        self._documents = documents

    async def chunk_candidates(
        self, scored: Sequence[tuple[str, float]], legs: Mapping[str, frozenset[str]]
    ) -> list[Candidate]:
        rows = {chunk.chunk_id: chunk for chunk, _ in await self._documents.chunks_with_titles([c for c, _ in scored])}
        return [chunk_candidate(rows[c], score, legs[c]) for c, score in scored if c in rows]


def _version(kb_id: str, texts: Sequence[str], content: str, source: str = "upload:a.txt") -> DocumentVersion:
    records, start = [], 0
    for n, line in enumerate(texts):
        chunk_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kb_id}/{source}/{content}/{n}"))
        records.append(ChunkRecord(chunk_id, kb_id, "", None, n, start, start + len(line), line, line))
        start += len(line)
    text_ = "".join(texts)
    return DocumentVersion(kb_id, source, source, "text/plain", content, "rule", text_, (), tuple(records))


async def _ingest(db: Database, kb_id: str, texts: Sequence[str], content: str, document_id: str) -> list[ChunkRecord]:
    documents = DocumentRepo(db)
    existing = {document_id} if await _exists(db, document_id) else set()
    version = _version(kb_id, texts, content, f"upload:{document_id}.txt")
    (stored,) = await documents.store_versions([(version, document_id)], existing=existing)
    assert not isinstance(stored, Exception)
    chunks = await documents.document_chunks(document_id)
    await GraphIndexer(GraphRepo(db)).index(kb_id, chunks)
    return chunks


async def _exists(db: Database, document_id: str) -> bool:
    async with db.session() as session:
        return await session.get(Document, document_id) is not None


async def _count(db: Database, model: type, **where: str) -> int:
    async with db.session() as session:
        statement = select(func.count()).select_from(model)
        for name, value in where.items():
            statement = statement.where(col(getattr(model, name)) == value)
        return int((await session.exec(statement)).one())


def _leg(db: Database, limits: EntityLimits | None = None) -> EntitySearch:
    return EntitySearch(GraphRepo(db), SqlChunks(DocumentRepo(db)), RuleEntities(), limits)


async def _kb(db: Database, name: str, *, graph: bool = True) -> str:
    kb = await KnowledgeBaseRepo(db).create(name, chunking={})
    await GraphRepo(db).switch(kb.id, enabled=graph)
    return kb.id


async def test_the_leg_finds_chunks_naming_the_questions_entity_and_ranks_those_naming_more_first(db: Database) -> None:
    kb = await _kb(db, "products")
    await _ingest(
        db,
        kb,
        [
            "The Acme X200 ships with a 65 W charger.",
            "Support for the X200 ends in 2030.",
            "Warranty claims go through Acme Care for the X200 and the X300.",
            "Our offices close at noon on Fridays.",
        ],
        "v1",
        "doc-products",
    )

    found = await _leg(db).search(TurnContext("How long is X200 support under Acme Care?", (kb,)), [])

    texts = [candidate.text for candidate in found]
    assert texts[0].startswith("Warranty claims go through Acme Care")
    assert set(texts) == {
        "The Acme X200 ships with a 65 W charger.",
        "Support for the X200 ends in 2030.",
        "Warranty claims go through Acme Care for the X200 and the X300.",
    }
    assert all(candidate.legs == frozenset({"graph"}) for candidate in found)


async def test_entities_of_another_knowledge_base_are_never_returned(db: Database) -> None:
    ours, theirs = await _kb(db, "ours"), await _kb(db, "theirs")
    await _ingest(db, ours, ["Project Falcon starts in May."], "v1", "doc-ours")
    await _ingest(db, theirs, ["Project Falcon is secret: budget 4 million."], "v1", "doc-theirs")

    found = await _leg(db).search(TurnContext("When does Project Falcon start?", (ours,)), [])

    assert [candidate.text for candidate in found] == ["Project Falcon starts in May."]
    assert {candidate.kb_id for candidate in found} == {ours}


async def test_the_leg_is_off_for_a_base_whose_graph_is_switched_off(db: Database) -> None:
    on, off = await _kb(db, "on"), await _kb(db, "off", graph=False)
    await _ingest(db, on, ["Project Falcon starts in May."], "v1", "doc-on")
    falcon = GraphEntityRecord("project falcon", "Project Falcon")
    await GraphRepo(db).add(off, [ChunkGraph("doc-x", "chunk-x", (falcon,))])

    assert await _count(db, GraphMention, kb_id=off) == 1
    assert await _leg(db).search(TurnContext("Project Falcon?", (off,)), []) == []
    assert await GraphIndexer(GraphRepo(db)).index(off, [_version(off, ["Project Falcon"], "v").chunks[0]]) == 0


async def test_a_replaced_version_drops_out_at_once_and_its_mentions_go_with_its_chunks(db: Database) -> None:
    kb = await _kb(db, "replace")
    old = await _ingest(db, kb, ["Project Falcon starts in May.", "Project Heron starts in June."], "v1", "doc-r")
    new = await _ingest(db, kb, ["Project Falcon starts in July."], "v2", "doc-r")

    found = await _leg(db).search(TurnContext("Project Falcon or Project Heron?", (kb,)), [])
    assert [candidate.text for candidate in found] == ["Project Falcon starts in July."]

    writer = DocumentRepo(db).writer
    for version in await writer.unlive_versions("doc-r"):
        await writer.drop_chunks("doc-r", version, [chunk.chunk_id for chunk in old])
    async with db.session() as session:
        left = set((await session.exec(select(GraphMention.chunk_id).where(GraphMention.kb_id == kb))).all())
    assert left == {new[0].chunk_id}


async def test_a_deleted_document_and_a_deleted_base_take_their_graph_rows_with_them(db: Database) -> None:
    kb = await _kb(db, "deleting")
    chunks = await _ingest(db, kb, ["Project Falcon starts in May."], "v1", "doc-d")
    relation = GraphRelationRecord("project falcon", "may", "starts in")
    await GraphRepo(db).add(kb, [ChunkGraph("doc-d", chunks[0].chunk_id, (), (relation,))])
    await _ingest(db, kb, ["Project Heron starts in June."], "v1", "doc-e")

    writer = DocumentRepo(db).writer
    await writer.mark_deleting("doc-d")
    for version in await writer.unlive_versions("doc-d"):
        await writer.drop_chunks("doc-d", version, [chunks[0].chunk_id])
    assert await writer.drop_document_row("doc-d")
    assert await _count(db, GraphMention, document_id="doc-d") == 0
    assert await _count(db, GraphEdge, document_id="doc-d") == 0
    assert await _count(db, GraphMention, document_id="doc-e") == 2  # Project Heron, June

    await KnowledgeBaseRepo(db).delete(kb)
    for model in (GraphMention, GraphEdge, GraphNode, GraphSwitch):
        assert await _count(db, model, kb_id=kb) == 0


async def _bulk_mentions(db: Database, kb_id: str, key: str, count: int) -> None:
    """`count` live chunks of one document, each mentioning the entity `key`, written in bulk."""
    document_id = f"doc-bulk-{kb_id[:8]}"
    node = node_id(kb_id, key)
    async with db.session() as session:
        session.add(Document(id=document_id, kb_id=kb_id, source_uri="upload:bulk.txt", status="indexed", version="v"))
        session.add(GraphNode(id=node, kb_id=kb_id, name=key))
    for start in range(0, count, 10_000):
        ids = [f"{kb_id[:8]}-{n:06d}" for n in range(start, min(start + 10_000, count))]
        async with db.session() as session:
            connection = await session.connection()
            await connection.execute(
                insert(Chunk),
                [
                    {
                        "id": chunk_id,
                        "document_id": document_id,
                        "kb_id": kb_id,
                        "position": n,
                        "text": f"Acme note {chunk_id}",
                        "start_offset": 0,
                        "end_offset": 0,
                        "content_hash": "",
                        "meta": {},
                        "version": "v",
                    }
                    for n, chunk_id in enumerate(ids, start)
                ],
            )
            await connection.execute(
                insert(GraphMention),
                [{"node_id": node, "chunk_id": c, "kb_id": kb_id, "document_id": document_id} for c in ids],
            )


async def test_an_entity_a_hundred_thousand_chunks_mention_is_capped_and_read_by_its_key(db: Database) -> None:
    kb = await _kb(db, "bulk")
    await _bulk_mentions(db, kb, entity_key("Acme"), MANY)
    limits = EntityLimits(per_entity=20, total=50, read=200)

    found = await _leg(db, limits).search(TurnContext("What does Acme sell?", (kb,)), [])

    assert len(found) == limits.per_entity
    assert len((await GraphRepo(db).chunks_mentioning([kb], ["acme"], 7))["acme"]) == 7
    if db.config.is_sqlite:
        # The read walks the entity's mentions by their key and stops at the limit: no scan of the table.
        statement = mentioning([node_id(kb, "acme")], [kb], limits.read)
        compiled = statement.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
        async with db.engine.connect() as connection:
            rows = await connection.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
            plan = " | ".join(str(row[-1]) for row in rows)
        assert "SEARCH graph_mention USING" in plan, plan
        assert "SCAN graph_mention" not in plan, plan


class RefusingGraph(GraphRepo):
    """The real graph store, but its writes fail as a full disk or a lost connection would make them."""

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        raise StorageError("graph write failed: disk I/O error")


def _ingestor(db: Database, store: WeaviateStore, embedder: OnnxEmbedder, graph: GraphRepo) -> DocumentIngestor:
    encoding = tiktoken.get_encoding("cl100k_base")
    return DocumentIngestor(DocumentRepo(db), store, embedder, LexicalAnalyzer(), encoding, graph=GraphIndexer(graph))


async def test_a_reingested_document_keeps_only_its_new_versions_mentions(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder
) -> None:
    kb_id = await _kb(db, "ingested")
    kb = await KnowledgeBaseRepo(db).get(kb_id)
    ingestor = _ingestor(db, store, embedder, GraphRepo(db))
    await ingestor.ingest(kb, SourceFile(b"Project Falcon starts in May.", "upload:plan.txt"))
    await ingestor.ingest(kb, SourceFile(b"Project Heron starts in June.", "upload:plan.txt"))

    async with db.session() as session:
        nodes = set((await session.exec(select(GraphMention.node_id).where(GraphMention.kb_id == kb_id))).all())
    assert nodes == {node_id(kb_id, "project heron"), node_id(kb_id, "june")}
    found = await _leg(db).search(TurnContext("Project Falcon or Project Heron?", (kb_id,)), [])
    assert [candidate.text for candidate in found] == ["Project Heron starts in June."]


async def test_a_graph_the_store_refuses_costs_its_entities_only_not_the_document(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    kb_id = await _kb(db, "refused")
    kb = await KnowledgeBaseRepo(db).get(kb_id)

    result = await _ingestor(db, store, embedder, RefusingGraph(db)).ingest(
        kb, SourceFile(b"Project Falcon starts in May.", "upload:plan.txt")
    )

    assert result.chunks == 1
    assert len(await DocumentRepo(db).document_chunks(result.document_id)) == 1
    assert [r.getMessage() for r in caplog.records if "graph=not_indexed" in r.getMessage()] != []
    assert await _count(db, GraphMention, kb_id=kb_id) == 0
