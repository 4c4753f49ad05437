"""Search latency at 10k and 100k indexed chunks, and the answer path's time to first token.

The product's `search` pipeline (LOAD_HISTORY, REWRITE_QUERY, SEARCH with FAQ and chunk legs, RERANK with the
local reranker, MERGE, FILTER_TOP_K) over a local Weaviate and a SQLite store, with query embedding excluded:
queries are embedded with the real model before timing. Reports p50/p95/p99 per index size, each stage's median,
and the share of a turn spent outside Weaviate's searches. Then `rag_stream` against a fake OpenAI-compatible
model whose time to first token is fixed: time from turn start to the first token leaving the pipeline, minus it.

Corpus: SciFact abstracts and CMRC 2018 passages split at 128 tokens, ingested by the product's DocumentIngestor,
repeated under new document names until the chunk count is reached. Embedding 100k passages with the local model
would take hours on 2 cores, so documents get vectors from a pool of real embeddings (2,000 distinct chunks) with
small per-chunk noise; the vectors go through the embedding cache and the index exactly as ingestion stores them
(RERANK takes them from the search hits, as in production). Index structure and sizes are real; semantic quality is
not what is timed. Each turn's SQL statements are counted through SQLAlchemy's before_cursor_execute event.

With --cluster the index is three Weaviate nodes on loopback (harness/weaviate_cluster.py), written with replication
factor 3 and read at consistency QUORUM. With --direct (for a million chunks) only one corpus copy goes through the
ingestor, the rest is written straight into the index and the store's searches are timed: see bench/search_index.py.

    .venv/bin/python -m bench.search [--sizes 10000 100000] [--queries 300] [--cluster] [--direct]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import event

from bench.common import commit, index_stack, machine, parse_arguments, percentile
from bench.search_corpus import MODEL_ID, POOL, PoolEmbedder, TimedIndex, corpus, questions, real_vectors
from bench.search_index import run_direct
from fakes.openai_api import FakeOpenAI
from rag.config import ChatModelConfig
from rag.faq.search import FaqSearch
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.models.rerankers import LocalReranker
from rag.named_pipelines import PipelineParts, rag_stream, search_pipeline
from rag.pipeline import Pipeline, TurnContext
from rag.ports import EmbedKind
from rag.relevance import RerankConfig
from rag.retrieval import Retriever
from rag.rewrite_rules import RuleRewriter
from rag.stages.search import SearchConfig
from rag.tokens import TokenCounter
from rag.types import Vector
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.records import KnowledgeBaseRecord
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo

FAKE_TTFT = 0.2


class QueryEmbedder:
    """Precomputed query vectors (embedding is excluded from the timing); anything else through the cache."""

    provider = "local"
    model_id = MODEL_ID
    dimension = 384

    def __init__(self, queries: dict[str, Vector], cached: CachedEmbedder) -> None:
        self._queries = queries
        self._cached = cached

    def prompt(self, kind: EmbedKind) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        # In production SEARCH's embedding of the query lands in the cache and RERANK finds it there.
        rest = [text for text in texts if text not in self._queries]
        found = dict(zip(rest, await self._cached.embed(rest, kind=kind), strict=True)) if rest else {}
        return [self._queries[text] if text in self._queries else found[text] for text in texts]


class StatementCount:
    """SQL statements sent through a database's engine, taken per turn."""

    def __init__(self, db: Database) -> None:
        self.sent = 0
        event.listen(db.engine.sync_engine, "before_cursor_execute", self._count)

    def _count(self, *_args: Any) -> None:
        self.sent += 1

    def take(self) -> int:
        """Statements since the last take."""
        sent, self.sent = self.sent, 0
        return sent


async def _fill(
    ingestor: DocumentIngestor, documents: DocumentRepo, kb: KnowledgeBaseRecord, texts: list[str], target: int
) -> int:
    """Ingest documents of 10 corpus texts each, cycling through copies, until the KB holds `target` chunks."""
    chunks = sum(document.chunk_count for document in await documents.in_kb(kb.id))
    copy = 0
    started = time.perf_counter()
    while chunks < target:
        for start in range(0, len(texts), 10):
            body = "\n\n".join(texts[start : start + 10])
            source = SourceFile(body.encode(), source_uri=f"bench:{copy}:{start}", filename=f"copy{copy}-{start}.txt")
            chunks += (await ingestor.ingest(kb, source)).chunks
            if chunks >= target:
                break
        copy += 1
    print(f"  indexed {chunks} chunks ({time.perf_counter() - started:.0f} s)", flush=True)
    return chunks


async def _search_latency(
    pipeline: Pipeline, index: TimedIndex, sql: StatementCount, kb_id: str, queries: list[str]
) -> dict[str, Any]:
    for query in queries[:20]:  # warm-up: jieba, connections, caches
        await pipeline.run(TurnContext(query=query, kb_ids=(kb_id,)))
    index.in_flight()
    sql.take()
    totals, weaviate, statements, stages = [], [], [], {}
    for query in queries:
        started = time.perf_counter()
        turn = await pipeline.run(TurnContext(query=query, kb_ids=(kb_id,)))
        totals.append((time.perf_counter() - started) * 1000)
        weaviate.append(index.in_flight() * 1000)
        statements.append(sql.take())
        for report in turn.reports:
            stages.setdefault(report.name, []).append(report.ms)
    outside = [(total - inside) / total for total, inside in zip(totals, weaviate, strict=True)]
    return {"totals": totals, "weaviate": weaviate, "outside": outside, "stages": stages, "statements": statements}


async def _profile(pipeline: Pipeline, kb_id: str, queries: list[str], path: Path) -> None:
    """The queries once more under cProfile (the event loop's waits on Weaviate show as selector time)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        await pipeline.run(TurnContext(query=query, kb_ids=(kb_id,)))
    profiler.disable()
    profiler.dump_stats(path)
    print(f"  profile written to {path}", flush=True)


async def _first_token(pipeline: Pipeline, kb_id: str, queries: list[str]) -> list[float]:
    overheads = []
    for query in queries:
        first: list[float] = []

        async def on_text(piece: str, first: list[float] = first) -> None:
            if piece and not first:
                first.append(time.perf_counter())

        started = time.perf_counter()
        await pipeline.run(TurnContext(query=query, kb_ids=(kb_id,), on_text=on_text))
        assert first, "the answer showed no text"
        overheads.append((first[0] - started - FAKE_TTFT) * 1000)
    return overheads


def _row(label: str, values: list[float]) -> str:
    return (
        f"| {label} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} "
        f"| {percentile(values, 0.99):.1f} |"
    )


async def _run(args: argparse.Namespace) -> None:
    async with index_stack(args.weaviate_binary, "ragbot-bench-search-", cluster=args.cluster) as stack:
        store, db = stack.store, stack.db
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
        tokens = TokenCounter("cl100k_base", Path(cache_dir) if cache_dir else None)
        lexical = LexicalAnalyzer()
        lexical.tokens("warm up")
        real = OnnxEmbedder(args.model_dir, model_id=MODEL_ID)
        cache = SqlEmbeddingCache(db)
        texts = corpus(args.eval_dir)
        queries = questions(args.eval_dir, args.queries)
        pool, query_vectors = await real_vectors(real, texts[:POOL], queries, args.vectors_cache)
        documents = DocumentRepo(db)
        ingestor = DocumentIngestor(
            documents, store, CachedEmbedder(PoolEmbedder(pool), cache), lexical, tokens.encoding
        )
        kb = await KnowledgeBaseRepo(db).create("bench", chunking={"segment": {"max_tokens": 128, "overlap": 12}})
        index = TimedIndex(store)
        embedder = QueryEmbedder(query_vectors, CachedEmbedder(real, cache))
        parts = PipelineParts(
            retriever=Retriever(index, embedder, lexical, documents, FaqRepo(db)),
            faqs=FaqSearch(index, FaqRepo(db), lexical, embedder),
            history=ConversationRepo(db),
            merge_source=MergeReadRepo(db),
            tokens=tokens,
            rewriter=RuleRewriter(),
            reranker=LocalReranker(embedder, lexical),
            model=None,
            search=SearchConfig(top_k=5),
            rerank=RerankConfig(top_k=5),
        )
        search = search_pipeline(parts)
        results = {}
        for size in args.sizes:
            print(f"filling the index to {size} chunks", flush=True)
            await _fill(ingestor, documents, kb, texts, size)
            results[size] = await _search_latency(search, index, StatementCount(db), kb.id, queries)
            print(f"  search p50 {statistics.median(results[size]['totals']):.1f} ms", flush=True)
            if args.profile is not None:
                await _profile(search, kb.id, queries, args.profile.with_suffix(f".{size}.prof"))
        async with FakeOpenAI() as fake:
            fake.first_token_delay = FAKE_TTFT
            model = OpenAIChatModel(ChatModelConfig(model="fake", base_url=fake.base_url, api_key="test-key"))
            try:
                answer = rag_stream(dataclasses.replace(parts, model=model))
                await _first_token(answer, kb.id, queries[:10])  # warm-up
                first_token = await _first_token(answer, kb.id, queries)
            finally:
                await model.close()
    _report(args, results, first_token)


def _report(args: argparse.Namespace, results: dict[int, dict[str, Any]], first_token: list[float]) -> None:
    print(f"\ncommit {commit()} · {machine()} · {len(next(iter(results.values()))['totals'])} queries per size\n")
    print("| indexed chunks | p50 (ms) | p95 (ms) | p99 (ms) | outside Weaviate (median share) | SQL a turn |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for size, result in results.items():
        totals, statements = result["totals"], result["statements"]
        print(
            f"| {size} | {statistics.median(totals):.1f} | {percentile(totals, 0.95):.1f} "
            f"| {percentile(totals, 0.99):.1f} | {statistics.median(result['outside']):.1%} "
            f"| {statistics.median(statements):g} (max {max(statements)}) |"
        )
    print("\nStage medians (ms):\n")
    names = list(next(iter(results.values()))["stages"])
    print("| indexed chunks | " + " | ".join(names) + " | in Weaviate |")
    print("| ---: | " + " | ".join("---:" for _ in names) + " | ---: |")
    for size, result in results.items():
        cells = [f"{statistics.median(result['stages'][name]):.1f}" for name in names]
        print(f"| {size} | " + " | ".join(cells) + f" | {statistics.median(result['weaviate']):.1f} |")
    print(f"\nrag_stream, fake model with a fixed {FAKE_TTFT * 1000:.0f} ms time to first token, largest index:\n")
    print("| measure | p50 (ms) | p95 (ms) | p99 (ms) |")
    print("| --- | ---: | ---: | ---: |")
    print(_row("turn start to first token, minus the model's TTFT", first_token))


def main() -> None:
    """Measure and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--profile", type=Path, help="also profile the search turns into PROFILE.<size>.prof")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="write chunks straight into the index (one corpus copy through the ingestor, the rest through the "
        "store's batch writes) and time the store's searches, not the pipeline: for a million chunks",
    )
    parser.add_argument(
        "--cluster", action="store_true", help="three Weaviate nodes, replication factor 3, consistency QUORUM"
    )
    parser.add_argument("--vectors-cache", type=Path, help="keep the pool's and the queries' real vectors in this file")
    args = parse_arguments(parser)
    asyncio.run(run_direct(args) if args.direct else _run(args))


if __name__ == "__main__":
    main()
