"""The shared permutation core against brute force and known identities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rankmodels import dsm
from rankmodels import permutations as P


def _kendall_brute(a, b):
    n = len(a)
    return sum(
        1 for i, j in itertools.combinations(range(n), 2) if (a[i] - a[j]) * (b[i] - b[j]) < 0
    )


def _cayley_brute(a, b):
    """Fewest transpositions by breadth-first search over S_n (tiny n only)."""
    start, goal = tuple(a), tuple(b)
    frontier, seen, dist = {start}, {start}, 0
    while goal not in frontier:
        nxt = set()
        for p in frontier:
            for i, j in itertools.combinations(range(len(p)), 2):
                q = list(p)
                q[i], q[j] = q[j], q[i]
                q = tuple(q)
                if q not in seen:
                    seen.add(q)
                    nxt.add(q)
        frontier, dist = nxt, dist + 1
    return dist


def test_all_permutations_count_order_and_lehmer_index():
    perms = P.all_permutations(5)
    assert perms.shape == (math.factorial(5), 5)
    assert P.is_permutation(perms)
    # Lexicographic order: rows sorted as tuples, and the Lehmer index is the row number.
    assert [tuple(p) for p in perms] == sorted(tuple(p) for p in perms)
    np.testing.assert_array_equal(P.lehmer_index(perms), np.arange(len(perms)))


def test_inverse_round_trip(rng):
    orders = np.array([rng.permutation(7) for _ in range(20)])
    ranks = P.ranks_from_order(orders)
    for o, r in zip(orders, ranks, strict=True):
        assert all(r[o[k]] == k for k in range(7))
    np.testing.assert_array_equal(P.order_from_ranks(ranks), orders)


@pytest.mark.parametrize("n", [3, 4])
def test_distances_against_brute_force(n):
    perms = P.all_permutations(n)
    for a in perms:
        for b in perms:
            assert P.kendall_distance(a, b) == _kendall_brute(a, b)
            assert P.footrule_distance(a, b) == sum(
                abs(int(x) - int(y)) for x, y in zip(a, b, strict=True)
            )
            assert P.hamming_distance(a, b) == sum(int(x != y) for x, y in zip(a, b, strict=True))
            assert P.cayley_distance(a, b) == _cayley_brute(a, b)


def test_distances_batch_broadcast(rng):
    a = np.array([rng.permutation(6) for _ in range(10)])
    b = rng.permutation(6)
    for name, dist in P.DISTANCES.items():
        batch = dist(a, b)
        assert batch.shape == (10,), name
        np.testing.assert_array_equal(batch, [dist(x, b) for x in a])


def test_kendall_maximum_is_reversal():
    n = 6
    ident = np.arange(n)
    assert P.kendall_distance(ident, ident[::-1]) == n * (n - 1) // 2


def test_as_permutation_rejects_bad_input():
    with pytest.raises(ValueError, match="permutation of 0..2"):
        P.as_permutation([0, 0, 1])
    with pytest.raises(TypeError, match="integers"):
        P.as_permutation([0.5, 1.0, 2.0])
    with pytest.raises(ValueError, match="differ|same length"):
        P.kendall_distance([0, 1, 2], [0, 1])


def test_marginal_matrix_is_doubly_stochastic_and_matches_enumeration(rng):
    n = 4
    perms = P.all_permutations(n)
    w = rng.random(len(perms))
    M = dsm.marginal_matrix(perms, w)
    assert dsm.is_doubly_stochastic(M)
    # Brute force: M[x, k] = P(order[k] == x).
    expected = np.zeros((n, n))
    for p, wi in zip(perms, w / w.sum(), strict=True):
        for k, x in enumerate(p):
            expected[x, k] += wi
    np.testing.assert_allclose(M, expected)
    # Average of permutation matrices.
    np.testing.assert_allclose(M, np.tensordot(w / w.sum(), dsm.permutation_matrix(perms), axes=1))


def test_marginal_matrix_validates_weights():
    with pytest.raises(ValueError, match="shape"):
        dsm.marginal_matrix([[0, 1], [1, 0]], [1.0])
    with pytest.raises(ValueError, match="non-negative"):
        dsm.marginal_matrix([[0, 1], [1, 0]], [1.0, -1.0])
    with pytest.raises(ValueError, match="all be zero"):
        dsm.marginal_matrix([[0, 1], [1, 0]], [0.0, 0.0])
