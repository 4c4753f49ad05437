"""Reindex on a Weaviate of its own: rebuilt from SQL, switched at once, interrupted safely, upgrading an old index
(one lacking properties, or one whose BM25 terms an older analyzer cut)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import jieba
import pytest
import pytest_asyncio
import tiktoken
from weaviate.classes.config import Configure, Property

from bot.words.messages import index_outdated, vectors_foreign
from rag.faq.search import FaqSearch
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.ports import EmbedKind
from rag.reindex import Reindexer
from rag.retrieval import Retriever
from rag.types import Candidate, Vector
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.records import KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.index_source import IndexSourceRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.config import WeaviateConfig, WeaviateServerConfig
from storage.weaviate.generations import create_physical, generation_name, live_target
from storage.weaviate.schema import ALL, META_PROPERTY, TITLE_PROPERTY, Collection, CollectionSpec
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore

DOCS = {
    "refunds.md": "Refunds are paid to the original card within five working days of the return.",
    "shipping.md": "Orders ship every weekday. Express delivery arrives the next day.",
    "退款.md": "退款会在五个工作日内退回到原支付卡。",
}
QUESTIONS = ("when are refunds paid?", "how fast is express delivery?", "退款多久到账")


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


@pytest_asyncio.fixture
async def own_server(weaviate_binary: Path, tmp_path: Path) -> AsyncIterator[WeaviateServer]:
    """A Weaviate of this test's own: reindexing switches whole collections, and an old index needs a fresh one."""
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path / "weaviate"))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _connect(server: WeaviateServer) -> WeaviateStore:
    assert server.endpoint is not None
    return await WeaviateStore.connect(server.endpoint, WeaviateConfig())


class _Setup:
    def __init__(self, db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer) -> None:
        self.db, self.store, self.lexical = db, store, lexical
        self.embedder = CachedEmbedder(embedder, SqlEmbeddingCache(db))

    async def kb(self, name: str) -> KnowledgeBaseRecord:
        kb = await KnowledgeBaseRepo(self.db).create(name, chunking={})
        ingestor = DocumentIngestor(
            DocumentRepo(self.db), self.store, self.embedder, self.lexical, tiktoken.get_encoding("cl100k_base")
        )
        for filename, text in DOCS.items():
            await ingestor.ingest(kb, SourceFile(text.encode(), source_uri=f"upload:{filename}", filename=filename))
        await FaqImporter(FaqRepo(self.db), self.store, self.embedder, self.lexical).import_entries(
            kb, [FaqEntry("How long do refunds take?", ("Five working days.",))]
        )
        return kb

    async def answers(self, kb: KnowledgeBaseRecord) -> list[list[tuple[str, str, str]]]:
        """Per question: the passages (id, text, title) and the FAQ ids found, as SEARCH finds them."""
        retriever = Retriever(self.store, self.embedder, self.lexical, DocumentRepo(self.db), FaqRepo(self.db))
        faqs = FaqSearch(self.store, FaqRepo(self.db), self.lexical, self.embedder)
        found = []
        for question in QUESTIONS:
            vector = await retriever.query_vector(question)
            chunks = await retriever.search_chunks(question, [kb.id], vector=vector)
            matched = await faqs.search(question, vector, [kb.id])
            found.append([_key(c) for c in chunks] + [_key(c) for c in matched])
        return found

    def reindexer(self, embedder: CachedEmbedder | None = None) -> Reindexer:
        return Reindexer(
            self.store, IndexSourceRepo(self.db), FaqRepo(self.db), embedder or self.embedder, self.lexical
        )

    async def every_kb(self) -> list[KnowledgeBaseRecord]:
        return await KnowledgeBaseRepo(self.db).all()


def _key(candidate: Candidate) -> tuple[str, str, str]:
    return candidate.id, candidate.text, str(candidate.metadata.get("title", ""))


async def _physical_names(store: WeaviateStore) -> set[str]:
    return set(await store._client.collections.list_all(simple=True))


async def test_reindex_rebuilds_a_knowledge_base_from_sql_and_it_answers_the_same(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    store = await _connect(own_server)
    try:
        setup = _Setup(db, store, embedder, lexical)
        kb, other = await setup.kb("shop"), await setup.kb("other")
        before, other_before = await setup.answers(kb), await setup.answers(other)
        assert all(before)
        # The index lost everything of the knowledge base: SQL still has it all.
        await store.delete_kb(kb.id)
        assert not any(await setup.answers(kb))

        result = await setup.reindexer().reindex(kb, await setup.every_kb())

        assert result.rebuilt == ("shop",)
        assert (result.chunks, result.faq_questions) == (len(DOCS), 1)
        assert await setup.answers(kb) == before
        assert await setup.answers(other) == other_before, "other knowledge bases are carried over as they were"
        assert len(await _physical_names(store)) == len(ALL), "the old generations are gone"
    finally:
        await store.close()


async def test_rebuild_all_leaves_the_index_holding_exactly_what_sql_holds(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    store = await _connect(own_server)
    try:
        setup = _Setup(db, store, embedder, lexical)
        kb, gone = await setup.kb("shop"), await setup.kb("gone")
        before = await setup.answers(kb)
        # As after a restore: the index lost what SQL holds, and holds a knowledge base SQL no longer knows.
        await store.delete_kb(kb.id)
        await KnowledgeBaseRepo(db).delete(gone.id)
        assert await store.count(Collection.CHUNKS, [gone.id]) == len(DOCS)

        result = await setup.reindexer().rebuild_all(await setup.every_kb())

        assert (result.rebuilt, result.chunks, result.faq_questions, result.copied) == (("shop",), len(DOCS), 1, 0)
        assert await setup.answers(kb) == before
        assert await store.count(Collection.CHUNKS, [gone.id]) == 0
        assert await store.count(Collection.FAQ_QUESTIONS, [gone.id]) == 0
    finally:
        await store.close()


class _Interrupted(Exception):
    pass


class _FailingEmbedder(CachedEmbedder):
    """Fails on the second call: an interruption half-way through a reindex."""

    calls = 0

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        if self.calls > 1:
            raise _Interrupted
        return await super().embed(texts)


async def test_an_interrupted_reindex_leaves_the_old_index_answering_and_nothing_of_the_new_one(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    store = await _connect(own_server)
    try:
        setup = _Setup(db, store, embedder, lexical)
        kb = await setup.kb("shop")
        before, names = await setup.answers(kb), await _physical_names(store)
        failing = _FailingEmbedder(embedder, SqlEmbeddingCache(db))

        with pytest.raises(_Interrupted):
            await setup.reindexer(failing).reindex(kb, await setup.every_kb())

        assert failing.calls == 2, "the first page went into the new generation before the interruption"
        assert await setup.answers(kb) == before
        assert await _physical_names(store) == names
    finally:
        await store.close()


def _older(spec: CollectionSpec) -> CollectionSpec:
    """The collection as an earlier ragbot made it: without the title and metadata properties."""
    properties: tuple[Property, ...] = tuple(
        prop for prop in spec.properties if prop.name not in (TITLE_PROPERTY, META_PROPERTY)
    )
    return CollectionSpec(spec.name, properties)


async def test_an_index_missing_a_property_says_to_reindex_keeps_answering_and_reindex_upgrades_it(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    first = await _connect(own_server)
    try:
        # An index made before aliases and before the new properties: plain collections under the names.
        for spec in ALL:
            target = await live_target(first._client, spec)
            assert target is not None
            await first._client.alias.delete(alias_name=spec.name)
            await first._client.collections.delete(target)
            await create_physical(first._client, _older(spec), spec.name)
    finally:
        await first.close()
    store = await _connect(own_server)
    serving = await _connect(own_server)  # another process, started before the reindex
    try:
        assert store.missing_properties() == {Collection.CHUNKS: (TITLE_PROPERTY, META_PROPERTY)}
        assert "`ragbot reindex --kb NAME`" in index_outdated(store.missing_properties())
        setup = _Setup(db, store, embedder, lexical)
        kb = await setup.kb("shop")
        old = await setup.answers(kb)
        # Answers still come, titles read from SQL; writing did not sneak the properties in through auto-schema.
        assert "refunds.md" in {title for found in old for _, _, title in found}
        assert all(old)
        assert (await _connect_missing(own_server)) == store.missing_properties()

        await setup.reindexer().reindex(kb, await setup.every_kb())

        assert store.missing_properties() == {}
        assert (await _connect_missing(own_server)) == {}
        assert await setup.answers(kb) == old
        # The other process notices the rebuilt index when it next writes, and writes the new properties.
        later = await _Setup(db, serving, embedder, lexical).kb("later")
        hits = [
            *await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text("refunds"), 3),
            *await store.search_bm25(Collection.CHUNKS, [later.id], lexical.bm25_text("refunds"), 3),
        ]
        assert {hit.properties["kb_id"] for hit in hits} == {kb.id, later.id}
        assert all(hit.properties[TITLE_PROPERTY] and hit.vector for hit in hits)
        assert serving.missing_properties() == {}
    finally:
        await serving.close()
        await store.close()


async def _connect_missing(server: WeaviateServer) -> dict[Collection, tuple[str, ...]]:
    """What a process starting now would find missing."""
    store = await _connect(server)
    try:
        return store.missing_properties()
    finally:
        await store.close()


class _FirstAnalyzer(LexicalAnalyzer):
    """The analyzer of version 1: jieba terms lower-cased, English neither stemmed nor stripped of stop words."""

    def tokens(self, text: str) -> list[str]:
        return [token.lower() for token in jieba.cut_for_search(text) if any(char.isalnum() for char in token)]


async def test_an_index_of_older_bm25_terms_says_to_reindex_and_reindex_cuts_every_kb_afresh(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    first = await _connect(own_server)
    try:
        # The collections as the ragbot before analyzer versions made them: every property, no terms record.
        for spec in ALL:
            name = generation_name(spec)
            await first._client.collections.create(
                name,
                properties=list(spec.properties),
                vector_config=Configure.Vectors.self_provided(vector_index_config=Configure.VectorIndex.hnsw()),
            )
            previous = await live_target(first._client, spec)
            await first._client.alias.update(alias_name=spec.name, new_target_collection=name)
            assert previous is not None
            await first._client.collections.delete(previous)
    finally:
        await first.close()
    store = await _connect(own_server)
    try:
        assert store.stale_terms() == {Collection.CHUNKS: 1, Collection.FAQ_QUESTIONS: 1}
        assert store.missing_properties() == {}
        note = index_outdated(store.missing_properties(), store.stale_terms())
        assert "older text analyzer" in note
        assert "`ragbot reindex --kb NAME`" in note
        old = _Setup(db, store, embedder, _FirstAnalyzer())
        kb, other = await old.kb("shop"), await old.kb("other")
        query = lexical.bm25_text("refund")
        assert await store.search_bm25(Collection.CHUNKS, [kb.id, other.id], query, 3) == [], (
            "the old terms keep 'refunds' whole: the stemmed query misses it"
        )

        result = await _Setup(db, store, embedder, lexical).reindexer().reindex(kb, await old.every_kb())

        assert sorted(result.rebuilt) == ["other", "shop"], "copies of the other knowledge base would keep old terms"
        assert store.stale_terms() == {}
        assert (await _connect_stale(own_server)) == {}
        hits = await store.search_bm25(Collection.CHUNKS, [kb.id, other.id], query, 3)
        assert {hit.properties["kb_id"] for hit in hits} == {kb.id, other.id}
        assert all(set(str(hit.properties["bm25_text"]).split()) >= {"refund", "paid"} for hit in hits)
        faq_hits = await store.search_bm25(Collection.FAQ_QUESTIONS, [kb.id], lexical.bm25_text("refunded"), 3)
        assert [hit.properties["kb_id"] for hit in faq_hits] == [kb.id]
    finally:
        await store.close()


async def _connect_stale(server: WeaviateServer) -> dict[Collection, int]:
    """Which collections a process starting now would find cut by an older analyzer."""
    store = await _connect(server)
    try:
        return store.stale_terms()
    finally:
        await store.close()


class _OtherModel:
    """Our Embedder protocol over the real model, with its vectors permuted: the vector space of another model."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner = inner
        self.provider = inner.provider

    @property
    def model_id(self) -> str:
        return "other-model"

    @property
    def dimension(self) -> int | None:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        return [list(reversed(vector)) for vector in await self.inner.embed(texts, kind=kind)]


async def test_an_index_of_another_embedding_models_vectors_is_refused_until_reindex_reembeds_every_kb(
    db: Database, own_server: WeaviateServer, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    first = await _connect(own_server)
    try:
        # A fresh index is claimed for the first model that starts on it, and stays claimed for it.
        assert await first.claim_vectors("model-a") == {}
        assert await first.claim_vectors("model-a") == {}
        setup = _Setup(db, first, embedder, lexical)
        kb, other = await setup.kb("shop"), await setup.kb("other")
    finally:
        await first.close()
    store = await _connect(own_server)
    try:
        held = await store.claim_vectors("other-model")
        assert held == {Collection.CHUNKS: "model-a", Collection.FAQ_QUESTIONS: "model-a"}
        refusal = vectors_foreign("model-a", "other-model")
        assert "`ragbot reindex --kb NAME`" in refusal
        assert "model-a" in refusal

        now = _Setup(db, store, embedder, lexical)
        reembedder = _OtherModel(now.embedder)
        result = await now.reindexer(reembedder).reindex(kb, await now.every_kb())

        assert sorted(result.rebuilt) == ["other", "shop"], "copies of the other knowledge base hold old vectors"
        assert store.foreign_vectors() == {}
        query = (await reembedder.embed(["How long do refunds take?"], kind="query"))[0]
        hits = await store.search_vector(Collection.CHUNKS, [kb.id, other.id], query, 3)
        assert {hit.properties["kb_id"] for hit in hits} == {kb.id, other.id}
    finally:
        await store.close()
    later = await _connect(own_server)
    try:
        assert await later.claim_vectors("other-model") == {}
        assert await later.claim_vectors("model-a") == {
            Collection.CHUNKS: "other-model",
            Collection.FAQ_QUESTIONS: "other-model",
        }
    finally:
        await later.close()


async def test_an_empty_index_is_claimed_by_whichever_model_starts_on_it(own_server: WeaviateServer) -> None:
    store = await _connect(own_server)
    try:
        assert await store.claim_vectors("model-a") == {}
        assert await store.claim_vectors("model-b") == {}
        assert store.foreign_vectors() == {}
    finally:
        await store.close()
