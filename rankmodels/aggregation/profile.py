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
  stochastic, so a positional score is ``M @ h`` (eq. 4.5).

Storage: ``orders[j]`` is a permutation listing ballot ``j`` best first (tied candidates in
ascending index order) and ``levels[j, k]`` the index of the tie group holding position ``k``
(``0, 1, ...``, non-decreasing); a strict ballot has ``levels[j] == arange(n)``. Both are
held in the smallest signed integer type that counts to ``n - 1`` (:func:`index_dtype`:
int8 up to 128 candidates, int16 up to 32,768), so a million distinct ballots of 10
candidates take 20 MB rather than 160 MB. Arithmetic on them in numpy must widen first
(``orders.astype(np.int64)``): ``orders * n`` would overflow int8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

__all__ = ["Profile", "index_dtype"]

# What _ballot_problem finds wrong with the arrays of a profile.
_OK, _BAD_ORDER, _BAD_LEVELS = 0, 1, 2

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
    orders: ``(m, n)`` ``index_dtype(n)``, ``m`` unique ballots, best first.
    levels: ``(m, n)`` ``index_dtype(n)`` tie-group index of each position.
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
        orders = _indices(self.orders, "orders", _ORDER_MESSAGE)
        levels = _indices(self.levels, "levels", _LEVELS_MESSAGE)
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
        problem = _ballot_problem(orders, levels)
        if problem == _BAD_ORDER:
            raise ValueError(_ORDER_MESSAGE.format(last=n - 1))
        if problem == _BAD_LEVELS:
            raise ValueError(_LEVELS_MESSAGE)
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
        orders = _indices(orders, "orders", _ORDER_MESSAGE)
        n = orders.shape[1]
        w = np.ones(orders.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        levels = np.broadcast_to(np.arange(n, dtype=orders.dtype), orders.shape)
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
        orders = np.array([r[0] for r in rows], dtype=index_dtype(n)).reshape(m, n)
        levels = np.array([r[1] for r in rows], dtype=index_dtype(n)).reshape(m, n)
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

        A tie group spanning positions ``s .. s+g-1`` spreads each member uniformly over them
        (probability ``1/g`` at each); one compiled pass over the ballots, ``O(m n)``.
        """
        return _positional_kernel(self.orders, self.levels, self.probabilities)

    @property
    def first_place(self) -> np.ndarray:
        """``(n,)`` first-place marginals ``P^1(x) = M[x, 0]``."""
        return self.positional_matrix[:, 0].copy()

    @cached_property
    def pairwise(self) -> np.ndarray:
        """``(n, n)`` pairwise marginals ``P[x, y] = P_{x<y}`` (x ranked above y).

        Tied candidates count 1/2 each way; the diagonal is 0. One compiled pass over the
        ballots' positions, ``O(m n^2)``, without copying them.
        """
        return _pairwise_kernel(self.orders, self.levels, self.probabilities)

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


def index_dtype(n: int) -> np.dtype:
    """The smallest signed integer dtype holding ``0 .. n - 1``: int8 for up to 128
    candidates, int16 up to 32,768, then int32."""
    for dtype in (np.int8, np.int16, np.int32):
        if n - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


_ORDER_MESSAGE = "orders must be a permutation of 0..{last} along its last axis"
_LEVELS_MESSAGE = "levels must start at 0 and grow by 0 or 1 along each ballot"


def _indices(values: np.ndarray, name: str, out_of_range: str) -> np.ndarray:
    """``values`` as a C-contiguous array of :func:`index_dtype` of its row length ``n``
    (at least 2-d; no copy when it is one already). TypeError unless integer valued;
    ValueError(``out_of_range``) for an entry outside ``0 .. n-1``, checked before the
    narrowing cast so that it cannot wrap around."""
    arr = np.atleast_2d(np.asarray(values))
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    n = arr.shape[-1]
    dtype = index_dtype(n)
    if arr.size and arr.dtype != dtype and (arr.min() < 0 or arr.max() > n - 1):
        raise ValueError(out_of_range.format(last=n - 1))
    return np.ascontiguousarray(arr, dtype=dtype)


@numba.njit(cache=True)
def _ballot_problem(orders: np.ndarray, levels: np.ndarray) -> int:  # pragma: no cover
    """:data:`_BAD_ORDER` when a row of ``orders`` ``(m, n)`` is not a permutation of
    ``0 .. n-1``, else :data:`_BAD_LEVELS` when a row of ``levels`` does not start at 0 and
    grow by 0 or 1, else :data:`_OK`; one pass, no copies."""
    m, n = orders.shape
    seen = np.full(n, -1, np.int64)
    for j in range(m):
        for k in range(n):
            x = orders[j, k]
            if x < 0 or x >= n or seen[x] == j:
                return _BAD_ORDER
            seen[x] = j
    for j in range(m):
        if levels[j, 0] != 0:
            return _BAD_LEVELS
        for k in range(1, n):
            step = levels[j, k] - levels[j, k - 1]
            if step != 0 and step != 1:
                return _BAD_LEVELS
    return _OK


@numba.njit(cache=True)
def _positional_kernel(
    orders: np.ndarray, levels: np.ndarray, p: np.ndarray
) -> np.ndarray:  # pragma: no cover
    """``M[x, k] = sum_j p_j P(x at position k | ballot j)``, shape ``(n, n)``.

    A singleton group adds ``p_j`` at its position. A tie group of ``g`` members over
    positions ``s .. e-1`` adds ``p_j / g`` to each member at each of them, written as a
    difference (``+p_j / g`` at ``s``, ``-p_j / g`` at ``e``) and summed along the positions
    at the end, so a long tie of unranked candidates costs ``O(g)``, not ``O(g^2)``.
    """
    m, n = orders.shape
    M = np.zeros((n, n))
    spread = np.zeros((n, n + 1))
    for j in range(m):
        w = p[j]
        s = 0
        while s < n:
            e = s + 1
            while e < n and levels[j, e] == levels[j, s]:
                e += 1
            if e == s + 1:
                M[orders[j, s], s] += w
            else:
                share = w / (e - s)
                for a in range(s, e):
                    spread[orders[j, a], s] += share
                    spread[orders[j, a], e] -= share
            s = e
    for x in range(n):
        running = 0.0
        for k in range(n):
            running += spread[x, k]
            M[x, k] += running
    return M


@numba.njit(cache=True)
def _pairwise_kernel(
    orders: np.ndarray, levels: np.ndarray, p: np.ndarray
) -> np.ndarray:  # pragma: no cover
    """``P[x, y] = sum_j p_j (1(x above y on ballot j) + 1/2 1(x, y tied on it))``, read
    position by position: ``orders[j, k]`` is above every candidate at a later position of
    a higher level and tied with those of the same level."""
    m, n = orders.shape
    P = np.zeros((n, n))
    for j in range(m):
        w = p[j]
        half = 0.5 * w
        for k in range(n):
            x = orders[j, k]
            level = levels[j, k]
            for q in range(k + 1, n):
                y = orders[j, q]
                if levels[j, q] == level:
                    P[x, y] += half
                    P[y, x] += half
                else:
                    P[x, y] += w
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
