"""WeaviateStore against the real server: search legs, kb isolation, deletes, surfaced batch errors."""

from __future__ import annotations

import uuid

import jieba
import pytest

from rag.models.embedders import OnnxEmbedder
from storage.errors import IndexWriteError
from storage.records import ChunkRecord, FaqQuestionRecord
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore

TEXTS = [
    "The refund policy allows returns within 30 days of purchase.",
    "Our office is closed on public holidays and weekends.",
    "Passwords must be rotated every ninety days for security.",
    "退款政策允许在购买后三十天内退货。",
]


def _tokens(text: str) -> str:
    return " ".join(token for token in jieba.cut_for_search(text) if token.strip())


def _chunks(kb_id: str, document_id: str, texts: list[str]) -> list[ChunkRecord]:
    return [
        ChunkRecord(
            chunk_id=str(uuid.uuid4()),
            kb_id=kb_id,
            document_id=document_id,
            segment_id=None,
            position=i,
            start=0,
            end=len(text),
            text=text,
            bm25_text=_tokens(text),
        )
        for i, text in enumerate(texts)
    ]


@pytest.fixture
async def indexed(store: WeaviateStore, embedder: OnnxEmbedder, kb_id: str) -> list[ChunkRecord]:
    chunks = _chunks(kb_id, "doc-1", TEXTS)
    await store.upsert_chunks(chunks, await embedder.embed(TEXTS))
    return chunks


async def test_vector_search_ranks_the_paraphrase_first(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    [query] = await embedder.embed(["how long do I have to send an item back?"])
    hits = await store.search_vector(Collection.CHUNKS, [kb_id], query, limit=2)
    assert hits[0].id == indexed[0].chunk_id
    assert 0.0 < hits[1].score < hits[0].score <= 1.0


async def test_bm25_matches_jieba_tokens_in_chinese(
    store: WeaviateStore, indexed: list[ChunkRecord], kb_id: str
) -> None:
    hits = await store.search_bm25(Collection.CHUNKS, [kb_id], _tokens("退货政策"), limit=3)
    assert [hit.id for hit in hits] == [indexed[3].chunk_id]
    assert hits[0].properties["text"] == TEXTS[3]


async def test_hybrid_returns_hits_from_both_legs(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    [query] = await embedder.embed(["password rotation"])
    hits = await store.search_hybrid(Collection.CHUNKS, [kb_id], query, _tokens("holidays"), limit=4)
    ids = [hit.id for hit in hits]
    assert indexed[2].chunk_id in ids[:2]
    assert indexed[1].chunk_id in ids[:2]


async def test_searches_never_cross_knowledge_bases(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    other_kb = str(uuid.uuid4())
    [query] = await embedder.embed(["refund policy"])
    assert await store.search_vector(Collection.CHUNKS, [other_kb], query, limit=5) == []
    assert await store.search_bm25(Collection.CHUNKS, [other_kb], "refund", limit=5) == []
    assert await store.search_hybrid(Collection.CHUNKS, [other_kb], query, "refund", limit=5) == []
    assert await store.search_vector(Collection.CHUNKS, [], query, limit=5) == []
    both = await store.search_vector(Collection.CHUNKS, [other_kb, kb_id], query, limit=5)
    assert {hit.properties["kb_id"] for hit in both} == {kb_id}


async def test_upsert_by_the_same_ids_replaces_instead_of_duplicating(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    await store.upsert_chunks(indexed, await embedder.embed(TEXTS))
    assert await store.count(Collection.CHUNKS, [kb_id]) == len(TEXTS)


async def test_delete_document_leaves_other_documents(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    other = _chunks(kb_id, "doc-2", ["another document"])
    await store.upsert_chunks(other, await embedder.embed(["another document"]))
    assert await store.delete_document(kb_id, "doc-1") == len(TEXTS)
    assert await store.count(Collection.CHUNKS, [kb_id]) == 1


async def test_delete_chunks_by_id(store: WeaviateStore, indexed: list[ChunkRecord], kb_id: str) -> None:
    assert await store.delete_ids(Collection.CHUNKS, [indexed[0].chunk_id, indexed[1].chunk_id]) == 2
    assert await store.count(Collection.CHUNKS, [kb_id]) == len(TEXTS) - 2


async def test_delete_kb_empties_both_collections(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    question = FaqQuestionRecord(
        variant_id=str(uuid.uuid4()),
        kb_id=kb_id,
        faq_id="faq-1",
        kind="standard",
        text="How do refunds work?",
        bm25_text=_tokens("How do refunds work?"),
    )
    await store.upsert_faq_questions([question], await embedder.embed([question.text]))
    assert await store.count(Collection.FAQ_QUESTIONS, [kb_id]) == 1
    assert await store.delete_kb(kb_id) == len(TEXTS) + 1
    assert await store.count(Collection.CHUNKS, [kb_id]) == 0
    assert await store.count(Collection.FAQ_QUESTIONS, [kb_id]) == 0


async def test_every_failed_object_of_a_batch_is_reported(
    store: WeaviateStore, embedder: OnnxEmbedder, indexed: list[ChunkRecord], kb_id: str
) -> None:
    fresh = _chunks(kb_id, "doc-3", ["good one", "bad one", "another bad one"])
    [good] = await embedder.embed(["good one"])
    with pytest.raises(IndexWriteError) as caught:
        await store.upsert_chunks(fresh, [good, [0.5, 0.5], [1.0]])
    assert set(caught.value.errors) == {fresh[1].chunk_id, fresh[2].chunk_id}
    assert all("dimension" in message for message in caught.value.errors.values())


async def test_a_batch_where_every_object_fails_is_reported_per_object(
    store: WeaviateStore, indexed: list[ChunkRecord], kb_id: str
) -> None:
    fresh = _chunks(kb_id, "doc-4", ["x", "y"])
    with pytest.raises(IndexWriteError) as caught:
        await store.upsert_chunks(fresh, [[1.0], [1.0, 2.0]])
    assert set(caught.value.errors) == {chunk.chunk_id for chunk in fresh}
