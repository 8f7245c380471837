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

import numpy as np
from numba import get_num_threads, njit, prange

from rankmodels.tracking.engines._common import LOG_SQRT_2PI, Cycle
from rankmodels.tracking.engines.exact import PARALLEL_MIN
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["minfactor_engine"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_TINY = 1e-300


@njit(cache=True)
def _interval_mass(z_lo, z_hi):
    """``P(z_lo < Z < z_hi)`` for a standard normal, accurate in both tails."""
    if z_hi <= 0.0:
        return 0.5 * (math.erfc(-z_hi * _INV_SQRT2) - math.erfc(-z_lo * _INV_SQRT2))
    return 0.5 * (math.erfc(z_lo * _INV_SQRT2) - math.erfc(z_hi * _INV_SQRT2))


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
def _incoming(i, f, n_fac, n_delta, mass, dens, below, above, atom):
    """``(L, U, D)`` of the message from ``t_i`` to factor ``f`` (excluding ``f`` itself).

    ``f = -1`` gives the product of all factor messages: ``L + U`` is then ``Z_i``.
    """
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
def _factor(f, n_delta, low, high, point, pre, suf, coef):
    """Generating polynomials of factor ``f``: fill ``coef[i] = (h1, h2, h3)``; return ``Z_f``.

    ``pre[i]`` / ``suf[i]`` hold ``prod_{a < i}`` / ``prod_{a >= i}`` of
    ``U_a + x L_a + y D_a`` as ``[y-degree, x-degree]`` coefficient arrays.
    """
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
def _particle(
    toa,
    pred,
    sigma,
    window,
    n_fac,
    n_delta,
    damping,
    tol,
    max_iter,
    want,
    mass,
    dens,
    below,
    above,
    atom,
    low,
    high,
    point,
    pre,
    suf,
    coef,
    out,
):
    """One particle: sweeps, then the Bethe ``log Z``; return ``(log Z, sweeps)``."""
    s = pred.shape[0]
    n_bp = mass.shape[1] - 1
    inv_sigma = 1.0 / sigma
    log_norm = -math.log(sigma) - LOG_SQRT_2PI
    for i in range(s):
        z_prev = -math.inf
        for q in range(n_bp + 1):
            z = (
                ((toa[q] if q < n_delta else window) - pred[i]) * inv_sigma
                if q < n_bp
                else math.inf
            )
            mass[i, q] = _interval_mass(z_prev, z)
            z_prev = z
        for k in range(n_delta):
            d = (toa[k] - pred[i]) * inv_sigma
            dens[i, k] = math.exp(log_norm - 0.5 * d * d)
        for f in range(n_fac):
            below[i, f] = 1.0
            above[i, f] = 1.0
            atom[i, f] = 1.0 if f < n_delta else 0.0
    sweeps = -1
    for it in range(1, max_iter + 1):
        delta = 0.0
        for f in range(n_fac):
            for i in range(s):
                lo_, hi_, pt_ = _incoming(i, f, n_fac, n_delta, mass, dens, below, above, atom)
                tot = lo_ + hi_
                if not tot > 0.0:
                    return -math.inf, it
                low[f, i] = lo_ / tot
                high[f, i] = hi_ / tot
                point[f, i] = pt_ / tot
        for f in range(n_fac):
            _factor(f, n_delta, low[f], high[f], point[f], pre, suf, coef)
            for i in range(s):
                tot = coef[i, 0] + coef[i, 1] + coef[i, 2]
                if not tot > 0.0:
                    return -math.inf, it
                for c in range(3):
                    new = coef[i, c] / tot
                    if c == 0:
                        old = atom[i, f]
                    elif c == 1:
                        old = below[i, f]
                    else:
                        old = above[i, f]
                    upd = damping * old + (1.0 - damping) * new
                    delta = max(delta, abs(upd - old))  # messages sum to 1
                    if c == 0:
                        atom[i, f] = upd
                    elif c == 1:
                        below[i, f] = upd
                    else:
                        above[i, f] = upd
        if delta < tol:
            sweeps = it
            break
    # Bethe estimate at the final messages
    log_z = 0.0
    for i in range(s):
        lo_, hi_, _ = _incoming(i, -1, n_fac, n_delta, mass, dens, below, above, atom)
        if not lo_ + hi_ > 0.0:
            return -math.inf, sweeps
        log_z += math.log(lo_ + hi_)
    for f in range(n_fac):
        for i in range(s):
            lo_, hi_, pt_ = _incoming(i, f, n_fac, n_delta, mass, dens, below, above, atom)
            tot = lo_ + hi_
            if not tot > 0.0:
                return -math.inf, sweeps
            low[f, i] = lo_ / tot
            high[f, i] = hi_ / tot
            point[f, i] = pt_ / tot
            z_if = atom[i, f] * point[f, i] + below[i, f] * low[f, i] + above[i, f] * high[f, i]
            if not z_if > 0.0:
                return -math.inf, sweeps
            log_z -= math.log(z_if)
        z_f = _factor(f, n_delta, low[f], high[f], point[f], pre, suf, coef)
        if not z_f > 0.0:
            return -math.inf, sweeps
        log_z += math.log(z_f)
        if want and f < n_delta:
            for i in range(s):
                out[f, i] = point[f, i] * coef[i, 0] / z_f
            out[f, s] = 0.0
    return log_z, sweeps


@njit(cache=True)
def _minfactor_range(
    lo, hi, toa, predicted, sigma, window, n_fac, damping, tol, max_iter, want, loglik, assoc, iters
):
    s = predicted.shape[1]
    n_delta = toa.shape[0]
    n_bp = n_fac  # breakpoints: T_1..T_m and W if the window factor is present
    mass = np.empty((s, n_bp + 1))
    dens = np.empty((s, max(n_delta, 1)))
    below = np.empty((s, max(n_fac, 1)))
    above = np.empty((s, max(n_fac, 1)))
    atom = np.empty((s, max(n_fac, 1)))
    low = np.empty((max(n_fac, 1), s))
    high = np.empty((max(n_fac, 1), s))
    point = np.empty((max(n_fac, 1), s))
    pre = np.empty((s + 1, 2, n_fac + 1))
    suf = np.empty((s + 1, 2, n_fac + 1))
    coef = np.empty((s, 3))
    for p in range(lo, hi):
        out = assoc[p] if want else assoc[0]
        log_z, sweeps = _particle(
            toa,
            predicted[p],
            sigma,
            window,
            n_fac,
            n_delta,
            damping,
            tol,
            max_iter,
            want,
            mass,
            dens,
            below,
            above,
            atom,
            low,
            high,
            point,
            pre,
            suf,
            coef,
            out,
        )
        loglik[p] = log_z
        iters[p] = sweeps
        if want and log_z == -math.inf:
            out[:, :] = np.nan


@njit(cache=True, parallel=True)
def _minfactor_parallel(
    n_chunks,
    toa,
    predicted,
    sigma,
    window,
    n_fac,
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
        _minfactor_range(
            c * chunk,
            min(n, (c + 1) * chunk),
            toa,
            predicted,
            sigma,
            window,
            n_fac,
            damping,
            tol,
            max_iter,
            want,
            loglik,
            assoc,
            iters,
        )


def minfactor_engine(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    association: bool = False,
    damping: float = 0.0,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> tuple[np.ndarray, np.ndarray | None, int, bool]:
    """Min-factor BP: ``(loglik, association, sweeps, converged)``.

    The section 5.2 model has no loss and no clutter: ``model`` must have ``p_detect = 1`` and
    ``clutter_rate = 0`` (ValueError otherwise); ``sigma`` and ``window`` are used.
    """
    if model.p_detect != 1.0 or model.clutter_rate != 0.0:
        raise ValueError(
            "the minfactor engine is the no-loss, no-clutter model of section 5.2: "
            f"it needs p_detect = 1 and clutter_rate = 0, got {model.p_detect} and "
            f"{model.clutter_rate}"
        )
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if not tol > 0.0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    n, s = predicted.shape
    m = cycle.m
    n_fac = m + (1 if m < cycle.r else 0)
    loglik = np.empty(n)
    assoc = np.empty((n, m, s + 1) if association else (1, m, s + 1))
    iters = np.zeros(n, dtype=np.int64)
    args = (
        cycle.toa,
        predicted,
        float(model.sigma),
        float(model.window),
        n_fac,
        float(damping),
        float(tol),
        int(max_iter),
        association,
        loglik,
        assoc,
        iters,
    )
    if n >= PARALLEL_MIN:
        _minfactor_parallel(8 * get_num_threads(), *args)
    elif n:
        _minfactor_range(0, n, *args)
    converged = bool(np.all(iters >= 0))
    sweeps = int(max_iter) if not converged else int(iters.max(initial=0))
    return loglik, (assoc if association else None), sweeps, converged
