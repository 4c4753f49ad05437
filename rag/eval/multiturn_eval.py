"""Multi-turn evaluation on conversation sets (MTRAG-style tasks.jsonl): retrieval per query form, and declines."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from rag.eval.retrieval_eval import RankDocuments, RetrievalScores, read_jsonl
from rag.eval.scores import mrr_at_k, ndcg_at_k, recall_at_k
from rag.history import HistoryConfig, answered_rounds
from rag.rewrite import Round
from rag.types import ChatMessage
from storage.records import MessageRecord, MessageRole

ANSWERABLE: Final = "ANSWERABLE"
UNANSWERABLE: Final = "UNANSWERABLE"
UNDERSPECIFIED: Final = "UNDERSPECIFIED"
PARTIAL: Final = "PARTIAL"
# The labels whose gold passages answer the turn: the ones retrieval is scored on (MTRAG-UN's own choice).
RETRIEVAL_LABELS: Final = frozenset({ANSWERABLE, PARTIAL})
# The pipeline's outcomes (TurnContext.outcome) that leave the asker without an answer from the sources: nothing
# was found (rag.stages.generate), or the question was refused before any search (rag.input_check).
DECLINED: Final = frozenset({"no_match", "refused"})

# Any fixed time: each stored message is one second after the one before it.
_EPOCH: Final = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ConversationTask:
    """One conversation's last user turn, with the turns before it, its gold passages and its answerability."""

    id: str
    history: tuple[tuple[str, str], ...]
    query: str
    gold_doc_ids: tuple[str, ...]
    answerability: str

    @property
    def user_turns(self) -> list[str]:
        """Every user turn, the last one included, oldest first."""
        return [text for role, text in self.history if role == "user"] + [self.query]


def load_tasks(folder: Path) -> list[ConversationTask]:
    """The tasks of `folder`/tasks.jsonl; fields it does not know are ignored."""
    return [
        ConversationTask(
            id=str(row["id"]),
            history=tuple((str(turn["role"]), str(turn["text"])) for turn in row.get("history") or ()),
            query=str(row["query"]),
            gold_doc_ids=tuple(str(doc_id) for doc_id in row.get("gold_doc_ids") or ()),
            answerability=str(row.get("answerability") or ANSWERABLE).upper(),
        )
        for row in read_jsonl(folder / "tasks.jsonl")
    ]


def retrieval_tasks(tasks: Sequence[ConversationTask]) -> list[ConversationTask]:
    """The answerable and partial tasks that list gold passages."""
    return [task for task in tasks if task.answerability in RETRIEVAL_LABELS and task.gold_doc_ids]


def stored_messages(task: ConversationTask) -> list[MessageRecord]:
    """The task's conversation as the chat stores it when its last turn is asked: every earlier user turn with its
    answer (done, sharing a request id), then the last user turn, stored before its answer exists."""
    turns: list[tuple[int, MessageRole, str]] = []
    request = 0
    for role, text in task.history:
        if role == "user" or not turns or turns[-1][1] != "user":
            request += 1
        turns.append((request, "user" if role == "user" else "assistant", text))
    turns.append((request + 1, "user", task.query))
    return [
        MessageRecord(
            id=f"{task.id}#{n}",
            conversation_id=task.id,
            request_id=f"{task.id}#r{request_id}",
            role=role,
            text=text,
            status="done",
            platform_message_id="",
            meta={},
            created_at=_EPOCH + timedelta(seconds=n),
        )
        for n, (request_id, role, text) in enumerate(turns)
    ]


class TaskHistory:
    """A HistorySource over the tasks' conversations, as `stored_messages` has them (conversation id = task id)."""

    def __init__(self, tasks: Sequence[ConversationTask]) -> None:
        self._messages = {task.id: stored_messages(task) for task in tasks}

    async def recent(self, conversation_id: str, limit: int) -> Sequence[MessageRecord]:
        """The newest `limit` messages, oldest first."""
        messages = self._messages.get(conversation_id, [])
        return messages[-limit:] if limit > 0 else []


def pipeline_rounds(task: ConversationTask, config: HistoryConfig) -> list[Round]:
    """The rounds LOAD_HISTORY gives REWRITE_QUERY for the task's last turn (the same reading and pairing)."""
    messages = stored_messages(task)
    recent = messages[-config.limit :] if config.limit > 0 else []
    return [(done.question, done.answer) for done in answered_rounds(recent, config.max_rounds)]


QueryOf = Callable[[ConversationTask], Awaitable[str]]
"""task -> the text searched for it."""


async def last_turn(task: ConversationTask) -> str:
    """The last user turn alone."""
    return task.query


async def every_user_turn(task: ConversationTask) -> str:
    """Every user turn joined, oldest first."""
    return " ".join(task.user_turns)


async def evaluate_retrieval(
    tasks: Sequence[ConversationTask], rows: Mapping[str, tuple[QueryOf, RankDocuments]]
) -> list[RetrievalScores]:
    """Per row (a query form and a ranker): mean nDCG@10, Recall@10, Recall@50 and MRR@10 over `retrieval_tasks`."""
    scored = retrieval_tasks(tasks)
    results = []
    for label, (query_of, rank) in rows.items():
        ndcg, r10, r50, mrr = [], [], [], []
        for task in scored:
            relevant = dict.fromkeys(task.gold_doc_ids, 1)
            ranked = await rank(await query_of(task), 50)
            ndcg.append(ndcg_at_k(ranked, relevant, 10))
            r10.append(recall_at_k(ranked, relevant, 10))
            r50.append(recall_at_k(ranked, relevant, 50))
            mrr.append(mrr_at_k(ranked, relevant, 10))
        results.append(RetrievalScores(label, *(statistics.fmean(v) if v else 0.0 for v in (ndcg, r10, r50, mrr))))
    return results


@dataclass(frozen=True, slots=True)
class Answered:
    """How the answer pipeline ended one task's last turn: its outcome (TurnContext.outcome), and the dataset
    documents of the passages it answered from (empty when none)."""

    outcome: str
    documents: tuple[str, ...] = ()

    @property
    def declined(self) -> bool:
        """Whether the asker got no answer from the sources."""
        return self.outcome in DECLINED


@dataclass(frozen=True, slots=True)
class DeclineScores:
    """How the answer pipeline ended the turns of one answerability label: the share declined, every outcome, and
    of the tasks that list gold passages (`with_gold`), the share answered from at least one of them."""

    answerability: str
    tasks: int
    declined: float
    outcomes: tuple[tuple[str, int], ...]
    with_gold: int = 0
    answered_from_gold: float = 0.0


AnswerTask = Callable[[ConversationTask], Awaitable[Answered]]
"""task -> how the answer pipeline ended its last turn."""

_LABEL_ORDER: Final = (UNANSWERABLE, ANSWERABLE, PARTIAL, UNDERSPECIFIED)


async def evaluate_declines(tasks: Sequence[ConversationTask], answer: AnswerTask) -> list[DeclineScores]:
    """Each task answered once; per answerability label (unanswerable first), the share declined (by outcome, see
    DECLINED), the count of each outcome, and how often a task with gold passages was answered from one."""
    answered: dict[str, list[tuple[ConversationTask, Answered]]] = {}
    for task in tasks:
        answered.setdefault(task.answerability, []).append((task, await answer(task)))
    ordered = sorted(answered, key=lambda label: (_LABEL_ORDER.index(label) if label in _LABEL_ORDER else 4, label))
    return [_decline_scores(label, answered[label]) for label in ordered]


def _decline_scores(label: str, answered: Sequence[tuple[ConversationTask, Answered]]) -> DeclineScores:
    outcomes = Counter(result.outcome for _, result in answered)
    gold = [(task, result) for task, result in answered if task.gold_doc_ids]
    from_gold = sum(
        not result.declined and bool(set(task.gold_doc_ids) & set(result.documents)) for task, result in gold
    )
    return DeclineScores(
        label,
        len(answered),
        sum(result.declined for _, result in answered) / len(answered),
        tuple(sorted(outcomes.items(), key=lambda item: (-item[1], item[0]))),
        len(gold),
        from_gold / len(gold) if gold else 0.0,
    )


def decline_table(name: str, scores: Sequence[DeclineScores]) -> str:
    """A markdown table of decline shares; the right behaviour differs by label and is said in the last column."""
    right = {
        UNANSWERABLE: "decline",
        ANSWERABLE: "answer",
        PARTIAL: "answer what it can",
        UNDERSPECIFIED: "ask what is meant",
    }
    lines = [
        f"### {name}: declines through the answer pipeline",
        "",
        "| answerability | tasks | declined | outcomes | answered from a gold passage (tasks with gold) "
        "| right behaviour |",
        "| --- | ---: | ---: | --- | ---: | --- |",
    ]
    lines += [
        f"| {s.answerability} | {s.tasks} | {s.declined:.1%} | {', '.join(f'{o} {n}' for o, n in s.outcomes)} "
        f"| {f'{s.answered_from_gold:.1%} ({s.with_gold})' if s.with_gold else '-'} "
        f"| {right.get(s.answerability, '')} |"
        for s in scores
    ]
    return "\n".join(lines) + "\n"


# The last line of the rewrite prompt's user message (rag.rewrite._prompt).
_LATEST: Final = re.compile(r"^Latest question: (.*)$", re.MULTILINE)


class EchoModel:
    """A ChatModel that repeats the rewrite prompt's latest question: it exercises the model rewriter's plumbing
    (prompt, call, cleaning, checks) and nothing of a model's judgement. For evaluation only."""

    model_id = "echo"

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The latest question of the last message, else that message whole."""
        text = messages[-1].content if messages else ""
        found = _LATEST.findall(text)
        return found[-1] if found else text

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """`complete` in one piece."""
        yield await self.complete(messages)
