"""Rule-specific behaviour: Kemeny's DP, heuristic and bound, the Condorcet methods' details.

Every rule's optimal set and count against enumeration over S_n is in
``test_aggregation_registry.py``; the counting machinery in ``test_aggregation_counting.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankmodels.aggregation import RULES, Profile, aggregate, condorcet
from rankmodels.aggregation.condorcet import condorcet_winner, schulze_strengths
from rankmodels.aggregation.distance import kemeny, kemeny_cost
from tests._aggregation_helpers import (
    Ballots,
    expanded_distribution,
    margins,
    optimal_rankings,
    pairwise,
    random_ballots,
    ranked_pairs_tie_breakings,
)
from tests._aggregation_helpers import schulze_strengths as reference_strengths

CYCLE = Ballots([[[0], [1], [2]], [[1], [2], [0]], [[2], [0], [1]]], [1, 1, 1], 3)


def test_kemeny_ties_on_a_condorcet_cycle():
    # Theorem 9 / proposition 5: the 3-cycle has three optimal rankings, all reported.
    result = aggregate(CYCLE.profile(), "kemeny")
    assert result.n_optimal == 3 and not result.unique
    assert {tuple(t) for t in result.ties} == {(0, 1, 2), (1, 2, 0), (2, 0, 1)}


def test_kemeny_counts_ties_beyond_the_listing_cap():
    profile = Profile.from_orders(np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]))
    result = aggregate(profile, "kemeny", max_ties=10)
    assert result.n_optimal == math.factorial(6) and len(result.ties) == 10


def test_kemeny_dp_without_splitting_agrees_with_components(rng):
    for _ in range(5):
        ballots = random_ballots(7, rng, m=5)
        split = aggregate(ballots.profile(), "kemeny")
        whole = kemeny(ballots.profile(), split=False)
        assert {tuple(t) for t in split.ties} == {tuple(t) for t in whole.ties}
        assert split.n_optimal == whole.n_optimal
        comps = split.details["components"]
        assert sorted(x for c in comps for x in c) == list(range(7))
        # components are ordered: every member of an earlier one beats every later one
        P = pairwise(*expanded_distribution(ballots))
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
    assert not heur.exact and heur.n_optimal is None and heur.n_optimal_at_least == 1
    assert heur.bound < heur.objective
    assert heur.bound <= exact.objective + 1e-12 <= heur.objective + 1e-12
    assert heur.objective <= kemeny_cost(profile.pairwise, borda.ranking) + 1e-12
    assert exact.exact and exact.bound is None and exact.n_optimal == 1


def test_kemeny_heuristic_that_meets_its_bound_is_optimal():
    # Two opposite ballots: every pair is a coin flip, every ranking costs the bound 15 / 2.
    profile = Profile.from_orders(np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]))
    result = aggregate(profile, "kemeny", max_exact=3, max_ties=10)
    assert result.exact and result.bound == pytest.approx(result.objective) == 7.5
    assert result.n_optimal == math.factorial(6) and len(result.ties) == 10


def test_kemeny_heuristic_uncertain_on_a_cycle():
    result = aggregate(CYCLE.profile(), "kemeny", max_exact=2)
    assert not result.exact and result.n_optimal is None and not result.unique
    # bound = three pairs at min(1/3, 2/3); the optimum 4/3 lies between it and the objective
    assert result.bound == pytest.approx(1.0) and result.objective == pytest.approx(4 / 3)


def test_kemeny_heuristic_when_certified_finds_every_optimum(rng):
    """With components above max_exact, a certified heuristic's optimal set and count
    (the linear extensions of the strict majorities) equal enumeration."""
    certified = 0
    for trial in range(40):
        ballots = random_ballots(5, rng, m=2 + trial % 3, pool=2 + trial % 2, max_weight=1)
        result = aggregate(ballots.profile(), "kemeny", max_exact=2, max_ties=500)
        if result.exact:
            certified += 1
            expected = optimal_rankings("kemeny", ballots)
            assert {tuple(t) for t in result.ties} == expected
            assert result.n_optimal == len(expected)
        else:  # (the uncertain case: test_kemeny_heuristic_uncertain_on_a_cycle)
            assert result.n_optimal is None
    assert certified >= 5


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
    with pytest.raises(ValueError, match="rule 'scores' needs a score vector"):
        aggregate(profile, "scores")
    with pytest.raises(ValueError, match="unknown rule 'dictator'; expected one of: borda"):
        aggregate(profile, "dictator")
    with pytest.raises(ValueError, match="max_ties must be at least 1"):
        aggregate(profile, "borda", max_ties=0)


def test_schulze_strengths_match_path_enumeration(rng):
    for _ in range(20):
        ballots = random_ballots(5, rng, m=7)
        D = margins(*expanded_distribution(ballots))
        np.testing.assert_allclose(schulze_strengths(ballots.profile()), reference_strengths(D))


def test_copeland_scores_are_wins_plus_half_ties():
    # 0 beats 1 and 2; 1 and 2 tie; 3 loses to everyone.
    profile = Profile.from_orders(np.array([[0, 1, 2, 3], [0, 2, 1, 3]]))
    np.testing.assert_allclose(aggregate(profile, "copeland").scores, [3, 1.5, 1.5, 0])


def test_ranked_pairs_locks_by_margin_and_breaks_cycles():
    # 40% a>b>c, 35% b>c>a, 25% c>a>b: margins a>b .30, b>c .50, c>a .20 -> lock b>c, a>b.
    profile = Profile.from_orders(np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]), [40, 35, 25])
    result = aggregate(profile, "ranked-pairs")
    assert result.unique and result.ranking.tolist() == [0, 1, 2]
    assert aggregate(CYCLE.profile(), "ranked-pairs").n_optimal == 3


def test_ranked_pairs_search_out_of_budget_gives_a_lower_bound(monkeypatch, rng):
    """When the tie-breakings are too many to search, the outcomes found are genuine and the
    count says 'at least'."""
    monkeypatch.setattr(condorcet, "MAX_LOCK_SEARCH", 1)
    seen = 0
    for _ in range(30):  # three strict ballots: every majority has margin 1/3, cycles abound
        ballots = Ballots([[[int(x)] for x in rng.permutation(4)] for _ in range(3)], [1] * 3, 4)
        if ranked_pairs_tie_breakings(margins(*expanded_distribution(ballots))) > 5000:
            continue
        result = aggregate(ballots.profile(), "ranked-pairs", max_ties=500)
        expected = optimal_rankings("ranked-pairs", ballots)
        assert {tuple(t) for t in result.ties} <= expected
        assert result.n_optimal_at_least <= len(expected)
        if not result.details["tie_breakings_complete"]:
            seen += 1
            assert result.n_optimal is None
    assert seen >= 3


@pytest.mark.parametrize("rule", ["kemeny", "copeland", "schulze", "ranked-pairs"])
def test_condorcet_methods_put_the_condorcet_winner_first(rule, rng):
    seen = 0
    for _ in range(40):
        ballots = random_ballots(5, rng, m=5)
        D = margins(*expanded_distribution(ballots))
        winners = [x for x in range(5) if all(D[x, y] > 0 for y in range(5) if y != x)]
        assert condorcet_winner(ballots.profile()) == (winners[0] if winners else None)
        if winners:
            seen += 1
            assert all(t[0] == winners[0] for t in aggregate(ballots.profile(), rule).ties)
    assert seen > 5


@pytest.mark.parametrize(
    "rule",
    [r for r in RULES.names if r not in ("scores", "k-approval") and RULES[r].kind != "counted"],
)  # a count (stv) breaks its ties at random by seed: one outcome, not the tied set
def test_every_rule_is_neutral(rule, rng):
    ballots = random_ballots(5, rng, m=6)
    relabel = rng.permutation(5)  # candidate x becomes relabel[x]
    renamed = Ballots(
        [[[int(relabel[x]) for x in g] for g in b] for b in ballots.groups], ballots.weights, 5
    )
    a, b = aggregate(ballots.profile(), rule), aggregate(renamed.profile(), rule)
    assert {tuple(relabel[t]) for t in a.ties} == {tuple(t) for t in b.ties}


def test_large_profiles_do_not_hit_recursion_limits(rng):
    profile = Profile.from_orders(np.array([rng.permutation(1500) for _ in range(3)]))
    for rule in ("borda", "copeland", "mode"):
        result = aggregate(profile, rule, max_ties=3)
        assert sorted(result.ranking.tolist()) == list(range(1500))
    # three ballots: 44,850 majority pairs, all of margin 1/3, mostly on cycles
    profile = Profile.from_orders(np.array([rng.permutation(300) for _ in range(3)]))
    result = aggregate(profile, "ranked-pairs", max_ties=3)
    assert sorted(result.ranking.tolist()) == list(range(300))
    assert not result.details["tie_breakings_complete"] and result.n_optimal is None


@pytest.mark.slow
def test_kemeny_count_beyond_2_to_62_is_a_lower_bound():
    # 21 candidates all tied (two opposite ballots): 21! > 2^62 optimal rankings
    profile = Profile.from_orders(np.array([np.arange(21), np.arange(21)[::-1]]))
    result = aggregate(profile, "kemeny", max_exact=21, max_ties=3)
    assert result.exact and result.n_optimal is None
    assert result.n_optimal_at_least == 2**62 < math.factorial(21)
