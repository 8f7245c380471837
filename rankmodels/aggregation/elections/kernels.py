"""The per-ballot work of a count, compiled: who each distinct ballot counts for in a round,
and the surplus transfer of a winner.

Ballots are packed once (:func:`pack`) into flat arrays: for ballot ``j`` its marked ranks
are entries ``start[j]:start[j+1]``, entry ``e`` has rank ``rank[e]`` and marks
``marks[mstart[e]:mstart[e+1]]`` (candidate codes, :data:`~.ballots.OVERVOTE` for an
overvote marker). Votes are *scaled integers*: a ballot's value is ``value / 10**d`` of a
vote for ``d`` decimal places, so RCTab's arithmetic (every product and quotient rounded
down to ``d`` places) is exact integer arithmetic: ``floor(v * f / 10**d)``.

The kernels take their inputs as namedtuples: :class:`Packed` (the ballots),
:class:`_States` (each ballot's state in the count), :class:`_Reading` (the rules a ballot
is read by) and :class:`Tally` (one round's sums, filled in).

Decimal strings keep the exponent RCTab's ``BigDecimal`` gives them: a whole number until a
value that went through a surplus transfer (``touched``) is added in, then ``d`` places. So
every sum comes with a flag saying whether such a value went into it.

The kernels run compiled on ``int64`` arrays when no sum or product can overflow
(:func:`fits_int64`); otherwise the same functions run as Python (``.py_func``) on object
arrays of Python integers, exactly and slowly.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

import numba
import numpy as np

from rankmodels.aggregation.elections.ballots import OVERVOTE, CastBallots

__all__ = [
    "OVERVOTE_CODES",
    "BallotStates",
    "Packed",
    "Tally",
    "fits_int64",
    "head_to_head",
    "pack",
]

OVERVOTE_CODES = {"exhaust": 0, "skip": 1, "exhaust-if-multiple": 2}
"""Codes of the overvote rules in the kernels."""

# ballot states, as :class:`.tabulator.Status`
_ACTIVE, _UNDERVOTE, _OVERVOTE, _SKIPPED, _REPEATED, _EXHAUSTED, _FINAL = range(7)
_INT64_LIMIT = 2**62


class Packed(NamedTuple):
    """Distinct ballots as flat arrays (see the module docstring), for ``m`` ballots of
    ``E`` marked ranks and ``K`` marks in all: ``start`` ``(m + 1,)`` each ballot's first
    entry; ``rank`` ``(E,)`` each entry's rank; ``mstart`` ``(E + 1,)`` each entry's first
    mark; ``marks`` ``(K,)`` candidate codes (:data:`~.ballots.OVERVOTE`: an overvote
    marker); ``counts`` ``(m,)`` the cast ballots each distinct one stands for (``int64``;
    Python integers in an exact count)."""

    start: np.ndarray
    rank: np.ndarray
    mstart: np.ndarray
    marks: np.ndarray
    counts: np.ndarray

    @property
    def m(self) -> int:
        """Number of distinct ballots."""
        return self.counts.size


def pack(ballots: CastBallots) -> Packed:
    """The flat arrays of ``ballots``: ``O(total marks)``."""
    rankings = ballots.rankings
    entries = list(chain.from_iterable(rankings))  # (rank, codes) pairs, C-level loops only
    codes = list(map(itemgetter(1), entries))
    return Packed(
        _offsets(map(len, rankings), len(rankings)),
        np.fromiter(map(itemgetter(0), entries), dtype=np.int64, count=len(entries)),
        _offsets(map(len, codes), len(entries)),
        np.fromiter(chain.from_iterable(codes), dtype=np.int64),
        np.asarray(ballots.counts, dtype=np.int64),
    )


def _offsets(lengths: Iterable[int], size: int) -> np.ndarray:
    """``[0, l0, l0 + l1, ...]``: ``(size + 1,)``."""
    out = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=size), out=out[1:])
    return out


def fits_int64(total: int, decimal_places: int) -> bool:
    """Whether a count of ``total`` ballots at ``decimal_places`` stays below ``2**62`` in
    every sum (``total * 10**d``) and product of a value and a fraction (``10**(2d)``)."""
    scale = 10**decimal_places
    return total * scale < _INT64_LIMIT and scale * scale < _INT64_LIMIT


class _States(NamedTuple):
    """Each of the ``m`` distinct ballots' state during a count (see :class:`BallotStates`):
    ``recipient`` ``(m,)`` the candidate it counts for (``-1`` none); ``status`` ``(m,)``
    ``0`` active, else the cause (as :class:`.tabulator.Status`); ``value`` ``(m,)`` its
    scaled value (``int64``; Python integers in an exact count); ``touched`` ``(m,)`` bool,
    whether a surplus transfer moved part of it."""

    recipient: np.ndarray
    status: np.ndarray
    value: np.ndarray
    touched: np.ndarray


class _Reading(NamedTuple):
    """The rules a ballot is read by: ``max_skip`` the ranks that may be skipped in a row
    (``-1`` unlimited); ``duplicate_exhausts`` whether a candidate ranked again exhausts
    the ballot; ``overvote`` the overvote rule's code (:data:`OVERVOTE_CODES`)."""

    max_skip: int
    duplicate_exhausts: bool
    overvote: int


@numba.njit(cache=True)
def _read(packed, j, continuing, reading, count_over, seen):  # pragma: no cover
    """``(candidate, state)`` ballot ``j`` counts for (candidate ``-1`` when inactive;
    state ``-1`` when an unnamed overvote meets exhaust-if-multiple). ``continuing``
    ``(n,)`` 0/1 per candidate; ``count_over``: every seat is filled, a ballot read again
    is final; ``seen`` ``(n + 1,)`` scratch, where ``j + 1`` marks the candidates met on
    this ballot (slot ``n``: an unnamed overvote)."""
    start, rank, mstart, marks = packed.start, packed.rank, packed.mstart, packed.marks
    max_skip, overvote_rule = reading.max_skip, reading.overvote
    first, end = start[j], start[j + 1]
    if first == end:
        return -1, _UNDERVOTE
    if count_over:
        return -1, _FINAL
    stamp = j + 1
    last_seen = 0
    last_rank = rank[end - 1]
    for e in range(first, end):
        r = rank[e]
        if max_skip >= 0 and r - last_seen > max_skip + 1:
            return -1, _SKIPPED
        last_seen = r
        lo, hi = mstart[e], mstart[e + 1]
        if reading.duplicate_exhausts:
            for q in range(lo, hi):
                x = marks[q]
                k = x if x >= 0 else seen.shape[0] - 1  # an unnamed overvote repeats too
                if seen[k] == stamp:
                    return -1, _REPEATED
                seen[k] = stamp
        # the overvote decision: 0 exhaust, 1 skip, 2 read the marks
        decision = 2
        named = True
        for q in range(lo, hi):
            if marks[q] == OVERVOTE:
                named = False
        if not named:
            if overvote_rule == 2:
                return -1, -1
            decision = 0 if overvote_rule == 0 else 1
        elif hi - lo > 1:
            if overvote_rule == 2:
                alive = 0
                for q in range(lo, hi):
                    alive += continuing[marks[q]]
                decision = 0 if alive >= 2 else 2
            else:
                decision = overvote_rule
        if decision == 0:
            return -1, _OVERVOTE
        if decision == 1:
            if r == last_rank:
                return -1, _EXHAUSTED
            continue
        for q in range(lo, hi):
            if continuing[marks[q]]:
                return marks[q], _ACTIVE
    return -1, _EXHAUSTED


@numba.njit(cache=True)
def _tally(packed, states, continuing, reading, count_over, out):  # pragma: no cover
    """One round over every ballot into ``out`` (a zeroed :class:`Tally`), updating
    ``states`` (see :meth:`BallotStates.tally`). Returns ``-1``, or the first ballot whose
    unnamed overvote meets exhaust-if-multiple."""
    # the loop reads local names: reading the arrays through the namedtuples there is slower
    counts = packed.counts
    recipient, status = states.recipient, states.status
    value, touched = states.value, states.touched
    votes, votes_touched = out.votes, out.votes_touched
    inactive, inactive_touched = out.inactive, out.inactive_touched
    moves, moves_touched = out.moves, out.moves_touched
    n = continuing.shape[0]
    seen = np.zeros(n + 1, dtype=np.int64)
    for j in range(counts.shape[0]):
        weight = counts[j] * value[j]
        if status[j] != _ACTIVE:
            inactive[status[j]] += weight
            inactive_touched[status[j]] |= touched[j]
            continue
        current = recipient[j]
        if current >= 0 and continuing[current]:
            votes[current] += weight
            votes_touched[current] |= touched[j]
            continue
        chosen, state = _read(packed, j, continuing, reading, count_over, seen)
        if state < 0:
            return j
        if weight > 0 and current >= 0:
            to = n if chosen < 0 else chosen
            moves[current, to] += weight
            moves_touched[current, to] |= touched[j]
        recipient[j] = chosen
        if chosen < 0:
            status[j] = state
            inactive[state] += weight
            inactive_touched[state] |= touched[j]
        else:
            votes[chosen] += weight
            votes_touched[chosen] |= touched[j]
    return -1


@numba.njit(cache=True)
def _surplus(counts, states, winner, fraction, scale):  # pragma: no cover
    """Move ``fraction / scale`` of each of ``winner``'s active ballots on (``counts``
    ``(m,)``, ``states`` updated): see :meth:`BallotStates.surplus`."""
    recipient, status = states.recipient, states.status
    value, touched = states.value, states.touched
    kept = 0
    found = False
    for j in range(counts.shape[0]):
        if recipient[j] == winner and status[j] == _ACTIVE:
            moved = value[j] * fraction // scale
            kept += counts[j] * (value[j] - moved)
            value[j] = moved
            touched[j] = True
            found = True
    return kept, found


@numba.njit(cache=True)
def _head_to_head(packed, index, reading, wins, last):  # pragma: no cover
    """One pass over the ballots: where each compared candidate is first reached (the
    entry of its rank), reading as :func:`_read` reads with every compared candidate
    continuing, except that the candidates of an overvote under exhaust-if-multiple share
    its entry (two of them together exhaust the ballot, one alone counts). A pair's
    ballot counts for the one reached first; equal entries count for neither. ``index``
    ``(n,)`` each candidate's place among the ``k`` compared (``-1`` none); ``wins``
    ``(k, k)`` and ``last`` ``(k,)`` are added to (see :func:`head_to_head`)."""
    start, rank, mstart, marks = packed.start, packed.rank, packed.mstart, packed.marks
    max_skip, overvote_rule = reading.max_skip, reading.overvote
    counts = packed.counts
    k = wins.shape[0]
    n = index.shape[0]
    never = np.int64(1) << 62
    pos = np.empty(k, dtype=np.int64)
    seen = np.zeros(n + 1, dtype=np.int64)
    for j in range(counts.shape[0]):
        pos[:] = never
        last_seen = 0
        for e in range(start[j], start[j + 1]):
            r = rank[e]
            if max_skip >= 0 and r - last_seen > max_skip + 1:
                break
            last_seen = r
            lo, hi = mstart[e], mstart[e + 1]
            if reading.duplicate_exhausts:
                repeated = False
                for q in range(lo, hi):
                    x = marks[q]
                    slot = x if x >= 0 else n  # an unnamed overvote repeats too
                    repeated |= seen[slot] == j + 1
                    seen[slot] = j + 1
                if repeated:
                    break
            named = True
            for q in range(lo, hi):
                named &= marks[q] != OVERVOTE
            if not named or hi - lo > 1:
                if overvote_rule == 0 or (not named and overvote_rule == 2):
                    break
                if overvote_rule == 1:
                    continue
            for q in range(lo, hi):
                c = index[marks[q]]
                if c >= 0 and pos[c] == never:
                    pos[c] = e
        for a in range(k):
            beaten = 0
            for b in range(k):
                if pos[b] < pos[a]:
                    beaten += 1
                    wins[b, a] += counts[j]
            if beaten == k - 1:
                last[a] += counts[j]


def head_to_head(
    packed: Packed,
    codes: np.ndarray,
    n: int,
    max_skip: int,
    duplicate_exhausts: bool,
    overvote: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Each pair of the candidates ``codes`` (``(k,)`` of ``n``) alone in the count: a
    ballot counts for the one it reaches first, read from the top by the rules (as
    :meth:`BallotStates.tally`; an overvote that does not name its candidates under
    exhaust-if-multiple counts for neither). Returns ``wins`` ``(k, k)``, the ballots
    counting for ``codes[a]`` against ``codes[b]``, and ``last`` ``(k,)``, the ballots
    counting against ``codes[a]`` in each of its pairs. ``O(m (R + k^2))``."""
    k = codes.size
    wins = np.zeros((k, k), dtype=np.int64)
    last = np.zeros(k, dtype=np.int64)
    index = np.full(n, -1, dtype=np.int64)
    index[np.asarray(codes, dtype=np.int64)] = np.arange(k)
    reading = _Reading(max_skip, duplicate_exhausts, OVERVOTE_CODES[overvote])
    _head_to_head(packed, index, reading, wins, last)
    return wins, last


class Tally(NamedTuple):
    """One round's sums (scaled: ``int64``, or Python integers in an exact count), each
    with its bool ``*_touched`` flags of the same shape, whether a value that a surplus
    transfer touched went into it: ``votes`` ``(n,)`` by candidate; ``inactive`` ``(7,)``
    by ballot state; ``moves`` ``(n, n+1)`` from a ballot's old candidate to its new one
    (column ``n``: inactive)."""

    votes: np.ndarray
    votes_touched: np.ndarray
    inactive: np.ndarray
    inactive_touched: np.ndarray
    moves: np.ndarray
    moves_touched: np.ndarray


class BallotStates:
    """Each distinct ballot's state during a count (:class:`_States`): the candidate it
    counts for (``recipient``, ``-1`` none), its ``status`` (``0`` active, else the cause,
    as :class:`.tabulator.Status`), its ``value`` (scaled; starts at one vote) and whether
    a surplus transfer ``touched`` it. ``exact``: Python integers instead of ``int64``
    (when the count could overflow), in ``packed.counts`` too."""

    def __init__(self, packed: Packed, decimal_places: int, exact: bool) -> None:
        m = packed.m
        self.packed = packed._replace(counts=packed.counts.astype(object)) if exact else packed
        self.scale = 10**decimal_places
        self.exact = exact
        self.states = _States(
            recipient=np.full(m, -1, dtype=np.int64),
            status=np.zeros(m, dtype=np.int64),
            value=np.full(m, self.scale, dtype=object if exact else np.int64),
            touched=np.zeros(m, dtype=np.bool_),
        )

    def _zeros(self, shape) -> np.ndarray:
        out = np.zeros(shape, dtype=object if self.exact else np.int64)
        if self.exact:
            out.fill(0)  # Python integers, not numpy's
        return out

    def tally(
        self,
        continuing: np.ndarray,
        max_skip: int,
        duplicate_exhausts: bool,
        overvote: str,
        count_over: bool,
    ) -> Tally:
        """One round over every ballot (``continuing``: ``(n,)`` bool): a ballot whose
        candidate left the count is read again from the top, by the rules (``max_skip``:
        ``-1`` unlimited; ``count_over``: every seat is filled, nothing moves on). Raises
        ``ValueError`` for an unnamed overvote under exhaust-if-multiple."""
        n = continuing.size
        out = Tally(
            self._zeros(n), np.zeros(n, dtype=np.bool_),
            self._zeros(7), np.zeros(7, dtype=np.bool_),
            self._zeros((n, n + 1)), np.zeros((n, n + 1), dtype=np.bool_),
        )  # fmt: skip
        reading = _Reading(max_skip, duplicate_exhausts, OVERVOTE_CODES[overvote])
        kernel = _tally.py_func if self.exact else _tally
        error = kernel(
            self.packed, self.states, continuing.astype(np.int64), reading, count_over, out
        )
        if error >= 0:
            raise ValueError(
                "an overvote that does not name its candidates cannot be counted by "
                "exhaust-if-multiple"
            )
        return out

    def surplus(self, winner: int, fraction: int) -> tuple[int, bool]:
        """Move ``fraction / scale`` of each of ``winner``'s active ballots on (rounded
        down to a whole scaled unit); returns what its ballots keep, scaled, and whether
        it had any."""
        kernel = _surplus.py_func if self.exact else _surplus
        kept, found = kernel(self.packed.counts, self.states, winner, fraction, self.scale)
        return int(kept), bool(found)
