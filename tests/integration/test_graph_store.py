"""The graph store contract, on the relational store (SQLite, PostgreSQL) and on Neo4j: live chunks only, bounded
reads, one base's entities, a document's and a base's graph gone with them."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence

import pytest
import pytest_asyncio
import tiktoken
from sqlalchemy import func, insert, text
from sqlalchemy.dialects import sqlite
from sqlmodel import col, select

from fakes.openai_api import FakeOpenAI
from rag.config import ChatModelConfig
from rag.graph.entities import entity_key
from rag.graph.index import GraphIndexer, ModelExtraction
from rag.graph.leg import EntitySearch
from rag.graph.question import RuleEntities
from rag.graph.rank import EntityLimits
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import OnnxEmbedder
from rag.pipeline import TurnContext
from rag.retrieval import chunk_candidate
from rag.types import Candidate
from storage.db import Database
from storage.errors import StorageError
from storage.graph.neo4j import MENTIONING, Neo4jGraph
from storage.models import Chunk, Document, GraphMention
from storage.records import ChunkGraph, ChunkRecord, DocumentVersion, GraphEntityRecord, GraphRelationRecord
from storage.repos.documents import DocumentRepo
from storage.repos.graph import GraphRepo, mentioning, node_id
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.store import WeaviateStore
from tests.support.graphs import GRAPH_STORES, GraphBackend, graph_backend

# The bad input of issue 23: one entity that a hundred thousand chunks mention.
MANY = 100_000


@pytest.fixture(params=GRAPH_STORES)
def graph_store(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """Which graph store a contract test runs on, and the Bolt URI of the session's Neo4j for `neo4j`."""
    name = str(request.param)
    # Asked for here, outside the event loop: only the Neo4j runs start the server.
    return name, request.getfixturevalue("neo4j_server").uri if name == "neo4j" else None


@pytest_asyncio.fixture
async def graph(graph_store: tuple[str, str | None], db: Database) -> AsyncIterator[GraphBackend]:
    """The graph store over the test's database: the relational one, or Neo4j (the session's server)."""
    async with graph_backend(*graph_store, db) as backend:
        yield backend


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


async def _ingest(
    graph: GraphBackend, kb_id: str, texts: Sequence[str], content: str, document_id: str
) -> list[ChunkRecord]:
    documents = graph.documents
    existing = {document_id} if await _exists(graph.db, document_id) else set()
    version = _version(kb_id, texts, content, f"upload:{document_id}.txt")
    (stored,) = await documents.store_versions([(version, document_id)], existing=existing)
    assert not isinstance(stored, Exception)
    chunks = await documents.document_chunks(document_id)
    await GraphIndexer(graph.store).index(kb_id, chunks)
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


def _leg(graph: GraphBackend, limits: EntityLimits | None = None) -> EntitySearch:
    return EntitySearch(graph.store, SqlChunks(DocumentRepo(graph.db)), RuleEntities(), limits)


async def _kb(graph: GraphBackend, name: str, *, on: bool = True) -> str:
    kb = await graph.knowledge_bases.create(name, chunking={})
    await graph.store.switch(kb.id, enabled=on)
    return kb.id


async def test_the_leg_finds_chunks_naming_the_questions_entity_and_ranks_those_naming_more_first(
    graph: GraphBackend,
) -> None:
    kb = await _kb(graph, "products")
    await _ingest(
        graph,
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

    found = await _leg(graph).search(TurnContext("How long is X200 support under Acme Care?", (kb,)), [])

    texts = [candidate.text for candidate in found]
    assert texts[0].startswith("Warranty claims go through Acme Care")
    assert set(texts) == {
        "The Acme X200 ships with a 65 W charger.",
        "Support for the X200 ends in 2030.",
        "Warranty claims go through Acme Care for the X200 and the X300.",
    }
    assert all(candidate.legs == frozenset({"graph"}) for candidate in found)


async def test_entities_of_another_knowledge_base_are_never_returned(graph: GraphBackend) -> None:
    ours, theirs = await _kb(graph, "ours"), await _kb(graph, "theirs")
    await _ingest(graph, ours, ["Project Falcon starts in May."], "v1", "doc-ours")
    await _ingest(graph, theirs, ["Project Falcon is secret: budget 4 million."], "v1", "doc-theirs")

    found = await _leg(graph).search(TurnContext("When does Project Falcon start?", (ours,)), [])

    assert [candidate.text for candidate in found] == ["Project Falcon starts in May."]
    assert {candidate.kb_id for candidate in found} == {ours}
    assert await graph.store.chunks_mentioning([ours], ["project falcon"], 10) == {
        "project falcon": list(await graph.mentioned(kb_id=ours))
    }


async def test_the_leg_is_off_for_a_base_whose_graph_is_switched_off(graph: GraphBackend) -> None:
    on, off = await _kb(graph, "on"), await _kb(graph, "off", on=False)
    await _ingest(graph, on, ["Project Falcon starts in May."], "v1", "doc-on")
    falcon = GraphEntityRecord("project falcon", "Project Falcon")
    await graph.store.add(off, [ChunkGraph("doc-x", f"x-{off[:8]}", (falcon,))])

    assert await graph.mentioned(kb_id=off) == {f"x-{off[:8]}"}
    assert await _leg(graph).search(TurnContext("Project Falcon?", (off,)), []) == []
    assert await GraphIndexer(graph.store).index(off, [_version(off, ["Project Falcon"], "v").chunks[0]]) == 0


async def test_a_replaced_version_drops_out_at_once_and_its_mentions_go_with_its_chunks(graph: GraphBackend) -> None:
    kb = await _kb(graph, "replace")
    old = await _ingest(graph, kb, ["Project Falcon starts in May.", "Project Heron starts in June."], "v1", "doc-r")
    new = await _ingest(graph, kb, ["Project Falcon starts in July."], "v2", "doc-r")

    found = await _leg(graph).search(TurnContext("Project Falcon or Project Heron?", (kb,)), [])
    assert [candidate.text for candidate in found] == ["Project Falcon starts in July."]
    # The store itself answers with live chunks only, whatever it still holds of the replaced version.
    held = await graph.store.chunks_mentioning([kb], ["project falcon", "project heron"], 10)
    assert held == {"project falcon": [new[0].chunk_id], "project heron": []}

    writer = graph.documents.writer
    for version in await writer.unlive_versions("doc-r"):
        await writer.drop_chunks("doc-r", version, [chunk.chunk_id for chunk in old])
    assert await graph.mentioned(kb_id=kb) == {new[0].chunk_id}


async def test_a_deleted_document_and_a_deleted_base_take_their_graph_with_them(graph: GraphBackend) -> None:
    kb = await _kb(graph, "deleting")
    chunks = await _ingest(graph, kb, ["Project Falcon starts in May."], "v1", "doc-d")
    relation = GraphRelationRecord("project falcon", "may", "starts in")
    await graph.store.add(kb, [ChunkGraph("doc-d", chunks[0].chunk_id, (), (relation,))])
    await _ingest(graph, kb, ["Project Heron starts in June."], "v1", "doc-e")
    assert await graph.relations("doc-d") == 1

    writer = graph.documents.writer
    await writer.mark_deleting("doc-d")
    for version in await writer.unlive_versions("doc-d"):
        await writer.drop_chunks("doc-d", version, [chunk.chunk_id for chunk in chunks])
    assert await writer.drop_document_row("doc-d")
    assert await graph.mentioned(document_id="doc-d") == set()
    assert await graph.relations("doc-d") == 0
    assert len(await graph.mentioned(document_id="doc-e")) == 1  # Project Heron and June, in its one chunk

    await graph.knowledge_bases.delete(kb)
    assert await graph.mentioned(kb_id=kb) == set()
    assert await graph.entities(kb) == 0
    assert await graph.store.enabled([kb]) == set()


async def test_a_graph_that_was_never_told_of_a_replacement_still_returns_live_chunks_only(
    graph: GraphBackend,
) -> None:
    kb = await _kb(graph, "untold")
    old = await _ingest(graph, kb, ["Project Falcon starts in May."], "v1", "doc-u")
    new = await _ingest(graph, kb, ["Project Falcon starts in July."], "v2", "doc-u")
    # The old version's rows go without the graph being told (a Neo4j down at that moment).
    writer = DocumentRepo(graph.db).writer
    for version in await writer.unlive_versions("doc-u"):
        await writer.drop_chunks("doc-u", version, [chunk.chunk_id for chunk in old])

    assert await graph.store.chunks_mentioning([kb], ["project falcon"], 1) == {"project falcon": [new[0].chunk_id]}
    found = await _leg(graph).search(TurnContext("When does Project Falcon start?", (kb,)), [])
    assert [candidate.text for candidate in found] == ["Project Falcon starts in July."]


async def _bulk_chunks(db: Database, kb_id: str, count: int) -> tuple[str, list[str]]:
    """A document of `count` live chunks, written in bulk: its id and the chunk ids."""
    document_id = f"doc-bulk-{kb_id[:8]}"
    async with db.session() as session:
        session.add(Document(id=document_id, kb_id=kb_id, source_uri="upload:bulk.txt", status="indexed", version="v"))
    ids = [f"{kb_id[:8]}-{n:06d}" for n in range(count)]
    for start in range(0, count, 10_000):
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
                    for n, chunk_id in enumerate(ids[start : start + 10_000], start)
                ],
            )
    return document_id, ids


async def test_an_entity_a_hundred_thousand_chunks_mention_is_capped_and_read_by_its_key(graph: GraphBackend) -> None:
    kb = await _kb(graph, "bulk")
    document_id, ids = await _bulk_chunks(graph.db, kb, MANY)
    await graph.bulk_mentions(kb, document_id, entity_key("Acme"), ids)
    limits = EntityLimits(per_entity=20, total=50, read=200)

    found = await _leg(graph, limits).search(TurnContext("What does Acme sell?", (kb,)), [])

    assert len(found) == limits.per_entity
    assert len((await graph.store.chunks_mentioning([kb], ["acme"], 7))["acme"]) == 7
    if isinstance(graph.store, Neo4jGraph):
        # The read starts at the entity's node and stops at the limit: its database hits follow the limit, not the
        # hundred thousand mentions.
        wants = [{"key": "acme", "skip": []}]
        result = await graph.driver.execute_query(  # type: ignore[union-attr]
            "PROFILE " + MENTIONING, {"wants": wants, "kb_ids": [kb], "limit": limits.read}
        )
        assert result.summary.profile is not None
        assert _db_hits(result.summary.profile) < 20 * limits.read
    elif graph.db.config.is_sqlite:
        # The read walks the entity's mentions by their key and stops at the limit: no scan of the table.
        statement = mentioning([node_id(kb, "acme")], [kb], limits.read)
        compiled = statement.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
        async with graph.db.engine.connect() as connection:
            rows = await connection.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
            plan = " | ".join(str(row[-1]) for row in rows)
        assert "SEARCH graph_mention USING" in plan, plan
        assert "SCAN graph_mention" not in plan, plan


def _db_hits(plan: Mapping[str, object]) -> int:
    """A profiled plan's database hits, its children's included."""
    children = plan.get("children", [])
    assert isinstance(children, list)
    return int(str(plan.get("dbHits", 0))) + sum(_db_hits(child) for child in children)


class RefusingGraph(GraphRepo):
    """The real graph store, but its writes fail as a full disk or a lost connection would make them."""

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        raise StorageError("graph write failed: disk I/O error")


def _ingestor(
    documents: DocumentRepo, store: WeaviateStore, embedder: OnnxEmbedder, graph: GraphRepo | Neo4jGraph
) -> DocumentIngestor:
    encoding = tiktoken.get_encoding("cl100k_base")
    return DocumentIngestor(documents, store, embedder, LexicalAnalyzer(), encoding, graph=GraphIndexer(graph))


async def test_a_reingested_document_keeps_only_its_new_versions_mentions(
    graph: GraphBackend, store: WeaviateStore, embedder: OnnxEmbedder
) -> None:
    kb_id = await _kb(graph, "ingested")
    kb = await graph.knowledge_bases.get(kb_id)
    ingestor = _ingestor(graph.documents, store, embedder, graph.store)
    await ingestor.ingest(kb, SourceFile(b"Project Falcon starts in May.", "upload:plan.txt"))
    result = await ingestor.ingest(kb, SourceFile(b"Project Heron starts in June.", "upload:plan.txt"))

    (chunk,) = await graph.documents.document_chunks(result.document_id)
    assert await graph.mentioned(kb_id=kb_id) == {chunk.chunk_id}
    held = await graph.store.mentions_among([kb_id], ["project falcon", "project heron", "june"], [chunk.chunk_id])
    assert held == {chunk.chunk_id: {"project heron", "june"}}
    found = await _leg(graph).search(TurnContext("Project Falcon or Project Heron?", (kb_id,)), [])
    assert [candidate.text for candidate in found] == ["Project Heron starts in June."]


async def test_a_graph_the_store_refuses_costs_its_entities_only_not_the_document(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    kb_id = (await KnowledgeBaseRepo(db).create("refused", chunking={})).id
    await GraphRepo(db).switch(kb_id, enabled=True)
    kb = await KnowledgeBaseRepo(db).get(kb_id)

    result = await _ingestor(DocumentRepo(db), store, embedder, RefusingGraph(db)).ingest(
        kb, SourceFile(b"Project Falcon starts in May.", "upload:plan.txt")
    )

    assert result.chunks == 1
    assert len(await DocumentRepo(db).document_chunks(result.document_id)) == 1
    assert [r.getMessage() for r in caplog.records if "graph=not_indexed" in r.getMessage()] != []
    assert await _count(db, GraphMention, kb_id=kb_id) == 0


# --- Relations read by the model at ingestion (GRAPH_MODEL_EXTRACTION) and the leg's one-hop walk -------------------

LEAD = "Project Falcon is led by Dana Whitfield."
TRAVEL = "Dana Whitfield approves all travel."
# The fake model's reading of each chunk, in the seed's shape; a chunk it does not know gets no entity.
READINGS = {
    LEAD: {
        "nodes": [{"name": "Project Falcon", "attributes": ["project"]}, {"name": "Dana Whitfield"}],
        "relations": [{"node1": "Project Falcon", "node2": "Dana Whitfield", "type": "led by"}],
    },
    TRAVEL: {"nodes": [{"name": "Dana Whitfield", "attributes": ["approves travel"]}], "relations": []},
}


@pytest_asyncio.fixture
async def fake_model() -> AsyncIterator[FakeOpenAI]:
    """The fake OpenAI API, answering each chunk's extraction from READINGS."""
    async with FakeOpenAI() as running:
        running.reply_for = lambda body: json.dumps(READINGS.get(body["messages"][-1]["content"], {"nodes": []}))
        yield running


@pytest_asyncio.fixture
async def chat_model(fake_model: FakeOpenAI) -> AsyncIterator[OpenAIChatModel]:
    """The real OpenAI client on the fake, without retries."""
    config = ChatModelConfig(model="fake-chat", base_url=fake_model.base_url, api_key="test-key", max_retries=0)
    model = OpenAIChatModel(config)
    yield model
    await model.close()


async def _ingest_read_by(
    graph: GraphBackend, indexer: GraphIndexer, kb_id: str, texts: Sequence[str], document_id: str
) -> list[ChunkRecord]:
    (stored,) = await graph.documents.store_versions([(_version(kb_id, texts, "v1"), document_id)], existing=set())
    assert not isinstance(stored, Exception)
    chunks = await graph.documents.document_chunks(document_id)
    await indexer.index(kb_id, chunks)
    return chunks


async def test_the_models_relations_are_stored_and_the_leg_walks_one_hop_to_a_chunk_naming_only_the_related_entity(
    graph: GraphBackend, chat_model: OpenAIChatModel
) -> None:
    kb = await _kb(graph, "projects")
    indexer, document_id = GraphIndexer(graph.store, ModelExtraction(chat_model)), str(uuid.uuid4())
    await _ingest_read_by(graph, indexer, kb, [LEAD, TRAVEL, "Our offices close at noon on Fridays."], document_id)

    assert await graph.relations(document_id) == 1
    assert await graph.store.related([kb], ["project falcon"], 10) == ["dana whitfield"]
    assert await graph.store.related([kb], ["dana whitfield"], 10) == ["project falcon"]
    found = await _leg(graph).search(TurnContext("Who approves travel for Project Falcon?", (kb,)), [])

    # The chunk naming Falcon first; the one naming only Dana after it, through the relation, scored lower.
    assert [candidate.text for candidate in found] == [LEAD, TRAVEL]
    assert found[0].score > found[1].score


async def test_a_reply_that_is_not_json_reads_the_chunk_by_rule_with_one_log_line_a_batch(
    graph: GraphBackend, chat_model: OpenAIChatModel, fake_model: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_model.reply_for = lambda body: "Sure! Project Falcon and Dana Whitfield are the entities here."
    kb = await _kb(graph, "projects")
    indexer, document_id = GraphIndexer(graph.store, ModelExtraction(chat_model)), str(uuid.uuid4())
    chunks = await _ingest_read_by(graph, indexer, kb, [LEAD, TRAVEL], document_id)

    assert await graph.mentioned(kb_id=kb) == {chunk.chunk_id for chunk in chunks}
    assert await graph.relations(document_id) == 0
    held = await graph.store.mentions_among([kb], ["project falcon", "dana whitfield"], [chunks[0].chunk_id])
    assert held == {chunks[0].chunk_id: {"project falcon", "dana whitfield"}}
    fallbacks = [r.getMessage() for r in caplog.records if "graph" in r.getMessage() and r.levelno >= logging.WARNING]
    assert fallbacks == ["graph extraction=rules chunks=2 of 2 not_json=2"]


async def test_the_one_hop_chunks_are_capped_and_of_the_questions_bases_only(graph: GraphBackend) -> None:
    ours, theirs = await _kb(graph, "ours"), await _kb(graph, "theirs")
    signed = [f"Dana Whitfield signed form {n}." for n in range(30)]
    (lead, *_) = await _ingest(graph, ours, [LEAD, *signed], "v1", "doc-ours")
    await _ingest(graph, theirs, [LEAD, "Dana Whitfield approves the secret budget."], "v1", "doc-theirs")
    falcon, dana = GraphEntityRecord("project falcon", "Project Falcon"), GraphEntityRecord("dana whitfield", "Dana")
    relation = GraphRelationRecord("project falcon", "dana whitfield", "led by")
    for kb_id, document_id, chunk_id in ((ours, "doc-ours", lead.chunk_id), (theirs, "doc-theirs", f"x-{theirs[:8]}")):
        await graph.store.add(kb_id, [ChunkGraph(document_id, chunk_id, (falcon, dana), (relation,))])

    found = await _leg(graph).search(TurnContext("Who signs for Project Falcon?", (ours,)), [])

    assert found[0].text == LEAD
    assert len(found) == 1 + EntityLimits().hop
    assert {candidate.kb_id for candidate in found} == {ours}
    assert all(candidate.text in signed for candidate in found[1:])
    direct_only = await _leg(graph, EntityLimits(hop=0)).search(TurnContext("Project Falcon?", (ours,)), [])
    assert [candidate.text for candidate in direct_only] == [LEAD]
