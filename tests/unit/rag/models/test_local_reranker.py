"""LocalReranker: weighted jieba TF-IDF cosine and embedding cosine, with a hand-made embedder of fixed vectors."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from rag.errors import ModelError, RerankerError
from rag.lexical import LexicalAnalyzer
from rag.models.rerankers import IdfTable, LocalReranker, load_idf, tfidf_cosine
from rag.ports import EmbedKind
from rag.types import KnownVectors, Vector


class FixedEmbedder:
    """Our Embedder protocol: a fixed vector per text ([0, 0] for unlisted), recording each call and its kind."""

    provider = "fixed"
    model_id = "fixed-model"
    dimension = 2

    def __init__(self, vectors: Mapping[str, Vector], *, fail: ModelError | None = None) -> None:
        self.vectors = vectors
        self.fail = fail
        self.calls: list[list[str]] = []
        self.kinds: list[EmbedKind] = []

    def prompt(self, kind: EmbedKind) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        self.calls.append(list(texts))
        self.kinds.append(kind)
        if self.fail is not None:
            raise self.fail
        return [self.vectors.get(text, [0.0, 0.0]) for text in texts]


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    """One jieba analyzer for the module (its dictionary takes a second to build)."""
    return LexicalAnalyzer()


@pytest.fixture(scope="module")
def jieba_idf() -> IdfTable:
    """jieba's bundled IDF table, loaded once."""
    return load_idf()


FLAT_IDF = IdfTable({}, 1.0)


async def test_text_close_in_words_and_meaning_ranks_first(lexical: LexicalAnalyzer) -> None:
    query = "how long do refunds take"
    texts = ["refunds take up to fourteen days", "refund timing is two weeks", "the office opens at nine"]
    vectors = {query: [1.0, 0.0], texts[0]: [0.9, 0.1], texts[1]: [0.8, 0.2], texts[2]: [0.0, 1.0]}
    scores = await LocalReranker(FixedEmbedder(vectors), lexical, idf=FLAT_IDF, calibration=1.0).rerank(query, texts)
    assert scores[0] > scores[1] > scores[2]
    assert all(0.0 <= score <= 1.0 for score in scores)


async def test_score_is_the_weighted_sum_with_negative_cosine_counted_as_zero(lexical: LexicalAnalyzer) -> None:
    vectors = {"alpha beta": [1.0, 0.0], "alpha": [1.0, 1.0], "beta": [-1.0, 0.0]}
    reranker = LocalReranker(
        FixedEmbedder(vectors), lexical, lexical_weight=0.4, vector_weight=0.6, idf=FLAT_IDF, calibration=1.0
    )
    scores = await reranker.rerank("alpha beta", ["alpha", "beta"])
    half = 1 / math.sqrt(2)  # TF-IDF cosine of {alpha, beta} and {alpha} with equal IDFs; also the vectors' cosine
    assert scores == pytest.approx([0.4 * half + 0.6 * half, 0.4 * half + 0.6 * 0.0])


async def test_calibration_scales_the_weighted_sum_and_caps_it_at_one(lexical: LexicalAnalyzer) -> None:
    vectors = {"alpha beta": [1.0, 0.0], "alpha": [1.0, 2.0], "alpha beta gamma": [1.0, 0.0]}
    reranker = LocalReranker(FixedEmbedder(vectors), lexical, idf=FLAT_IDF)  # the default, 1 / 0.6
    scores = await reranker.rerank("alpha beta", ["alpha", "alpha beta gamma"])
    assert scores[0] == pytest.approx((0.3 / math.sqrt(2) + 0.7 / math.sqrt(5)) / 0.6)
    assert scores[1] == 1.0


@pytest.mark.parametrize("calibration", [0.0, -1.0])
def test_calibration_must_be_positive(lexical: LexicalAnalyzer, calibration: float) -> None:
    with pytest.raises(ValueError, match="calibration"):
        LocalReranker(FixedEmbedder({}), lexical, calibration=calibration)


async def test_chinese_text_is_matched_on_jieba_words_weighted_by_idf(
    lexical: LexicalAnalyzer, jieba_idf: IdfTable
) -> None:
    query = "如何申请退款"
    texts = ["退款申请需要在七天内提交", "公司的年假政策是每年二十五天", "请问如何联系我们"]
    reranker = LocalReranker(FixedEmbedder({}), lexical, lexical_weight=1.0, vector_weight=0.0, idf=jieba_idf)
    scores = await reranker.rerank(query, texts)
    assert scores[0] == max(scores)
    assert scores[1] == 0.0
    # Sharing "申请" and the rare "退款" (refund) beats sharing only the common "如何" (how).
    assert scores[0] > scores[2] > 0.0


@pytest.mark.parametrize(("weights", "calls"), [((1.0, 0.0), 0), ((0.0, 1.0), 2)], ids=["lexical-only", "vector-only"])
async def test_a_zero_weight_side_is_not_computed(
    lexical: LexicalAnalyzer, weights: tuple[float, float], calls: int
) -> None:
    # Same words and same vector: either side alone scores 1.0.
    embedder = FixedEmbedder({"refund": [1.0, 0.0]})
    reranker = LocalReranker(embedder, lexical, lexical_weight=weights[0], vector_weight=weights[1], idf=FLAT_IDF)
    assert await reranker.rerank("refund", ["refund"]) == [pytest.approx(1.0)]
    assert len(embedder.calls) == calls


async def test_the_query_is_embedded_as_a_query_and_the_texts_as_passages(lexical: LexicalAnalyzer) -> None:
    embedder = FixedEmbedder({})
    await LocalReranker(embedder, lexical, idf=FLAT_IDF).rerank("q", ["a", "b"])
    assert embedder.calls == [["q"], ["a", "b"]]
    assert embedder.kinds == ["query", "passage"]


async def test_no_texts_means_no_work(lexical: LexicalAnalyzer) -> None:
    embedder = FixedEmbedder({})
    assert await LocalReranker(embedder, lexical, idf=FLAT_IDF).rerank("q", []) == []
    assert embedder.calls == []


async def test_an_embedder_failure_is_raised_as_a_reranker_error(lexical: LexicalAnalyzer) -> None:
    embedder = FixedEmbedder({}, fail=ModelError("embedding API answered 503", status=503))
    with pytest.raises(RerankerError, match="503"):
        await LocalReranker(embedder, lexical, idf=FLAT_IDF).rerank("q", ["a"])


@pytest.mark.parametrize(
    ("lexical_weight", "vector_weight"),
    [(0.5, 0.6), (0.2, 0.7), (-0.1, 1.1), (1.2, -0.2)],
    ids=["sum-over-1", "sum-under-1", "negative-lexical", "negative-vector"],
)
def test_weights_must_each_be_in_0_1_and_sum_to_1(
    lexical: LexicalAnalyzer, lexical_weight: float, vector_weight: float
) -> None:
    with pytest.raises(ValueError, match="weights"):
        LocalReranker(FixedEmbedder({}), lexical, lexical_weight=lexical_weight, vector_weight=vector_weight)


def test_model_id_names_the_embedder(lexical: LexicalAnalyzer) -> None:
    assert LocalReranker(FixedEmbedder({}), lexical).model_id == "local:fixed-model"


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        (["a", "b"], ["b", "a"], 1.0),
        (["a"], ["b"], 0.0),
        ([], ["a"], 0.0),
        (["a"], [], 0.0),
        (["rare", "common"], ["rare"], 10 / math.sqrt(101)),
        (["rare", "common"], ["common"], 1 / math.sqrt(101)),
    ],
)
def test_tfidf_cosine(query: list[str], text: list[str], expected: float) -> None:
    idf = IdfTable({"rare": 10.0, "common": 1.0}, 1.0)
    assert tfidf_cosine(query, text, idf) == pytest.approx(expected)


def test_load_idf_gives_unknown_words_the_median(tmp_path: Path) -> None:
    path = tmp_path / "idf.txt"
    path.write_text("low 1.0\nhigh 9.0\nmid 5.0\n", encoding="utf-8")
    table = load_idf(path)
    assert (table.of("high"), table.of("unseen")) == (9.0, 5.0)


def test_jiebas_table_knows_common_words_better_than_rare_ones(jieba_idf: IdfTable) -> None:
    assert jieba_idf.of("如何") < jieba_idf.of("退款") < jieba_idf.of("劳动防护")
    assert jieba_idf.of("no-such-word-anywhere") == jieba_idf.default


async def test_known_vectors_are_used_and_only_the_missing_ones_embedded(lexical: LexicalAnalyzer) -> None:
    query = "how long do refunds take"
    texts = ["refunds take up to fourteen days", "the office opens at nine"]
    embedder = FixedEmbedder({texts[1]: [0.0, 1.0]})
    reranker = LocalReranker(embedder, lexical, idf=FLAT_IDF, calibration=1.0, lexical_weight=0.0, vector_weight=1.0)

    scores = await reranker.rerank(query, texts, KnownVectors([1.0, 0.0], [[1.0, 0.0], None]))

    assert embedder.calls == [[texts[1]]]
    assert embedder.kinds == ["passage"]
    assert scores == pytest.approx([1.0, 0.0])


async def test_known_vectors_of_the_wrong_length_are_ignored_and_everything_embedded(lexical: LexicalAnalyzer) -> None:
    embedder = FixedEmbedder({"q": [1.0, 0.0], "a": [1.0, 0.0]})
    reranker = LocalReranker(embedder, lexical, idf=FLAT_IDF, calibration=1.0, lexical_weight=0.0, vector_weight=1.0)

    scores = await reranker.rerank("q", ["a"], KnownVectors(None, []))

    assert embedder.calls == [["q"], ["a"]]
    assert scores == pytest.approx([1.0])


def test_the_table_shares_the_vocabularys_words_and_gives_the_same_weights(tmp_path: Path) -> None:
    path = tmp_path / "idf.txt"
    path.write_text("退款 9.5\nrefund 4.25\nunshared 4.25\n", encoding="utf-8")
    vocabulary = ["".join(["退", "款"]), "".join(["re", "fund"])]  # built at run time: not the literals' objects
    table = load_idf(path, vocabulary)
    assert table.weights == load_idf(path).weights == {"退款": 9.5, "refund": 4.25, "unshared": 4.25}
    shared = {id(word) for word in vocabulary}
    assert {word: id(word) in shared for word in table.weights} == {"退款": True, "refund": True, "unshared": False}
