"""The most asked FAQs: counted from the answers an FAQ gave outright, offered as Slack's prompts and the web's
suggestions."""

from __future__ import annotations

from typing import Any

from bot.chat.popular import direct_faq_hits, most_asked
from storage.records import FaqRecord


def _faq(faq_id: str, question: str, *, enabled: bool = True) -> FaqRecord:
    return FaqRecord(faq_id, "kb1", question, (), (), ("answer",), enabled, "hash")


def test_faq_hits_count_only_answers_an_faq_gave_outright() -> None:
    metas: list[dict[str, Any]] = [
        {"outcome": "faq_direct", "sources": [{"id": "f1", "kind": "faq"}]},
        {"outcome": "faq_direct", "sources": [{"id": "f1", "kind": "faq"}, {"id": "c9", "kind": "chunk"}]},
        {"outcome": "faq_direct", "sources": [{"id": "f2", "kind": "faq"}]},
        {"outcome": "generated", "sources": [{"id": "f3", "kind": "faq"}]},
        {"outcome": "faq_direct", "sources": []},
        {"outcome": "faq_direct", "sources": "broken"},
        {},
    ]
    assert direct_faq_hits(metas) == {"f1": 2, "f2": 1}


def test_the_most_asked_come_first_then_the_rest_in_their_order_and_disabled_ones_never() -> None:
    faqs = [_faq("f1", "A?"), _faq("f2", "B?"), _faq("f3", "C?", enabled=False), _faq("f4", "D?")]
    assert most_asked(faqs, {"f4": 3, "f2": 1, "f3": 9}) == ["D?", "B?", "A?"]
    assert most_asked(faqs, {}) == ["A?", "B?", "D?"]  # none asked yet: the first FAQs
    assert most_asked([], {"f1": 1}) == []
