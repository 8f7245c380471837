"""Loopy belief propagation on the bipartite S_i / R_j graph ([Pareek2017] eqs. 5.28-5.63).

The conditional random field of Fig. 5.5 (the bipartite source/arrival model) has source
variables ``S_i`` (an arrival ``j``, late ``L`` or missing ``M``) and arrival variables ``R_j``
(a source ``i`` or clutter ``C``), unary factors (5.66: a source missing, late or matched) and
(5.67: an arrival clutter or not), and pairwise factors (5.23) that forbid ``S_i = j`` without
``R_j = i`` and vice versa. ``L`` and ``M`` are indistinguishable to every pairwise factor, so
they are merged into one "unmatched" state of weight ``u_i = (1 - P_D) + P_D P(t_i > tau)``
(this leaves the Bethe free energy unchanged). The potentials are scaled so that nothing over-
or underflows: each source's by its largest weight, then each arrival's (its matches and its
clutter weight ``lambda / W``) by its largest; this changes ``log Z`` by a known constant.
With ``w_ij`` the scaled match, ``u_i`` the scaled unmatched and ``k_j`` the scaled clutter
weight, every message across an edge is a ratio "matched over not matched":

    beta_ij  = w_ij / (u_i + sum_{k != j} w_ik alpha_ki)      S_i -> R_j   (eqs. 5.28, 5.35)
    alpha_ji = 1 / (k_j + sum_{l != i} beta_lj)               R_j -> S_i   (eqs. 5.33-5.34, 5.29)

A sweep updates every ``beta`` from the current ``alpha``, then every ``alpha`` from the new
``beta``, with damping (``new = damping * old + (1 - damping) * update``), until no message
changes by more than ``tol`` relative to its size. Convergence is linear; it is slow (a factor
of about 0.94 per sweep) when two arrivals within ``sigma`` of each other can each come from the
same two sources. The partition function is the Bethe estimate (Huang and Jebara 2009; the
paper, section 5.4.2, which approximates the partition function by the Bethe free energy)

    log Z ~ sum_n sum b_n log phi_n + sum_edges H(b_e) - sum_n (deg_n - 1) H(b_n),

exact when the graph is a tree (one source or one arrival). ``loglik`` carries the same
particle-independent terms as the exact engine, and the association posterior is the belief
of ``R_j``.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit, prange

from rankmodels.tracking.engines._common import (
    Cycle,
    LikelihoodResult,
    MessagePassing,
    assoc_row,
    bipartite_cycle,
    engine_output,
    log_source_factors,
    over_particles,
    particle_seconds,
)
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["bp_engine"]

_TINY = 1e-300
_HUGE = 1e300


#: One chunk's work arrays (s sources, m arrivals).
#:
#: Potentials ``w`` (s, m), ``u`` (s,), ``k`` (m,) and ``log_u`` (s,); messages ``alpha``
#: (m, s) and ``beta`` (s, m); Bethe terms ``x``, ``xlx``, ``blb`` (s, m); ``row``, ``excl``
#: (m,) and ``col``, ``excl_col`` (s,) for the sums that exclude one term.
_Scratch = namedtuple("_Scratch", "w u k log_u alpha beta x xlx blb row excl col excl_col")


@njit(cache=True)
def _scratch(s, m):
    return _Scratch(
        np.empty((s, m)),
        np.empty(s),
        np.empty(m),
        np.empty(s),
        np.empty((m, s)),
        np.empty((s, m)),
        np.empty((s, m)),
        np.empty((s, m)),
        np.empty((s, m)),
        np.empty(m),
        np.empty(m),
        np.empty(s),
        np.empty(s),
    )


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
def _bp_weights(c, pred, buf):
    """Scaled potentials ``w`` (s, m), ``u`` (s,), ``k`` (m,); return the log of the scale."""
    w, u, k, log_u, log_clutter = buf.w, buf.u, buf.k, buf.log_u, c.log_clutter
    s, m = w.shape
    log_source_factors(c, pred, w, log_u)
    total = 0.0
    for i in range(s):
        row_max = log_u[i]
        for j in range(m):
            row_max = max(row_max, w[i, j])
        u[i] = math.exp(log_u[i] - row_max)
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
def _sweeps(buf, mp):
    """Damped parallel BP sweeps; return the number of sweeps (``-1`` if not converged)."""
    a, u, k, alpha, beta = buf.w, buf.u, buf.k, buf.alpha, buf.beta
    row, excl, col, excl_col = buf.row, buf.excl, buf.col, buf.excl_col
    damping = mp.damping
    s, m = a.shape
    for i in range(s):
        for j in range(m):
            alpha[j, i] = 1.0
            beta[i, j] = 0.0
    for it in range(1, mp.max_iter + 1):
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
        if delta < mp.tol:
            return it
    return -1


@njit(cache=True)
def _bethe(buf, want, out):
    """Bethe estimate of ``log Z`` (scaled potentials); beliefs of ``R_j`` into ``out``."""
    a, u, k, alpha, beta = buf.w, buf.u, buf.k, buf.alpha, buf.beta
    x, xlx, blb = buf.x, buf.xlx, buf.blb
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
def _bp_range(lo, hi, c, mp, predicted, out):
    """Particles ``lo <= p < hi`` of ``predicted`` (N, s) into ``out``."""
    buf = _scratch(predicted.shape[1], c.toa.shape[0])
    want, loglik, sweeps = out.want, out.loglik, out.sweeps
    for p in range(lo, hi):
        assoc = assoc_row(out, p)
        offset = _bp_weights(c, predicted[p], buf)
        if offset == -math.inf:
            loglik[p] = -math.inf
            sweeps[p] = 0
            if want:
                assoc[:, :] = np.nan
            continue
        sweeps[p] = _sweeps(buf, mp)
        loglik[p] = _bethe(buf, want, assoc) + offset + c.log_poisson


@njit(cache=True, parallel=True)
def _bp_parallel(bounds, c, mp, predicted, out):
    for chunk in prange(bounds.shape[0]):
        _bp_range(bounds[chunk, 0], bounds[chunk, 1], c, mp, predicted, out)


def bp_engine(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    controls: MessagePassing,
    association: bool = False,
) -> LikelihoodResult:
    """Loopy BP with the Bethe ``log Z`` (``model.p_detect < 1``: see the engine registry).

    ``iterations`` of the result is the largest number of sweeps any particle needed
    (``max_iter`` if one did not converge).
    """
    n, s = predicted.shape
    out = engine_output(n, cycle.m, s, association)
    c = bipartite_cycle(cycle, model, ranked=True)
    over_particles(
        _bp_range,
        _bp_parallel,
        n,
        c,
        controls,
        predicted,
        out,
        seconds_per_particle=particle_seconds("bp", s, cycle.m, association),
    )
    return out.result(controls)
