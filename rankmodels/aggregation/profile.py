"""Profiles as distributions over rankings ([Pareek2017] section 4.2).

A :class:`Profile` is a *histogram* over ballots -- the unique ballot types and their
weights -- never a list of voters: only the distribution ``P`` over rankings is used
(anonymity and non-dictatorship hold by construction, axioms D1/D6).

Ballots and the tie convention
------------------------------
Each ballot is a *weak order*: groups of tied candidates, best group first. Candidates a
ballot does not mention form one last group ("unranked candidates are tied below all ranked
ones"). Throughout :mod:`rankmodels.aggregation` a weak order stands for the **uniform
distribution over its linear extensions**: the candidates of a tie group that occupies
positions ``s .. s+g-1`` share those ``g`` positions equally, and two tied candidates are
each preferred to the other with probability 1/2. A profile with ties is therefore a genuine
distribution over ``S_n`` and every quantity below is the one of chapter 4 for it:

* first-place marginals ``P^1(x) = P(sigma(x) = 1)``, shape ``(n,)``;
* pairwise marginals ``P_{x<y} = P(sigma(x) < sigma(y))``, shape ``(n, n)``, with
  ``P_{x<y} + P_{y<x} = 1`` off the diagonal and zeros on it;
* the positional marginal matrix ``M[x, k] = P(x at position k)``, shape ``(n, n)``, doubly
  stochastic (:func:`rankmodels.dsm.marginal_matrix`), so a positional score is ``M @ h``.

Storage: ``orders[j]`` is a permutation listing ballot ``j`` best first (tied candidates in
ascending index order) and ``levels[j, k]`` the index of the tie group holding position ``k``
(``0, 1, ...``, non-decreasing); a strict ballot has ``levels[j] == arange(n)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

from rankmodels.dsm import marginal_matrix
from rankmodels.permutations import as_permutation, inverse

__all__ = ["Profile"]

# Rows of up to this many candidates are packed into one int64 code (n**n < 2**63).
_MAX_PACKED_N = 15


@dataclass(frozen=True, eq=False)
class Profile:
    """A histogram over weak orders of ``n`` named candidates.

    Build one with :meth:`from_orders` (strict complete ballots, e.g. raw votes) or
    :meth:`from_weak_orders` (ballots with ties and unranked candidates); both merge equal
    ballots. The constructor expects the canonical arrays described in the module docstring.

    Attributes
    ----------
    candidates: ``n`` candidate names; candidate ``x`` is ``candidates[x]``.
    orders: ``(m, n)`` int64, ``m`` unique ballots, best first.
    levels: ``(m, n)`` int64 tie-group index of each position.
    weights: ``(m,)`` float64 positive ballot counts (or probabilities).
    """

    candidates: tuple[str, ...]
    orders: np.ndarray
    levels: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.candidates)
        if n < 1:
            raise ValueError("a profile needs at least one candidate")
        if len(set(self.candidates)) != n:
            raise ValueError("candidate names must be unique")
        orders = as_permutation(np.atleast_2d(self.orders), "orders")
        levels = np.asarray(self.levels, dtype=np.int64)
        weights = np.asarray(self.weights, dtype=np.float64)
        if orders.ndim != 2 or orders.shape[1] != n:
            raise ValueError(f"orders must have shape (m, {n}), got {orders.shape}")
        if orders.shape[0] == 0:
            raise ValueError("a profile needs at least one ballot")
        if levels.shape != orders.shape:
            raise ValueError(f"levels must have shape {orders.shape}, got {levels.shape}")
        if weights.shape != (orders.shape[0],):
            raise ValueError(f"weights must have shape ({orders.shape[0]},), got {weights.shape}")
        _check_weights(weights)
        steps = np.diff(levels, axis=1)
        if np.any(levels[:, 0] != 0) or np.any((steps != 0) & (steps != 1)):
            raise ValueError("levels must start at 0 and grow by 0 or 1 along each ballot")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "weights", weights)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_orders(
        cls,
        orders: np.ndarray,
        weights: np.ndarray | None = None,
        candidates: Sequence[str] | None = None,
    ) -> Profile:
        """Histogram of strict complete ballots.

        ``orders`` is ``(N, n)``, one ballot per row, best first (raw votes or unique
        ballots); ``weights`` ``(N,)`` defaults to one vote each. Equal rows are merged.
        """
        orders = as_permutation(np.atleast_2d(orders), "orders")
        n = orders.shape[1]
        w = np.ones(orders.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        levels = np.broadcast_to(np.arange(n), orders.shape)
        return cls._merged(_names(candidates, n), orders, levels, w, strict=True)

    @classmethod
    def from_weak_orders(
        cls,
        ballots: Sequence[Sequence[Sequence[int]]],
        weights: Sequence[float] | np.ndarray | None = None,
        candidates: Sequence[str] | int | None = None,
    ) -> Profile:
        """Histogram of weak orders given as tie groups of candidate indices, best first.

        ``ballots[j]`` is a list of groups, e.g. ``[[2], [0, 3]]`` = "2 > 0 = 3"; candidates
        missing from a ballot form its last group. ``candidates`` is the list of names or the
        number of candidates (names ``"0" .. "n-1"``); equal ballots are merged.
        """
        if isinstance(candidates, (int, np.integer)):
            n = int(candidates)
            names = _names(None, n)
        elif candidates is None:
            n = 1 + max((x for b in ballots for g in b for x in g), default=-1)
            names = _names(None, n)
        else:
            names = _names(candidates, len(candidates))
            n = len(names)
        m = len(ballots)
        rows = [_canonical_weak_order(ballot, n) for ballot in ballots]
        orders = np.array([r[0] for r in rows], dtype=np.int64).reshape(m, n)
        levels = np.array([r[1] for r in rows], dtype=np.int64).reshape(m, n)
        w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
        return cls._merged(names, orders, levels, w, strict=False)

    @classmethod
    def _merged(
        cls,
        names: tuple[str, ...],
        orders: np.ndarray,
        levels: np.ndarray,
        weights: np.ndarray,
        strict: bool,
    ) -> Profile:
        if weights.shape != (orders.shape[0],):
            raise ValueError(f"weights must have shape ({orders.shape[0]},), got {weights.shape}")
        if orders.shape[0] == 0:
            raise ValueError("a profile needs at least one ballot")
        _check_weights(weights)
        n = orders.shape[1]
        keys = orders if strict else np.concatenate([orders, levels], axis=1)
        if strict and n <= _MAX_PACKED_N:
            codes = keys @ (n ** np.arange(n - 1, -1, -1, dtype=np.int64))
            _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
        else:
            _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        merged = np.bincount(inv.ravel(), weights=weights, minlength=first.size)
        return cls(names, orders[first], np.ascontiguousarray(levels[first]), merged)

    # ----------------------------------------------------------------- basic facts
    @property
    def n(self) -> int:
        """Number of candidates."""
        return len(self.candidates)

    @property
    def total(self) -> float:
        """Total weight (number of voters when the weights are counts)."""
        return float(self.weights.sum())

    @property
    def probabilities(self) -> np.ndarray:
        """``(m,)`` ballot probabilities ``P(ballot j)``."""
        return self.weights / self.weights.sum()

    @property
    def is_strict(self) -> bool:
        """True when every ballot is a strict complete ranking (no ties, nothing unranked)."""
        return bool(np.all(self.levels == np.arange(self.n)))

    def index(self, name: str) -> int:
        """Index of the candidate called ``name``."""
        try:
            return self.candidates.index(name)
        except ValueError:
            raise ValueError(f"unknown candidate {name!r}") from None

    # ----------------------------------------------------------------- marginals
    @cached_property
    def positional_matrix(self) -> np.ndarray:
        """``(n, n)`` doubly-stochastic ``M[x, k] = P(sigma(x) = k)`` (position 0 best).

        A tie group spanning positions ``s .. s+g-1`` spreads each member uniformly over them:
        per tie pattern, ``M_pattern = marginal_matrix(orders) @ B`` with ``B`` the block
        averaging matrix of the pattern.
        """
        if self.is_strict:
            return marginal_matrix(self.orders, self.weights)
        patterns, which = np.unique(self.levels, axis=0, return_inverse=True)
        which = which.ravel()
        p = self.probabilities
        M = np.zeros((self.n, self.n))
        for t, pattern in enumerate(patterns):
            rows = which == t
            block = pattern[:, None] == pattern[None, :]
            B = block / block.sum(axis=1, keepdims=True)
            M += p[rows].sum() * marginal_matrix(self.orders[rows], p[rows]) @ B
        return M

    @property
    def first_place(self) -> np.ndarray:
        """``(n,)`` first-place marginals ``P^1(x) = M[x, 0]``."""
        return self.positional_matrix[:, 0].copy()

    @cached_property
    def pairwise(self) -> np.ndarray:
        """``(n, n)`` pairwise marginals ``P[x, y] = P_{x<y}`` (x ranked above y).

        Tied candidates count 1/2 each way; the diagonal is 0.
        """
        rank_level = np.take_along_axis(self.levels, inverse(self.orders), axis=1)
        return _pairwise_kernel(rank_level, self.probabilities)

    @property
    def margins(self) -> np.ndarray:
        """``(n, n)`` majority margins ``P_{x<y} - P_{y<x}`` (antisymmetric)."""
        P = self.pairwise
        return P - P.T

    def weak_orders(self) -> list[list[list[int]]]:
        """The unique ballots as tie groups of candidate indices, best first."""
        out = []
        for order, level in zip(self.orders, self.levels, strict=True):
            cuts = np.flatnonzero(np.diff(level)) + 1
            out.append([g.tolist() for g in np.split(order, cuts)])
        return out


@numba.njit(cache=True)
def _pairwise_kernel(rank_level: np.ndarray, p: np.ndarray) -> np.ndarray:  # pragma: no cover
    m, n = rank_level.shape
    P = np.zeros((n, n))
    for j in range(m):
        r = rank_level[j]
        w = p[j]
        for x in range(n):
            for y in range(x + 1, n):
                if r[x] < r[y]:
                    P[x, y] += w
                elif r[x] > r[y]:
                    P[y, x] += w
                else:
                    P[x, y] += 0.5 * w
                    P[y, x] += 0.5 * w
    return P


def _check_weights(weights: np.ndarray) -> None:
    """Weights are finite, positive and add up to a finite total (probabilities divide by it)."""
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError("ballot weights must be finite and positive")
    largest = weights.max()  # the sum is at most m * largest: only large weights can overflow
    if largest > 1 and (weights / largest).sum() > np.finfo(np.float64).max / largest:
        raise ValueError("ballot weights add up to more than the largest float; scale them down")


def _names(candidates: Sequence[str] | None, n: int) -> tuple[str, ...]:
    if candidates is None:
        return tuple(str(i) for i in range(n))
    names = tuple(str(c) for c in candidates)
    if len(names) != n:
        raise ValueError(f"expected {n} candidate names, got {len(names)}")
    return names


def _canonical_weak_order(ballot: Sequence[Sequence[int]], n: int) -> tuple[list[int], list[int]]:
    """Order and levels of one ballot; missing candidates become the last group."""
    order: list[int] = []
    level: list[int] = []
    seen: set[int] = set()
    lev = 0
    for group in ballot:
        if not group:
            continue
        members = [int(group[0])] if len(group) == 1 else sorted(map(int, group))
        for x in members:
            if not 0 <= x < n:
                raise ValueError(f"candidate index {x} outside 0..{n - 1}")
            if x in seen:
                raise ValueError(f"candidate {x} appears twice in one ballot")
            seen.add(x)
        order += members
        level += [lev] * len(members)
        lev += 1
    if len(seen) < n:
        rest = [x for x in range(n) if x not in seen]
        order += rest
        level += [lev] * len(rest)
    return order, level
