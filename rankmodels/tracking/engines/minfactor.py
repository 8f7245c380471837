"""Message passing on the min-factor graph of section 5.2 (no loss, no clutter).

Variables are the continuous arrival times ``t_1..t_s`` of the sources with priors
``p_i(t) = N(t; pred_i, sigma^2)`` (eq. 5.2 with ``m_i = 0``); the recorded ``T_1 < ... < T_m``
enter through the min factors ``f_j = delta(T_j - t_(j))`` (eq. 5.5: ``T_j`` is the ``j``-th
smallest arrival). When fewer than ``r`` arrivals were recorded (``m < r``) one more factor
``g = 1(t_(m+1) > W)`` says that no further source arrived inside the listening window.

Writing ``f_j`` as a sum of products (eq. 5.9), its message to ``t_i`` is (eq. 5.14)

    mu_{f_j -> t_i}(t) = h1 delta(t - T_j) + h2 1(t < T_j) + h3 1(t > T_j),

where, with ``L_a``, ``U_a`` the mass of the message from ``t_a`` below and above ``T_j`` and
``D_a`` its density at ``T_j``, the ``h`` are coefficients of the generating polynomial
``prod_{a != i} (U_a + x L_a + y D_a)``: ``h1 = [x^{j-1} y^0]``, ``h2 = [x^{j-2} y]``,
``h3 = [x^{j-1} y]`` (eqs. 5.15-5.20). These elementary symmetric polynomials come from a
dynamic programme over prefix and suffix products, ``O(s m)`` per factor; ``g`` is the same with
``[x^{m-1}]`` and ``[x^m]`` and no delta. Messages from ``t_i`` are piecewise: the Gaussian
prior times a constant on every interval between the breakpoints ``T_1..T_m (, W)``, plus point
masses at the ``T_k``. The likelihood is the Bethe estimate

    log Z ~ sum_f log Z_f + sum_i log Z_i - sum_{(i, f)} log Z_{i f},

exact when the graph is a tree (one factor: ``m = 1 = r``, or ``m = 0``), and the association
posterior is the belief of each factor ``f_j`` over which source is its ``j``-th smallest.
Particles whose Gaussian masses underflow in double precision get ``-inf``.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from rankmodels.tracking.engines._common import (
    INV_SQRT2,
    LOG_SQRT_2PI,
    Cycle,
    LikelihoodResult,
    MessagePassing,
    assoc_row,
    engine_output,
    over_particles,
)
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["minfactor_engine"]


class _MinFactorCycle(NamedTuple):
    """Per-cycle constants: ``toa`` (m,), the window ``W``, ``n_fac`` factors (the ``n_delta =
    m`` min factors and, if ``m < r``, the window factor), ``1 / sigma`` and ``-log(sigma
    sqrt(2 pi))``."""

    toa: np.ndarray
    window: float
    n_fac: int
    n_delta: int
    inv_sigma: float
    log_norm: float


#: One chunk's work arrays (s sources, ``n_fac`` factors, ``n_bp = n_fac`` breakpoints).
#:
#: Prior ``mass`` (s, n_bp + 1) between breakpoints and density ``dens`` (s, m) at the
#: ``T_k``; factor-to-variable messages ``below``, ``above``, ``atom`` (s, n_fac);
#: normalised variable-to-factor masses ``low``, ``high``, ``point`` (n_fac, s); prefix and
#: suffix polynomials ``pre``, ``suf`` (s + 1, 2, n_fac + 1); coefficients ``coef`` (s, 3).
_Scratch = namedtuple("_Scratch", "mass dens below above atom low high point pre suf coef")


@njit(cache=True)
def _scratch(s, n_fac, n_delta):
    nf = max(n_fac, 1)
    return _Scratch(
        np.empty((s, n_fac + 1)),
        np.empty((s, max(n_delta, 1))),
        np.empty((s, nf)),
        np.empty((s, nf)),
        np.empty((s, nf)),
        np.empty((nf, s)),
        np.empty((nf, s)),
        np.empty((nf, s)),
        np.empty((s + 1, 2, n_fac + 1)),
        np.empty((s + 1, 2, n_fac + 1)),
        np.empty((s, 3)),
    )


@njit(cache=True)
def _interval_mass(z_lo, z_hi):
    """``P(z_lo < Z < z_hi)`` for a standard normal, accurate in both tails."""
    if z_hi <= 0.0:
        return 0.5 * (math.erfc(-z_hi * INV_SQRT2) - math.erfc(-z_lo * INV_SQRT2))
    return 0.5 * (math.erfc(z_lo * INV_SQRT2) - math.erfc(z_hi * INV_SQRT2))


@njit(cache=True)
def _step(f, q, below, above, atom, i, n_delta):
    """Value of factor ``f``'s message to ``t_i`` on interval ``q`` (odd ``q``: point ``q//2``).

    Locations are coded ``2 k`` for the interval just below breakpoint ``k`` and ``2 k + 1``
    for breakpoint ``k`` itself; breakpoint ``f`` is factor ``f``'s threshold.
    """
    if q < 2 * f + 1:
        return below[i, f]
    if q > 2 * f + 1:
        return above[i, f]
    return atom[i, f] if f < n_delta else 0.0


@njit(cache=True)
def _incoming(i, f, c, buf):
    """``(L, U, D)`` of the message from ``t_i`` to factor ``f`` (excluding ``f`` itself).

    ``f = -1`` gives the product of all factor messages: ``L + U`` is then ``Z_i``.
    """
    n_fac, n_delta, mass, dens = c.n_fac, c.n_delta, buf.mass, buf.dens
    below, above, atom = buf.below, buf.above, buf.atom
    low = 0.0
    high = 0.0
    n_bp = mass.shape[1] - 1
    for q in range(n_bp + 1):  # intervals below breakpoint q (q = n_bp: above the last)
        v = mass[i, q]
        if v == 0.0:
            continue
        for g in range(n_fac):
            if g != f:
                v *= _step(g, 2 * q, below, above, atom, i, n_delta)
        if q <= f:
            low += v
        else:
            high += v
    for k in range(n_delta):  # point masses at the recorded arrivals T_k, k != f
        if k == f:
            continue
        v = dens[i, k]
        for g in range(n_fac):
            if g != f:
                v *= _step(g, 2 * k + 1, below, above, atom, i, n_delta)
        if k < f or f < 0:
            low += v
        else:
            high += v
    point = 0.0
    if 0 <= f < n_delta:
        point = dens[i, f]
        for g in range(n_fac):
            if g != f:
                point *= _step(g, 2 * f + 1, below, above, atom, i, n_delta)
    return low, high, point


@njit(cache=True)
def _to_factor(f, c, buf):
    """Normalised messages of every ``t_i`` to factor ``f`` into ``low``, ``high``, ``point``
    ``[f]``; False if one has no mass (the particle's Gaussian masses underflow)."""
    low, high, point = buf.low, buf.high, buf.point
    for i in range(low.shape[1]):
        lo_, hi_, pt_ = _incoming(i, f, c, buf)
        tot = lo_ + hi_
        if not tot > 0.0:
            return False
        low[f, i] = lo_ / tot
        high[f, i] = hi_ / tot
        point[f, i] = pt_ / tot
    return True


@njit(cache=True)
def _factor(f, c, buf):
    """Generating polynomials of factor ``f``: fill ``coef[i] = (h1, h2, h3)``; return ``Z_f``.

    ``pre[i]`` / ``suf[i]`` hold ``prod_{a < i}`` / ``prod_{a >= i}`` of
    ``U_a + x L_a + y D_a`` as ``[y-degree, x-degree]`` coefficient arrays.
    """
    n_delta, pre, suf, coef = c.n_delta, buf.pre, buf.suf, buf.coef
    low, high, point = buf.low[f], buf.high[f], buf.point[f]
    s = low.shape[0]
    deg = pre.shape[2] - 1
    pre[0, :, :] = 0.0
    pre[0, 0, 0] = 1.0
    for a in range(s):
        for e in range(2):
            for d in range(deg + 1):
                v = pre[a, e, d] * high[a]
                if d > 0:
                    v += pre[a, e, d - 1] * low[a]
                if e > 0:
                    v += pre[a, e - 1, d] * point[a]
                pre[a + 1, e, d] = v
    suf[s, :, :] = 0.0
    suf[s, 0, 0] = 1.0
    for a in range(s - 1, -1, -1):
        for e in range(2):
            for d in range(deg + 1):
                v = suf[a + 1, e, d] * high[a]
                if d > 0:
                    v += suf[a + 1, e, d - 1] * low[a]
                if e > 0:
                    v += suf[a + 1, e - 1, d] * point[a]
                suf[a, e, d] = v
    # factor f < n_delta: T_f is the (f+1)-th smallest -> x^f; window factor: exactly
    # n_delta sources below W -> x^{n_delta}
    top = f
    for i in range(s):
        c0_top = 0.0
        c1_top = 0.0
        c_below = 0.0
        for d in range(top + 1):
            c0_top += pre[i, 0, d] * suf[i + 1, 0, top - d]
            c1_top += pre[i, 0, d] * suf[i + 1, 1, top - d] + pre[i, 1, d] * suf[i + 1, 0, top - d]
        if top >= 1:
            for d in range(top):
                if f < n_delta:
                    c_below += (
                        pre[i, 0, d] * suf[i + 1, 1, top - 1 - d]
                        + pre[i, 1, d] * suf[i + 1, 0, top - 1 - d]
                    )
                else:
                    c_below += pre[i, 0, d] * suf[i + 1, 0, top - 1 - d]
        if f < n_delta:
            coef[i, 0] = c0_top  # h1: t_i = T_f, f of the others below
            coef[i, 1] = c_below  # h2: t_i below T_f
            coef[i, 2] = c1_top  # h3: t_i above T_f
        else:
            coef[i, 0] = 0.0
            coef[i, 1] = c_below
            coef[i, 2] = c0_top
    return pre[s, 1, top] if f < n_delta else pre[s, 0, top]


@njit(cache=True)
def _setup(c, pred, buf):
    """Prior masses between the breakpoints, densities at the ``T_k``, uniform messages."""
    s = pred.shape[0]
    n_bp, n_delta, toa = c.n_fac, c.n_delta, c.toa
    mass, dens, below, above, atom = buf.mass, buf.dens, buf.below, buf.above, buf.atom
    for i in range(s):
        z_prev = -math.inf
        for q in range(n_bp + 1):
            z = (
                ((toa[q] if q < n_delta else c.window) - pred[i]) * c.inv_sigma
                if q < n_bp
                else math.inf
            )
            mass[i, q] = _interval_mass(z_prev, z)
            z_prev = z
        for k in range(n_delta):
            d = (toa[k] - pred[i]) * c.inv_sigma
            dens[i, k] = math.exp(c.log_norm - 0.5 * d * d)
        for f in range(c.n_fac):
            below[i, f] = 1.0
            above[i, f] = 1.0
            atom[i, f] = 1.0 if f < n_delta else 0.0


@njit(cache=True)
def _damped(messages, i, f, new, damping):
    """``messages[i, f] = damping * old + (1 - damping) * new``; return the change."""
    old = messages[i, f]
    upd = damping * old + (1.0 - damping) * new
    messages[i, f] = upd
    return abs(upd - old)


@njit(cache=True)
def _sweeps(c, mp, buf):
    """Damped sweeps: ``(sweeps, ok)``, ``sweeps = -1`` if not converged; ``ok`` False (and
    ``sweeps`` the sweep it happened in) when a message loses all mass."""
    coef, atom, below, above, damping = buf.coef, buf.atom, buf.below, buf.above, mp.damping
    s = coef.shape[0]
    for it in range(1, mp.max_iter + 1):
        delta = 0.0
        for f in range(c.n_fac):
            if not _to_factor(f, c, buf):
                return it, False
        for f in range(c.n_fac):
            _factor(f, c, buf)
            for i in range(s):
                tot = coef[i, 0] + coef[i, 1] + coef[i, 2]
                if not tot > 0.0:
                    return it, False
                # messages sum to 1: the absolute change is the relative one
                delta = max(delta, _damped(atom, i, f, coef[i, 0] / tot, damping))
                delta = max(delta, _damped(below, i, f, coef[i, 1] / tot, damping))
                delta = max(delta, _damped(above, i, f, coef[i, 2] / tot, damping))
        if delta < mp.tol:
            return it, True
    return -1, True


@njit(cache=True)
def _bethe(c, buf, want, out):
    """Bethe ``log Z`` at the current messages (``-inf`` if a term has no mass); the beliefs
    of the min factors into ``out`` (m, s + 1) if ``want``."""
    coef, atom, below, above = buf.coef, buf.atom, buf.below, buf.above
    low, high, point = buf.low, buf.high, buf.point
    s = coef.shape[0]
    log_z = 0.0
    for i in range(s):
        lo_, hi_, _ = _incoming(i, -1, c, buf)
        if not lo_ + hi_ > 0.0:
            return -math.inf
        log_z += math.log(lo_ + hi_)
    for f in range(c.n_fac):
        if not _to_factor(f, c, buf):
            return -math.inf
        for i in range(s):
            z_if = atom[i, f] * point[f, i] + below[i, f] * low[f, i] + above[i, f] * high[f, i]
            if not z_if > 0.0:
                return -math.inf
            log_z -= math.log(z_if)
        z_f = _factor(f, c, buf)
        if not z_f > 0.0:
            return -math.inf
        log_z += math.log(z_f)
        if want and f < c.n_delta:
            for i in range(s):
                out[f, i] = point[f, i] * coef[i, 0] / z_f
            out[f, s] = 0.0
    return log_z


@njit(cache=True)
def _minfactor_range(lo, hi, c, mp, predicted, out):
    """Particles ``lo <= p < hi`` of ``predicted`` (N, s) into ``out``."""
    buf = _scratch(predicted.shape[1], c.n_fac, c.n_delta)
    for p in range(lo, hi):
        assoc = assoc_row(out, p)
        _setup(c, predicted[p], buf)
        sweeps, ok = _sweeps(c, mp, buf)
        log_z = _bethe(c, buf, out.want, assoc) if ok else -math.inf
        out.loglik[p] = log_z
        out.sweeps[p] = sweeps
        if out.want and log_z == -math.inf:
            assoc[:, :] = np.nan


@njit(cache=True, parallel=True)
def _minfactor_parallel(bounds, c, mp, predicted, out):
    for chunk in prange(bounds.shape[0]):
        _minfactor_range(bounds[chunk, 0], bounds[chunk, 1], c, mp, predicted, out)


def minfactor_engine(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    controls: MessagePassing,
    association: bool = False,
) -> LikelihoodResult:
    """Min-factor BP.

    The section 5.2 model has no loss and no clutter (``p_detect = 1``, ``clutter_rate = 0``:
    see the engine registry); ``sigma`` and ``window`` are used.
    """
    n, s = predicted.shape
    m = cycle.m
    sigma = float(model.sigma)
    c = _MinFactorCycle(
        toa=cycle.toa,
        window=float(model.window),
        n_fac=m + (1 if m < cycle.r else 0),
        n_delta=m,
        inv_sigma=1.0 / sigma,
        log_norm=-math.log(sigma) - LOG_SQRT_2PI,
    )
    out = engine_output(n, m, s, association)
    over_particles(_minfactor_range, _minfactor_parallel, n, c, controls, predicted, out)
    return out.result(controls)
