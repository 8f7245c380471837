"""Mallows fitting: the top-k likelihood against enumeration, the MLE's optimality, EM's
monotone trace, recovery of known models, BIC, and the real PrefLib profiles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rankmodels.aggregation import Profile, read_votes
from rankmodels.aggregation.mallows import (
    Mallows,
    MallowsMixture,
    TopKBallots,
    fit_mallows,
    fit_mixture,
    select_components,
)
from rankmodels.errors import InputError
from rankmodels.permutations import all_permutations


def top_k_profile(orders: np.ndarray, k: int | np.ndarray) -> Profile:
    """Ballots keeping the first ``k`` (per row) candidates of each order."""
    k = np.broadcast_to(np.asarray(k), (orders.shape[0],))
    ballots = [[[int(x)] for x in order[:kk]] for order, kk in zip(orders, k, strict=True)]
    return Profile.from_weak_orders(ballots, candidates=orders.shape[1])


@pytest.mark.parametrize("phi", [0.3, 0.9, 1.0])
def test_top_k_likelihood_is_the_sum_over_completions(phi):
    """P(top-k ballot) = sum of the pmf over every ranking that starts with it (n = 5)."""
    model = Mallows(np.array([3, 0, 4, 1, 2]), phi)
    perms = all_permutations(5)
    pmf = model.pmf(perms)
    for k in (1, 2, 3, 5):
        heads = [[[x] for x in head] for head in itertools.permutations(range(5), k)]
        ballots = TopKBallots.from_profile(Profile.from_weak_orders(heads, candidates=5))
        got = np.exp(ballots.log_likelihoods(model))
        for order, p in zip(ballots.orders, got, strict=True):
            match = np.all(perms[:, :k] == order[:k], axis=1)
            assert p == pytest.approx(pmf[match].sum(), rel=1e-12)
        assert (got * ballots.counts).sum() == pytest.approx(1.0)


def test_theta_maximises_the_likelihood_for_its_centre():
    """The moment equation is the stationary point: the log-likelihood drops either side."""
    rng = np.random.default_rng(1)
    orders = Mallows(rng.permutation(7), 0.55).sample(3000, rng)
    lengths = rng.choice([2, 4, 7], size=3000)
    ballots = TopKBallots.from_profile(top_k_profile(orders, lengths))
    fitted = fit_mallows(ballots)

    def loglik(theta: float) -> float:
        return float(
            ballots.counts @ ballots.log_likelihoods(Mallows.from_theta(fitted.centre, theta))
        )

    best = loglik(fitted.theta)
    for step in (1e-3, -1e-3):
        assert loglik(fitted.theta + step) < best
    grad = (loglik(fitted.theta + 1e-6) - loglik(fitted.theta - 1e-6)) / 2e-6
    assert abs(grad) < 1e-3 * ballots.total


def test_fit_recovers_centre_and_dispersion(rng):
    truth = Mallows(np.array([3, 1, 4, 0, 5, 2]), 0.4)
    fitted = fit_mallows(truth.sample(5000, rng))
    assert fitted.centre.tolist() == truth.centre.tolist()
    assert fitted.phi == pytest.approx(0.4, abs=0.03)


def test_fit_on_top_k_ballots_is_unbiased(rng):
    """Top-3 ballots of 8 candidates carry the stagewise likelihood exactly: centre and phi
    come back (treating the unranked as tied in a complete-ranking fit would not)."""
    truth = Mallows(np.array([5, 2, 7, 0, 1, 6, 3, 4]), 0.5)
    profile = top_k_profile(truth.sample(4000, rng), 3)
    fitted = fit_mallows(profile)
    assert fitted.centre[:3].tolist() == truth.centre[:3].tolist()
    assert fitted.phi == pytest.approx(0.5, abs=0.04)


def test_em_trace_never_decreases_and_recovers_a_mixture(rng):
    a = Mallows(np.arange(6), 0.3)
    b = Mallows(np.array([5, 3, 1, 0, 2, 4]), 0.5)
    mix = MallowsMixture(np.array([0.7, 0.3]), (a, b))
    sample = mix.sample(3000, rng)
    fit = fit_mixture(sample, 2, rng, restarts=3)
    assert np.all(np.diff(fit.trace) >= -1e-9 * abs(fit.trace[-1]))
    assert fit.loglik == pytest.approx(fit.trace[-1])
    assert fit.loglik == pytest.approx(fit.restarts.max())
    assert fit.converged and fit.exact_centres
    got = fit.model
    assert [c.centre.tolist() for c in got.components] == [a.centre.tolist(), b.centre.tolist()]
    assert got.weights[0] == pytest.approx(0.7, abs=0.04)
    assert got.components[0].phi == pytest.approx(0.3, abs=0.04)
    assert got.components[1].phi == pytest.approx(0.5, abs=0.06)
    # the reported log-likelihood is the model's, recomputed from the pmf
    assert fit.loglik == pytest.approx(float(got.log_pmf(sample).sum()), rel=1e-9)
    assert fit.n_parameters == 1 + 2 + 2 * 5
    assert fit.bic == pytest.approx(-2 * fit.loglik + 13 * np.log(3000))


def test_bic_picks_the_number_of_components(rng):
    one = Mallows(np.arange(6), 0.4)
    two = MallowsMixture(np.array([0.5, 0.5]), (one, Mallows(np.arange(6)[::-1], 0.4)))
    best1, fits1 = select_components(one.sample(2000, rng), 3, rng, restarts=2)
    best2, fits2 = select_components(two.sample(2000, rng), 3, rng, restarts=2)
    assert len(best1.model.components) == 1 and sorted(fits1) == [1, 2, 3]
    assert len(best2.model.components) == 2
    assert best2.bic == min(f.bic for f in fits2.values())


def test_fitting_rejects_ties_among_ranked_candidates():
    profile = Profile.from_weak_orders([[[0], [1, 2], [3]], [[1], [0]]], candidates="ABCD")
    with pytest.raises(InputError, match="ballot 'A>B=C>D'.*top-k"):
        TopKBallots.from_profile(profile)
    with pytest.raises(ValueError, match="n_components"):
        fit_mixture(np.array([[0, 1], [1, 0]]), 3, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("name", "ballots", "candidates"),
    [("00001-00000001.soi", 43942, 12), ("00004-00000040.soc", None, 3)],
)
def test_real_preflib_profiles_fit(shared_data, name, ballots, candidates):
    path = shared_data / "preflib" / name
    if not path.exists():
        pytest.skip(f"{path} not found")
    profile = read_votes(path)
    fit = fit_mixture(profile, 2, np.random.default_rng(0), restarts=2)
    assert profile.n == candidates
    if ballots is not None:
        assert fit.n_ballots == ballots
    assert np.all(np.diff(fit.trace) >= -1e-9 * abs(fit.trace[-1]))
    assert fit.exact_centres
    # two components explain the data better than one
    assert fit.loglik > fit_mixture(profile, 1, np.random.default_rng(0)).loglik
