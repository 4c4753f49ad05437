"""Grouping vectors by meaning: near ones together, far ones apart, the same groups every time."""

from __future__ import annotations

import math

import pytest

from rag.clusters import Cluster, cluster_by_meaning


def _at(degrees: float, length: float = 1.0) -> list[float]:
    """A vector in the plane at an angle (cosine between two of them: cos of the angle between)."""
    return [length * math.cos(math.radians(degrees)), length * math.sin(math.radians(degrees)), 0.0]


def test_near_vectors_group_and_far_ones_stay_apart() -> None:
    vpn = [_at(0), _at(10, 3.0), _at(-8)]  # within ~18°: cosine above 0.95; the length does not matter
    lunch = [_at(90), _at(95)]
    clusters = cluster_by_meaning([vpn[0], lunch[0], vpn[1], lunch[1], vpn[2]], threshold=0.9)
    assert [cluster.members for cluster in clusters] == [(0, 2, 4), (1, 3)]


def test_the_largest_group_comes_first_and_equal_sizes_keep_their_first_members_order() -> None:
    vectors = [_at(90), _at(0), _at(180), _at(2), _at(182)]
    clusters = cluster_by_meaning(vectors, threshold=0.9)
    assert [cluster.members for cluster in clusters] == [(1, 3), (2, 4), (0,)]


def test_the_example_is_the_most_central_member() -> None:
    (cluster,) = cluster_by_meaning([_at(-20), _at(20), _at(1), _at(15)], threshold=0.7)
    assert cluster.central == 2


def test_the_same_input_gives_the_same_groups() -> None:
    vectors = [_at(angle) for angle in (0, 33, 61, 95, 130, 170, 12, 47, 88, 151)]
    first = cluster_by_meaning(vectors, threshold=0.85)
    assert all(cluster_by_meaning(vectors, threshold=0.85) == first for _ in range(5))


def test_a_vector_first_kept_by_a_group_that_drifted_moves_to_the_nearer_one() -> None:
    # 0°, 30°, 45° and 60° join one group (its centre drifts to ~34°); 75° starts another, which 80° and 85° pull
    # to 80°: 60° is nearer that one in the end.
    clusters = cluster_by_meaning([_at(angle) for angle in (0, 30, 45, 60, 75, 80, 85)], threshold=0.8)
    assert {cluster.members for cluster in clusters} == {(0, 1, 2), (3, 4, 5, 6)}


@pytest.mark.parametrize(
    ("vectors", "expected"),
    [
        ([], []),
        ([[0.0, 0.0, 0.0]], [Cluster((0,), 0)]),
        ([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [Cluster((0, 1), 0)]),
    ],
)
def test_nothing_and_zero_vectors_do_not_break_it(vectors: list[list[float]], expected: list[Cluster]) -> None:
    assert cluster_by_meaning(vectors) == expected
