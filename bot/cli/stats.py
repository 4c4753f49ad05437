"""`ragbot stats`: what people asked, how it went, and the questions an admin should turn into FAQs."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta

from bot.app.services import Services
from bot.errors import UserFacingError
from bot.knowledge.misses import TOP_GROUPS, Misses, MissGroup, misses_of
from storage.records import MessageRecord
from storage.repos.retention import RetentionRepo

OUTCOME_GROUPS = {
    "faq_direct": "FAQ direct",
    "generated": "answered",
    "extractive": "answered",
    "chat": "answered",
    "no_match": "no match",
    "refused": "refused",
    "smalltalk": "small talk",
    "failed": "failed",
    "model_error": "failed",
    "stopped": "stopped",
    "timed_out": "timed out",
    "interrupted": "interrupted",
    "undelivered": "undelivered",
}
_TOP = 10
# How reasons for a 👎 read in the terminal report.
_REASON = {"wrong": "wrong", "outdated": "outdated", "not_found": "not found", "too_long": "too long", "other": "other"}
# Notes shown under a group: a few voices, not the whole pile.
_NOTES = 3


@dataclass(frozen=True, slots=True)
class ChatStats:
    """Figures over a period of stored turns."""

    questions_per_day: dict[date, int]
    outcomes: Counter[str]
    helpful: int
    unhelpful: int
    first_text_ms: list[float] = field(default_factory=list)
    unanswered: list[tuple[str, int]] = field(default_factory=list)
    disliked: list[tuple[str, int]] = field(default_factory=list)

    @property
    def questions(self) -> int:
        """All questions asked in the period."""
        return sum(self.questions_per_day.values())


def _normalise(question: str) -> str:
    return " ".join(question.casefold().split()).rstrip("?？!. ")


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def _outcome(answer: MessageRecord) -> str:
    # An answer the chat never showed counts as undelivered, whatever the turn came to.
    if answer.status == "undelivered":
        return "undelivered"
    return str(answer.meta.get("outcome") or ("failed" if answer.status == "failed" else "unknown"))


def compute_stats(messages: Sequence[MessageRecord]) -> ChatStats:
    """Aggregate stored messages: each answer is paired with its question by request id."""
    questions = {m.request_id: m for m in messages if m.role == "user"}
    per_day: Counter[date] = Counter(m.created_at.date() for m in questions.values())
    outcomes: Counter[str] = Counter()
    first_text: list[float] = []
    unanswered: Counter[str] = Counter()
    disliked: Counter[str] = Counter()
    shown: dict[str, str] = {}
    helpful = unhelpful = 0
    for answer in (m for m in messages if m.role == "assistant"):
        outcome = _outcome(answer)
        outcomes[OUTCOME_GROUPS.get(outcome, outcome)] += 1
        if isinstance(ms := answer.meta.get("first_text_ms"), int | float):
            first_text.append(float(ms))
        helpful += answer.feedback == "up"
        unhelpful += answer.feedback == "down"
        question = questions.get(answer.request_id)
        if question is None:
            continue
        key = _normalise(question.text)
        shown.setdefault(key, question.text.strip())
        if outcome == "no_match":
            unanswered[key] += 1
        if answer.feedback == "down":
            disliked[key] += 1
    return ChatStats(
        questions_per_day=dict(sorted(per_day.items())),
        outcomes=outcomes,
        helpful=helpful,
        unhelpful=unhelpful,
        first_text_ms=first_text,
        unanswered=[(shown[key], n) for key, n in unanswered.most_common(_TOP)],
        disliked=[(shown[key], n) for key, n in disliked.most_common(_TOP)],
    )


def render_stats(stats: ChatStats, days: int, misses: Misses | None = None, reasons: Counter[str] | None = None) -> str:
    """The report as a person reads it in a terminal; with `misses`, what went wrong as groups of questions, and
    with `reasons` how often each reason for a 👎 was given."""
    lines = [f"Last {days} day{'s' if days != 1 else ''}: {stats.questions} questions"]
    lines += [f"  {day.isoformat()}  {count}" for day, count in stats.questions_per_day.items()]
    total = sum(stats.outcomes.values())
    if total:
        lines.append("Outcomes:")
        lines += [f"  {name:<11} {n:>6}  {n / total:6.1%}" for name, n in stats.outcomes.most_common()]
    lines.append(f"Feedback: {stats.helpful} helpful, {stats.unhelpful} not helpful")
    if stats.first_text_ms:
        p50 = statistics.median(stats.first_text_ms)
        p95 = _percentile(stats.first_text_ms, 0.95)
        lines.append(f"Time to first text: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    if misses is None:
        for title, rows in (
            ("Asked, and nothing was found (make these FAQs or add documents):", stats.unanswered),
            ("Answers marked not helpful:", stats.disliked),
        ):
            if rows:
                lines.append(title)
                lines += [f"  {n:>4} x  {question}" for question, n in rows]
    else:
        lines += _grouped(
            "Asked, and nothing was found",
            misses.unanswered,
            misses.unanswered_total,
            "make these FAQs or add documents",
        )
        lines += _grouped("Answers marked not helpful", misses.disliked, misses.disliked_total)
    if reasons:
        lines.append("Why not helpful: " + ", ".join(f"{_REASON[name]} {n}" for name, n in _named(reasons)))
    return "\n".join(lines)


def _named(reasons: Counter[str]) -> list[tuple[str, int]]:
    return [(name, n) for name, n in reasons.most_common() if name in _REASON]


def _grouped(title: str, groups: Sequence[MissGroup], total: int, advice: str = "") -> list[str]:
    """A kind of miss as groups of questions asking the same thing, largest first, with the reasons given."""
    if not total:
        return []
    shown = sum(group.count for group in groups)
    rest = f"; {total - shown} more in smaller groups" if total > shown else ""
    lines = [f"{title} ({'; '.join(filter(None, (advice, f'{total} in all, by meaning{rest}')))}):"]
    for group in groups:
        why = ", ".join(f"{_REASON.get(name, name)} {n}" for name, n in group.reasons)
        lines.append(f"  {group.count:>4} x  {group.example}" + (f"  [{why}]" if why else ""))
        lines += [f"           \u201c{note}\u201d" for note in group.notes[:_NOTES]]
    return lines


def with_tallies(stats: ChatStats, tallies: Sequence[tuple[str, int, int, int]]) -> ChatStats:
    """The figures with what retention kept of removed conversations: questions per day and feedback counts."""
    per_day = Counter(stats.questions_per_day)
    helpful, unhelpful = stats.helpful, stats.unhelpful
    for day, questions, up, down in tallies:
        per_day[date.fromisoformat(day)] += questions
        helpful += up
        unhelpful += down
    return replace(stats, questions_per_day=dict(sorted(per_day.items())), helpful=helpful, unhelpful=unhelpful)


async def run_stats(services: Services, days: int, top: int = TOP_GROUPS) -> int:
    """Print `ragbot stats` for the last `days` days, counting what retention removed in that time too; what went
    wrong is shown as the `top` largest groups of questions asking the same thing."""
    if days < 1:
        raise UserFacingError("--days must be 1 or more.")
    if top < 1:
        raise UserFacingError("--top must be 1 or more.")
    since = datetime.now(UTC) - timedelta(days=days)
    messages = await services.conversations.messages_since(since)
    retention = RetentionRepo(services.db)
    stats = with_tallies(compute_stats(messages), await retention.tallies(since.date().isoformat()))
    misses = await misses_of(messages, services.embedder.transient, top=top)
    reasons = Counter(m.feedback_reason for m in messages if m.feedback == "down" and m.feedback_reason)
    reasons.update(await retention.tallied_reasons(since.date().isoformat()))
    print(render_stats(stats, days, misses, reasons))
    return 0
