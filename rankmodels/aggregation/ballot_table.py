"""Merging equal ballots while a vote file streams by: memory grows with the number of
*distinct* ballots, not with the file.

A ballot arrives as the groups it ranks, best first, before the number of candidates is
known (a votes CSV learns its candidates as it goes). It is stored as a *prefix key*: one
int32 code per ranked candidate, ``2 * candidate + 1`` for the first member of a tie group
and ``2 * candidate`` for the others, members of a group in ascending order. Equal keys are
the same ballot; at the end :meth:`BallotTable.profile` completes every key with the
candidates it leaves out (one last tie group, the convention of :class:`.Profile`), merges
keys that became equal (``A>B`` and ``A>B>C`` of three candidates) and builds the profile.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from rankmodels.aggregation.profile import Profile, index_dtype

__all__ = ["BallotTable", "group_keys"]


@numba.njit(cache=True)
def _hash(data: np.ndarray, start: int, end: int) -> np.uint64:  # pragma: no cover
    h = np.uint64(14695981039346656037)
    for i in range(start, end):
        h = (h ^ np.uint64(data[i] & 0xFFFFFFFF)) * np.uint64(1099511628211)
    return h


@numba.njit(cache=True)
def _equal(a: np.ndarray, a0: int, b: np.ndarray, b0: int, length: int) -> bool:  # pragma: no cover
    for k in range(length):
        if a[a0 + k] != b[b0 + k]:
            return False
    return True


@numba.njit(cache=True)
def _insert(slots, koff, khash, kdata, nkeys, new_data, new_off) -> tuple:  # pragma: no cover
    """Insert the keys ``new_data[new_off[i]:new_off[i + 1]]`` into the table (key ``j`` is
    ``kdata[koff[j]:koff[j + 1]]``, its hash ``khash[j]``); return their ids and the
    (possibly grown) table."""
    m = new_off.size - 1
    ids = np.empty(m, np.int64)
    ndata = koff[nkeys]
    if nkeys + m + 1 > koff.size:
        cap = max(2 * koff.size, nkeys + m + 1)
        koff = np.concatenate((koff[: nkeys + 1], np.empty(cap - nkeys - 1, np.int64)))
        khash = np.concatenate((khash[:nkeys], np.empty(cap - nkeys, np.uint64)))
    if ndata + new_data.size > kdata.size:
        cap = max(2 * kdata.size, ndata + new_data.size)
        kdata = np.concatenate((kdata[:ndata], np.empty(cap - ndata, kdata.dtype)))
    if 2 * (nkeys + m) > slots.size:
        size = slots.size
        while 2 * (nkeys + m) > size:
            size *= 2
        slots = np.full(size, -1, np.int64)
        mask = np.uint64(size - 1)
        for j in range(nkeys):
            s = khash[j] & mask
            while slots[s] >= 0:
                s = (s + np.uint64(1)) & mask
            slots[s] = j
    mask = np.uint64(slots.size - 1)
    for i in range(m):
        a, b = new_off[i], new_off[i + 1]
        h = _hash(new_data, a, b)
        s = h & mask
        while True:
            j = slots[s]
            if j < 0:
                slots[s] = nkeys
                khash[nkeys] = h
                kdata[ndata : ndata + b - a] = new_data[a:b]
                ndata += b - a
                koff[nkeys + 1] = ndata
                ids[i] = nkeys
                nkeys += 1
                break
            if (
                khash[j] == h
                and koff[j + 1] - koff[j] == b - a
                and _equal(kdata, koff[j], new_data, a, b - a)
            ):
                ids[i] = j
                break
            s = (s + np.uint64(1)) & mask
    return ids, slots, koff, khash, kdata, nkeys


@numba.njit(cache=True)
def _add_weights(
    weights: np.ndarray, ids: np.ndarray, counts: np.ndarray
) -> None:  # pragma: no cover
    for i in range(ids.size):
        weights[ids[i]] += counts[i]


@numba.njit(cache=True)
def _complete(koff, kdata, orders, levels) -> None:  # pragma: no cover
    """Fill ``orders`` and ``levels`` ``(nkeys, n)``: each key with the candidates it leaves
    out appended as one last group in ascending order."""
    nkeys, n = orders.shape
    ranked = np.zeros(n, np.int64)
    for j in range(nkeys):
        level = -1
        a = koff[j]
        for k in range(koff[j + 1] - a):
            code = kdata[a + k]
            level += code & 1
            orders[j, k] = code >> 1
            levels[j, k] = level
            ranked[code >> 1] = j + 1
        k = koff[j + 1] - a
        if k < n:
            level += 1
            for x in range(n):
                if ranked[x] != j + 1:
                    orders[j, k] = x
                    levels[j, k] = level
                    k += 1


@numba.njit(cache=True)
def _merge_rows(
    orders: np.ndarray, levels: np.ndarray, weights: np.ndarray
) -> int:  # pragma: no cover
    """Merge equal ``(orders, levels)`` rows in place, keeping first appearances in order and
    adding their weights; return the number of distinct rows (now at the front)."""
    m, n = orders.shape
    size = 2
    while size < 2 * m:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.full(size, -1, np.int64)
    hashes = np.empty(m, np.uint64)
    u = 0
    for i in range(m):
        h = np.uint64(14695981039346656037)
        for k in range(n):
            h = (h ^ np.uint64(orders[i, k] * n + levels[i, k])) * np.uint64(1099511628211)
        s = h & mask
        while True:
            j = slots[s]
            if j < 0:
                slots[s] = u
                hashes[u] = h
                if u != i:
                    orders[u] = orders[i]
                    levels[u] = levels[i]
                    weights[u] = weights[i]
                u += 1
                break
            if (
                hashes[j] == h
                and _equal(orders[j], 0, orders[i], 0, n)
                and _equal(levels[j], 0, levels[i], 0, n)
            ):
                weights[j] += weights[i]
                break
            s = (s + np.uint64(1)) & mask
    return u


@numba.njit(cache=True)
def group_keys(
    owner: np.ndarray, group: np.ndarray, cand: np.ndarray, keep: np.ndarray, m: int, n: int
) -> tuple:  # pragma: no cover
    """Prefix keys of ``m`` ballots given as tokens in order.

    Token ``t`` belongs to ballot ``owner[t]`` (non-decreasing), to tie group ``group[t]``
    (non-decreasing within a ballot) and names candidate ``cand[t]`` (``0 .. n-1``; a
    negative value makes the ballot invalid); tokens with ``keep[t]`` False are ignored.
    Returns ``(data, offsets, valid, ranked)``: ballot ``i``'s key is
    ``data[offsets[i]:offsets[i + 1]]`` (empty when invalid), ``valid[i]`` is False when a
    candidate is negative or appears twice, ``ranked[i]`` counts its candidates.
    """
    data = np.empty(owner.size, np.int32)
    offsets = np.zeros(m + 1, np.int64)
    valid = np.ones(m, np.bool_)
    ranked = np.zeros(m, np.int64)
    stamp = np.full(max(n, 1), -1, np.int64)
    t = 0
    d = 0
    T = owner.size
    for i in range(m):
        start = d
        while t < T and owner[t] == i:
            g = group[t]
            g0 = d
            while t < T and owner[t] == i and group[t] == g:
                if keep[t]:
                    x = cand[t]
                    if x < 0 or stamp[x] == i:
                        valid[i] = False
                    else:
                        stamp[x] = i
                        data[d] = x
                        d += 1
                t += 1
            if d > g0:  # sort the group (insertion sort: groups are short), mark its start
                for a in range(g0 + 1, d):
                    v = data[a]
                    b = a - 1
                    while b >= g0 and data[b] > v:
                        data[b + 1] = data[b]
                        b -= 1
                    data[b + 1] = v
                for a in range(g0, d):
                    data[a] = 2 * data[a] + (1 if a == g0 else 0)
        if not valid[i]:
            d = start
        ranked[i] = d - start
        offsets[i + 1] = d
    return data[:d], offsets, valid, ranked


_WIDER = {np.dtype(np.int8): np.int16, np.dtype(np.int16): np.int32}


class BallotTable:
    """Distinct ballots (prefix keys) and their total weights, growing as chunks arrive.

    Keys are stored in the narrowest of int8, int16 and int32 that holds their codes (int8
    while the candidates are fewer than 64, int16 below 16,384), with their hashes, so that
    the table of a million distinct ballots of 10 candidates takes about 50 MB."""

    def __init__(self) -> None:
        self._slots = np.full(1024, -1, np.int64)
        self._koff = np.zeros(256, np.int64)
        self._khash = np.empty(256, np.uint64)
        self._kdata = np.empty(4096, np.int8)
        self._nkeys = 0
        self._weights = np.zeros(256)

    def __len__(self) -> int:
        return self._nkeys

    def add(self, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Insert the keys ``data[offsets[i]:offsets[i + 1]]`` (from :func:`group_keys`) and
        return their ids."""
        largest = int(data.max()) if data.size else 0
        while largest > np.iinfo(self._kdata.dtype).max:  # widen the stored keys
            self._kdata = self._kdata.astype(_WIDER[self._kdata.dtype])
        data = data.astype(self._kdata.dtype, copy=False)
        ids, self._slots, self._koff, self._khash, self._kdata, nkeys = _insert(
            self._slots, self._koff, self._khash, self._kdata, self._nkeys, data, offsets
        )
        self._nkeys = int(nkeys)
        if self._nkeys > self._weights.size:
            grown = np.zeros(max(2 * self._weights.size, self._nkeys))
            grown[: self._weights.size] = self._weights
            self._weights = grown
        return ids

    def count(self, ids: np.ndarray, counts: np.ndarray) -> None:
        """Add ``counts[i]`` to the weight of ballot ``ids[i]``, in order."""
        _add_weights(self._weights, ids, np.asarray(counts, dtype=np.float64))

    def profile(self, candidates: Sequence[str]) -> Profile:
        """The profile of the ballots counted (every key names only candidates below
        ``len(candidates)``). The table is emptied: its memory goes to the profile."""
        n, m = len(candidates), self._nkeys
        koff, kdata = self._koff[: m + 1], self._kdata[: self._koff[m]]
        weights = self._weights[:m]
        self.__init__()  # the hash slots and hashes go; the keys stay until completed
        orders = np.empty((m, n), index_dtype(n))
        levels = np.empty((m, n), index_dtype(n))
        _complete(koff, kdata, orders, levels)
        # Distinct keys of one length complete to distinct ballots: merging is needed only
        # when a short key may have become a longer one (``A>B`` and ``A>B>C`` of three).
        same_length = m == 0 or bool(np.all(np.diff(koff) == koff[1] - koff[0]))
        del koff, kdata
        u = m if same_length else _merge_rows(orders, levels, weights)
        keep = weights[:u] > 0  # keys whose every ballot was dropped
        if not keep.all():
            orders, levels, weights = orders[:u][keep], levels[:u][keep], weights[:u][keep]
            u = orders.shape[0]
        return Profile(tuple(candidates), orders[:u], levels[:u], weights[:u])
