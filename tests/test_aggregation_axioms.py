"""Axiom margins: tables 4.1 and 4.2 of the dissertation, tightness by brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankmodels.aggregation import Aggregation, Profile, aggregate, read_votes
from rankmodels.aggregation.axioms import (
    majority_winner,
    pareto_pairs,
    positional_axioms,
    profile_axiom_report,
)
from rankmodels.aggregation.condorcet import condorcet_winner
from rankmodels.aggregation.counting import Count
from rankmodels.aggregation.rules import score_vector
from rankmodels.aggregation.violation_search import (
    positional_violation,
    random_profile,
    search_violation,
)

NS = range(3, 11)

# Table 4.1 as printed in the dissertation: (Omega_h, omega_h, omega^1_h) as functions of n.
TABLE_4_1 = {
    "borda": lambda n: (n - 1, 1, 1),
    "plurality": lambda n: (1, 0, 1),
    "antiplurality": lambda n: (1, 0, 0),
    "log": lambda n: (math.log(n), math.log(n / (n - 1)), math.log(2)),
    "squared": lambda n: (n**2 - 1, 3, 3),
}

# Table 4.2 as printed: (epsilon for IIA / Condorcet, epsilon for majority).
TABLE_4_2 = {
    "borda": lambda n: (1 / 2 - 1 / n, 1 / 2 - 1 / n),
    "plurality": lambda n: (1 / 2, 0),
    "antiplurality": lambda n: (1 / 2, 1 / 2),
    "log": lambda n: (
        math.log(n) / (2 * math.log(n**2 / (n - 1))),
        math.log(n) / (2 * math.log(n**2 / (n - 1))),
    ),
    "squared": lambda n: ((n**2 - 4) / (2 * (n**2 + 2)), (n**2 - 4) / (2 * (n**2 + 2))),
}


@pytest.mark.parametrize("rule", TABLE_4_1)
@pytest.mark.parametrize("n", NS)
def test_table_4_1(rule, n):
    ax = positional_axioms(score_vector(rule, n))
    assert (ax.Omega, ax.omega, ax.omega1) == pytest.approx(TABLE_4_1[rule](n), abs=1e-12)


@pytest.mark.parametrize("rule", ["borda", "plurality", "antiplurality", "squared"])
@pytest.mark.parametrize("n", NS)
def test_table_4_2(rule, n):
    ax = positional_axioms(score_vector(rule, n))
    iia, maj = TABLE_4_2[rule](n)
    assert ax.eps_iia == pytest.approx(iia, abs=1e-12)
    assert ax.eps_strong_condorcet == pytest.approx(iia, abs=1e-12)
    assert ax.eps_majority == pytest.approx(maj, abs=1e-12)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_table_4_2_log_row_is_a_misprint(n):
    """The printed log-rule entries are not the thresholds: between the true threshold and
    the printed one the brute force finds no violation, so the printed value is not tight.
    (Propositions 14 and 19 applied to the table-4.1 margins give log(n-1) / (2 log(n^2/(n-1)))
    and log(n/2) / (2 log(2n)); the table prints log(n) / (2 log(n^2/(n-1))) for both.)"""
    h = score_vector("log", n)
    ax = positional_axioms(h)
    printed_iia, printed_maj = TABLE_4_2["log"](n)
    for axiom, ours, printed in [
        ("strong-condorcet", ax.eps_strong_condorcet, printed_iia),
        ("majority", ax.eps_majority, printed_maj),
    ]:
        assert ours < printed
        assert positional_violation(h, axiom, (ours + printed) / 2) is None
        assert positional_violation(h, axiom, ours - 1e-4) is not None


def assert_tight(h: np.ndarray, delta: float = 1e-4) -> None:
    ax = positional_axioms(h)
    for axiom, eps in [
        ("strong-condorcet", ax.eps_strong_condorcet),
        ("iia", ax.eps_iia),
        ("majority", ax.eps_majority),
    ]:
        if eps > 0:  # just below the threshold: a violating distribution exists
            assert positional_violation(h, axiom, eps - delta) is not None, (axiom, h)
        if eps < 0.5:  # just above: no distribution on S_n violates it
            assert positional_violation(h, axiom, eps + delta) is None, (axiom, h)


@pytest.mark.parametrize("rule", ["borda", "plurality", "antiplurality", "log", "squared"])
@pytest.mark.parametrize("n", [3, 4])
def test_thresholds_are_tight_for_table_rules(rule, n):
    assert_tight(score_vector(rule, n))


def test_thresholds_are_tight_for_any_score_vector(rng):
    for trial in range(24):
        n = int(rng.integers(2, 5))
        h = np.round(rng.normal(size=n), 2)
        if trial % 3 == 0:
            h = np.sort(h)[::-1]
        elif trial % 3 == 1:
            h = np.sort(h)
        assert_tight(h)


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["borda", "log", "squared"])
def test_thresholds_are_tight_on_s5(rule):
    assert_tight(score_vector(rule, 5))


def test_pareto_iff_strictly_decreasing(rng):
    for h in ([3, 2, 1], [1, 1, 0], [2, 0, 1], [0, 1, 2], [5, 4, 4, 1], [9, 7, 2, 0]):
        h = np.asarray(h, dtype=float)
        broken = positional_violation(h, "pareto", 0.5) is not None
        assert positional_axioms(h).pareto == (not broken) == bool(np.all(np.diff(h) < 0))


def _position(scores: np.ndarray, x: int) -> int:
    return int(np.sum(scores > scores[x] + 1e-12))


def monotonicity_broken(h: np.ndarray, rng: np.random.Generator, trials: int = 300) -> bool:
    """Random search: move x up in one ballot (others keep their relative order)."""
    n = h.size
    for _ in range(trials):
        profile = random_profile(n, rng, support=4)
        j = int(rng.integers(profile.orders.shape[0]))
        sigma1 = profile.orders[j]
        i = int(rng.integers(1, n))
        k = int(rng.integers(0, i))
        x = int(sigma1[i])
        sigma2 = np.insert(np.delete(sigma1, i), k, x)
        delta = profile.probabilities[j] * rng.uniform(0.1, 1.0)
        w = np.append(profile.probabilities, delta)
        w[j] -= delta
        moved = Profile.from_orders(np.vstack([profile.orders, sigma2]), w)
        before = _position(aggregate(profile, "scores", scores=h).scores, x)
        after = _position(aggregate(moved, "scores", scores=h).scores, x)
        if after > before:
            return True
    return False


def test_monotonicity_iff_non_increasing(rng):
    for h in ([2, 1, 0], [1, 1, 0], [1, 0, 0], [0, 1, 0], [2, 0, 1]):
        h = np.asarray(h, dtype=float)
        assert positional_axioms(h).monotonicity == (not monotonicity_broken(h, rng))


def test_consistency_always(rng):
    for h in ([2, 1, 0], [0, 1, 0], [1, 3, 2]):
        for _ in range(100):
            a, b = random_profile(3, rng, 3), random_profile(3, rng, 3)
            wa = aggregate(a, "scores", scores=h)
            wb = aggregate(b, "scores", scores=h)
            if wa.unique and wb.unique and wa.ranking[0] == wb.ranking[0]:
                mix = Profile.from_orders(
                    np.vstack([a.orders, b.orders]),
                    np.concatenate([a.probabilities, b.probabilities]) / 2,
                )
                assert aggregate(mix, "scores", scores=h).winners() == [wa.ranking[0]]
    assert positional_axioms(np.array([1.0, 3.0, 2.0])).consistency


@pytest.mark.parametrize("n", range(3, 9))
def test_borda_minimises_the_iia_margin_theorem_11(n, rng):
    borda = positional_axioms(score_vector("borda", n)).eps_iia
    for _ in range(50):
        h = np.cumsum(rng.exponential(size=n))[::-1]  # strictly decreasing (Pareto)
        assert positional_axioms(h).eps_iia >= borda - 1e-12


def test_exact_majority_and_condorcet():
    assert positional_axioms(score_vector("plurality", 5)).majority
    assert not positional_axioms(score_vector("borda", 5)).majority
    assert not positional_axioms(score_vector("borda", 3)).condorcet  # proposition 20
    assert positional_axioms(score_vector("borda", 2)).condorcet
    with pytest.raises(ValueError, match="at least 2"):
        positional_axioms(np.array([1.0]))


# ---------------------------------------------------------------- report on one profile
def test_report_on_the_sample(repo_data):
    profile = read_votes(repo_data / "votes.csv")
    plurality = profile_axiom_report(profile, aggregate(profile, "plurality"), np.eye(4)[0])
    kemeny = profile_axiom_report(profile, aggregate(profile, "kemeny"))
    assert plurality["condorcet_winner"] == "Bob" and kemeny["condorcet_winner"] == "Bob"
    assert plurality["honoured"]["condorcet"] is False
    assert kemeny["honoured"]["condorcet"] is True
    assert plurality["majority_winner"] is None and plurality["honoured"]["majority"] is None
    assert plurality["rule"]["eps_majority"] == 0
    assert len(plurality["pairwise"]) == 6


def test_report_pareto_and_majority():
    # 0 above 1 on every ballot, neither ever first; 3 first on 60%.
    profile = Profile.from_orders(np.array([[3, 0, 1, 2], [2, 0, 1, 3]]), [3, 2])
    assert pareto_pairs(profile) == [(0, 1)]
    assert majority_winner(profile) == 3
    report = profile_axiom_report(profile, aggregate(profile, "plurality"))
    assert report["honoured"]["pareto"] is False  # plurality ties 0 and 1 (omega_h = 0)
    assert report["honoured"]["majority"] is True
    assert profile_axiom_report(profile, aggregate(profile, "borda"))["honoured"]["pareto"]


def test_exactly_one_half_is_no_majority():
    """Hand-built: two ballots 0 > 1 > 2 and 1 > 0 > 2. Candidates 0 and 1 are each first on
    exactly half the ballots and each beat the other on exactly half: no majority winner, no
    Condorcet winner, and ranking either above the other reverses no majority."""
    profile = Profile.from_orders(np.array([[0, 1, 2], [1, 0, 2]]))
    assert majority_winner(profile) is None
    assert condorcet_winner(profile) is None
    for order in ([0, 1, 2], [1, 0, 2]):
        one = Aggregation("given", np.array(order), [np.array(order)], Count(1))
        report = profile_axiom_report(profile, one)
        assert report["majority_winner"] is None and report["condorcet_winner"] is None
        assert report["honoured"]["strong_condorcet_violations"] == []
    # one more ballot 0 > 1 > 2 makes 0 first on 2/3 and a Condorcet winner
    three = Profile.from_orders(np.array([[0, 1, 2], [1, 0, 2], [0, 1, 2]]))
    assert majority_winner(three) == 0 and condorcet_winner(three) == 0
    reversed_ = Aggregation("given", np.array([1, 0, 2]), [np.array([1, 0, 2])], Count(1))
    violations = profile_axiom_report(three, reversed_)["honoured"]["strong_condorcet_violations"]
    assert violations == [{"x": "0", "y": "1", "margin": pytest.approx(1 / 6)}]


def test_guaranteed_pairs_count_margins_either_way_and_strictly():
    """Hand-built: Borda on 3 candidates has epsilon-strong-Condorcet threshold
    1/2 - 1/3 = 1/6 (table 4.2). One ballot 2 > 1 > 0 puts every pair at margin 1/2 with the
    *higher*-indexed candidate winning: all 3 pairs are guaranteed."""
    h = score_vector("borda", 3)
    reverse = Profile.from_orders(np.array([[2, 1, 0]]))
    report = profile_axiom_report(reverse, aggregate(reverse, "borda"), h)
    assert report["rule"]["eps_strong_condorcet"] == pytest.approx(1 / 6)
    assert report["rule"]["guaranteed_pairs"] == 3
    # Borda on 4: threshold 1/2 - 1/4 = 1/4. Three ballots 0>1>2>3 and one 1>0>3>2 give the
    # pairs (0, 1) and (2, 3) margin 3/4 - 1/2 = 1/4, exactly the threshold (not above it),
    # and the four pairs across margin 1/2: 4 guaranteed.
    h4 = score_vector("borda", 4)
    profile = Profile.from_orders(np.array([[0, 1, 2, 3], [1, 0, 3, 2]]), [3, 1])
    report = profile_axiom_report(profile, aggregate(profile, "borda"), h4)
    assert report["rule"]["eps_strong_condorcet"] == 0.25
    assert report["rule"]["guaranteed_pairs"] == 4


@pytest.mark.parametrize("rule", ["borda", "plurality", "antiplurality", "log", "squared"])
def test_reversed_majorities_stay_within_the_rule_margin(rule, rng):
    """Data-level check of proposition 21: a positional rule can only reverse a majority
    whose margin is at most its epsilon-strong-Condorcet threshold."""
    worst = 0.0
    for _ in range(150):
        profile = random_profile(4, rng, support=5)
        h = score_vector(rule, 4)
        report = profile_axiom_report(profile, aggregate(profile, rule), h)
        worst = max(worst, report["honoured"]["strong_condorcet_epsilon"])
        assert worst <= report["rule"]["eps_strong_condorcet"] + 1e-12
    assert worst > 0


@pytest.mark.parametrize("rule", ["kemeny", "copeland", "schulze", "ranked-pairs"])
def test_condorcet_methods_never_break_condorcet_or_pareto(rule, rng):
    assert search_violation(rule, "condorcet", 4, rng, trials=80) is None
    assert search_violation(rule, "pareto", 4, rng, trials=80) is None


def test_search_finds_condorcet_failures_of_positional_rules(rng):
    for rule in ("plurality", "borda"):
        profile = search_violation(rule, "condorcet", 3, rng, trials=500)
        assert profile is not None
        report = profile_axiom_report(profile, aggregate(profile, rule))
        assert report["condorcet_winner"] is not None
