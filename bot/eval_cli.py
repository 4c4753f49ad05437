"""`ragbot eval DIR...`: ingest a labelled set into a throw-away knowledge base, search, print the figures."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from bot.services import Services
from rag.eval import rewrite_eval
from rag.eval.retrieval_eval import (
    BeirSet,
    FaqScores,
    RankDocuments,
    RankedFaqs,
    RankFaqs,
    RetrievalScores,
    chunk_ranker,
    documents_by_best_chunk,
    evaluate_beir,
    evaluate_faq,
    faq_ranker,
    load_beir,
    read_jsonl,
)
from rag.faq.candidate import faq_confidence
from rag.faq.search import FaqSearch
from rag.ingest.documents import SourceFile
from rag.ingest.faq_sheet import FaqEntry, question_key
from rag.models.rerankers import build_reranker
from rag.ports import Reranker
from rag.relevance import rerank_order
from rag.retrieval import FusionWeights, Mode, Retriever
from rag.rewrite_rules import RuleRewriter
from storage.records import KnowledgeBaseRecord

_NO_ANSWER = "(no answer in the evaluation set)"
# How many fused chunks the reranker reorders in the evaluation: 50 documents are scored, chunks outnumber them.
_RERANK_POOL = 100


def retriever_for(services: Services) -> Retriever:
    """A retriever over the running services, configured as the answer pipeline's."""
    return Retriever(
        services.store,
        services.embedder,
        services.lexical,
        services.documents,
        services.faqs,
        services.settings.retrieval(),
        questions=services.embedder.transient,
    )


def faq_search_for(services: Services) -> FaqSearch:
    """The answer pipeline's FAQ search over the running services."""
    return FaqSearch(services.store, services.faqs, services.lexical, services.embedder, services.settings.faq_search())


async def _throwaway_kb(services: Services, folder: Path) -> KnowledgeBaseRecord:
    name = f"eval-{folder.name}-{uuid.uuid4().hex[:8]}"
    return await services.knowledge.create(name, {"segment": {"max_tokens": 256, "overlap": 25}})


@asynccontextmanager
async def retrieval_set(services: Services, folder: Path, out: TextIO) -> AsyncIterator[PreparedRetrieval]:
    """A BEIR folder ingested into a throw-away knowledge base, removed again afterwards."""
    data = load_beir(folder)
    kb = await _throwaway_kb(services, folder)
    try:
        for index, row in enumerate(data.corpus, 1):
            text = f"{row.get('title') or ''}\n\n{row['text']}".strip()
            source = SourceFile(text.encode(), source_uri=f"eval:{row['id']}", filename=f"{row['id']}.txt")
            await services.ingestor.ingest(kb, source)
            if index % 500 == 0:
                out.write(f"  {folder.name}: {index}/{len(data.corpus)} documents ingested\n")
        chunk_to_doc = {}
        for document in await services.documents.in_kb(kb.id):
            dataset_id = document.source_uri.removeprefix("eval:")
            for chunk in await services.documents.document_chunks(document.id):
                chunk_to_doc[chunk.chunk_id] = dataset_id
        yield PreparedRetrieval(data, kb.id, chunk_to_doc)
    finally:
        await services.knowledge.delete(kb.name)


@asynccontextmanager
async def faq_set(services: Services, folder: Path) -> AsyncIterator[PreparedFaq]:
    """An FAQ folder imported into a throw-away knowledge base, removed again afterwards."""
    kb = await _throwaway_kb(services, folder)
    try:
        entries: dict[str, FaqEntry] = {}
        dataset_ids: dict[str, str] = {}
        for row in read_jsonl(folder / "faqs.jsonl"):
            key = question_key(str(row["question"]))
            if key in entries:
                continue
            answers = tuple(str(answer) for answer in (row.get("answers") or [row.get("answer") or _NO_ANSWER]))
            entries[key] = FaqEntry(question=str(row["question"]), answers=answers)
            dataset_ids[key] = str(row["id"])
        await services.faq_importer.import_entries(kb, list(entries.values()))
        faq_to_dataset = {faq.id: dataset_ids[question_key(faq.question)] for faq in await services.faqs.in_kb(kb.id)}
        yield PreparedFaq(folder, kb.id, faq_to_dataset)
    finally:
        await services.knowledge.delete(kb.name)


@dataclass(frozen=True, slots=True)
class PreparedRetrieval:
    """A retrieval set ready to be searched: its labels, its knowledge base, chunk -> dataset document."""

    data: BeirSet
    kb_id: str
    chunk_to_doc: dict[str, str]

    def ranker(self, retriever: Retriever, mode: Mode) -> RankDocuments:
        """Dataset documents for a query by one search mode."""
        return chunk_ranker(retriever, mode, self.kb_id, self.chunk_to_doc)

    def reranked(self, retriever: Retriever, reranker: Reranker, pool: int) -> RankDocuments:
        """Dataset documents for a query: the product's fused top `pool` chunks in RERANK's order (no cut)."""

        async def rank(query: str, limit: int) -> list[str]:
            fused = await retriever.search_chunks(query, [self.kb_id], limit=pool)
            ordered = await rerank_order(reranker, query, fused)
            return documents_by_best_chunk([c.id for c in ordered], self.chunk_to_doc, limit)

        return rank

    async def score(self, rankers: Mapping[str, RankDocuments]) -> list[RetrievalScores]:
        """Each ranker's mean metrics."""
        return await evaluate_beir(self.data, rankers)


@dataclass(frozen=True, slots=True)
class PreparedFaq:
    """An FAQ set ready to be searched: its folder, knowledge base and FAQ id -> dataset id."""

    folder: Path
    kb_id: str
    faq_to_dataset: dict[str, str]

    def ranker(self, retriever: Retriever, mode: Mode) -> RankFaqs:
        """Dataset FAQ ids for a query by one search mode over the question variants."""
        return faq_ranker(retriever, mode, self.kb_id, self.faq_to_dataset)

    def product_ranker(self, retriever: Retriever, faqs: FaqSearch) -> RankFaqs:
        """Dataset FAQ ids as the answer pipeline's FAQ search offers them (vetoes and confidence bar applied)."""

        async def rank(query: str) -> RankedFaqs:
            found = await faqs.search(query, await retriever.query_vector(query), [self.kb_id])
            ids = [self.faq_to_dataset[c.id] for c in found if c.id in self.faq_to_dataset]
            return RankedFaqs(ids, faq_confidence(found[0]) if found else None)

        return rank

    async def score(self, rankers: Mapping[str, RankFaqs], direct_threshold: float) -> list[FaqScores]:
        """Each ranker's hit and false-hit rates."""
        return await evaluate_faq(self.folder, rankers, direct_threshold=direct_threshold)


def _retrieval_table(name: str, scores: Sequence[RetrievalScores]) -> str:
    lines = [
        f"### {name}",
        "",
        "| ranker | nDCG@10 | Recall@10 | Recall@50 | MRR@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.mode} | {s.ndcg_10:.3f} | {s.recall_10:.3f} | {s.recall_50:.3f} | {s.mrr_10:.3f} |" for s in scores
    ]
    return "\n".join(lines) + "\n"


def _faq_table(name: str, scores: Sequence[FaqScores]) -> str:
    lines = [
        f"### {name}",
        "",
        "| ranker | queries with an FAQ | hit@1 | hit@5 | labelled negatives | negative FAQ ranked first "
        "| queries matching none | offered an FAQ | answered directly |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.mode} | {s.answerable} | {s.top1:.3f} | {s.top5:.3f} | {s.negatives} | {s.negative_top1_rate:.1%} "
        f"| {s.unmatched} | {s.offered_rate:.1%} | {s.direct_rate:.1%} |"
        for s in scores
    ]
    return "\n".join(lines) + "\n"


def _equal_weights(retriever: Retriever) -> Retriever:
    legs = {"vector": 1.0, "bm25": 1.0}
    equal = FusionWeights(chunks={"zh": legs, "en": legs}, faqs={"zh": legs, "en": legs})
    return retriever.with_config(replace(retriever.config, weights=equal))


async def _evaluate_retrieval(services: Services, folder: Path, out: TextIO) -> None:
    retriever = retriever_for(services)
    async with retrieval_set(services, folder, out) as prepared:
        rankers = {
            "bm25": prepared.ranker(retriever, "bm25"),
            "vector": prepared.ranker(retriever, "vector"),
            "rrf, equal weights": prepared.ranker(_equal_weights(retriever), "rrf"),
            "weaviate hybrid (ranked fusion)": prepared.ranker(retriever, "weaviate"),
            "hybrid (product weights)": prepared.ranker(retriever, "rrf"),
        }
        reranker = build_reranker(services.settings.reranker(), services.embedder, services.lexical)
        if reranker is not None:
            rankers[f"hybrid + rerank ({services.settings.RERANK_PROVIDER}, top {_RERANK_POOL})"] = prepared.reranked(
                retriever, reranker, _RERANK_POOL
            )
        out.write(_retrieval_table(folder.name, await prepared.score(rankers)) + "\n")


async def _evaluate_faq(services: Services, folder: Path, out: TextIO) -> None:
    retriever = retriever_for(services)
    async with faq_set(services, folder) as prepared:
        rankers = {
            "bm25": prepared.ranker(retriever, "bm25"),
            "vector": prepared.ranker(retriever, "vector"),
            "rrf, equal weights": prepared.ranker(_equal_weights(retriever), "rrf"),
            "weaviate hybrid (ranked fusion)": prepared.ranker(retriever, "weaviate"),
            "hybrid (product weights)": prepared.ranker(retriever, "rrf"),
            "FAQ search (product)": prepared.product_ranker(retriever, faq_search_for(services)),
        }
        threshold = services.settings.answer().direct_answer_threshold
        out.write(_faq_table(folder.name, await prepared.score(rankers, threshold)) + "\n")


async def _evaluate_rewrite(services: Services, folder: Path, out: TextIO) -> None:
    rewriter = RuleRewriter()
    rows = [(folder.name, await rewrite_eval.evaluate(folder, rewriter))]
    out.write(f"### {folder.name}\n\n" + rewrite_eval.table(rows) + "\n")


async def run_eval(services: Services, folders: Sequence[Path], out: TextIO = sys.stdout) -> int:
    """Evaluate each folder by its kind; 2 for a folder of no known kind."""
    for folder in folders:
        if (folder / "corpus.jsonl").exists():
            await _evaluate_retrieval(services, folder, out)
        elif (folder / "faqs.jsonl").exists():
            await _evaluate_faq(services, folder, out)
        elif (folder / "rewrite.jsonl").exists():
            await _evaluate_rewrite(services, folder, out)
        else:
            out.write(f"{folder}: not a retrieval (corpus.jsonl), FAQ (faqs.jsonl) or rewrite (rewrite.jsonl) folder\n")
            return 2
        out.flush()
    return 0
