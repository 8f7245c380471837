"""Particle smoother: forward filtering, backward simulation (FFBSi) with rejection sampling.

The dissertation only filters (Algorithm 2). When the whole record is available -- and in
particular the recovery position, appended by the caller as a last "cycle" whose likelihood
is a Gaussian around the surfacing fix -- every position can use all the data. Given the
filter's weighted particle sets ``{(x_t^i, w_t^i)}``, a smoothed trajectory is drawn backwards
(Godsill, Doucet & West 2004):

    x_T ~ sum_i w_T^i delta(x_T^i),
    x_t | x_t+1 ~ sum_i w_t^i f(x_t^i, x_t+1) delta(x_t^i) / sum_j w_t^j f(x_t^j, x_t+1),

with ``f`` the random-walk density (eq. 5.1). Sampling the backward kernel exactly costs
``O(N)`` per trajectory and step; we use the rejection sampler of Douc, Garivier, Moulines &
Olsson (2011): propose ``i ~ w_t`` and accept with probability ``f(x_t^i, x_t+1) / f_max``.
Trajectories still pending after ``max_rounds`` proposals are sampled exactly (vectorised,
chunked). ``M`` trajectories cost ``O(T (N + M))`` on average. Mean and covariance of the
trajectories at each cycle estimate the smoothing distribution ``p(X_t | y_0:T)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["backward_simulate"]

_CHUNK = 2_000_000  # elements of the (pending, N) matrix sampled exactly at once


def _categorical(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``logp`` (rows: unnormalised log-probabilities)."""
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    u = rng.random(logp.shape[0]) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), logp.shape[1] - 1)


def _draw(logw: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent indices from the categorical distribution ``exp(logw)`` (unnormalised)."""
    cdf = np.cumsum(np.exp(logw - logw.max()))
    return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), logw.size - 1)


def backward_simulate(
    history_x: np.ndarray,
    history_logw: np.ndarray,
    dt: np.ndarray,
    dynamics: Any,
    n_trajectories: int,
    rng: np.random.Generator,
    *,
    max_rounds: int = 16,
) -> np.ndarray:
    """Draw ``M = n_trajectories`` smoothed trajectories, ``(T, M, 2)``.

    ``history_x (T, N, 2)`` and normalised ``history_logw (T, N)``: the filter's weighted
    particles at every step (before resampling); ``dt (T,)``: ``dt[t]`` days from step
    ``t - 1`` to ``t`` (as given to the filter).
    """
    n_steps, n_part = history_logw.shape
    if history_x.shape != (n_steps, n_part, 2) or np.shape(dt) != (n_steps,):
        raise ValueError("history_x must be (T, N, 2), history_logw (T, N) and dt (T,)")
    m = int(n_trajectories)
    out = np.empty((n_steps, m, 2))
    out[-1] = history_x[-1, _draw(history_logw[-1], m, rng)]
    for t in range(n_steps - 2, -1, -1):
        xs, logw, step = history_x[t], history_logw[t], dt[t + 1]
        target = out[t + 1]
        bound = dynamics.log_density_bound(xs, step)
        chosen = np.full(m, -1)
        pending = np.arange(m)
        for _ in range(max_rounds):
            if pending.size == 0:
                break
            prop = _draw(logw, pending.size, rng)
            log_acc = dynamics.log_density(xs[prop], target[pending], step) - bound
            ok = np.log(rng.random(pending.size)) < log_acc
            chosen[pending[ok]] = prop[ok]
            pending = pending[~ok]
        rows = max(1, _CHUNK // n_part)
        for start in range(0, pending.size, rows):
            block = pending[start : start + rows]
            logp = logw[None, :] + dynamics.log_density(
                xs[None, :, :], target[block][:, None, :], step
            )
            chosen[block] = _categorical(logp, rng)
        out[t] = xs[chosen]
    return out
