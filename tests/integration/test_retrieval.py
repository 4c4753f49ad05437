"""Hybrid retrieval over real Weaviate and SQL: fused legs, candidates from hits, kb isolation, FAQ variants."""

from __future__ import annotations

import pytest
import tiktoken

from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.language import language_of
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.retrieval import Retriever
from storage.db import Database
from storage.records import ChunkRecord, KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.store import WeaviateStore

DOCS = {
    "refunds.md": "Refunds are paid to the original card within five working days of the return.",
    "shipping.md": "Orders ship every weekday. Express delivery arrives the next day.",
    "退款.md": "退款会在五个工作日内退回到原支付卡。",
}


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


async def _indexed(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, name: str
) -> KnowledgeBaseRecord:
    kb = await KnowledgeBaseRepo(db).create(name, chunking={})
    ingestor = DocumentIngestor(DocumentRepo(db), store, embedder, lexical, tiktoken.get_encoding("cl100k_base"))
    for filename, text in DOCS.items():
        await ingestor.ingest(kb, SourceFile(text.encode(), source_uri=f"upload:{filename}", filename=filename))
    return kb


def _retriever(db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer) -> Retriever:
    return Retriever(store, embedder, lexical, DocumentRepo(db), FaqRepo(db))


async def test_hybrid_search_returns_sql_backed_candidates_with_their_legs(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _indexed(db, store, embedder, lexical, "shop")
    candidates = await _retriever(db, store, embedder, lexical).search_chunks("when are refunds paid?", [kb.id])
    assert candidates[0].text == DOCS["refunds.md"]
    assert candidates[0].legs == {"vector", "bm25"}
    assert candidates[0].document_id
    assert [c.score for c in candidates] == sorted((c.score for c in candidates), reverse=True)
    zh = await _retriever(db, store, embedder, lexical).search_chunks("退款多久到账", [kb.id])
    assert zh[0].text == DOCS["退款.md"]


async def test_search_builds_candidates_from_the_hits_alone_with_text_title_metadata_and_vector(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _indexed(db, store, embedder, lexical, "shop")
    # An object SQL has no row for: only the index can have supplied what the candidate carries.
    ghost = ChunkRecord(
        "00000000-0000-4000-8000-00000000beef",
        kb.id,
        "gone",
        None,
        0,
        0,
        31,
        "Refund ghost text about refunds",
        lexical.bm25_text("Refund ghost text about refunds"),
        metadata={"page": 3},
        title="Ghost guide",
    )
    [vector] = await embedder.embed([ghost.text])
    await store.upsert_chunks([ghost], [vector])
    retriever = _retriever(db, store, embedder, lexical)

    candidates = {c.id: c for c in await retriever.search_chunks("refunds", [kb.id])}

    found = candidates[ghost.chunk_id]
    assert (found.text, found.document_id, found.end) == (ghost.text, "gone", 31)
    assert found.metadata == {"page": 3, "title": "Ghost guide"}
    assert found.vector == pytest.approx(vector, abs=1e-6)
    refunds = next(c for c in candidates.values() if c.text == DOCS["refunds.md"])
    assert refunds.metadata["title"] == "refunds.md"
    assert refunds.vector is not None
    assert len(refunds.vector) == 384


async def test_ids_without_hits_are_read_from_sql_and_those_it_lacks_are_dropped(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _indexed(db, store, embedder, lexical, "shop")
    retriever = _retriever(db, store, embedder, lexical)
    [known] = await retriever.search_chunks("when are refunds paid?", [kb.id], limit=1)
    ghost = "00000000-0000-4000-8000-00000000beef"

    found = await retriever.chunk_candidates([(ghost, 0.0), (known.id, 0.0)], {})

    assert [(c.id, c.text, c.metadata["title"]) for c in found] == [(known.id, known.text, "refunds.md")]


async def test_a_chat_only_sees_its_own_knowledge_bases(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    mine = await _indexed(db, store, embedder, lexical, "mine")
    other = await KnowledgeBaseRepo(db).create("other", chunking={})
    retriever = _retriever(db, store, embedder, lexical)
    assert await retriever.search_chunks("refund", [other.id]) == []
    assert {c.kb_id for c in await retriever.search_chunks("refund", [mine.id, other.id])} == {mine.id}


async def test_faq_hits_name_the_faq_and_the_kind_of_variant_matched(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await KnowledgeBaseRepo(db).create("faq", chunking={})
    entries = [
        FaqEntry("How do I reset my password?", ("Settings > Security.",), ("forgot password",), ("reset my router",)),
        FaqEntry("What are your opening hours?", ("9 to 5.",)),
    ]
    await FaqImporter(FaqRepo(db), store, embedder, lexical).import_entries(kb, entries)
    retriever = _retriever(db, store, embedder, lexical)
    faqs = {faq.id: faq for faq in await FaqRepo(db).in_kb(kb.id)}
    query = "I forgot my password"
    hits = await retriever.faq_hits(query, await retriever.query_vector(query), [kb.id], 10)
    assert faqs[hits[0][0]].question == "How do I reset my password?"
    assert hits[0][2] in ("standard", "similar")
    assert len({faq_id for faq_id, _, _ in hits}) == len(hits)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("退款多久到账", "zh"),
        ("refund?", "en"),
        ("微粒贷 app", "zh"),
        ("Python 的 list", "en"),
        ("", "en"),
        ("👍", "en"),
    ],
)
def test_query_language_follows_the_share_of_chinese_letters(text: str, language: str) -> None:
    assert language_of(text) == language
