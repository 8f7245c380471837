"""Permutations: the two representations, enumeration, and distances.

Conventions used everywhere in :mod:`rankmodels`
-----------------------------------------------
Items (candidates, documents, sound sources) are numbered ``0 .. n-1`` and positions
``0 .. n-1`` with position 0 the *best* (first) place.

* An **order** lists items best first: ``order[k]`` is the item at position ``k``.
* A **rank vector** gives each item's position: ``rank[x]`` is the position of item ``x``.

The two are inverse permutations of each other (``rank[order[k]] == k``).
All functions here accept a single permutation of shape ``(n,)`` or a batch of shape
``(..., n)`` and work along the last axis.

Distances: Kendall's tau (number of discordant pairs) and Spearman's footrule
``sum_x |rank_a[x] - rank_b[x]|``, the losses of [Pareek2017] section 4.5 (after eq. 4.4,
the rule minimising an expected distance); Cayley (``n`` minus the number of cycles of
``a^{-1} b``) and Hamming (number of positions where the orders differ).
"""

from __future__ import annotations

import itertools
import math

import numba
import numpy as np

__all__ = [
    "all_permutations",
    "as_permutation",
    "cayley_distance",
    "footrule_distance",
    "hamming_distance",
    "inverse",
    "is_permutation",
    "kendall_distance",
    "lehmer_index",
    "order_from_ranks",
    "ranks_from_order",
    "DISTANCES",
]


def is_permutation(a: np.ndarray) -> bool:
    """True when every row along the last axis of ``a`` is a permutation of ``0..n-1``."""
    a = np.asarray(a)
    if a.ndim == 0 or not np.issubdtype(a.dtype, np.integer):
        return False
    n = a.shape[-1]
    return bool(np.all(np.sort(a, axis=-1) == np.arange(n)))


def as_permutation(a: np.ndarray, name: str = "permutation") -> np.ndarray:
    """Return ``a`` as an integer array after checking each row is a permutation.

    Raises
    ------
    TypeError
        If ``a`` is not integer valued.
    ValueError
        If a row along the last axis is not a permutation of ``0..n-1``.
    """
    arr = np.asarray(a)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got a scalar")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if not is_permutation(arr):
        raise ValueError(
            f"{name} must be a permutation of 0..{arr.shape[-1] - 1} along its last axis"
        )
    return arr


def inverse(perm: np.ndarray) -> np.ndarray:
    """Inverse permutation(s) along the last axis: ``inverse(p)[p[k]] == k``."""
    perm = np.asarray(perm)
    inv = np.empty_like(perm)
    np.put_along_axis(inv, perm, np.broadcast_to(np.arange(perm.shape[-1]), perm.shape), axis=-1)
    return inv


def ranks_from_order(order: np.ndarray) -> np.ndarray:
    """Rank vector(s) from order(s): ``rank[order[k]] = k``."""
    return inverse(order)


def order_from_ranks(rank: np.ndarray) -> np.ndarray:
    """Order(s) from rank vector(s): ``order[rank[x]] = x``."""
    return inverse(rank)


def all_permutations(n: int) -> np.ndarray:
    """All ``n!`` permutations of ``0..n-1`` in lexicographic order, shape ``(n!, n)``.

    Meant for brute-force checks on small ``n`` (``n <= 10`` is 3.6 M rows).
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 0 or n > 10:
        raise ValueError(f"n must be between 0 and 10 for enumeration, got {n}")
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


@numba.njit(cache=True)
def _lehmer_index_1d(perm: np.ndarray) -> int:  # pragma: no cover - numba
    n = perm.shape[0]
    index = 0
    for i in range(n):
        smaller = 0
        for j in range(i + 1, n):
            if perm[j] < perm[i]:
                smaller += 1
        index = index * (n - i) + smaller
    return index


def lehmer_index(perm: np.ndarray) -> np.ndarray | int:
    """Lexicographic index of each permutation (its position in :func:`all_permutations`)."""
    perm = np.asarray(perm, dtype=np.int64)
    if perm.ndim == 1:
        return int(_lehmer_index_1d(perm))
    flat = perm.reshape(-1, perm.shape[-1])
    out = np.array([_lehmer_index_1d(p) for p in flat], dtype=np.int64)
    if math.factorial(perm.shape[-1]) > np.iinfo(np.int64).max:
        raise ValueError("lehmer_index overflows int64 for n > 20")
    return out.reshape(perm.shape[:-1])


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"permutations must have the same length, got {a.shape[-1]} and {b.shape[-1]}"
        )
    return np.broadcast_arrays(a, b)


def kendall_distance(rank_a: np.ndarray, rank_b: np.ndarray) -> np.ndarray:
    """Kendall's tau distance: the number of item pairs the two rankings order differently.

    Works on rank vectors or on orders alike (the distance is invariant under taking
    inverses of both arguments). Shapes broadcast over leading axes; O(n^2) per pair.
    """
    a, b = _pair(rank_a, rank_b)
    da = np.sign(a[..., :, None] - a[..., None, :])
    db = np.sign(b[..., :, None] - b[..., None, :])
    return ((da * db) < 0).sum(axis=(-2, -1)) // 2


def footrule_distance(rank_a: np.ndarray, rank_b: np.ndarray) -> np.ndarray:
    """Spearman's footrule ``sum_x |rank_a[x] - rank_b[x]|`` on rank vectors."""
    a, b = _pair(rank_a, rank_b)
    return np.abs(a - b).sum(axis=-1)


def hamming_distance(order_a: np.ndarray, order_b: np.ndarray) -> np.ndarray:
    """Hamming distance: the number of positions holding different items."""
    a, b = _pair(order_a, order_b)
    return (a != b).sum(axis=-1)


@numba.njit(cache=True)
def _cycle_count(perm: np.ndarray) -> int:  # pragma: no cover - numba
    n = perm.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    cycles = 0
    for i in range(n):
        if not seen[i]:
            cycles += 1
            j = i
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return cycles


def cayley_distance(perm_a: np.ndarray, perm_b: np.ndarray) -> np.ndarray:
    """Cayley distance: the fewest transpositions turning one permutation into the other.

    Equals ``n`` minus the number of cycles of ``a^{-1} o b``.
    """
    a, b = _pair(np.asarray(perm_a, dtype=np.int64), np.asarray(perm_b, dtype=np.int64))
    n = a.shape[-1]
    composed = np.take_along_axis(inverse(a), b, axis=-1).reshape(-1, n)
    cycles = np.array([_cycle_count(p) for p in composed], dtype=np.int64)
    return (n - cycles).reshape(a.shape[:-1])


DISTANCES = {
    "kendall": kendall_distance,
    "footrule": footrule_distance,
    "cayley": cayley_distance,
    "hamming": hamming_distance,
}
"""Distance functions by name. Kendall and footrule take rank vectors, Hamming takes orders;
Cayley is the same for both."""
