"""Questions that went wrong, paired with their answers and grouped (with a hand embedder of our own protocol)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.knowledge.misses import Miss, find_misses, misses_of
from storage.records import MessageRecord

AT = datetime(2026, 11, 27, tzinfo=UTC)


class TopicEmbedder:
    """Vectors by topic word: questions naming the same topic point the same way."""

    provider, model_id, dimension = "hand", "topics", 3
    topics = ("vpn", "lunch", "printer")

    def prompt(self, kind: Any) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: Any = "passage") -> list[list[float]]:
        return [[float(topic in text.lower()) for topic in self.topics] for text in texts]


def _turn(n: int, question: str, *, outcome: str = "generated", feedback: str = "", reason: str = "") -> list[Any]:
    common: dict[str, Any] = {"conversation_id": "c", "request_id": f"r{n}", "status": "done"}
    common.update(platform_message_id="", created_at=AT)
    asked = MessageRecord(id=f"q{n}", role="user", text=question, meta={}, **common)
    answered = MessageRecord(
        id=f"a{n}",
        role="assistant",
        text="…",
        meta={"outcome": outcome},
        feedback=feedback,
        feedback_reason=reason,
        **common,
    )
    return [asked, answered]


def test_found_nothing_is_no_match_and_disliked_is_a_thumbs_down_with_its_reason() -> None:
    stored = [
        *_turn(1, "  VPN on my phone?  ", outcome="no_match"),
        *_turn(2, "Lunch?", outcome="extractive"),  # quoted from the documents: found something
        *_turn(3, "Lunch today?", feedback="down", reason="outdated"),
        *_turn(4, "Printer?", outcome="no_match", feedback="down"),
        *_turn(5, "Printer?", feedback="up"),
    ]
    unanswered, disliked = find_misses(stored)
    assert unanswered == [Miss("VPN on my phone?"), Miss("Printer?")]
    assert disliked == [Miss("Lunch today?", "outdated"), Miss("Printer?")]


async def test_only_the_newest_are_grouped_when_bounded_and_the_totals_count_them_all() -> None:
    stored = [turn for n in range(5) for turn in _turn(n, f"vpn question {n}", outcome="no_match")]
    stored += _turn(9, "Is the printer on?", outcome="no_match")
    misses = await misses_of(stored, TopicEmbedder(), newest=3)
    assert [(group.count, group.example) for group in misses.unanswered] == [
        (2, "vpn question 3"),
        (1, "Is the printer on?"),
    ]
    assert misses.unanswered_total == 6
    everything = await misses_of(stored, TopicEmbedder())
    assert [group.count for group in everything.unanswered] == [5, 1]
