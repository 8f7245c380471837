"""Loopy belief propagation on the bipartite S_i / R_j graph (dissertation eqs. 5.28-5.63).

The conditional random field of Fig. 5.5 has source variables ``S_i`` (an arrival ``j``, late
``L`` or missing ``M``) and arrival variables ``R_j`` (a source ``i`` or clutter ``C``), unary
factors (5.66) and (5.67), and pairwise factors (5.23) that forbid ``S_i = j`` without
``R_j = i`` and vice versa. ``L`` and ``M`` are indistinguishable to every pairwise factor, so
they are merged into one "unmatched" state of weight ``u_i = (1 - P_D) + P_D P(t_i > tau)``
(this leaves the Bethe free energy unchanged). The potentials are scaled so that nothing
over- or underflows: each source's by its largest weight, then each arrival's (its matches and
its clutter weight ``lambda / W``) by its largest; this changes ``log Z`` by a known constant.
With ``w_ij`` the scaled match, ``u_i`` the scaled unmatched and ``k_j`` the scaled clutter
weight, every message across an edge is a ratio "matched over not matched":

    beta_ij  = w_ij / (u_i + sum_{k != j} w_ik alpha_ki)      S_i -> R_j   (eqs. 5.28-5.29)
    alpha_ji = 1 / (k_j + sum_{l != i} beta_lj)               R_j -> S_i   (eqs. 5.33-5.35)

A sweep updates every ``beta`` from the current ``alpha``, then every ``alpha`` from the new
``beta``, with damping (``new = damping * old + (1 - damping) * update``), until no message
changes by more than ``tol`` relative to its size. Convergence is linear; it is slow (a factor
of about 0.94 per sweep) when two arrivals within ``sigma`` of each other can each come from
the same two sources. The partition
function is the Bethe estimate (Huang and Jebara 2009; the paper, section 5.4.2)

    log Z ~ sum_n sum b_n log phi_n + sum_edges H(b_e) - sum_n (deg_n - 1) H(b_n),

exact when the graph is a tree (one source or one arrival). ``loglik`` carries the same
particle-independent terms as the exact engine, and the association posterior is the belief
of ``R_j``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_num_threads, njit, prange

from rankmodels.tracking.engines._common import (
    LOG_SQRT_2PI,
    Cycle,
    log_unmatched,
    unmatched_params,
)
from rankmodels.tracking.engines.exact import PARALLEL_MIN, unmatched_weights
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["bp_engine"]

_TINY = 1e-300
_HUGE = 1e300


@njit(cache=True)
def _xlogx(x):
    return x * math.log(x) if x > 0.0 else 0.0


@njit(cache=True)
def _excluding(values, out):
    """``out[i] = sum_{l != i} values[l]`` by prefix and suffix sums (no cancellation)."""
    n = values.shape[0]
    acc = 0.0
    for i in range(n):
        out[i] = acc
        acc += values[i]
    acc = 0.0
    for i in range(n - 1, -1, -1):
        out[i] += acc
        acc += values[i]


@njit(cache=True)
def _bp_weights(toa, log_clutter, pred, unm, log_match0, inv_2var, inv_sigma, tau, w, u, k):
    """Scaled potentials ``w`` (s, m), ``u`` (s,), ``k`` (m,); return the log of the scale."""
    s = pred.shape[0]
    m = toa.shape[0]
    total = 0.0
    for i in range(s):
        lu = log_unmatched((tau - pred[i]) * inv_sigma, unm)
        row_max = lu
        for j in range(m):
            d = toa[j] - pred[i]
            w[i, j] = log_match0 - d * d * inv_2var
            row_max = max(row_max, w[i, j])
        u[i] = math.exp(lu - row_max)
        for j in range(m):
            w[i, j] -= row_max
        total += row_max
    for j in range(m):
        col_max = log_clutter[j]
        for i in range(s):
            col_max = max(col_max, w[i, j])
        if col_max == -math.inf:
            return -math.inf
        k[j] = math.exp(log_clutter[j] - col_max)
        for i in range(s):
            w[i, j] = math.exp(w[i, j] - col_max)
        total += col_max
    return total


@njit(cache=True)
def _sweeps(a, u, k, alpha, beta, damping, tol, max_iter, row, excl, col, excl_col):
    """Damped parallel BP sweeps; return the number of sweeps (``-1`` if not converged)."""
    s, m = a.shape
    for i in range(s):
        for j in range(m):
            alpha[j, i] = 1.0
            beta[i, j] = 0.0
    for it in range(1, max_iter + 1):
        delta = 0.0
        for i in range(s):
            for j in range(m):
                row[j] = a[i, j] * alpha[j, i]
            _excluding(row, excl)
            for j in range(m):
                new = min(a[i, j] / max(u[i] + excl[j], _TINY), _HUGE)
                old = beta[i, j]
                upd = damping * old + (1.0 - damping) * new
                d = abs(upd - old) / max(upd, old, _TINY)
                delta = max(delta, d)
                beta[i, j] = upd
        for j in range(m):
            for i in range(s):
                col[i] = beta[i, j]
            _excluding(col, excl_col)
            for i in range(s):
                new = min(1.0 / max(k[j] + excl_col[i], _TINY), _HUGE)
                old = alpha[j, i]
                upd = damping * old + (1.0 - damping) * new
                d = abs(upd - old) / max(upd, old, _TINY)
                delta = max(delta, d)
                alpha[j, i] = upd
        if delta < tol:
            return it
    return -1


@njit(cache=True)
def _bethe(a, u, k, alpha, beta, x, xlx, blb, out, want):
    """Bethe estimate of ``log Z`` (scaled potentials); beliefs of ``R_j`` into ``out``."""
    s, m = a.shape
    log_z = 0.0
    for i in range(s):  # source nodes: energy and (1 - m) H(b_i)
        n_i = u[i]
        for j in range(m):
            x[i, j] = a[i, j] * alpha[j, i]
            xlx[i, j] = _xlogx(x[i, j])
            n_i += x[i, j]
        n_i = max(n_i, _TINY)
        ent = math.log(n_i) - _xlogx(u[i]) / n_i  # H = log n - sum x log x / n
        if u[i] > 0.0:
            log_z += u[i] / n_i * math.log(u[i])
        for j in range(m):
            if x[i, j] > 0.0:
                log_z += x[i, j] / n_i * math.log(a[i, j])
            ent -= xlx[i, j] / n_i
        log_z += (1 - m) * ent
    for j in range(m):  # arrival nodes: energy and (1 - s) H(b_j)
        d_j = k[j]
        for i in range(s):
            blb[i, j] = _xlogx(beta[i, j])
            d_j += beta[i, j]
        d_j = max(d_j, _TINY)
        if k[j] > 0.0:
            log_z += k[j] / d_j * math.log(k[j])
        ent = math.log(d_j) - _xlogx(k[j]) / d_j
        for i in range(s):
            ent -= blb[i, j] / d_j
        log_z += (1 - s) * ent
        if want:
            for i in range(s):
                out[j, i] = beta[i, j] / d_j
            out[j, s] = k[j] / d_j
    for i in range(s):  # edges: H(b_e) of the pairwise beliefs
        sum_x = u[i]
        sum_xlx = _xlogx(u[i])
        for j in range(m):
            sum_x += x[i, j]
            sum_xlx += xlx[i, j]
        for j in range(m):
            big_a = sum_x - x[i, j]
            big_a1 = sum_xlx - xlx[i, j]
            big_b = k[j]
            big_b1 = _xlogx(k[j])
            for l in range(s):
                if l != i:
                    big_b += beta[l, j]
                    big_b1 += blb[l, j]
            z_e = max(a[i, j] + big_a * big_b, _TINY)
            log_ze = math.log(z_e)
            h = -(big_a1 * big_b + big_a * big_b1) / z_e + big_a * big_b / z_e * log_ze
            if a[i, j] > 0.0:
                h -= a[i, j] / z_e * (math.log(a[i, j]) - log_ze)
            log_z += h
    return log_z


@njit(cache=True)
def _bp_range(
    lo,
    hi,
    toa,
    log_clutter,
    predicted,
    unm,
    sigma,
    log_pd,
    tau,
    log_poisson,
    damping,
    tol,
    max_iter,
    want,
    loglik,
    assoc,
    iters,
):
    s = predicted.shape[1]
    m = toa.shape[0]
    inv_2var = 0.5 / (sigma * sigma)
    inv_sigma = 1.0 / sigma
    log_match0 = log_pd - math.log(sigma) - LOG_SQRT_2PI
    a = np.empty((s, m))
    u = np.empty(s)
    k = np.empty(m)
    alpha = np.empty((m, s))
    beta = np.empty((s, m))
    x = np.empty((s, m))
    xlx = np.empty((s, m))
    blb = np.empty((s, m))
    row = np.empty(m)
    excl = np.empty(m)
    col = np.empty(s)
    excl_col = np.empty(s)
    for p in range(lo, hi):
        offset = _bp_weights(
            toa, log_clutter, predicted[p], unm, log_match0, inv_2var, inv_sigma, tau, a, u, k
        )
        if offset == -math.inf:
            loglik[p] = -math.inf
            iters[p] = 0
            if want:
                assoc[p, :, :] = np.nan
            continue
        iters[p] = _sweeps(a, u, k, alpha, beta, damping, tol, max_iter, row, excl, col, excl_col)
        log_z = _bethe(a, u, k, alpha, beta, x, xlx, blb, assoc[p] if want else assoc[0], want)
        loglik[p] = log_z + offset + log_poisson


@njit(cache=True, parallel=True)
def _bp_parallel(
    n_chunks,
    toa,
    log_clutter,
    predicted,
    unm,
    sigma,
    log_pd,
    tau,
    log_poisson,
    damping,
    tol,
    max_iter,
    want,
    loglik,
    assoc,
    iters,
):
    n = predicted.shape[0]
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        _bp_range(
            c * chunk,
            min(n, (c + 1) * chunk),
            toa,
            log_clutter,
            predicted,
            unm,
            sigma,
            log_pd,
            tau,
            log_poisson,
            damping,
            tol,
            max_iter,
            want,
            loglik,
            assoc,
            iters,
        )


def bp_engine(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    association: bool = False,
    damping: float = 0.0,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> tuple[np.ndarray, np.ndarray | None, int, bool]:
    """Loopy BP with the Bethe ``log Z``: ``(loglik, association, sweeps, converged)``.

    ``sweeps`` is the largest number of sweeps any particle needed (``max_iter`` if one did not
    converge).
    """
    if model.p_detect >= 1.0:
        raise ValueError(
            "the bp engine needs p_detect < 1 (with P_D = 1 the unmatched weights fall far below "
            "double range); use engine='exact' or 'minfactor'"
        )
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if not tol > 0.0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    n, s = predicted.shape
    m = cycle.m
    const, tail_coef = unmatched_weights(model, ranked=True)
    loglik = np.empty(n)
    assoc = np.empty((n, m, s + 1) if association else (1, m, s + 1))
    iters = np.zeros(n, dtype=np.int64)
    args = (
        cycle.toa,
        cycle.log_clutter,
        predicted,
        unmatched_params(const, tail_coef),
        float(model.sigma),
        math.log(model.p_detect),
        cycle.tau,
        cycle.log_poisson,
        float(damping),
        float(tol),
        int(max_iter),
        association,
        loglik,
        assoc,
        iters,
    )
    if n >= PARALLEL_MIN:
        _bp_parallel(8 * get_num_threads(), *args)
    elif n:
        _bp_range(0, n, *args)
    converged = bool(np.all(iters >= 0))
    sweeps = int(max_iter) if not converged else int(iters.max(initial=0))
    return loglik, (assoc if association else None), sweeps, converged
