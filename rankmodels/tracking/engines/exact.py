"""Exact likelihood: sum over all associations of the bipartite model (eqs. 5.25-5.26, 5.64-5.67).

For each particle the sum over partial matchings of the ``s`` sources to the ``m`` recorded
arrivals (unmatched arrivals are clutter, unmatched sources late or missing) is computed by a
dynamic programme over the sources with a bitmask of the arrivals matched so far:

    F_0[0] = 1,   F_{i+1}[A] = F_i[A] + sum_{j in A} F_i[A \\ {j}] a_ij,
    Z = sum_A F_s[A] prod_{j not in A} k_j,

in ``O(s m 2^m)`` time, where the source factors are divided by the unmatched weight
``u_i = (1 - P_D) + P_D P(t_i > tau)`` (so "unmatched" has weight 1 and matching ``i`` to ``j``
has ``a_ij = P_D N(T_j; pred_i, sigma^2) / u_i``), and each arrival's weights (its ``a_ij`` and
its clutter weight ``k_j = lambda / W``) are divided by their maximum ``e^{c_j}``: every
association explains each arrival exactly once, so ``log P = log Z + sum_i log u_i +
sum_j c_j + log_poisson`` and nothing underflows unless ``Z`` itself is below ``1e-200``; such
particles (far away, and ``lambda = 0``) are recomputed in log space.

Association marginals come from a backward pass ``B_s[A] = prod_{j not in A} k_j``,
``B_i[A] = B_{i+1}[A] + sum_{j not in A} a_ij B_{i+1}[A + {j}]``:

    P(S_i = j | T, X) = sum_{A not containing j} F_i[A] a_ij B_{i+1}[A + {j}] / Z,
    P(R_j = C | T, X) = sum_{A not containing j} F_s[A] B_s[A] / Z.

The same kernel evaluates the baseline model (eq. 5.72): only the unmatched weight changes.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit, prange

from rankmodels.tracking.engines._common import (
    BipartiteCycle,
    Cycle,
    EngineOutput,
    LikelihoodResult,
    assoc_row,
    bipartite_cycle,
    engine_output,
    log_source_factors,
    log_source_factors_above,
    over_particles,
    particle_seconds,
)
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["MAX_ARRIVALS", "exact_engine", "sum_over_associations"]

#: The bitmask DP holds 2^m numbers per source: at most this many recorded arrivals per cycle.
MAX_ARRIVALS = 20
#: Below this scaled partition function the particle is recomputed in log space.
_UNDERFLOW = 1e-200
#: Scaled weights below exp(_LOG_TINY) are set to zero (they underflow anyway).
_LOG_TINY = -708.0
#: A match weight below 2^-60 times its arrival's clutter weight is dropped: replacing that
#: match by "source unmatched, arrival clutter" maps the associations using it one-to-one onto
#: associations 2^60 times heavier, so each dropped pair changes Z by less than 2^-60 Z.
_LOG_EPS = -60.0 * math.log(2.0)


#: One chunk's work arrays (s sources, m arrivals); ``a``, ``k`` hold logs on the slow path.
#:
#: ``a`` (s, m) scaled match weights ``a_ij``; ``k`` (m,) scaled clutter weights; ``log_scale``
#: (m,) the ``c_j``; ``log_u`` (s,) ``log u_i``; ``fwd``, ``bwd`` (s + 1, 2^m) the recursions;
#: ``kc`` (2^m,) clutter products; ``active[i, :n_active[i]]`` the arrivals with ``a_ij > 0``.
_Scratch = namedtuple("_Scratch", "a k log_scale log_u fwd bwd kc active n_active")


@njit(cache=True)
def _scratch(s, m):
    size = 1 << m
    return _Scratch(
        np.empty((s, m)),
        np.empty(m),
        np.empty(m),
        np.empty(s),
        np.empty((s + 1, size)),
        np.empty((s + 1, size)),
        np.empty(size),
        np.empty((s, m), dtype=np.int64),
        np.empty(s, dtype=np.int64),
    )


@njit(cache=True, inline="always")
def _scaled_weights(c, pred, buf):
    """Fill ``buf.a`` (s, m), ``buf.k`` (m,) with scaled weights; return ``sum log u + sum c``.

    ``active[i, :n_active[i]]`` lists the arrivals with ``a_ij > 0``; pairs that underflow
    or fall below ``2^-60 k_j`` (see ``_LOG_EPS``) are set to zero. With multipath such pairs
    are mostly recognised by a bound and not evaluated: they are never the largest weight of
    their arrival (the clutter weight is larger), so the result is the same.
    """
    a, k, log_scale, log_u = buf.a, buf.k, buf.log_scale, buf.log_u
    active, n_active, log_clutter = buf.active, buf.n_active, c.log_clutter
    s, m = a.shape
    log_source_factors_above(c, pred, a, log_u, _LOG_EPS)
    total = 0.0
    for j in range(m):
        log_scale[j] = log_clutter[j]
    for i in range(s):
        total += log_u[i]
        for j in range(m):
            lr = a[i, j] - log_u[i]
            a[i, j] = lr
            if lr > log_scale[j]:
                log_scale[j] = lr
    for j in range(m):
        cj = log_scale[j]
        if cj == -math.inf:
            return -math.inf
        total += cj
        k[j] = math.exp(log_clutter[j] - cj)
    for i in range(s):
        n = 0
        for j in range(m):
            x = a[i, j] - log_scale[j]
            if x > max(_LOG_TINY, log_clutter[j] - log_scale[j] + _LOG_EPS):
                a[i, j] = math.exp(x)
                active[i, n] = j
                n += 1
            else:
                a[i, j] = 0.0
        n_active[i] = n
    return total


@njit(cache=True, inline="always")
def _forward(buf, keep):
    """Forward DP and clutter products ``kc[A]``; return ``Z``.

    With ``keep`` row ``i`` of ``fwd`` holds ``F_i`` (for the marginals); otherwise row 0 is
    updated in place, reading ``F_i`` from row 1 when the source has several candidate
    arrivals. Each candidate ``j`` adds ``F_i[A] a_ij`` to the masks ``A + {j}`` (half the
    masks, no branch).
    """
    a, k, active, n_active, fwd, kc = buf.a, buf.k, buf.active, buf.n_active, buf.fwd, buf.kc
    s, m = a.shape
    size = 1 << m
    kc[size - 1] = 1.0
    for mask in range(size - 2, -1, -1):
        for j in range(m):
            if not mask & (1 << j):
                kc[mask] = kc[mask | (1 << j)] * k[j]
                break
    fwd[0, 0] = 1.0
    for mask in range(1, size):
        fwd[0, mask] = 0.0
    for i in range(s):
        src = i if keep else 0
        dst = i + 1 if keep else 0
        if keep:
            for mask in range(size):
                fwd[dst, mask] = fwd[src, mask]
        na = n_active[i]
        old = src
        if na > 1 and not keep:
            for mask in range(size):
                fwd[1, mask] = fwd[0, mask]
            old = 1
        for q in range(na):
            bit = 1 << active[i, q]
            aij = a[i, active[i, q]]
            for t in range(size >> 1):
                low = t & (bit - 1)
                mask = ((t - low) << 1) | low
                fwd[dst, mask | bit] += fwd[old, mask] * aij
    last = s if keep else 0
    z = 0.0
    for mask in range(size):
        z += fwd[last, mask] * kc[mask]
    return z


@njit(cache=True)
def _marginals(buf, z, out):
    """Backward pass and association marginals ``out[j, i]`` (column ``s`` = clutter)."""
    a, active, n_active, kc, fwd, bwd = buf.a, buf.active, buf.n_active, buf.kc, buf.fwd, buf.bwd
    s, m = a.shape
    size = 1 << m
    half = size >> 1
    for mask in range(size):
        bwd[s, mask] = kc[mask]
    for i in range(s - 1, -1, -1):
        for mask in range(size):
            bwd[i, mask] = bwd[i + 1, mask]
        for q in range(n_active[i]):
            j = active[i, q]
            bit = 1 << j
            aij = a[i, j]
            for t in range(half):
                low = t & (bit - 1)
                mask = ((t - low) << 1) | low
                bwd[i, mask] += aij * bwd[i + 1, mask | bit]
    inv_z = 1.0 / z
    out[:, :] = 0.0
    for j in range(m):
        bit = 1 << j
        clutter = 0.0
        for t in range(half):
            low = t & (bit - 1)
            mask = ((t - low) << 1) | low
            clutter += fwd[s, mask] * kc[mask]
        out[j, s] = clutter * inv_z
    for i in range(s):
        for q in range(n_active[i]):
            j = active[i, q]
            bit = 1 << j
            v = 0.0
            for t in range(half):
                low = t & (bit - 1)
                mask = ((t - low) << 1) | low
                v += fwd[i, mask] * bwd[i + 1, mask | bit]
            out[j, i] = v * a[i, j] * inv_z


@njit(cache=True)
def _logaddexp(x, y):
    if x == -math.inf:
        return y
    if y == -math.inf:
        return x
    if x > y:
        return x + math.log1p(math.exp(y - x))
    return y + math.log1p(math.exp(x - y))


@njit(cache=True)
def _log_space(buf, want, out):
    """The same recursions on log weights ``buf.a``, ``buf.k`` (the underflow-safe slow path);
    return ``log Z``."""
    log_a, log_k, fwd, bwd, kc = buf.a, buf.k, buf.fwd, buf.bwd, buf.kc
    s, m = log_a.shape
    full = (1 << m) - 1
    kc[full] = 0.0
    for mask in range(full - 1, -1, -1):
        for j in range(m):
            if not mask & (1 << j):
                kc[mask] = kc[mask | (1 << j)] + log_k[j]
                break
    fwd[0, 0] = 0.0
    for mask in range(1, full + 1):
        fwd[0, mask] = -math.inf
    for i in range(s):
        for mask in range(full + 1):
            v = fwd[i, mask]
            for j in range(m):
                bit = 1 << j
                if mask & bit:
                    v = _logaddexp(v, fwd[i, mask ^ bit] + log_a[i, j])
            fwd[i + 1, mask] = v
    log_z = -math.inf
    for mask in range(full + 1):
        log_z = _logaddexp(log_z, fwd[s, mask] + kc[mask])
    if not want or log_z == -math.inf:
        return log_z
    for mask in range(full + 1):
        bwd[s, mask] = kc[mask]
    for i in range(s - 1, -1, -1):
        for mask in range(full + 1):
            v = bwd[i + 1, mask]
            for j in range(m):
                bit = 1 << j
                if not mask & bit:
                    v = _logaddexp(v, log_a[i, j] + bwd[i + 1, mask | bit])
            bwd[i, mask] = v
    for j in range(m):
        bit = 1 << j
        clutter = -math.inf
        for mask in range(full + 1):
            if not mask & bit:
                clutter = _logaddexp(clutter, fwd[s, mask] + kc[mask])
        out[j, s] = math.exp(clutter - log_z)
        for i in range(s):
            v = -math.inf
            for mask in range(full + 1):
                if not mask & bit:
                    v = _logaddexp(v, fwd[i, mask] + bwd[i + 1, mask | bit])
            out[j, i] = math.exp(v + log_a[i, j] - log_z)
    return log_z


@njit(cache=True)
def _log_space_rescaled(c, pred, buf, want, out):
    """Slow path: ``log a_ij = log(phi_i(j) / u_i)``, ``log k_j``; return the full ``log Z``."""
    log_a, log_u = buf.a, buf.log_u
    s, m = log_a.shape
    log_source_factors(c, pred, log_a, log_u)
    total = 0.0
    for i in range(s):
        total += log_u[i]
        for j in range(m):
            log_a[i, j] -= log_u[i]
    for j in range(m):
        buf.k[j] = c.log_clutter[j]
    return _log_space(buf, want, out) + total


@njit(cache=True)
def _exact_range(lo, hi, c, predicted, out):
    """Particles ``lo <= p < hi`` of ``predicted`` (N, s) into ``out``; association marginals
    if ``out.want`` (NaN where the likelihood is 0). A particle whose scaled ``Z`` underflows
    gets ``loglik`` NaN, for :func:`_exact_log_space` (a kernel of its own, so that it is
    compiled only when a run meets such a particle)."""
    buf = _scratch(predicted.shape[1], c.toa.shape[0])
    want, loglik, assoc = out.want, out.loglik, out.assoc
    for p in range(lo, hi):
        offset = _scaled_weights(c, predicted[p], buf)
        if offset == -math.inf:
            loglik[p] = -math.inf
            if want:
                assoc[p, :, :] = np.nan
            continue
        z = _forward(buf, want)
        if z > _UNDERFLOW:
            loglik[p] = math.log(z) + offset + c.log_poisson
            if want:
                _marginals(buf, z, assoc[p])
        else:
            loglik[p] = np.nan


@njit(cache=True)
def _exact_log_space(particles, c, predicted, out):
    """The log-space slow path for ``particles`` (indices into ``predicted`` (N, s))."""
    buf = _scratch(predicted.shape[1], c.toa.shape[0])
    for p in particles:
        log_z = _log_space_rescaled(c, predicted[p], buf, out.want, assoc_row(out, p))
        out.loglik[p] = log_z + c.log_poisson
        if out.want and log_z == -math.inf:
            out.assoc[p, :, :] = np.nan


@njit(cache=True, parallel=True)
def _exact_parallel(bounds, c, predicted, out):
    for chunk in prange(bounds.shape[0]):
        _exact_range(bounds[chunk, 0], bounds[chunk, 1], c, predicted, out)


def sum_over_associations(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    ranked: bool = True,
    association: bool = False,
) -> LikelihoodResult:
    """Exact ``log P(T | X)`` for every row of ``predicted`` (N, s), and optionally the marginals.

    ``ranked=False`` gives the baseline model of eq. 5.72. Returns ``loglik`` (N,) and
    ``association`` (N, m, s + 1) or None. Raises ValueError for more than ``MAX_ARRIVALS``
    recorded arrivals.
    """
    n, s = predicted.shape
    if cycle.m > MAX_ARRIVALS:
        raise ValueError(
            f"the exact engine handles at most {MAX_ARRIVALS} recorded arrivals per cycle, "
            f"got {cycle.m}"
        )
    out: EngineOutput = engine_output(n, cycle.m, s, association)
    c: BipartiteCycle = bipartite_cycle(cycle, model, ranked=ranked)
    over_particles(
        _exact_range,
        _exact_parallel,
        n,
        c,
        predicted,
        out,
        seconds_per_particle=particle_seconds("exact", s, cycle.m, association),
    )
    slow = np.flatnonzero(np.isnan(out.loglik))
    if slow.size:
        _exact_log_space(slow, c, predicted, out)
    return out.result()


def exact_engine(
    cycle: Cycle, predicted: np.ndarray, model: SignalModel, *, association: bool = False
) -> LikelihoodResult:
    """The ``exact`` engine: eq. 5.26 summed over all associations (see the module docstring)."""
    return sum_over_associations(cycle, predicted, model, ranked=True, association=association)
