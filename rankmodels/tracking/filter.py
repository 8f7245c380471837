"""Bootstrap particle filter ([Pareek2017] Algorithm 2) with log-space weights.

For cycles ``t = 0 .. T-1`` with observations ``y_t`` (the ranked TOAs of cycle ``t``):

1. predict: ``X_t^i ~ f(X_t-1^i, .)`` (the dynamics' ``propagate``, eq. 5.1);
2. weight: ``log w_t^i = log w_t-1^i + l_t(X_t^i)`` with ``l_t(X) = log p(y_t | X)`` from the
   likelihood engine (eq. 5.26 / 5.66-5.67), normalised by log-sum-exp;
3. record the posterior mean and covariance, the effective sample size
   ``ESS_t = 1 / sum_i (w_t^i)^2`` and the log predictive likelihood
   ``log p(y_t | y_0:t-1) = log sum_i w_t-1^i exp(l_t(X_t^i))``;
4. resample (systematic) when ``ESS_t < ess_threshold * N``.

A cycle without data (the likelihood callback returns ``None``) only predicts. A cycle where
every particle has likelihood zero (``l_t = -inf`` or NaN everywhere) *collapses* the filter:
it is flagged in :attr:`FilterResult.collapsed`, its predictive log-likelihood is ``-inf``, and
the weights are left as they were (the cycle is treated as uninformative) -- nothing is divided
by zero.

Arrays: particle states ``(N, d)`` (``d = dynamics.state_dim``: position ``(lat, lon)``, then
the velocity when the dynamics has one), ``mean (T, 2)`` and ``cov (T, 2, 2)`` of the position,
with a velocity its moments ``velocity (T, 2)``, ``velocity_cov (T, 2, 2)`` and
``velocity_cross (T, 2, 2)`` (:func:`~rankmodels.tracking.dynamics.velocity_moments`),
per-cycle ``(T,)`` vectors,
``ensembles (T, M, d)`` (an equally weighted resample of each cycle's weighted particles, used
for association posteriors), and with ``keep_history`` the weighted particle sets
``history_x (T, N, d)``, ``history_logw (T, N)`` and ``history_parent (T, N)`` (index in the
weighted set of step ``t - 1`` that particle ``i`` of step ``t`` descends from; ``-1`` at
``t = 0``) that the smoother needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from rankmodels.tracking.dynamics import Velocity, velocity_moments

__all__ = ["FilterResult", "particle_filter", "systematic_resample"]

LogLikelihood = Callable[[int, np.ndarray], "np.ndarray | None"]


@dataclass
class FilterResult:
    """Per-cycle summaries of the forward filter (see the module docstring for shapes)."""

    mean: np.ndarray
    cov: np.ndarray
    ess: np.ndarray
    loglik: np.ndarray
    collapsed: np.ndarray
    resampled: np.ndarray
    ensembles: np.ndarray
    history_x: np.ndarray | None = None
    history_logw: np.ndarray | None = None
    history_parent: np.ndarray | None = None
    velocity: np.ndarray | None = None
    velocity_cov: np.ndarray | None = None
    velocity_cross: np.ndarray | None = None

    def velocity_at(self, t: int) -> Velocity | None:
        """The velocity moments of step ``t`` (None without a velocity in the state)."""
        if self.velocity is None:
            return None
        return Velocity(self.velocity[t], self.velocity_cov[t], self.velocity_cross[t])


def systematic_resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Systematic resampling: ``n`` indices ``i`` with ``E[#i] = n w_i`` (weights sum to 1):
    index ``j`` of ``u_k = (U + k) / n``, ``U ~ U[0, 1)``, is the first ``j`` whose cumulative
    weight exceeds ``u_k``."""
    cdf = np.cumsum(weights)
    cdf[-1] = 1.0
    return _systematic_indices(cdf, rng.random(), n)


@numba.njit(cache=True)
def _systematic_indices(cdf, start, n):  # pragma: no cover - numba
    """``searchsorted(cdf, (start + arange(n)) / n, side="right")`` capped at the last index,
    as one merge of the sorted points with ``cdf`` (O(N + n) instead of O(n log N))."""
    out = np.empty(n, dtype=np.int64)
    last = cdf.size - 1
    j = 0
    for k in range(n):
        u = (start + k) / n
        while j < last and cdf[j] <= u:
            j += 1
        out[k] = j
    return out


@numba.njit(cache=True)
def _reweight(logw, ell, w):  # pragma: no cover - numba
    """In place: ``logw <- normalise(logw + ell)`` and ``w <- exp(logw)``; NaN in ``ell`` counts
    as ``-inf``. Returns ``(log sum_i exp(logw_i + ell_i), ESS, status)`` with status 0 = ok,
    1 = collapsed (weights left unchanged), 2 = some ``ell`` is ``+inf``."""
    n = logw.shape[0]
    top = -math.inf
    for i in range(n):
        if ell[i] == math.inf:
            return math.nan, math.nan, 2
        v = logw[i] + ell[i]
        if v > top:  # False for NaN
            top = v
    status = 0
    lse = -math.inf
    if top == -math.inf:
        status = 1
    else:
        total = 0.0
        for i in range(n):
            v = logw[i] + ell[i]
            if v == v:
                total += math.exp(v - top)
        lse = top + math.log(total)
        for i in range(n):
            v = logw[i] + ell[i]
            logw[i] = v - lse if v == v else -math.inf
    sq = 0.0
    for i in range(n):
        w[i] = math.exp(logw[i])
        sq += w[i] * w[i]
    return lse, 1.0 / sq, status


def _checked_steps(
    x0: np.ndarray, dt: np.ndarray, n_particles: int, n_ensemble: int, ess_threshold: float
) -> np.ndarray:
    """The time steps ``dt`` (T,) as floats, once the filter's arguments are checked: raises
    :class:`TypeError` for a count that is not an integer and :class:`ValueError` for fewer
    than 1 particle, a negative ``n_ensemble``, ``ess_threshold`` outside ``[0, 1]``, a start
    ``x0`` that is not a finite (2,) position, or ``dt`` not 1-D, finite and > 0."""
    if isinstance(n_particles, bool) or not isinstance(n_particles, (int, np.integer)):
        raise TypeError(f"n_particles must be an integer, got {type(n_particles).__name__}")
    if n_particles < 1:
        raise ValueError(f"n_particles must be >= 1, got {n_particles}")
    if isinstance(n_ensemble, bool) or not isinstance(n_ensemble, (int, np.integer)):
        raise TypeError(f"n_ensemble must be an integer, got {type(n_ensemble).__name__}")
    if n_ensemble < 0:
        raise ValueError(f"n_ensemble must be >= 0 (0 = no ensembles), got {n_ensemble}")
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold}")
    if np.shape(x0) != (2,) or not np.isfinite(x0).all():
        raise ValueError(f"x0 must be a finite (2,) position, got {np.asarray(x0)!r}")
    dt = np.asarray(dt, dtype=float)
    if dt.ndim != 1 or not (np.isfinite(dt).all() and (dt > 0).all()):
        raise ValueError("dt must be a 1-D array of finite time steps > 0 days")
    return dt


def _empty_result(
    n_cyc: int, n_particles: int, m: int, keep_history: bool, dim: int = 2
) -> FilterResult:
    """The :class:`FilterResult` of ``T = n_cyc`` cycles to fill in: ``mean (T, 2)``,
    ``cov (T, 2, 2)``, ``ess (T,)`` uninitialised, ``loglik (T,)`` zero, ``collapsed`` and
    ``resampled (T,)`` False, ``ensembles (T, m, d)`` uninitialised and, with
    ``keep_history``, ``history_x (T, N, d)``, ``history_logw (T, N)`` and
    ``history_parent (T, N)`` (int32) uninitialised for ``N = n_particles`` and states of
    ``d = dim`` columns (``velocity (T, 2)`` and ``velocity_cov (T, 2, 2)`` when ``d = 4``)."""
    res = FilterResult(
        mean=np.empty((n_cyc, 2)),
        cov=np.empty((n_cyc, 2, 2)),
        ess=np.empty(n_cyc),
        loglik=np.zeros(n_cyc),
        collapsed=np.zeros(n_cyc, dtype=bool),
        resampled=np.zeros(n_cyc, dtype=bool),
        ensembles=np.empty((n_cyc, m, dim)),
    )
    if dim == 4:
        res.velocity, res.velocity_cov = np.empty((n_cyc, 2)), np.empty((n_cyc, 2, 2))
        res.velocity_cross = np.empty((n_cyc, 2, 2))
    if keep_history:
        res.history_x = np.empty((n_cyc, n_particles, dim))
        res.history_logw = np.empty((n_cyc, n_particles))
        res.history_parent = np.empty((n_cyc, n_particles), dtype=np.int32)
    return res


def particle_filter(
    x0: np.ndarray,
    dt: np.ndarray,
    loglik: LogLikelihood,
    dynamics: Any,
    n_particles: int,
    rng: np.random.Generator,
    *,
    ess_threshold: float = 0.5,
    n_ensemble: int = 1000,
    keep_history: bool = False,
    progress: Callable[[int], None] | None = None,
) -> FilterResult:
    """Run the filter from the known start ``x0`` (2,) over ``T = len(dt)`` cycles.

    ``dt[t]`` is the time (days) from the previous cycle (or from launch, for ``t = 0``) to
    cycle ``t``; the particles start at ``dynamics.start(x0, N, rng)``. ``loglik(t,
    particles)`` returns ``(N,)`` log-likelihoods or ``None`` for a cycle without data (it
    reads the positions, the first two columns of the states). ``dynamics``: see
    :mod:`rankmodels.tracking.dynamics`. ``n_ensemble``: size of the per-cycle equally weighted
    resample (0 = none). ``progress`` is called with 1 after each cycle.
    """
    dt = _checked_steps(x0, dt, n_particles, n_ensemble, ess_threshold)
    n_cyc = dt.size
    m = min(n_ensemble, n_particles)
    x = dynamics.start(x0, n_particles, rng)
    logw = np.full(n_particles, -np.log(n_particles))
    res = _empty_result(n_cyc, n_particles, m, keep_history, x.shape[1])
    parent = np.full(n_particles, -1)
    w = np.empty(n_particles)
    no_data = np.zeros(n_particles)
    for t in range(n_cyc):
        x = dynamics.propagate(x, dt[t], rng)
        ell = loglik(t, x)
        has_data = ell is not None
        ell = no_data if ell is None else np.ascontiguousarray(ell, dtype=np.float64)
        if ell.shape != (n_particles,):
            raise ValueError(f"cycle {t}: likelihood of shape {ell.shape}, expected (N,)")
        lse, res.ess[t], status = _reweight(logw, ell, w)
        if status == 2:
            raise ValueError(f"cycle {t}: likelihood +inf (a degenerate likelihood)")
        res.collapsed[t] = status == 1
        res.loglik[t] = lse if has_data else 0.0
        res.mean[t], res.cov[t] = dynamics.moments(x, w)
        if res.velocity is not None:
            res.velocity[t], res.velocity_cov[t], res.velocity_cross[t] = velocity_moments(x, w)
        if m:
            res.ensembles[t] = x[systematic_resample(w, m, rng)]
        if keep_history:
            res.history_x[t] = x
            res.history_logw[t] = logw
            res.history_parent[t] = parent
        parent = np.arange(n_particles)
        if res.ess[t] < ess_threshold * n_particles:
            parent = systematic_resample(w, n_particles, rng)
            x = x[parent]
            logw = np.full(n_particles, -np.log(n_particles))
            res.resampled[t] = True
        if progress is not None:
            progress(1)
    return res
