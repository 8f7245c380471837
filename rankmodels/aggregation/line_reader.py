"""What the line-based readers (:mod:`.preflib`, :mod:`.abif`) share: the chunked line loop,
ballot lines ``count: ballot``, and locating the first bad line.

:class:`LineReader` is a :class:`.stream.ChunkReader`: each chunk is split into lines by
:func:`.scan.text_lines`, checked for UTF-8 and numbered, and every line gets a *kind* from
its first character after spaces (:func:`line_kinds`): blank, a ``#`` comment, a ballot
line, or a kind of the format's own. Lines of the kinds the format reads one at a time
(headers, candidate lines) go to :meth:`LineReader.read_line` in file order; ballot lines
``count: ballot`` are checked in bulk: each distinct count is parsed once in Python (a
positive integer, :func:`parse_count`), each distinct ballot text once by the format's
compiled tokeniser (:meth:`LineReader.bodies`), and equal ballots are merged in a
:class:`.BallotTable`. The first bad ballot line is parsed again on its own
(:meth:`LineReader.parse_ballot`) to raise its error with its line number; an error in a
line read alone is raised after the ballot lines above it are checked, so that the error
reported is always that of the file's first bad line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import NoReturn

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable
from rankmodels.aggregation.csv_common import DistinctValues, add_count, decode, running_totals
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import ASCII_SPACE, intern_spans, text_lines
from rankmodels.aggregation.stream import check_utf8, run
from rankmodels.errors import InputError

__all__ = [
    "BALLOT",
    "BLANK",
    "COMMENT",
    "FIRST_OWN_KIND",
    "LineReader",
    "classify_lines",
    "line_kinds",
    "parse_count",
    "separator_table",
    "token_arrays",
]

BLANK, COMMENT, BALLOT, _MAYBE = range(4)
"""Line kinds: blank (spaces only), ``#`` comment, ballot line; ``_MAYBE`` starts with a
non-ASCII byte after ASCII spaces (Python decides: it may be Unicode whitespace)."""
FIRST_OWN_KIND = 4
"""The first code a format may give its own line kinds."""


def line_kinds(rest: int, first: dict[str, int]) -> np.ndarray:
    """The table of line kinds by first character after spaces, int8 ``(256,)``: the kind
    ``first[s]`` for a line starting with a character of ``s`` (ASCII), ``rest`` for any
    other (``table[128:]``, the kind of a line starting with a non-ASCII character, too)."""
    table = np.full(256, rest, np.int8)
    for chars, kind in first.items():
        table[[ord(c) for c in chars]] = kind
    return table


@numba.njit(cache=True)
def _classify(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, space: np.ndarray, kinds: np.ndarray
) -> tuple:  # pragma: no cover
    """Each line's kind (``kinds`` of its first byte after ASCII spaces; blank, or
    ``_MAYBE`` for a non-ASCII byte) and the position of its first ``:`` (-1 if none)."""
    m = starts.size
    kind = np.empty(m, np.int8)
    colon = np.full(m, -1, np.int64)
    for i in range(m):
        p = starts[i]
        while p < ends[i] and space[buf[p]]:
            p += 1
        if p == ends[i]:
            kind[i] = BLANK
            continue
        kind[i] = _MAYBE if buf[p] >= 128 else kinds[buf[p]]
        for q in range(p, ends[i]):
            if buf[q] == 58:  # ':'
                colon[i] = q
                break
    return kind, colon


def classify_lines(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, kinds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(kind, colon)`` of the lines ``buf[starts[i]:ends[i]]`` (checked UTF-8): the kind
    of each by its first character after ``str.strip`` (``kinds`` from :func:`line_kinds`;
    :data:`BLANK` when there is none) and the position of its first ``:`` (-1 if none).
    Compiled, but for lines that start with non-ASCII bytes: Python decides whether those
    are spaces."""
    kind, colon = _classify(buf, starts, ends, ASCII_SPACE, kinds)
    for i in np.flatnonzero(kind == _MAYBE):
        text = decode(buf, starts[i], ends[i]).strip()
        kind[i] = kinds[min(ord(text[0]), 128)] if text else BLANK
    return kind, colon


def separator_table(chars: str) -> np.ndarray:
    """uint8 ``(256,)``: 1 at the bytes of the ASCII characters ``chars``, else 0."""
    table = np.zeros(256, np.uint8)
    table[[ord(c) for c in chars]] = 1
    return table


@numba.njit(cache=True)
def token_arrays(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, separator: np.ndarray
) -> tuple:  # pragma: no cover
    """Room for the tokens of the texts ``buf[starts[i]:ends[i]]``: ``(tok_start, tok_end,
    owner, group)``, uninitialised int64 arrays of one element per text plus one per
    separator byte (``separator`` from :func:`separator_table`: a bound on the tokens when
    all but a text's first follow a separator)."""
    bound = starts.size
    for i in range(starts.size):
        for p in range(starts[i], ends[i]):
            bound += separator[buf[p]]  # added, not branched on (faster on short tokens)
    return (
        np.empty(bound, np.int64),
        np.empty(bound, np.int64),
        np.empty(bound, np.int64),
        np.empty(bound, np.int64),
    )


def parse_count(text: str, path: object, field: str) -> int:
    """A ballot line's count: a positive integer."""
    try:
        count = int(text.strip())
    except ValueError:
        raise InputError(
            f"count {text.strip()!r} is not an integer", path=path, field=field
        ) from None
    if count <= 0:
        raise InputError(f"count must be positive, got {count}", path=path, field=field)
    return count


def _as_float(count: int) -> float:
    return float(count) if count <= sys.float_info.max else float("inf")


def _count_value(text: str) -> float:
    """The count as a float (``inf`` beyond the largest float), NaN when it is not one."""
    try:
        return _as_float(parse_count(text, None, ""))
    except InputError:
        return float("nan")


class LineReader:
    """Reads a line-based vote file chunk by chunk; a subclass gives its line kinds, reads
    the lines of its own kinds and tokenises ballot texts (what follows a count's ``:``).

    Class attributes: ``kinds`` (from :func:`line_kinds`), ``read_alone`` (the kinds given
    to :meth:`read_line`) and ``ballot_line`` (what a ballot line looks like, for the error
    of a line that has no ``:``)."""

    kinds: np.ndarray
    read_alone: tuple[int, ...]
    ballot_line: str

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = path
        self.counts = DistinctValues(_count_value)
        self.table = BallotTable()
        self.total = 0.0
        self.line = 0  # lines before the current chunk

    def read(self, chunks: Iterable[bytes]) -> Profile:
        """The profile of the file given as ``chunks`` of bytes."""
        run(self, chunks)
        return self.profile()

    def feed(self, buf: np.ndarray, final: bool, offset: int) -> int:
        starts, ends, used = text_lines(buf, final)
        check_utf8(buf[:used], offset, self.line + 1, self.path)
        lines = np.arange(self.line + 1, self.line + 1 + starts.size)
        self.line += starts.size
        kind, colon = classify_lines(buf, starts, ends, self.kinds)
        rows = np.flatnonzero(kind == BALLOT)
        alone = np.flatnonzero(np.isin(kind, self.read_alone))
        stop = rows[0] if rows.size else kind.size
        for i in alone[alone < stop]:
            self.read_line(decode(buf, starts[i], ends[i]), int(lines[i]), int(kind[i]))
        if rows.size:
            self.before_ballots(int(lines[stop]))
        late: InputError | None = None  # the first error in a line read alone after a ballot
        for i in alone[alone > stop]:
            try:
                self.read_line(decode(buf, starts[i], ends[i]), int(lines[i]), int(kind[i]))
            except InputError as err:
                late = err
                rows = rows[lines[rows] < lines[i]]  # only the ballot lines before it matter
                break
        if rows.size:
            self._ballots(buf, starts[rows], ends[rows], colon[rows], lines[rows])
        if late is not None:
            raise late
        return used

    def _ballots(self, buf, starts, ends, colon, lines) -> None:
        """Check the ballot lines, raise for the first bad one, else count them."""
        has_colon = colon >= 0
        c0 = np.where(has_colon, colon, starts)
        counts = self.counts.lookup(buf, starts, c0, np.float64)
        ok = has_colon & ~np.isnan(counts)
        b0 = np.where(ok, c0 + 1, starts)
        b1 = np.where(ok, ends, starts)
        body_id, body_first = intern_spans(buf, b0, b1)
        valid, data, offsets = self.bodies(buf, b0[body_first], b1[body_first], lines[body_first])
        ok &= valid[body_id]
        bad = int(np.argmin(ok)) if not ok.all() else ok.size
        totals = running_totals(self.total, counts[:bad])
        over = np.flatnonzero(totals[1:] > sys.float_info.max)
        if bad < ok.size or over.size:
            r = int(over[0]) if over.size else bad
            self._explain(decode(buf, starts[r], ends[r]), int(lines[r]), float(totals[r]))
        self.total = float(totals[-1])
        self.add(data, offsets, body_id, counts)

    def _explain(self, line: str, number: int, total: float) -> NoReturn:
        """Parse one ballot line on its own, as a line-by-line reader would, and raise."""
        field = f"line {number}"
        count_text, sep, body = line.partition(":")
        if not sep:
            raise InputError(
                f"expected {self.ballot_line}, got {line.strip()!r}", path=self.path, field=field
            )
        count = parse_count(count_text, self.path, field)
        self.parse_ballot(body, field)
        add_count(total, _as_float(count), self.path, field)
        raise AssertionError(f"{self.path}: {field} was flagged as bad but parses")

    def read_line(self, text: str, number: int, kind: int) -> None:
        """Read line ``number`` (``text``) of a kind in ``read_alone``; raise
        :class:`InputError` if it is bad."""
        raise NotImplementedError

    def before_ballots(self, number: int) -> None:
        """Called before the ballot lines of a chunk (the first on line ``number``) are
        read, when the lines read alone above them are; raise if they cannot be read."""

    def bodies(
        self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, lines: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(valid, data, offsets)`` of distinct ballot texts ``buf[starts[i]:ends[i]]``
        (first on line ``lines[i]``): whether each is a valid ballot, and their prefix keys
        (:func:`.group_keys`)."""
        raise NotImplementedError

    def parse_ballot(self, body: str, field: str) -> None:
        """Raise the error of a ballot text that :meth:`bodies` found invalid."""
        raise NotImplementedError

    def add(
        self, data: np.ndarray, offsets: np.ndarray, ids: np.ndarray, counts: np.ndarray
    ) -> None:
        """Count ballot lines, line ``k`` being text ``ids[k]`` with ``counts[k]``."""
        self.table.count(self.table.add(data, offsets)[ids], counts)

    def profile(self) -> Profile:
        raise NotImplementedError
