"""The entity leg measured: the shipped retrieval sets and a rule-labelled entity set, with and without the leg.

Each set is ingested by the product's ingestor into a throw-away knowledge base (the 256-token chunks `ragbot eval`
measures with), its graph built by `/graph on`'s builder, and each query ranked two ways, as SEARCH and RERANK do it:
the fused top 100 chunks in RERANK's order (the product without the leg), and the same with the entity leg's chunks
joined before RERANK (deduplicated, as SEARCH does). Documents are ranked by their best chunk.

The entity set is labelled by rule, independently of the leg's extractor: a name is a string of the corpus that
1..3 documents hold (English: a capital letter, then letters, hyphens and at least one digit, "IL-6", "CD4",
"H3K27me3"; Chinese: the text between 《 and 》, 2-12 characters); its question puts the name in a fixed sentence
whose other words point at no passage ("What is known about X in this collection?", "关于X，资料里有哪些说法？"),
and its relevant documents are those holding the string. Up to 200 names per set, chosen with
random.Random(20241121).

    RAGBOT_DATA_DIR=/tmp/ragbot-graph-bench .venv/bin/python -m bench.graph_leg DIR... [--docs 800] \
        [--warm-cache OLD.sqlite3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import commit, machine
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.cli.eval_corpus import ingested_corpus, retriever_for
from bot.knowledge.graph import GraphBuilder
from rag.eval.retrieval_eval import BeirSet, RankDocuments, documents_by_best_chunk, evaluate_beir, load_beir
from rag.fusion import dedupe
from rag.graph.leg import EntitySearch
from rag.graph.question import RuleEntities
from rag.language import language_of
from rag.models.rerankers import build_reranker
from rag.pipeline import TurnContext
from rag.ports import Reranker
from rag.relevance import RerankConfig, rerank_order
from rag.retrieval import Retriever

_SEED = 20241121
_POOL = 100
_MOST_NAMES = 200
_EN_NAME = re.compile(r"\b[A-Z][A-Za-z-]*\d[A-Za-z0-9-]*\b")
_ZH_NAME = re.compile(r"《([^《》]{2,12})》")
_TEMPLATES = {
    "en": ("What is known about {} in this collection?", "Which reports discuss {}?", "Tell me more about {}."),
    "zh": ("关于{}，资料里有哪些说法？", "{}是怎么回事？", "请介绍一下{}。"),
}


def subset(data: BeirSet, documents: int) -> BeirSet:
    """The documents relevant to the first queries, topped up with others at random to `documents` in all."""
    if len(data.corpus) <= documents:
        return data
    by_id = {str(row["id"]): row for row in data.corpus}
    kept: dict[str, Any] = {}
    queries = []
    for query in data.queries:
        relevant = [doc for doc in data.qrels[str(query["id"])] if doc in by_id]
        if len(kept) + len(relevant) > documents // 2:
            break
        kept.update((doc, by_id[doc]) for doc in relevant)
        queries.append(query)
    others = [doc for doc in by_id if doc not in kept]
    for doc in random.Random(_SEED).sample(others, documents - len(kept)):
        kept[doc] = by_id[doc]
    qrels = {str(q["id"]): data.qrels[str(q["id"])] for q in queries}
    return BeirSet(list(kept.values()), queries, qrels)


def entity_set(corpus: Sequence[dict[str, Any]]) -> BeirSet:
    """The rule-labelled set of named entities over `corpus` (see the module's docstring)."""
    holders: dict[str, set[str]] = {}
    language = "zh" if sum(language_of(str(row["text"])[:200]) == "zh" for row in corpus) > len(corpus) / 2 else "en"
    for row in corpus:
        text = f"{row.get('title') or ''}\n{row['text']}"
        names = _ZH_NAME.findall(text) if language == "zh" else _EN_NAME.findall(text)
        for name in set(names):
            holders.setdefault(name, set()).add(str(row["id"]))
    rare = sorted(name for name, docs in holders.items() if 1 <= len(docs) <= 3)
    chosen = random.Random(_SEED).sample(rare, min(_MOST_NAMES, len(rare)))
    templates = _TEMPLATES[language]
    queries = [
        {"id": f"entity-{n}", "text": templates[n % len(templates)].format(name)} for n, name in enumerate(chosen)
    ]
    qrels = {f"entity-{n}": dict.fromkeys(sorted(holders[name]), 1) for n, name in enumerate(chosen)}
    return BeirSet(list(corpus), queries, qrels)


def rankers(
    retriever: Retriever,
    reranker: Reranker,
    config: RerankConfig,
    leg: EntitySearch,
    kb_id: str,
    chunks: dict[str, str],
) -> tuple[dict[str, RankDocuments], list[float], list[int]]:
    """The two rankings of the module's docstring, and the leg's time (ms) and chunks per query as they run."""
    leg_ms: list[float] = []
    leg_found: list[int] = []

    async def without(query: str, limit: int) -> list[str]:
        fused = await retriever.search_chunks(query, [kb_id], limit=_POOL)
        ordered = await rerank_order(reranker, query, fused, config)
        return documents_by_best_chunk([c.id for c in ordered], chunks, limit)

    async def with_leg(query: str, limit: int) -> list[str]:
        vector = await retriever.query_vector(query)
        fused = await retriever.search_chunks(query, [kb_id], limit=_POOL, vector=vector)
        started = time.perf_counter()
        found = await leg.search(TurnContext(query, (kb_id,)), vector)
        leg_ms.append((time.perf_counter() - started) * 1000)
        leg_found.append(len(found))
        ordered = await rerank_order(reranker, query, dedupe([*fused, *found]), config)
        return documents_by_best_chunk([c.id for c in ordered], chunks, limit)

    return {"fused top 100 + rerank (no leg)": without, "+ entity leg": with_leg}, leg_ms, leg_found


def _table(name: str, scores: Sequence[Any], leg_ms: list[float], found: list[int]) -> str:
    lines = [f"### {name}", "", "| ranking | nDCG@10 | R@10 | R@50 | MRR@10 |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [
        f"| {s.mode} | {s.ndcg_10:.3f} | {s.recall_10:.3f} | {s.recall_50:.3f} | {s.mrr_10:.3f} |" for s in scores
    ]
    if leg_ms:
        lines += [
            "",
            f"The leg: median {statistics.median(leg_ms):.1f} ms a query (max {max(leg_ms):.1f}), "
            f"{statistics.fmean(found):.1f} chunks a query on average, none for {sum(n == 0 for n in found)} "
            f"of {len(found)} queries.",
        ]
    return "\n".join(lines)


async def _measure(services: Services, folder: Path, documents: int, out: Any) -> None:
    data = subset(load_beir(folder), documents)
    entities = entity_set(data.corpus)
    async with ingested_corpus(services, folder, data.corpus, sys.stderr) as corpus:
        started = time.perf_counter()
        built = await GraphBuilder(services.graph, services.graph_switches, services.documents).switch_on(corpus.kb_id)
        build_s = time.perf_counter() - started
        retriever = retriever_for(services)
        reranker = build_reranker(services.settings.reranker(), services.embedder, services.lexical)
        assert reranker is not None
        leg = EntitySearch(services.graph, retriever, RuleEntities(), switches=services.graph_switches)
        out.write(
            f"\n## {folder.name}: {len(data.corpus)} documents, {len(corpus.chunk_to_doc)} chunks; graph built in "
            f"{build_s:.1f} s ({built.mentions} mentions)\n\n"
        )
        for name, labelled in (
            (f"{folder.name} (shipped queries, {len(data.queries)})", data),
            (f"{folder.name} entity set (rule-labelled, {len(entities.queries)} queries)", entities),
        ):
            ranks, leg_ms, found = rankers(
                retriever, reranker, services.settings.rerank(), leg, corpus.kb_id, corpus.chunk_to_doc
            )
            scores = await evaluate_beir(labelled, ranks)
            out.write(_table(name, scores, leg_ms, found) + "\n\n")
            out.flush()


def _warm(settings: Settings, old: Path) -> None:
    """Copy an earlier run's embedding cache into this data dir's (same model, same chunks: no re-embedding)."""
    path = settings.data_dir / "ragbot.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute("ATTACH DATABASE ? AS old", (str(old),))
        columns = "provider, model, content_hash, dimension, vector, created_at"
        connection.execute(
            f"INSERT OR IGNORE INTO embedding_cache ({columns}) SELECT {columns} FROM old.embedding_cache"
        )


async def main(folders: Sequence[Path], documents: int, warm: Path | None) -> None:
    settings = Settings()
    out = sys.stdout
    out.write(f"commit {commit()}, {machine()}\n")
    async with build_services(settings) as services:
        if warm is not None:
            _warm(settings, warm)
        for folder in folders:
            await _measure(services, folder, documents, out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--docs", type=int, default=800, help="documents per set at most")
    parser.add_argument("--warm-cache", type=Path, default=None)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.folders, arguments.docs, arguments.warm_cache))
