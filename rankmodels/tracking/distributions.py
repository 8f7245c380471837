"""The few distribution functions the tracker needs, from :mod:`scipy.special` (whose
import costs a fraction of :mod:`scipy.stats`'s half second at every start-up). Each equals
its :mod:`scipy.stats` counterpart (checked in the tests).

* ``poisson_cdf(k, mu) = Q(k + 1, mu)`` (regularised upper incomplete gamma) for ``k >= 0``;
* ``poisson_ppf(q, mu)``: the smallest ``k`` with ``poisson_cdf(k, mu) >= q``;
* ``chi2_ppf(q, df) = 2 P^-1(df / 2, q)`` (inverse regularised lower incomplete gamma).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["chi2_ppf", "poisson_cdf", "poisson_ppf"]


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
