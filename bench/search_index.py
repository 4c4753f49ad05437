"""`bench.search --direct`: search at a million chunks, timed on ragbot's store rather than through the pipeline.

Ingesting a million chunks through the product's DocumentIngestor (SQL rows, embedding cache, index) is too slow on
2 cores, so one copy of the corpus goes through it (split, BM25 text and objects exactly as the product makes them)
and the rest are copies of those chunks under new chunk and document ids, written straight into ragbot's chunks
collection with WeaviateStore.upsert_chunks (the store's own batch writes; no SQL rows). Every chunk gets its own
synthetic vector: a pool vector (real embeddings of 2,000 corpus passages) plus noise, so no two are equal.

Timed per question, after a warm-up: Retriever.search_chunks, ragbot's hybrid chunk search (vector and BM25 legs
on the store at once, fused by RRF, candidates built from the hits), and WeaviateStore.search_hybrid as the
Retriever calls it in its "weaviate" mode (Weaviate's own fusion), both with the query vector given (embedding
excluded). Memory: each Weaviate process's RSS after the import and after the queries, and its data dir on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import IndexStack, commit, index_stack, machine, percentile
from bench.search_corpus import MODEL_ID, POOL, PoolEmbedder, TimedIndex, corpus, pool_vectors, questions, real_vectors
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.split.structure import indexed_text
from rag.language import language_of
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.retrieval import Retriever
from rag.tokens import TokenCounter
from rag.types import Vector
from storage.embedding_cache import SqlEmbeddingCache
from storage.records import ChunkRecord, KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.schema import Collection

# 1,000 chunks a call (five of the store's 200-object insert_many messages) and two calls in flight, so the server
# indexes one while the client builds and sends the next.
_WRITE_CALL = 1000
_WRITERS = 2
_WARM_UP = 20
_COPY_IDS = uuid.UUID("2b0e8f43-51c6-4d3e-9a57-1f6d2c8b7e90")


@dataclasses.dataclass(frozen=True, slots=True)
class Memory:
    """One node's resident memory (now and peak) and data dir size, in bytes."""

    rss: int
    peak: int
    disk: int


def _memory(stack: IndexStack) -> dict[str, Memory]:
    """Every node's Memory: VmRSS and VmHWM from /proc, and the allocated size of its data dir (logs excluded)."""
    found = {}
    for name, pid in stack.pids.items():
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        kib = {key: int(status[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM")}
        disk = sum(
            path.stat().st_blocks * 512
            for path in stack.data_dirs[name].rglob("*")
            if path.is_file() and path.name != "weaviate.log"
        )
        found[name] = Memory(kib["VmRSS"], kib["VmHWM"], disk)
    return found


async def _templates(
    ingestor: DocumentIngestor,
    documents: DocumentRepo,
    lexical: LexicalAnalyzer,
    kb: KnowledgeBaseRecord,
    texts: list[str],
) -> list[ChunkRecord]:
    """One copy of the corpus through the product's ingestor; its chunks read back, with title and BM25 text."""
    for start in range(0, len(texts), 10):
        body = "\n\n".join(texts[start : start + 10])
        await ingestor.ingest(
            kb, SourceFile(body.encode(), source_uri=f"bench:0:{start}", filename=f"copy0-{start}.txt")
        )
    stored = await documents.in_kb(kb.id)
    titles = await documents.titles([document.id for document in stored])
    chunks = []
    for document in stored:
        for chunk in await documents.document_chunks(document.id):
            # SQL keeps no BM25 text: cut it again as the ingestor did.
            bm25 = lexical.bm25_text(indexed_text(chunk.text, chunk.metadata))
            chunks.append(dataclasses.replace(chunk, title=titles[document.id], bm25_text=bm25))
    return chunks


def _copies(templates: list[ChunkRecord], first_copy: int) -> Iterator[ChunkRecord]:
    """The templates again and again, each copy under its own chunk and document ids."""
    copy = first_copy
    while True:
        for chunk in templates:
            yield dataclasses.replace(
                chunk,
                chunk_id=str(uuid.uuid5(_COPY_IDS, f"{copy}:{chunk.chunk_id}")),
                document_id=str(uuid.uuid5(_COPY_IDS, f"{copy}:{chunk.document_id}")),
            )
        copy += 1


async def _write(stack: IndexStack, chunks: Iterator[ChunkRecord], pool: np.ndarray, count: int, seed: int) -> float:
    """Write `count` chunks from `chunks` with the store's batch writes; returns the seconds it took."""
    rng = np.random.default_rng(seed)
    started = last = time.perf_counter()
    pending: set[asyncio.Task[None]] = set()
    written = 0
    while written < count:
        size = min(_WRITE_CALL, count - written)
        batch = [next(chunks) for _ in range(size)]
        vectors = pool_vectors(pool, rng, size).astype(np.float32).tolist()
        if len(pending) >= _WRITERS:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        pending.add(asyncio.create_task(stack.store.upsert_chunks(batch, vectors)))
        written += size
        if time.perf_counter() - last > 60:
            last = time.perf_counter()
            print(f"    {written} written, {written / (last - started):.0f} chunks/s", flush=True)
    for task in pending:
        await task
    return time.perf_counter() - started


async def _latency(
    retriever: Retriever, index: TimedIndex, kb_id: str, queries: dict[str, Vector], count: int
) -> dict[str, list[float]]:
    """Each question's ragbot hybrid chunk search (and its two legs) and Weaviate-fused hybrid search, in ms."""
    kb_ids = (kb_id,)
    limit = retriever.config.top_k * retriever.config.candidate_factor
    lexical = retriever.lexical
    items = list(queries.items())
    for query, vector in items[:_WARM_UP]:
        await retriever.search_chunks(query, kb_ids, vector=vector)
        await index.search_hybrid(Collection.CHUNKS, kb_ids, vector, lexical.bm25_text(query), limit)
    index.take_legs()
    times: dict[str, list[float]] = {name: [] for name in ("ragbot", "en", "zh", "vector", "bm25", "weaviate", "hits")}
    for query, vector in items[_WARM_UP : _WARM_UP + count]:
        started = time.perf_counter()
        found = await retriever.search_chunks(query, kb_ids, vector=vector)
        times["ragbot"].append((time.perf_counter() - started) * 1000)
        # English questions search both legs; Chinese ones BM25 alone (FusionWeights: a leg weighing 0 is skipped).
        times.setdefault(language_of(query), []).append(times["ragbot"][-1])
        times["hits"].append(len(found))
        tokens = lexical.bm25_text(query)
        await index.search_hybrid(Collection.CHUNKS, kb_ids, vector, tokens, limit)
        legs = index.take_legs()
        times["vector"] += legs.get("vector", [])
        times["bm25"] += legs.get("bm25", [])
        times["weaviate"] += legs["hybrid"]
    return times


async def run_direct(args: argparse.Namespace) -> None:
    """Fill the index to each size, measure, and print markdown tables."""
    results: list[dict[str, Any]] = []
    async with index_stack(args.weaviate_binary, "ragbot-bench-search-", cluster=args.cluster) as stack:
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
        tokens = TokenCounter("cl100k_base", Path(cache_dir) if cache_dir else None)
        lexical = LexicalAnalyzer()
        real = OnnxEmbedder(args.model_dir, model_id=MODEL_ID)
        texts = corpus(args.eval_dir)
        # The warm-up asks questions of its own, not the timed ones.
        wanted = questions(args.eval_dir, args.queries + 2 * _WARM_UP)
        pool, query_vectors = await real_vectors(real, texts[:POOL], wanted, args.vectors_cache)
        documents = DocumentRepo(stack.db)
        cache = SqlEmbeddingCache(stack.db)
        ingestor = DocumentIngestor(
            documents, stack.store, CachedEmbedder(PoolEmbedder(pool), cache), lexical, tokens.encoding
        )
        kb = await KnowledgeBaseRepo(stack.db).create("bench", chunking={"segment": {"max_tokens": 128, "overlap": 12}})
        print(f"memory of the empty index: {_memory(stack)}", flush=True)
        started = time.perf_counter()
        templates = await _templates(ingestor, documents, lexical, kb, texts)
        ingested = time.perf_counter() - started
        print(f"one corpus copy through the ingestor: {len(templates)} chunks in {ingested:.0f} s", flush=True)
        index = TimedIndex(stack.store)
        retriever = Retriever(index, CachedEmbedder(real, cache), lexical, documents, FaqRepo(stack.db))
        chunks, held = _copies(templates, first_copy=1), len(templates)
        for size in args.sizes:
            print(f"filling the index to {size} chunks", flush=True)
            seconds = await _write(stack, chunks, pool, max(0, size - held), seed=size) if size > held else 0.0
            rate = (size - held) / seconds if seconds else 0.0
            held = max(size, held)
            print(f"  {held} chunks, the last {seconds:.0f} s at {rate:.0f} chunks/s", flush=True)
            after_import = _memory(stack)
            started = time.perf_counter()
            times = await _latency(retriever, index, kb.id, query_vectors, args.queries)
            summary = {
                name: [round(value, 1) for value in (statistics.median(values), *_tail(values))]
                for name, values in times.items()
                if values
            }
            # Everything measured at this size, in the log at once: a long fill is not lost to a later failure.
            print(f"  {held} chunks, ms p50/p95/p99: {json.dumps(summary)} ({time.perf_counter() - started:.0f} s)")
            print(f"  memory after import {after_import}, after queries {_memory(stack)}", flush=True)
            results.append(
                {
                    "size": held,
                    "seconds": seconds,
                    "rate": rate,
                    "times": times,
                    "import": after_import,
                    "queries": _memory(stack),
                }
            )
        count = await stack.store.count(Collection.CHUNKS, [kb.id])
        print(f"the index reports {count} chunks in the knowledge base", flush=True)
    _report(args, results, ingested, len(templates), stack.replication_factor)


def _tail(values: list[float]) -> tuple[float, float]:
    return percentile(values, 0.95), percentile(values, 0.99)


def _cells(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} | {percentile(values, 0.95):.1f} | {percentile(values, 0.99):.1f}"


def _report(
    args: argparse.Namespace, results: list[dict[str, Any]], ingested: float, templates: int, factor: int
) -> None:
    nodes = "3 nodes, replication factor 3, consistency QUORUM" if args.cluster else "one node"
    print(f"\ncommit {commit()} · {machine()} · {nodes} · {args.queries} queries after {_WARM_UP} warm-up")
    print(f"one corpus copy ({templates} chunks) through the ingestor in {ingested:.0f} s; the rest written directly\n")
    print(
        "| chunks | written (s, chunks/s) | ragbot hybrid p50 / p95 / p99 (ms) | English | Chinese "
        "| vector leg | BM25 leg | Weaviate-fused hybrid | candidates (min) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for result in results:
        times = result["times"]
        print(
            f"| {result['size']} | {result['seconds']:.0f}, {result['rate']:.0f} | "
            + " | ".join(
                _cells(times[name]).replace(" | ", " / ")
                for name in ("ragbot", "en", "zh", "vector", "bm25", "weaviate")
            )
            + f" | {min(times['hits']):.0f} |"
        )
    print("\nMemory (GiB; RSS now / peak, data dir on disk without logs) and per million chunks:\n")
    print("| chunks | node | RSS after import | RSS after queries | peak RSS | disk | RSS per 1M | disk per 1M |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    gib = 1024**3
    for result in results:
        per_million = 1_000_000 / result["size"]
        rows = list(result["queries"].items())
        if len(rows) > 1:
            rows.append(
                (
                    "sum",
                    Memory(
                        sum(memory.rss for _, memory in rows),
                        sum(memory.peak for _, memory in rows),
                        sum(memory.disk for _, memory in rows),
                    ),
                )
            )
        for name, memory in rows:
            imported = sum(m.rss for m in result["import"].values()) if name == "sum" else result["import"][name].rss
            figures = [imported, memory.rss, memory.peak, memory.disk]
            figures += [memory.rss * per_million, memory.disk * per_million]
            print(f"| {result['size']} | {name} | " + " | ".join(f"{value / gib:.2f}" for value in figures) + " |")
    dimension = PoolEmbedder.dimension
    print(f"\nvectors: {dimension} dimensions, synthetic (a pool of real embeddings plus noise); factor {factor}")
