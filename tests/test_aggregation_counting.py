"""Counting and listing optimal rankings: against enumeration of S_n, and the lower bounds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rankmodels.aggregation import counting
from rankmodels.aggregation.counting import (
    Count,
    combine_blocks,
    count_linear_extensions,
    count_perfect_matchings,
    linear_extensions,
    perfect_matchings,
    transitive_closure,
)
from rankmodels.permutations import all_permutations, inverse


def random_partial_order(n: int, rng: np.random.Generator, density: float) -> np.ndarray:
    """Edges of a random DAG along a hidden order, transitively closed."""
    hidden = rng.permutation(n)
    before = np.zeros((n, n), dtype=bool)
    for i, j in itertools.combinations(range(n), 2):
        before[hidden[i], hidden[j]] = rng.random() < density
    return transitive_closure(before)


def extensions_by_enumeration(before: np.ndarray) -> set[tuple[int, ...]]:
    perms = all_permutations(before.shape[0])
    ranks = inverse(perms)
    xs, ys = np.nonzero(before)
    return {tuple(p) for p in perms[np.all(ranks[:, xs] < ranks[:, ys], axis=1)].tolist()}


def matchings_by_enumeration(adj: np.ndarray) -> set[tuple[int, ...]]:
    n = adj.shape[0]
    return {p for p in itertools.permutations(range(n)) if all(adj[p[k], k] for k in range(n))}


@pytest.mark.parametrize("n", [1, 2, 4, 6])
def test_linear_extensions_are_listed_and_counted_exactly(n, rng):
    for density in (0.0, 0.2, 0.5, 0.9):
        before = random_partial_order(n, rng, density)
        expected = extensions_by_enumeration(before)
        listed = linear_extensions(before, limit=10_000)
        assert {tuple(t) for t in listed} == expected and len(listed) == len(expected)
        assert count_linear_extensions(before) == Count(len(expected))
        # the first extension places, at each step, the available candidate of highest preference
        preference = rng.normal(size=n)
        first = linear_extensions(before, preference, limit=1)[0]
        placed: list[int] = []
        for x in first:
            free = [
                y
                for y in range(n)
                if y not in placed and set(np.flatnonzero(before[:, y]).tolist()) <= set(placed)
            ]
            assert x == max(free, key=lambda y: (preference[y], -y))
            placed.append(int(x))


@pytest.mark.parametrize("n", [1, 3, 5, 6])
def test_perfect_matchings_are_listed_and_counted_exactly(n, rng):
    for density in (0.3, 0.5, 0.8, 1.0):
        for _ in range(5):
            adj = rng.random((n, n)) < density
            expected = matchings_by_enumeration(adj)
            listed = perfect_matchings(adj, limit=10_000)
            assert {tuple(t) for t in listed} == expected and len(listed) == len(expected)
            assert count_perfect_matchings(adj) == Count(len(expected))
            if expected:  # position by position, the lowest candidate that completes one
                assert tuple(listed[0]) == min(expected)


def test_large_blocks_are_counted_by_listing_exactly_or_as_a_lower_bound(monkeypatch):
    monkeypatch.setattr(counting, "MAX_COUNT_SIZE", 3)
    # two chains 0 > 1 > 2 and 3 > 4 > 5 interleave in C(6, 3) = 20 ways, one block of 6
    chains = np.zeros((6, 6), dtype=bool)
    chains[0, 1] = chains[1, 2] = chains[3, 4] = chains[4, 5] = True
    chains = transitive_closure(chains)
    assert count_linear_extensions(chains, limit=30) == Count(math.comb(6, 3))
    assert count_linear_extensions(chains, limit=10) == Count(10, exact=False)
    derangements = ~np.eye(5, dtype=bool)  # 44 perfect matchings, one block of 5
    assert count_perfect_matchings(derangements, limit=100) == Count(44)
    assert count_perfect_matchings(derangements, limit=10) == Count(10, exact=False)
    # blocks within the size are still counted exactly: {0, 1} above {2, 3}
    layered = np.zeros((4, 4), dtype=bool)
    layered[:2, 2:] = True
    assert count_linear_extensions(layered, limit=1) == Count(4)


def test_unconstrained_blocks_of_any_size_are_counted_exactly():
    assert count_linear_extensions(np.zeros((25, 25), dtype=bool), limit=5) == Count(
        math.factorial(25)
    )
    assert count_perfect_matchings(np.ones((25, 25), dtype=bool), limit=5) == Count(
        math.factorial(25)
    )


def test_counts_multiply_over_independent_blocks():
    # candidates 0..2 all above 3..6: 3! * 4! orders, counted per incomparability block
    before = np.zeros((7, 7), dtype=bool)
    before[:3, 3:] = True
    assert count_linear_extensions(before) == Count(math.factorial(3) * math.factorial(4))
    assert Count(2) * Count(3, exact=False) == Count(6, exact=False)
    assert Count(2) + Count(3) == Count(5)


def test_no_recursion_limit_and_lazy_products():
    big = 3000
    assert len(linear_extensions(np.zeros((big, big), dtype=bool), limit=3)) == 3
    huge = [
        (np.arange(i * 20, i * 20 + 20), itertools.permutations(range(i * 20, i * 20 + 20)))
        for i in range(100)
    ]  # 100 blocks of 20! members each
    orders = combine_blocks(2000, huge, limit=5)
    assert len(orders) == 5 and len({tuple(o) for o in orders}) == 5
    assert all(sorted(o.tolist()) == list(range(2000)) for o in orders)
    # the last block varies fastest
    assert all(np.array_equal(o[:1980], np.arange(1980)) for o in orders)


def test_combine_blocks_is_the_lexicographic_product():
    blocks = [([0, 2], [[0, 1], [1, 0]]), ([1], [[2]]), ([3, 4], [[3, 4], [4, 3]])]
    orders = [tuple(o) for o in combine_blocks(5, blocks, limit=10)]
    assert orders == [(0, 2, 1, 3, 4), (0, 2, 1, 4, 3), (1, 2, 0, 3, 4), (1, 2, 0, 4, 3)]
    assert [tuple(o) for o in combine_blocks(5, blocks, limit=3)] == orders[:3]
