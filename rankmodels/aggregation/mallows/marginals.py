"""Exact marginals of a Mallows model, in polynomial time (no enumeration of ``S_n``).

Repeated insertion (Doignon et al. 2004): the items ``W[0], W[1], ...`` of the centre are
inserted one at a time; when the list already holds ``t`` items, ``W[t]`` goes to slot
``s in {0..t}`` with probability ``phi**(t-s) / G_{t+1}``, ``G_m = 1 + phi + ... + phi**(m-1)``,
independently of the past (it then makes ``t - s`` discordant pairs with ``W``).

Positional marginals ``M[x, k] = P(x at position k)``. Follow ``x = W[i]``: it enters at
position ``p = s`` with probability ``phi**(i-s) / G_{i+1}``; each later insertion of ``W[t]``
(``t = i+1 .. n-1``) lands above it, pushing it down one place, with probability

    q_t(p) = sum_{s=0}^{p} phi**(t-s) / G_{t+1} = phi**(t-p) G_{p+1} / G_{t+1}.       (1)

So the position of ``x`` is a Markov chain over the insertion steps: a DP of ``O(n^2)`` per
item, ``O(n^3)`` for the matrix. The joint positions of two items ``u = W[i]``, ``v = W[j]``
(``i < j``) are the same chain on pairs ``(p_u, p_v)`` from step ``j`` on: an insertion at slot
``s`` pushes down each of them whose position is ``>= s``, so with ``c(p) = q_t(p)`` of (1),
``P(both move) = c(min)``, ``P(only the lower one moves) = c(max) - c(min)`` -- ``O(n^3)``
for the ``(n, n)`` table ``J[a, b] = P(u at a, v at b)``.

Pairwise marginals (Fligner and Verducci 1986): for centre
positions ``i < j`` and ``d = j - i``,

    P(W[i] above W[j]) = g(d) = (d+1) / (1 - phi**(d+1)) - d / (1 - phi**d)             (2)

(``g(1) = 1/(1+phi)``, ``g -> 1/2`` as ``phi -> 1``), computed as
``g = (B((d+1) theta) - B(d theta)) / theta`` with ``B(x) = x / (1 - e^-x)`` and its Taylor
series for small ``(d+1) theta``.

:class:`DistributionMarginals` carries a distribution's marginals under the names a
:class:`~rankmodels.aggregation.Profile` uses, so the marginal-based rules of
:func:`rankmodels.aggregation.aggregate` (positional, Kemeny, footrule, Copeland, Schulze,
ranked pairs) and :func:`~rankmodels.aggregation.axioms.profile_axiom_report` take it as they
take a profile: a Mallows mixture is aggregated *as a distribution*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from rankmodels.permutations import as_permutation

__all__ = [
    "DistributionMarginals",
    "pair_positions",
    "pairwise_marginals",
    "positional_marginals",
]

_SERIES_BELOW = 1e-2


@numba.njit(cache=True)
def _powers(phi: float, n: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - numba
    """``phi**v`` for ``v = 0..n`` and ``G[m] = 1 + phi + ... + phi**(m-1)``, ``m = 0..n+1``."""
    power = np.empty(n + 1)
    power[0] = 1.0
    for v in range(1, n + 1):
        power[v] = power[v - 1] * phi
    G = np.zeros(n + 2)
    for m in range(1, n + 2):
        G[m] = G[m - 1] + power[m - 1]
    return power, G


@numba.njit(cache=True)
def _positions_by_centre_rank(phi: float, n: int) -> np.ndarray:  # pragma: no cover - numba
    """``Q[i, k] = P(W[i] at position k)`` by the insertion DP (1)."""
    power, G = _powers(phi, n)
    Q = np.zeros((n, n))
    dist = np.zeros(n)
    new = np.zeros(n)
    for i in range(n):
        for s in range(i + 1):
            dist[s] = power[i - s] / G[i + 1]
        for t in range(i + 1, n):  # insert W[t] into a list of t items
            new[: t + 1] = 0.0
            for p in range(t):
                down = power[t - p] * G[p + 1] / G[t + 1]
                new[p] += dist[p] * (1.0 - down)
                new[p + 1] += dist[p] * down
            dist[: t + 1] = new[: t + 1]
        Q[i] = dist
    return Q


@numba.njit(cache=True)
def _pair_by_centre_rank(phi: float, n: int, i: int, j: int) -> np.ndarray:  # pragma: no cover
    """``S[a, b] = P(W[i] at a, W[j] at b)`` for ``i < j`` by the pair chain."""
    power, G = _powers(phi, n)
    first = np.zeros(n)  # position of W[i] before W[j] is inserted
    for s in range(i + 1):
        first[s] = power[i - s] / G[i + 1]
    for t in range(i + 1, j):
        new = np.zeros(n)
        for p in range(t):
            down = power[t - p] * G[p + 1] / G[t + 1]
            new[p] += first[p] * (1.0 - down)
            new[p + 1] += first[p] * down
        first = new
    S = np.zeros((n, n))
    for p in range(j):  # insert W[j] at slot s: W[i] moves down when s <= p
        for s in range(j + 1):
            prob = first[p] * power[j - s] / G[j + 1]
            if s <= p:
                S[p + 1, s] += prob
            else:
                S[p, s] += prob
    for t in range(j + 1, n):
        new2 = np.zeros((n, n))
        for a in range(t):
            for b in range(t):
                if a == b or S[a, b] == 0.0:
                    continue
                ca = power[t - a] * G[a + 1] / G[t + 1]
                cb = power[t - b] * G[b + 1] / G[t + 1]
                lo, hi = min(ca, cb), max(ca, cb)
                mass = S[a, b]
                new2[a + 1, b + 1] += mass * lo  # slot above both
                new2[a, b] += mass * (1.0 - hi)  # slot below both
                if a < b:  # slot between them: only the lower one (b) moves
                    new2[a, b + 1] += mass * (hi - lo)
                else:
                    new2[a + 1, b] += mass * (hi - lo)
        S = new2
    return S


def pair_positions(centre: np.ndarray, theta: float, x: int, y: int) -> np.ndarray:
    """``(n, n)`` joint positions ``J[a, b] = P(x at position a, y at position b)`` of two
    items under ``Mallows(centre, exp(-theta))`` by the pair chain, ``O(n^3)``."""
    centre = as_permutation(centre, "centre")
    n = centre.size
    if not (0 <= x < n and 0 <= y < n) or x == y:
        raise ValueError(f"x and y must be two different items in 0..{n - 1}, got {x}, {y}")
    rank = np.empty(n, dtype=np.int64)
    rank[centre] = np.arange(n)
    i, j = int(rank[x]), int(rank[y])
    S = _pair_by_centre_rank(float(np.exp(-theta)), n, min(i, j), max(i, j))
    return S if i < j else S.T.copy()


def positional_marginals(centre: np.ndarray, theta: float) -> np.ndarray:
    """``(n, n)`` doubly-stochastic ``M[x, k] = P(x at position k)`` of ``Mallows(centre,
    exp(-theta))`` by the insertion DP (eq. 1), ``O(n^3)``."""
    centre = as_permutation(centre, "centre")
    Q = _positions_by_centre_rank(float(np.exp(-theta)), centre.size)
    M = np.empty_like(Q)
    M[centre] = Q
    return M


def _above_probability(d: np.ndarray, theta: float) -> np.ndarray:
    """``g(d)`` of eq. (2) for distances ``d >= 1`` between centre positions."""
    d = np.asarray(d, dtype=float)
    if theta * (np.max(d, initial=0.0) + 1) < _SERIES_BELOW:
        # B(x) = 1 + x/2 + x^2/12 - x^4/720 + O(x^6)
        return 0.5 + (2 * d + 1) * theta / 12 - ((d + 1) ** 4 - d**4) * theta**3 / 720

    def B(x: np.ndarray) -> np.ndarray:
        return x / -np.expm1(-x)

    return (B((d + 1) * theta) - B(d * theta)) / theta


def pairwise_marginals(centre: np.ndarray, theta: float) -> np.ndarray:
    """``(n, n)`` ``P[x, y] = P(x ranked above y)`` of ``Mallows(centre, exp(-theta))`` by the
    closed form (2); zero diagonal, ``P + P.T = 1`` off it."""
    centre = as_permutation(centre, "centre")
    n = centre.size
    rank = np.empty(n, dtype=np.int64)
    rank[centre] = np.arange(n)
    d = rank[None, :] - rank[:, None]  # d[x, y] > 0 when the centre ranks x above y
    ahead = d > 0
    above = np.zeros((n, n))
    above[ahead] = _above_probability(d[ahead], theta)
    return above + ahead.T * (1.0 - above.T)


@dataclass(frozen=True, eq=False)
class DistributionMarginals:
    """A distribution over rankings of ``candidates`` known through its marginals.

    ``positional_matrix`` ``(n, n)``: doubly stochastic ``M[x, k] = P(x at position k)``;
    ``pairwise`` ``(n, n)``: ``P[x, y] = P(x above y)``, ``P + P.T = 1`` off the diagonal, 0 on it.
    The attributes the aggregation rules read have a :class:`~rankmodels.aggregation.Profile`'s
    names; rules that need the whole distribution (``mode``) raise TypeError.
    """

    candidates: tuple[str, ...]
    positional_matrix: np.ndarray
    pairwise: np.ndarray

    def __post_init__(self) -> None:
        names = tuple(str(c) for c in self.candidates)
        n = len(names)
        if n < 1 or len(set(names)) != n:
            raise ValueError(f"candidates must be unique names, got {list(names)}")
        M = np.asarray(self.positional_matrix, dtype=float)
        P = np.asarray(self.pairwise, dtype=float)
        if M.shape != (n, n) or P.shape != (n, n):
            raise ValueError(f"marginals must have shape ({n}, {n}), got {M.shape}, {P.shape}")
        tol = 1e-8
        if (
            np.any(M < -tol)
            or not np.allclose(M.sum(axis=0), 1, atol=tol)
            or not np.allclose(M.sum(axis=1), 1, atol=tol)
        ):
            raise ValueError("positional_matrix must be doubly stochastic")
        off = ~np.eye(n, dtype=bool)
        if np.any(np.diag(P) != 0) or not np.allclose((P + P.T)[off], 1, atol=tol):
            raise ValueError("pairwise must have a zero diagonal and P + P.T = 1 off it")
        object.__setattr__(self, "candidates", names)
        object.__setattr__(self, "positional_matrix", M)
        object.__setattr__(self, "pairwise", P)

    @property
    def n(self) -> int:
        """Number of candidates."""
        return len(self.candidates)

    @property
    def first_place(self) -> np.ndarray:
        """``(n,)`` first-place marginals ``M[x, 0]``."""
        return self.positional_matrix[:, 0].copy()

    @property
    def margins(self) -> np.ndarray:
        """``(n, n)`` majority margins ``P[x, y] - P[y, x]``."""
        return self.pairwise - self.pairwise.T

    def index(self, name: str) -> int:
        """Index of the candidate called ``name``."""
        try:
            return self.candidates.index(name)
        except ValueError:
            raise ValueError(f"unknown candidate {name!r}") from None

    def weak_orders(self) -> list[list[list[int]]]:
        """Not available: only the marginals are known (the ``mode`` rule needs ballots)."""
        raise TypeError(
            "this distribution is known through its marginals only; the mode rule needs the "
            "whole distribution (aggregate a sampled Profile instead)"
        )
