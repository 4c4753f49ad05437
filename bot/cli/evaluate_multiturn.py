"""`ragbot eval` on conversation sets (corpus.jsonl + tasks.jsonl): retrieval by query form, declines end to end.

For tuning the decision to decline, call `decline_rates` (one call: ingest, answer every task, remove), or hold a
set open with `conversation_set` and call `PreparedConversations.declines` with changed `PipelineParts` each time.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from bot.app.services import Services
from bot.chat.answerer import Answerer
from bot.cli.eval_corpus import ingested_corpus, retriever_for
from rag.eval.multiturn_eval import (
    Answered,
    ConversationTask,
    DeclineScores,
    EchoModel,
    QueryOf,
    TaskHistory,
    decline_table,
    evaluate_declines,
    evaluate_retrieval,
    every_user_turn,
    last_turn,
    load_tasks,
    pipeline_rounds,
    retrieval_tasks,
)
from rag.eval.retrieval_eval import RankDocuments, RetrievalScores, chunk_ranker, read_jsonl, retrieval_table
from rag.history import HistoryConfig
from rag.named_pipelines import PipelineParts
from rag.retrieval import Mode, Retriever
from rag.rewrite import LlmRewriter, Rewriter
from rag.rewrite_rules import RuleRewriter


def is_multiturn_set(folder: Path) -> bool:
    """Whether `folder` holds a conversation set (its tasks carry the history)."""
    return (folder / "corpus.jsonl").exists() and (folder / "tasks.jsonl").exists()


@dataclass(frozen=True, slots=True)
class PreparedConversations:
    """A conversation set ready to be searched and answered: its tasks, its knowledge base, and the dataset
    document of each chunk and of each stored document."""

    tasks: list[ConversationTask]
    kb_id: str
    chunk_to_doc: dict[str, str]
    document_to_doc: dict[str, str]

    def ranker(self, retriever: Retriever, mode: Mode) -> RankDocuments:
        """Dataset documents for a query by one search mode, ranked by their best chunk."""
        return chunk_ranker(retriever, mode, self.kb_id, self.chunk_to_doc)

    async def retrieval(self, services: Services) -> list[RetrievalScores]:
        """The retrieval rows: BM25 and the product's hybrid search on the last turn, hybrid on every user turn
        joined, on the rule rewrite and on the model rewrite (the configured model, else `EchoModel`)."""
        retriever = retriever_for(services)
        # Four rows search with it, and most queries come out of the rewriters unchanged: each is searched once.
        hybrid = _once_per_query(self.ranker(retriever, "rrf"))
        history = services.settings.history()
        model = services.answerer.parts.model
        model_row = (
            f"hybrid, model rewrite ({model.model_id})"
            if model is not None
            else "hybrid, model rewrite (echo model: checks the plumbing only)"
        )
        rows: dict[str, tuple[QueryOf, RankDocuments]] = {
            "bm25, last turn": (last_turn, self.ranker(retriever, "bm25")),
            "hybrid (product weights), last turn": (last_turn, hybrid),
            "hybrid, every user turn joined": (every_user_turn, hybrid),
            "hybrid, rule rewrite (REWRITE_QUERY without a model)": (
                rewritten_by(RuleRewriter(), history),
                hybrid,
            ),
            model_row: (rewritten_by(LlmRewriter(model or EchoModel()), history), hybrid),
        }
        return await evaluate_retrieval(self.tasks, rows)

    async def declines(self, parts: PipelineParts) -> list[DeclineScores]:
        """Every task's last turn answered by the answer pipeline built from `parts` (its history read from the
        task), and the share declined per answerability label."""
        answerer = Answerer(replace(parts, history=TaskHistory(self.tasks)))

        async def answer(task: ConversationTask) -> Answered:
            turn = await answerer.execute(answerer.prepare(task.query, [self.kb_id], conversation_id=task.id))
            documents = (self.document_to_doc.get(c.document_id or "") for c in turn.selected)
            return Answered(turn.outcome, tuple(dict.fromkeys(d for d in documents if d is not None)))

        return await evaluate_declines(self.tasks, answer)


def _once_per_query(rank: RankDocuments) -> RankDocuments:
    """`rank`, remembering its ranking of each (query, limit)."""
    ranked: dict[tuple[str, int], list[str]] = {}

    async def remembered(query: str, limit: int) -> list[str]:
        if (query, limit) not in ranked:
            ranked[query, limit] = await rank(query, limit)
        return ranked[query, limit]

    return remembered


def rewritten_by(rewriter: Rewriter, history: HistoryConfig) -> QueryOf:
    """The task's last turn as `rewriter` rewrites it, given the rounds REWRITE_QUERY would be given."""

    async def query(task: ConversationTask) -> str:
        return (await rewriter.rewrite(task.query, pipeline_rounds(task, history))).text

    return query


@asynccontextmanager
async def conversation_set(
    services: Services, folder: Path, out: TextIO = sys.stdout
) -> AsyncIterator[PreparedConversations]:
    """A conversation folder's corpus ingested into a throw-away knowledge base with the product's default chunking
    (the declines are measured as a team would meet them), removed again afterwards."""
    tasks = load_tasks(folder)
    async with ingested_corpus(services, folder, read_jsonl(folder / "corpus.jsonl"), out, rule=None) as corpus:
        yield PreparedConversations(tasks, corpus.kb_id, corpus.chunk_to_doc, corpus.document_to_doc)


async def decline_rates(
    services: Services, folder: Path, parts: PipelineParts | None = None, out: TextIO = sys.stdout
) -> list[DeclineScores]:
    """The decline shares of the answer pipeline (`parts`, else the product's) on a conversation folder."""
    async with conversation_set(services, folder, out) as prepared:
        return await prepared.declines(parts or services.answerer.parts)


async def evaluate_multiturn(
    services: Services, folder: Path, out: TextIO = sys.stdout, *, declines_only: bool = False
) -> None:
    """Print the retrieval table (unless `declines_only`) and the decline table of one conversation folder."""
    async with conversation_set(services, folder, out) as prepared:
        if not declines_only:
            scored = len(retrieval_tasks(prepared.tasks))
            title = f"{folder.name}: retrieval by query form ({scored} answerable and partial tasks with gold passages)"
            out.write(retrieval_table(title, await prepared.retrieval(services), "query, ranker") + "\n")
            out.flush()
        out.write(decline_table(folder.name, await prepared.declines(services.answerer.parts)) + "\n")
