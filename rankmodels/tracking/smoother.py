"""Particle smoother: forward filtering, backward simulation (FFBSi).

[Pareek2017] only filters (Algorithm 2). When the whole record is available -- and in
particular the recovery position, appended by the caller as a last step whose likelihood is a
Gaussian around the surfacing fix -- every position can use all the data. Given the filter's
weighted particle sets ``{(x_t^i, w_t^i)}``, a smoothed trajectory is drawn backwards
(Godsill, Doucet & West 2004):

    x_T ~ sum_i w_T^i delta(x_T^i),
    x_t | x_t+1 ~ b_t(i | x_t+1) = w_t^i f(x_t^i, x_t+1) / sum_j w_t^j f(x_t^j, x_t+1),

with ``f`` the dynamics' transition density (the random walk of eq. 5.1, or the Lagrangian
motion, whose states are position and velocity). Sampling ``b_t`` exactly costs ``O(N)`` per
trajectory and step. We use the hybrid scheme of Dau & Chopin (2022, "On backward smoothing
algorithms"):

1. rejection sampling (Douc, Garivier, Moulines & Olsson 2011): propose ``i ~ w_t``, accept
   with probability ``f(x_t^i, x_t+1) / f_max``; exact draws; ``max_rounds`` proposals per
   trajectory, drawn at once, the first accepted one wins;
2. trajectories still pending take ``mcmc_steps`` independent Metropolis-Hastings steps that
   leave ``b_t`` invariant (proposal ``i' ~ w_t``, acceptance ``min(1, f(x_t^i', x_t+1) /
   f(x_t^i, x_t+1))``), started from the filter ancestor of the particle chosen at ``t + 1``.

Cost ``O(T (N + M (max_rounds + mcmc_steps)))`` for ``M`` trajectories, never ``O(T N M)``.
Mean and covariance of the trajectories at each step estimate ``p(X_t | y_0:T)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["backward_simulate"]


def _draw(cdf: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent indices from the categorical distribution with cumulative ``cdf``."""
    return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), cdf.size - 1)


def _cdf(logw: np.ndarray) -> np.ndarray:
    return np.cumsum(np.exp(logw - logw.max()))


def backward_simulate(
    history_x: np.ndarray,
    history_logw: np.ndarray,
    history_parent: np.ndarray,
    dt: np.ndarray,
    dynamics: Any,
    n_trajectories: int,
    rng: np.random.Generator,
    *,
    max_rounds: int = 8,
    mcmc_steps: int = 10,
) -> np.ndarray:
    """Draw ``M = n_trajectories`` smoothed trajectories of states, ``(T, M, d)``.

    ``history_x (T, N, d)``, normalised ``history_logw (T, N)`` and ``history_parent (T, N)``:
    the filter's weighted particles at every step (before resampling) and their ancestors
    (:class:`rankmodels.tracking.filter.FilterResult`); ``dt (T,)``: ``dt[t]`` days from step
    ``t - 1`` to ``t`` (as given to the filter). ``dynamics``: see
    :mod:`rankmodels.tracking.dynamics`. With ``max_rounds = mcmc_steps = 0`` no backward move
    is made and each trajectory is the filter genealogy of a particle drawn at ``T - 1`` (the
    path-space smoother: cheap, but degenerate far back in long records).
    """
    n_steps, n_part = history_logw.shape
    if (
        history_x.shape[:2] != (n_steps, n_part)
        or history_x.ndim != 3
        or history_parent.shape != (n_steps, n_part)
        or np.shape(dt) != (n_steps,)
    ):
        raise ValueError(
            "history_x must be (T, N, d), history_logw and history_parent (T, N), dt (T,)"
        )
    for name, value, low in (
        ("n_trajectories", n_trajectories, 1),
        ("max_rounds", max_rounds, 0),
        ("mcmc_steps", mcmc_steps, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    m = int(n_trajectories)
    out = np.empty((n_steps, m, history_x.shape[2]))
    idx = _draw(_cdf(history_logw[-1]), m, rng)
    out[-1] = history_x[-1, idx]
    for t in range(n_steps - 2, -1, -1):
        xs, step, target = history_x[t], dt[t + 1], out[t + 1]
        cdf = _cdf(history_logw[t])
        chosen = history_parent[t + 1, idx]  # the ancestor: start of the MCMC moves
        pending = np.ones(m, dtype=bool)
        if max_rounds > 0:  # all rejection proposals at once; the first accepted one wins
            prop = _draw(cdf, m * max_rounds, rng).reshape(m, max_rounds)
            log_acc = dynamics.log_density(xs[prop], target[:, None, :], step)
            ok = np.log(rng.random(prop.shape)) < log_acc - dynamics.log_density_bound(xs, step)
            accepted = ok.any(axis=1)
            chosen[accepted] = prop[accepted, np.argmax(ok[accepted], axis=1)]
            pending = ~accepted
        if pending.any() and mcmc_steps > 0:
            tgt = target[pending]
            cur = chosen[pending]
            log_f = dynamics.log_density(xs[cur], tgt, step)
            prop = _draw(cdf, cur.size * mcmc_steps, rng).reshape(cur.size, mcmc_steps)
            log_fp = dynamics.log_density(xs[prop], tgt[:, None, :], step)
            log_u = np.log(rng.random(prop.shape))
            for k in range(mcmc_steps):  # sequential MH moves, vectorised over trajectories
                ok = log_u[:, k] < log_fp[:, k] - log_f
                cur = np.where(ok, prop[:, k], cur)
                log_f = np.where(ok, log_fp[:, k], log_f)
            chosen[pending] = cur
        idx = chosen
        out[t] = xs[idx]
    return out
