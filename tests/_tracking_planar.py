"""A planar Gaussian random walk with Gaussian position fixes: the Kalman filter and the
Rauch-Tung-Striebel smoother give the exact answers the particle filter/smoother must match."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlanarWalk:
    """x_t+1 = x_t + N(0, q^2 dt I_2) in the plane (same interface as tracking.RandomWalk)."""

    q: float

    def start(self, x0, n, rng):
        return np.tile(np.asarray(x0, dtype=float), (n, 1))

    def propagate(self, x, dt, rng):
        return x + rng.normal(0.0, self.q * math.sqrt(dt), size=x.shape)

    def log_density(self, x_from, x_to, dt):
        var = self.q**2 * dt
        d = x_to - x_from
        return -0.5 * (d**2).sum(axis=-1) / var - math.log(2 * math.pi * var)

    def log_density_bound(self, x_from, dt):
        return -math.log(2 * math.pi * self.q**2 * dt)

    def moments(self, x, weights=None):
        w = np.full(len(x), 1 / len(x)) if weights is None else weights / weights.sum()
        mean = w @ x
        d = x - mean
        return mean, (d * w[:, None]).T @ d


def simulate(rng, n_steps, q, r, dt):
    """True path from the origin and isotropic Gaussian fixes y_t = x_t + N(0, r^2 I)."""
    steps = rng.normal(0.0, 1.0, (n_steps, 2)) * q * np.sqrt(dt)[:, None]
    x = np.cumsum(steps, axis=0)
    return x, x + rng.normal(0.0, r, x.shape)


def kalman(y, q, r, dt, observed):
    """Per-axis Kalman filter + RTS smoother from x_0 = 0 exactly known.

    Returns filtered mean/var, predictive log-likelihood per step, smoothed mean/var."""
    n = len(y)
    m, p = np.zeros(2), 0.0
    mf, pf, pp, ll = np.zeros((n, 2)), np.zeros(n), np.zeros(n), np.zeros(n)
    for t in range(n):
        p = p + q**2 * dt[t]
        pp[t] = p
        if observed[t]:
            s = p + r**2
            ll[t] = -np.sum((y[t] - m) ** 2) / (2 * s) - np.log(2 * np.pi * s)
            k = p / s
            m = m + k * (y[t] - m)
            p = (1 - k) * p
        mf[t], pf[t] = m, p
    ms, ps = mf.copy(), pf.copy()
    for t in range(n - 2, -1, -1):
        g = pf[t] / pp[t + 1]
        ms[t] = mf[t] + g * (ms[t + 1] - mf[t])
        ps[t] = pf[t] + g**2 * (ps[t + 1] - pp[t + 1])
    return mf, pf, ll, ms, ps


def gaussian_loglik(y, r, observed):
    """The likelihood callback for the particle filter: log N(y_t; x, r^2 I) or None."""

    def loglik(t, x):
        if not observed[t]:
            return None
        return -np.sum((x - y[t]) ** 2, axis=1) / (2 * r**2) - np.log(2 * np.pi * r**2)

    return loglik
