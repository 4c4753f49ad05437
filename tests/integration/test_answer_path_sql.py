"""The answer path's SQL on real Weaviate and both databases: a small constant per turn, whatever the candidates."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from rag.faq.search import FaqSearch
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.models.rerankers import LocalReranker
from rag.named_pipelines import PipelineParts, search_pipeline
from rag.pipeline import TurnContext
from rag.relevance import RerankConfig
from rag.retrieval import RetrievalConfig, Retriever
from rag.stages.search import SearchConfig
from rag.tokens import TokenCounter
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo
from storage.weaviate.store import WeaviateStore
from tests.integration.sql_count import count_statements

TOPICS = ("refunds", "shipping", "warranty", "returns", "invoices", "delivery", "repairs", "discounts")
# Documents of a few short chunks (under MERGE's 350 characters), which MERGE joins or widens.
DOCS = {
    f"{topic}-{n}.md": "\n\n".join(
        f"Note {n}.{part} on {topic}: our {topic} policy covers card payments, store credit and gift vouchers "
        f"bought online or in a shop, for orders placed by private customers and small businesses, case {part}."
        for part in range(3)
    )
    for topic in TOPICS
    for n in range(3)
}
RULE = {"segment": {"max_tokens": 50, "overlap": 0}}


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


async def _statements_per_turn(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, tiktoken_dir: Path | None
) -> dict[int, tuple[int, int]]:
    """(statements, candidates) of one turn for a few candidate counts."""
    cached = CachedEmbedder(embedder, SqlEmbeddingCache(db))
    documents = DocumentRepo(db)
    kb = await KnowledgeBaseRepo(db).create("policies", chunking=RULE)
    ingestor = DocumentIngestor(documents, store, cached, lexical, tiktoken.get_encoding("cl100k_base"))
    for filename, text in DOCS.items():
        await ingestor.ingest(kb, SourceFile(text.encode(), source_uri=f"upload:{filename}", filename=filename))
    measured = {}
    for top_k in (2, 10):
        parts = PipelineParts(
            retriever=Retriever(
                store, cached, lexical, documents, FaqRepo(db), RetrievalConfig(top_k=top_k), questions=cached.transient
            ),
            faqs=FaqSearch(store, FaqRepo(db), lexical, cached),
            history=ConversationRepo(db),
            merge_source=MergeReadRepo(db),
            tokens=TokenCounter("cl100k_base", cache_dir=tiktoken_dir),
            rewriter=None,
            reranker=LocalReranker(cached, lexical),
            model=None,
            search=SearchConfig(top_k=top_k, expand=False),
            # Threshold 0: every candidate reaches MERGE, so its reads would grow with them if they could.
            rerank=RerankConfig(threshold=0.0, top_k=3 * top_k),
        )
        pipeline = search_pipeline(parts)
        query = "what does the refunds policy cover?"
        await pipeline.run(TurnContext(query=query, kb_ids=(kb.id,)))  # the question's vector is now in memory
        with count_statements(db) as statements:
            turn = await pipeline.run(TurnContext(query=query, kb_ids=(kb.id,)))
        assert not any(report.note.startswith("skipped") for report in turn.reports if report.name == "RERANK")
        assert turn.merged
        measured[top_k] = (len(statements), len(turn.candidates))
    return measured


async def test_a_turn_sends_the_same_few_statements_whatever_the_number_of_candidates(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer, tiktoken_dir: Path | None
) -> None:
    measured = await _statements_per_turn(db, store, embedder, lexical, tiktoken_dir)

    (few, few_candidates), (many, many_candidates) = measured[2], measured[10]
    assert many_candidates >= 3 * few_candidates
    # SEARCH: the FAQ lookup; RERANK: none (vectors come with the hits); MERGE: one read for parents,
    # joined text and widening windows.
    assert few == many <= 2
