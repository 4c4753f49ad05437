"""Every bad source ends as a failed job with a one-line reason; nothing of it is indexed; other jobs go on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
import tiktoken
from aiohttp import web
from pypdf import PdfWriter

from bot.knowledge.ingestion import IngestionLimits, IngestionWork
from bot.knowledge.jobs import JobRunner
from rag.ingest.addresses import AddressPolicy
from rag.ingest.documents import DocumentIngestor
from rag.ingest.extract import ExtractLimits
from rag.ingest.faq_index import FaqImporter
from rag.ingest.fetch import FetchLimits
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore
from tests.support.documents import make_docx, make_pdf, make_pdf_without_text, make_zip_bomb

LIMIT = 2_000_000


def _encrypted_pdf() -> bytes:
    from io import BytesIO

    from pypdf import PdfReader

    writer = PdfWriter(clone_from=PdfReader(BytesIO(make_pdf(["secret plans"]))))
    writer.encrypt(user_password="hunter2", owner_password="hunter2")
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


BAD_FILES: list[tuple[str, bytes, str]] = [
    ("picture.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "PNG"),
    ("notes.txt", b"", "empty"),
    ("big.txt", b"word " * (LIMIT // 5 + 10), "limit"),
    ("locked.pdf", _encrypted_pdf(), "password"),
    ("broken.pdf", make_pdf(["a page of text"])[:200], "PDF"),
    ("scan.pdf", make_pdf_without_text(), "OCR"),
    ("bomb.docx", make_zip_bomb(unpacked_mb=300), "unpack"),
    ("questions.csv", b"question,notes\nWhere?,x\n", "missing required column(s) answer"),
    ("answers.csv", b"question,answer\nWhere?,Here\nWhen?,\nWho?,Me\nHow?, \n", "row 3"),
]


def _site() -> web.Application:
    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(10)
        return web.Response(text="late")

    async def to_private(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "http://10.0.0.1/internal"})

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        while True:
            await response.write(b"x" * 65536)

    app = web.Application()
    app.router.add_get("/missing", missing)
    app.router.add_get("/slow", slow)
    app.router.add_get("/to-private", to_private)
    app.router.add_get("/endless", endless)
    return app


@pytest_asyncio.fixture
async def site() -> AsyncIterator[str]:
    runner = web.AppRunner(_site(), shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


BAD_URLS = [
    ("/missing", "404"),
    ("/slow", "timed out"),
    ("/to-private", "to http://10.0.0.1/internal: 10.0.0.1 is a private address"),
    ("/endless", "limit"),
]


async def test_bad_sources_fail_with_a_reason_and_good_ones_still_succeed(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, tmp_path: Path, site: str
) -> None:
    kb = await KnowledgeBaseRepo(db).create("mixed", chunking={})
    lexical = LexicalAnalyzer()
    limits = IngestionLimits(
        max_file_bytes=LIMIT,
        fetch=FetchLimits(max_bytes=LIMIT, total_timeout=1.0),
        address_policy=AddressPolicy.allowing("127.0.0.0/8"),
    )
    work = IngestionWork(
        KnowledgeBaseRepo(db),
        DocumentIngestor(
            DocumentRepo(db),
            store,
            embedder,
            lexical,
            tiktoken.get_encoding("cl100k_base"),
            ExtractLimits(max_bytes=LIMIT),
        ),
        FaqImporter(FaqRepo(db), store, embedder, lexical),
        limits,
    )
    runner = JobRunner(JobRepo(db), work, concurrency=2)
    jobs = []
    await runner.start()
    try:
        for name, data, _ in BAD_FILES:
            (tmp_path / name).write_bytes(data)
            kind = "faq" if name.endswith(".csv") else "file"
            jobs.append(await runner.submit(kb.id, kind, str(tmp_path / name)))
        for path, _ in BAD_URLS:
            jobs.append(await runner.submit(kb.id, "url", site + path))
        (tmp_path / "good.md").write_text("# Opening hours\n\nWe are open from nine to five on weekdays.\n")
        (tmp_path / "renamed.pdf").write_bytes(make_docx(title="Policy"))
        good = [await runner.submit(kb.id, "file", str(tmp_path / name)) for name in ("good.md", "renamed.pdf")]
        finished = [await asyncio.wait_for(runner.wait(job.id), 120) for job in [*jobs, *good]]
    finally:
        await runner.stop()

    expected = [reason for *_, reason in BAD_FILES] + [reason for _, reason in BAD_URLS]
    for job, reason in zip(finished[: len(expected)], expected, strict=True):
        assert job.status == "failed", job
        assert reason.lower() in job.error.lower(), (job.source, job.error)
        assert "\n" not in job.error
        assert "Traceback" not in job.error
    assert [job.status for job in finished[len(expected) :]] == ["succeeded", "succeeded"]
    documents = await DocumentRepo(db).in_kb(kb.id)
    assert sorted(Path(document.source_uri).name for document in documents) == ["good.md", "renamed.pdf"]
    indexed_documents = {
        hit.properties["document_id"]
        for hit in await store.search_bm25(Collection.CHUNKS, [kb.id], "open weekdays policy", limit=50)
    }
    assert indexed_documents <= {document.id for document in documents}
    assert await store.count(Collection.FAQ_QUESTIONS, [kb.id]) == 0
    assert await FaqRepo(db).in_kb(kb.id) == []
