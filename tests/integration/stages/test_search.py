"""The SEARCH stage on real Weaviate and SQL: FAQs and passages, targeted documents, history references, expansion."""

from __future__ import annotations

import pytest
import tiktoken

from rag.faq.search import FaqSearch
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from rag.pipeline import TurnContext
from rag.retrieval import Retriever
from rag.stages.search import Search, SearchConfig
from rag.types import Candidate, Vector
from storage.db import Database
from storage.records import KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.store import WeaviateStore

DOCS = {
    "refunds.md": "Refunds are paid to the original card within five working days of the return.",
    "shipping.md": "Orders ship every weekday. Express delivery arrives the next day.",
    "warranty.md": "Every appliance carries a two-year warranty covering parts and labour.",
}


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


class _Parts:
    def __init__(self, db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer) -> None:
        self.db, self.store, self.embedder, self.lexical = db, store, embedder, lexical
        self.documents = DocumentRepo(db)
        self.retriever = Retriever(store, embedder, lexical, self.documents, FaqRepo(db))
        self.faqs = FaqSearch(store, FaqRepo(db), lexical, embedder)

    async def kb(self, name: str, docs: dict[str, str]) -> KnowledgeBaseRecord:
        kb = await KnowledgeBaseRepo(self.db).create(name, chunking={})
        ingestor = DocumentIngestor(
            self.documents, self.store, self.embedder, self.lexical, tiktoken.get_encoding("cl100k_base")
        )
        for filename, text in docs.items():
            await ingestor.ingest(kb, SourceFile(text.encode(), source_uri=f"upload:{filename}", filename=filename))
        return kb

    def search(self, **config: object) -> Search:
        return Search(self.retriever, self.faqs, SearchConfig(**config))  # type: ignore[arg-type]


@pytest.fixture
def parts(db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer) -> _Parts:
    return _Parts(db, store, embedder, lexical)


async def test_faqs_come_before_passages(parts: _Parts) -> None:
    kb = await parts.kb("shop", DOCS)
    await FaqImporter(FaqRepo(parts.db), parts.store, parts.embedder, parts.lexical).import_entries(
        kb, [FaqEntry("How long do refunds take?", ("Five working days.",))]
    )
    turn = TurnContext(query="how long until my refund arrives?", kb_ids=(kb.id,))
    await parts.search().run(turn)
    assert turn.candidates[0].kind == "faq"
    assert any(c.kind == "chunk" and c.text == DOCS["refunds.md"] for c in turn.candidates)


async def test_a_small_targeted_document_is_loaded_whole_as_direct_hits(parts: _Parts) -> None:
    kb = await parts.kb("shop", DOCS)
    warranty = await parts.documents.find(kb.id, "upload:warranty.md")
    assert warranty is not None
    turn = TurnContext(query="refunds", kb_ids=(kb.id,), document_ids=(warranty.id,))
    note = await parts.search().run(turn)
    direct = [c for c in turn.candidates if "direct" in c.legs]
    assert [c.text for c in direct] == [DOCS["warranty.md"]]
    assert "direct=1" in note


async def test_a_targeted_document_over_the_limit_is_searched_not_loaded(parts: _Parts) -> None:
    kb = await parts.kb("shop", DOCS)
    warranty = await parts.documents.find(kb.id, "upload:warranty.md")
    assert warranty is not None
    turn = TurnContext(query="refunds", kb_ids=(kb.id,), document_ids=(warranty.id,))
    await parts.search(direct_max_chunks=0).run(turn)
    assert not [c for c in turn.candidates if "direct" in c.legs]


async def test_history_references_come_back_as_history_matches_only_from_bound_kbs(parts: _Parts) -> None:
    kb = await parts.kb("shop", DOCS)
    other = await parts.kb("other", {"secret.md": "The launch code is 0000."})
    [shipping] = [c for c in await parts.documents.document_chunks(await _doc(parts, kb, "shipping.md"))]
    [secret] = [c for c in await parts.documents.document_chunks(await _doc(parts, other, "secret.md"))]
    turn = TurnContext(query="and the warranty?", kb_ids=(kb.id,), history_refs=(shipping.chunk_id, secret.chunk_id))
    await parts.search().run(turn)
    history = [c for c in turn.candidates if "history" in c.legs]
    assert [c.id for c in history] == [shipping.chunk_id]


async def test_a_self_contained_question_gets_no_history_matches(parts: _Parts) -> None:
    kb = await parts.kb("shop", DOCS)
    [shipping] = [c for c in await parts.documents.document_chunks(await _doc(parts, kb, "shipping.md"))]
    turn = TurnContext(query="Who is the CEO of the company?", kb_ids=(kb.id,), history_refs=(shipping.chunk_id,))
    note = await parts.search().run(turn)
    assert "history=0" in note
    assert not [c for c in turn.candidates if "history" in c.legs]


async def test_thin_results_are_widened_with_query_variants(parts: _Parts) -> None:
    kb = await parts.kb("tiny", {"warranty.md": DOCS["warranty.md"]})
    turn = TurnContext(query="What is the warranty, and who pays for labour?", kb_ids=(kb.id,))
    note = await parts.search(top_k=10).run(turn)
    assert "expanded=" in note
    assert int(note.split("expanded=")[1].split()[0]) > 0
    assert [c.text for c in turn.candidates] == [DOCS["warranty.md"]]


async def test_no_bound_knowledge_base_searches_nothing(parts: _Parts) -> None:
    turn = TurnContext(query="refunds", kb_ids=())
    assert await parts.search().run(turn) == "skipped=no_knowledge_base"
    assert turn.candidates == []


async def _doc(parts: _Parts, kb: KnowledgeBaseRecord, filename: str) -> str:
    document = await parts.documents.find(kb.id, f"upload:{filename}")
    assert document is not None
    return document.id


class _Leg:
    def __init__(self, name: str, found: list[Candidate] | Exception) -> None:
        self.name = name
        self._found = found
        self.queries: list[str] = []

    async def search(self, turn: TurnContext, vector: Vector) -> list[Candidate]:
        self.queries.append(turn.search_query)
        assert vector == turn.query_vector
        if isinstance(self._found, Exception):
            raise self._found
        return self._found


async def test_a_legs_candidates_join_the_chunks_and_a_failing_leg_is_skipped_with_one_log_line(
    parts: _Parts, caplog: pytest.LogCaptureFixture
) -> None:
    kb = await parts.kb("shop", DOCS)
    web = Candidate("web:1", "chunk", "web", "Refund rules on the web.", 0.5, legs=frozenset({"web"}))
    good, broken = _Leg("web", [web]), _Leg("graph", RuntimeError("graph store gone"))
    search = Search(parts.retriever, parts.faqs, SearchConfig(), legs=(good, broken))
    turn = TurnContext(query="refunds", kb_ids=(kb.id,), rewritten="how are refunds paid")
    note = await search.run(turn)
    assert good.queries == broken.queries == ["how are refunds paid"]
    assert web in turn.candidates
    assert any(c.text == DOCS["refunds.md"] for c in turn.candidates)
    assert "web=1 graph=0" in note
    failures = [r for r in caplog.records if "search leg graph failed" in r.getMessage()]
    assert len(failures) == 1
    assert "graph store gone" in failures[0].getMessage()
