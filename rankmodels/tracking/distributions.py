"""The few distribution functions the tracker needs, from :mod:`scipy.special` (whose
import costs a fraction of :mod:`scipy.stats`'s half second at every start-up). Each equals
its :mod:`scipy.stats` counterpart (checked in the tests).

* ``norm_logpdf(x, s) = -x^2 / (2 s^2) - log s - log(2 pi) / 2``;
* ``exponnorm_logpdf(x, K, s)``: the exponentially modified Gaussian (a ``N(0, s^2)`` plus an
  ``Exp`` of mean ``K s``), ``log(1/K) + y' + log Phi(y - 1/K) - log s`` with ``y = x / s``
  and ``y' = (1/(2K) - y) / K``;
* ``poisson_cdf(k, mu) = Q(k + 1, mu)`` (regularised upper incomplete gamma) for ``k >= 0``;
* ``poisson_ppf(q, mu)``: the smallest ``k`` with ``poisson_cdf(k, mu) >= q``;
* ``chi2_ppf(q, df) = 2 P^-1(df / 2, q)`` (inverse regularised lower incomplete gamma).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["chi2_ppf", "exponnorm_logpdf", "norm_logpdf", "poisson_cdf", "poisson_ppf"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def norm_logpdf(x: np.ndarray, scale: float) -> np.ndarray:
    """``log N(x; 0, scale^2)``."""
    y = np.asarray(x, dtype=float) / scale
    return -0.5 * y * y - math.log(scale) - _LOG_SQRT_2PI


def exponnorm_logpdf(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Log density of ``scale * (Z + shape * E)``, ``Z ~ N(0, 1)``, ``E ~ Exp(1)``
    (``scipy.stats.exponnorm.logpdf(x, shape, scale=scale)``)."""
    y = np.asarray(x, dtype=float) / scale
    inv = 1.0 / shape
    return inv * (0.5 * inv - y) + special.log_ndtr(y - inv) - math.log(shape) - math.log(scale)


def poisson_cdf(k: np.ndarray | int, mu: np.ndarray | float) -> np.ndarray:
    """``P(N <= k)`` for ``N ~ Poisson(mu)``; 0 for ``k < 0``."""
    k = np.floor(np.asarray(k, dtype=float))
    return np.where(k >= 0, special.pdtr(np.maximum(k, 0.0), mu), 0.0)


def poisson_ppf(q: float, mu: float) -> float:
    """Smallest integer ``k >= 0`` with ``P(N <= k) >= q``, ``N ~ Poisson(mu)``, ``0 < q < 1``."""
    k = math.ceil(special.pdtrik(q, mu))
    below = max(k - 1, 0)
    return float(below if special.pdtr(below, mu) >= q else k)


def chi2_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of the chi-squared distribution with ``df`` degrees of freedom."""
    return float(2.0 * special.gammaincinv(0.5 * df, q))
