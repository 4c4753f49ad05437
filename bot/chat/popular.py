"""The questions people ask most in knowledge bases: their FAQs, by how often an FAQ answered a question outright."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from rag.history import META_OUTCOME, META_SOURCES
from storage.records import FaqRecord
from storage.repos.answer_meta import AnswerMetaRepo
from storage.repos.faqs import FaqRepo

# How many of the newest answers are counted: "most asked" means lately, and the read stays one bounded query.
ANSWERS_COUNTED: Final = 2_000
# Every opened DM asks for its prompts; the counts change slowly, so one read serves a while.
_KEPT_FOR: Final = 300.0
_FAQ_DIRECT: Final = "faq_direct"


def direct_faq_hits(metas: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """How often each FAQ (by id) was given as the answer: answers whose outcome is faq_direct, by their first
    source, the FAQ that answered."""
    hits: Counter[str] = Counter()
    for meta in metas:
        sources = meta.get(META_SOURCES)
        if meta.get(META_OUTCOME) != _FAQ_DIRECT or not isinstance(sources, list) or not sources:
            continue
        first = sources[0]
        if isinstance(first, Mapping) and first.get("kind") == "faq" and isinstance(first.get("id"), str):
            hits[first["id"]] += 1
    return hits


def most_asked(faqs: Sequence[FaqRecord], hits: Mapping[str, int]) -> list[str]:
    """The questions of the enabled FAQs, the most answered first; those never answered keep their order after."""
    enabled = [faq for faq in faqs if faq.enabled]
    ranked = sorted(enumerate(enabled), key=lambda item: (-hits.get(item[1].id, 0), item[0]))
    return [faq.question for _, faq in ranked]


class PopularQuestions:
    """The most asked FAQ questions of some knowledge bases, read from stored answers and kept a few minutes."""

    def __init__(
        self,
        faqs: FaqRepo,
        answers: AnswerMetaRepo,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._faqs = faqs
        self._answers = answers
        self._clock = clock
        self._kept: dict[tuple[str, ...], tuple[float, list[str]]] = {}

    async def of(self, kb_ids: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` questions of these knowledge bases' FAQs, the most asked first; [] when they have none."""
        key = tuple(sorted(kb_ids))
        if not key or limit <= 0:
            return []
        kept = self._kept.get(key)
        if kept is not None and self._clock() - kept[0] < _KEPT_FOR:
            return kept[1][:limit]
        faqs = [faq for kb_id in key for faq in await self._faqs.in_kb(kb_id)]
        faqs.sort(key=lambda faq: faq.question)  # one order across the knowledge bases: by question
        questions = most_asked(faqs, direct_faq_hits(await self._answers.newest(ANSWERS_COUNTED))) if faqs else []
        if len(self._kept) > 1_000:
            self._kept.clear()
        self._kept[key] = (self._clock(), questions)
        return questions[:limit]
