"""FAQ import into SQL and Weaviate: every variant indexed, re-imports idempotent, stale variants removed."""

from __future__ import annotations

import pytest

from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.records import KnowledgeBaseRecord
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore
from tests.integration.test_ingest_documents import CountingEmbedder

ENTRIES = [
    FaqEntry(
        question="How do I reset my password?",
        answers=("Open Settings > Security and choose Reset password.",),
        similar_questions=("I forgot my password", "password reset"),
        negative_questions=("How do I reset my router?",),
    ),
    FaqEntry(question="退款需要多久？", answers=("五个工作日内到账。",), similar_questions=("多久能收到退款",)),
]


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


async def _setup(db: Database) -> KnowledgeBaseRecord:
    return await KnowledgeBaseRepo(db).create("faq", chunking={})


async def test_every_question_variant_is_indexed_with_its_kind(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _setup(db)
    result = await FaqImporter(FaqRepo(db), store, embedder, lexical).import_entries(kb, ENTRIES)
    assert (result.created, result.updated, result.unchanged, result.questions_indexed) == (2, 0, 0, 6)
    assert await store.count(Collection.FAQ_QUESTIONS, [kb.id]) == 6
    [query] = await embedder.embed(["I can't remember my password"])
    hits = await store.search_vector(Collection.FAQ_QUESTIONS, [kb.id], query, limit=3)
    saved = {faq.id: faq for faq in await FaqRepo(db).in_kb(kb.id)}
    assert saved[hits[0].properties["faq_id"]].question == "How do I reset my password?"
    kinds = {hit.properties["kind"] for hit in await store.search_bm25(Collection.FAQ_QUESTIONS, [kb.id], "reset", 10)}
    assert kinds == {"standard", "similar", "negative"}
    zh = await store.search_bm25(Collection.FAQ_QUESTIONS, [kb.id], lexical.bm25_text("退款多久"), limit=1)
    assert saved[zh[0].properties["faq_id"]].answers == ("五个工作日内到账。",)


async def test_reimporting_the_same_sheet_changes_and_embeds_nothing(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _setup(db)
    counting = CountingEmbedder(embedder)
    importer = FaqImporter(FaqRepo(db), store, counting, lexical)
    await importer.import_entries(kb, ENTRIES)
    embedded = counting.embedded
    again = await importer.import_entries(kb, ENTRIES)
    assert (again.created, again.updated, again.unchanged, again.questions_indexed) == (0, 0, 2, 0)
    assert counting.embedded == embedded
    assert await store.count(Collection.FAQ_QUESTIONS, [kb.id]) == 6


async def test_an_updated_entry_drops_variants_it_no_longer_has(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _setup(db)
    importer = FaqImporter(FaqRepo(db), store, embedder, lexical)
    await importer.import_entries(kb, ENTRIES)
    # Same question, different case and spacing: an update of the same FAQ, not a second one.
    changed = FaqEntry(question="how do I  reset my password?", answers=("Use the Forgot password link.",))
    result = await importer.import_entries(kb, [changed])
    assert (result.created, result.updated) == (0, 1)
    faqs = await FaqRepo(db).in_kb(kb.id)
    assert len(faqs) == 2
    updated = next(faq for faq in faqs if faq.answers == ("Use the Forgot password link.",))
    assert updated.similar_questions == ()
    assert await store.count(Collection.FAQ_QUESTIONS, [kb.id]) == 1 + 2
