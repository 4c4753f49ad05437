"""Retrieval and FAQ evaluation on labelled folders (BEIR-style corpus/queries/qrels; faqs/queries)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.eval.scores import mrr_at_k, ndcg_at_k, recall_at_k
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
    verbatim: VerbatimScores | None = None


@dataclass(frozen=True, slots=True)
class VerbatimScores:
    """How often the product gives an FAQ verbatim to queries that have a gold FAQ: quoted as the answer without a
    chat model, and answered directly (model or not); the share of those that are the gold FAQ; and the same two
    rates once each query's gold FAQ is left out of the bank (every verbatim answer then a wrong one)."""

    quoted: float
    quoted_gold: float
    direct: float
    direct_gold: float
    gold_out_quoted: float
    gold_out_direct: float


@dataclass(frozen=True, slots=True)
class RankedFaqs:
    """A ranker's answer for one query: dataset FAQ ids best first, and the top one's confidence if it has one.

    A ranker that makes the product's verbatim decision also says which of the ranked FAQs it would quote as the
    answer without a chat model (`quoted`) and answer directly (`direct`) were that FAQ first: the decision is
    the FAQ's own, so leaving the gold FAQ out of the list shows what the next one would have been answered with.
    """

    ids: list[str]
    top_confidence: float | None = None
    quoted: frozenset[str] | None = None
    direct: frozenset[str] | None = None


RankFaqs = Callable[[str], Awaitable[RankedFaqs]]


def _first(ids: Sequence[str], left_out: str | None = None) -> str | None:
    return next((faq_id for faq_id in ids if faq_id != left_out), None)


def _directly(ranked: RankedFaqs, threshold: float) -> bool:
    """The first FAQ is answered directly: by the ranker's own decision, else by its confidence."""
    if ranked.direct is not None:
        return bool(ranked.ids) and ranked.ids[0] in ranked.direct
    return ranked.top_confidence is not None and ranked.top_confidence >= threshold


def _share(count: int, total: int) -> float:
    return count / total if total else 0.0


def _verbatim(answers: Sequence[tuple[str, RankedFaqs]]) -> VerbatimScores | None:
    """Verbatim rates over (gold FAQ id, ranking) pairs, for a ranker that decides them."""
    if not answers or any(ranked.quoted is None or ranked.direct is None for _, ranked in answers):
        return None
    counts = dict.fromkeys(("quoted", "quoted_gold", "direct", "direct_gold", "out_quoted", "out_direct"), 0)
    for gold, ranked in answers:
        quoted, direct = ranked.quoted or frozenset(), ranked.direct or frozenset()
        first, next_first = _first(ranked.ids), _first(ranked.ids, left_out=gold)
        counts["quoted"] += first in quoted
        counts["quoted_gold"] += first in quoted and first == gold
        counts["direct"] += first in direct
        counts["direct_gold"] += first in direct and first == gold
        counts["out_quoted"] += next_first in quoted
        counts["out_direct"] += next_first in direct
    total = len(answers)
    return VerbatimScores(
        _share(counts["quoted"], total),
        _share(counts["quoted_gold"], counts["quoted"]),
        _share(counts["direct"], total),
        _share(counts["direct_gold"], counts["direct"]),
        _share(counts["out_quoted"], total),
        _share(counts["out_direct"], total),
    )


async def evaluate_faq(
    folder: Path, rankers: Mapping[str, RankFaqs], *, direct_threshold: float = 1.0
) -> list[FaqScores]:
    """Per ranker: top-1/top-5 accuracy over queries with a faq_id; how often a labelled negative pair comes
    first; and, over queries that match no FAQ, how often any FAQ is offered and how often one clears the
    direct-answer threshold (answered verbatim, a false answer). For a ranker that decides verbatim answers, also
    the `VerbatimScores` of the queries with a faq_id."""
    queries = read_jsonl(folder / "queries.jsonl")
    results = []
    for label, rank in rankers.items():
        hits1 = hits5 = answerable = negatives = false_hits = unmatched = offered = direct = 0
        golds: list[tuple[str, RankedFaqs]] = []
        for query in queries:
            ranked = await rank(str(query["text"]))
            if query.get("faq_id"):
                answerable += 1
                hits1 += ranked.ids[:1] == [query["faq_id"]]
                hits5 += query["faq_id"] in ranked.ids[:5]
                golds.append((str(query["faq_id"]), ranked))
            else:
                unmatched += 1
                offered += bool(ranked.ids)
                direct += _directly(ranked, direct_threshold)
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
                _verbatim(golds),
            )
        )
    return results


def retrieval_table(title: str, scores: Sequence[RetrievalScores], first_column: str = "ranker") -> str:
    """A Markdown table of each ranker's mean metrics under a `### title` heading."""
    lines = [
        f"### {title}",
        "",
        f"| {first_column} | nDCG@10 | Recall@10 | Recall@50 | MRR@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.mode} | {s.ndcg_10:.3f} | {s.recall_10:.3f} | {s.recall_50:.3f} | {s.mrr_10:.3f} |" for s in scores
    ]
    return "\n".join(lines) + "\n"


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
