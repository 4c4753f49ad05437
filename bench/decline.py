"""How well the local reranker's judgement separates answerable from unanswerable turns (mtrag-un, DEV).

For each task the last turn is rewritten by the rule rewriter with the task's history, searched as SEARCH does
(hybrid chunks and FAQs) and judged as RERANK judges it (a follow-up together with the previous question); the
best judged score decides "answer" or "decline" at each floor. Prints, per answerability label and floor, the
share of turns declined: the goal is most UNANSWERABLE turns and few ANSWERABLE ones. Per-task scores go to
--dump for reading the errors.

    RAGBOT_DATA_DIR=/tmp/ragbot-decline .venv/bin/python -m bench.decline ../shared/eval/mtrag-un

The corpus is ingested with the product's default chunking into a throw-away knowledge base; keep RAGBOT_DATA_DIR
between runs and its embedding cache makes the next run about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import commit, machine
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.cli.eval_corpus import ingested_corpus
from bot.cli.evaluate import faq_search_for, retriever_for
from rag.eval.multiturn_eval import ConversationTask, load_tasks, pipeline_rounds
from rag.eval.retrieval_eval import read_jsonl
from rag.models.rerankers import LocalReranker
from rag.pipeline import TurnContext
from rag.relevance import model_scores
from rag.rewrite_rules import RuleRewriter
from rag.stages.rerank import judged_question
from rag.stages.search import Search

FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


@dataclass(frozen=True, slots=True)
class Judged:
    """One task's label, its question as searched, and the best judged score of what SEARCH found."""

    task_id: str
    label: str
    query: str
    searched: str
    best: float


async def judge_tasks(services: Services, kb_id: str, tasks: Sequence[ConversationTask]) -> list[Judged]:
    """Each task's best judged score, as RERANK would judge it, with the history LOAD_HISTORY would give."""
    search = Search(retriever_for(services), faq_search_for(services))
    judge = LocalReranker(services.embedder, services.lexical)
    rewriter = RuleRewriter()
    judged: list[Judged] = []
    for task in tasks:
        history = pipeline_rounds(task, services.settings.history())
        rewritten = (await rewriter.rewrite(task.query, history)).text if history else ""
        turn = TurnContext(query=task.query, kb_ids=(kb_id,), history=history, rewritten=rewritten)
        await search.run(turn)
        question, vector = judged_question(turn)
        scores = await model_scores(judge, question, turn.candidates, vector) if turn.candidates else []
        judged.append(Judged(task.id, task.answerability, task.query, question, max(scores, default=0.0)))
    return judged


def decline_table(judged: Sequence[Judged]) -> str:
    """Per floor, the share of each label's turns whose best score is below it."""
    labels = sorted({one.label for one in judged})
    lines = ["| floor | " + " | ".join(f"{label} declined" for label in labels) + " |"]
    lines.append("| ---: | " + " | ".join("---:" for _ in labels) + " |")
    for floor in FLOORS:
        cells = []
        for label in labels:
            best = [one.best for one in judged if one.label == label]
            cells.append(f"{sum(score < floor for score in best) / len(best):.1%} of {len(best)}")
        lines.append(f"| {floor:g} | " + " | ".join(cells) + " |")
    medians = ", ".join(
        f"{label} {statistics.median(one.best for one in judged if one.label == label):.3f}" for label in labels
    )
    return "\n".join(lines) + f"\n\nmedian best score: {medians}\n"


async def _main(folder: Path, dump: Path | None) -> None:
    print(f"commit {commit()} · {machine()}\n")
    async with build_services(Settings()) as services:
        corpus = read_jsonl(folder / "corpus.jsonl")
        async with ingested_corpus(services, folder, corpus, sys.stderr, rule=None) as ingested:
            judged = await judge_tasks(services, ingested.kb_id, load_tasks(folder))
    print(decline_table(judged))
    if dump is not None:
        dump.write_text(json.dumps([_row(one) for one in judged], indent=1))


def _row(one: Judged) -> dict[str, object]:
    return {name: getattr(one, name) for name in Judged.__slots__}


def main() -> None:
    """Judge every task of the folder and print the decline table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--dump", type=Path, help="write each task's scores here (JSON)")
    arguments = parser.parse_args()
    asyncio.run(_main(arguments.folder, arguments.dump))


if __name__ == "__main__":
    main()
