"""Doubly-stochastic matrices: marginals of distributions over permutations.

The marginal matrix of a distribution ``P`` over permutations of ``n`` items is

    M[x, k] = P(item x is at position k),

with position 0 the best (see :mod:`rankmodels.permutations` for the conventions).
Every row and column of ``M`` sums to one (Birkhoff polytope). Positional scoring in rank
aggregation is ``f = M @ h`` ([Pareek2017] eq. 4.5, the cumulative score ``f_P(x) =
E[h(sigma(x))]``); an expected rank-linear metric in learning to rank is ``g @ M @ d``
(SinkProp eq. 3, the expectation of a rank-linear metric from the marginals alone);
Sinkhorn normalisation projects a positive matrix onto the polytope.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from scipy.optimize import linear_sum_assignment

from rankmodels.permutations import as_permutation

__all__ = [
    "SinkhornConvergenceWarning",
    "SinkhornResult",
    "birkhoff_decomposition",
    "hungarian_decode",
    "is_doubly_stochastic",
    "marginal_matrix",
    "permutation_matrix",
    "sinkhorn",
    "sinkhorn_vjp",
]


def permutation_matrix(order: np.ndarray) -> np.ndarray:
    """0/1 marginal matrix of one or more orders: ``P[..., x, k] = 1`` iff ``order[k] == x``.

    Shape ``(..., n)`` in, ``(..., n, n)`` out.
    """
    order = as_permutation(order, "order")
    n = order.shape[-1]
    eye = np.eye(n)
    # Row x of P is the indicator of x's position; P[..., order[k], k] = 1.
    return np.swapaxes(eye[order], -1, -2)


def marginal_matrix(orders: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Marginal matrix ``M[x, k] = sum_j w_j 1(orders[j, k] == x) / sum_j w_j``.

    Parameters
    ----------
    orders:
        ``(m, n)`` integer array, each row an order (items best first).
    weights:
        ``(m,)`` non-negative weights (counts or probabilities); uniform if omitted.
        They are normalised to sum to one.

    Returns
    -------
    ``(n, n)`` doubly-stochastic matrix.
    """
    orders = as_permutation(np.atleast_2d(orders), "orders")
    if orders.ndim != 2:
        raise ValueError(f"orders must be a 2-d (m, n) array, got shape {orders.shape}")
    m, n = orders.shape
    if weights is None:
        w = np.full(m, 1.0 / max(m, 1))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (m,):
            raise ValueError(f"weights must have shape ({m},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and non-negative")
        total = w.sum()
        if total <= 0:
            raise ValueError("weights must not all be zero")
        w = w / total
    M = np.zeros((n, n))
    positions = np.broadcast_to(np.arange(n), (m, n))
    np.add.at(M, (orders, positions), np.broadcast_to(w[:, None], (m, n)))
    return M


def is_doubly_stochastic(M: np.ndarray, atol: float = 1e-8) -> bool:
    """True when ``M`` (or each matrix of a ``(..., n, n)`` stack) is non-negative with unit
    row and column sums, up to ``atol``."""
    M = np.asarray(M, dtype=float)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        return False
    return bool(
        np.all(M >= -atol)
        and np.allclose(M.sum(axis=-1), 1.0, atol=atol)
        and np.allclose(M.sum(axis=-2), 1.0, atol=atol)
    )


# --------------------------------------------------------------------------- Sinkhorn


class SinkhornConvergenceWarning(UserWarning):
    """:func:`sinkhorn` in tolerance mode reached ``max_iter`` before the column sums were
    within ``tol`` of one (the result's ``converged`` says which matrices)."""


@dataclass(frozen=True)
class SinkhornResult:
    """Output of :func:`sinkhorn`, with what :func:`sinkhorn_vjp` needs to go backward.

    Attributes
    ----------
    log_p, p:
        ``(B, n, n)`` (or ``(n, n)``) normalised matrix and its log (0 / ``-inf`` on padding).
    n_iter:
        ``(B,)`` number of (column, row) iterations performed on each matrix.
    col_error:
        ``(B,)`` largest column-sum error ``max_k |sum_j P[j, k] - 1|`` of each result (the
        rows sum to one exactly after the final row step).
    converged:
        ``(B,)`` True where ``col_error <= tol``. In tolerance mode a False entry means
        ``max_iter`` ran out first (and :func:`sinkhorn` warned); after a fixed ``n_iter``
        it only says how far the incomplete normalisation is from a DSM.
    lengths:
        ``(B,)`` list sizes: matrix ``b`` lives in ``[:lengths[b], :lengths[b]]``.
    log_a, col_hist, row_hist, top:
        The input and, per iteration ``t``, ``(B, T, n)`` vectors from which the backward
        pass rebuilds iterate ``t`` instead of storing it (``None`` when ``record=False``):
        for a matrix run in the scaling domain the scalings ``v_t, u_t`` with iterate
        ``diag(u_t) exp(log_a - top) diag(v_t)``; for one run in the log domain the
        cumulative log-normalisers ``C_t, R_t`` with iterate ``log_a[j,k] - C_t[k] - R_t[j]``.
    scaled:
        ``(B,)`` True where the iterations ran in the scaling domain.
    """

    log_p: np.ndarray
    p: np.ndarray
    n_iter: np.ndarray
    col_error: np.ndarray
    converged: np.ndarray
    lengths: np.ndarray
    log_a: np.ndarray
    col_hist: np.ndarray | None
    row_hist: np.ndarray | None
    top: np.ndarray
    scaled: np.ndarray
    single: bool


_FAST = {"contract", "reassoc", "nsz", "arcp"}  # no nnan/ninf: -inf entries are legal
_SCALE_LIMIT = 1e100  # bound on the scaling vectors of the fast path


class _Controls(NamedTuple):
    """How the forward pass iterates: ``steps`` iterations exactly (``tol == 0``) or at most
    (``tol > 0``: until the column-sum error is within ``tol``); ``record`` whether the
    per-iteration vectors are kept for the backward pass; ``allow_scaled`` whether a matrix
    may run in the scaling domain (else the log domain throughout)."""

    steps: int
    tol: float
    record: bool
    allow_scaled: bool


class _Path(NamedTuple):
    """A batch of ``B`` matrices, padded to ``n``, and how the forward pass went on each:
    what the backward pass replays (:class:`SinkhornResult` describes each field).

    ``log_a`` ``(B, n, n)`` the input; ``lengths`` ``(B,)`` int64 the matrices' sizes;
    ``n_iter`` ``(B,)`` int64 iterations done; ``scaled`` ``(B,)`` bool, ran in the scaling
    domain; ``top`` ``(B,)`` ``max log_a``; ``col_hist``, ``row_hist`` ``(B, T, n)`` the
    per-iteration vectors (``(1, 1, 1)`` scratch when not recorded). The forward pass reads
    ``log_a`` and ``lengths`` and fills the rest."""

    log_a: np.ndarray
    lengths: np.ndarray
    n_iter: np.ndarray
    scaled: np.ndarray
    top: np.ndarray
    col_hist: np.ndarray
    row_hist: np.ndarray


class _Output(NamedTuple):
    """What the forward pass fills besides its :class:`_Path`: ``log_p``, ``p``
    ``(B, n, n)`` the result and its log (``-inf`` / 0 on padding); ``ok`` ``(B,)`` bool,
    every row and column had mass; ``col_error`` ``(B,)`` the final column-sum error."""

    log_p: np.ndarray
    p: np.ndarray
    ok: np.ndarray
    col_error: np.ndarray


@numba.njit(cache=True)
def _record(first_hist, second_hist, t, first, second):  # pragma: no cover - numba
    """Store the per-iteration vectors of iteration ``t`` for the backward pass."""
    for k in range(first.shape[0]):
        first_hist[t, k] = first[k]
        second_hist[t, k] = second[k]


@numba.njit(cache=True)
def _log_iterations(X, controls, C_hist, R_hist, C, R):  # pragma: no cover
    """Pure log-domain iterations on ``X = log_a - C - R`` (updated in place), as
    ``controls`` (:class:`_Controls`) say.

    Returns the number of iterations done, whether every row / column had mass, and the
    column-sum error ``max_k |sum_j exp(X[j, k]) - 1|`` of the final iterate (the
    stopping test of tolerance mode). ``C_hist[t], R_hist[t]`` receive the cumulative
    normalisers after iteration ``t`` when ``controls.record``.
    """
    steps, tol = controls.steps, controls.tol
    m = X.shape[0]
    mx = np.empty(m)
    acc = np.empty(m)
    ok = True
    t = 0
    while True:
        for k in range(m):
            mx[k] = -np.inf
            acc[k] = 0.0
        for j in range(m):
            for k in range(m):
                if X[j, k] > mx[k]:
                    mx[k] = X[j, k]
        for j in range(m):
            for k in range(m):
                acc[k] += np.exp(X[j, k] - mx[k])
        worst = 0.0
        for k in range(m):
            if mx[k] == -np.inf:
                ok = False
                acc[k] = 0.0
            else:
                acc[k] = mx[k] + np.log(acc[k])
            worst = max(worst, abs(np.exp(acc[k]) - 1.0))
        if t == steps or (tol > 0.0 and t > 0 and worst <= tol):
            break
        for k in range(m):
            C[k] += acc[k]
        for j in range(m):
            for k in range(m):
                X[j, k] -= acc[k]
        for j in range(m):
            rm = -np.inf
            for k in range(m):
                if X[j, k] > rm:
                    rm = X[j, k]
            r = 0.0
            if rm == -np.inf:
                ok = False
            else:
                s = 0.0
                for k in range(m):
                    s += np.exp(X[j, k] - rm)
                r = rm + np.log(s)
            R[j] += r
            for k in range(m):
                X[j, k] -= r
        if controls.record:
            _record(C_hist, R_hist, t, C, R)
        t += 1
    return t, ok, worst


@numba.njit(fastmath=_FAST, cache=True)
def _scaled_iterations(E, controls, V_hist, U_hist, u, v):  # pragma: no cover
    """Iterations in the scaling domain, as ``controls`` (:class:`_Controls`) say: the
    iterate is ``diag(u) E diag(v)``.

    ``E = exp(log_a - max log_a)`` has entries in [0, 1] with a 1 somewhere. No logarithm
    or exponential is taken per iteration; ``V_hist[t], U_hist[t]`` receive the scalings
    after iteration ``t`` when ``controls.record``. Returns the number of iterations done,
    False if a scaling left ``[1/_SCALE_LIMIT, _SCALE_LIMIT]`` (the caller then redoes the
    matrix in the log domain), and the column-sum error of the final iterate.
    """
    steps, tol = controls.steps, controls.tol
    m = E.shape[0]
    sig = np.empty(m)
    t = 0
    while True:
        for k in range(m):
            sig[k] = 0.0
        for j in range(m):
            uj = u[j]
            for k in range(m):
                sig[k] += E[j, k] * uj
        worst = 0.0
        for k in range(m):
            worst = max(worst, abs(v[k] * sig[k] - 1.0))
        if t == steps or (tol > 0.0 and t > 0 and worst <= tol):
            break
        for k in range(m):
            if not (sig[k] > 1.0 / _SCALE_LIMIT):
                return t, False, worst
            v[k] = 1.0 / sig[k]
        for j in range(m):
            rho = 0.0
            for k in range(m):
                rho += E[j, k] * v[k]
            if not (rho > 1.0 / _SCALE_LIMIT and rho < _SCALE_LIMIT):
                return t, False, worst
            u[j] = 1.0 / rho
        if controls.record:
            _record(V_hist, U_hist, t, v, u)
        t += 1
    return t, True, worst


@numba.njit(cache=True)
def _normalise(path, controls, out, b):  # pragma: no cover - numba
    """Matrix ``b`` of :func:`_sinkhorn_forward`."""
    m = path.lengths[b]
    la = np.ascontiguousarray(path.log_a[b, :m, :m])
    X = la.copy()
    P = np.empty((m, m))
    Ch = path.col_hist[b] if controls.record else path.col_hist[0]
    Rh = path.row_hist[b] if controls.record else path.row_hist[0]
    top = -np.inf
    for j in range(m):
        for k in range(m):
            top = max(top, la[j, k])
    scaled = controls.allow_scaled and controls.steps > 0 and top > -np.inf
    good = True
    t = 0
    worst = 0.0
    if scaled:
        # scaling domain on E = exp(log_a - top): one exponential per entry in all
        for j in range(m):
            for k in range(m):
                P[j, k] = np.exp(la[j, k] - top)
        u = np.ones(m)
        v = np.ones(m)
        t, scaled, worst = _scaled_iterations(P, controls, Ch, Rh, u, v)
        if scaled:
            # iterate = exp(log_a - C - R) with C = top - log v, R = -log u
            lv = np.log(v) - top
            for j in range(m):
                lu = np.log(u[j])
                for k in range(m):
                    X[j, k] = la[j, k] + lv[k] + lu
                    P[j, k] *= u[j] * v[k]
    if not scaled:
        X[:, :] = la
        C = np.zeros(m)
        R = np.zeros(m)
        t, good, worst = _log_iterations(X, controls, Ch, Rh, C, R)
        for j in range(m):
            for k in range(m):
                P[j, k] = np.exp(X[j, k])
    out.log_p[b, :, :] = -np.inf
    out.p[b, :, :] = 0.0
    out.log_p[b, :m, :m] = X
    out.p[b, :m, :m] = P
    path.top[b] = top
    path.scaled[b] = scaled
    out.ok[b] = good
    path.n_iter[b] = t
    out.col_error[b] = worst


@numba.njit(parallel=True, cache=True)
def _sinkhorn_forward(path, controls, out):  # pragma: no cover - numba
    """Normalise every matrix of ``path`` (:class:`_Path`) as ``controls`` (:class:`_Controls`)
    say, filling the rest of ``path`` and ``out`` (:class:`_Output`). Each matrix is done by
    a function of its own (:func:`_normalise`): numba drops what a parallel loop writes
    through a namedtuple's field (numba issue 7135)."""
    for b in numba.prange(path.log_a.shape[0]):
        _normalise(path, controls, out, b)


@numba.njit(fastmath=_FAST, cache=True)
def _adjoint_rows(G, K, a, bk):  # pragma: no cover - numba
    """``G <- G - Y * rowsum(G)`` with ``Y[j, k] = K[j, k] a[j] bk[k]`` (adjoint of T_R)."""
    m = G.shape[0]
    for j in range(m):
        s = 0.0
        for k in range(m):
            s += G[j, k]
        c = a[j] * s
        for k in range(m):
            G[j, k] -= K[j, k] * c * bk[k]


@numba.njit(fastmath=_FAST, cache=True)
def _adjoint_cols(G, K, a, bk, cs):  # pragma: no cover - numba
    """``G <- G - Y * colsum(G)`` with ``Y[j, k] = K[j, k] a[j] bk[k]`` (adjoint of T_C)."""
    m = G.shape[0]
    for k in range(m):
        cs[k] = 0.0
    for j in range(m):
        for k in range(m):
            cs[k] += G[j, k]
    for k in range(m):
        cs[k] *= bk[k]
    for j in range(m):
        aj = a[j]
        for k in range(m):
            G[j, k] -= K[j, k] * aj * cs[k]


@numba.njit(cache=True)
def _adjoint(path, grad_log_p, out, b):  # pragma: no cover - numba
    """Matrix ``b`` of :func:`_sinkhorn_backward`."""
    m = path.lengths[b]
    T = path.n_iter[b]
    G = np.ascontiguousarray(grad_log_p[b, :m, :m])
    la = np.ascontiguousarray(path.log_a[b, :m, :m])
    Ch, Rh = path.col_hist[b], path.row_hist[b]
    K = np.empty((m, m))
    ones = np.ones(m)
    cs = np.empty(m)
    if T > 0 and path.scaled[b]:
        # iterate t = diag(u_t) E diag(v_t), E = exp(log_a - top): no exp per step
        top = path.top[b]
        for j in range(m):
            for k in range(m):
                K[j, k] = np.exp(la[j, k] - top)
        for t in range(T - 1, -1, -1):
            _adjoint_rows(G, K, Rh[t], Ch[t])
            _adjoint_cols(G, K, Rh[t - 1] if t > 0 else ones, Ch[t], cs)
    else:
        # log domain: rebuild each iterate from log_a and the log-normalisers
        for t in range(T - 1, -1, -1):
            for j in range(m):
                for k in range(m):
                    K[j, k] = np.exp(la[j, k] - Ch[t, k] - Rh[t, j])
            _adjoint_rows(G, K, ones, ones)
            for j in range(m):
                rp = Rh[t - 1, j] if t > 0 else 0.0
                for k in range(m):
                    K[j, k] = np.exp(la[j, k] - Ch[t, k] - rp)
            _adjoint_cols(G, K, ones, ones, cs)
    out[b, :, :] = 0.0
    out[b, :m, :m] = G


@numba.njit(parallel=True, cache=True)
def _sinkhorn_backward(path, grad_log_p, out):  # pragma: no cover - numba
    """``out`` ``(B, n, n)`` <- the gradient with respect to ``path.log_a`` from
    ``grad_log_p`` ``(B, n, n)``, the gradient with respect to the result's log, replaying
    the forward pass of ``path`` (:class:`_Path`); zero on padding. Each matrix is done by
    :func:`_adjoint` (as :func:`_sinkhorn_forward` does its own)."""
    for b in numba.prange(path.log_a.shape[0]):
        _adjoint(path, grad_log_p, out, b)


def _square_stack(log_a: np.ndarray, lengths: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if log_a.ndim != 3 or log_a.shape[1] != log_a.shape[2]:
        raise ValueError(f"log_a must be (n, n) or (B, n, n), got shape {log_a.shape}")
    B, n = log_a.shape[0], log_a.shape[1]
    if lengths is None:
        return log_a, np.full(B, n, dtype=np.int64)
    lens = np.asarray(lengths)
    if lens.size and not np.issubdtype(lens.dtype, np.integer):
        raise TypeError(f"lengths must be integers, got dtype {lens.dtype}")
    lens = lens.astype(np.int64).reshape(-1)
    if lens.shape != (B,) or np.any(lens < 0) or np.any(lens > n):
        raise ValueError(f"lengths must be {B} integers in 0..{n}")
    return log_a, lens


def sinkhorn(
    log_a: np.ndarray,
    lengths: np.ndarray | None = None,
    *,
    n_iter: int | None = None,
    tol: float = 1e-9,
    max_iter: int = 1000,
    record: bool = True,
    domain: str = "auto",
    warn: bool = True,
) -> SinkhornResult:
    """Sinkhorn normalisation in the log domain, batched over matrices of different sizes.

    One iteration is a column then a row normalisation (SinkProp section 3,
    ``Z^i = T_R(T_C(Z^{i-1}))``)::

        X <- X - logsumexp_j X[j, :]      (columns sum to one)
        X <- X - logsumexp_k X[:, k]      (rows sum to one)

    starting from ``X = log A``. With ``n_iter`` exactly that many iterations are run (an
    *incomplete* normalisation, SinkProp uses 5); otherwise it iterates until the column
    sums are within ``tol`` of one (rows are exact after a row step) or ``max_iter``. Every
    result reports its column-sum error and ``converged`` (error within ``tol``) per
    matrix; in tolerance mode a matrix that runs out of iterations also emits a
    :class:`SinkhornConvergenceWarning` (as POT's ``sinkhorn(..., warn=True)`` warns that
    Sinkhorn did not converge).

    The iterations run on ``diag(u) K diag(v)`` with ``K = exp(log_a - max log_a)`` (one
    exponential per entry in all; the log-stabilised scheme of Schmitzer 2019) while the
    log-normalisers ``C, R`` are accumulated exactly, so ``log_p = log_a - C - R`` keeps
    full range. A matrix whose scalings leave ``[1e-100, 1e100]`` is redone entirely in the
    log domain. Entries of ``K`` that underflow contribute below ``1e-108`` to any entry of
    the result, so both paths compute the same function to rounding; ``domain="log"``
    forces the log domain (every iteration costs ``2 n^2`` exponentials instead of
    ``2 n^2`` multiply-adds).

    Parameters
    ----------
    log_a:
        ``(n, n)`` or ``(B, n, n)`` log of the non-negative matrices (``-inf`` for zeros).
        Matrix ``b`` is ``log_a[b, :lengths[b], :lengths[b]]``; the rest is ignored.
    lengths:
        ``(B,)`` sizes of the matrices in a padded batch; all ``n`` if omitted.
    n_iter, tol, max_iter:
        Either exactly ``n_iter`` iterations, or iterate until every column sum is within
        ``tol`` of one, at most ``max_iter`` times. ``tol`` also sets ``converged`` after
        a fixed ``n_iter``.
    warn:
        Warn when tolerance mode ends without converging (pass False when checking
        ``result.converged`` yourself).
    record:
        Keep the per-iteration log-normalisers (``B * T * n * 16`` bytes) for
        :func:`sinkhorn_vjp`.

    Raises
    ------
    ValueError
        If a row or column is entirely ``-inf`` (no doubly-stochastic scaling exists).
    """
    if domain not in ("auto", "log"):
        raise ValueError(f"domain must be 'auto' or 'log', got {domain!r}")
    arr = np.asarray(log_a, dtype=np.float64)
    single = arr.ndim == 2
    arr = np.ascontiguousarray(arr[None] if single else arr)
    arr, lens = _square_stack(arr, lengths)
    if np.any(np.isnan(arr)) or np.any(arr == np.inf):
        raise ValueError("log_a must not contain NaN or +inf")
    if n_iter is not None:
        if n_iter < 0:
            raise ValueError(f"n_iter must be >= 0, got {n_iter}")
        steps, tol_used = int(n_iter), 0.0
    else:
        if tol <= 0 or max_iter < 1:
            raise ValueError("tol must be > 0 and max_iter >= 1 when n_iter is not given")
        steps, tol_used = int(max_iter), float(tol)
    B, n = arr.shape[0], arr.shape[1]
    shape = (B, steps, n) if record else (1, 1, 1)
    path = _Path(
        log_a=arr,
        lengths=lens,
        n_iter=np.zeros(B, dtype=np.int64),
        scaled=np.zeros(B, dtype=np.bool_),
        top=np.zeros(B),
        col_hist=np.zeros(shape),
        row_hist=np.zeros(shape),
    )
    out = _Output(
        log_p=np.empty_like(arr),
        p=np.empty_like(arr),
        ok=np.ones(B, dtype=np.bool_),
        col_error=np.zeros(B),
    )
    _sinkhorn_forward(path, _Controls(steps, tol_used, bool(record), domain == "auto"), out)
    n_done, col_error = path.n_iter, out.col_error
    if not out.ok.all():
        bad = int(np.flatnonzero(~out.ok)[0])
        raise ValueError(f"matrix {bad} has a row or column without a positive entry")
    converged = col_error <= tol
    if warn and n_iter is None and not converged.all():
        late = np.flatnonzero(~converged)
        warnings.warn(
            f"sinkhorn did not converge: {late.size} of {B} matrices (first: {late[0]}) have "
            f"column sums off by up to {col_error[late].max():.3g} > tol={tol} after "
            f"max_iter={max_iter} iterations; increase max_iter or check for near-zero "
            "rows / columns",
            SinkhornConvergenceWarning,
            stacklevel=2,
        )
    if record:
        T = int(n_done.max(initial=0))
        col_hist, row_hist = path.col_hist[:, :T], path.row_hist[:, :T]
    else:
        col_hist = row_hist = None
    return SinkhornResult(
        out.log_p[0] if single else out.log_p,
        out.p[0] if single else out.p,
        n_done,
        col_error,
        converged,
        lens,
        arr,
        col_hist,
        row_hist,
        path.top,
        path.scaled,
        single,
    )


def sinkhorn_vjp(result: SinkhornResult, grad_p: np.ndarray) -> np.ndarray:
    """Exact vector-Jacobian product of :func:`sinkhorn`: ``dU/d log_a`` from ``dU/dP``.

    Reverse mode through the unrolled iterations actually performed (SinkProp section 3 in
    the log domain). Through ``Y = X - logsumexp(X)`` along an axis the adjoint is
    ``g_X = g_Y - exp(Y) * sum(g_Y)`` along that axis; the iterates ``Y`` are rebuilt from
    the recorded per-iteration vectors (scalings, or cumulative log-normalisers in the log
    domain, see :class:`SinkhornResult`), so memory stays ``O(B n T)``. The input gradient
    is ``g_log_P = grad_p * P``. For the gradient with respect to ``A`` itself divide by
    ``A``.

    ``grad_p`` has the shape of ``result.log_p``; the output has the shape of ``log_a``
    (zero on padding).
    """
    if result.col_hist is None:
        raise ValueError("sinkhorn was run with record=False; rerun with record=True")
    g = np.asarray(grad_p, dtype=np.float64)
    if g.shape != result.log_p.shape:
        raise ValueError(f"grad_p must have shape {result.log_p.shape}, got {g.shape}")
    p = result.p[None] if result.single else result.p
    g_log_p = (g[None] if result.single else g) * p
    path = _Path(
        result.log_a,
        result.lengths,
        result.n_iter,
        result.scaled,
        result.top,
        result.col_hist,
        result.row_hist,
    )
    out = np.empty_like(result.log_a)
    _sinkhorn_backward(path, np.ascontiguousarray(g_log_p), out)
    return out[0] if result.single else out


# ------------------------------------------------------------------ decoding a DSM


def _finite_log(log_p: np.ndarray) -> np.ndarray:
    """Replace ``-inf`` by a value far below every finite entry (for assignment solvers)."""
    finite = np.isfinite(log_p)
    floor = (log_p[finite].min() if finite.any() else 0.0) - 1e6
    return np.where(finite, log_p, floor)


def _assign(log_p: np.ndarray) -> np.ndarray:
    """Order maximising ``sum_k log_p[order[k], k]`` (SinkProp eq. 5)."""
    items, positions = linear_sum_assignment(_finite_log(log_p), maximize=True)
    order = np.empty(log_p.shape[0], dtype=np.int64)
    order[positions] = items
    return order


def hungarian_decode(
    log_p: np.ndarray,
    lengths: np.ndarray | None = None,
    *,
    shortcut: int | None = None,
) -> np.ndarray:
    """Most likely single permutation under a DSM: ``argmax_s sum_k log P[s[k], k]`` (eq. 5).

    Solved exactly with the Hungarian algorithm (``scipy.optimize.linear_sum_assignment``,
    ``O(n^3)``). With ``shortcut=P`` and lists longer than ``P`` the paper's short-cut
    (SinkProp section 2.3) is used: sort the items by expected position
    ``E[rank_j] = sum_k P[j, k] k`` (``O(n^2)``), then re-solve eq. 5 exactly for the top
    ``P`` items on the top ``P`` positions, keeping the rest of that order (``O(n^2 + P^3)``).

    ``log_p`` is ``(n, n)`` or ``(B, n, n)`` (log of the DSM, ``-inf`` allowed); returns
    orders (items best first) of shape ``(n,)`` or ``(B, n)``, padded with ``-1``.
    """
    arr = np.asarray(log_p, dtype=float)
    single = arr.ndim == 2
    arr, lens = _square_stack(arr[None] if single else arr, lengths)
    if shortcut is not None and shortcut < 1:
        raise ValueError(f"shortcut must be >= 1, got {shortcut}")
    out = np.full(arr.shape[:2], -1, dtype=np.int64)
    for b in range(arr.shape[0]):
        m = int(lens[b])
        sub = arr[b, :m, :m]
        if shortcut is None or m <= shortcut:
            out[b, :m] = _assign(sub)
            continue
        expected = np.exp(sub) @ np.arange(m)
        rough = np.argsort(expected, kind="stable")
        top = rough[:shortcut]
        head = _assign(sub[np.ix_(top, np.arange(shortcut))])
        out[b, :shortcut] = top[head]
        out[b, shortcut:m] = rough[shortcut:]
    return out[0] if single else out


def birkhoff_decomposition(
    M: np.ndarray, *, tol: float = 1e-9, max_terms: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Write a DSM as a convex combination of permutations (Birkhoff-von Neumann).

    Greedy: repeatedly take the permutation in the support of the residual ``R`` that
    maximises ``sum_k log R[order[k], k]`` (an assignment problem), give it the weight
    ``w = min_k R[order[k], k]`` and subtract ``w`` along it. Each step zeroes at least one
    entry, so at most ``n^2 - 2n + 2`` terms are produced (Marcus-Ree / SinkProp sec. 2.2).
    Stops when the remaining mass ``sum(R) / n`` is below ``tol``.

    Returns ``orders`` ``(m, n)`` (items best first, as :func:`marginal_matrix` takes them)
    and ``weights`` ``(m,)`` with ``marginal_matrix(orders, weights) ~= M`` and
    ``weights.sum() ~= 1``.
    """
    R = np.array(M, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError(f"M must be a square matrix, got shape {R.shape}")
    if not is_doubly_stochastic(R, atol=max(tol, 1e-8) * R.shape[0]):
        raise ValueError("M must be doubly stochastic")
    n = R.shape[0]
    limit = n * n - 2 * n + 2 if max_terms is None else max_terms
    cols = np.arange(n)
    orders, weights = [], []
    while R.sum() / max(n, 1) > tol and len(weights) < max(limit, 1):
        support = R > tol
        with np.errstate(divide="ignore"):
            order = _assign(np.where(support, np.log(np.where(support, R, 1.0)), -np.inf))
        w = R[order, cols].min()
        if w <= tol:
            break  # only numerical dust is left
        R[order, cols] -= w
        R[np.abs(R) < tol * 1e-3] = 0.0
        orders.append(order)
        weights.append(w)
    if not weights:
        raise ValueError("M has no permutation in its support above tol")
    return np.array(orders, dtype=np.int64), np.array(weights)
