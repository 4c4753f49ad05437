"""`ragbot stats`: the figures an admin reads from stored turns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.cli.stats import compute_stats, render_stats
from storage.records import MessageRecord

DAY1 = datetime(2026, 11, 20, 9, tzinfo=UTC)
DAY2 = datetime(2026, 11, 21, 9, tzinfo=UTC)


def _turn(n: int, question: str, outcome: str, when: datetime, **answer: Any) -> list[MessageRecord]:
    meta = {"outcome": outcome, **answer.pop("meta", {})}
    return [
        MessageRecord(f"q{n}", "c", f"r{n}", "user", question, "done", "", {}, when),
        MessageRecord(f"a{n}", "c", f"r{n}", "assistant", "…", answer.pop("status", "done"), "", meta, when, **answer),
    ]


def test_stats_count_days_outcomes_feedback_speed_and_list_what_found_nothing() -> None:
    messages = [
        *_turn(1, "How do I reset my password?", "no_match", DAY1, meta={"first_text_ms": 100}),
        *_turn(2, "how do I reset my password", "no_match", DAY1, meta={"first_text_ms": 300}),
        *_turn(3, "Where is the VPN?", "generated", DAY2, feedback="down", meta={"first_text_ms": 200}),
        *_turn(4, "Express cost?", "faq_direct", DAY2, feedback="up"),
        *_turn(5, "", "refused", DAY2),
        *_turn(6, "Broken?", "failed", DAY2, status="failed"),
        *_turn(7, "Long one?", "stopped", DAY2),
    ]
    stats = compute_stats(messages)
    assert stats.questions == 7
    assert [count for count in stats.questions_per_day.values()] == [2, 5]
    assert stats.outcomes == {"no match": 2, "answered": 1, "FAQ direct": 1, "refused": 1, "failed": 1, "stopped": 1}
    assert (stats.helpful, stats.unhelpful) == (1, 1)
    assert stats.unanswered == [("How do I reset my password?", 2)]
    assert stats.disliked == [("Where is the VPN?", 1)]
    report = render_stats(stats, 7)
    assert "Time to first text: p50 200 ms, p95 300 ms" in report
    assert "   2 x  How do I reset my password?" in report


def test_stats_of_nothing_say_so() -> None:
    assert render_stats(compute_stats([]), 1).splitlines() == [
        "Last 1 day: 0 questions",
        "Feedback: 0 helpful, 0 not helpful",
    ]
