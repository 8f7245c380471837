"""Sinkhorn normalisation (log domain, ragged batches), its backward pass, Hungarian
decoding and the Birkhoff-von Neumann decomposition."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from rankmodels import dsm
from rankmodels.permutations import all_permutations


def _reference_log_sinkhorn(log_a: np.ndarray, n_iter: int) -> np.ndarray:
    """Plain log-domain iteration, column then row (SinkProp Z^i = T_R(T_C(.)))."""
    X = log_a.copy()
    for _ in range(n_iter):
        X = X - logsumexp(X, axis=0, keepdims=True)
        X = X - logsumexp(X, axis=1, keepdims=True)
    return X


def _ragged(rng, lengths, n, scale=1.0):
    return rng.normal(size=(len(lengths), n, n)) * scale, np.asarray(lengths)


@pytest.mark.parametrize("scale", [0.3, 3.0, 300.0])
def test_fixed_iterations_match_plain_log_domain_reference(rng, scale):
    log_a, lengths = _ragged(rng, [7, 4, 1, 6], 7, scale)
    for n_iter in (0, 1, 2, 5, 20):
        res = dsm.sinkhorn(log_a, lengths, n_iter=n_iter)
        assert np.all(res.n_iter == n_iter)
        for b, m in enumerate(lengths):
            ref = _reference_log_sinkhorn(log_a[b, :m, :m], n_iter)
            np.testing.assert_allclose(res.log_p[b, :m, :m], ref, rtol=1e-9, atol=1e-9 * scale)
            with np.errstate(over="ignore"):
                np.testing.assert_allclose(res.p[b, :m, :m], np.exp(ref), rtol=1e-8, atol=1e-14)
            assert np.all(res.log_p[b, m:, :] == -np.inf) and np.all(res.log_p[b, :, m:] == -np.inf)
            assert np.all(res.p[b, m:, :] == 0) and np.all(res.p[b, :, m:] == 0)


def test_empty_matrix_in_a_batch(rng):
    log_a = rng.normal(size=(2, 3, 3))
    res = dsm.sinkhorn(log_a, [0, 3], n_iter=4)
    assert np.all(res.p[0] == 0) and res.p[1].sum() == pytest.approx(3.0)
    grad = dsm.sinkhorn_vjp(res, np.ones((2, 3, 3)))
    assert np.all(grad[0] == 0)
    np.testing.assert_allclose(res.p[1], dsm.sinkhorn(log_a[1], n_iter=4).p)


def test_single_matrix_and_batch_agree(rng):
    log_a = rng.normal(size=(5, 5))
    single = dsm.sinkhorn(log_a, n_iter=5)
    batch = dsm.sinkhorn(log_a[None], n_iter=5)
    assert single.p.shape == (5, 5)
    np.testing.assert_array_equal(single.p, batch.p[0])


def test_convergence_error_shrinks_with_iterations(rng):
    """Sinkhorn-Knopp: the column-sum error after a row step decreases towards 0."""
    log_a, lengths = _ragged(rng, [30, 12, 25], 30, 2.0)
    errors = []
    for n_iter in (1, 2, 4, 8, 16, 32, 64):
        P = dsm.sinkhorn(log_a, lengths, n_iter=n_iter).p
        rows = np.abs(P.sum(axis=2) - (np.arange(30) < lengths[:, None])).max()
        cols = np.abs(P.sum(axis=1) - (np.arange(30) < lengths[:, None])).max()
        assert rows < 1e-12  # a row step ends every iteration
        errors.append(cols)
    assert all(b < a for a, b in itertools.pairwise(errors))
    assert errors[-1] < 1e-8


def test_tolerance_mode_stops_at_a_dsm(rng):
    log_a, lengths = _ragged(rng, [9, 5], 9, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converging quietly
        res = dsm.sinkhorn(log_a, lengths, tol=1e-11)
    assert res.converged.all()
    for b, m in enumerate(lengths):
        assert dsm.is_doubly_stochastic(res.p[b, :m, :m], atol=1e-10)
        error = np.abs(res.p[b, :m, :m].sum(axis=0) - 1).max()
        assert error <= 1e-11 and res.col_error[b] == pytest.approx(error, abs=1e-15)
    # the same number of fixed iterations gives the same matrix
    for b, m in enumerate(lengths):
        fixed = dsm.sinkhorn(log_a[b, :m, :m], n_iter=int(res.n_iter[b]))
        np.testing.assert_allclose(res.p[b, :m, :m], fixed.p, atol=1e-14)


@pytest.mark.parametrize("domain", ["auto", "log"])
def test_tolerance_mode_reports_non_convergence(domain):
    """``[[1, 0], [1, 1]]`` converges like ``1/t``: after ``t`` iterations the column sums
    are ``1 +- 1/(2t + 1)`` (by induction: row 2 is ``[1, 2t] / (2t + 1)``)."""
    stuck = np.log(np.array([[1.0, 1e-30], [1.0, 1.0]]))
    for t in (1, 3, 10):
        with pytest.warns(dsm.SinkhornConvergenceWarning, match=r"1 of 1 matrices.*max_iter"):
            res = dsm.sinkhorn(stuck, max_iter=t, domain=domain)
        assert res.n_iter[0] == t and not res.converged[0]
        np.testing.assert_allclose(res.p.sum(axis=0), [1 + 1 / (2 * t + 1), 1 - 1 / (2 * t + 1)])
        assert res.col_error[0] == pytest.approx(1 / (2 * t + 1), rel=1e-12)
    # a batch names how many matrices failed; the converged one is flagged as such
    batch = np.stack([np.zeros((2, 2)), stuck])
    with pytest.warns(dsm.SinkhornConvergenceWarning, match="1 of 2 matrices"):
        res = dsm.sinkhorn(batch, max_iter=5, domain=domain)
    np.testing.assert_array_equal(res.converged, [True, False])
    assert res.col_error[0] <= 1e-9 < res.col_error[1]
    # warn=False and a fixed (incomplete) n_iter report without warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = dsm.sinkhorn(batch, max_iter=5, domain=domain, warn=False)
        fixed = dsm.sinkhorn(batch, n_iter=5, domain=domain)
    np.testing.assert_array_equal(quiet.converged, [True, False])
    np.testing.assert_array_equal(fixed.converged, [True, False])
    np.testing.assert_allclose(fixed.col_error, np.abs(fixed.p.sum(axis=1) - 1).max(axis=1))


@pytest.mark.parametrize("scale", [1.0, 2000.0])
def test_scaling_domain_and_log_domain_agree(rng, scale):
    """Entries spread over thousands of nats: underflow in the scaled path is harmless."""
    log_a, lengths = _ragged(rng, [6, 4], 6, scale)
    auto = dsm.sinkhorn(log_a, lengths, n_iter=10)
    log = dsm.sinkhorn(log_a, lengths, n_iter=10, domain="log")
    # a range of thousands of nats needs the log domain (the fallback); 1 nat does not
    assert auto.scaled.all() == (scale < 100) and not log.scaled.any()
    np.testing.assert_allclose(auto.log_p, log.log_p, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(auto.p, log.p, atol=1e-13)
    for b, m in enumerate(lengths):
        ref = _reference_log_sinkhorn(log_a[b, :m, :m], 10)
        np.testing.assert_allclose(log.log_p[b, :m, :m], ref, rtol=1e-12, atol=1e-9)
    # thousands of nats converge too slowly for max_iter=1000: both domains must say so
    tol_auto = dsm.sinkhorn(log_a, lengths, tol=1e-10, warn=False)
    tol_log = dsm.sinkhorn(log_a, lengths, tol=1e-10, domain="log", warn=False)
    assert tol_auto.converged.all() == (scale < 100)
    np.testing.assert_array_equal(tol_auto.converged, tol_log.converged)
    np.testing.assert_array_equal(tol_auto.n_iter, tol_log.n_iter)
    np.testing.assert_allclose(tol_auto.p, tol_log.p, atol=1e-12)
    with pytest.raises(ValueError, match="domain"):
        dsm.sinkhorn(log_a, lengths, n_iter=1, domain="linear")


def test_zero_entries_and_invalid_inputs():
    log_a = np.array([[0.0, -np.inf], [0.0, 0.0]])
    P = dsm.sinkhorn(log_a, n_iter=200).p
    assert np.all(np.isfinite(P)) and P[0, 1] == 0.0
    with pytest.raises(ValueError, match="row or column"):
        dsm.sinkhorn(np.array([[-np.inf, -np.inf], [0.0, 0.0]]), n_iter=3)
    with pytest.raises(ValueError, match="NaN"):
        dsm.sinkhorn(np.array([[np.nan, 0.0], [0.0, 0.0]]), n_iter=3)
    with pytest.raises(ValueError, match="shape"):
        dsm.sinkhorn(np.zeros((2, 3)), n_iter=3)
    with pytest.raises(ValueError, match="lengths"):
        dsm.sinkhorn(np.zeros((2, 3, 3)), [4, 1], n_iter=3)
    with pytest.raises(TypeError):
        dsm.sinkhorn(np.zeros((1, 3, 3)), [1.5], n_iter=3)
    with pytest.raises(ValueError, match="record"):
        dsm.sinkhorn_vjp(dsm.sinkhorn(np.zeros((3, 3)), n_iter=2, record=False), np.ones((3, 3)))


def _fd_check(log_a, lengths, weights, **kw):
    res = dsm.sinkhorn(log_a, lengths, **kw)
    grad = dsm.sinkhorn_vjp(res, weights)

    def objective(x):
        r = dsm.sinkhorn(x, lengths, **kw)
        assert np.array_equal(r.n_iter, res.n_iter)  # compare the same unrolled function
        return float((r.p * weights).sum())

    h = 1e-6 * max(1.0, np.abs(log_a).max() / 10)
    fd = np.zeros_like(log_a)
    for idx in np.ndindex(*log_a.shape):
        if log_a.ndim == 3 and (idx[1] >= lengths[idx[0]] or idx[2] >= lengths[idx[0]]):
            continue
        e = np.zeros_like(log_a)
        e[idx] = h
        fd[idx] = (objective(log_a + e) - objective(log_a - e)) / (2 * h)
    return grad, fd, res


@pytest.mark.parametrize(
    ("scale", "kw"),
    [(1.0, {"n_iter": 5}), (1.0, {"n_iter": 1}), (4.0, {"n_iter": 20}), (1.0, {"tol": 1e-4})],
)
def test_backward_matches_finite_differences_on_ragged_batch(rng, scale, kw):
    log_a, lengths = _ragged(rng, [5, 3, 1, 4], 5, scale)
    weights = rng.normal(size=log_a.shape)
    grad, fd, res = _fd_check(log_a, lengths, weights, **kw)
    np.testing.assert_allclose(grad, fd, atol=1e-7)
    for b, m in enumerate(lengths):
        assert np.all(grad[b, m:, :] == 0) and np.all(grad[b, :, m:] == 0)


@pytest.mark.parametrize("kw", [{"n_iter": 6}, {"tol": 1e-5}])
def test_backward_in_the_log_domain(rng, kw):
    log_a, lengths = _ragged(rng, [4, 2, 3], 4, 3.0)
    weights = rng.normal(size=log_a.shape)
    grad, fd, res = _fd_check(log_a, lengths, weights, domain="log", **kw)
    assert not res.scaled.any()
    np.testing.assert_allclose(grad, fd, atol=1e-7)


def test_backward_single_matrix_shape(rng):
    log_a = rng.normal(size=(4, 4))
    res = dsm.sinkhorn(log_a, n_iter=3)
    assert dsm.sinkhorn_vjp(res, np.ones((4, 4))).shape == (4, 4)
    # d/dlog_a of sum(P) after a row step: rows sum to one whatever log_a is
    np.testing.assert_allclose(dsm.sinkhorn_vjp(res, np.ones((4, 4))), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        dsm.sinkhorn_vjp(res, np.ones((3, 3)))


# ----------------------------------------------------------------------- decoding


def _log_likelihood(log_p, order):
    return log_p[order, np.arange(len(order))].sum()


def test_hungarian_is_the_brute_force_argmax_of_eq5(rng):
    for _ in range(5):
        P = dsm.sinkhorn(rng.normal(size=(6, 6)) * 2, tol=1e-12).p
        log_p = np.log(P)
        order = dsm.hungarian_decode(log_p)
        perms = all_permutations(6)
        best = max(_log_likelihood(log_p, p) for p in perms)
        assert _log_likelihood(log_p, order) == pytest.approx(best, abs=1e-12)


def test_hungarian_on_ragged_batch_and_permutation_matrices(rng):
    orders = [rng.permutation(5), rng.permutation(3)]
    log_p = np.full((2, 5, 5), -np.inf)
    for b, o in enumerate(orders):
        log_p[b, o, np.arange(len(o))] = 0.0
        log_p[b, : len(o), : len(o)] = np.where(
            np.isfinite(log_p[b, : len(o), : len(o)]), 0.0, -30.0
        )
    out = dsm.hungarian_decode(log_p, [5, 3])
    np.testing.assert_array_equal(out[0], orders[0])
    np.testing.assert_array_equal(out[1, :3], orders[1])
    assert np.all(out[1, 3:] == -1)


def test_shortcut_hungarian(rng):
    n = 120
    truth = rng.permutation(n)
    scores = np.empty(n)
    scores[truth] = -np.arange(n, dtype=float)  # item truth[k] should sit at position k
    log_a = -((scores[:, None] - np.sort(scores)[::-1][None, :]) ** 2) / (2 * 0.7**2)
    log_p = dsm.sinkhorn(log_a, n_iter=5).log_p
    exact = dsm.hungarian_decode(log_p)
    short = dsm.hungarian_decode(log_p, shortcut=20)
    np.testing.assert_array_equal(exact, truth)
    np.testing.assert_array_equal(short, truth)
    # on a diffuse DSM the short-cut is a valid order, never better than the optimum
    diffuse = dsm.sinkhorn(rng.normal(size=(n, n)), n_iter=20).log_p
    s = dsm.hungarian_decode(diffuse, shortcut=15)
    e = dsm.hungarian_decode(diffuse)
    assert sorted(s) == list(range(n))
    assert _log_likelihood(diffuse, s) <= _log_likelihood(diffuse, e) + 1e-9
    # with P >= n the short-cut is the exact solver
    np.testing.assert_array_equal(dsm.hungarian_decode(diffuse, shortcut=n), e)
    with pytest.raises(ValueError):
        dsm.hungarian_decode(diffuse, shortcut=0)


def test_birkhoff_decomposition_reconstructs_the_dsm(rng):
    n = 6
    orders = np.array([rng.permutation(n) for _ in range(4)])
    w = rng.dirichlet(np.ones(4))
    M = dsm.marginal_matrix(orders, w)
    perms, weights = dsm.birkhoff_decomposition(M)
    np.testing.assert_allclose(dsm.marginal_matrix(perms, weights), M, atol=1e-12)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(weights > 0)
    # a generic DSM from Sinkhorn: within the Marcus-Ree bound n^2 - 2n + 2
    D = dsm.sinkhorn(rng.normal(size=(n, n)), tol=1e-13).p
    perms, weights = dsm.birkhoff_decomposition(D)
    assert len(weights) <= n * n - 2 * n + 2
    np.testing.assert_allclose(dsm.marginal_matrix(perms, weights), D, atol=1e-9)
    # a permutation matrix is its own decomposition
    p = rng.permutation(n)
    perms, weights = dsm.birkhoff_decomposition(dsm.permutation_matrix(p))
    np.testing.assert_array_equal(perms, [p])
    np.testing.assert_allclose(weights, [1.0])
    with pytest.raises(ValueError, match="doubly stochastic"):
        dsm.birkhoff_decomposition(np.ones((3, 3)))
