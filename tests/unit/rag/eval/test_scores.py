"""rag.eval.scores: ranking metrics on hand-computed examples and properties; SQuAD/CMRC-style answer metrics."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.eval.scores import exact_match, hit_at_k, mrr_at_k, ndcg_at_k, recall_at_k, token_f1

# --- nDCG ------------------------------------------------------------------------------------------------------


def test_ndcg_matches_a_graded_example_worked_by_hand() -> None:
    # DCG@3 = 1/log2(2) + 0/log2(3) + 2/log2(4) = 1 + 0 + 1 = 2.
    # Ideal from the qrels, grades 2, 1, 1: 2/1 + 1/log2(3) + 1/2 = 3.1309...
    ndcg = ndcg_at_k(["d1", "d2", "d3", "d4"], {"d3": 2, "d1": 1, "d5": 1}, 3)

    assert ndcg == pytest.approx(2 / (2 + 1 / math.log2(3) + 0.5))
    assert ndcg == pytest.approx(0.63879, abs=1e-5)


def test_ndcg_with_one_relevant_document_is_its_discount() -> None:
    assert ndcg_at_k(["a", "b", "c"], {"b": 1}, 10) == pytest.approx(1 / math.log2(3))


def test_ndcg_counts_only_the_top_k() -> None:
    assert ndcg_at_k(["a", "b", "c"], {"c": 1}, 2) == 0.0


def test_ndcg_builds_the_ideal_from_the_qrels_not_from_the_retrieved_list() -> None:
    # Only one of two relevant documents was retrieved, at rank 1: DCG 1, ideal 1 + 1/log2(3).
    assert ndcg_at_k(["a"], {"a": 1, "missing": 1}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_ndcg_of_a_query_without_relevant_documents_is_zero() -> None:
    assert ndcg_at_k(["a", "b"], {}, 10) == 0.0
    assert ndcg_at_k(["a", "b"], {"a": 0}, 10) == 0.0


def test_ndcg_treats_non_positive_grades_as_not_relevant() -> None:
    assert ndcg_at_k(["bad", "good"], {"bad": -1, "good": 1}, 10) == pytest.approx(1 / math.log2(3))


def test_ndcg_counts_a_repeated_id_once() -> None:
    assert ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)


@pytest.mark.parametrize("metric", [ndcg_at_k, recall_at_k, mrr_at_k, hit_at_k])
@pytest.mark.parametrize("k", [0, -3])
def test_ranking_metrics_reject_k_below_one(
    metric: Callable[[Sequence[str], dict[str, int], int], float], k: int
) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        metric(["a"], {"a": 1}, k)


qrels_strategy = st.dictionaries(st.sampled_from("abcdefgh"), st.integers(min_value=0, max_value=3), max_size=8)
ranking_strategy = st.lists(st.sampled_from("abcdefghxyz"), max_size=15)


@given(ranked=ranking_strategy, qrels=qrels_strategy, k=st.integers(min_value=1, max_value=12))
def test_ndcg_is_between_zero_and_one(ranked: list[str], qrels: dict[str, int], k: int) -> None:
    assert 0.0 <= ndcg_at_k(ranked, qrels, k) <= 1.0 + 1e-12


@given(qrels=qrels_strategy, k=st.integers(min_value=1, max_value=12))
def test_ndcg_of_the_ideal_ranking_is_one(qrels: dict[str, int], k: int) -> None:
    if not any(grade > 0 for grade in qrels.values()):
        return
    ideal = sorted(qrels, key=lambda doc_id: -qrels[doc_id])

    assert ndcg_at_k(ideal, qrels, k) == pytest.approx(1.0)


# --- recall, MRR, hit ------------------------------------------------------------------------------------------

RANKED = ["a", "b", "c", "d"]


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (2, 1 / 3), (4, 2 / 3), (10, 2 / 3)])
def test_recall_is_the_share_of_relevant_ids_in_the_top_k(k: int, expected: float) -> None:
    assert recall_at_k(RANKED, {"b", "d", "e"}, k) == pytest.approx(expected)


def test_recall_with_nothing_relevant_is_zero() -> None:
    assert recall_at_k(RANKED, set(), 10) == 0.0


def test_recall_counts_a_repeated_id_once() -> None:
    assert recall_at_k(["b", "b"], {"b", "d"}, 2) == pytest.approx(0.5)


@pytest.mark.parametrize(("k", "expected"), [(2, 0.0), (3, 1 / 3), (10, 1 / 3)])
def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_id_within_k(k: int, expected: float) -> None:
    assert mrr_at_k(RANKED, {"c", "d"}, k) == pytest.approx(expected)


@pytest.mark.parametrize(("k", "expected"), [(2, 0.0), (3, 1.0)])
def test_hit_is_one_when_a_relevant_id_is_within_k(k: int, expected: float) -> None:
    assert hit_at_k(RANKED, {"c"}, k) == expected


def test_metrics_of_an_empty_ranking_are_zero() -> None:
    assert (recall_at_k([], {"a"}, 5), mrr_at_k([], {"a"}, 5), hit_at_k([], {"a"}, 5)) == (0.0, 0.0, 0.0)


@given(ranked=ranking_strategy, relevant=st.sets(st.sampled_from("abcdefgh")), k=st.integers(1, 12))
def test_mrr_never_exceeds_hit_and_both_stay_in_unit_range(ranked: list[str], relevant: set[str], k: int) -> None:
    assert 0.0 <= mrr_at_k(ranked, relevant, k) <= hit_at_k(ranked, relevant, k) <= 1.0
    assert 0.0 <= recall_at_k(ranked, relevant, k) <= 1.0


# --- token F1, exact match -------------------------------------------------------------------------------------


def test_token_f1_on_english_drops_case_punctuation_and_articles() -> None:
    # "cat sat on mat" against "cat sat on red mat": precision 4/4, recall 4/5.
    assert token_f1("The cat sat on the mat.", "A cat sat on a red mat") == pytest.approx(2 * 0.8 / 1.8)


def test_token_f1_on_chinese_compares_characters() -> None:
    # 今天天气很好 vs 今天天气不错: 4 of 6 characters shared each way.
    assert token_f1("今天天气很好。", "今天天气不错") == pytest.approx(2 / 3)


def test_token_f1_on_mixed_text_keeps_latin_words_whole() -> None:
    # gpu 显 存 不 足 vs gpu 显 存: precision 3/5, recall 3/3.
    assert token_f1("GPU 显存不足", "gpu显存") == pytest.approx(0.75)


def test_token_f1_chinese_flag_overrides_detection() -> None:
    # As English, each sentence is one word and they differ.
    assert token_f1("今天天气很好", "今天天气不错", chinese=False) == 0.0
    assert token_f1("today fine", "today", chinese=True) == pytest.approx(2 / 3)


def test_token_f1_counts_repeated_tokens_by_multiplicity() -> None:
    # pred "yes yes yes" vs gold "yes no": one shared token; precision 1/3, recall 1/2.
    assert token_f1("yes yes yes", "yes no") == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [("", "", 1.0), ("the", "a", 1.0), ("", "cat", 0.0), ("cat", "...", 0.0), ("dog", "cat", 0.0)],
)
def test_token_f1_with_nothing_left_to_compare(prediction: str, gold: str, expected: float) -> None:
    assert token_f1(prediction, gold) == expected


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The Cat!", "cat", 1.0),
        ("  paris ", "Paris.", 1.0),
        ("北京。", "北京", 1.0),
        ("北京市", "北京", 0.0),
        ("cats", "cat", 0.0),
    ],
)
def test_exact_match_compares_normalised_answers(prediction: str, gold: str, expected: float) -> None:
    assert exact_match(prediction, gold) == expected


@given(text=st.text(max_size=30))
def test_an_answer_matches_itself(text: str) -> None:
    assert exact_match(text, text) == 1.0
    assert token_f1(text, text) == pytest.approx(1.0)
