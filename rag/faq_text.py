"""An FAQ as a candidate passage: question and answers in the Q/Answer form the prompt and fallback use."""

from __future__ import annotations

from rag.types import Candidate
from storage.records import FaqRecord


def faq_text(faq: FaqRecord) -> str:
    """`Q: question` then `Answer: - a1` and `- a2`, as WeKnora fills FAQ hits."""
    return f"Q: {faq.question}\nAnswer: - " + "\n- ".join(faq.answers)


def faq_candidate(faq: FaqRecord, *, score: float, legs: frozenset[str]) -> Candidate:
    """The FAQ as a candidate carrying its question and answers for the prompt and the fallback."""
    return Candidate(
        id=faq.id,
        kind="faq",
        kb_id=faq.kb_id,
        text=faq_text(faq),
        score=score,
        base_score=score,
        legs=legs,
        metadata={"question": faq.question, "answers": list(faq.answers), "faq_id": faq.id, "title": faq.question},
    )
