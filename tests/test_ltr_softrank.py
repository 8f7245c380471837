"""SoftRank: rank-binomial against Monte Carlo, reverse-mode gradient against the paper's
O(n^4) forward recursion (eq. 18), limits and the normal approximation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from rankmodels.ltr import metrics
from rankmodels.ltr.softrank import rank_distribution, softndcg_loss


def _beat(s, sigma):
    diff = s[:, None] - s[None, :]
    return norm.cdf(diff / (np.sqrt(2) * sigma)), norm.pdf(diff, scale=np.sqrt(2) * sigma)


def _forward_oracle_grad(s, rel, sigma):
    """d SoftNDCG / d s_m by eqs. 12, 18 (second psi read as psi^(i-1)) and 20: O(n^4)."""
    n = len(s)
    pi, dens = _beat(s, sigma)
    g = 2.0**rel - 1.0
    d = 1.0 / np.log2(2.0 + np.arange(n))
    gmax = np.sort(g)[::-1] @ d
    grad = np.zeros(n)
    for m in range(n):
        for j in range(n):
            p, psi = np.array([1.0]), np.array([0.0])
            for i in range(n):
                if i == j:
                    continue
                q = pi[i, j]
                dq = dens[i, j] if m == i else (-dens[i, j] if m == j else 0.0)
                p_prev, psi_prev = np.append(p, 0.0), np.append(psi, 0.0)
                shift_p, shift_psi = np.roll(p_prev, 1), np.roll(psi_prev, 1)
                shift_p[0] = shift_psi[0] = 0.0
                psi = shift_psi * q + psi_prev * (1 - q) + (shift_p - p_prev) * dq
                p = shift_p * q + p_prev * (1 - q)
            grad[m] += g[j] * (psi @ d) / gmax
    return grad


def test_reverse_mode_matches_the_forward_recursion_eq18(rng):
    for n in (2, 4, 6):
        s = rng.normal(size=n)
        rel = rng.integers(0, 3, size=n).astype(float)
        rel[0] = 2.0
        res = softndcg_loss(s, rel, sigma=0.6)
        np.testing.assert_allclose(-res.grad, _forward_oracle_grad(s, rel, 0.6), atol=1e-12)


def test_rank_binomial_against_monte_carlo_of_independent_pairwise_contests(rng):
    """Eqs. 9-12 are exact for independent pairwise contests (fresh score draws per pair)."""
    s = np.array([0.3, -0.2, 1.1, 0.0, 0.5])
    sigma, N, n = 0.6, 60_000, 5
    x = s[:, None] + sigma * rng.normal(size=(N, n, n))  # draw of S_i in contest (i, j)
    y = s[None, :] + sigma * rng.normal(size=(N, n, n))  # draw of S_j in contest (i, j)
    beats = (x > y) & ~np.eye(n, dtype=bool)
    ranks = beats.sum(axis=1)  # (N, n): number of documents beating j
    mc = np.stack([(ranks == r).mean(axis=0) for r in range(n)], axis=1)
    p = rank_distribution(s, sigma)
    se = np.sqrt(np.maximum(p * (1 - p), 1e-4) / N)
    assert np.all(np.abs(mc - p) < 5 * se)


def test_expected_rank_eq10_against_the_true_sort_process(rng):
    """The mean rank is exact for the real generative process (sort of the noisy scores);
    the full rank-binomial is an approximation there (correlated contests)."""
    s = np.array([0.3, -0.2, 1.1, 0.0, 0.5, 0.45])
    sigma, N = 0.5, 100_000
    draws = s + sigma * rng.normal(size=(N, len(s)))
    ranks = np.argsort(np.argsort(-draws, axis=1), axis=1)
    p = rank_distribution(s, sigma)
    expected = p @ np.arange(len(s))
    pi, _ = _beat(s, sigma)
    np.testing.assert_allclose(expected, pi.sum(axis=0) - 0.5, atol=1e-12)  # eq. 10
    se = ranks.std(axis=0) / np.sqrt(N)
    assert np.all(np.abs(ranks.mean(axis=0) - expected) < 5 * se)
    # with two documents there is one contest, so the rank law itself is exact
    two = s[:2] + sigma * rng.normal(size=(N, 2))
    p2 = rank_distribution(s[:2], sigma)
    frac = (two[:, 1] > two[:, 0]).mean()  # document 0 beaten
    assert abs(frac - p2[0, 1]) < 5 * np.sqrt(p2[0, 1] * p2[0, 0] / N)


def test_rows_are_distributions_and_small_sigma_gives_hard_ranks_and_ndcg(rng):
    s = rng.normal(size=7)
    rel = rng.integers(0, 4, size=7).astype(float)
    p = rank_distribution(s, 0.8)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    hard_rank = np.argsort(np.argsort(-s))
    sharp = rank_distribution(s, 1e-6)
    np.testing.assert_allclose(sharp, np.eye(7)[hard_rank], atol=1e-12)
    hard = 1.0 - metrics.ndcg(rel, s)
    errors = [abs(softndcg_loss(s, rel, sigma=sg).value - hard) for sg in (1.0, 0.1, 0.01, 1e-4)]
    assert errors[-1] < 1e-10 and errors[0] > errors[-1]


def test_normal_approximation_for_long_lists(rng):
    n = 200
    s = rng.normal(size=n)
    exact = rank_distribution(s, 0.5)
    approx = rank_distribution(s, 0.5, method="normal")
    np.testing.assert_allclose(approx.sum(axis=1), 1.0)
    mid = np.abs(exact @ np.arange(n) - n / 2) < n / 4  # documents far from both ends
    assert 0.5 * np.abs(exact - approx)[mid].sum(axis=1).max() < 0.02
    # away from the ends the mean is kept; at the ends truncation shifts it (hence hybrid)
    np.testing.assert_allclose((exact @ np.arange(n))[mid], (approx @ np.arange(n))[mid], atol=0.01)
    hybrid = rank_distribution(s, 0.5, method="hybrid", n_exact=20)
    top = (exact @ np.arange(n) < 20) | (exact @ np.arange(n) > n - 21)
    np.testing.assert_array_equal(hybrid[top], exact[top])
    np.testing.assert_array_equal(hybrid[~top], approx[~top])
    rel = rng.integers(0, 3, size=n).astype(float)
    e = softndcg_loss(s, rel, sigma=0.5).value
    a = softndcg_loss(s, rel, sigma=0.5, method="normal").value
    assert abs(e - a) < 0.01


def test_invalid_options():
    with pytest.raises(ValueError, match="sigma"):
        rank_distribution([0.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="method"):
        rank_distribution([0.0, 1.0], 1.0, method="saddle")
    with pytest.raises(ValueError, match="n_exact"):
        rank_distribution([0.0, 1.0], 1.0, method="hybrid", n_exact=-1)


def _sinkhorn_by_loops(p, n_iter):
    """SoftRank section 3.2: divide each column by its sum, then each row by its sum."""
    p = p.copy()
    for _ in range(n_iter):
        p = p / p.sum(axis=0, keepdims=True)
        p = p / p.sum(axis=1, keepdims=True)
    return p


@pytest.mark.parametrize("n_iter", [1, 4, 1000])
def test_sinkhorn_post_scaling_of_the_rank_distributions(rng, n_iter):
    s, rel = rng.normal(size=6), rng.integers(0, 4, size=6).astype(float)
    scaled = _sinkhorn_by_loops(rank_distribution(s, 0.8), n_iter)
    g = 2.0**rel - 1.0
    d = 1.0 / np.log2(2.0 + np.arange(6))
    expected = 1.0 - g @ scaled @ d / (np.sort(g)[::-1] @ d)
    res = softndcg_loss(s, rel, sigma=0.8, sinkhorn_iter=n_iter)
    assert res.value == pytest.approx(expected, rel=1e-12)
    assert res.value != pytest.approx(softndcg_loss(s, rel, sigma=0.8).value, rel=1e-6)
    if n_iter == 1000:  # converged: doubly stochastic
        np.testing.assert_allclose(scaled.sum(axis=0), 1.0, atol=1e-9)
