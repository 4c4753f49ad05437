"""Ingestion throughput: SciFact abstracts to indexed chunks with the local embedder, and where the time goes.

Runs the product's DocumentIngestor (extract, clean, split, jieba BM25 text, cached embedding,
Weaviate upsert, SQL version write) against a local Weaviate and a fresh SQLite store, with a
cold embedding cache. Each row is one folder's worth of documents handed to `ingest_many` (batched),
or with --sequential to `ingest` one at a time. Reports documents/s and chunks/s, and the share of
wall time spent outside the embedder's model calls (goal: <= 15 %).

Each shape runs twice on disjoint abstracts: files read in this process (a thread, as before issue 19) and in the
service's extraction child process (rag.ingest.sandbox). A second table times extraction alone per document, both
ways: what the child costs a document.

    .venv/bin/python -m bench.ingest [--docs N] [--sequential] [--model-dir DIR] [--eval-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import commit, local_stack, machine, parse_arguments, percentile
from rag.ingest.documents import DocumentIngestor, IngestResult, SourceFile
from rag.ingest.extract import extract
from rag.ingest.sandbox import ExtractionSandbox
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.ports import EmbedKind
from rag.tokens import TokenCounter
from rag.types import Vector
from storage.embedding_cache import SqlEmbeddingCache
from storage.records import KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo


class TimedEmbedder:
    """The ONNX embedder, accumulating the seconds spent inside its model calls."""

    provider = "local"

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def prompt(self, kind: EmbedKind) -> str:
        return self.inner.prompt(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        start = time.perf_counter()
        vectors = await self.inner.embed(texts, kind=kind)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return vectors


def _documents(eval_dir: Path, abstracts: range, per_document: int) -> list[SourceFile]:
    """The given SciFact abstracts, `per_document` of them joined into each document."""
    lines = (eval_dir / "scifact" / "corpus.jsonl").read_text().splitlines()[abstracts.start : abstracts.stop]
    texts = [f"{row['title']}\n\n{row['text']}" for row in map(json.loads, lines)]
    return [
        SourceFile("\n\n".join(texts[i : i + per_document]).encode(), source_uri=f"scifact:{abstracts.start + i}")
        for i in range(0, len(texts), per_document)
    ]


async def _measure(
    ingestor: DocumentIngestor,
    timed: TimedEmbedder,
    kb: KnowledgeBaseRecord,
    sources: list[SourceFile],
    *,
    sequential: bool,
) -> str:
    timed.seconds = 0.0
    start = time.perf_counter()
    if sequential:
        results = [await ingestor.ingest(kb, source) for source in sources]
    else:
        outcomes = await ingestor.ingest_many(kb, sources)
        results = [outcome for outcome in outcomes if isinstance(outcome, IngestResult)]
        if len(results) != len(sources):
            raise RuntimeError(f"{len(sources) - len(results)} documents failed: {outcomes}")
    wall = time.perf_counter() - start
    chunks = sum(result.chunks for result in results)
    outside = (wall - timed.seconds) / wall
    return (
        f"| {len(sources)} | {chunks} | {wall:.1f} | {len(sources) / wall:.2f} | {chunks / wall:.1f} | "
        f"{wall / len(sources) * 1000:.0f} | {timed.seconds:.1f} | {outside:.1%} |"
    )


async def _extraction_times(sandbox: ExtractionSandbox, sources: list[SourceFile]) -> str:
    """Median and p95 of extracting each document in a thread and in the child, in ms, and their ratio."""
    threaded, child = [], []
    for source in sources:
        start = time.perf_counter()
        await asyncio.to_thread(extract, source.data, filename=source.filename)
        threaded.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        await sandbox.extract(source.data, filename=source.filename)
        child.append((time.perf_counter() - start) * 1000)
    medians = percentile(threaded, 0.5), percentile(child, 0.5)
    p95s = percentile(threaded, 0.95), percentile(child, 0.95)
    return (
        f"{len(sources)} | {medians[0]:.2f} | {p95s[0]:.2f} | {medians[1]:.2f} | {p95s[1]:.2f} | "
        f"{medians[1] - medians[0]:+.2f} | {medians[1] / medians[0]:.1f}x |"
    )


async def _run(args: argparse.Namespace) -> None:
    rows, extraction = [], []
    async with local_stack(args.weaviate_binary, "ragbot-bench-ingest-") as (store, db):
        timed = TimedEmbedder(OnnxEmbedder(args.model_dir, model_id="sentence-transformers/all-MiniLM-L6-v2"))
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
        tokens = TokenCounter("cl100k_base", Path(cache_dir) if cache_dir else None)
        lexical = LexicalAnalyzer()
        lexical.tokens("warm up")  # jieba's dictionary load is start-up work, not per-document work
        sandbox = ExtractionSandbox()
        await sandbox.extract(b"warm up", filename="warm.txt")  # the child's start is start-up work too
        embedder = CachedEmbedder(timed, SqlEmbeddingCache(db))
        ingestors = {
            "thread": DocumentIngestor(DocumentRepo(db), store, embedder, lexical, tokens.encoding),
            "child": DocumentIngestor(DocumentRepo(db), store, embedder, lexical, tokens.encoding, sandbox=sandbox),
        }
        rule = {"segment": {"max_tokens": 256, "overlap": 25}}
        # Disjoint abstracts for each shape and way, so the embedding cache is cold for all.
        shapes = [("1 abstract (~2 chunks)", 1), ("20 abstracts (~45 chunks)", 20)]
        offset = 0
        try:
            for label, per_document in shapes:
                for way, ingestor in ingestors.items():
                    kb = await KnowledgeBaseRepo(db).create(f"bench-{per_document}-{way}", chunking=rule)
                    sources = _documents(args.eval_dir, range(offset, offset + args.docs), per_document)
                    offset += args.docs
                    row = await _measure(ingestor, timed, kb, sources, sequential=args.sequential)
                    rows.append(f"| {label} | {way} {row}")
                extraction.append(f"| {label} | {await _extraction_times(sandbox, sources)}")
        finally:
            await sandbox.close()
    how = "one `ingest` call per document" if args.sequential else "one `ingest_many` call per row (batched)"
    print(
        f"commit {commit()} · {machine()} · {args.docs} SciFact abstracts per row, 256-token chunks, cold cache, "
        f"{how}\n"
    )
    print(
        "| document size | files read in | documents | chunks | wall (s) | docs/s | chunks/s | wall per doc (ms) "
        "| embedder (s) | outside embedder |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    print(
        "\n| document size | documents | thread median (ms) | thread p95 (ms) | child median (ms) | child p95 (ms) "
        "| child's cost (ms) | ratio |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(extraction))


def main() -> None:
    """Measure and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--sequential", action="store_true", help="ingest one document at a time, as before batching")
    asyncio.run(_run(parse_arguments(parser)))


if __name__ == "__main__":
    main()
