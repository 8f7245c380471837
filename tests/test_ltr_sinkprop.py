"""SinkProp (eqs. 4, 7): sigma limits, the DSM it builds, annealing."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels import dsm
from rankmodels.ltr import metrics
from rankmodels.ltr.sinkprop import MAX_ITERATIONS, annealing_schedule, sinkprop_loss


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
