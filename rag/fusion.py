"""Rank fusion and re-scoring: weighted RRF, dedup, MMR, threshold fallback and composite scores (pure, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from rag.faq.candidate import faq_confidence
from rag.types import Candidate

# Cormack, Clarke & Büttcher 2009, "Reciprocal Rank Fusion outperforms Condorcet and individual rank learning
# methods" (SIGIR): k=60 damps the weight of the very top ranks; it is the value every later system copies.
RRF_K = 60
# Carbonell & Goldstein 1998 leave lambda open; 0.7 (mostly relevance, some diversity) is WeKnora's rerank default.
MMR_LAMBDA = 0.7
# WeKnora rerank: when nothing passes the rerank threshold it retries at 0.7x the threshold, never below 0.3.
THRESHOLD_FLOOR = 0.3
THRESHOLD_DECAY = 0.7
# WeKnora rerank: history matches are judged 0.1 more leniently, but not below 0.5.
HISTORY_THRESHOLD_STEP = 0.1
HISTORY_THRESHOLD_MIN = 0.5
# WeKnora rerank compositeScore: 0.6 reranker + 0.3 retrieval + 0.1 source weight; its agent search's position
# prior is +-5%; 1.2 is WeKnora's default FAQScoreBoost.
MODEL_WEIGHT = 0.6
BASE_WEIGHT = 0.3
SOURCE_WEIGHT = 0.1
POSITION_SPREAD = 0.05
FAQ_BOOST = 1.2
# The issue: "direct-load hits count as model score 1.0" (the user asked for that document; no reranker vetoes it).
DIRECT_LEG = "direct"
HISTORY_LEG = "history"
DIRECT_MODEL_SCORE = 1.0


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion of named rankings: (id, score) best first.

    score(id) = sum over legs of weight / (k + rank), rank starting at 1. A leg missing from `weights` weighs 1.0;
    a leg weighing 0 is left out entirely. An id repeated within one leg counts at its best rank only. Ties are
    broken by the id's best rank in any counted leg, then by id, so the result never depends on dict order.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    weights = weights or {}
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for leg, ids in rankings.items():
        weight = weights.get(leg, 1.0)
        if weight < 0:
            raise ValueError(f"rrf weight of leg {leg!r} must be >= 0, got {weight}")
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, doc_id in enumerate(ids, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
            best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))


def fuse_candidates(
    legs: Mapping[str, Sequence[Candidate]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """RRF over named Candidate lists: one Candidate per id, scored by the fusion, best first.

    `score` and `base_score` become the fused score and `legs` the names of the (non-zero-weight) legs that found
    the id, together with any legs the inputs already carried; every other field comes from the id's first
    occurrence, walking the legs in mapping order.
    """
    weights = weights or {}
    first: dict[str, Candidate] = {}
    found_by: dict[str, set[str]] = {}
    for leg, candidates in legs.items():
        if weights.get(leg, 1.0) == 0:
            continue
        for candidate in candidates:
            first.setdefault(candidate.id, candidate)
            found_by.setdefault(candidate.id, set()).update({leg, *candidate.legs})
    fused = rrf({leg: [c.id for c in candidates] for leg, candidates in legs.items()}, k=k, weights=weights)
    return [
        replace(first[doc_id], score=score, base_score=score, legs=frozenset(found_by[doc_id]))
        for doc_id, score in fused
    ]


def _content_key(text: str) -> str:
    return " ".join(text.casefold().split())


def dedupe(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Drop repeats by id, then by content (casefolded, whitespace collapsed); the first stays, with merged legs.

    Empty texts are never content duplicates of each other: two ids with no text are not known to be the same.
    """
    kept: list[Candidate] = []
    by_id: dict[str, int] = {}
    by_content: dict[str, int] = {}
    for candidate in candidates:
        key = _content_key(candidate.text)
        slot = by_id.get(candidate.id)
        if slot is None and key:
            slot = by_content.get(key)
        if slot is None:
            slot = len(kept)
            kept.append(candidate)
        elif not candidate.legs <= kept[slot].legs:
            kept[slot] = replace(kept[slot], legs=kept[slot].legs | candidate.legs)
        by_id.setdefault(candidate.id, slot)
        if key:
            by_content.setdefault(key, slot)
    return kept


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|; 0.0 when both sets are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of one length (0.0 when either is all zeros)."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def _normalise(values: Sequence[float]) -> list[float]:
    """Min-max to [0, 1]; all-equal values (or a single one) are all 1.0, the best there is."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [1.0] * len(values)
    return [(value - low) / (high - low) for value in values]


def mmr(
    candidates: Sequence[Candidate],
    *,
    tokens: Callable[[str], set[str]],
    k: int,
    lambda_: float = MMR_LAMBDA,
) -> list[Candidate]:
    """Maximal marginal relevance (Carbonell & Goldstein 1998): up to k candidates in selection order.

    Each step takes the candidate maximising lambda * relevance - (1 - lambda) * redundancy, where relevance is its
    score min-max normalised over the input (so it is on the same [0, 1] scale as Jaccard, whatever the scorer)
    and redundancy is its largest token-set Jaccard against those already taken. Ties go to the higher raw score,
    then the earlier input, so lambda_ = 1 is exactly a stable sort by score.
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"mmr lambda_ must be in [0, 1], got {lambda_}")
    relevance = _normalise([c.score for c in candidates])
    token_sets = [tokens(c.text) for c in candidates]
    # Largest similarity to any selected candidate, updated once per pick rather than rescanned.
    redundancy = [0.0] * len(candidates)
    remaining = list(range(len(candidates)))
    selected: list[int] = []
    while remaining and len(selected) < k:
        best = max(
            remaining,
            key=lambda i: (lambda_ * relevance[i] - (1.0 - lambda_) * redundancy[i], candidates[i].score, -i),
        )
        remaining.remove(best)
        selected.append(best)
        for i in remaining:
            redundancy[i] = max(redundancy[i], jaccard(token_sets[i], token_sets[best]))
    return [candidates[i] for i in selected]


def _current_score(candidate: Candidate) -> float:
    return candidate.score


def _as_given(candidate: Candidate, threshold: float) -> float:
    return threshold


def select_above(
    candidates: Sequence[Candidate],
    *,
    threshold: float,
    floor: float = THRESHOLD_FLOOR,
    decay: float = THRESHOLD_DECAY,
    score: Callable[[Candidate], float] = _current_score,
    threshold_of: Callable[[Candidate, float], float] = _as_given,
) -> tuple[list[Candidate], float]:
    """Candidates scoring at least the threshold, lowering it by `decay` down to `floor` while none pass.

    Returns the kept candidates (input order) and the threshold that was finally used. A threshold already at or
    below the floor is tried once as given. With no candidates there is nothing to relax: (`[]`, threshold).
    Unlike WeKnora, which relaxes once, this keeps relaxing (0.5 -> 0.35 -> 0.3) until the floor has been tried.
    `threshold_of(candidate, threshold)` gives one candidate its own bar at each step (see `lenient_to_history`).
    """
    if not 0.0 < decay < 1.0:
        raise ValueError(f"threshold decay must be in (0, 1), got {decay}")
    if not candidates:
        return [], threshold
    used = threshold
    while True:
        kept = [c for c in candidates if score(c) >= threshold_of(c, used)]
        lowered = max(floor, used * decay)
        if kept or used <= floor or lowered >= used:
            return kept, used
        used = lowered


def history_threshold(threshold: float) -> float:
    """The threshold for history matches: 0.1 lower, but not pushed below 0.5.

    A threshold already below 0.5 is returned unchanged. WeKnora computes max(threshold - 0.1, 0.5), which *raises*
    a 0.3 threshold to 0.5 and so judges history matches more strictly than fresh ones; the issue's intent is the
    opposite ("0.1 less"), so the 0.5 bound only limits how far the lowering goes.
    """
    if threshold < HISTORY_THRESHOLD_MIN:
        return threshold
    return max(HISTORY_THRESHOLD_MIN, threshold - HISTORY_THRESHOLD_STEP)


def lenient_to_history(candidate: Candidate, threshold: float) -> float:
    """A select_above `threshold_of`: history matches are judged at history_threshold(threshold)."""
    return history_threshold(threshold) if HISTORY_LEG in candidate.legs else threshold


def position_prior(rank: int, count: int, spread: float = POSITION_SPREAD) -> float:
    """Factor for the rank-th (from 1) of `count` items: 1 + spread for the first, linearly to 1 - spread for the last.

    WeKnora derives its prior from a chunk's character offsets, which almost always clamps to the same +5%; ranking
    by input order makes the factor actually separate candidates.
    """
    if not 1 <= rank <= count:
        raise ValueError(f"rank must be in [1, {count}], got {rank}")
    if count == 1:
        return 1.0
    return 1.0 + spread * (1.0 - 2.0 * (rank - 1) / (count - 1))


def composite_score(
    *,
    model: float,
    base: float,
    source_weight: float,
    prior: float = 1.0,
    faq_boost: float = 1.0,
) -> float:
    """(0.6 model + 0.3 base + 0.1 source weight) x position prior x FAQ boost.

    Not clamped to [0, 1] as WeKnora does: clamping collapses boosted FAQs and top-ranked candidates onto 1.0 and
    throws away the order the prior and boost exist to create.
    """
    return (MODEL_WEIGHT * model + BASE_WEIGHT * base + SOURCE_WEIGHT * source_weight) * prior * faq_boost


def _bases(candidates: Sequence[Candidate]) -> list[float]:
    """Retrieval scores on one [0, 1] scale: an FAQ's match confidence as it is (already a cosine), a passage's
    fused score min-max normalised among the passages. Normalising both together would hand every FAQ the top
    of the scale, since confidences (~0.6-0.9) dwarf RRF scores (~0.03)."""
    chunk_bases = iter(_normalise([c.base_score for c in candidates if c.kind != "faq"]))
    return [min(1.0, max(0.0, faq_confidence(c))) if c.kind == "faq" else next(chunk_bases) for c in candidates]


def rescore(
    candidates: Sequence[Candidate],
    model_scores: Sequence[float],
    *,
    source_weights: Mapping[str, float],
    faq_boost: float = FAQ_BOOST,
) -> list[Candidate]:
    """Composite-score candidates given the reranker's scores (same order), best first.

    Sets `model_score` (1.0 for candidates a "direct" leg found) and `score` = composite of that, the retrieval
    `base_score` min-max normalised over the input's passages (an unbounded BM25 score would otherwise swamp the
    model score, WeKnora #3343; FAQs contribute their match confidence instead), the largest source weight among
    the candidate's legs (1.0 for legs not listed, and when it has none), the position prior by input rank, and
    `faq_boost` for FAQs. `base_score` itself is kept.
    """
    if len(model_scores) != len(candidates):
        raise ValueError(f"{len(model_scores)} model scores for {len(candidates)} candidates")
    bases = _bases(candidates)
    rescored = []
    for rank, (candidate, model, base) in enumerate(zip(candidates, model_scores, bases, strict=True), start=1):
        if DIRECT_LEG in candidate.legs:
            model = DIRECT_MODEL_SCORE
        source = max((source_weights.get(leg, 1.0) for leg in candidate.legs), default=1.0)
        score = composite_score(
            model=model,
            base=base,
            source_weight=source,
            prior=position_prior(rank, len(candidates)),
            faq_boost=faq_boost if candidate.kind == "faq" else 1.0,
        )
        rescored.append(replace(candidate, score=score, model_score=model))
    return sorted(rescored, key=lambda c: -c.score)
