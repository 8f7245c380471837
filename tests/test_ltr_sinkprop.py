"""SinkProp (eqs. 4, 7): sigma limits, the DSM it builds, annealing."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from rankmodels import dsm
from rankmodels.ltr import metrics
from rankmodels.ltr.sinkprop import (
    MAX_ITERATIONS,
    annealing_schedule,
    partitioned_measure,
    sinkprop_loss,
)


def _smoothed_indicator(s, sigma):
    """Eq. 7 written out with loops: A[j, k] = exp(-(s_j - s_{s_hat[k]})^2 / (2 sigma^2))."""
    order = np.argsort(-s, kind="stable")
    n = len(s)
    A = np.empty((n, n))
    for j in range(n):
        for k in range(n):
            A[j, k] = np.exp(-((s[j] - s[order[k]]) ** 2) / (2 * sigma**2))
    return A


def test_value_is_expected_ndcg_of_the_five_step_sinkhorn_matrix(rng):
    s = rng.normal(size=6)
    rel = rng.integers(0, 3, size=6).astype(float)
    rel[0] = 2
    Pi = dsm.sinkhorn(np.log(_smoothed_indicator(s, 0.9)), n_iter=5).p
    expected = metrics.ndcg(rel, dsm=dsm.sinkhorn(np.log(Pi), tol=1e-14).p, discount="sinkprop")
    # eq. 4 on Pi directly (Pi after 5 steps is only nearly doubly stochastic)
    u, d = (2**rel - 1), metrics.discounts(6, "sinkprop")
    direct = u @ Pi @ d / (np.sort(u)[::-1] @ d)
    res = sinkprop_loss(s, rel, sigma=0.9)
    assert res.value == pytest.approx(1 - direct, abs=1e-12)
    assert abs(expected - direct) < 0.05


def test_sigma_to_zero_recovers_the_sort_and_hard_ndcg(rng):
    s = rng.normal(size=8)
    rel = rng.integers(0, 4, size=8).astype(float)
    order = np.argsort(-s)
    A = _smoothed_indicator(s, 1e-4)
    np.testing.assert_allclose(A, dsm.permutation_matrix(order), atol=1e-12)
    hard = 1 - metrics.ndcg(rel, s, discount="sinkprop")
    sigmas = annealing_schedule(2.0, 1e-3, 6)
    gaps = [abs(sinkprop_loss(s, rel, sigma=sg).value - hard) for sg in sigmas]
    assert gaps[-1] < 1e-9
    assert gaps[0] > 0.01


def test_sigma_to_infinity_gives_the_uniform_dsm(rng):
    s = rng.normal(size=5)
    rel = np.array([3.0, 0, 1, 0, 2])
    A = _smoothed_indicator(s, 1e6)
    np.testing.assert_allclose(A, 1.0, atol=1e-9)
    uniform = (2**rel - 1).mean() * metrics.discounts(5, "sinkprop").sum()
    ideal = np.sort(2**rel - 1)[::-1] @ metrics.discounts(5, "sinkprop")
    assert sinkprop_loss(s, rel, sigma=1e6).value == pytest.approx(1 - uniform / ideal)


def test_more_iterations_approach_a_dsm(rng):
    s = rng.normal(size=6)
    rel = rng.integers(0, 3, size=6).astype(float) + (np.arange(6) == 0)
    limit = dsm.sinkhorn(np.log(_smoothed_indicator(s, 0.7)), tol=1e-13, max_iter=50_000)
    assert dsm.is_doubly_stochastic(limit.p, atol=1e-12)
    full = 1 - metrics.ndcg(rel, dsm=limit.p, discount="sinkprop")
    gaps = [abs(sinkprop_loss(s, rel, sigma=0.7, n_iter=t).value - full) for t in (1, 5, 2000)]
    assert gaps[2] < 1e-7 and gaps[0] >= gaps[1] >= gaps[2]


def test_invalid_options():
    with pytest.raises(ValueError, match="sigma"):
        sinkprop_loss([0.0, 1.0], [1.0, 0.0], sigma=0.0)
    with pytest.raises(ValueError, match="eps"):
        sinkprop_loss([0.0, 1.0], [1.0, 0.0], eps=-1.0)
    for n_iter in (-1, MAX_ITERATIONS + 1):
        with pytest.raises(ValueError, match=f"n_iter must lie in 0..{MAX_ITERATIONS}"):
            sinkprop_loss([0.0, 1.0], [1.0, 0.0], n_iter=n_iter)
    with pytest.raises(ValueError):
        annealing_schedule(1.0, 0.0, 3)


def _ll_density(u, mu, sigma):
    """pi_LL(u | mu, sigma) as printed in section 4.1."""
    z = (np.log(u / (1 - u)) - mu) / (2 * sigma)
    return (1 / (4 * sigma)) / np.cosh(z) ** 2 * (1 / u + 1 / (1 - u))


def test_partitioned_measure_integrates_the_printed_density(rng):
    """Eq. 6: A[j, k] = integral of pi_LL(u | mu = -s_j, sigma) over ((k-1)/n, k/n)."""
    s, sigma = rng.normal(size=(1, 5)) * 2, 0.7
    log_a, dlog = partitioned_measure(s, np.array([5]), sigma)
    for j in range(5):
        for k in range(5):
            mass = quad(
                _ll_density, k / 5, (k + 1) / 5, args=(-s[0, j], sigma), epsabs=0, epsrel=1e-11
            )[0]
            assert np.exp(log_a[0, j, k]) == pytest.approx(mass, rel=1e-7)
    np.testing.assert_allclose(np.exp(log_a[0]).sum(axis=1), 1.0)
    h = 1e-6
    up = partitioned_measure(s + h, np.array([5]), sigma)[0]
    down = partitioned_measure(s - h, np.array([5]), sigma)[0]
    np.testing.assert_allclose(dlog, (up - down) / (2 * h), rtol=1e-6, atol=1e-8)
    # a higher score moves mass towards u = 0, the top positions
    assert np.all(np.diff(np.exp(log_a[0, np.argsort(-s[0]), 0])) < 0)


def test_partitioned_measure_loss_is_expected_ndcg_of_its_sinkhorn_matrix(rng):
    s, rel = rng.normal(size=6), rng.integers(0, 3, size=6).astype(float)
    rel[0] = 2
    log_a, _ = partitioned_measure(s[None], np.array([6]), 0.6)
    Pi = dsm.sinkhorn(log_a[0], n_iter=5).p
    g, d = 2.0**rel - 1.0, metrics.discounts(6, "sinkprop")
    expected = 1.0 - g @ Pi @ d / (np.sort(g)[::-1] @ d)
    loss = sinkprop_loss(s, rel, sigma=0.6, measure="logit_logistic")
    assert loss.value == pytest.approx(expected, rel=1e-12)
    # extreme scores stay finite (tails taken as 1 - F)
    far = sinkprop_loss(
        np.array([300.0, -400.0, 0.0]),
        np.array([1.0, 0.0, 2.0]),
        sigma=1e-3,
        measure="logit_logistic",
    )
    assert np.isfinite(far.value) and np.all(np.isfinite(far.grad))
    with pytest.raises(ValueError, match="measure must be one of"):
        sinkprop_loss(s, rel, measure="beta")
