"""Retrieval and FAQ evaluation on labelled folders (BEIR-style corpus/queries/qrels; faqs/queries)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from rag.retrieval import Mode, Retriever


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a JSON Lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class BeirSet:
    """A retrieval set: documents, queries and graded relevance."""

    corpus: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path) -> BeirSet:
    """corpus.jsonl, queries.jsonl and qrels.jsonl; queries without a relevant document are left out."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in read_jsonl(folder / "qrels.jsonl"):
        if int(row["score"]) > 0:
            qrels[str(row["query_id"])][str(row["doc_id"])] = int(row["score"])
    queries = [row for row in read_jsonl(folder / "queries.jsonl") if str(row["id"]) in qrels]
    return BeirSet(read_jsonl(folder / "corpus.jsonl"), queries, dict(qrels))


@dataclass(frozen=True, slots=True)
class RetrievalScores:
    """Mean metrics of one ranker over a set's queries."""

    mode: str
    ndcg_10: float
    recall_10: float
    recall_50: float
    mrr_10: float


RankDocuments = Callable[[str, int], Awaitable[list[str]]]
"""(query, how many) -> dataset document ids, best first."""


async def evaluate_beir(data: BeirSet, rankers: Mapping[str, RankDocuments]) -> list[RetrievalScores]:
    """Each ranker's mean nDCG@10, Recall@10, Recall@50 and MRR@10."""
    results = []
    for label, rank in rankers.items():
        ndcg, r10, r50, mrr = [], [], [], []
        for query in data.queries:
            relevant = data.qrels[str(query["id"])]
            ranked = await rank(str(query["text"]), 50)
            ndcg.append(ndcg_at_k(ranked, relevant, 10))
            r10.append(recall_at_k(ranked, set(relevant), 10))
            r50.append(recall_at_k(ranked, set(relevant), 50))
            mrr.append(mrr_at_k(ranked, set(relevant), 10))
        results.append(
            RetrievalScores(
                label, statistics.fmean(ndcg), statistics.fmean(r10), statistics.fmean(r50), statistics.fmean(mrr)
            )
        )
    return results


@dataclass(frozen=True, slots=True)
class FaqScores:
    """FAQ matching: accuracy on answerable queries, and false hits on queries that must not match."""

    mode: str
    answerable: int
    top1: float
    top5: float
    negatives: int
    negative_top1_rate: float
    unmatched: int
    offered_rate: float
    direct_rate: float


@dataclass(frozen=True, slots=True)
class RankedFaqs:
    """A ranker's answer for one query: dataset FAQ ids best first, and the top one's confidence if it has one."""

    ids: list[str]
    top_confidence: float | None = None


RankFaqs = Callable[[str], Awaitable[RankedFaqs]]


async def evaluate_faq(
    folder: Path, rankers: Mapping[str, RankFaqs], *, direct_threshold: float = 1.0
) -> list[FaqScores]:
    """Per ranker: top-1/top-5 accuracy over queries with a faq_id; how often a labelled negative pair comes
    first; and, over queries that match no FAQ, how often any FAQ is offered and how often one clears the
    direct-answer threshold (answered verbatim, a false answer)."""
    queries = read_jsonl(folder / "queries.jsonl")
    results = []
    for label, rank in rankers.items():
        hits1 = hits5 = answerable = negatives = false_hits = unmatched = offered = direct = 0
        for query in queries:
            ranked = await rank(str(query["text"]))
            if query.get("faq_id"):
                answerable += 1
                hits1 += ranked.ids[:1] == [query["faq_id"]]
                hits5 += query["faq_id"] in ranked.ids[:5]
            else:
                unmatched += 1
                offered += bool(ranked.ids)
                direct += ranked.top_confidence is not None and ranked.top_confidence >= direct_threshold
            if query.get("pair_label") == 0 and query.get("pair_faq_id"):
                negatives += 1
                false_hits += ranked.ids[:1] == [query["pair_faq_id"]]
        results.append(
            FaqScores(
                label,
                answerable,
                hits1 / max(answerable, 1),
                hits5 / max(answerable, 1),
                negatives,
                false_hits / negatives if negatives else 0.0,
                unmatched,
                offered / unmatched if unmatched else 0.0,
                direct / unmatched if unmatched else 0.0,
            )
        )
    return results


def documents_by_best_chunk(chunk_ids: Sequence[str], chunk_to_doc: Mapping[str, str], limit: int) -> list[str]:
    """Dataset documents in the order of their best chunk."""
    ranked: list[str] = []
    for chunk_id in chunk_ids:
        document = chunk_to_doc.get(chunk_id)
        if document is not None and document not in ranked:
            ranked.append(document)
    return ranked[:limit]


def chunk_ranker(retriever: Retriever, mode: Mode, kb_id: str, chunk_to_doc: Mapping[str, str]) -> RankDocuments:
    """Rank dataset documents by their best chunk, for one search mode."""

    async def rank(query: str, limit: int) -> list[str]:
        vector = await retriever.query_vector(query)
        hits = await retriever.chunk_hits(query, vector, [kb_id], limit * 3, mode)
        return documents_by_best_chunk([chunk_id for chunk_id, _ in hits], chunk_to_doc, limit)

    return rank


def faq_ranker(retriever: Retriever, mode: Mode, kb_id: str, faq_to_dataset: Mapping[str, str]) -> RankFaqs:
    """Rank dataset FAQ ids for a query, for one search mode (negative variants never count as a hit)."""

    async def rank(query: str) -> RankedFaqs:
        vector = await retriever.query_vector(query)
        hits = await retriever.faq_hits(query, vector, [kb_id], 30, mode)
        return RankedFaqs(
            [faq_to_dataset[faq_id] for faq_id, _, kind in hits if kind != "negative" and faq_id in faq_to_dataset]
        )

    return rank
