"""A scanned PDF ingested on real Weaviate and SQL: its pages read by OCR, each chunk keeping its page number."""

from __future__ import annotations

import json

import tiktoken

from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore
from tests.support.scans import render, scanned_pdf

PAGES = [
    ["Opening hours", "The front desk is open from eight to six on weekdays."],
    ["Parking", "Visitors park in garage B and register at the front desk."],
]


async def test_each_chunk_of_a_scan_keeps_the_page_it_was_read_from(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder
) -> None:
    kb = await KnowledgeBaseRepo(db).create("scans", chunking={})
    lexical = LexicalAnalyzer()
    ingestor = DocumentIngestor(DocumentRepo(db), store, embedder, lexical, tiktoken.get_encoding("cl100k_base"))
    pdf = scanned_pdf([render(lines, size=(1240, 600), font_size=30) for lines in PAGES])

    result = await ingestor.ingest(kb, SourceFile(pdf, source_uri="upload:front-desk.pdf", filename="front-desk.pdf"))

    assert (result.ocr_pages, result.ocr_unread_pages) == (2, 0)
    chunks = await DocumentRepo(db).document_chunks(result.document_id)
    assert [chunk.metadata["page"] for chunk in chunks] == [1, 2]
    assert "garage B" in chunks[1].text
    hits = await store.search_bm25(Collection.CHUNKS, [kb.id], lexical.bm25_text("garage"), limit=3)
    assert hits
    assert json.loads(hits[0].properties["meta"])["page"] == 2
