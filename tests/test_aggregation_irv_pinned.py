"""Instant runoff's tolerance on tallies, pinned: tallies that differ only by rounding
(fractional weights, split ballots) tie for last place; a real difference, however small
beside the tallies, does not.

The tolerance is ``1e-9`` times the total weight (module docstring of
:mod:`rankmodels.aggregation.irv`): ``0.1 + 0.2`` and ``0.3`` differ by one unit in the last
place, far below it; ``1e-6`` is far above it.
"""

from __future__ import annotations

import numpy as np

from rankmodels.aggregation import Profile, aggregate
from rankmodels.aggregation.irv import _RTOL, tallies

A, B, C, D = range(4)


def _rankings(result) -> set[tuple[int, ...]]:
    return {tuple(int(x) for x in order) for order in result.ties}


def _rounding_profile(extra: float = 0.0) -> Profile:
    """A: 0.1 + 0.2 first choices (two ballots), B: 0.3 + ``extra``, C: 1."""
    return Profile.from_orders(
        np.array([[A, B, C], [A, C, B], [B, A, C], [C, A, B]]),
        np.array([0.1, 0.2, 0.3 + extra, 1.0]),
    )


def test_tallies_equal_up_to_rounding_tie_for_last_place():
    """A's 0.1 + 0.2 is one ulp above B's 0.3: a tie. Eliminating B first (the higher index,
    listed first) sends 0.3 to A, then C wins; eliminating A first sends 0.1 to B and 0.2
    to C: both orders are optimal."""
    profile = _rounding_profile()
    votes, _ = tallies(profile, np.ones(3, dtype=bool))
    assert 0 < votes[A] - votes[B] < _RTOL * profile.total  # unequal floats, within tolerance
    result = aggregate(profile, "irv")
    assert result.n_optimal == 2
    assert _rankings(result) == {(C, A, B), (C, B, A)}
    first = result.details["rounds"][0]
    assert first.tied == (A, B) and first.eliminated == (B,)
    assert result.ranking.tolist() == [C, A, B]


def test_a_real_difference_below_one_vote_is_not_a_tie():
    """B at 0.300001: 1e-6 above A, far above the tolerance (1.6e-9): B is not tied and A
    goes out first, alone."""
    result = aggregate(_rounding_profile(1e-6), "irv")
    assert result.n_optimal == 1 and result.ranking.tolist() == [C, B, A]
    assert result.details["rounds"][0].tied == ()


def test_split_ballots_give_fractional_tallies_that_tie():
    """A: 0.1 plus half of the ballot "A = D > B > C" (0.4), i.e. 0.1 + 0.2; B: 0.3; D: the
    other half plus 0.5 = 0.7; C: 1. A and B tie for last place up to rounding."""
    ballots = [
        [[A], [B], [C], [D]],
        [[A, D], [B], [C]],
        [[B], [A], [C], [D]],
        [[C], [A], [B], [D]],
        [[D], [A], [B], [C]],
    ]
    profile = Profile.from_weak_orders(ballots, [0.1, 0.4, 0.3, 1.0, 0.5], 4)
    votes, _ = tallies(profile, np.ones(4, dtype=bool))
    assert votes[D] == 0.7 and votes[C] == 1.0
    assert 0 < abs(votes[A] - votes[B]) < _RTOL * profile.total
    result = aggregate(profile, "irv")
    first = result.details["rounds"][0]
    assert first.tied == (A, B)
    assert {order[-1] for order in _rankings(result)} == {A, B}


def test_batch_elimination_orders_near_equal_tallies_every_way():
    """A (0.1 + 0.2) and B (0.3) together are below C (5): one batch. Within it equal votes
    (up to rounding) are ordered every way: two optimal rankings; with B 1e-6 above A, one
    (B above A)."""
    orders = np.array([[A, B, C], [A, C, B], [B, A, C], [C, A, B]])
    tied = Profile.from_orders(orders, np.array([0.1, 0.2, 0.3, 5.0]))
    result = aggregate(tied, "irv", batch_elimination=True)
    first = result.details["rounds"][0]
    assert first.batch and set(first.eliminated) == {A, B}
    assert result.n_optimal == 2 and _rankings(result) == {(C, A, B), (C, B, A)}
    apart = Profile.from_orders(orders, np.array([0.1, 0.2, 0.300001, 5.0]))
    result = aggregate(apart, "irv", batch_elimination=True)
    assert result.details["rounds"][0].batch
    assert result.n_optimal == 1 and result.ranking.tolist() == [C, B, A]


def test_batch_needs_fewer_votes_together_than_the_next_one():
    """A (1) and B (2) together tie with C (3), and A, B, C (6) with D (6): not fewer, so
    no batch; one at a time. With D at 6.5, A, B and C go together."""
    orders = np.array([[A, B, C, D], [B, A, C, D], [C, A, B, D], [D, C, A, B]])
    profile = Profile.from_orders(orders, np.array([1.0, 2.0, 3.0, 6.0]))
    result = aggregate(profile, "irv", batch_elimination=True)
    first = result.details["rounds"][0]
    assert not first.batch and first.eliminated == (A,)
    profile = Profile.from_orders(orders, np.array([1.0, 2.0, 3.0, 6.5]))
    first = aggregate(profile, "irv", batch_elimination=True).details["rounds"][0]
    assert first.batch and first.eliminated == (C, B, A)


def test_a_ballot_ranking_nobody_is_exhausted_even_with_two_candidates():
    """Two candidates: "A = B" ranks nobody (its last tie group is all of it): exhausted
    from the start, not split between them."""
    profile = Profile.from_weak_orders([[[A], [B]], [[A, B]]], [2.0, 1.0], 2)
    votes, exhausted = tallies(profile, np.ones(2, dtype=bool))
    assert votes.tolist() == [2.0, 0.0] and exhausted == 1.0


def test_the_state_limit_is_the_number_of_states_explored(monkeypatch):
    """Four candidates in a cycle, all tied in the first round: exploring every
    tie-breaking visits N = 15 sets of continuing candidates; a limit of N suffices (the
    count is exact), a limit of N - 1 does not (a lower bound only)."""
    cyclic = np.array([[A, B, C, D], [B, C, D, A], [C, D, A, B], [D, A, B, C]])
    profile = Profile.from_orders(cyclic)
    full = aggregate(profile, "irv")
    n_states = full.details["states"]
    assert full.n_optimal == 12 and n_states == 15
    monkeypatch.setattr("rankmodels.aggregation.irv.MAX_STATES", n_states)
    assert aggregate(profile, "irv").n_optimal == 12
    monkeypatch.setattr("rankmodels.aggregation.irv.MAX_STATES", n_states - 1)
    assert aggregate(profile, "irv").n_optimal is None


def test_a_lone_candidate_without_votes_joins_the_batch():
    """A has no first choices, B 1, C 1.5, D 10: A, B and C together (2.5) are below D, so
    they go out as one batch; A's zero alone does not make a round of its own."""
    orders = np.array([[B, A, C, D], [C, A, B, D], [D, C, B, A]])
    profile = Profile.from_orders(orders, np.array([1.0, 1.5, 10.0]))
    first = aggregate(profile, "irv", batch_elimination=True).details["rounds"][0]
    assert first.votes.tolist() == [0.0, 1.0, 1.5, 10.0]
    assert first.batch and first.eliminated == (C, B, A)


def test_a_pairwise_margin_of_rounding_size_is_a_tie_in_the_smith_set():
    """A over B: 0.1 + 0.2; B over A: 0.3 -- equal up to rounding, so A and B are not
    beaten by each other and form the Smith set together; both beat C."""
    from rankmodels.aggregation.irv import majority_components

    orders = np.array([[A, B, C], [A, C, B], [B, A, C]])
    profile = Profile.from_orders(orders, np.array([0.1, 0.2, 0.3]))
    assert 0 < abs(profile.pairwise[B, A] - profile.pairwise[A, B]) < 1e-15  # unequal floats
    assert majority_components(profile) == [[A, B], [C]]
    result = aggregate(profile, "smith-irv")
    assert result.details["smith_set"] == [A, B] and result.n_optimal == 2


def test_ties_chain_candidates_into_one_smith_set():
    """A > C > B and C > B > A: A ties B and C, C beats B. Not being beaten is what links
    candidates: B reaches A by the tie, A reaches C by the other, so all three form the
    Smith set (reading "beats" instead would leave C alone on top)."""
    from rankmodels.aggregation.irv import majority_components

    profile = Profile.from_orders(np.array([[A, C, B], [C, B, A]]))
    assert majority_components(profile) == [[A, B, C]]
