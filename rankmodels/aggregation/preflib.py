"""The PrefLib reader: ``.soc/.soi/.toc/.toi`` files (format of preflib.org since 2022).

``# NUMBER ALTERNATIVES: n`` and ``# ALTERNATIVE NAME i: name`` header lines, then one line
per ballot type ``count: a,b,{c,d},e`` with 1-based candidate numbers and braces around
ties. The extension fixes what is allowed: ``soc`` strict and complete, ``soi`` strict and
possibly incomplete, ``toc`` complete with ties, ``toi`` anything.

The file is read in chunks by a :class:`.line_reader.LineReader`: this module gives its
line kinds (``#`` lines are read one at a time, as they may set ``n``), the compiled
tokeniser of ballot bodies and :func:`parse_ballot`, which raises a bad ballot's error;
each distinct candidate number is parsed once in Python.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import group_keys
from rankmodels.aggregation.csv_common import DistinctValues
from rankmodels.aggregation.line_reader import (
    BALLOT,
    COMMENT,
    LineReader,
    line_kinds,
    separator_table,
    token_arrays,
)
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.stream import CHUNK_BYTES, Progress, file_chunks, text_chunks
from rankmodels.errors import InputError

__all__ = ["PREFLIB_TYPES", "parse_preflib", "read_preflib"]

PREFLIB_TYPES = ("soc", "soi", "toc", "toi")

_HEADER = re.compile(r"^#\s*([A-Z ]+?)\s*(\d+)?\s*:\s*(.*)$")
_TOKEN = re.compile(r"\{[^{}]*\}|[^,{}]+")
_INVALID, _BLANK_TOKEN = -1, -3  # token codes besides candidate indices
_SEPARATOR = separator_table(",{}")


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
        return _PrefLib(kind, path).read(file_chunks(handle, progress, chunk_bytes))


def parse_preflib(
    lines: Iterable[str], kind: str, path: str | os.PathLike[str] | None = None
) -> Profile:
    """Parse PrefLib text of data type ``kind`` (``soc``, ``soi``, ``toc`` or ``toi``) from
    its lines (an open handle; ``path`` only names it in errors)."""
    return _PrefLib(kind, path).read(text_chunks(lines))


@numba.njit(cache=True)
def _body_tokens(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, separator: np.ndarray
) -> tuple:  # pragma: no cover
    """Tokens of ballot bodies ``1,{2,3},4`` as the reader's regular expression finds them:
    runs of characters other than ``,{}`` outside braces (one group each) and the
    comma-separated parts inside a pair of braces (one group). Returns ``(tok_start,
    tok_end, owner, group, edge, braced, unbalanced, separated)``: ``edge[t]`` marks an
    unbraced token touching either end of its body (dropped when blank, as stripping the
    body would), ``braced[i]`` whether body ``i`` has braces, ``unbalanced[i]`` a brace
    without its partner or nested, ``separated[i]`` whether it has any of ``,{}``."""
    m = starts.size
    tok_start, tok_end, owner, group = token_arrays(buf, starts, ends, separator)
    edge = np.zeros(tok_start.size, np.bool_)
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


class _PrefLib(LineReader):
    """Reads a PrefLib file chunk by chunk."""

    kinds = line_kinds(BALLOT, {"#": COMMENT})
    read_alone = (COMMENT,)
    ballot_line = "'count: ballot'"

    def __init__(self, kind: str, path: str | os.PathLike[str] | None) -> None:
        super().__init__(path)
        self.kind = kind
        self.n: int | None = None
        self.names: dict[int, str] = {}
        self.numbers = DistinctValues(self._number)

    def _number(self, text: str) -> int:
        """The 0-based candidate, :data:`_INVALID`, or :data:`_BLANK_TOKEN`."""
        if not text.strip():
            return _BLANK_TOKEN
        try:
            return _candidate_number(text, self.n, "", None, "") - 1
        except InputError:
            return _INVALID

    def read_line(self, text: str, number: int, kind: int) -> None:
        """A ``#`` line: the header lines ``# NUMBER ALTERNATIVES: n`` and ``# ALTERNATIVE
        NAME i: name`` are read, other comments skipped."""
        match = _HEADER.match(text.strip())
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

    def before_ballots(self, number: int) -> None:
        if self.n is None:
            raise InputError(
                "ballot before the '# NUMBER ALTERNATIVES: n' header line",
                path=self.path,
                field=f"line {number}",
            )

    def bodies(
        self, buf: np.ndarray, b0: np.ndarray, b1: np.ndarray, lines: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tok_start, tok_end, owner, group, edge, braced, unbalanced, separated = _body_tokens(
            buf, b0, b1, _SEPARATOR
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

    def parse_ballot(self, body: str, field: str) -> None:
        parse_ballot(body, self.n, self.kind, self.path, field)

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
