"""An FAQ as a candidate passage: question and answers in the Q/Answer form the prompt and fallback use."""

from __future__ import annotations

from rag.types import Candidate
from storage.records import FaqRecord

CONFIDENCE = "confidence"


def faq_text(faq: FaqRecord) -> str:
    """`Q: question` then `Answer: - a1` and `- a2`, as WeKnora fills FAQ hits."""
    return f"Q: {faq.question}\nAnswer: - " + "\n- ".join(faq.answers)


def faq_candidate(faq: FaqRecord, *, score: float, legs: frozenset[str], confidence: float | None = None) -> Candidate:
    """The FAQ as a candidate carrying its question and answers for the prompt and the fallback.

    `confidence` (how surely it is the answer) defaults to `score`.
    """
    return Candidate(
        id=faq.id,
        kind="faq",
        kb_id=faq.kb_id,
        text=faq_text(faq),
        score=score,
        base_score=score,
        legs=legs,
        metadata={
            "question": faq.question,
            "answers": list(faq.answers),
            "faq_id": faq.id,
            "title": faq.question,
            CONFIDENCE: score if confidence is None else confidence,
        },
    )


def faq_confidence(candidate: Candidate) -> float:
    """How surely an FAQ candidate answers the question (its match confidence), 0.0 for anything else.

    Kept apart from `score`, which rerank replaces with a composite that can pass 1.0: the direct-answer
    threshold must be compared with the match itself.
    """
    if candidate.kind != "faq":
        return 0.0
    value = candidate.metadata.get(CONFIDENCE, candidate.score)
    return float(value) if isinstance(value, int | float) else 0.0
