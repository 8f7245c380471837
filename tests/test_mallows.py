"""Mallows models: normaliser, moments and exact marginals against enumeration of S_n, the
sampler against the exact pmf, and mixtures aggregated as distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from rankmodels.aggregation import Profile, aggregate, score_vector
from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.mallows import (
    DistributionMarginals,
    Mallows,
    MallowsMixture,
    expected_distance,
    log_normaliser,
    theta_from_phi,
)
from rankmodels.aggregation.mallows.model import stage_mean
from rankmodels.permutations import all_permutations, inverse, kendall_distance, lehmer_index

PHIS = [1e-9, 0.2, 0.7, 0.99, 1 - 1e-7, 1.0]


def enumerated_pmf(centre: np.ndarray, phi: float) -> tuple[np.ndarray, np.ndarray]:
    """All orders of S_n and ``phi**d / sum phi**d`` computed from the distances alone."""
    perms = all_permutations(centre.size)
    d = kendall_distance(inverse(perms), inverse(centre))
    weight = phi ** d.astype(float)
    return perms, weight / weight.sum()


def enumerated_marginals(perms: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = perms.shape[1]
    M = np.zeros((n, n))
    for k in range(n):
        np.add.at(M[:, k], perms[:, k], p)
    rank = inverse(perms)
    P = np.einsum("s,sxy->xy", p, (rank[:, :, None] < rank[:, None, :]).astype(float))
    return M, P


@pytest.mark.parametrize("n", [1, 2, 4, 6])
@pytest.mark.parametrize("phi", PHIS)
def test_normaliser_and_mean_distance_by_enumeration(n, phi):
    perms = all_permutations(n)
    centre = np.random.default_rng(n).permutation(n)
    d = kendall_distance(inverse(perms), inverse(centre))
    assert log_normaliser(n, phi) == pytest.approx(np.log(np.sum(phi ** d.astype(float))))
    model = Mallows(centre, phi)
    p = model.pmf(perms)
    assert p.sum() == pytest.approx(1.0)
    assert expected_distance(n, phi) == pytest.approx(float(p @ d), rel=1e-10, abs=1e-12)


def test_theta_parameterisation():
    model = Mallows.from_theta(np.arange(4), 0.5)
    assert model.phi == pytest.approx(np.exp(-0.5))
    assert model.theta == pytest.approx(0.5)
    assert theta_from_phi(1.0) == 0.0
    perms = all_permutations(4)
    d = kendall_distance(inverse(perms), inverse(np.arange(4)))
    assert np.allclose(model.pmf(perms), np.exp(-0.5 * d) / np.exp(-0.5 * d).sum())


def test_stage_mean_series_joins_the_closed_form():
    """E[V | m] switches to a Taylor series for small m theta; both agree at the switch and
    the series tends to the uniform mean (m - 1)/2."""
    m = np.arange(1, 12)
    for theta in (1e-2 / 11 * 0.999, 1e-2 / 11 * 1.001):
        closed = 1 / np.expm1(theta) - m / np.expm1(m * theta)
        assert np.allclose(stage_mean(m, theta), closed, rtol=1e-9, atol=1e-11)
    assert np.allclose(stage_mean(m, 0.0), (m - 1) / 2)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("phi", PHIS)
def test_exact_marginals_match_enumeration(n, phi):
    centre = np.random.default_rng(10 + n).permutation(n)
    perms, p = enumerated_pmf(centre, phi)
    M, P = enumerated_marginals(perms, p)
    model = Mallows(centre, phi)
    assert np.allclose(model.positional_matrix, M, atol=1e-12)
    assert np.allclose(model.pairwise, P, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 7])
@pytest.mark.parametrize("phi", [0.2, 0.8, 1.0])
def test_joint_positions_of_two_items_match_enumeration(n, phi):
    centre = np.random.default_rng(20 + n).permutation(n)
    perms, p = enumerated_pmf(centre, phi)
    rank = inverse(perms)
    model = Mallows(centre, phi).as_mixture()
    for x, y in [(0, 1), (n - 1, 0), (1, n - 1)]:
        if x == y:
            continue
        J = np.zeros((n, n))
        np.add.at(J, (rank[:, x], rank[:, y]), p)
        assert np.allclose(model.pair_positions(x, y), J, atol=1e-12)
    with pytest.raises(ValueError, match="two different items"):
        model.pair_positions(0, 0)


def test_mixture_marginals_match_enumeration():
    rng = np.random.default_rng(3)
    comps = tuple(Mallows(rng.permutation(6), phi) for phi in (0.3, 0.8, 0.95))
    mix = MallowsMixture(np.array([0.5, 0.3, 0.2]), comps)
    perms = all_permutations(6)
    p = mix.pmf(perms)
    assert p.sum() == pytest.approx(1.0)
    M, P = enumerated_marginals(perms, p)
    assert np.allclose(mix.positional_matrix, M, atol=1e-12)
    assert np.allclose(mix.pairwise, P, atol=1e-12)
    J = np.zeros((6, 6))
    np.add.at(J, (inverse(perms)[:, 2], inverse(perms)[:, 4]), p)
    assert np.allclose(mix.pair_positions(2, 4), J, atol=1e-12)


def test_exact_marginals_match_a_large_sample():
    """n = 12 (beyond enumeration): sampled frequencies within 5 standard errors."""
    rng = np.random.default_rng(11)
    mix = MallowsMixture(
        np.array([0.7, 0.3]), (Mallows(rng.permutation(12), 0.6), Mallows(np.arange(12), 0.85))
    )
    size = 200_000
    profile = Profile.from_orders(mix.sample(size, rng))
    for exact, freq in (
        (mix.positional_matrix, profile.positional_matrix),
        (mix.pairwise, profile.pairwise),
    ):
        se = np.sqrt(exact * (1 - exact) / size) + 1e-12
        assert np.max(np.abs(freq - exact) / se) < 5


def chi_square_pvalue(model: Mallows | MallowsMixture, size: int, seed: int) -> float:
    perms = all_permutations(5)
    counts = np.bincount(
        lehmer_index(model.sample(size, np.random.default_rng(seed))), minlength=120
    )
    return float(chisquare(counts, size * model.pmf(perms)).pvalue)


def test_sampler_chi_square_one_model_and_mixture():
    """Seeded chi-square goodness of fit against the exact pmf (n = 5, 120 cells)."""
    one = Mallows(np.array([2, 0, 4, 3, 1]), 0.6)
    mix = MallowsMixture(np.array([0.55, 0.45]), (one, Mallows(np.array([1, 3, 4, 0, 2]), 0.8)))
    for model in (one, mix):
        assert chi_square_pvalue(model, 60_000, seed=5) > 1e-3
    # the test has power: a sampler for the wrong dispersion is rejected
    wrong = Mallows(one.centre, 0.65)
    counts = np.bincount(
        lehmer_index(wrong.sample(60_000, np.random.default_rng(5))), minlength=120
    )
    assert chisquare(counts, 60_000 * one.pmf(all_permutations(5))).pvalue < 1e-6


def test_sampler_is_seeded_and_handles_edge_sizes():
    model = MallowsMixture(
        np.array([0.5, 0.5]), (Mallows(np.arange(4), 0.5), Mallows(np.arange(4)[::-1], 0.5))
    )
    a = model.sample(1000, np.random.default_rng(1))
    b = model.sample(1000, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert model.sample(0, np.random.default_rng(1)).shape == (0, 4)
    near_deterministic = Mallows(np.array([3, 1, 0, 2]), 1e-12).sample(50, np.random.default_rng(2))
    assert (near_deterministic == [3, 1, 0, 2]).all()
    with pytest.raises(ValueError, match="size"):
        model.sample(-1, np.random.default_rng(1))
    with pytest.raises(TypeError, match="Generator"):
        model.sample(3, 1)


AGGREGATION_RULES = [
    "borda",
    "plurality",
    "antiplurality",
    "log",
    "squared",
    "kemeny",
    "footrule",
    "copeland",
    "schulze",
    "ranked-pairs",
]


@pytest.mark.parametrize("rule", AGGREGATION_RULES)
def test_mixture_is_aggregated_as_a_distribution(rule):
    """The exact marginals give the same consensus as the enumerated histogram of S_n."""
    mix = MallowsMixture(
        np.array([0.6, 0.4]),
        (Mallows(np.array([3, 4, 0, 1, 2]), 0.8), Mallows(np.array([1, 2, 3, 4, 0]), 0.8)),
    )
    names = list("ABCDE")
    perms = all_permutations(5)
    histogram = Profile.from_orders(perms, mix.pmf(perms), candidates=names)
    exact = aggregate(mix.marginals(names), rule)
    brute = aggregate(histogram, rule)
    assert [t.tolist() for t in exact.ties] == [t.tolist() for t in brute.ties]
    if brute.scores is not None:
        assert np.allclose(exact.scores, brute.scores)
    h = score_vector(rule, 5)
    report, expected = (
        profile_axiom_report(p, r, h)
        for p, r in ((mix.marginals(names), exact), (histogram, brute))
    )
    assert report["condorcet_winner"] == expected["condorcet_winner"]
    assert report["majority_winner"] == expected["majority_winner"]
    assert [d["p"] for d in report["pairwise"]] == pytest.approx(
        [d["p"] for d in expected["pairwise"]]
    )


def test_marginals_refuse_the_mode_rule_and_bad_matrices():
    marg = Mallows(np.arange(3), 0.5).as_mixture().marginals(["a", "b", "c"])
    assert marg.index("b") == 1
    assert np.allclose(marg.margins, -marg.margins.T)
    with pytest.raises(TypeError, match="mode"):
        aggregate(marg, "mode")
    with pytest.raises(ValueError, match="doubly stochastic"):
        DistributionMarginals(("a", "b"), np.array([[1.0, 0.5], [0.0, 0.5]]), np.eye(2)[::-1])
    with pytest.raises(ValueError, match="P \\+ P.T"):
        DistributionMarginals(("a", "b"), np.eye(2), np.array([[0, 0.7], [0.7, 0]]))


def test_invalid_parameters():
    with pytest.raises(ValueError, match="phi"):
        Mallows(np.arange(3), 0.0)
    with pytest.raises(ValueError, match="phi"):
        Mallows(np.arange(3), 1.5)
    with pytest.raises(ValueError, match="theta"):
        Mallows.from_theta(np.arange(3), -1.0)
    with pytest.raises(ValueError, match="permutation"):
        Mallows(np.array([0, 0, 1]), 0.5)
    with pytest.raises(ValueError, match="weights"):
        MallowsMixture(np.array([0.5, 0.6]), (Mallows(np.arange(3), 0.5),) * 2)
    with pytest.raises(ValueError, match="same number"):
        MallowsMixture(
            np.array([0.5, 0.5]), (Mallows(np.arange(3), 0.5), Mallows(np.arange(4), 0.5))
        )
