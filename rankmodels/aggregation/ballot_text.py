"""Ballot lines of a profile as text, built in bulk: one compiled pass writes the UTF-8
bytes of many lines at once, so that writing a million distinct ballots costs about as
much as reading them.

A line is ``count SEP body`` or ``body SEP count`` (``count_first``) followed by ``\\n``.
The body lists a ballot's tie groups best first, joined by ``group_sep``; the members of a
group (candidate tokens, in the profile's order) are joined by ``member_sep`` and a group of
two or more members is wrapped in ``group_open`` ... ``group_close``; the whole body is
wrapped in ``body_open`` ... ``body_close`` (a CSV quote). With ``drop_unranked`` a last
group of two or more members after ranked ones is left out (the unranked candidates).
Every separator is a short byte string; the writers of :mod:`.io` and :mod:`.abif` pick them.

The compiled writer takes a block of ballots (:class:`_Block`) and the format as bytes
(:class:`_Layout`), both namedtuples.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from rankmodels.aggregation.profile import Profile

__all__ = ["LineFormat", "ballot_lines", "count_texts"]

CHUNK = 1 << 16
"""Ballots per block of text (bounds the text in memory to a few MB)."""

_EXACT = 2.0**53  # integer-valued floats below this are written by the compiled digits


@dataclass(frozen=True)
class LineFormat:
    """Separators of a ballot line (see the module docstring); ``tokens[x]`` is the text of
    candidate ``x``."""

    tokens: Sequence[str]
    count_first: bool
    count_sep: str
    group_sep: str
    member_sep: str
    group_open: str = ""
    group_close: str = ""
    body_open: str = ""
    body_close: str = ""
    drop_unranked: bool = False


class _Layout(NamedTuple):
    """A :class:`LineFormat` as the compiled writer reads it: ``tok`` the UTF-8 bytes of the
    ``n`` candidate tokens one after another, ``tok_off`` ``(n + 1,)`` where each starts;
    ``seps`` the bytes of count_sep, group_sep, member_sep, group_open, group_close,
    body_open and body_close (in that order), ``sep_off`` ``(8,)`` where each starts;
    ``count_first`` and ``drop`` (``drop_unranked``) as in :class:`LineFormat`."""

    tok: np.ndarray
    tok_off: np.ndarray
    seps: np.ndarray
    sep_off: np.ndarray
    count_first: bool
    drop: bool


class _Block(NamedTuple):
    """A block of ballots to write: ``orders`` and ``levels`` ``(m, n)``, the profile's (see
    :class:`~.profile.Profile`); ``rows`` ``(b,)`` int64 the ballots of the block, in
    order; ``cnt`` the bytes of their counts' texts one after another, ``cnt_off``
    ``(b + 1,)`` where the text of ``rows[r]``'s count starts (:func:`count_texts`)."""

    orders: np.ndarray
    levels: np.ndarray
    rows: np.ndarray
    cnt: np.ndarray
    cnt_off: np.ndarray


def _packed(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ``texts`` one after another, and ``(len + 1,)`` offsets."""
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def count_texts(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal text of each weight as the votes files write it: ``int(w)`` for a whole
    number, ``repr(float(w))`` otherwise; returns packed bytes and offsets. Whole numbers
    below 2**53 are written in compiled code."""
    weights = np.asarray(weights, dtype=np.float64)
    if np.all((weights == np.floor(weights)) & (np.abs(weights) < _EXACT)):
        return _decimal(weights.astype(np.int64))
    return _packed([str(int(w)) if float(w).is_integer() else repr(float(w)) for w in weights])


@numba.njit(cache=True)
def _decimal(values: np.ndarray) -> tuple:  # pragma: no cover - numba
    """Decimal digits of the non-negative ``values`` (packed bytes, offsets)."""
    m = values.size
    offsets = np.zeros(m + 1, np.int64)
    for i in range(m):
        v = values[i]
        digits = 1
        while v >= 10:
            v //= 10
            digits += 1
        offsets[i + 1] = offsets[i] + digits
    out = np.empty(offsets[m], np.uint8)
    for i in range(m):
        v = values[i]
        for p in range(offsets[i + 1] - 1, offsets[i] - 1, -1):
            out[p] = 48 + v % 10
            v //= 10
    return out, offsets


@numba.njit(cache=True)
def _put(out: np.ndarray, pos: int, src: np.ndarray, a: int, b: int, write: bool) -> int:
    """Copy ``src[a:b]`` to ``out[pos:]`` when ``write``; return the position after it."""
    if write:
        for i in range(a, b):
            out[pos + i - a] = src[i]
    return pos + b - a


@numba.njit(cache=True)
def _lines(block: _Block, layout: _Layout, out: np.ndarray) -> int:  # pragma: no cover - numba
    """Write (``out.size > 0``) or measure (``out.size == 0``) the lines of the ballots of
    ``block`` in ``layout``; return their length in bytes."""
    # the loop reads local names: reading the arrays through the namedtuples there is slower
    orders, levels, rows = block.orders, block.levels, block.rows
    cnt, cnt_off = block.cnt, block.cnt_off
    tok, tok_off, seps, sep_off = layout.tok, layout.tok_off, layout.seps, layout.sep_off
    write = out.size > 0
    n = orders.shape[1]
    pos = 0
    for r in range(rows.size):
        j = rows[r]
        if layout.count_first:
            pos = _put(out, pos, cnt, cnt_off[r], cnt_off[r + 1], write)
            pos = _put(out, pos, seps, sep_off[0], sep_off[1], write)
        pos = _put(out, pos, seps, sep_off[5], sep_off[6], write)
        end = n
        if layout.drop and levels[j, n - 1] > 0 and levels[j, n - 2] == levels[j, n - 1]:
            end = n - 1
            while levels[j, end - 1] == levels[j, n - 1]:
                end -= 1
        s = 0
        while s < end:
            e = s + 1
            while e < end and levels[j, e] == levels[j, s]:
                e += 1
            if s > 0:
                pos = _put(out, pos, seps, sep_off[1], sep_off[2], write)
            if e > s + 1:
                pos = _put(out, pos, seps, sep_off[3], sep_off[4], write)
            for k in range(s, e):
                if k > s:
                    pos = _put(out, pos, seps, sep_off[2], sep_off[3], write)
                x = orders[j, k]
                pos = _put(out, pos, tok, tok_off[x], tok_off[x + 1], write)
            if e > s + 1:
                pos = _put(out, pos, seps, sep_off[4], sep_off[5], write)
            s = e
        pos = _put(out, pos, seps, sep_off[6], sep_off[7], write)
        if not layout.count_first:
            pos = _put(out, pos, seps, sep_off[0], sep_off[1], write)
            pos = _put(out, pos, cnt, cnt_off[r], cnt_off[r + 1], write)
        if write:
            out[pos] = 10
        pos += 1
    return pos


def ballot_lines(
    profile: Profile, fmt: LineFormat, rows: np.ndarray | None = None, chunk: int = CHUNK
) -> Iterator[str]:
    """The lines of the ballots ``rows`` (default: all, in order) of ``profile`` in blocks
    of ``chunk`` ballots, each block one string of whole lines."""
    separators = [fmt.count_sep, fmt.group_sep, fmt.member_sep, fmt.group_open]
    separators += [fmt.group_close, fmt.body_open, fmt.body_close]
    layout = _Layout(*_packed(fmt.tokens), *_packed(separators), fmt.count_first, fmt.drop_unranked)
    total = profile.weights.size if rows is None else rows.size
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        picked = np.arange(start, stop) if rows is None else rows[start:stop].astype(np.int64)
        block = _Block(
            profile.orders, profile.levels, picked, *count_texts(profile.weights[picked])
        )
        out = np.empty(_lines(block, layout, np.empty(0, np.uint8)), np.uint8)
        _lines(block, layout, out)
        yield out.tobytes().decode("utf-8")
