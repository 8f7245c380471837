"""The votes CSV reader: one ballot type per row, ``ranking`` like ``A>B=C>D``.

Format (described for users in ``docs/aggregation.md``): a header row, then one row per
ballot type. Column ``ranking`` holds candidates best first separated by ``>``, ties joined
by ``=``; optional column ``count`` (positive number, default 1). Candidates a ballot leaves
out are unranked: tied below all ranked ones. The candidate set is every name that appears,
in order of first appearance, unless the caller passes the candidate list (then other names
are errors). Rows whose cells are all blank are skipped.

The file is read in chunks (:mod:`.stream`) and split into records by
:func:`.scan.csv_records`, which follows ``csv.reader`` exactly. Only *distinct* texts reach
Python: ranking texts are split into names in a compiled loop, each distinct name and each
distinct count is parsed once, and the ballots are merged in a :class:`.BallotTable`.
Validation is vectorised; the first bad row is then parsed again on its own
(:meth:`_VotesCsv.explain`) to raise the error with its message and line number.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable, group_keys
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import MAYBE_BLANK, csv_records, intern_spans
from rankmodels.aggregation.stream import (
    CHUNK_BYTES,
    Progress,
    check_utf8,
    file_chunks,
    run,
    text_chunks,
)
from rankmodels.errors import InputError

__all__ = [
    "NAME_OK",
    "add_count",
    "csv_fields",
    "parse_count",
    "parse_votes_csv",
    "read_votes_csv",
]

NAME_OK = re.compile(r"^[^<>=,\n]+$")
"""What a candidate name in a votes CSV may be (after stripping spaces)."""

_INVALID, _UNKNOWN = -1, -2  # token codes besides candidate indices


def read_votes_csv(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Profile:
    """Read the votes CSV at ``path`` into a :class:`Profile`; ``progress`` hears of the bytes
    read, ``chunk_bytes`` is how many are read at a time."""
    with open(path, "rb") as handle:
        return _read(file_chunks(handle, progress, chunk_bytes), path, candidates)


def parse_votes_csv(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None = None,
    candidates: Sequence[str] | None = None,
) -> Profile:
    """Parse votes CSV text from its lines (an open handle; ``path`` only names it in
    errors)."""
    return _read(text_chunks(lines), path, candidates)


def _read(
    chunks: Iterable[bytes], path: str | os.PathLike[str] | None, candidates: Sequence[str] | None
) -> Profile:
    reader = _VotesCsv(path, candidates)
    run(reader, chunks)
    return reader.profile()


# --------------------------------------------------------------------------- shared pieces
def csv_fields(
    out: np.ndarray, field_end: np.ndarray, fields: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of field numbers ``fields`` in the buffer of
    :func:`.scan.csv_records`."""
    ends = field_end[fields]
    starts = np.where(fields > 0, field_end[np.maximum(fields - 1, 0)], 0)
    return starts, ends


def decode(out: np.ndarray, start: int, end: int) -> str:
    """The text of ``out[start:end]`` (checked UTF-8 already)."""
    return out[start:end].tobytes().decode("utf-8")


def record_cells(out: np.ndarray, field_end: np.ndarray, first: int, count: int) -> list[str]:
    """The cells of one record as strings."""
    starts, ends = csv_fields(out, field_end, np.arange(first, first + count))
    return [decode(out, int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def resolve_blank(
    out: np.ndarray, field_end: np.ndarray, rec: tuple[np.ndarray, ...]
) -> np.ndarray:
    """Which records are not blank: a record is blank when every cell is whitespace (records
    with non-ASCII bytes among whitespace are decided by ``str.strip``)."""
    first, nfields, content = rec
    keep = content != 0
    for r in np.flatnonzero(content == MAYBE_BLANK):
        cells = record_cells(out, field_end, int(first[r]), int(nfields[r]))
        keep[r] = any(cell.strip() for cell in cells)
    return keep


def parse_count(text: str, path: object, field: str) -> float:
    """A ballot count: a positive finite number."""
    try:
        value = float(text.strip())
    except ValueError:
        raise InputError(
            f"count {text.strip()!r} is not a number", path=path, field=field
        ) from None
    if not value > 0 or value == float("inf"):
        raise InputError(
            f"count must be a positive number, got {text.strip()!r}", path=path, field=field
        )
    return value


def add_count(total: float, count: float, path: object, field: str) -> float:
    """``total + count``, which must stay a finite float (the profile normalises by it)."""
    total += count
    if total > sys.float_info.max:
        raise InputError(
            f"the counts add up to more than {sys.float_info.max:.3g}, the largest float; "
            "scale them down",
            path=path,
            field=field,
        )
    return total


def running_totals(total: float, counts: np.ndarray) -> np.ndarray:
    """``total, total + counts[0], ...`` added one at a time, as a loop over the lines
    would (so the first line whose total overflows is the same)."""
    with np.errstate(over="ignore"):  # an overflow is what the caller looks for
        return np.cumsum(np.concatenate(([total], counts)))


class DistinctValues:
    """Python's verdict on each distinct byte string, remembered across chunks."""

    def __init__(self, convert) -> None:
        self._convert = convert
        self._known: dict[bytes, object] = {}

    def lookup(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, dtype) -> np.ndarray:
        """``convert(text)`` for every span, computed once per distinct text."""
        ids, first = intern_spans(buf, starts, ends)
        values = np.empty(first.size, dtype=dtype)
        for k, i in enumerate(first):
            raw = buf[starts[i] : ends[i]].tobytes()
            value = self._known.get(raw)
            if value is None:
                value = self._known[raw] = self._convert(raw.decode("utf-8"))
            values[k] = value
        return values[ids]


def _checked_count(text: str) -> float:
    try:
        return parse_count(text, None, "")
    except InputError:
        return float("nan")


# --------------------------------------------------------------------------- ranking texts
@numba.njit(cache=True)
def _ranking_tokens(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple:  # pragma: no cover
    """Split each text at ``>`` (next group) and ``=`` (same group). Returns ``(tok_start,
    tok_end, owner, group, has_lt)``: token spans, the text and group of each token, and
    whether each text holds a ``<``."""
    m = starts.size
    bound = m
    for i in range(m):
        for p in range(starts[i], ends[i]):
            if buf[p] == 62 or buf[p] == 61:
                bound += 1
    tok_start = np.empty(bound, np.int64)
    tok_end = np.empty(bound, np.int64)
    owner = np.empty(bound, np.int64)
    group = np.empty(bound, np.int64)
    has_lt = np.zeros(m, np.bool_)
    t = 0
    for i in range(m):
        g = 0
        begin = starts[i]
        for p in range(starts[i], ends[i]):
            c = buf[p]
            if c == 62 or c == 61:  # '>' or '='
                tok_start[t], tok_end[t], owner[t], group[t] = begin, p, i, g
                t += 1
                g += c == 62
                begin = p + 1
            elif c == 60:  # '<'
                has_lt[i] = True
        tok_start[t], tok_end[t], owner[t], group[t] = begin, ends[i], i, g
        t += 1
    return tok_start, tok_end, owner, group, has_lt


def parse_ranking(text: str, path: object, field: str) -> list[list[str]]:
    """The tie groups of names in a ranking text (``A>B=C``), checked."""
    text = text.strip()
    if not text:
        raise InputError(
            "empty ranking; expected candidates separated by '>'", path=path, field=field
        )
    if "<" in text:
        raise InputError(
            f"ranking {text!r} uses '<'; write candidates best first with '>'",
            path=path,
            field=field,
        )
    groups = []
    seen: set[str] = set()
    for part in text.split(">"):
        group = []
        for raw in part.split("="):
            name = raw.strip()
            if not name or not NAME_OK.match(name):
                raise InputError(
                    f"malformed ranking {text!r}: empty candidate name between separators",
                    path=path,
                    field=field,
                )
            if name in seen:
                raise InputError(
                    f"candidate {name!r} appears twice in ranking {text!r}",
                    path=path,
                    field=field,
                )
            seen.add(name)
            group.append(name)
        groups.append(group)
    return groups


class Names:
    """Candidate names and their indices: fixed by the caller, or growing in order of first
    appearance."""

    def __init__(self, candidates: Sequence[str] | None) -> None:
        self.fixed = candidates is not None
        self.index: dict[str, int] = {c: i for i, c in enumerate(candidates or [])}

    def code(self, name: str) -> int:
        """The index of ``name``, a new one when the list is not fixed, else ``-2``."""
        if name in self.index:
            return self.index[name]
        if self.fixed:
            return _UNKNOWN
        self.index[name] = len(self.index)
        return self.index[name]

    @property
    def list(self) -> list[str]:
        return list(self.index)


class _VotesCsv:
    """Reads a votes CSV chunk by chunk (a :class:`.stream.ChunkReader`)."""

    def __init__(self, path: str | os.PathLike[str] | None, candidates: Sequence[str] | None):
        self.path = path
        self.names = Names(candidates)
        self.tokens = DistinctValues(self._token_code)
        self.counts = DistinctValues(_checked_count)
        self.table = BallotTable()
        self.header: list[str] | None = None
        self.col_ranking = 0
        self.col_count: int | None = None
        self.total = 0.0
        self.line = 0  # lines before the current chunk

    def _token_code(self, raw: str) -> int:
        name = raw.strip()
        if not name or not NAME_OK.match(name):
            return _INVALID
        return self.names.code(name)

    def feed(self, buf: np.ndarray, final: bool, offset: int) -> int:
        out, field_end, first, nfields, line, content, used, lines = csv_records(buf, final)
        check_utf8(buf[:used], offset, self.line + 1, self.path)
        line = line + self.line
        self.line += lines
        keep = np.flatnonzero(resolve_blank(out, field_end, (first, nfields, content)))
        if self.header is None and keep.size:
            r = keep[0]
            self._read_header(record_cells(out, field_end, int(first[r]), int(nfields[r])))
            keep = keep[1:]
        if keep.size:
            self._records(out, field_end, first[keep], nfields[keep], line[keep])
        return used

    def _read_header(self, header: list[str]) -> None:
        columns = [c.strip().lower() for c in header]
        if "ranking" not in columns:
            raise InputError(
                f"header {','.join(header)!r} has no 'ranking' column",
                path=self.path,
                field="line 1",
            )
        self.header = header
        self.col_ranking = columns.index("ranking")
        self.col_count = columns.index("count") if "count" in columns else None

    def _records(
        self, out: np.ndarray, field_end: np.ndarray, first: np.ndarray, nfields: np.ndarray,
        line: np.ndarray,
    ) -> None:  # fmt: skip
        width = len(self.header)
        ok = nfields == width
        if self.col_count is None:
            counts = np.ones(first.size)
        else:
            starts, ends = csv_fields(out, field_end, np.where(ok, first + self.col_count, 0))
            starts, ends = np.where(ok, starts, 0), np.where(ok, ends, 0)
            counts = self.counts.lookup(out, starts, ends, np.float64)
            ok &= ~np.isnan(counts)
        starts, ends = csv_fields(out, field_end, np.where(ok, first + self.col_ranking, 0))
        starts, ends = np.where(ok, starts, 0), np.where(ok, ends, 0)
        text_id, text_first = intern_spans(out, starts, ends)
        t0, t1 = starts[text_first], ends[text_first]
        tok_start, tok_end, owner, group, has_lt = _ranking_tokens(out, t0, t1)
        codes = self.tokens.lookup(out, tok_start, tok_end, np.int64)
        keep = np.ones(codes.size, dtype=bool)
        data, offsets, valid, _ = group_keys(
            owner, group, codes, keep, t0.size, len(self.names.index)
        )
        valid &= ~has_lt
        ok &= valid[text_id]
        self._check(ok, counts, lambda r: self._explain(out, field_end, first, nfields, line, r))
        self.table.count(self.table.add(data, offsets)[text_id], counts)

    def _check(self, ok: np.ndarray, counts: np.ndarray, explain) -> None:
        """Raise for the first record that is bad or makes the total overflow; otherwise add
        the counts to the running total."""
        bad = int(np.argmin(ok)) if not ok.all() else ok.size
        totals = running_totals(self.total, np.where(ok[:bad], counts[:bad], 0.0))
        over = np.flatnonzero(totals[1:] > sys.float_info.max)
        if over.size or bad < ok.size:
            r = int(over[0]) if over.size else bad
            self.total = float(totals[r])
            explain(r)
        self.total = float(totals[-1])

    def _explain(self, out, field_end, first, nfields, line, r: int) -> NoReturn:
        """Parse record ``r`` on its own, as a line-by-line reader would, and raise its error."""
        row = record_cells(out, field_end, int(first[r]), int(nfields[r]))
        field = f"line {int(line[r])}"
        path = self.path
        if len(row) != len(self.header):
            raise InputError(
                f"expected {len(self.header)} fields as in the header, got {len(row)}",
                path=path,
                field=field,
            )
        count = 1.0 if self.col_count is None else parse_count(row[self.col_count], path, field)
        add_count(self.total, count, path, field)
        for group in parse_ranking(row[self.col_ranking], path, field):
            for name in group:
                if name not in self.names.index:
                    raise InputError(f"unknown candidate {name!r}", path=path, field=field)
        raise AssertionError(f"{path}: {field} was flagged as bad but parses")

    def profile(self) -> Profile:
        if self.header is None:
            raise InputError(
                "empty file; expected a header with a 'ranking' column", path=self.path
            )
        if not len(self.table):
            raise InputError("no ballots after the header", path=self.path)
        return self.table.profile(self.names.list)
