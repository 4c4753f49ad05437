"""Answer evaluation without a model: how often an answer holds a gold answer span, and how long it is."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rag.types import Candidate, Vector

# Blockquote markers at line starts: quoting is presentation, a gold span broken by one still counts.
_QUOTE_MARK: Final = re.compile(r"^> ?", re.MULTILINE)
# A space between two Chinese characters is a line break of the layout, not of the text.
_HAN_SPACE: Final = re.compile(r"(?<=[\u3400-\u9fff\uf900-\ufaff]) (?=[\u3400-\u9fff\uf900-\ufaff])")


@dataclass(frozen=True, slots=True)
class GoldQuery:
    """A question with the answer spans that count as answering it."""

    text: str
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AnswerScores:
    """One way of answering, over a set's questions: gold containment and length in characters."""

    label: str
    queries: int
    containment: float
    median_chars: float
    p90_chars: float
    median_ms: float


Selected = Callable[[str], Awaitable[tuple[list[Candidate], Vector | None]]]
"""question -> the passages the product would answer from, and the question's vector."""

Compose = Callable[[str, Sequence[Candidate], Vector | None], Awaitable[str]]
"""(question, passages, question vector) -> the answer text."""


def gold_queries(rows: Sequence[Mapping[str, Any]]) -> list[GoldQuery]:
    """The rows that carry non-empty gold `answers`, as GoldQuery values."""
    found = []
    for row in rows:
        answers = tuple(text for answer in row.get("answers") or () if (text := _normalised(str(answer))))
        if answers:
            found.append(GoldQuery(str(row["text"]), answers))
    return found


def unwrapped(text: str) -> str:
    """Whitespace runs as one space, none between Chinese characters (a line break of the layout, not the text)."""
    return _HAN_SPACE.sub("", " ".join(text.split()))


def _normalised(text: str) -> str:
    return unwrapped(_QUOTE_MARK.sub("", text))


def contains_answer(answer: str, gold: Sequence[str]) -> bool:
    """Whether `answer` holds any gold span, both with blockquote marks dropped and whitespace collapsed (and
    dropped between Chinese characters)."""
    text = _normalised(answer)
    return any(span and _normalised(span) in text for span in gold)


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` in 0-1) of `values`; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))  # ceil without float surprises at exact ranks
    return float(ordered[int(rank) - 1])


def answer_scores(
    label: str, answers: Sequence[str], golds: Sequence[Sequence[str]], millis: Sequence[float]
) -> AnswerScores:
    """Containment rate, median and p90 length of `answers` against their gold spans, and the median time."""
    if len(answers) != len(golds):
        raise ValueError("one gold list per answer")
    lengths = [float(len(answer)) for answer in answers]
    hits = sum(contains_answer(answer, gold) for answer, gold in zip(answers, golds, strict=True))
    return AnswerScores(
        label,
        len(answers),
        hits / len(answers) if answers else 0.0,
        statistics.median(lengths) if lengths else 0.0,
        percentile(lengths, 0.9),
        statistics.median(millis) if millis else 0.0,
    )


async def evaluate_answers(
    queries: Sequence[GoldQuery], selected: Selected, composers: Mapping[str, Compose]
) -> list[AnswerScores]:
    """Each composer's scores over the same passages per question (retrieval runs once per question)."""
    answers: dict[str, list[str]] = {label: [] for label in composers}
    millis: dict[str, list[float]] = {label: [] for label in composers}
    for query in queries:
        passages, vector = await selected(query.text)
        for label, compose in composers.items():
            started = time.perf_counter()
            answers[label].append(await compose(query.text, passages, vector))
            millis[label].append((time.perf_counter() - started) * 1000)
    golds = [query.answers for query in queries]
    return [answer_scores(label, answers[label], golds, millis[label]) for label in composers]


def answer_table(name: str, scores: Sequence[AnswerScores]) -> str:
    """A markdown table of answer scores."""
    lines = [
        f"### {name}: answers without a model",
        "",
        "| answer | queries | contains a gold answer | median chars | p90 chars | median ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.label} | {s.queries} | {s.containment:.1%} | {s.median_chars:.0f} | {s.p90_chars:.0f} "
        f"| {s.median_ms:.1f} |"
        for s in scores
    ]
    return "\n".join(lines) + "\n"
