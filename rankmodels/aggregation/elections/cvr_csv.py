"""Rank-column cast-vote records (``rank1, rank2, ...`` or ``Choice 1, ...`` CSV, the
format of :mod:`rankmodels.aggregation.cvr`) read as cast: each cell's mark kept for the
count (:mod:`.ballots`), no convention applied while reading.

Cells are compared as :class:`~rankmodels.aggregation.cvr.CvrConventions` says (markers
case-insensitively after stripping spaces): an empty cell or a skipped marker is an
unmarked rank, an overvote marker an :data:`~.ballots.OVERVOTE` mark, a write-in marker a
vote for :data:`~.ballots.UNDECLARED_WRITE_INS`, anything else a candidate (new names are
added in order of appearance, or must be among ``candidates``). The optional count column
gives each row's number of ballots (a positive integer). Equal lines are merged before
they are parsed: memory and parsing grow with the distinct ballots; the whole file streams
by once (twice when a quoted field spans lines; once more to name the line of an error).
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

from rankmodels.aggregation.cvr import CvrConventions, contests
from rankmodels.aggregation.elections.ballots import (
    OVERVOTE,
    UNDECLARED_WRITE_INS,
    BallotCounter,
    CastBallots,
    ranking_from_marks,
)
from rankmodels.errors import InputError

__all__ = ["read_cvr_ballots"]


def read_cvr_ballots(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    conventions: CvrConventions | None = None,
    write_ins_last: bool = True,
) -> CastBallots:
    """The ballots of the rank-column record at ``path``, as cast; undeclared write-ins
    are the last candidate, or with ``write_ins_last`` False where they first appear."""
    path = Path(path)
    conv = conventions or CvrConventions()
    skipped = {m.strip().casefold() for m in ("", *conv.skipped)}
    overvote = {m.strip().casefold() for m in conv.overvote}
    write_in = {m.strip().casefold() for m in conv.write_in}
    names: list[str] = list(candidates or [])
    code = {name: i for i, name in enumerate(names)}
    counter = BallotCounter()
    marks_of: dict[str, int | None] = {}  # cell -> its mark

    def mark(text: str, row: Sequence[str], column: str) -> int | None:
        key = text.strip().casefold()
        if key in skipped:
            return None
        if key in overvote:
            return OVERVOTE
        name = UNDECLARED_WRITE_INS if key in write_in else text.strip()
        if name not in code:
            if candidates is not None and name != UNDECLARED_WRITE_INS:
                raise InputError(
                    f"unknown candidate {name!r} in column {column!r}",
                    path=path,
                    field=_line_of(path, row),
                )
            code[name] = len(names)
            names.append(name)
        return code[name]

    with open(path, newline="", encoding="utf-8-sig") as handle:
        header = next(csv.reader(handle), None)
        if header is None:
            raise InputError("empty file: expected a header with rank columns", path=path)
        rows = _distinct_rows(handle)
    if rows is None:  # a quoted field spans lines: merge parsed rows instead
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            next(reader)
            rows = Counter(map(tuple, reader)).items()
    found = contests(header)
    if conv.contest is not None:
        found = [c for c in found if conv.contest.strip().casefold() in c.label.casefold()]
    if len(found) != 1:
        raise InputError(
            f"expected the rank columns of one contest, found {len(found)}"
            + ("" if conv.contest else " (name one with --contest)"),
            path=path,
            field="line 1",
        )
    columns = found[0].columns
    increasing = all(a[1] < b[1] for a, b in pairwise(columns))
    # per rank column, cell -> its (rank, marks) pair, one object per pair: the rankings
    # share them, so a distinct ballot costs little more than its tuple
    cells = [(col, rank, {}) for col, rank in columns]
    shared: dict[tuple[int, int], tuple[int, tuple[int]]] = {}
    lowered = [h.strip().casefold() for h in header]
    wanted = conv.count_column.strip().casefold()
    count_col = lowered.index(wanted) if wanted in lowered else None
    for row, times in rows:
        if not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise InputError(
                f"{len(row)} fields where the header has {len(header)}",
                path=path,
                field=_line_of(path, row),
            )
        try:
            marked = tuple(filter(None, [pairs[row[col]] for col, _, pairs in cells]))
        except KeyError:  # a cell not seen before in its column
            for col, rank, pairs in cells:
                if row[col] not in pairs:
                    if row[col] not in marks_of:
                        marks_of[row[col]] = mark(row[col], row, header[col].strip())
                    x = marks_of[row[col]]
                    pairs[row[col]] = x if x is None else shared.setdefault((rank, x), (rank, (x,)))
            marked = tuple(filter(None, [pairs[row[col]] for col, _, pairs in cells]))
        count = 1
        if count_col is not None:
            try:
                count = int(row[count_col])
            except ValueError:
                count = 0
            if count < 1:
                raise InputError(
                    f"count must be a positive integer, got {row[count_col]!r}",
                    path=path,
                    field=_line_of(path, row),
                )
        if not increasing:  # two columns of one rank: marks merged at their rank
            marked = ranking_from_marks((rank, xs[0]) for rank, xs in marked)
        counter.add(marked, count * times)
    last = len(names) - 1
    if write_ins_last and UNDECLARED_WRITE_INS in code and code[UNDECLARED_WRITE_INS] != last:
        return _write_ins_last(counter.ballots(names))
    return counter.ballots(names)


def _distinct_rows(lines: Iterable[str]) -> Iterable[tuple[list[str], int]] | None:
    """The distinct rows of ``lines`` (a header's followers), each with how often it
    occurs: equal lines are merged before they are parsed, so a large record is parsed
    once per distinct ballot. ``None`` when a quoted field spans lines (a line with an
    odd number of quotes)."""
    distinct = Counter(lines)
    if any(line.count('"') % 2 for line in [x for x in distinct if '"' in x]):
        return None
    return zip(csv.reader(distinct), distinct.values(), strict=True)


def _line_of(path: Path, row: Sequence[str]) -> str:
    """``line N``: where ``row`` first occurs in the record (to name a bad row)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for line, other in enumerate(csv.reader(handle), start=1):
            if line > 1 and other == list(row):
                return f"line {line}"
    return "a row"


def _write_ins_last(ballots: CastBallots) -> CastBallots:
    """The same ballots with undeclared write-ins recoded as the last candidate."""
    old = ballots.candidates.index(UNDECLARED_WRITE_INS)
    names = [n for n in ballots.candidates if n != UNDECLARED_WRITE_INS] + [UNDECLARED_WRITE_INS]
    new = {i: names.index(n) for i, n in enumerate(ballots.candidates)}
    new[OVERVOTE] = OVERVOTE
    assert new[old] == len(names) - 1
    counter = BallotCounter()
    for ranking, count in zip(ballots.rankings, ballots.counts, strict=True):
        counter.add(ranking_from_marks((r, new[x]) for r, xs in ranking for x in xs), int(count))
    return counter.ballots(names)
