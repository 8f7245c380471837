"""Rules against brute force over S_n: every optimal ranking, nothing else."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankmodels.aggregation import RULES, Profile, aggregate
from rankmodels.aggregation.condorcet import condorcet_winner, schulze_strengths
from rankmodels.aggregation.distance import kemeny, kemeny_cost
from rankmodels.aggregation.positional import score_vector
from rankmodels.permutations import footrule_distance, inverse, kendall_distance
from tests._aggregation_helpers import expanded_distribution, random_weak_profile


def optimal_set(losses: np.ndarray, perms: np.ndarray) -> set[tuple[int, ...]]:
    best = losses.min()
    return {tuple(p) for p in perms[losses <= best + 1e-9].tolist()}


def expected_losses(profile: Profile, distance) -> tuple[np.ndarray, np.ndarray]:
    """``E_{sigma' ~ P} d(sigma, sigma')`` for every ``sigma`` in S_n (brute force)."""
    perms, probs = expanded_distribution(profile)
    ranks = inverse(perms)
    support = probs > 0
    d = distance(ranks[:, None, :], ranks[None, support, :])
    return d @ probs[support], perms


@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize(
    "rule, distance",
    [
        ("kemeny", kendall_distance),
        ("footrule", footrule_distance),
        ("mode", lambda a, b: np.any(a != b, axis=-1).astype(float)),
    ],
)
def test_distance_rules_find_every_minimiser(n, rule, distance, rng):
    for trial in range(6):
        profile = random_weak_profile(n, rng, m=4 + trial)
        losses, perms = expected_losses(profile, distance)
        result = aggregate(profile, rule)
        assert {tuple(t.tolist()) for t in result.ties} == optimal_set(losses, perms)
        assert result.n_optimal == len(result.ties)
        assert result.objective == pytest.approx(losses.min(), abs=1e-9)


def test_kemeny_ties_on_a_condorcet_cycle():
    # Theorem 9 / proposition 5: the 3-cycle has three optimal rankings, all reported.
    profile = Profile.from_orders(np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]))
    result = aggregate(profile, "kemeny")
    assert result.n_optimal == 3 and not result.unique
    assert {tuple(t) for t in result.ties} == {(0, 1, 2), (1, 2, 0), (2, 0, 1)}


def test_kemeny_counts_ties_beyond_the_listing_cap():
    profile = Profile.from_orders(np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]))
    result = aggregate(profile, "kemeny", max_ties=10)
    assert result.n_optimal == math.factorial(6) and len(result.ties) == 10


def test_kemeny_dp_without_splitting_agrees_with_components(rng):
    for _ in range(5):
        profile = random_weak_profile(7, rng, m=5)
        split = aggregate(profile, "kemeny")
        whole = kemeny(profile, split=False)
        assert {tuple(t) for t in split.ties} == {tuple(t) for t in whole.ties}
        assert split.n_optimal == whole.n_optimal
        comps = split.details["components"]
        assert sorted(x for c in comps for x in c) == list(range(7))
        # components are ordered: every member of an earlier one beats every later one
        P = profile.pairwise
        for i, a in enumerate(comps):
            for b in comps[i + 1 :]:
                assert np.all(P[np.ix_(a, b)] > 0.5)


def test_kemeny_heuristic_is_bounded_and_not_worse_than_borda(rng):
    orders = np.array([rng.permutation(9) for _ in range(15)])
    profile = Profile.from_orders(orders)
    exact = aggregate(profile, "kemeny")
    heur = aggregate(profile, "kemeny", max_exact=3)
    borda = aggregate(profile, "borda")
    assert max(len(c) for c in exact.details["components"]) > 3  # the heuristic is used
    assert not heur.exact
    assert heur.bound <= exact.objective + 1e-12 <= heur.objective + 1e-12
    assert heur.objective <= kemeny_cost(profile.pairwise, borda.ranking) + 1e-12
    assert exact.exact and exact.bound is None


@pytest.mark.parametrize("rule", ["borda", "plurality", "antiplurality", "log", "squared"])
def test_positional_ties_are_the_minimisers_of_eq_4_5(rule, rng):
    # sigma* = argmin_sigma sum_x f_P(x) sigma(x) over all of S_n (eq. 4.5), ties included.
    n = 4
    for m in (1, 2, 3, 6):
        profile = random_weak_profile(n, rng, m=m)
        h = score_vector(rule, n)
        perms, probs = expanded_distribution(profile)
        ranks = inverse(perms)
        f = np.einsum("s,sx->x", probs, h[ranks])  # E[h(sigma(x))] by enumeration
        losses = ranks @ f
        result = aggregate(profile, rule)
        np.testing.assert_allclose(result.scores, f, atol=1e-12)
        assert {tuple(t) for t in result.ties} == optimal_set(losses, perms)


def test_custom_scores_and_k_approval():
    profile = Profile.from_orders(np.array([[0, 1, 2, 3], [1, 2, 0, 3]]), [2, 1])
    custom = aggregate(profile, "scores", scores=[3, 2, 1, 0])
    np.testing.assert_allclose(custom.scores, aggregate(profile, "borda").scores)
    two = aggregate(profile, "k-approval", k=2)
    np.testing.assert_allclose(two.scores, [2 / 3, 1.0, 1 / 3, 0.0])
    with pytest.raises(ValueError, match="k-approval"):
        aggregate(profile, "k-approval")
    with pytest.raises(ValueError, match="needs 4 values"):
        aggregate(profile, "scores", scores=[1, 0])
    with pytest.raises(ValueError, match="unknown rule"):
        aggregate(profile, "dictator")


def brute_schulze_winners(D: np.ndarray) -> set[int]:
    """Schulze winners from all simple paths (independent of Floyd-Warshall)."""
    import itertools

    n = D.shape[0]
    p = np.zeros((n, n))
    for x, y in itertools.permutations(range(n), 2):
        others = [z for z in range(n) if z not in (x, y)]
        for r in range(len(others) + 1):
            for mid in itertools.permutations(others, r):
                path = (x, *mid, y)
                p[x, y] = max(p[x, y], min(max(D[a, b], 0) for a, b in itertools.pairwise(path)))
    return {x for x in range(n) if all(p[x, y] >= p[y, x] for y in range(n) if y != x)}


def test_schulze_matches_path_enumeration(rng):
    for _ in range(20):
        profile = random_weak_profile(5, rng, m=7)
        D = profile.pairwise - profile.pairwise.T
        D[np.abs(D) < 1e-12] = 0.0  # the documented margin tolerance (rounding noise)
        p = schulze_strengths(profile)
        assert set(aggregate(profile, "schulze").winners()) == brute_schulze_winners(D)
        assert np.all(p >= np.maximum(D, 0) - 1e-12)


def test_copeland_scores_are_wins_plus_half_ties():
    # 0 beats 1 and 2; 1 and 2 tie; 3 loses to everyone.
    profile = Profile.from_orders(np.array([[0, 1, 2, 3], [0, 2, 1, 3]]))
    np.testing.assert_allclose(aggregate(profile, "copeland").scores, [3, 1.5, 1.5, 0])


def test_ranked_pairs_locks_by_margin_and_breaks_cycles():
    # 40% a>b>c, 35% b>c>a, 25% c>a>b: margins a>b .30, b>c .50, c>a .20 -> lock b>c, a>b.
    profile = Profile.from_orders(np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]), [40, 35, 25])
    result = aggregate(profile, "ranked-pairs")
    assert result.unique and result.ranking.tolist() == [0, 1, 2]
    cycle = Profile.from_orders(np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]))
    assert aggregate(cycle, "ranked-pairs").n_optimal == 3


@pytest.mark.parametrize("rule", ["kemeny", "copeland", "schulze", "ranked-pairs"])
def test_condorcet_methods_put_the_condorcet_winner_first(rule, rng):
    seen = 0
    for _ in range(40):
        profile = random_weak_profile(5, rng, m=5)
        cw = condorcet_winner(profile)
        if cw is not None:
            seen += 1
            assert all(t[0] == cw for t in aggregate(profile, rule).ties)
    assert seen > 5


@pytest.mark.parametrize("rule", [r for r in RULES if r not in ("scores", "k-approval")])
def test_every_rule_returns_permutations_and_is_neutral(rule, rng):
    profile = random_weak_profile(5, rng, m=6)
    relabel = rng.permutation(5)  # candidate x becomes relabel[x]
    ballots = [[[int(relabel[x]) for x in g] for g in b] for b in profile.weak_orders()]
    renamed = Profile.from_weak_orders(ballots, profile.weights, 5)
    a, b = aggregate(profile, rule), aggregate(renamed, rule)
    assert {tuple(relabel[t]) for t in a.ties} == {tuple(t) for t in b.ties}
    for t in a.ties:
        assert sorted(t.tolist()) == list(range(5))


def test_linear_extensions_are_counted_and_listed_exactly(rng):
    from rankmodels.aggregation.result import count_linear_extensions, linear_extensions
    from rankmodels.permutations import all_permutations

    perms = all_permutations(5)
    for _ in range(10):
        # a random strict partial order: edges of a random DAG along a hidden order
        hidden = rng.permutation(5)
        before = np.zeros((5, 5), dtype=bool)
        for i in range(5):
            for j in range(i + 1, 5):
                before[hidden[i], hidden[j]] = rng.random() < 0.3
        ranks = inverse(perms)
        xs, ys = np.nonzero(before)
        ok = np.all(ranks[:, xs] < ranks[:, ys], axis=1)
        listed = {tuple(t) for t in linear_extensions(before, limit=200)}
        assert listed == {tuple(p) for p in perms[ok].tolist()}
        assert count_linear_extensions(before) == ok.sum()
