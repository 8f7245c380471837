"""Histograms of Mallows samples, merged as they are drawn: memory grows with the number of
*distinct* ballots, not with the number of draws.

A ballot cut after its ``keep`` best candidates (the rest unranked, tied last; ``keep = n -
1`` for a complete ranking, whose last candidate follows) is packed into one int64 code,
``sum_k orders[k] * n**(keep - 1 - k)``, when ``n**keep < 2**62``; the codes of each block of
draws are counted in a compiled open-addressing hash table, and the distinct codes, sorted
(lexicographic order of the ballots), are unpacked into a :class:`.Profile`. Longer ballots
go through the general :class:`.BallotTable` (first-appearance order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable
from rankmodels.aggregation.mallows.sampling import sample_blocks
from rankmodels.aggregation.profile import Profile, index_dtype

__all__ = ["CodeCounts", "sample_histogram"]

_EMPTY = np.int64(-1)  # no code is negative
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing multiplier


@numba.njit(cache=True)
def _slot(code, table_codes, shift, mask) -> int:  # pragma: no cover - numba
    """The slot holding ``code``, or the free slot where it goes (linear probing)."""
    s = (np.uint64(code) * _MIX) >> shift
    while table_codes[s] != code and table_codes[s] != _EMPTY:
        s = (s + np.uint64(1)) & mask
    return s


@numba.njit(cache=True)
def _count(
    orders, keep, old_codes, old_counts, table_codes, table_counts
) -> int:  # pragma: no cover - numba
    """Move the ``old`` table's entries into the (empty) table, then count each row of
    ``orders`` once under its code (``keep`` base-``n`` digits); return the entries held.
    Tables are powers of two in size, kept at most half full by the caller."""
    size = table_codes.size
    bits = 0
    while (1 << bits) < size:
        bits += 1
    shift, mask = np.uint64(64 - bits), np.uint64(size - 1)
    used = 0
    for i in range(old_codes.size):
        if old_codes[i] != _EMPTY:
            s = _slot(old_codes[i], table_codes, shift, mask)
            table_codes[s] = old_codes[i]
            table_counts[s] = old_counts[i]
            used += 1
    n = orders.shape[1]
    for i in range(orders.shape[0]):
        code = 0
        for k in range(keep):
            code = code * n + orders[i, k]
        s = _slot(code, table_codes, shift, mask)
        if table_codes[s] == _EMPTY:
            table_codes[s] = code
            used += 1
        table_counts[s] += 1
    return used


class CodeCounts:
    """Counts of ballots packed as int64 codes (the module docstring), in a hash table that
    doubles as it fills."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._codes = np.full(1 << 10, _EMPTY, np.int64)
        self._counts = np.zeros(1 << 10, np.int64)
        self._used = 0

    def add(self, orders: np.ndarray) -> None:
        """Count each row of ``orders`` ``(rows, n)`` (best first) once."""
        old_codes = old_counts = np.empty(0, np.int64)
        size = self._codes.size
        while 2 * (self._used + orders.shape[0]) > size:
            size *= 2
        if size > self._codes.size:
            old_codes, old_counts = self._codes, self._counts
            self._codes = np.full(size, _EMPTY, np.int64)
            self._counts = np.zeros(size, np.int64)
        tables = (old_codes, old_counts, self._codes, self._counts)
        self._used = _count(orders, self.keep, *tables)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct codes, ascending, and their counts (the table is emptied)."""
        held = np.flatnonzero(self._codes != _EMPTY)
        codes, counts = self._codes[held], self._counts[held]
        self.__init__(self.keep)
        order = np.argsort(codes)
        return codes[order], counts[order]


@numba.njit(cache=True)
def _unpack(codes, n, keep, orders, levels) -> None:  # pragma: no cover - numba
    """Ballot ``j`` of ``codes`` into ``orders[j]``: its ``keep`` base-``n`` digits, then the
    candidates they leave out, ascending; ``levels[j]`` ``0 .. keep`` (the rest tied)."""
    ranked = np.zeros(n, np.int64)
    for j in range(codes.size):
        c = codes[j]
        for k in range(keep - 1, -1, -1):
            orders[j, k] = c % n
            c //= n
        for k in range(keep):
            ranked[orders[j, k]] = j + 1
            levels[j, k] = k
        k = keep
        for x in range(n):
            if ranked[x] != j + 1:
                orders[j, k] = x
                levels[j, k] = keep
                k += 1


def sample_histogram(
    centres: np.ndarray,
    phis: np.ndarray,
    weights: np.ndarray,
    size: int,
    rng: np.random.Generator,
    candidates: Sequence[str],
    top: int | None = None,
) -> Profile:
    """The :class:`Profile` of the ``size`` draws of :func:`.sampling.sample_blocks` (the
    same draws for the same ``rng``) over ``candidates``, each cut after its ``top`` best
    candidates (``None``: complete rankings); equal ballots merged block by block."""
    n = len(candidates)
    keep = n - 1 if top is None else min(top, n - 1)
    blocks = sample_blocks(centres, phis, weights, size, rng)
    if keep * np.log2(max(n, 2)) >= 62:
        return _general_histogram(blocks, keep, candidates)
    table = CodeCounts(keep)
    for orders in blocks:
        table.add(orders)
    codes, counts = table.items()
    orders = np.empty((codes.size, n), index_dtype(n))
    levels = np.empty((codes.size, n), index_dtype(n))
    _unpack(codes, n, keep, orders, levels)
    return Profile(tuple(candidates), orders, levels, counts.astype(np.float64))


def _general_histogram(blocks, keep: int, candidates: Sequence[str]) -> Profile:
    """The same histogram through :class:`.BallotTable`: one prefix-key group per ranked
    candidate."""
    table = BallotTable()
    for orders in blocks:
        rows = orders.shape[0]
        keys = (2 * orders[:, :keep] + 1).astype(np.int32).ravel()
        table.count(table.add(keys, np.arange(rows + 1, dtype=np.int64) * keep), np.ones(rows))
    return table.profile(candidates)
