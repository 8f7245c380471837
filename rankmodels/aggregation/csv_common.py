"""What the CSV readers (:mod:`.votes_csv`, :mod:`.cvr`) share: the chunked record loop,
the header, counts, names, and locating the first bad record.

:class:`CsvReader` is a :class:`.stream.ChunkReader`: each chunk is split into records by
:func:`.scan.csv_records` (``csv.reader``'s rules), checked for UTF-8, numbered by line, and
its blank records are dropped; the first record left is the header (:meth:`read_header`),
the others go to :meth:`records` as a :class:`Records` batch. A subclass validates a batch
with vectorised flags and calls :meth:`check`, which raises the error of the first bad record
by having :meth:`explain` parse it on its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import MAYBE_BLANK, csv_records, intern_spans
from rankmodels.aggregation.stream import check_utf8
from rankmodels.errors import InputError

__all__ = [
    "UNKNOWN",
    "first_record",
    "CsvReader",
    "DistinctValues",
    "Names",
    "Records",
    "add_count",
    "decode",
    "parse_count",
    "running_totals",
]

UNKNOWN = -2
"""Code of a name that is not in a fixed candidate list."""


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
            return UNKNOWN
        self.index[name] = len(self.index)
        return self.index[name]

    @property
    def list(self) -> list[str]:
        return list(self.index)


@dataclass(frozen=True)
class Records:
    """A batch of CSV records from :func:`.scan.csv_records` (blank ones and the header
    removed): record ``r`` holds fields ``first[r] ..`` ``first[r] + nfields[r] - 1`` of
    ``out`` and ends on file line ``line[r]``."""

    out: np.ndarray
    field_end: np.ndarray
    first: np.ndarray
    nfields: np.ndarray
    line: np.ndarray

    def column(self, col: int, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, ends)`` of column ``col`` in the records where ``ok`` (empty spans
        elsewhere: those records have too few fields or are bad already)."""
        starts, ends = self.columns([col], ok)
        return starts[:, 0], ends[:, 0]

    def columns(self, cols: Sequence[int], ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, ends)``, shape ``(records, len(cols))``, of columns ``cols`` in the
        records where ``ok`` (empty spans elsewhere), all columns at once."""
        fields = np.where(ok[:, None], self.first[:, None] + np.asarray(cols), 0)
        starts, ends = csv_fields(self.out, self.field_end, fields)
        return np.where(ok[:, None], starts, 0), np.where(ok[:, None], ends, 0)

    def cells(self, r: int) -> list[str]:
        return record_cells(self.out, self.field_end, int(self.first[r]), int(self.nfields[r]))


def first_record(path: str | os.PathLike[str], limit: int = 1 << 20) -> list[str] | None:
    """The first non-blank record of a CSV file (its header), read from at most ``limit``
    bytes; ``None`` when there is none there. Bytes that are not UTF-8 are replaced (the
    reader reports them)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    data = data.removeprefix(b"\xef\xbb\xbf")
    buf = np.frombuffer(data[:limit], np.uint8)
    out, field_end, first, nfields, _, content, _, _ = csv_records(buf, len(data) <= limit)
    for r in range(first.size):
        cells = [
            out[a:b].tobytes().decode("utf-8", "replace")
            for a, b in zip(
                *csv_fields(out, field_end, np.arange(first[r], first[r] + nfields[r])), strict=True
            )
        ]
        if any(cell.strip() for cell in cells):
            return cells
    return None


class CsvReader:
    """Reads a CSV vote file chunk by chunk; subclasses read the header and the records."""

    what = "a header"  # what an empty file lacks, for the error message

    def __init__(self, path: str | os.PathLike[str] | None, candidates: Sequence[str] | None):
        self.path = path
        self.names = Names(candidates)
        self.counts = DistinctValues(_checked_count)
        self.table = BallotTable()
        self.header: list[str] | None = None
        self.col_count: int | None = None
        self.total = 0.0
        self.line = 0  # lines before the current chunk

    def feed(self, buf: np.ndarray, final: bool, offset: int) -> int:
        out, field_end, first, nfields, line, content, used, lines = csv_records(buf, final)
        check_utf8(buf[:used], offset, self.line + 1, self.path)
        line = line + self.line
        self.line += lines
        keep = np.flatnonzero(resolve_blank(out, field_end, (first, nfields, content)))
        if self.header is None and keep.size:
            r = keep[0]
            header = record_cells(out, field_end, int(first[r]), int(nfields[r]))
            self.read_header(header, int(line[r]))
            self.header = header
            keep = keep[1:]
        if keep.size:
            self.records(Records(out, field_end, first[keep], nfields[keep], line[keep]))
        return used

    def read_header(self, header: list[str], line: int) -> None:
        raise NotImplementedError

    def records(self, rec: Records) -> None:
        raise NotImplementedError

    def explain(self, rec: Records, r: int, field: str) -> None:
        """Raise the error of record ``r`` beyond its field count, count and total."""
        raise NotImplementedError

    def record_counts(self, rec: Records, ok: np.ndarray) -> np.ndarray:
        """The count of each record (1 without a count column); NaN where it is not a
        positive number, and ``ok`` cleared there."""
        if self.col_count is None:
            return np.ones(rec.first.size)
        counts = self.counts.lookup(rec.out, *rec.column(self.col_count, ok), np.float64)
        ok &= ~np.isnan(counts)
        return counts

    def check(self, rec: Records, ok: np.ndarray, counts: np.ndarray) -> None:
        """Raise for the first record that is bad or makes the total overflow; otherwise add
        the counts to the running total."""
        bad = int(np.argmin(ok)) if not ok.all() else ok.size
        totals = running_totals(self.total, counts[:bad])
        over = np.flatnonzero(totals[1:] > sys.float_info.max)
        if over.size or bad < ok.size:
            r = int(over[0]) if over.size else bad
            self._explain(rec, r, float(totals[r]))
        self.total = float(totals[-1])

    def _explain(self, rec: Records, r: int, total: float) -> NoReturn:
        """Parse record ``r`` on its own, as a line-by-line reader would, and raise its error."""
        row = rec.cells(r)
        field = f"line {int(rec.line[r])}"
        if len(row) != len(self.header):
            raise InputError(
                f"expected {len(self.header)} fields as in the header, got {len(row)}",
                path=self.path,
                field=field,
            )
        if self.col_count is not None:
            count = parse_count(row[self.col_count], self.path, field)
            add_count(total, count, self.path, field)
        self.explain(rec, r, field)
        raise AssertionError(f"{self.path}: {field} was flagged as bad but parses")

    def profile(self) -> Profile:
        if self.header is None:
            raise InputError(f"empty file; expected {self.what}", path=self.path)
        if not len(self.table):
            raise InputError("no ballots after the header", path=self.path)
        return self.table.profile(self.names.list)
