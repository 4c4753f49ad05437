"""FAQ matching on real Weaviate: confidence, negative questions (exact and by meaning), disabled entries."""

from __future__ import annotations

import pytest

from rag.faq.candidate import faq_confidence
from rag.faq.search import FaqSearch
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.records import KnowledgeBaseRecord
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.store import WeaviateStore

ENTRIES = [
    FaqEntry(
        "How many days of paid leave do I get?",
        ("25 days a year.",),
        similar_questions=("What is my annual leave allowance?",),
        negative_questions=("How many sick days do I get?",),
    ),
    FaqEntry("How do I reset my password?", ("Settings > Security.",)),
    FaqEntry("Where is the parking garage?", ("Under building B.",), enabled=False),
]


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


async def _kb(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> KnowledgeBaseRecord:
    kb = await KnowledgeBaseRepo(db).create("faq", chunking={})
    await FaqImporter(FaqRepo(db), store, embedder, lexical).import_entries(kb, ENTRIES)
    return kb


async def _search(
    query: str,
    db: Database,
    store: WeaviateStore,
    embedder: OnnxEmbedder,
    lexical: LexicalAnalyzer,
    kb: KnowledgeBaseRecord,
) -> list[str]:
    [vector] = await embedder.embed([query])
    found = await FaqSearch(store, FaqRepo(db), lexical, embedder).search(query, vector, [kb.id])
    return [candidate.metadata["question"] for candidate in found]


async def test_a_paraphrase_finds_its_faq_with_high_confidence(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _kb(db, store, embedder, lexical)
    [vector] = await embedder.embed(["how much annual leave do I have?"])
    found = await FaqSearch(store, FaqRepo(db), lexical, embedder).search(
        "how much annual leave do I have?", vector, [kb.id]
    )
    assert found[0].metadata["question"] == "How many days of paid leave do I get?"
    assert found[0].metadata["answers"] == ["25 days a year."]
    assert 0.55 <= found[0].score <= 1.0


@pytest.mark.parametrize(
    "query", ["How many sick days do I get?", "  how many SICK days do i get?  ", "how many sick days am I allowed?"]
)
async def test_a_negative_question_vetoes_its_faq_exactly_and_by_meaning(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, query: str
) -> None:
    kb = await _kb(db, store, embedder, lexical)
    assert "How many days of paid leave do I get?" not in await _search(query, db, store, embedder, lexical, kb)


async def test_disabled_and_unrelated_faqs_are_not_offered(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await _kb(db, store, embedder, lexical)
    assert await _search("where can I park my car?", db, store, embedder, lexical, kb) == []
    assert await _search("what is the capital of France?", db, store, embedder, lexical, kb) == []


async def test_chinese_confidence_comes_from_the_words_not_the_english_only_embedder(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    kb = await KnowledgeBaseRepo(db).create("faq-zh", chunking={})
    entries = [
        FaqEntry("微粒贷怎么开通", ("在微信钱包里开通。",)),
        FaqEntry("借款可以提前还吗", ("可以，随时提前还款。",)),
    ]
    await FaqImporter(FaqRepo(db), store, embedder, lexical).import_entries(kb, entries)
    search = FaqSearch(store, FaqRepo(db), lexical, embedder)

    [vector] = await embedder.embed(["微粒贷怎么开通？"])
    [same, *_] = await search.search("微粒贷怎么开通？", vector, [kb.id])
    assert same.metadata["question"] == "微粒贷怎么开通"
    assert faq_confidence(same) == 1.0

    [vector] = await embedder.embed(["我想开通一下"])
    for candidate in await search.search("我想开通一下", vector, [kb.id]):
        assert faq_confidence(candidate) < 0.9  # never answered verbatim on a loose match
