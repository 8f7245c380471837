"""Positional scoring rules ([Pareek2017] section 4.5, definition 14, table 4.1).

A score vector ``h`` gives ``h[k]`` points to the candidate at position ``k`` (0 = best;
the paper's ``h(i)`` is ``h[i-1]``). The cumulative score is

    f_P(x) = E_{sigma ~ P}[h(sigma(x))] = (M @ h)[x]                        (eq. 4.5)

with ``M`` the positional marginal matrix of the profile, and the consensus sorts the
candidates by decreasing ``f_P`` (proposition 12). Equal scores are genuine ties
(theorem 9) and are all reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import DEFAULT_MAX_TIES, Aggregation, from_scores

__all__ = [
    "antiplurality",
    "borda",
    "check_scores",
    "k_approval",
    "log_scores",
    "plurality",
    "positional",
    "positional_scores",
    "squared",
]


def _positions(n: int) -> np.ndarray:
    """The 1-based positions ``i = 1 .. n`` as floats."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return np.arange(1, n + 1, dtype=float)


def borda(n: int) -> np.ndarray:
    """Borda: ``h(i) = n - i`` (table 4.1)."""
    return n - _positions(n)


def plurality(n: int) -> np.ndarray:
    """Plurality: ``h(1) = 1``, else 0 (table 4.1)."""
    return (_positions(n) == 1).astype(float)


def antiplurality(n: int) -> np.ndarray:
    """Antiplurality (veto): ``h(n) = 0``, else 1 (table 4.1)."""
    return (_positions(n) != n).astype(float)


def k_approval(n: int, k: int | None) -> np.ndarray:
    """k-approval: ``h(i) = 1`` for ``i <= k``, else 0."""
    if k is None or not 1 <= k <= n:
        raise ValueError(f"k-approval needs 1 <= k <= n = {n}, got k = {k}")
    return (_positions(n) <= k).astype(float)


def log_scores(n: int) -> np.ndarray:
    """Logarithmic: ``h(i) = -log(i)`` (table 4.1)."""
    return -np.log(_positions(n))


def squared(n: int) -> np.ndarray:
    """Squared: ``h(i) = -i**2`` (table 4.1)."""
    return -(_positions(n) ** 2)


def check_scores(h: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """Validate a custom score vector: ``n`` finite numbers, position 1 first."""
    h = np.asarray(h, dtype=float)
    if h.shape != (n,):
        raise ValueError(f"a score vector for {n} candidates needs {n} values, got {h.size}")
    if not np.all(np.isfinite(h)):
        raise ValueError("score vector values must be finite")
    return h


def positional_scores(profile: Profile, h: np.ndarray) -> np.ndarray:
    """``(n,)`` cumulative scores ``f_P = M @ h`` (eq. 4.5)."""
    return profile.positional_matrix @ check_scores(h, profile.n)


def positional(
    profile: Profile,
    h: np.ndarray,
    rule: str = "scores",
    max_ties: int = DEFAULT_MAX_TIES,
) -> Aggregation:
    """Positional-scoring consensus for score vector ``h`` (proposition 12)."""
    h = check_scores(h, profile.n)
    return from_scores(rule, positional_scores(profile, h), max_ties, details={"h": h})
