"""Texts grouped by meaning: greedy centroid clustering of their embeddings on cosine similarity (pure, no I/O).

Each vector joins the most similar group whose centroid it is at least `threshold` alike, else starts a group; one
more pass then moves every vector to its nearest final centroid, so an early vector is not kept by a group that
drifted away from it. Input order decides ties, so the same texts always give the same groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from rag.types import Vector

# Cosine between all-MiniLM-L6-v2 question vectors above which two questions ask the same thing: tuned on the
# StackFAQ DEV paraphrases (bench/feedback_clusters.py; purity and group counts in bench/RESULTS.md).
SAME_QUESTION: Final = 0.65

_Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Cluster:
    """One group: its members (indices into the input, ascending) and the most central of them."""

    members: tuple[int, ...]
    central: int

    @property
    def size(self) -> int:
        """How many inputs the group holds."""
        return len(self.members)


def cluster_by_meaning(vectors: Sequence[Vector], threshold: float = SAME_QUESTION) -> list[Cluster]:
    """Group `vectors` whose cosine to their group's centroid is at least `threshold`; largest groups first."""
    if not vectors:
        return []
    unit = _normalised(np.asarray(vectors, dtype=np.float32))
    centroids = _centroids(unit, _leaders(unit, threshold))
    nearest = np.argmax(unit @ centroids.T, axis=1)
    groups: dict[int, list[int]] = {}
    for index, group in enumerate(nearest.tolist()):
        groups.setdefault(group, []).append(index)
    clusters = [_cluster(unit, members) for members in groups.values()]
    return sorted(clusters, key=lambda cluster: (-cluster.size, cluster.members[0]))


def _normalised(matrix: _Matrix) -> _Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _leaders(unit: _Matrix, threshold: float) -> list[int]:
    """The first pass: each row's group number, groups numbered in the order they start."""
    sums = np.zeros_like(unit)
    centres = np.zeros_like(unit)
    count = 0
    assigned: list[int] = []
    for vector in unit:
        best = -1
        if count:
            similarities = centres[:count] @ vector
            best = int(np.argmax(similarities))
            if similarities[best] < threshold:
                best = -1
        if best < 0:
            best, count = count, count + 1
        sums[best] += vector
        centres[best] = _normalised(sums[best : best + 1])[0]
        assigned.append(best)
    return assigned


def _centroids(unit: _Matrix, assigned: list[int]) -> _Matrix:
    groups = max(assigned) + 1
    sums = np.zeros((groups, unit.shape[1]), dtype=np.float32)
    np.add.at(sums, np.asarray(assigned), unit)
    return _normalised(sums)


def _cluster(unit: _Matrix, members: list[int]) -> Cluster:
    rows = unit[members]
    centre = _normalised(rows.sum(axis=0, keepdims=True))[0]
    # argmax keeps the first of equal scores: the earliest member among equally central ones.
    return Cluster(tuple(members), members[int(np.argmax(rows @ centre))])
