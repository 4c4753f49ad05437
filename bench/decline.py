"""How well the local reranker's judgement separates answerable from unanswerable turns (mtrag-un, DEV).

For each task the last turn is rewritten by the rule rewriter with the task's history, searched as SEARCH does
(hybrid chunks and FAQs) and judged as RERANK judges it (a follow-up together with the previous question); the
best judged score decides "answer" or "decline" at each floor. Prints, per answerability label and floor, the
share of turns declined: the goal is most UNANSWERABLE turns and few ANSWERABLE ones. Per-task scores go to
--dump for reading the errors.

    RAGBOT_DATA_DIR=/tmp/ragbot-decline .venv/bin/python -m bench.decline ../shared/eval/mtrag-un
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import commit, machine
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.cli.evaluate import faq_search_for, retriever_for
from rag.ingest.documents import SourceFile
from rag.models.rerankers import LocalReranker
from rag.pipeline import TurnContext
from rag.relevance import model_scores
from rag.rewrite_rules import RuleRewriter
from rag.stages.rerank import judged_question
from rag.stages.search import Search

FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55)


@dataclass(frozen=True, slots=True)
class Judged:
    """One task's label, its question as searched, and the best judged score of what SEARCH found."""

    task_id: str
    label: str
    query: str
    searched: str
    best: float


def rounds_of(history: Sequence[dict[str, str]]) -> list[tuple[str, str]]:
    """A task's history as (question, answer) rounds."""
    rounds: list[tuple[str, str]] = []
    for message in history:
        if message["role"] == "user":
            rounds.append((message["text"], ""))
        elif rounds:
            rounds[-1] = (rounds[-1][0], message["text"])
    return rounds


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _knowledge_base(services: Services, folder: Path) -> str:
    # Kept between runs in the same RAGBOT_DATA_DIR: re-ingesting unchanged passages embeds nothing.
    name = f"decline-{folder.name}"
    kb = await services.knowledge.named(name) or await services.knowledge.create(name)
    sources = [
        SourceFile(
            f"{row.get('title') or ''}\n\n{row['text']}".strip().encode(), f"eval:{row['id']}", f"{row['id']}.txt"
        )
        for row in _jsonl(folder / "corpus.jsonl")
    ]
    for start in range(0, len(sources), 64):
        await services.ingestor.ingest_many(kb, sources[start : start + 64])
    return kb.id


async def judge_tasks(services: Services, kb_id: str, tasks: Sequence[dict[str, Any]]) -> list[Judged]:
    """Each task's best judged score, as RERANK would judge it."""
    search = Search(retriever_for(services), faq_search_for(services))
    judge = LocalReranker(services.embedder, services.lexical)
    rewriter = RuleRewriter()
    judged: list[Judged] = []
    for task in tasks:
        history = rounds_of(task["history"])
        query = str(task["query"])
        rewritten = (await rewriter.rewrite(query, history)).text if history else ""
        turn = TurnContext(query=query, kb_ids=(kb_id,), history=history, rewritten=rewritten)
        await search.run(turn)
        question, vector = judged_question(turn)
        scores = await model_scores(judge, question, turn.candidates, vector) if turn.candidates else []
        judged.append(Judged(str(task["id"]), str(task["answerability"]), query, question, max(scores, default=0.0)))
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
        kb_id = await _knowledge_base(services, folder)
        judged = await judge_tasks(services, kb_id, _jsonl(folder / "tasks.jsonl"))
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
