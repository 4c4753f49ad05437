"""An FAQ as a candidate passage: question and answers in the Q/Answer form the prompt and fallback use."""

from __future__ import annotations

from rag.types import Candidate
from storage.records import FaqRecord

CONFIDENCE = "confidence"
VERBATIM = "verbatim"


def faq_text(faq: FaqRecord) -> str:
    """`Q: question` then `Answer: - a1` and `- a2`, as WeKnora fills FAQ hits."""
    return f"Q: {faq.question}\nAnswer: - " + "\n- ".join(faq.answers)


def faq_candidate(
    faq: FaqRecord, *, score: float, legs: frozenset[str], confidence: float | None = None, verbatim: bool = True
) -> Candidate:
    """The FAQ as a candidate carrying its question and answers for the prompt and the fallback.

    `confidence` (how surely it is the answer) defaults to `score`; `verbatim` is False when the FAQ lacks a name
    or number of the question, so that it may be a source but never the answer itself.
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
            VERBATIM: verbatim,
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


def answers_directly(candidate: Candidate, threshold: float) -> bool:
    """Whether this candidate, ranked first, is the answer itself (given verbatim, model or not): an FAQ matched
    with at least `threshold` confidence that carries the question's names and numbers.

    "How do I delete my LinkedIn account?" must not get the Facebook FAQ's answer, however close the wording.
    """
    verbatim = candidate.metadata.get(VERBATIM) is not False
    return candidate.kind == "faq" and verbatim and faq_confidence(candidate) >= threshold
