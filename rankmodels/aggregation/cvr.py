"""Cast-vote records (CVR): the rank-column CSV that US cities publish for ranked-choice
contests, one row per ballot, one column per rank.

Format (for users in ``docs/aggregation.md``): a header whose rank columns are named
``rank1, rank2, ...`` or ``Choice 1, Choice 2, ...`` (case and a space or ``_`` before the
number do not matter; other columns such as a ballot id or precinct are ignored) and must
appear left to right as 1, 2, ..., K; optional ballot-count column (``count`` unless
:attr:`CvrConventions.count_column` says otherwise; positive numbers, default 1). A cell
holds a candidate's name or a marker.

Rank columns may carry the contest around the number, as New York City's records do:
``DEM Mayor Choice 1 of 5 Citywide (026916)``. Columns with the same text before and after
the number (case and surrounding spaces aside) and the same ``of N`` form one contest
(:func:`contests`), whose ranks must be 1..N; a file with several contests is read for the
one :attr:`CvrConventions.contest` names.

Conventions of real ranked-choice rules (all markers compared case-insensitively, after
stripping spaces; see :class:`CvrConventions`):

* **skipped rank / undervote** (an empty cell or e.g. ``undervote``): passed over, the
  ballot continues with its next rank -- or, with :attr:`CvrConventions.max_skipped_ranks`
  ``= k``, a run of more than ``k`` consecutive skipped ranks ends the ballot there (Maine,
  ``k = 1``: "2 or more sequential skipped rankings before its highest continuing ranking"
  exhaust it, [Maine723A] sub-§1 ¶D);
* **overvote** (``overvote``: the voter marked several candidates at one rank): the ballot
  stops there -- it exhausts when the count reaches that rank -- or, with
  ``overvote_exhausts=False``, the rank is passed over like a skipped one;
* **duplicate candidate** (ranked again lower down): the first occurrence counts, the
  others are passed over;
* **write-in** (``write-in``): one candidate named ``Write-in`` collecting all write-ins;
* a ballot that ranks nobody (every rank skipped, or an overvote at rank 1) is left out:
  it takes no part in the contest.

Everything else on the ballot is strict: the result is a truncated ranking, the candidates
it does not reach are unranked.

The file is read as the votes CSV is (:mod:`.csv_common`): in chunks, distinct cells
classified once, first bad line parsed again to report it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from rankmodels.aggregation.csv_common import UNKNOWN, CsvReader, DistinctValues, Records
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.stream import CHUNK_BYTES, Progress, file_chunks, run, text_chunks
from rankmodels.errors import InputError

__all__ = [
    "WRITE_IN",
    "Contest",
    "CvrConventions",
    "contests",
    "parse_cvr",
    "rank_columns",
    "read_cvr",
]

WRITE_IN = "Write-in"
"""The candidate every write-in counts for."""

_RANK = re.compile(
    r"^(?P<before>.*?)(?<![a-z])(?:rank|choice)[ _]?(?P<rank>\d+)(?:\s+of\s+(?P<of>\d+))?"
    r"(?P<after>(?:[^a-z0-9].*)?)$",
    re.IGNORECASE | re.DOTALL,
)
_SKIP, _OVER = -1, -3  # cell codes besides candidate indices and UNKNOWN


@dataclass(frozen=True)
class CvrConventions:
    """How to read the cells of a cast-vote record.

    ``skipped``, ``overvote``, ``write_in``: the markers of a skipped rank (an empty cell
    always is one), an overvote and a write-in; ``overvote_exhausts``: an overvote ends the
    ballot (True) or is passed over (False); ``max_skipped_ranks``: ``None`` passes over any
    number of skipped ranks, ``k`` ends the ballot at a run of more than ``k`` consecutive
    ones (Maine: 1); ``count_column``: the name of the optional ballot-count column;
    ``contest``: part of the rank columns' names that picks one contest when the header has
    several (case ignored).
    """

    skipped: tuple[str, ...] = ("skipped", "undervote")
    overvote: tuple[str, ...] = ("overvote",)
    write_in: tuple[str, ...] = ("write-in", "writein")
    overvote_exhausts: bool = True
    count_column: str = "count"
    max_skipped_ranks: int | None = None
    contest: str | None = None

    def __post_init__(self) -> None:
        if self.max_skipped_ranks is not None and self.max_skipped_ranks < 0:
            raise ValueError(
                f"max_skipped_ranks must be None or at least 0, got {self.max_skipped_ranks}"
            )
        seen: dict[str, str] = {}
        for kind in ("skipped", "overvote", "write_in"):
            for marker in getattr(self, kind):
                key = marker.strip().casefold()
                if key in seen and seen[key] != kind:
                    raise ValueError(f"marker {marker!r} is both {seen[key]} and {kind}")
                seen[key] = kind


@dataclass(frozen=True)
class Contest:
    """The rank columns of one contest: ``columns`` holds ``(column, rank)`` left to right,
    ``of`` the ``N`` of ``Choice k of N`` (``None`` without it), ``label`` the first
    column's name with its rank written ``K`` (``DEM Mayor Choice K of 5``)."""

    label: str
    of: int | None
    columns: tuple[tuple[int, int], ...]


def contests(header: Sequence[str]) -> list[Contest]:
    """The header's rank columns grouped by contest (the text around the rank number, case
    and surrounding spaces aside, and ``of N``), in order of first appearance."""
    found: dict[tuple[str, str, str | None], list[tuple[int, int, str]]] = {}
    for col, name in enumerate(header):
        match = _RANK.match(name.strip())
        if match:
            key = (
                match["before"].strip().casefold(),
                match["after"].strip().casefold(),
                match["of"] and str(int(match["of"])),
            )
            label = name.strip()[: match.start("rank")] + "K" + name.strip()[match.end("rank") :]
            found.setdefault(key, []).append((col, int(match["rank"]), label))
    return [
        Contest(cols[0][2], None if key[2] is None else int(key[2]), tuple(c[:2] for c in cols))
        for key, cols in found.items()
    ]


def rank_columns(header: Sequence[str]) -> list[tuple[int, int]]:
    """``(column, rank)`` of every rank column of the header (``rank3`` -> rank 3), left to
    right, whatever their contest."""
    return sorted(c for contest in contests(header) for c in contest.columns)


def read_cvr(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
    conventions: CvrConventions | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Profile:
    """Read the cast-vote record at ``path`` into a :class:`Profile` (``candidates``: the
    only names allowed, in this order; ``progress`` hears of the bytes read)."""
    with open(path, "rb") as handle:
        chunks = file_chunks(handle, progress, chunk_bytes)
        return _read(chunks, path, candidates, conventions or CvrConventions())


def parse_cvr(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None = None,
    candidates: Sequence[str] | None = None,
    conventions: CvrConventions | None = None,
) -> Profile:
    """Parse cast-vote-record text from its lines (``path`` only names it in errors)."""
    return _read(text_chunks(lines), path, candidates, conventions or CvrConventions())


def _read(
    chunks: Iterable[bytes],
    path: str | os.PathLike[str] | None,
    candidates: Sequence[str] | None,
    conventions: CvrConventions,
) -> Profile:
    reader = _Cvr(path, candidates, conventions)
    run(reader, chunks)
    return reader.profile()


@numba.njit(cache=True)
def _ballot_keys(
    codes: np.ndarray, overvote_exhausts: bool, max_skipped: int, n: int
) -> tuple:  # pragma: no cover
    """Prefix keys (:mod:`.ballot_table`) of ``(R, K)`` cell codes, one ballot per row:
    skipped ranks and repeated candidates passed over, an overvote ending the ballot or
    passed over, a run of more than ``max_skipped`` skipped ranks ending it (``-1``: no
    limit). Returns ``(data, offsets, ranked, unknown)``."""
    R, K = codes.shape
    data = np.empty(R * K, np.int32)
    offsets = np.zeros(R + 1, np.int64)
    ranked = np.zeros(R, np.int64)
    unknown = np.zeros(R, np.bool_)
    stamp = np.full(max(n, 1), -1, np.int64)
    d = 0
    for r in range(R):
        start = d
        exhausted = False  # later cells are still checked for names
        skipped = 0  # the current run of skipped ranks
        for k in range(K):
            c = codes[r, k]
            skipped = skipped + 1 if c == _SKIP else 0
            if max_skipped >= 0 and skipped > max_skipped:
                exhausted = True
            if c == UNKNOWN:
                unknown[r] = True
            elif c == _OVER:
                exhausted |= overvote_exhausts
            elif c >= 0 and not exhausted and stamp[c] != r:
                stamp[c] = r
                data[d] = 2 * c + 1
                d += 1
        ranked[r] = d - start
        offsets[r + 1] = d
    return data[:d], offsets, ranked, unknown


class _Cvr(CsvReader):
    """Reads a cast-vote record chunk by chunk (a :class:`.stream.ChunkReader`)."""

    what = "a header with rank columns (rank1, rank2, ... or Choice 1, Choice 2, ...)"

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        candidates: Sequence[str] | None,
        conventions: CvrConventions,
    ) -> None:
        super().__init__(path, candidates)
        self.conventions = conventions
        self.markers = {m.strip().casefold(): _SKIP for m in ("", *conventions.skipped)}
        self.markers |= {m.strip().casefold(): _OVER for m in conventions.overvote}
        self.write_in = {m.strip().casefold() for m in conventions.write_in}
        self.cells = DistinctValues(self._cell_code)
        self.ranks: list[int] = []
        self.counted = 0.0

    def _name(self, text: str) -> str | int:
        """The candidate a cell names, or its marker code."""
        key = text.strip().casefold()
        if key in self.markers:
            return self.markers[key]
        return WRITE_IN if key in self.write_in else text.strip()

    def _cell_code(self, text: str) -> int:
        name = self._name(text)
        return name if isinstance(name, int) else self.names.code(name)

    def read_header(self, header: list[str], line: int) -> None:
        contest = self._contest(header, line)
        for expected, (col, rank) in enumerate(contest.columns, start=1):
            if rank != expected:
                raise InputError(
                    f"rank columns out of order: column {col + 1} is {header[col].strip()!r} "
                    f"where rank {expected} was expected (ranks must be 1, 2, ... left to right)",
                    path=self.path,
                    field=f"line {line}",
                )
        if contest.of is not None and len(contest.columns) != contest.of:
            raise InputError(
                f"contest {contest.label!r} has {len(contest.columns)} rank columns, but they "
                f"say 'of {contest.of}'",
                path=self.path,
                field=f"line {line}",
            )
        self.ranks = [col for col, _ in contest.columns]
        columns = [c.strip().casefold() for c in header]
        wanted = self.conventions.count_column.strip().casefold()
        self.col_count = columns.index(wanted) if wanted in columns else None

    def _contest(self, header: list[str], line: int) -> Contest:
        """The contest to read: the only one, or the one the conventions name."""
        found = contests(header)
        where = {"path": self.path, "field": f"line {line}"}
        if not found:
            raise InputError(
                f"header {','.join(header)!r} has no rank columns "
                "(rank1, rank2, ... or Choice 1, Choice 2, ...)",
                **where,
            )
        wanted = self.conventions.contest
        labels = ", ".join(repr(c.label) for c in found)
        if wanted is None:
            if len(found) > 1:
                raise InputError(
                    f"the header has rank columns of {len(found)} contests ({labels}); "
                    "name one by a part of its column names (--contest)",
                    **where,
                )
            return found[0]
        chosen = [c for c in found if wanted.strip().casefold() in c.label.casefold()]
        if len(chosen) != 1:
            which = "no contest" if not chosen else f"{len(chosen)} contests"
            raise InputError(f"contest {wanted!r} matches {which} of {labels}", **where)
        return chosen[0]

    def records(self, rec: Records) -> None:
        ok = rec.nfields == len(self.header)
        counts = self.record_counts(rec, ok)
        starts, ends = (a.ravel() for a in rec.columns(self.ranks, ok))  # record by record
        codes = self.cells.lookup(rec.out, starts, ends, np.int64).reshape(-1, len(self.ranks))
        limit = self.conventions.max_skipped_ranks
        data, offsets, ranked, unknown = _ballot_keys(
            codes,
            self.conventions.overvote_exhausts,
            -1 if limit is None else limit,
            len(self.names.index),
        )
        ok &= ~unknown
        self.check(rec, ok, counts)
        counts = np.where(ranked > 0, counts, 0.0)  # a ballot ranking nobody is left out
        self.counted += counts.sum()
        self.table.count(self.table.add(data, offsets), counts)

    def explain(self, rec: Records, r: int, field: str) -> None:
        cells = rec.cells(r)
        for col in self.ranks:
            name = self._name(cells[col])
            if isinstance(name, str) and name not in self.names.index:
                raise InputError(
                    f"unknown candidate {name!r} in column {self.header[col].strip()!r}",
                    path=self.path,
                    field=field,
                )

    def profile(self) -> Profile:
        if self.header is not None and len(self.table) and not self.counted:
            raise InputError("no ballot ranks any candidate", path=self.path)
        return super().profile()
