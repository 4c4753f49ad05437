"""`ragbot eval DIR...`: ingest a labelled set into a throw-away knowledge base, search, print the figures."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.services import Services
from rag.eval.retrieval_eval import (
    BeirSet,
    FaqScores,
    RetrievalScores,
    chunk_ranker,
    evaluate_beir,
    evaluate_faq,
    faq_ranker,
    load_beir,
    read_jsonl,
)
from rag.ingest.documents import SourceFile
from rag.ingest.faq_import import FaqEntry, question_key
from rag.retrieval import Mode, Retriever
from storage.records import KnowledgeBaseRecord

MODES: tuple[Mode, ...] = ("bm25", "vector", "rrf", "weaviate")
_NO_ANSWER = "(no answer in the evaluation set)"


def retriever_for(services: Services) -> Retriever:
    """A retriever over the running services."""
    return Retriever(services.store, services.embedder, services.lexical, services.documents, services.faqs)


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

    async def score(self, retriever: Retriever, modes: Sequence[Mode]) -> list[RetrievalScores]:
        """Each mode's mean metrics."""
        return await evaluate_beir(self.data, chunk_ranker(retriever, self.kb_id, self.chunk_to_doc), modes)


@dataclass(frozen=True, slots=True)
class PreparedFaq:
    """An FAQ set ready to be searched: its folder, knowledge base and FAQ id -> dataset id."""

    folder: Path
    kb_id: str
    faq_to_dataset: dict[str, str]

    async def score(self, retriever: Retriever, modes: Sequence[Mode]) -> list[FaqScores]:
        """Each mode's hit rates."""
        return await evaluate_faq(self.folder, faq_ranker(retriever, self.kb_id, self.faq_to_dataset), modes)


def _retrieval_table(name: str, scores: Sequence[RetrievalScores]) -> str:
    lines = [
        f"### {name}",
        "",
        "| mode | nDCG@10 | Recall@10 | Recall@50 | MRR@10 |",
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
        "| mode | queries with an FAQ | hit@1 | hit@5 | labelled negatives | negative FAQ ranked first |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.mode} | {s.answerable} | {s.top1:.3f} | {s.top5:.3f} | {s.negatives} | {s.negative_top1_rate:.1%} |"
        for s in scores
    ]
    return "\n".join(lines) + "\n"


async def run_eval(services: Services, folders: Sequence[Path], out: TextIO = sys.stdout) -> int:
    """Evaluate each folder by its kind; 2 for a folder of no known kind."""
    for folder in folders:
        if (folder / "corpus.jsonl").exists():
            async with retrieval_set(services, folder, out) as prepared:
                out.write(_retrieval_table(folder.name, await prepared.score(retriever_for(services), MODES)) + "\n")
        elif (folder / "faqs.jsonl").exists():
            async with faq_set(services, folder) as faq:
                out.write(_faq_table(folder.name, await faq.score(retriever_for(services), MODES)) + "\n")
        else:
            out.write(f"{folder}: not a retrieval (corpus.jsonl) or FAQ (faqs.jsonl) folder\n")
            return 2
        out.flush()
    return 0
