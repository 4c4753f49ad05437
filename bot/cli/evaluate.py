"""`ragbot eval DIR...`: ingest a labelled set into a throw-away knowledge base, search, print the figures."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TextIO

from bot.app.services import Services
from bot.cli.conversation_eval import CONVERSATIONS, evaluate_conversations
from bot.cli.eval_corpus import ingested_corpus, retriever_for, throwaway_kb
from bot.cli.evaluate_multiturn import evaluate_multiturn, is_multiturn_set
from rag.config import AnswerConfig
from rag.eval import rewrite_eval
from rag.eval.answer_eval import Compose, Selected, answer_table, evaluate_answers, gold_queries
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
    retrieval_table,
)
from rag.fallback import extractive_answer, faq_answers
from rag.faq.candidate import VERBATIM, faq_confidence
from rag.faq.search import FaqSearch
from rag.ingest.faq_sheet import FaqEntry, question_key
from rag.models.rerankers import build_reranker
from rag.pipeline import TurnContext
from rag.ports import Reranker
from rag.relevance import RerankConfig, rerank_order
from rag.retrieval import FusionWeights, Mode, Retriever
from rag.rewrite_rules import RuleRewriter
from rag.stages.generate import Generate
from rag.types import Candidate, Vector

_NO_ANSWER = "(no answer in the evaluation set)"
# How many fused chunks the reranker reorders in the evaluation: 50 documents are scored, chunks outnumber them.
_RERANK_POOL = 100


def faq_search_for(services: Services) -> FaqSearch:
    """The answer pipeline's FAQ search over the running services."""
    return FaqSearch(services.store, services.faqs, services.lexical, services.embedder, services.settings.faq_search())


@asynccontextmanager
async def retrieval_set(services: Services, folder: Path, out: TextIO) -> AsyncIterator[PreparedRetrieval]:
    """A BEIR folder ingested into a throw-away knowledge base, removed again afterwards."""
    data = load_beir(folder)
    async with ingested_corpus(services, folder, data.corpus, out) as corpus:
        out.write(f"  {folder.name}: {len(data.corpus)} documents in {len(corpus.chunk_to_doc)} chunks\n")
        yield PreparedRetrieval(data, corpus.kb_id, corpus.chunk_to_doc)


@asynccontextmanager
async def faq_set(services: Services, folder: Path) -> AsyncIterator[PreparedFaq]:
    """An FAQ folder imported into a throw-away knowledge base, removed again afterwards."""
    kb = await throwaway_kb(services, folder)
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

    def reranked(self, retriever: Retriever, reranker: Reranker, pool: int, config: RerankConfig) -> RankDocuments:
        """Dataset documents for a query: the product's fused top `pool` chunks in RERANK's order (no cut)."""

        async def rank(query: str, limit: int) -> list[str]:
            fused = await retriever.search_chunks(query, [self.kb_id], limit=pool)
            ordered = await rerank_order(reranker, query, fused, config)
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

    def product_ranker(self, retriever: Retriever, faqs: FaqSearch, answer: AnswerConfig | None = None) -> RankFaqs:
        """Dataset FAQ ids as the answer pipeline's FAQ search offers them (vetoes and confidence bar applied); with
        `answer`, also which of them the answer stage would give verbatim were that FAQ first (its decision, run)."""
        return self._product(retriever, faqs, answer, names_rule=True, searched={})

    def product_rankers(self, retriever: Retriever, faqs: FaqSearch, answer: AnswerConfig) -> dict[str, RankFaqs]:
        """Two `product_ranker` rows on the same search results: the product, and the product with every FAQ
        counted as carrying the question's names and numbers (the verbatim decision as it was before that rule)."""
        searched: dict[str, list[Candidate]] = {}
        return {
            "FAQ search (product)": self._product(retriever, faqs, answer, names_rule=True, searched=searched),
            "FAQ search (product), names rule off": self._product(
                retriever, faqs, answer, names_rule=False, searched=searched
            ),
        }

    def _product(
        self,
        retriever: Retriever,
        faqs: FaqSearch,
        answer: AnswerConfig | None,
        *,
        names_rule: bool,
        searched: dict[str, list[Candidate]],
    ) -> RankFaqs:
        async def rank(query: str) -> RankedFaqs:
            if query not in searched:
                searched[query] = await faqs.search(query, await retriever.query_vector(query), [self.kb_id])
            found = searched[query]
            if not names_rule:
                found = [replace(c, metadata={**c.metadata, VERBATIM: True}) for c in found]
            known = [(self.faq_to_dataset[c.id], c) for c in found if c.id in self.faq_to_dataset]
            ids, confidence = [faq_id for faq_id, _ in known], faq_confidence(found[0]) if found else None
            if answer is None:
                return RankedFaqs(ids, confidence)
            decided = [(faq_id, await _verbatim_answer(query, c, answer)) for faq_id, c in known]
            return RankedFaqs(
                ids,
                confidence,
                quoted=frozenset(faq_id for faq_id, (quoted, _) in decided if quoted),
                direct=frozenset(faq_id for faq_id, (_, direct) in decided if direct),
            )

        return rank

    async def score(self, rankers: Mapping[str, RankFaqs], direct_threshold: float) -> list[FaqScores]:
        """Each ranker's hit and false-hit rates."""
        return await evaluate_faq(self.folder, rankers, direct_threshold=direct_threshold)


async def _verbatim_answer(query: str, faq: Candidate, config: AnswerConfig) -> tuple[bool, bool]:
    """With `faq` the best passage, whether the answer stage without a chat model replies with the FAQ's answer
    verbatim, and whether it answers directly (which it does before, and whether or not, a model is asked)."""
    turn = TurnContext(query=query, kb_ids=(faq.kb_id,), selected=[faq])
    reply = await _answer_text(Generate(None, config), turn)
    return reply.strip() in faq_answers(faq)[:1], turn.outcome == "faq_direct"


async def _answer_text(generate: Generate, turn: TurnContext) -> str:
    """What the answer stage replies to `turn`, whole."""
    await generate.run(turn)
    return "".join([piece async for piece in turn.answer]) if turn.answer is not None else ""


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
    verbatim = [(s.mode, s.verbatim) for s in scores if s.verbatim is not None]
    if verbatim:
        lines += [
            "",
            "| ranker | quoted without a model | of which the gold FAQ | answered directly | of which the gold FAQ "
            "| gold FAQ left out: quoted without a model | gold FAQ left out: answered directly |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {mode} | {v.quoted:.1%} | {v.quoted_gold:.1%} | {v.direct:.1%} | {v.direct_gold:.1%} "
            f"| {v.gold_out_quoted:.1%} | {v.gold_out_direct:.1%} |"
            for mode, v in verbatim
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
                retriever, reranker, _RERANK_POOL, services.settings.rerank()
            )
        out.write(retrieval_table(folder.name, await prepared.score(rankers)) + "\n")
        if queries := gold_queries(prepared.data.queries):
            scores = await evaluate_answers(queries, _product_selection(services, prepared.kb_id), _composers(services))
            out.write(answer_table(folder.name, scores) + "\n")


def _product_selection(services: Services, kb_id: str) -> Selected:
    """The passages the answer pipeline would answer from (its search pipeline, top k), and the query vector."""

    async def select(question: str) -> tuple[list[Candidate], Vector | None]:
        answerer = services.answerer
        turn = await answerer.execute(answerer.prepare(question, [kb_id]), answerer.search)
        return turn.selected, turn.query_vector

    return select


def _composers(services: Services) -> dict[str, Compose]:
    """Today's whole-passage quote beside the sentence answer as the product gives it, and with embeddings."""
    config = services.settings.answer()
    every_language = replace(config, extractive=replace(config.extractive, embed_languages=None))
    budget = config.extractive.max_chars

    async def whole(question: str, passages: Sequence[Candidate], vector: Vector | None) -> str:
        return extractive_answer(question, passages)

    def stage(generate: Generate) -> Compose:
        async def compose(question: str, passages: Sequence[Candidate], vector: Vector | None) -> str:
            return await _answer_text(generate, TurnContext(question, (), selected=list(passages), query_vector=vector))

        return compose

    # As the product cuts an answer's sentences (rag.named_pipelines): without filling the remembered terms.
    tokens = partial(services.lexical.tokens, remember=False)
    return {
        "whole passages (before, <= 1200 chars)": whole,
        f"sentences, jieba terms (<= {budget} chars)": stage(Generate(None, config, terms=tokens)),
        f"sentences, jieba terms + embeddings in every language (<= {budget})": stage(
            Generate(None, every_language, terms=tokens, embedder=services.embedder.transient)
        ),
        f"sentences, dictionary-free terms (<= {budget})": stage(Generate(None, config)),
    }


async def _evaluate_faq(services: Services, folder: Path, out: TextIO) -> None:
    retriever = retriever_for(services)
    async with faq_set(services, folder) as prepared:
        rankers = {
            "bm25": prepared.ranker(retriever, "bm25"),
            "vector": prepared.ranker(retriever, "vector"),
            "rrf, equal weights": prepared.ranker(_equal_weights(retriever), "rrf"),
            "weaviate hybrid (ranked fusion)": prepared.ranker(retriever, "weaviate"),
            "hybrid (product weights)": prepared.ranker(retriever, "rrf"),
        }
        answer = services.settings.answer()
        rankers.update(prepared.product_rankers(retriever, faq_search_for(services), answer))
        threshold = answer.direct_answer_threshold
        out.write(_faq_table(folder.name, await prepared.score(rankers, threshold)) + "\n")


async def _evaluate_rewrite(services: Services, folder: Path, out: TextIO) -> None:
    rewriter = RuleRewriter()
    rows = [(folder.name, await rewrite_eval.evaluate(folder, rewriter))]
    out.write(f"### {folder.name}\n\n" + rewrite_eval.table(rows) + "\n")


async def run_eval(
    services: Services, folders: Sequence[Path], out: TextIO = sys.stdout, *, declines_only: bool = False
) -> int:
    """Evaluate each folder by its kind; 2 for a folder of no known kind, 1 when a set's documents failed to ingest.
    `declines_only`: of a multi-turn set, only the decline table (the retrieval rows take about as long as answering
    every task)."""
    for folder in folders:
        if (folder / CONVERSATIONS).exists():
            if code := await evaluate_conversations(services, folder, out):
                return code
        elif is_multiturn_set(folder):
            await evaluate_multiturn(services, folder, out, declines_only=declines_only)
        elif (folder / "corpus.jsonl").exists():
            await _evaluate_retrieval(services, folder, out)
        elif (folder / "faqs.jsonl").exists():
            await _evaluate_faq(services, folder, out)
        elif (folder / "rewrite.jsonl").exists():
            await _evaluate_rewrite(services, folder, out)
        else:
            out.write(
                f"{folder}: not a conversation ({CONVERSATIONS}), multi-turn (corpus.jsonl and tasks.jsonl), "
                "retrieval (corpus.jsonl), FAQ (faqs.jsonl) or rewrite (rewrite.jsonl) folder\n"
            )
            return 2
        out.flush()
    return 0
