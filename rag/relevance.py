"""Relevance: the reranker's score for each candidate, the rerank settings, and the composite ordering."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from rag.errors import RerankerError
from rag.fusion import (
    DIRECT_LEG,
    DIRECT_MODEL_SCORE,
    FAQ_BOOST,
    HISTORY_LEG,
    MMR_LAMBDA,
    THRESHOLD_FLOOR,
    rescore,
)
from rag.language import Language
from rag.ports import Reranker
from rag.types import Candidate, KnownVectors, Vector

log = logging.getLogger(__name__)

# The 0.1 source-weight share of the composite score (rag.fusion.composite_score). A leg not listed weighs 1.0.
# Our choice, not WeKnora's: a keyword-only match is noisier than a semantic one, and a history match answered the
# previous question rather than this one. At most 0.1 x 0.2 = 0.02 of a score: it breaks near-ties, nothing more.
# Web passages weigh 0.95, WeKnora's figure for web search results: the team's own documents win a near-tie.
SOURCE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {DIRECT_LEG: 1.0, "faq": 1.0, "vector": 1.0, "web": 0.95, HISTORY_LEG: 0.9, "bm25": 0.8}
)


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """How reranked candidates are kept, scored and diversified."""

    # WeKnora's rerank threshold default; relaxed by 0.7x down to `floor` when nothing passes (rag.fusion). Below the
    # floor nothing is relevant: the turn declines.
    threshold: float = 0.5
    floor: float = THRESHOLD_FLOOR
    # How many candidates MMR keeps; FILTER_TOP_K and the prompt's token budget trim further.
    top_k: int = 10
    mmr_lambda: float = MMR_LAMBDA
    faq_boost: float = FAQ_BOOST
    source_weights: Mapping[str, float] = field(default_factory=lambda: SOURCE_WEIGHTS)
    # The query languages the reranker serves; None for all. The local reranker with an English-only embedder
    # lowered Chinese retrieval (cmrc2018 nDCG@10 0.973 -> 0.946), so there it is kept to English.
    languages: frozenset[Language] | None = None
    # Whether the reranker's scores reorder what retrieval fused. False: they only judge which candidates are
    # relevant enough to keep, and the kept ones stay in the fused order (the local reranker, whose order lowered
    # every evaluation set: scifact nDCG@10 0.708 -> 0.691, cmrc2018 0.973 -> 0.946).
    reorder: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"rerank threshold must be in [0, 1], got {self.threshold}")
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"rerank floor must be in [0, 1], got {self.floor}")
        if self.top_k < 1:
            raise ValueError(f"rerank top_k must be >= 1, got {self.top_k}")
        if not 0.0 <= self.mmr_lambda <= 1.0:
            raise ValueError(f"rerank mmr_lambda must be in [0, 1], got {self.mmr_lambda}")
        if self.faq_boost <= 0:
            raise ValueError(f"rerank faq_boost must be > 0, got {self.faq_boost}")


async def model_scores(
    reranker: Reranker, query: str, candidates: Sequence[Candidate], query_vector: Vector | None = None
) -> list[float]:
    """The reranker's score for each candidate, in order; direct-load hits are 1.0 and not sent to it.

    The query's and candidates' vectors, where known, go with the texts, so a local reranker embeds nothing again.

    Raises RerankerError when the reranker fails or returns the wrong number of scores.
    """
    asked = [i for i, candidate in enumerate(candidates) if DIRECT_LEG not in candidate.legs]
    scores = [DIRECT_MODEL_SCORE] * len(candidates)
    if not asked:
        return scores
    known = KnownVectors(query_vector, [candidates[i].vector for i in asked])
    answered = await reranker.rerank(query, [candidates[i].text for i in asked], known)
    if len(answered) != len(asked):
        raise RerankerError(f"reranker {reranker.model_id} returned {len(answered)} scores for {len(asked)} texts")
    for i, score in zip(asked, answered, strict=True):
        scores[i] = score
    return scores


def model_score(candidate: Candidate) -> float:
    """The reranker's score of a judged candidate, 0.0 for one it did not judge."""
    return candidate.model_score or 0.0


def kept_in_order(kept: Sequence[Candidate], config: RerankConfig) -> list[Candidate]:
    """The composite score of the kept candidates, best first, with the reranker's share as the config says.

    With `reorder` off every kept candidate counts as equally relevant in the composite, so the order is the fused
    one (with its position prior, source weights and FAQ boost); each keeps its own `model_score` all the same.
    """
    if config.reorder:
        return rescore(
            kept, [model_score(c) for c in kept], source_weights=config.source_weights, faq_boost=config.faq_boost
        )
    # Candidate ids are unique here (SEARCH de-duplicated them).
    judged = {c.id: c.model_score for c in kept}
    fused = rescore(kept, [1.0] * len(kept), source_weights=config.source_weights, faq_boost=config.faq_boost)
    return [replace(c, model_score=judged[c.id]) for c in fused]


async def rerank_order(
    reranker: Reranker, query: str, candidates: Sequence[Candidate], config: RerankConfig | None = None
) -> list[Candidate]:
    """Every candidate composite-scored and sorted best first: RERANK's ordering with no threshold and no MMR.

    For evaluation. Raises RerankerError as the reranker does.
    """
    config = config or RerankConfig()
    scores = await model_scores(reranker, query, candidates)
    return kept_in_order([replace(c, model_score=s) for c, s in zip(candidates, scores, strict=True)], config)
