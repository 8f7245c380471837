"""Profiles as distributions: marginals checked against explicit enumeration of S_n."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rankmodels.aggregation import Profile
from rankmodels.dsm import is_doubly_stochastic
from rankmodels.permutations import inverse
from tests._aggregation_helpers import expanded_distribution, random_ballots


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_marginals_match_enumeration_with_ties_and_truncation(n, rng):
    for _ in range(5):
        ballots = random_ballots(n, rng, pool=4)  # repeated ballots: merging is tested too
        profile = ballots.profile()
        perms, probs = expanded_distribution(ballots)
        ranks = inverse(perms)
        M = np.zeros((n, n))
        for x in range(n):
            for k in range(n):
                M[x, k] = probs[ranks[:, x] == k].sum()
        P = np.array([[probs[ranks[:, x] < ranks[:, y]].sum() for y in range(n)] for x in range(n)])
        np.testing.assert_allclose(profile.positional_matrix, M, atol=1e-12)
        np.testing.assert_allclose(profile.pairwise, P, atol=1e-12)
        np.testing.assert_allclose(profile.first_place, M[:, 0], atol=1e-12)
        assert is_doubly_stochastic(profile.positional_matrix)


def test_raw_ballots_are_merged_into_a_histogram(rng):
    raw = np.array([rng.permutation(4) for _ in range(500)])
    profile = Profile.from_orders(raw)
    assert profile.total == 500
    assert len(profile.weights) == len({tuple(r) for r in raw.tolist()})
    counts = {tuple(o): w for o, w in zip(profile.orders.tolist(), profile.weights, strict=True)}
    for o, w in counts.items():
        assert w == sum(tuple(r) == o for r in raw.tolist())


def test_wide_profiles_merge_without_packing(rng):
    base = np.array([rng.permutation(17) for _ in range(3)])
    profile = Profile.from_orders(np.repeat(base, [2, 3, 4], axis=0))
    assert sorted(profile.weights.tolist()) == [2, 3, 4]


def test_unranked_candidates_share_the_remaining_positions():
    profile = Profile.from_weak_orders([[[0]]], [1], 4)  # "0" then 1, 2, 3 unranked
    np.testing.assert_allclose(profile.positional_matrix[1:, 1:], 1 / 3)
    assert profile.pairwise[0, 1] == 1.0 and profile.pairwise[1, 2] == 0.5
    assert not profile.is_strict


def test_weak_orders_round_trip():
    ballots = [[[2], [0, 3], [1]], [[1], [0], [2], [3]]]
    profile = Profile.from_weak_orders(ballots, [2, 1], ["a", "b", "c", "d"])
    assert sorted(map(str, profile.weak_orders())) == sorted(map(str, ballots))


@pytest.mark.parametrize(
    "ballots, weights, message",
    [
        ([[[0], [0]]], [1], "appears twice"),
        ([[[5]]], [1], "outside"),
        ([[[0]]], [0], "positive"),
        ([[[0]]], [float("nan")], "positive"),
        ([[[0]], [[1]]], [1e308, 1e308], "add up to more than the largest float"),
        ([], [], "at least one ballot"),
    ],
)
def test_invalid_ballots_raise_value_error(ballots, weights, message):
    with pytest.raises(ValueError, match=message):
        Profile.from_weak_orders(ballots, weights, 3)


def test_huge_weights_are_normalised_without_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning may leak
        profile = Profile.from_weak_orders([[[0], [1]], [[1], [0]]], [1e308, 5e307], 2)
        np.testing.assert_allclose(profile.probabilities, [2 / 3, 1 / 3])
        np.testing.assert_allclose(profile.pairwise, [[0, 2 / 3], [1 / 3, 0]])
        np.testing.assert_allclose(profile.positional_matrix[0], [2 / 3, 1 / 3])


def test_constructor_validates_arrays():
    with pytest.raises(ValueError, match="levels"):
        Profile(("a", "b"), np.array([[0, 1]]), np.array([[0, 2]]), np.array([1.0]))
    with pytest.raises(ValueError, match="unique"):
        Profile(("a", "a"), np.array([[0, 1]]), np.array([[0, 1]]), np.array([1.0]))
    with pytest.raises(ValueError, match="permutation"):
        Profile.from_orders(np.array([[0, 0]]))
    with pytest.raises(ValueError, match="unknown candidate"):
        Profile.from_orders(np.array([[0, 1]])).index("z")


def test_ballots_differing_only_in_ties_stay_apart():
    # "0 > 1 > 2" and "0 > 1 = 2" list the same order but are different ballots.
    profile = Profile.from_weak_orders([[[0], [1], [2]], [[0], [1, 2]], [[0], [1], [2]]], None, 3)
    assert sorted(profile.weights.tolist()) == [1.0, 2.0]
    assert profile.pairwise[1, 2] == pytest.approx(2 / 3 + 1 / 6)


def test_dublin_unique_ballots(shared_data):
    from rankmodels.aggregation import read_votes

    path = shared_data / "preflib" / "00001-00000001.soi"
    profile = read_votes(path)
    # Independent count from the raw lines "COUNT: a,b,c": a ballot ranking all but one of
    # the n candidates is the complete ballot with the last one appended (it is forced into
    # last place), so such lines merge with a complete ballot listed elsewhere.
    n = len(profile.candidates)
    total, ballots = 0, set()
    for line in path.read_text().splitlines():
        if line.startswith("#") or ":" not in line:
            continue
        count, ranking = line.split(":")
        ranked = tuple(int(x) for x in ranking.split(","))
        if len(ranked) == n - 1:
            ranked += tuple(set(range(1, n + 1)) - set(ranked))
        total += int(count)
        ballots.add(ranked)
    assert profile.total == total == 43942
    assert profile.weights.size == len(ballots)
