"""SoftRank: rank distributions from Gaussian-smoothed scores, SoftNDCG and its gradient.

Taylor, Guiver, Robertson & Minka, "SoftRank: optimizing non-smooth rank metrics".
Each score becomes ``S_j ~ N(s_j, sigma^2)`` (eq. 8). Document ``i`` beats ``j`` with

    pi_ij = P(S_i > S_j) = Phi((s_i - s_j) / (sqrt(2) sigma))                      (eq. 9)

and the rank of ``j`` (0 = best) is the number of documents beating it, treated as a sum
of independent Bernoulli(pi_ij) (the *rank-binomial*, eq. 10-12)::

    p_j^(1)(r) = delta(r),   p_j^(i)(r) = p_j^(i-1)(r-1) pi_ij + p_j^(i-1)(r) (1 - pi_ij)

(``O(n^2)`` per document, ``O(n^3)`` per query). For long lists the paper (section 3.6)
replaces it by a normal law with mean ``sum_i pi_ij`` and variance
``sum_i pi_ij (1 - pi_ij)``; here it is discretised with continuity correction and
renormalised on ``0 .. n-1``. ``method="hybrid"`` keeps the exact recursion for the
documents whose expected rank is within ``n_exact`` of the top or the bottom.

SoftNDCG (eq. 15) is ``sum_j u_j sum_r D(r) p_j(r)`` with ``u = G(r)/IDCG``; the loss is
``1 - SoftNDCG``. Its gradient is computed by reverse mode through the recursion
(``O(n^3)``; the adjoint of one step is ``dL/dpi = sum_r gbar(r) (p(r-1) - p(r))`` and
``gbar_old(r) = pi gbar(r+1) + (1 - pi) gbar(r)``), then through eq. 9 with
``d pi_ij / d s_i = -d pi_ij / d s_j = N(0 | s_i - s_j, 2 sigma^2)`` (eq. 20). The paper's
forward recursion for the derivatives (eq. 18, ``O(n^4)``) serves as the test oracle.

*Sinkhorn post-scaling* (section 3.2): the rank-binomials treat the contests as
independent, so the matrix ``[p_j(r)]`` has unit rows but not unit columns. With
``sinkhorn_iter = T > 0`` it is replaced by ``Z^T(p)``, ``T`` iterations of "divide each
column by its sum, then each row by its sum" (:func:`rankmodels.dsm.sinkhorn`; the paper
iterates to convergence, where ``Z^T(p)`` is the doubly-stochastic matrix closest to ``p``
in Kullback-Leibler divergence), before SoftNDCG is taken. The gradient goes back through
the iterations (:func:`rankmodels.dsm.sinkhorn_vjp`) to ``dL/dp`` and then through the
recursion as above.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from rankmodels.dsm import sinkhorn, sinkhorn_vjp
from rankmodels.ltr.batching import LossResult, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = ["MAX_SINKHORN", "METHODS", "rank_distribution", "softndcg_loss"]

MAX_SINKHORN = 10_000
"""Largest ``sinkhorn_iter`` (the backward pass keeps ``O(B n sinkhorn_iter)`` numbers)."""

METHODS = ("exact", "normal", "hybrid")


@numba.njit(cache=True)
def _phi_cdf(x):  # pragma: no cover - numba
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@numba.njit(cache=True)
def _beat_probabilities(s, sigma):  # pragma: no cover - numba
    """``pi[i, j]`` (eq. 9) and ``dens[i, j] = d pi_ij / d s_i`` (eq. 20)."""
    m = s.shape[0]
    pi = np.empty((m, m))
    dens = np.empty((m, m))
    scale = math.sqrt(2.0) * sigma
    norm = 1.0 / (2.0 * math.sqrt(math.pi) * sigma)  # 1/sqrt(4 pi sigma^2), no underflow
    for i in range(m):
        for j in range(m):
            z = (s[i] - s[j]) / scale
            pi[i, j] = _phi_cdf(z)
            dens[i, j] = norm * math.exp(-0.5 * z * z)
    return pi, dens


@numba.njit(cache=True)
def _exact_column(pi, j, p, hist, gbar, gpi, want_grad):  # pragma: no cover - numba
    """Rank-binomial of document ``j`` into ``p``; with ``want_grad`` accumulate
    ``gpi[i, j] = dL/dpi_ij`` for ``L = gbar . p`` by reverse mode."""
    m = pi.shape[0]
    p[:] = 0.0
    p[0] = 1.0
    c = 0
    for i in range(m):
        if i == j:
            continue
        q = pi[i, j]
        if want_grad:
            for r in range(c + 1):
                hist[c, r] = p[r]
        for r in range(c + 1, 0, -1):
            p[r] = p[r - 1] * q + p[r] * (1.0 - q)
        p[0] *= 1.0 - q
        c += 1
    if not want_grad:
        return
    g = gbar.copy()
    for i in range(m - 1, -1, -1):
        if i == j:
            continue
        c -= 1
        q = pi[i, j]
        d = 0.0
        for r in range(c + 2):
            before = hist[c, r - 1] if r >= 1 else 0.0
            here = hist[c, r] if r <= c else 0.0
            d += g[r] * (before - here)
        gpi[i, j] += d
        for r in range(c + 1):
            g[r] = q * g[r + 1] + (1.0 - q) * g[r]


@numba.njit(cache=True)
def _normal_column(pi, j, p, gbar, gpi, want_grad):  # pragma: no cover - numba
    """Normal approximation of document ``j``'s rank law (continuity-corrected,
    renormalised on 0..m-1), and its adjoint through mean and variance."""
    m = pi.shape[0]
    mu = 0.0
    var = 0.0
    for i in range(m):
        if i != j:
            mu += pi[i, j]
            var += pi[i, j] * (1.0 - pi[i, j])
    sd = math.sqrt(max(var, 1e-12))
    F = np.empty(m + 1)
    f = np.empty(m + 1)
    a = np.empty(m + 1)
    for r in range(m + 1):
        a[r] = (r - 0.5 - mu) / sd
        F[r] = _phi_cdf(a[r])
        f[r] = math.exp(-0.5 * a[r] * a[r]) / math.sqrt(2.0 * math.pi)
    Z = F[m] - F[0]
    if Z <= 0.0:  # mass entirely outside 0..m-1: cannot happen for 0 <= mu <= m-1
        Z = 1e-300
    for r in range(m):
        p[r] = (F[r + 1] - F[r]) / Z
    if not want_grad:
        return
    L = 0.0
    for r in range(m):
        L += gbar[r] * p[r]
    dmu = 0.0
    dvar = 0.0
    for r in range(m + 1):
        dF = 0.0
        if r >= 1:
            dF += gbar[r - 1] / Z
        if r <= m - 1:
            dF -= gbar[r] / Z
        if r == m:
            dF -= L / Z
        if r == 0:
            dF += L / Z
        dmu += dF * (-f[r] / sd)
        if var > 1e-12:
            dvar += dF * (-f[r] * a[r] / (2.0 * var))
    for i in range(m):
        if i != j:
            gpi[i, j] += dmu + dvar * (1.0 - 2.0 * pi[i, j])


@numba.njit(cache=True)
def _columns(pi, js, mode, n_exact, gbar_b, want_grad, p_b, gpi):  # pragma: no cover
    """Rank laws (and adjoints into ``gpi[:, j]``) of the documents ``js`` of one query."""
    m = pi.shape[0]
    hist = np.empty((m, m)) if want_grad else np.empty((1, 1))
    p = np.empty(m)
    for j in js:
        exact = mode == 0
        if mode == 2:
            mu = 0.0
            for i in range(m):
                if i != j:
                    mu += pi[i, j]
            exact = mu < n_exact or mu > m - 1 - n_exact
        g = gbar_b[j, :m].copy() if want_grad else np.empty(1)
        if exact:
            _exact_column(pi, j, p, hist, g, gpi, want_grad)
        else:
            _normal_column(pi, j, p, g, gpi, want_grad)
        for r in range(m):
            p_b[j, r] = p[r]


@numba.njit(cache=True)
def _scores_gradient(gpi, dens, grad_b):  # pragma: no cover - numba
    """Eq. 20: ``grad[i] += gpi[i,j] dens[i,j]``, ``grad[j] -= gpi[i,j] dens[i,j]``."""
    m = gpi.shape[0]
    for i in range(m):
        for j in range(m):
            if i != j:
                w = gpi[i, j] * dens[i, j]
                grad_b[i] += w
                grad_b[j] -= w


@numba.njit(parallel=True, cache=True)
def _softrank_batch(
    scores, lengths, sigma, mode, n_exact, gbar, want_grad, p_out, grad_out
):  # pragma: no cover - numba
    """Parallel over queries."""
    for b in numba.prange(scores.shape[0]):
        m = lengths[b]
        if m == 0:
            continue
        pi, dens = _beat_probabilities(scores[b, :m].copy(), sigma)
        gpi = np.zeros((m, m))
        gbar_b = gbar[b] if want_grad else gbar[0]
        _columns(pi, np.arange(m), mode, n_exact, gbar_b, want_grad, p_out[b], gpi)
        if want_grad:
            _scores_gradient(gpi, dens, grad_out[b])


@numba.njit(parallel=True, cache=True)
def _softrank_split(
    scores, lengths, sigma, mode, n_exact, gbar, want_grad, p_out, grad_out, split, gpi_all
):  # pragma: no cover - numba
    """For few queries: parallel over ``split`` chunks of the documents of every query
    (each chunk owns the columns ``gpi[:, j]`` of its documents)."""
    B = scores.shape[0]
    for task in numba.prange(B * split):
        b = task // split
        c = task % split
        m = lengths[b]
        if m == 0:
            continue
        pi, _ = _beat_probabilities(scores[b, :m].copy(), sigma)
        gbar_b = gbar[b] if want_grad else gbar[0]
        _columns(pi, np.arange(c, m, split), mode, n_exact, gbar_b, want_grad, p_out[b], gpi_all[b])
    if want_grad:
        for b in range(B):
            m = lengths[b]
            _, dens = _beat_probabilities(scores[b, :m].copy(), sigma)
            _scores_gradient(gpi_all[b, :m, :m], dens, grad_out[b])


def _run(
    batch, sigma: float, method: str, n_exact: int, gbar: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if n_exact < 0:
        raise ValueError(f"n_exact must be >= 0, got {n_exact}")
    B, n = batch.scores.shape
    p = np.zeros((B, n, n))
    grad = np.zeros((B, n))
    want = gbar is not None
    args = (
        np.ascontiguousarray(batch.scores),
        batch.lengths,
        float(sigma),
        METHODS.index(method),
        float(n_exact),
        np.ascontiguousarray(gbar) if want else np.zeros((1, 1, 1)),
        want,
        p,
        grad,
    )
    threads = numba.get_num_threads()
    if B >= threads:
        _softrank_batch(*args)
    else:  # few queries: share the documents of each query out over the threads
        _softrank_split(*args, threads, np.zeros((B, n, n) if want else (B, 1, 1)))
    return p, grad


def rank_distribution(
    scores: object,
    sigma: float,
    lengths: object | None = None,
    *,
    method: str = "exact",
    n_exact: int = 10,
) -> np.ndarray:
    """Rank distributions ``p[j, r] = P(rank of j = r)`` (0 = best) of SoftRank.

    ``method`` is ``"exact"`` (rank-binomial recursion, eqs. 11-12), ``"normal"`` (section
    3.6 approximation) or ``"hybrid"`` (exact for documents whose expected rank is below
    ``n_exact`` or above ``n - 1 - n_exact``). Returns ``(n, n)`` or ``(B, n, n)``; each row
    sums to one (columns need not: the rank-binomial treats the pairwise contests as
    independent).
    """
    batch = ragged_batch(scores, None, lengths)
    p, _ = _run(batch, sigma, method, n_exact, None)
    return p[0] if batch.single else p


def softndcg_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    sigma: float = 1.0,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
    method: str = "exact",
    n_exact: int = 10,
    sinkhorn_iter: int = 0,
) -> LossResult:
    """``1 - SoftNDCG`` (eq. 15, truncated at ``k`` if given) and its exact gradient.

    SoftRank's own conventions are ``gain="exp2"`` and ``discount="log2"`` (eq. 2);
    ``sigma`` is the score smoothing ``sigma_s``; ``sinkhorn_iter`` Sinkhorn iterations
    post-scale the rank distributions (section 3.2, module docstring; 0: none). Queries
    without relevant documents have loss 0 and zero gradient.
    """
    if not 0 <= sinkhorn_iter <= MAX_SINKHORN:
        raise ValueError(f"sinkhorn_iter must lie in 0..{MAX_SINKHORN}, got {sinkhorn_iter}")
    batch = ragged_batch(scores, relevance, lengths)
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    gbar = -u[:, :, None] * d[None, None, :]
    if sinkhorn_iter:
        p, _ = _run(batch, sigma, method, n_exact, None)
        with np.errstate(divide="ignore"):
            scaled = sinkhorn(np.log(p), batch.lengths, n_iter=sinkhorn_iter)
        g_log_p = sinkhorn_vjp(scaled, gbar)
        gbar = np.where(p > 0, g_log_p / np.where(p > 0, p, 1.0), 0.0)  # d/dp = d/dlog p / p
        _, grad = _run(batch, sigma, method, n_exact, gbar)
        p = scaled.p
    else:
        p, grad = _run(batch, sigma, method, n_exact, gbar)
    value = np.where(defined, 1.0 - np.einsum("bj,bjr,r->b", u, p, d), 0.0)
    return batch.result(value, grad)
