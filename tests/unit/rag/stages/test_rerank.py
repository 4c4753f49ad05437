"""The RERANK stage on hand-built turns: thresholds and their decay, history leniency, direct hits, FAQ boost, MMR."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pytest

from rag.errors import RerankerError
from rag.fusion import lenient_to_history, select_above
from rag.lexical import LexicalAnalyzer
from rag.pipeline import Pipeline, TurnContext
from rag.relevance import RerankConfig, rerank_order
from rag.stages.rerank import Rerank
from rag.types import Candidate, KnownVectors


class TableReranker:
    """Our Reranker protocol: scores from a table by text (0.0 for unlisted), recording what it was asked."""

    model_id = "table"

    def __init__(self, scores: Mapping[str, float], *, fail: RerankerError | None = None, extra: int = 0) -> None:
        self.scores = scores
        self.fail = fail
        self.extra = extra
        self.calls: list[tuple[str, list[str]]] = []

    async def rerank(self, query: str, texts: Sequence[str], vectors: KnownVectors | None = None) -> list[float]:
        self.calls.append((query, list(texts)))
        if self.fail is not None:
            raise self.fail
        return [self.scores.get(text, 0.0) for text in texts] + [0.0] * self.extra


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    """One jieba analyzer for the module (its dictionary takes a second to build)."""
    return LexicalAnalyzer()


def cand(text: str, *legs: str, kind: str = "chunk", base: float = 0.5, cid: str | None = None) -> Candidate:
    return Candidate(
        id=cid or text,
        kind="faq" if kind == "faq" else "chunk",
        kb_id="kb",
        text=text,
        score=base,
        base_score=base,
        legs=frozenset(legs or {"vector"}),
    )


async def rerank(
    lexical: LexicalAnalyzer,
    candidates: list[Candidate],
    scores: Mapping[str, float],
    **config: object,
) -> tuple[TurnContext, str, TableReranker]:
    reranker = TableReranker(scores)
    turn = TurnContext(query="q", kb_ids=("kb",), candidates=candidates)
    note = await Rerank(reranker, lexical, RerankConfig(**config)).run(turn)  # type: ignore[arg-type]
    return turn, note, reranker


def ids(candidates: Sequence[Candidate]) -> list[str]:
    return [c.id for c in candidates]


async def test_candidates_at_or_above_the_threshold_are_kept_best_first(lexical: LexicalAnalyzer) -> None:
    candidates = [cand("apples grow on trees"), cand("bananas are yellow"), cand("cherries are red")]
    scores = {"apples grow on trees": 0.6, "bananas are yellow": 0.2, "cherries are red": 0.9}
    turn, note, _ = await rerank(lexical, candidates, scores)
    assert ids(turn.reranked) == ["cherries are red", "apples grow on trees"]
    assert [c.model_score for c in turn.reranked] == [0.9, 0.6]
    assert note == "model=table threshold=0.5 kept=2 out=2"


@pytest.mark.parametrize(
    ("best", "kept", "threshold"),
    [(0.5, 1, "0.5"), (0.4, 1, "0.35"), (0.32, 1, "0.3"), (0.29, 0, "0.3")],
    ids=["passes-at-0.5", "decays-to-0.35", "decays-to-the-0.3-floor", "nothing-at-the-floor"],
)
async def test_threshold_decays_by_0_7_down_to_0_3_while_nothing_passes(
    lexical: LexicalAnalyzer, best: float, kept: int, threshold: str
) -> None:
    candidates = [cand("alpha text"), cand("beta text")]
    turn, note, _ = await rerank(lexical, candidates, {"alpha text": best, "beta text": 0.1})
    assert len(turn.reranked) == kept
    assert f"threshold={threshold} kept={kept}" in note


@pytest.mark.parametrize(
    ("threshold", "score", "kept"),
    [(0.7, 0.6, True), (0.7, 0.59, False), (0.55, 0.5, True), (0.5, 0.45, False)],
    ids=["0.1-below", "more-than-0.1-below", "bounded-at-0.5", "no-lower-than-0.5"],
)
async def test_history_matches_are_judged_0_1_more_leniently_but_not_below_0_5(
    lexical: LexicalAnalyzer, threshold: float, score: float, kept: bool
) -> None:
    anchor = cand("anchor passage passes", "vector")
    history = cand("history passage", "history")
    fresh = cand("fresh passage", "vector")
    scores = {"anchor passage passes": 0.95, "history passage": score, "fresh passage": score}
    turn, _, _ = await rerank(lexical, [anchor, history, fresh], scores, threshold=threshold)
    assert ("history passage" in ids(turn.reranked)) is kept
    assert "fresh passage" not in ids(turn.reranked)


def test_history_leniency_applies_again_at_each_relaxed_threshold() -> None:
    # 0.8 fails everyone; 0.56: the history match passes at max(0.46, 0.5) = 0.5, the fresh one does not.
    candidates = [cand("h", "history", base=0.52), cand("f", "vector", base=0.52)]
    kept, used = select_above(candidates, threshold=0.8, threshold_of=lenient_to_history)
    assert [c.id for c in kept] == ["h"]
    assert used == pytest.approx(0.56)


async def test_direct_hits_count_as_model_score_1_and_are_not_sent_to_the_reranker(lexical: LexicalAnalyzer) -> None:
    direct = cand("the whole requested document", "direct")
    other = cand("some other passage")
    turn, _, reranker = await rerank(lexical, [other, direct], {"some other passage": 0.6})
    assert reranker.calls == [("q", ["some other passage"])]
    assert ids(turn.reranked) == ["the whole requested document", "some other passage"]
    assert turn.reranked[0].model_score == 1.0


async def test_only_direct_hits_do_not_call_the_reranker(lexical: LexicalAnalyzer) -> None:
    turn, _, reranker = await rerank(lexical, [cand("requested", "direct")], {})
    assert reranker.calls == []
    assert ids(turn.reranked) == ["requested"]


@pytest.mark.parametrize(("boost", "first"), [(1.2, "faq"), (1.0, "chunk")])
async def test_faq_boost_lifts_an_faq_over_an_equally_scored_passage(
    lexical: LexicalAnalyzer, boost: float, first: str
) -> None:
    # The chunk comes first, so without the boost the +-5 % position prior puts it ahead.
    chunk = cand("opening hours are nine to five", cid="chunk")
    faq = cand("Q: when are you open? Answer: weekdays", "faq", kind="faq", cid="faq", base=0.9)
    scores = {chunk.text: 0.8, faq.text: 0.8}
    turn, _, _ = await rerank(lexical, [chunk, faq], scores, faq_boost=boost)
    assert ids(turn.reranked)[0] == first


@pytest.mark.parametrize(("mmr_lambda", "second"), [(0.7, "different"), (1.0, "duplicate")])
async def test_mmr_drops_a_near_duplicate_in_favour_of_a_different_passage(
    lexical: LexicalAnalyzer, mmr_lambda: float, second: str
) -> None:
    texts = {
        "original": "refunds are paid within fourteen days of the return arriving",
        "duplicate": "refunds are paid within fourteen days of the return arriving at the warehouse",
        "different": "store credit can be used for any later order",
        "weak": "our shop sells garden furniture",
    }
    scores = {texts["original"]: 0.95, texts["duplicate"]: 0.93, texts["different"]: 0.88, texts["weak"]: 0.5}
    candidates = [cand(text, cid=name) for name, text in texts.items()]
    turn, note, _ = await rerank(lexical, candidates, scores, top_k=2, mmr_lambda=mmr_lambda)
    assert ids(turn.reranked) == ["original", second]
    assert note.endswith("kept=4 out=2")


async def test_without_a_reranker_the_stage_is_skipped(lexical: LexicalAnalyzer) -> None:
    turn = TurnContext(query="q", kb_ids=("kb",), candidates=[cand("a")])
    note = await Rerank(None, lexical).run(turn)
    assert note == "skipped=no_reranker"
    assert turn.reranked == []


async def test_no_candidates_means_no_reranker_call(lexical: LexicalAnalyzer) -> None:
    _, note, reranker = await rerank(lexical, [], {})
    assert note == "skipped=no_candidates"
    assert reranker.calls == []


@pytest.mark.parametrize(
    "reranker",
    [TableReranker({}, fail=RerankerError("reranker answered 503", status=503)), TableReranker({}, extra=1)],
    ids=["raises", "wrong-number-of-scores"],
)
async def test_a_failing_reranker_is_skipped_with_a_warning(
    lexical: LexicalAnalyzer, caplog: pytest.LogCaptureFixture, reranker: TableReranker
) -> None:
    turn = TurnContext(query="q", kb_ids=("kb",), candidates=[cand("a"), cand("b")])
    with caplog.at_level(logging.WARNING, logger="rag.relevance"):
        note = await Rerank(reranker, lexical).run(turn)
    assert note == "skipped=reranker_error"
    assert turn.reranked == []
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "model=table" in caplog.records[0].getMessage()


async def test_the_rewritten_question_is_what_gets_reranked(lexical: LexicalAnalyzer) -> None:
    reranker = TableReranker({"a": 0.9})
    turn = TurnContext(query="and it?", rewritten="what does the refund cost?", kb_ids=("kb",), candidates=[cand("a")])
    await Rerank(reranker, lexical).run(turn)
    assert reranker.calls == [("what does the refund cost?", ["a"])]


async def test_rerank_order_scores_every_candidate_without_cutting(lexical: LexicalAnalyzer) -> None:
    candidates = [cand("weak one"), cand("strong one"), cand("strong one too", cid="dup")]
    scores = {"weak one": 0.05, "strong one": 0.9, "strong one too": 0.85}
    ordered = await rerank_order(TableReranker(scores), "q", candidates, RerankConfig(top_k=1))
    assert ids(ordered) == ["strong one", "dup", "weak one"]
    assert [c.model_score for c in ordered] == [0.9, 0.85, 0.05]


async def test_the_stage_runs_inside_a_pipeline_and_reports_its_note(lexical: LexicalAnalyzer) -> None:
    turn = TurnContext(query="q", kb_ids=("kb",), candidates=[cand("a"), cand("b")])
    await Pipeline("test", [Rerank(TableReranker({"a": 0.8}), lexical)]).run(turn)
    (report,) = turn.reports
    assert (report.name, report.items_in, report.items_out) == ("RERANK", 2, 1)
    assert report.note == "model=table threshold=0.5 kept=1 out=1"


@pytest.mark.parametrize(
    "config",
    [{"threshold": 1.5}, {"threshold": -0.1}, {"top_k": 0}, {"mmr_lambda": 1.1}, {"faq_boost": 0.0}],
    ids=["threshold-high", "threshold-negative", "top-k-zero", "lambda-high", "boost-zero"],
)
def test_rerank_config_rejects_values_out_of_range(config: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="rerank"):
        RerankConfig(**config)  # type: ignore[arg-type]


@pytest.mark.parametrize(("query", "asked"), [("how long do refunds take", True), ("退款需要多久", False)])
async def test_a_question_in_a_language_the_reranker_does_not_serve_keeps_its_search_order(
    lexical: LexicalAnalyzer, query: str, asked: bool
) -> None:
    reranker = TableReranker({"refunds take five days": 0.9})
    turn = TurnContext(query=query, kb_ids=("kb",), candidates=[cand("refunds take five days")])
    note = await Rerank(reranker, lexical, RerankConfig(languages=frozenset({"en"}))).run(turn)
    assert bool(reranker.calls) is asked
    assert turn.judged is asked
    if not asked:
        assert note == "skipped=language_zh"
        assert turn.ranked == turn.candidates


async def test_a_judge_that_does_not_reorder_keeps_the_fused_order(lexical: LexicalAnalyzer) -> None:
    candidates = [
        cand("apples grow on trees", base=0.9),
        cand("bananas are yellow", base=0.5),
        cand("cherries are red", base=0.1),
    ]
    scores = {"apples grow on trees": 0.6, "bananas are yellow": 0.2, "cherries are red": 0.9}
    turn, _, _ = await rerank(lexical, candidates, scores, reorder=False)
    assert ids(turn.reranked) == ["apples grow on trees", "cherries are red"]
    assert [c.model_score for c in turn.reranked] == [0.6, 0.9]


async def test_nothing_below_the_floor_is_kept_and_the_turn_is_judged(lexical: LexicalAnalyzer) -> None:
    candidates = [cand("apples grow on trees"), cand("bananas are yellow")]
    scores = {"apples grow on trees": 0.44, "bananas are yellow": 0.2}
    turn, note, _ = await rerank(lexical, candidates, scores, floor=0.45)
    assert (turn.judged, turn.reranked) == (True, [])
    assert "threshold=0.45 kept=0" in note
    turn, _, _ = await rerank(lexical, candidates, scores, floor=0.3)
    assert ids(turn.reranked) == ["apples grow on trees"]


async def test_a_follow_up_is_judged_with_the_question_it_follows(lexical: LexicalAnalyzer) -> None:
    reranker = TableReranker({})
    turn = TurnContext(
        query="Which of them is more important?",
        kb_ids=("kb",),
        history=[("Should I pay off my mortgage or save for retirement?", "Both matter.")],
        candidates=[cand("saving for retirement early compounds")],
    )
    await Rerank(reranker, lexical, RerankConfig()).run(turn)
    assert [query for query, _ in reranker.calls] == [
        "Should I pay off my mortgage or save for retirement? Which of them is more important?"
    ]
    standalone = TurnContext(
        query="Who is the CEO of the company?",
        kb_ids=("kb",),
        history=[("Should I pay off my mortgage?", "Yes.")],
        candidates=[cand("saving for retirement early compounds")],
    )
    await Rerank(reranker, lexical, RerankConfig()).run(standalone)
    assert reranker.calls[-1][0] == "Who is the CEO of the company?"
