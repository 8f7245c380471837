"""Message passing on the min-factor graph of section 5.2, with lost signals and clutter.

Variables are the arrival times ``t_1..t_s`` of the sources, each with the prior of eq. 5.2
summed over its loss indicator: ``P_D p_i(t)`` (``p_i`` the arrival density of
:mod:`rankmodels.tracking.signal_model`, Gaussian or with multipath) plus ``1 - P_D`` at "never".
The recorded ``T_1 < ... < T_m`` enter through one factor per arrival. The clutter indicators
``J_k`` of eq. 5.68 enter ``f'_k`` only through how many earlier arrivals were clutter (eq.
5.69), so their running counts ``c_k = J_1 + ... + J_k`` are variables, a chain between
consecutive factors, and the factor of arrival ``k`` is (``c_0 = 0``, ``J_k = c_k - c_{k-1}``
in ``{0, 1}``)

    f'_k = (lambda / W)^{J_k} 1(#{i: t_i < T_k} = k - 1 - c_{k-1}) (delta(T_k - t_(k - c_{k-1}))
           if J_k = 0, else 1):

the Poisson clutter prior (``lambda / W`` per recorded clutter arrival, eq. 5.67; the rest of
it is the particle-independent ``log_poisson`` of :mod:`._common`) times the min factor of eq.
5.69, with the count of sources before ``T_k`` stated for a clutter arrival as well (implied
by the other factors; it makes the clutter branch a like-for-like alternative). The last factor
also says that every source not recorded is late (after ``tau``: ``T_m`` when all ``r`` ranks
are filled, else the window end ``W``) or lost. The product of the factors is the summand of
eq. 5.26, so with one factor (``m <= 1``: a tree) the Bethe estimate below is exact.

A source can only be at a recorded time or late or lost: anywhere else it would have been
recorded, so the joint is zero there, and the prior is kept only on these ``m + 1`` states
(``psi[i, l]``: ``phi_i(l)`` for ``t_i = T_l``, ``u_i`` for late or lost, the source factors
of the bipartite engines, :func:`~._common.log_source_factors`), which changes no term of the
sum. Writing the factor as a sum of products (eq. 5.9), its message to ``t_i`` is (eqs. 5.14,
5.70) ``h1 delta(t - T_k) + h2 1(t < T_k) + h3 1(t > T_k)`` where, with ``L_a``, ``U_a``,
``D_a`` the message from ``t_a`` below, above and at ``T_k`` and ``[x^d y^e]`` the
coefficients of ``prod_{a != i} (U_a + x L_a + y D_a)`` (elementary symmetric polynomials, eqs.
5.15-5.20, by prefix and suffix products), summed over the number ``d`` of sources before
``T_k`` with the count messages' weights ``w_J(d)`` (eq. 5.70's sum over the ``J``):

    h1 = sum_d w_0(d) [x^d y^0],  h2 = sum_d w_0(d) [x^{d-1} y] + w_1(d) [x^{d-1}],
    h3 = sum_d w_0(d) [x^d y] + w_1(d) [x^d].

Messages to the count variables (eq. 5.71) use the polynomial over all sources. Each arrival's
weights (every ``phi_i(k)`` and ``lambda / W``) and then each source's are divided by their
largest, which scales the factors and priors by constants (the Bethe estimate shifts by exactly
their logs); a match below ``2^-60`` of its alternative is dropped as in the ``exact`` engine,
and a source left with no match (its only state "late or lost") leaves the graph. Factors are
updated one at a time, alternately in increasing and decreasing order of ``k``, and the sweeps
are extrapolated by SQUAREM [Varadhan2008]: the loops count an association twice (it enters
its own factor and, as a count, every later one), so BP drifts geometrically towards one of two
near-tied associations, slowly when they are close. The likelihood is the Bethe estimate

    log Z ~ sum_f log Z_f + sum_i log Z_i - sum_{(i, f)} log Z_{i f} - sum_k log Z_{c_k},

(on loopy graphs below the exact value in every case tried, by about ``log 2`` per tie) and the
association posterior the belief of each ``f'_k`` (column ``s``: clutter). A particle not
settled after ``max_iter`` sweeps is reported (``sweeps = -1``); so is one, with ``-inf``,
whose messages lose all mass (hard constraints, ``P_D = 1`` and ``lambda = 0``) or whose
scaled terms underflow (``P_D = 1``: "late" is then a Gaussian tail; seen on small random
cycles only where the exact log-likelihood was below -1,200).
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

__all__ = ["minfactor_engine"]

#: A match below ``2^-60`` times its alternative is dropped (see :func:`_setup`).
_LOG_EPS = -60.0 * math.log(2.0)


#: One chunk's work arrays (s sources, m factors; state ``l < m`` of ``t_i`` is ``t_i = T_l``,
#: state ``m`` is "later than ``tau`` or lost").
#:
#: ``log_match`` (s, m), ``log_u`` (s,) the source factors; ``psi`` (s, m + 1) their scaled
#: values by state, ``kappa`` (m,) the scaled clutter weights; factor-to-variable messages
#: ``atom``, ``below``, ``above`` (s, m); the normalised messages ``low``, ``high``, ``point``
#: (s,) of the ``t_i`` to the factor being updated; count messages ``fwd`` (m, m + 1) from
#: ``f'_k`` to ``c_k`` and ``bwd`` (m, m + 1) from ``f'_{k+1}`` to ``c_k``; prefix and suffix
#: polynomials ``pre``, ``suf`` (s + 1, 2, m); count weights ``w`` (m, 2) by the number ``d``
#: of sources below ``T_k``; the new messages ``coef`` (s, 3) and ``new_c`` (m + 1,);
#: ``later`` (m,) running products; ``x0``, ``x1`` copies of all messages ``msg`` (flat: the
#: views ``atom``, ``below``, ``above``, ``fwd``, ``bwd``) for the extrapolation.
_Scratch = namedtuple(
    "_Scratch",
    "log_match log_u psi kappa msg atom below above fwd bwd low high point pre suf w coef "
    "new_c later x0 x1",
)


@njit(cache=True)
def _scratch(s, m):
    """Work arrays for ``s`` sources; :func:`_sized` views them for the sources in play."""
    deg = max(m, 1)
    n_msg = 3 * s * deg + 2 * deg * (m + 1)
    return _Scratch(
        np.empty((s, deg)),
        np.empty(s),
        np.empty((s, m + 1)),
        np.empty(deg),
        np.empty(n_msg),
        np.empty((s, deg)),  # atom, below, above: replaced by views of msg in _sized
        np.empty((s, deg)),
        np.empty((s, deg)),
        np.empty((deg, m + 1)),
        np.empty((deg, m + 1)),
        np.empty(s),
        np.empty(s),
        np.empty(s),
        np.empty((s + 1, 2, deg)),
        np.empty((s + 1, 2, deg)),
        np.empty((deg, 2)),
        np.empty((s, 3)),
        np.empty(m + 1),
        np.empty(deg),
        np.empty(n_msg),
        np.empty(n_msg),
    )


@njit(cache=True)
def _sized(buf, n):
    """``buf`` for the first ``n`` sources: the message arrays are views of one flat vector
    ``msg`` (``atom``, ``below``, ``above``, ``fwd``, ``bwd`` in turn)."""
    deg, width = buf.fwd.shape
    n_t = n * deg
    n_msg = 3 * n_t + 2 * deg * width
    msg = buf.msg[:n_msg]
    return _Scratch(
        buf.log_match,
        buf.log_u,
        buf.psi[:n],
        buf.kappa,
        msg,
        msg[:n_t].reshape((n, deg)),
        msg[n_t : 2 * n_t].reshape((n, deg)),
        msg[2 * n_t : 3 * n_t].reshape((n, deg)),
        msg[3 * n_t : 3 * n_t + deg * width].reshape((deg, width)),
        msg[3 * n_t + deg * width :].reshape((deg, width)),
        buf.low[:n],
        buf.high[:n],
        buf.point[:n],
        buf.pre[: n + 1],
        buf.suf[: n + 1],
        buf.w,
        buf.coef[:n],
        buf.new_c,
        buf.later,
        buf.x0[:n_msg],
        buf.x1[:n_msg],
    )


@njit(cache=True)
def _setup(c, pred, buf, active):
    """Scaled source factors ``psi`` by state and clutter weights ``kappa``; the sources that
    can explain an arrival first in ``psi``, their indices in ``active``. Returns ``(offset,
    n)``: the sum of the logs of the scales (``-inf``: an arrival nothing can explain) and the
    number of those sources.

    Each arrival's weights (``phi_i(k)`` of every source and ``lambda / W``) are divided by
    their largest, then each source's weights by their largest: every term of the sum holds
    each arrival's and each source's weight exactly once, so this scales ``f'_k`` and the
    priors by constants. A match weaker than ``2^-60`` of its alternative (source late or
    lost, arrival clutter: ``phi_i(k) / u_i < 2^-60 lambda / W``) is dropped, as in the
    ``exact`` engine (it changes the sum by less than ``2^-60`` of it); a source left with
    no match sends the factors nothing they can use (its only state is "late or lost", scaled
    to 1) and is left out.
    """
    log_match, log_u, psi, kappa = buf.log_match, buf.log_u, buf.psi, buf.kappa
    s, m = pred.shape[0], c.toa.shape[0]
    log_source_factors(c, pred, log_match, log_u)
    offset = 0.0
    for k in range(m):
        log_kappa = c.log_clutter[k]
        top = log_kappa
        for i in range(s):
            top = max(top, log_match[i, k])
        if top == -math.inf:
            return -math.inf, 0
        kappa[k] = math.exp(log_kappa - top)
        for i in range(s):
            if log_match[i, k] - log_u[i] < log_kappa + _LOG_EPS:
                log_match[i, k] = -math.inf
            else:
                log_match[i, k] -= top
        offset += top
    n = 0
    for i in range(s):
        top = log_u[i]
        for k in range(m):
            top = max(top, log_match[i, k])
        offset += top
        if not _has_match(log_match[i]):
            continue
        for k in range(m):
            psi[n, k] = math.exp(log_match[i, k] - top)
        psi[n, m] = math.exp(log_u[i] - top)
        active[n] = i
        n += 1
    return offset, n


@njit(cache=True)
def _has_match(log_match_row):
    """Whether a source has an arrival left to explain."""
    for v in log_match_row:
        if v > -math.inf:
            return True
    return False


@njit(cache=True)
def _start(buf):
    """Uniform messages."""
    buf.atom[:, :] = 1.0
    buf.below[:, :] = 1.0
    buf.above[:, :] = 1.0
    deg, width = buf.fwd.shape
    for k in range(deg):
        for v in range(width):
            buf.fwd[k, v] = 1.0 if v <= k + 1 else 0.0
            buf.bwd[k, v] = 1.0 if v <= k + 1 else 0.0


@njit(cache=True)
def _to_factor(f, psi, atom, below, above, low, high, point, later):
    """Normalised messages of every ``t_i`` to factor ``f`` (the prior times every other
    factor's message) into ``low`` (mass at the ``T_l`` below ``T_f``), ``point`` (at
    ``T_f``) and ``high`` (above: later ``T_l``, late or lost); False if one has no mass.

    At state ``l`` factor ``g`` sends ``above`` if ``g < l``, ``atom`` if ``g = l`` and
    ``below`` if ``g > l``: running products over ``g`` (``later`` (m,) holds those of
    ``below``) give every state in ``O(m)``. With ``f = -1`` (no factor left out) ``high``
    holds ``Z_i`` unnormalised.
    """
    s, m = atom.shape
    for i in range(s):
        acc = 1.0  # prod_{g > l, g != f} below[i, g]
        for l in range(m - 1, -1, -1):
            later[l] = acc
            if l != f:
                acc *= below[i, l]
        lo = 0.0
        hi = 0.0
        pt = 0.0
        earlier = 1.0  # prod_{g < l, g != f} above[i, g]
        for l in range(m):
            v = psi[i, l] * earlier * later[l]
            if l != f:
                v *= atom[i, l]
                earlier *= above[i, l]
            if l < f:
                lo += v
            elif l == f:
                pt += v
            else:
                hi += v
        hi += psi[i, m] * earlier
        if f < 0:
            high[i] = hi
            continue
        tot = lo + hi + pt
        if not tot > 0.0:
            return False
        low[i] = lo / tot
        high[i] = hi / tot
        point[i] = pt / tot
    return True


@njit(cache=True)
def _polynomials(k, low, high, point, pre, suf):
    """Prefix and suffix products of ``U_a + x L_a + y D_a`` up to ``x^k``, ``y^1``."""
    s = low.shape[0]
    pre[0, :, : k + 1] = 0.0
    pre[0, 0, 0] = 1.0
    suf[s, :, : k + 1] = 0.0
    suf[s, 0, 0] = 1.0
    for a in range(s):
        b = s - 1 - a
        for e in range(2):
            for d in range(k + 1):
                v = pre[a, e, d] * high[a]
                u = suf[b + 1, e, d] * high[b]
                if d > 0:
                    v += pre[a, e, d - 1] * low[a]
                    u += suf[b + 1, e, d - 1] * low[b]
                if e > 0:
                    v += pre[a, e - 1, d] * point[a]
                    u += suf[b + 1, e - 1, d] * point[b]
                pre[a + 1, e, d] = v
                suf[b, e, d] = u


@njit(cache=True)
def _count_in(k, v, fwd, bwd):
    """Messages of the count variables into factor ``k`` at value ``v``: ``(from c_{k-1},
    from c_k)`` (``c_{-1} = 0``; the last count is a leaf, its message 1)."""
    prev = (1.0 if v == 0 else 0.0) if k == 0 else fwd[k - 1, v]
    nxt = 1.0 if k == fwd.shape[0] - 1 else bwd[k, v]
    return prev, nxt


@njit(cache=True)
def _factor(k, kappa, fwd, bwd, pre, suf, w, coef):
    """Factor ``k`` at the current incoming messages (``pre``, ``suf`` filled): the count
    weights ``w`` and ``coef[i] = (h1, h2, h3)``; return ``Z_f``.

    ``w[d, J]`` weighs "``d`` sources below ``T_k``, arrival ``k`` clutter (``J = 1``) or
    not": the messages of ``c_{k-1} = k - d`` and ``c_k = k - d + J`` times ``kappa^J``.
    """
    s = coef.shape[0]
    z_f = 0.0
    for d in range(k + 1):
        prev, nxt0 = _count_in(k, k - d, fwd, bwd)
        _, nxt1 = _count_in(k, k - d + 1, fwd, bwd)
        w[d, 0] = prev * nxt0
        w[d, 1] = prev * nxt1 * kappa
        z_f += w[d, 0] * pre[s, 1, d] + w[d, 1] * pre[s, 0, d]
    for i in range(s):
        h1 = 0.0
        h2 = 0.0
        h3 = 0.0
        for d in range(k + 1):
            b0 = 0.0
            b1 = 0.0
            for e in range(d + 1):
                b0 += pre[i, 0, e] * suf[i + 1, 0, d - e]
                b1 += pre[i, 0, e] * suf[i + 1, 1, d - e] + pre[i, 1, e] * suf[i + 1, 0, d - e]
            h1 += w[d, 0] * b0  # t_i = T_k, d others below
            h3 += w[d, 0] * b1 + w[d, 1] * b0  # t_i above, d others below
            if d < k:  # t_i below: d + 1 below in all
                h2 += w[d + 1, 0] * b1 + w[d + 1, 1] * b0
        coef[i, 0] = h1
        coef[i, 1] = h2
        coef[i, 2] = h3
    return z_f


@njit(cache=True)
def _count_messages(k, forward, kappa, fwd, bwd, pre, new):
    """Factor ``k``'s message (eq. 5.71) to ``c_k`` (``forward``, values ``0..k+1``) or to
    ``c_{k-1}`` (values ``0..k``) into ``new``: the polynomial over all sources ``pre[s]``
    weighted by the other count's message; return the number of values."""
    s = pre.shape[0] - 1
    if forward:
        for v in range(k + 2):
            val = 0.0
            if v <= k:  # arrival k from a source: k - v below
                prev, _ = _count_in(k, v, fwd, bwd)
                val += prev * pre[s, 1, k - v]
            if v >= 1:  # arrival k clutter
                prev, _ = _count_in(k, v - 1, fwd, bwd)
                val += prev * kappa * pre[s, 0, k - v + 1]
            new[v] = val
        return k + 2
    for v in range(k + 1):
        _, nxt0 = _count_in(k, v, fwd, bwd)
        _, nxt1 = _count_in(k, v + 1, fwd, bwd)
        new[v] = nxt0 * pre[s, 1, k - v] + nxt1 * kappa * pre[s, 0, k - v]
    return k + 1


@njit(cache=True)
def _damped(messages, i, f, new, damping):
    """``messages[i, f] = damping * old + (1 - damping) * new``; return the change."""
    old = messages[i, f]
    upd = damping * old + (1.0 - damping) * new
    messages[i, f] = upd
    return abs(upd - old)


@njit(cache=True)
def _update_counts(target, row, new, n_values, damping):
    """Normalise ``new[:n_values]`` into ``target[row]`` with damping; return the largest
    change (``-1`` if the message has no mass)."""
    tot = 0.0
    for v in range(n_values):
        tot += new[v]
    if not tot > 0.0:
        return -1.0
    delta = 0.0
    for v in range(n_values):
        delta = max(delta, _damped(target, row, v, new[v] / tot, damping))
    return delta


@njit(cache=True)
def _update_factor(k, buf, damping):
    """Recompute factor ``k``'s messages to the ``t_i`` and the count variables from the
    latest messages into it; return the largest change (``-1`` if a message has no mass)."""
    atom, below, above, coef, fwd, bwd = buf.atom, buf.below, buf.above, buf.coef, buf.fwd, buf.bwd
    low, high, point, pre, suf, kappa = buf.low, buf.high, buf.point, buf.pre, buf.suf, buf.kappa
    m = atom.shape[1]
    if not _to_factor(k, buf.psi, atom, below, above, low, high, point, buf.later):
        return -1.0
    _polynomials(k, low, high, point, pre, suf)
    _factor(k, kappa[k], fwd, bwd, pre, suf, buf.w, coef)
    delta = 0.0
    for i in range(coef.shape[0]):
        tot = coef[i, 0] + coef[i, 1] + coef[i, 2]
        if not tot > 0.0:
            return -1.0
        # messages sum to 1: the absolute change is the relative one
        delta = max(delta, _damped(atom, i, k, coef[i, 0] / tot, damping))
        delta = max(delta, _damped(below, i, k, coef[i, 1] / tot, damping))
        delta = max(delta, _damped(above, i, k, coef[i, 2] / tot, damping))
    if k < m - 1:
        n_values = _count_messages(k, True, kappa[k], fwd, bwd, pre, buf.new_c)
        change = _update_counts(fwd, k, buf.new_c, n_values, damping)
        if change < 0.0:
            return -1.0
        delta = max(delta, change)
    if k > 0:
        n_values = _count_messages(k, False, kappa[k], fwd, bwd, pre, buf.new_c)
        change = _update_counts(bwd, k - 1, buf.new_c, n_values, damping)
        if change < 0.0:
            return -1.0
        delta = max(delta, change)
    return delta


@njit(cache=True)
def _sweep(it, buf, damping):
    """One sweep over the factors (forward when ``it`` is odd, else backward): the largest
    message change, ``-1`` if a message lost all mass."""
    m = buf.atom.shape[1]
    delta = 0.0
    for step in range(m):
        k = step if it % 2 == 1 else m - 1 - step
        change = _update_factor(k, buf, damping)
        if change < 0.0:
            return -1.0
        delta = max(delta, change)
    return delta


#: An extrapolated message entry keeps at least this fraction of its value after ``F``: the
#: step may shrink a dying hypothesis fast but never removes one (at 0, a count message could
#: lose its support; 1e-3 costs about 12% more sweeps on the sample's cycles).
_FLOOR = 1e-8


@njit(cache=True)
def _extrapolate(buf):
    """SQUAREM step from ``x0``, ``x1 = F(x0)`` and ``msg = F(x1)`` into ``msg``:
    ``x0 - 2 a r + a^2 v`` with ``r = x1 - x0``, ``v = F(x1) - 2 x1 + x0``, ``a = -|r| / |v|``
    (at most -1; ``a = -1`` gives ``F(x1)`` itself), each entry at least ``_FLOOR`` times its
    value in ``F(x1)``; then every message is renormalised."""
    msg, x0, x1 = buf.msg, buf.x0, buf.x1
    rr = 0.0
    vv = 0.0
    for e in range(msg.shape[0]):
        r = x1[e] - x0[e]
        v = msg[e] - 2.0 * x1[e] + x0[e]
        rr += r * r
        vv += v * v
    if not vv > 0.0:
        return
    a = min(-math.sqrt(rr / vv), -1.0)
    for e in range(msg.shape[0]):
        r = x1[e] - x0[e]
        v = msg[e] - 2.0 * x1[e] + x0[e]
        msg[e] = max(x0[e] - 2.0 * a * r + a * a * v, _FLOOR * msg[e])
    s, m = buf.atom.shape
    for i in range(s):
        for k in range(m):
            tot = buf.atom[i, k] + buf.below[i, k] + buf.above[i, k]
            buf.atom[i, k] /= tot
            buf.below[i, k] /= tot
            buf.above[i, k] /= tot
    for counts in (buf.fwd, buf.bwd):
        for k in range(m):
            tot = 0.0
            for v in range(m + 1):
                tot += counts[k, v]
            for v in range(m + 1):
                counts[k, v] /= tot


@njit(cache=True)
def _sweeps(mp, buf):
    """Sweeps until no message changes by more than ``tol``, accelerated by SQUAREM
    [Varadhan2008]: ``F`` is a forward and a backward sweep; after ``F`` twice, one step
    extrapolated along the two changes (the slow modes of this graph decay geometrically, see
    the module docstring). Returns ``(sweeps, ok)``, ``sweeps = -1`` if not converged in
    ``max_iter``; ``ok`` False when a message loses all mass."""
    msg, x0, x1 = buf.msg, buf.x0, buf.x1
    it = 0
    while True:
        x0[:] = msg
        for phase in range(4):  # F = a forward and a backward sweep, applied twice
            it += 1
            delta = _sweep(it, buf, mp.damping)
            if delta < 0.0:
                return it, False
            if delta < mp.tol:
                return it, True
            if it == mp.max_iter:
                return -1, True
            if phase == 1:
                x1[:] = msg
        _extrapolate(buf)


@njit(cache=True)
def _bethe(buf, want, out):
    """Bethe ``log Z`` at the current messages (``-inf`` if a term has no mass); the beliefs
    of the factors into ``out`` (m, s + 1) if ``want``."""
    atom, below, above, coef, fwd, bwd = buf.atom, buf.below, buf.above, buf.coef, buf.fwd, buf.bwd
    low, high, point, pre, suf, w = buf.low, buf.high, buf.point, buf.pre, buf.suf, buf.w
    s, m = atom.shape
    log_z = 0.0
    _to_factor(-1, buf.psi, atom, below, above, low, high, point, buf.later)
    for i in range(s):
        if not high[i] > 0.0:
            return -math.inf
        log_z += math.log(high[i])
    for k in range(m):
        if not _to_factor(k, buf.psi, atom, below, above, low, high, point, buf.later):
            return -math.inf
        for i in range(s):
            z_if = atom[i, k] * point[i] + below[i, k] * low[i] + above[i, k] * high[i]
            if not z_if > 0.0:
                return -math.inf
            log_z -= math.log(z_if)
        _polynomials(k, low, high, point, pre, suf)
        z_f = _factor(k, buf.kappa[k], fwd, bwd, pre, suf, w, coef)
        if not z_f > 0.0:
            return -math.inf
        log_z += math.log(z_f)
        if k < m - 1:
            z_c = 0.0
            for v in range(k + 2):
                z_c += fwd[k, v] * bwd[k, v]
            if not z_c > 0.0:
                return -math.inf
            log_z -= math.log(z_c)
        if want:
            for i in range(s):
                out[k, i] = point[i] * coef[i, 0] / z_f
            clutter = 0.0
            for d in range(k + 1):
                clutter += w[d, 1] * pre[s, 0, d]
            out[k, s] = clutter / z_f
    return log_z


@njit(cache=True)
def _minfactor_range(lo, hi, c, mp, predicted, out):
    """Particles ``lo <= p < hi`` of ``predicted`` (N, s) into ``out``."""
    s, m = predicted.shape[1], c.toa.shape[0]
    full = _scratch(s, m)
    active = np.empty(s, dtype=np.int64)
    beliefs = np.empty((m, s + 1))
    for p in range(lo, hi):
        assoc = assoc_row(out, p)
        offset, n = _setup(c, predicted[p], full, active)
        log_z = 0.0  # nothing recorded: every source late or lost, Z = prod_i u_i
        sweeps = 0
        if m > 0 and offset > -math.inf:
            buf = _sized(full, n)
            _start(buf)
            sweeps, ok = _sweeps(mp, buf)
            log_z = _bethe(buf, out.want, beliefs) if ok else -math.inf
            if log_z == -math.inf:  # a message lost all mass: not a fixed point
                sweeps = -1
            if out.want:
                assoc[:, :] = 0.0
                for k in range(m):
                    for j in range(n):
                        assoc[k, active[j]] = beliefs[k, j]
                    assoc[k, s] = beliefs[k, n]
        out.loglik[p] = log_z + offset + c.log_poisson
        out.sweeps[p] = sweeps
        if out.want and out.loglik[p] == -math.inf:
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
    """Min-factor BP with lost signals and clutter (see the module docstring).

    The source factors are those of the bipartite engines (eq. 5.66, through
    :func:`~._common.bipartite_cycle`). Returns ``loglik`` (N,), the association beliefs
    (N, m, s + 1) when asked for, and the sweeps.
    """
    n, s = predicted.shape
    out = engine_output(n, cycle.m, s, association)
    c = bipartite_cycle(cycle, model)
    over_particles(
        _minfactor_range,
        _minfactor_parallel,
        n,
        c,
        controls,
        predicted,
        out,
        seconds_per_particle=particle_seconds("minfactor", s, cycle.m, association),
    )
    return out.result(controls)
