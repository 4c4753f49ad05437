"""Conversation-set evaluation: loading tasks, the history the pipeline would read, retrieval and decline scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.eval.multiturn_eval import (
    Answered,
    ConversationTask,
    EchoModel,
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
from rag.history import HistoryConfig
from rag.rewrite import LlmRewriter

ROWS = [
    {
        "id": "c1<::>3",
        "conversation_id": "c1",
        "turn": 3,
        "history": [
            {"role": "user", "text": "Who wrote Dune?"},
            {"role": "assistant", "text": "Frank Herbert."},
            {"role": "user", "text": "When?"},
            {"role": "assistant", "text": "In 1965."},
        ],
        "query": "What else did he write?",
        "gold_doc_ids": ["herbert", "dune"],
        "answerability": "ANSWERABLE",
        "multi_turn": "Follow-up",
        "reference_answer": "The Dosadi Experiment.",
    },
    {"id": "c2<::>1", "history": [], "query": "Who painted it?", "gold_doc_ids": [], "answerability": "UNANSWERABLE"},
    {"id": "c3<::>1", "history": [], "query": "Tax?", "gold_doc_ids": ["tax"], "answerability": "UNDERSPECIFIED"},
    {"id": "c4<::>1", "history": [], "query": "Rates?", "gold_doc_ids": ["rates"], "answerability": "PARTIAL"},
    {"id": "c5<::>1", "history": [], "query": "And this?", "gold_doc_ids": [], "answerability": "PARTIAL"},
]


@pytest.fixture
def tasks(tmp_path: Path) -> list[ConversationTask]:
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return load_tasks(tmp_path)


def test_tasks_load_with_their_history_and_labels_ignoring_unknown_fields(tasks: list[ConversationTask]) -> None:
    first = tasks[0]
    assert first.id == "c1<::>3"
    assert first.history[0] == ("user", "Who wrote Dune?")
    assert (first.query, first.gold_doc_ids, first.answerability) == (
        "What else did he write?",
        ("herbert", "dune"),
        "ANSWERABLE",
    )
    assert [task.answerability for task in tasks[1:]] == ["UNANSWERABLE", "UNDERSPECIFIED", "PARTIAL", "PARTIAL"]


def test_only_answerable_and_partial_tasks_with_gold_are_scored_for_retrieval(tasks: list[ConversationTask]) -> None:
    assert [task.id for task in retrieval_tasks(tasks)] == ["c1<::>3", "c4<::>1"]


async def test_the_query_forms_are_the_last_turn_and_every_user_turn(tasks: list[ConversationTask]) -> None:
    assert await last_turn(tasks[0]) == "What else did he write?"
    assert await every_user_turn(tasks[0]) == "Who wrote Dune? When? What else did he write?"


def test_the_pipeline_reads_the_rounds_of_the_stored_conversation(tasks: list[ConversationTask]) -> None:
    assert pipeline_rounds(tasks[0], HistoryConfig()) == [("Who wrote Dune?", "Frank Herbert."), ("When?", "In 1965.")]
    # As LOAD_HISTORY: the newest rounds only, and the limit counts the current question's own stored message.
    assert pipeline_rounds(tasks[0], HistoryConfig(max_rounds=1)) == [("When?", "In 1965.")]
    assert pipeline_rounds(tasks[0], HistoryConfig(limit=3)) == [("When?", "In 1965.")]
    assert pipeline_rounds(tasks[1], HistoryConfig()) == []


async def test_the_history_source_holds_each_conversation_with_its_last_question_unanswered(
    tasks: list[ConversationTask],
) -> None:
    messages = await TaskHistory(tasks).recent("c1<::>3", 20)
    assert [(m.role, m.text) for m in messages][-2:] == [("assistant", "In 1965."), ("user", "What else did he write?")]
    assert messages[0].request_id == messages[1].request_id != messages[-1].request_id
    assert [m.created_at for m in messages] == sorted({m.created_at for m in messages})
    assert await TaskHistory(tasks).recent("unknown", 20) == []


async def test_retrieval_scores_each_query_form_over_the_scored_tasks(tasks: list[ConversationTask]) -> None:
    async def rank(query: str, limit: int) -> list[str]:
        return {"What else did he write?": ["herbert", "x", "dune"], "Rates?": ["x"]}.get(query, [])[:limit]

    [scores] = await evaluate_retrieval(tasks, {"last turn": (last_turn, rank)})
    assert scores.mode == "last turn"
    assert scores.recall_10 == pytest.approx((1.0 + 0.0) / 2)
    ideal = 1 + 1 / 1.584962500721156  # two relevant documents at ranks 1 and 2
    assert scores.ndcg_10 == pytest.approx((1 + 0.5) / ideal / 2)
    assert scores.mrr_10 == pytest.approx(0.5)


async def test_declines_are_counted_from_the_pipeline_outcome_per_label(tasks: list[ConversationTask]) -> None:
    answers = {
        "c1<::>3": Answered("extractive", ("x", "dune")),
        "c2<::>1": Answered("no_match"),
        "c3<::>1": Answered("refused"),
        "c4<::>1": Answered("no_match"),
        "c5<::>1": Answered("extractive", ("rates",)),
    }

    async def answer(task: ConversationTask) -> Answered:
        return answers[task.id]

    scores = await evaluate_declines(tasks, answer)
    assert [(s.answerability, s.tasks, s.declined) for s in scores] == [
        ("UNANSWERABLE", 1, 1.0),
        ("ANSWERABLE", 1, 0.0),
        ("PARTIAL", 2, 0.5),
        ("UNDERSPECIFIED", 1, 1.0),
    ]
    assert scores[2].outcomes == (("extractive", 1), ("no_match", 1))
    # Answered from gold: of the tasks listing gold, those not declined whose sources include one.
    assert [(s.with_gold, s.answered_from_gold) for s in scores] == [(0, 0.0), (1, 1.0), (1, 0.0), (1, 0.0)]
    table = decline_table("set", scores)
    assert "| UNANSWERABLE | 1 | 100.0% | no_match 1 | - | decline |" in table
    assert "| ANSWERABLE | 1 | 0.0% | extractive 1 | 100.0% (1) | answer |" in table


async def test_the_echo_model_drives_the_model_rewriter_to_the_question_as_asked(
    tasks: list[ConversationTask],
) -> None:
    result = await LlmRewriter(EchoModel()).rewrite(tasks[0].query, pipeline_rounds(tasks[0], HistoryConfig()))
    assert (result.text, result.method) == ("What else did he write?", "model")
