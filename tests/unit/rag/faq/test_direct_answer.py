"""An FAQ that lacks the question's names or numbers is a source, never the answer: model or not, in the prompt."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rag.config import AnswerConfig
from rag.faq.candidate import VERBATIM, answers_directly, faq_candidate
from rag.pipeline import TurnContext
from rag.prompt import FAQ_SECTION, build_messages, order_passages
from rag.stages.generate import Generate
from rag.tokens import TokenCounter
from rag.types import Candidate
from storage.records import FaqRecord

FACEBOOK = FaqRecord(
    id="f1",
    kb_id="kb",
    question="How do I delete my Facebook account?",
    similar_questions=(),
    negative_questions=(),
    answers=("Open facebook.com/help/delete_account and click Submit.",),
    enabled=True,
    content_hash="",
)


def _faq(*, confidence: float, verbatim: bool) -> Candidate:
    return faq_candidate(FACEBOOK, score=confidence, legs=frozenset({"faq"}), verbatim=verbatim)


@pytest.mark.parametrize(
    ("confidence", "verbatim", "expected"),
    [(0.95, True, True), (0.95, False, False), (0.6, True, False), (0.6, False, False)],
)
def test_only_a_confident_faq_carrying_the_questions_names_answers_directly(
    confidence: float, verbatim: bool, expected: bool
) -> None:
    assert answers_directly(_faq(confidence=confidence, verbatim=verbatim), 0.9) is expected


def test_an_faq_without_the_flag_keeps_todays_decision() -> None:
    """FAQs found by id (history references) carry no flag: their confidence alone decides, as before."""
    flagless = Candidate(id="f1", kind="faq", kb_id="kb", text="Q: Leave?", score=0.95, metadata={"confidence": 0.95})
    assert VERBATIM not in flagless.metadata
    assert answers_directly(flagless, 0.9)


async def _reply(selected: list[Candidate]) -> tuple[str, str]:
    turn = TurnContext(query="How do I delete my LinkedIn account?", kb_ids=("kb",), selected=selected)
    await Generate(None, AnswerConfig()).run(turn)
    assert turn.answer is not None
    return "".join([piece async for piece in turn.answer]), turn.outcome


async def test_without_a_model_a_demoted_faq_is_quoted_as_a_source_not_given_as_the_answer() -> None:
    text, outcome = await _reply([_faq(confidence=0.95, verbatim=False)])
    assert outcome == "extractive"
    assert text != FACEBOOK.answers[0]
    assert text.endswith("[1]")  # a cited quote: the reader sees which FAQ it came from


async def test_the_same_faq_carrying_the_names_is_answered_verbatim() -> None:
    assert await _reply([_faq(confidence=0.95, verbatim=True)]) == (FACEBOOK.answers[0], "faq_direct")


def test_the_prompt_does_not_mark_a_demoted_faq_as_high_confidence(tiktoken_dir: Path | None) -> None:
    demoted = _faq(confidence=0.95, verbatim=False)
    assert order_passages([demoted], faq_priority=True, direct_answer_threshold=0.9) == ([demoted], 0)
    built = build_messages(
        "How do I delete my LinkedIn account?",
        [demoted],
        history=[],
        tokens=TokenCounter(cache_dir=tiktoken_dir),
        budget=2000,
        now=datetime(2026, 1, 1),
    )
    assert built.faq_direct is None
    assert FAQ_SECTION not in built.messages[-1].content
    assert "delete_account" in built.messages[-1].content  # still given to the model as a source
