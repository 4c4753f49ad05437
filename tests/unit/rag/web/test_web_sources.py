"""Web candidates in the prompt (marked as web, with their address) and in the composite score (weight 0.95)."""

from __future__ import annotations

from rag.fusion import rescore
from rag.prompt import WEB_NOTE, render_contexts
from rag.relevance import SOURCE_WEIGHTS
from rag.types import Candidate
from rag.web.leg import WEB_KB_ID, WEB_LEG


def _web(url: str = "https://news.example.com/a?x=1&y=2") -> Candidate:
    return Candidate(
        id=f"web:{url}",
        kind="chunk",
        kb_id=WEB_KB_ID,
        text="Prices rose 3% in May.",
        score=0.03,
        base_score=0.03,
        legs=frozenset({WEB_LEG}),
        metadata={"url": url, "title": "May prices", "web": True},
    )


def _chunk() -> Candidate:
    return Candidate(
        id="c1",
        kind="chunk",
        kb_id="kb",
        text="Our price list.",
        score=0.03,
        base_score=0.03,
        legs=frozenset({"vector"}),
        metadata={"title": "prices.md"},
    )


def test_the_model_is_told_which_sources_come_from_the_web_and_their_addresses() -> None:
    block = render_contexts([_chunk(), _web()], 0)
    assert block.startswith(WEB_NOTE)
    assert '<source id="2" type="web" title="May prices" url="https://news.example.com/a?x=1&amp;y=2">' in block
    assert '<source id="1" title="prices.md">' in block


def test_without_web_sources_the_prompt_says_nothing_of_the_web() -> None:
    assert WEB_NOTE not in render_contexts([_chunk()], 0)


def test_a_web_passage_weighs_095_against_a_documents_10_in_the_composite_score() -> None:
    assert SOURCE_WEIGHTS[WEB_LEG] == 0.95
    # Same model and base scores: the document wins by the source share (0.1 x 0.05) ...
    ranked = rescore([_chunk(), _web()], [0.8, 0.8], source_weights=SOURCE_WEIGHTS, faq_boost=1.0)
    assert ranked[0].id == "c1"
    # ... which is all that lowers the web passage.
    alone = rescore([_web(), _chunk()], [0.8, 0.8], source_weights={}, faq_boost=1.0)
    with_weight = rescore([_web(), _chunk()], [0.8, 0.8], source_weights=SOURCE_WEIGHTS, faq_boost=1.0)
    web_alone = next(c for c in alone if c.kb_id == WEB_KB_ID)
    web_weighted = next(c for c in with_weight if c.kb_id == WEB_KB_ID)
    assert web_weighted.score < web_alone.score
