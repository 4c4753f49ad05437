"""rag.fusion: hand-computed examples and properties of RRF, dedup, MMR, thresholds and composite scores."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.fusion import (
    composite_score,
    dedupe,
    fuse_candidates,
    history_threshold,
    jaccard,
    mmr,
    position_prior,
    rescore,
    rrf,
    select_above,
)
from rag.types import Candidate


def cand(
    doc_id: str,
    score: float = 0.0,
    *,
    text: str | None = None,
    legs: Iterable[str] = (),
    kind: Literal["chunk", "faq"] = "chunk",
    base: float = 0.0,
    model: float | None = None,
    kb_id: str = "kb",
) -> Candidate:
    return Candidate(
        id=doc_id,
        kind=kind,
        kb_id=kb_id,
        text=f"text of {doc_id}" if text is None else text,
        score=score,
        legs=frozenset(legs),
        base_score=base,
        model_score=model,
    )


def words(text: str) -> set[str]:
    return set(text.split())


# --- rrf -------------------------------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks_of_two_legs() -> None:
    fused = rrf({"vector": ["a", "b", "c"], "bm25": ["b", "d"]})

    assert [doc_id for doc_id, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)  # rank 2 in vector, rank 1 in bm25
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63)


def test_rrf_multiplies_each_leg_by_its_weight() -> None:
    fused = rrf({"vector": ["a", "b", "c"], "bm25": ["b", "d"]}, weights={"vector": 0.5, "bm25": 2.0})

    assert [doc_id for doc_id, _ in fused] == ["b", "d", "a", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(0.5 / 62 + 2.0 / 61)
    assert scores["d"] == pytest.approx(2.0 / 62)
    assert scores["a"] == pytest.approx(0.5 / 61)
    assert scores["c"] == pytest.approx(0.5 / 63)


def test_rrf_weight_zero_drops_the_leg_and_its_only_hits() -> None:
    fused = rrf({"vector": ["a", "b", "c"], "bm25": ["b", "d"]}, weights={"bm25": 0.0})

    assert [doc_id for doc_id, _ in fused] == ["a", "b", "c"]
    assert [score for _, score in fused] == pytest.approx([1 / 61, 1 / 62, 1 / 63])


def test_rrf_leg_missing_from_weights_weighs_one() -> None:
    legs = {"vector": ["a", "b"], "bm25": ["b", "a"]}

    assert rrf(legs, weights={"vector": 1.0}) == rrf(legs)


def test_rrf_uses_the_given_k() -> None:
    assert rrf({"vector": ["a", "b"]}, k=0) == [("a", 1.0), ("b", 0.5)]


def test_rrf_counts_a_repeated_id_at_its_best_rank_only() -> None:
    assert dict(rrf({"vector": ["a", "b", "a"]})) == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62)}


def test_rrf_breaks_ties_by_best_single_leg_rank_then_id() -> None:
    # k=0: a scores 1/2 + 1/2 = 1, and b, y, z score 1/1 = 1 each.
    fused = rrf({"one": ["z", "a"], "two": ["y", "a"], "three": ["b"]}, k=0)

    assert fused == [("b", 1.0), ("y", 1.0), ("z", 1.0), ("a", 1.0)]


def test_rrf_rejects_a_negative_k() -> None:
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf({"vector": ["a"]}, k=-1)


def test_rrf_rejects_a_negative_weight() -> None:
    with pytest.raises(ValueError, match="weight of leg 'vector'"):
        rrf({"vector": ["a"]}, weights={"vector": -0.5})


def test_rrf_of_no_legs_is_empty() -> None:
    assert rrf({}) == []
    assert rrf({"vector": []}) == []


ids = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10)
legs_strategy = st.dictionaries(st.sampled_from(["vector", "bm25", "faq"]), ids, max_size=3)
weights_strategy = st.dictionaries(
    st.sampled_from(["vector", "bm25", "faq"]), st.floats(min_value=0.0, max_value=5.0), max_size=3
)


@given(leg=ids, k=st.integers(min_value=0, max_value=100))
def test_rrf_of_one_leg_keeps_its_order_with_strictly_falling_scores(leg: list[str], k: int) -> None:
    fused = rrf({"only": leg}, k=k)

    assert [doc_id for doc_id, _ in fused] == leg
    assert all(earlier > later for (_, earlier), (_, later) in pairwise(fused))


@given(legs=legs_strategy, weights=weights_strategy, data=st.data())
def test_rrf_score_never_falls_when_an_id_moves_up_a_leg(
    legs: dict[str, list[str]], weights: dict[str, float], data: st.DataObject
) -> None:
    movable = [(name, i) for name, leg in legs.items() for i in range(1, len(leg))]
    if not movable:
        return
    name, i = data.draw(st.sampled_from(movable))
    moved = legs[name][i]
    promoted = {**legs, name: [*legs[name][: i - 1], moved, legs[name][i - 1], *legs[name][i + 1 :]]}

    before = dict(rrf(legs, weights=weights))
    after = dict(rrf(promoted, weights=weights))

    assert after.get(moved, 0.0) >= before.get(moved, 0.0)


@given(legs=legs_strategy, weights=weights_strategy)
def test_rrf_result_does_not_depend_on_leg_order(legs: dict[str, list[str]], weights: dict[str, float]) -> None:
    reversed_legs = dict(reversed(list(legs.items())))

    assert [doc_id for doc_id, _ in rrf(reversed_legs, weights=weights)] == [
        doc_id for doc_id, _ in rrf(legs, weights=weights)
    ]


@given(legs=legs_strategy, weights=weights_strategy)
def test_rrf_scores_are_sorted_descending(legs: dict[str, list[str]], weights: dict[str, float]) -> None:
    scores = [score for _, score in rrf(legs, weights=weights)]

    assert scores == sorted(scores, reverse=True)


# --- fuse_candidates -------------------------------------------------------------------------------------------


def test_fuse_candidates_scores_by_rrf_and_unions_the_legs_that_found_each_id() -> None:
    a_vector = cand("a", 0.9, text="from vector", legs={"vector"})
    b_vector = cand("b", 0.8, text="b via vector")
    b_bm25 = cand("b", 12.0, text="b via bm25")
    d_bm25 = cand("d", 7.0)

    fused = fuse_candidates({"vector": [a_vector, b_vector], "bm25": [b_bm25, d_bm25]})

    assert [c.id for c in fused] == ["b", "a", "d"]
    b, a, d = fused
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert b.base_score == b.score
    assert b.legs == {"vector", "bm25"}
    assert b.text == "b via vector"  # the first occurrence, walking the legs in order
    assert a.legs == {"vector"}
    assert a.text == "from vector"
    assert d.legs == {"bm25"}
    assert d.score == pytest.approx(1 / 62)


def test_fuse_candidates_ignores_a_zero_weight_leg_entirely() -> None:
    fused = fuse_candidates(
        {"vector": [cand("a")], "bm25": [cand("a", text="bm25 copy"), cand("z")]}, weights={"bm25": 0.0}
    )

    assert [(c.id, c.legs, c.text) for c in fused] == [("a", frozenset({"vector"}), "text of a")]


def test_fuse_candidates_keeps_legs_the_inputs_already_carry() -> None:
    fused = fuse_candidates({"history": [cand("a", legs={"direct"})]})

    assert fused[0].legs == {"history", "direct"}


# --- dedupe ----------------------------------------------------------------------------------------------------


def test_dedupe_keeps_the_first_of_each_id_and_content_and_merges_their_legs() -> None:
    first = cand("1", 0.9, text="Refund  policy\nfor orders", legs={"vector"})
    same_id = cand("1", 0.5, text="anything", legs={"bm25"})
    same_content = cand("2", 0.4, text="refund POLICY for   orders", legs={"faq"})
    other = cand("3", 0.3, text="shipping times", legs={"bm25"})
    by_merged_id = cand("2", 0.1, text="late copy", legs={"history"})

    kept = dedupe([first, same_id, same_content, other, by_merged_id])

    assert [c.id for c in kept] == ["1", "3"]
    assert kept[0].legs == {"vector", "bm25", "faq", "history"}
    assert kept[0].score == 0.9
    assert kept[0].text == first.text
    assert kept[1] == other


def test_dedupe_never_merges_candidates_whose_text_is_empty() -> None:
    kept = dedupe([cand("1", text=""), cand("2", text="  \n")])

    assert [c.id for c in kept] == ["1", "2"]


def test_dedupe_of_distinct_candidates_is_the_identity() -> None:
    candidates = [cand("1"), cand("2"), cand("3")]

    assert dedupe(candidates) == candidates


# --- jaccard ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"a", "b"}, {"b", "c"}, 1 / 3),
        ({"a"}, {"a"}, 1.0),
        ({"a"}, {"b"}, 0.0),
        (set(), {"a"}, 0.0),
        (set(), set(), 0.0),
    ],
)
def test_jaccard_is_intersection_over_union(a: set[str], b: set[str], expected: float) -> None:
    assert jaccard(a, b) == pytest.approx(expected)


# --- mmr -------------------------------------------------------------------------------------------------------

REFUND = cand("refund", 1.0, text="refund policy for orders")
REFUND_AGAIN = cand("refund-again", 0.9, text="orders for refund policy")  # same token set: Jaccard 1
SHIPPING = cand("shipping", 0.5, text="shipping times to europe")
OFFICE = cand("office", 0.0, text="office opening hours")


def test_mmr_prefers_a_less_relevant_different_candidate_over_a_near_duplicate() -> None:
    # Relevance normalised over the input: refund 1, refund-again 0.9, shipping 0.5, office 0.
    # Second pick: refund-again 0.7*0.9 - 0.3*1 = 0.33 < shipping 0.7*0.5 - 0.3*0 = 0.35.
    # Third pick: refund-again 0.33 > office 0.7*0 - 0.3*0 = 0.
    picked = mmr([REFUND, REFUND_AGAIN, SHIPPING, OFFICE], tokens=words, k=3)

    assert [c.id for c in picked] == ["refund", "shipping", "refund-again"]


def test_mmr_with_lambda_one_is_relevance_order() -> None:
    picked = mmr([SHIPPING, OFFICE, REFUND_AGAIN, REFUND], tokens=words, k=4, lambda_=1.0)

    assert [c.id for c in picked] == ["refund", "refund-again", "shipping", "office"]


def test_mmr_returns_at_most_k_and_nothing_for_k_zero() -> None:
    candidates = [REFUND, REFUND_AGAIN, SHIPPING]

    assert len(mmr(candidates, tokens=words, k=2)) == 2
    assert len(mmr(candidates, tokens=words, k=10)) == 3
    assert mmr(candidates, tokens=words, k=0) == []
    assert mmr([], tokens=words, k=3) == []


def test_mmr_returns_the_candidates_unchanged() -> None:
    assert mmr([REFUND], tokens=words, k=1) == [REFUND]


@pytest.mark.parametrize("lambda_", [-0.1, 1.1])
def test_mmr_rejects_lambda_outside_zero_to_one(lambda_: float) -> None:
    with pytest.raises(ValueError, match="lambda_"):
        mmr([REFUND], tokens=words, k=1, lambda_=lambda_)


scored_texts = st.lists(
    st.tuples(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
        st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=4),
    ),
    max_size=12,
)


@given(items=scored_texts)
def test_mmr_with_lambda_one_equals_a_stable_sort_by_score(items: list[tuple[float, list[str]]]) -> None:
    candidates = [cand(str(i), score, text=" ".join(tokens)) for i, (score, tokens) in enumerate(items)]

    picked = mmr(candidates, tokens=words, k=len(candidates), lambda_=1.0)

    assert picked == sorted(candidates, key=lambda c: -c.score)


@given(items=scored_texts, k=st.integers(min_value=0, max_value=15), lambda_=st.floats(min_value=0.0, max_value=1.0))
def test_mmr_selects_distinct_input_candidates(items: list[tuple[float, list[str]]], k: int, lambda_: float) -> None:
    candidates = [cand(str(i), score, text=" ".join(tokens)) for i, (score, tokens) in enumerate(items)]

    picked = mmr(candidates, tokens=words, k=k, lambda_=lambda_)

    assert len(picked) == min(k, len(candidates))
    assert len({c.id for c in picked}) == len(picked)
    assert all(c in candidates for c in picked)


# --- select_above / history_threshold --------------------------------------------------------------------------


def test_select_above_keeps_what_passes_the_threshold_in_input_order() -> None:
    low, high, exact = cand("low", 0.2), cand("high", 0.9), cand("exact", 0.5)

    assert select_above([low, high, exact], threshold=0.5) == ([high, exact], 0.5)


def test_select_above_degrades_by_decay_until_something_passes() -> None:
    # 0.5 keeps nothing; 0.5 * 0.7 = 0.35 keeps the 0.36.
    kept, used = select_above([cand("a", 0.36), cand("b", 0.1)], threshold=0.5)

    assert [c.id for c in kept] == ["a"]
    assert used == pytest.approx(0.35)


def test_select_above_degrades_to_the_floor_rather_than_below_it() -> None:
    # 0.5 -> 0.35 -> max(0.3, 0.245) = 0.3, which keeps the 0.32.
    kept, used = select_above([cand("a", 0.32), cand("b", 0.1)], threshold=0.5)

    assert [c.id for c in kept] == ["a"]
    assert used == pytest.approx(0.3)


def test_select_above_stops_after_trying_the_floor() -> None:
    kept, used = select_above([cand("a", 0.29)], threshold=0.5)

    assert kept == []
    assert used == pytest.approx(0.3)


def test_select_above_tries_a_threshold_below_the_floor_as_given() -> None:
    assert select_above([cand("a", 0.1)], threshold=0.2) == ([], 0.2)


def test_select_above_of_no_candidates_keeps_the_threshold() -> None:
    assert select_above([], threshold=0.5) == ([], 0.5)


def test_select_above_can_judge_by_another_score() -> None:
    reranked = cand("a", 0.05, model=0.8)

    kept, used = select_above([reranked], threshold=0.7, score=lambda c: c.model_score or 0.0)

    assert (kept, used) == ([reranked], 0.7)


def test_select_above_honours_custom_floor_and_decay() -> None:
    kept, used = select_above([cand("a", 0.26)], threshold=0.8, floor=0.1, decay=0.5)

    # 0.8 -> 0.4 -> 0.2 keeps the 0.26.
    assert [c.id for c in kept] == ["a"]
    assert used == pytest.approx(0.2)


@pytest.mark.parametrize("decay", [0.0, 1.0, 1.5, -0.3])
def test_select_above_rejects_a_decay_that_would_not_lower_the_threshold(decay: float) -> None:
    with pytest.raises(ValueError, match="decay"):
        select_above([cand("a", 0.1)], threshold=0.5, decay=decay)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.8, 0.7), (0.6, 0.5), (0.55, 0.5), (0.5, 0.5), (0.45, 0.45), (0.3, 0.3)],
)
def test_history_threshold_is_lower_by_a_tenth_but_never_pushed_below_half(threshold: float, expected: float) -> None:
    assert history_threshold(threshold) == pytest.approx(expected)


def test_history_threshold_never_exceeds_the_threshold() -> None:
    assert all(history_threshold(t / 100) <= t / 100 for t in range(101))


# --- position_prior / composite_score --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rank", "count", "expected"),
    [(1, 1, 1.0), (1, 3, 1.05), (2, 3, 1.0), (3, 3, 0.95), (2, 5, 1.025), (5, 5, 0.95)],
)
def test_position_prior_runs_from_plus_to_minus_spread(rank: int, count: int, expected: float) -> None:
    assert position_prior(rank, count) == pytest.approx(expected)


def test_position_prior_takes_a_custom_spread() -> None:
    assert position_prior(1, 2, spread=0.2) == pytest.approx(1.2)
    assert position_prior(2, 2, spread=0.2) == pytest.approx(0.8)


@pytest.mark.parametrize(("rank", "count"), [(0, 3), (4, 3), (1, 0)])
def test_position_prior_rejects_a_rank_outside_the_list(rank: int, count: int) -> None:
    with pytest.raises(ValueError, match="rank"):
        position_prior(rank, count)


def test_composite_score_weights_model_base_and_source() -> None:
    assert composite_score(model=0.8, base=0.5, source_weight=1.0) == pytest.approx(0.48 + 0.15 + 0.1)


def test_composite_score_multiplies_prior_and_faq_boost() -> None:
    score = composite_score(model=0.8, base=0.5, source_weight=1.0, prior=1.05, faq_boost=1.2)

    assert score == pytest.approx(0.73 * 1.05 * 1.2)


def test_composite_score_is_not_clamped_so_boosts_still_order_the_top() -> None:
    assert composite_score(model=1.0, base=1.0, source_weight=1.0, prior=1.05, faq_boost=1.2) == pytest.approx(1.26)


# --- rescore ---------------------------------------------------------------------------------------------------


def test_rescore_combines_model_base_source_prior_and_faq_boost() -> None:
    chunk = cand("chunk", 0.03, base=0.03, legs={"vector"})
    # An FAQ's score before rerank is its match confidence (0.5 here), its base on the composite's scale.
    faq = cand("faq", 0.5, base=0.02, legs={"bm25", "faq"}, kind="faq")
    direct = cand("direct", 0.01, base=0.01, legs={"direct"})

    ranked = rescore([chunk, faq, direct], [0.2, 0.9, 0.1], source_weights={"bm25": 0.8, "faq": 0.9})

    assert [c.id for c in ranked] == ["faq", "direct", "chunk"]
    by_id = {c.id: c for c in ranked}
    # Passage bases normalised 1, 0, the FAQ's is its confidence 0.5; prior 1.05, 1.0, 0.95;
    # source max(0.8, 0.9) = 0.9 for the FAQ, 1.0 otherwise.
    assert by_id["faq"].score == pytest.approx((0.6 * 0.9 + 0.3 * 0.5 + 0.1 * 0.9) * 1.0 * 1.2)  # 0.936
    assert by_id["direct"].score == pytest.approx((0.6 * 1.0 + 0.3 * 0.0 + 0.1 * 1.0) * 0.95)  # 0.665
    assert by_id["chunk"].score == pytest.approx((0.6 * 0.2 + 0.3 * 1.0 + 0.1 * 1.0) * 1.05)  # 0.546
    assert [by_id[i].model_score for i in ("chunk", "faq", "direct")] == [0.2, 0.9, 1.0]
    assert [by_id[i].base_score for i in ("chunk", "faq", "direct")] == [0.03, 0.02, 0.01]


def test_rescore_normalises_unbounded_base_scores_so_the_model_still_decides() -> None:
    # Raw BM25 would give 0.3 * 16 = 4.8 to both and drown the model score (WeKnora #3343).
    first = cand("first", base=16.1, legs={"bm25"})
    second = cand("second", base=15.9, legs={"bm25"})

    ranked = rescore([first, second], [0.1, 0.9], source_weights={})

    assert [c.id for c in ranked] == ["second", "first"]
    assert ranked[0].score == pytest.approx((0.54 + 0.0 + 0.1) * 0.95)
    assert ranked[1].score == pytest.approx((0.06 + 0.3 + 0.1) * 1.05)


def test_rescore_gives_a_candidate_without_legs_source_weight_one() -> None:
    [only] = rescore([cand("a", base=0.4)], [0.5], source_weights={"vector": 0.2})

    # One candidate: base normalises to 1.0 and the prior is neutral.
    assert only.score == pytest.approx(0.6 * 0.5 + 0.3 * 1.0 + 0.1 * 1.0)


def test_rescore_applies_a_custom_faq_boost() -> None:
    [only] = rescore([cand("a", 0.8, kind="faq")], [0.5], source_weights={}, faq_boost=2.0)

    assert only.score == pytest.approx((0.3 + 0.3 * 0.8 + 0.1) * 2.0)


def test_rescore_scores_faqs_by_their_confidence_not_against_passage_scores() -> None:
    # RRF scores (~0.03) normalised together with confidences (~0.7) would put every FAQ at the top of the scale.
    passages = [cand("p1", base=0.033, legs={"vector"}), cand("p2", base=0.016, legs={"vector"})]
    weak_faq = cand("faq", 0.3, base=0.3, kind="faq", legs={"faq"})

    by_id = {c.id: c for c in rescore([*passages, weak_faq], [0.5, 0.5, 0.5], source_weights={}, faq_boost=1.0)}

    assert by_id["faq"].score == pytest.approx((0.3 + 0.3 * 0.3 + 0.1) * 0.95)
    assert by_id["p1"].score > by_id["faq"].score


def test_rescore_rejects_a_model_score_count_that_does_not_match() -> None:
    with pytest.raises(ValueError, match="2 model scores for 1 candidates"):
        rescore([cand("a")], [0.1, 0.2], source_weights={})


def test_rescore_of_nothing_is_nothing() -> None:
    assert rescore([], [], source_weights={}) == []
