"""The PrefLib reader: ``.soc/.soi/.toc/.toi`` files (format of preflib.org since 2022).

``# NUMBER ALTERNATIVES: n`` and ``# ALTERNATIVE NAME i: name`` header lines, then one line
per ballot type ``count: a,b,{c,d},e`` with 1-based candidate numbers and braces around
ties. The extension fixes what is allowed: ``soc`` strict and complete, ``soi`` strict and
possibly incomplete, ``toc`` complete with ties, ``toi`` anything.

As for the votes CSV (:mod:`.votes_csv`), lines are split and ballot bodies tokenised in
compiled loops, each distinct count, ballot text and candidate number is parsed once in
Python, and the first bad line is parsed again on its own to raise its error.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable, group_keys
from rankmodels.aggregation.csv_common import DistinctValues, add_count, decode, running_totals
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import ASCII_SPACE, intern_spans, text_lines
from rankmodels.aggregation.stream import (
    CHUNK_BYTES,
    Progress,
    check_utf8,
    file_chunks,
    run,
    text_chunks,
)
from rankmodels.errors import InputError

__all__ = ["PREFLIB_TYPES", "parse_preflib", "read_preflib"]

PREFLIB_TYPES = ("soc", "soi", "toc", "toi")

_HEADER = re.compile(r"^#\s*([A-Z ]+?)\s*(\d+)?\s*:\s*(.*)$")
_TOKEN = re.compile(r"\{[^{}]*\}|[^,{}]+")
_INVALID, _BLANK_TOKEN = -1, -3  # token codes besides candidate indices

# line kinds found by _classify (MAYBE: starts with a non-ASCII byte, Python decides)
_BLANK, _COMMENT, _BALLOT, _MAYBE = 0, 1, 2, 3


def read_preflib(
    path: str | os.PathLike[str],
    progress: Progress | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Profile:
    """Read a PrefLib ``.soc/.soi/.toc/.toi`` file into a :class:`Profile`."""
    kind = Path(path).suffix.lower().lstrip(".")
    if kind not in PREFLIB_TYPES:
        raise InputError(f"expected a PrefLib extension {PREFLIB_TYPES}, got {kind!r}", path=path)
    with open(path, "rb") as handle:
        return _read(file_chunks(handle, progress, chunk_bytes), kind, path)


def parse_preflib(
    lines: Iterable[str], kind: str, path: str | os.PathLike[str] | None = None
) -> Profile:
    """Parse PrefLib text of data type ``kind`` (``soc``, ``soi``, ``toc`` or ``toi``) from
    its lines (an open handle; ``path`` only names it in errors)."""
    return _read(text_chunks(lines), kind, path)


def _read(chunks: Iterable[bytes], kind: str, path: str | os.PathLike[str] | None) -> Profile:
    reader = _PrefLib(kind, path)
    run(reader, chunks)
    return reader.profile()


@numba.njit(cache=True)
def _classify(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, space: np.ndarray
) -> tuple:  # pragma: no cover
    """Each line's kind (blank, ``#`` line, ballot, or starting with a non-ASCII byte) and
    the position of its first ``:`` (-1 if none)."""
    m = starts.size
    kind = np.empty(m, np.int8)
    colon = np.full(m, -1, np.int64)
    for i in range(m):
        p = starts[i]
        while p < ends[i] and space[buf[p]]:
            p += 1
        if p == ends[i]:
            kind[i] = _BLANK
        elif buf[p] == 35:  # '#'
            kind[i] = _COMMENT
        else:
            kind[i] = _MAYBE if buf[p] >= 128 else _BALLOT
        for q in range(p, ends[i]):
            if buf[q] == 58:  # ':'
                colon[i] = q
                break
    return kind, colon


@numba.njit(cache=True)
def _body_tokens(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple:  # pragma: no cover
    """Tokens of ballot bodies ``1,{2,3},4`` as the reader's regular expression finds them:
    runs of characters other than ``,{}`` outside braces (one group each) and the
    comma-separated parts inside a pair of braces (one group). Returns ``(tok_start,
    tok_end, owner, group, edge, braced, unbalanced, separated)``: ``edge[t]`` marks an
    unbraced token touching either end of its body (dropped when blank, as stripping the
    body would), ``braced[i]`` whether body ``i`` has braces, ``unbalanced[i]`` a brace
    without its partner or nested, ``separated[i]`` whether it has any of ``,{}``."""
    m = starts.size
    bound = m
    for i in range(m):
        for p in range(starts[i], ends[i]):
            c = buf[p]
            if c == 44 or c == 123 or c == 125:
                bound += 1
    tok_start = np.empty(bound, np.int64)
    tok_end = np.empty(bound, np.int64)
    owner = np.empty(bound, np.int64)
    group = np.empty(bound, np.int64)
    edge = np.zeros(bound, np.bool_)
    braced = np.zeros(m, np.bool_)
    unbalanced = np.zeros(m, np.bool_)
    separated = np.zeros(m, np.bool_)
    t = 0
    for i in range(m):
        s, e = starts[i], ends[i]
        g = 0
        inside = False
        run = -1  # start of the current unbraced token
        part = 0  # start of the current part inside braces
        for p in range(s, e):
            c = buf[p]
            if c == 44 or c == 123 or c == 125:
                separated[i] = True
            if not inside:
                if c == 44 or c == 123 or c == 125:
                    if run >= 0:
                        tok_start[t], tok_end[t], owner[t], group[t] = run, p, i, g
                        edge[t] = run == s
                        t += 1
                        g += 1
                        run = -1
                    if c == 123:
                        inside = True
                        braced[i] = True
                        part = p + 1
                    elif c == 125:
                        unbalanced[i] = True
                elif run < 0:
                    run = p
            elif c == 123:
                unbalanced[i] = True
            elif c == 44 or c == 125:
                tok_start[t], tok_end[t], owner[t], group[t] = part, p, i, g
                t += 1
                part = p + 1
                if c == 125:
                    inside = False
                    g += 1
        if inside:
            unbalanced[i] = True
        if run >= 0:
            tok_start[t], tok_end[t], owner[t], group[t] = run, e, i, g
            edge[t] = True
            t += 1
    return (
        tok_start[:t],
        tok_end[:t],
        owner[:t],
        group[:t],
        edge[:t],
        braced,
        unbalanced,
        separated,
    )


def parse_count(text: str, path: object, field: str) -> int:
    """A PrefLib ballot count: a positive integer."""
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


def parse_ballot(body: str, n: int, kind: str, path: object, field: str) -> list[list[int]]:
    """The tie groups of 0-based candidates in a ballot body ``1,{2,3},4``, checked."""
    body = body.strip()
    if not body:
        raise InputError("empty ballot after 'count:'", path=path, field=field)
    if re.sub(r"\{[^{}]*\}|[^,{}]+|,", "", body).strip():
        raise InputError(f"malformed ballot {body!r}: unbalanced braces", path=path, field=field)
    groups: list[list[int]] = []
    seen: set[int] = set()
    for token in _TOKEN.findall(body):
        token = token.strip()
        tied = token.startswith("{")
        if tied and kind in ("soc", "soi"):
            raise InputError(
                f"ties {token!r} are not allowed in a .{kind} file", path=path, field=field
            )
        parts = token.strip("{}").split(",") if tied else [token]
        group = []
        for part in parts:
            x = _candidate_number(part, n, body, path, field)
            if x in seen:
                raise InputError(
                    f"candidate {x} appears twice in the ballot", path=path, field=field
                )
            seen.add(x)
            group.append(x - 1)
        groups.append(group)
    if kind in ("soc", "toc") and len(seen) != n:
        raise InputError(
            f"a .{kind} ballot must rank all {n} candidates, this one ranks {len(seen)}",
            path=path,
            field=field,
        )
    return groups


def _candidate_number(part: str, n: int, body: str, path: object, field: str) -> int:
    part = part.strip()
    try:
        x = int(part)
    except ValueError:
        raise InputError(
            f"malformed ballot {body!r}: {part!r} is not a candidate number",
            path=path,
            field=field,
        ) from None
    if not 1 <= x <= n:
        raise InputError(f"unknown candidate {x}; expected 1..{n}", path=path, field=field)
    return x


class _PrefLib:
    """Reads a PrefLib file chunk by chunk (a :class:`.stream.ChunkReader`)."""

    def __init__(self, kind: str, path: str | os.PathLike[str] | None) -> None:
        self.kind = kind
        self.path = path
        self.n: int | None = None
        self.names: dict[int, str] = {}
        self.counts = DistinctValues(self._count)
        self.numbers = DistinctValues(self._number)
        self.table = BallotTable()
        self.total = 0.0
        self.line = 0
        self.ballots = 0

    def _count(self, text: str) -> float:
        try:
            return _as_float(parse_count(text, None, ""))
        except InputError:
            return float("nan")

    def _number(self, text: str) -> int:
        """The 0-based candidate, :data:`_INVALID`, or :data:`_BLANK_TOKEN`."""
        if not text.strip():
            return _BLANK_TOKEN
        try:
            return _candidate_number(text, self.n, "", None, "") - 1
        except InputError:
            return _INVALID

    def feed(self, buf: np.ndarray, final: bool, offset: int) -> int:
        starts, ends, used = text_lines(buf, final)
        check_utf8(buf[:used], offset, self.line + 1, self.path)
        lines = np.arange(self.line + 1, self.line + 1 + starts.size)
        self.line += starts.size
        kind, colon = _classify(buf, starts, ends, ASCII_SPACE)
        for i in np.flatnonzero(kind == _MAYBE):
            text = decode(buf, starts[i], ends[i]).strip()
            kind[i] = _BLANK if not text else (_COMMENT if text.startswith("#") else _BALLOT)
        rows = np.flatnonzero(kind == _BALLOT)
        comments = np.flatnonzero(kind == _COMMENT)
        stop = rows[0] if rows.size else kind.size
        for i in comments[comments < stop]:  # they may set n for the ballots below
            self._header(decode(buf, starts[i], ends[i]), int(lines[i]))
        if rows.size and self.n is None:
            raise InputError(
                "ballot before the '# NUMBER ALTERNATIVES: n' header line",
                path=self.path,
                field=f"line {lines[rows[0]]}",
            )
        late: InputError | None = None  # the first error in a header line after a ballot
        for i in comments[comments > stop]:
            try:
                self._header(decode(buf, starts[i], ends[i]), int(lines[i]))
            except InputError as err:
                late = err
                rows = rows[lines[rows] < lines[i]]  # only the ballot lines before it matter
                break
        if rows.size:
            self._ballots(buf, starts[rows], ends[rows], colon[rows], lines[rows])
        if late is not None:
            raise late
        return used

    def _header(self, line: str, number: int) -> None:
        match = _HEADER.match(line.strip())
        if not match:
            return
        key, index, value = match.groups()
        if key == "NUMBER ALTERNATIVES":
            try:
                n = int(value)
            except ValueError:
                n = -1
            if n < 1:
                raise InputError(
                    f"NUMBER ALTERNATIVES must be a positive integer, got {value!r}",
                    path=self.path,
                    field=f"line {number}",
                )
            if self.n is not None and n != self.n:
                raise InputError(
                    f"NUMBER ALTERNATIVES given again as {n} after {self.n}",
                    path=self.path,
                    field=f"line {number}",
                )
            self.n = n
        elif key == "ALTERNATIVE NAME" and index is not None:
            self.names[int(index)] = value.strip() or index

    def _ballots(self, buf, starts, ends, colon, lines) -> None:
        """Check the ballot lines, raise for the first bad one, else count them."""
        has_colon = colon >= 0
        c0 = np.where(has_colon, colon, starts)
        counts = self.counts.lookup(buf, starts, c0, np.float64)
        ok = has_colon & ~np.isnan(counts)
        b0 = np.where(ok, c0 + 1, starts)
        b1 = np.where(ok, ends, starts)
        body_id, body_first = intern_spans(buf, b0, b1)
        valid, data, offsets = self._bodies(buf, b0[body_first], b1[body_first])
        ok &= valid[body_id]
        bad = int(np.argmin(ok)) if not ok.all() else ok.size
        totals = running_totals(self.total, counts[:bad])
        over = np.flatnonzero(totals[1:] > sys.float_info.max)
        if bad < ok.size or over.size:
            r = int(over[0]) if over.size else bad
            self._explain(decode(buf, starts[r], ends[r]), int(lines[r]), float(totals[r]))
        self.total = float(totals[-1])
        self.table.count(self.table.add(data, offsets)[body_id], counts)

    def _bodies(self, buf: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> tuple:
        """``(valid, data, offsets)``: which distinct bodies are valid ballots, and their
        prefix keys (:func:`.group_keys`)."""
        tok_start, tok_end, owner, group, edge, braced, unbalanced, separated = _body_tokens(
            buf, b0, b1
        )
        cand = self.numbers.lookup(buf, tok_start, tok_end, np.int64)
        keep = ~(edge & (cand == _BLANK_TOKEN))
        data, offsets, valid, ranked = group_keys(owner, group, cand, keep, b0.size, self.n)
        tokens = np.bincount(owner[keep], minlength=b0.size)
        valid &= ~unbalanced & (separated | (tokens > 0))  # else: an empty ballot
        if self.kind in ("soc", "soi"):
            valid &= ~braced
        if self.kind in ("soc", "toc"):
            valid &= ranked == self.n
        return valid, data, offsets

    def _explain(self, line: str, number: int, total: float) -> NoReturn:
        """Parse one ballot line on its own, as a line-by-line reader would, and raise."""
        line = line.strip()
        field = f"line {number}"
        path = self.path
        count_text, sep, body = line.partition(":")
        if not sep:
            raise InputError(f"expected 'count: ballot', got {line!r}", path=path, field=field)
        count = parse_count(count_text, path, field)
        parse_ballot(body, self.n, self.kind, path, field)
        add_count(total, _as_float(count), path, field)
        raise AssertionError(f"{path}: {field} was flagged as bad but parses")

    def profile(self) -> Profile:
        if self.n is None:
            raise InputError(
                "empty file; expected a '# NUMBER ALTERNATIVES: n' header", path=self.path
            )
        if not len(self.table):
            raise InputError("no ballots in the file", path=self.path)
        labels = [self.names.get(i + 1, str(i + 1)) for i in range(self.n)]
        if len(set(labels)) != self.n:
            labels = [f"{i + 1}: {name}" for i, name in enumerate(labels)]
        return self.table.profile(labels)
