"""RCTab's generic CSV cast-vote records: one column per candidate, one row per ballot.

The first line is the header: from the column ``first_vote_column`` (counting from 1) on,
each header cell is a candidate (matched to the config's names and aliases; the column
headed by the undeclared write-in label is undeclared write-ins) and each cell of a
ballot's row the rank the voter gave that candidate, a whole number from 1, or blank
(not ranked). Two candidates with one rank are an overvote, a candidate with two ranks is
ranked twice, exactly as on a ranked ballot. Ballots start at row ``first_vote_row``
(counting the header as row 1; default 2). A row may be shorter than the header (missing
cells are blank), not longer. Rows stream by and equal rows are merged, so memory holds
the distinct ballots.
"""

from __future__ import annotations

import csv

from rankmodels.aggregation.elections.ballots import BallotCounter, Ranking, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_generic_csv"]


def read_generic_csv(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    """Add the ballots of the generic CSV ``source`` to ``counter`` (UTF-8)."""
    try:
        _read(source, names, counter)
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text: {err}", path=source.path) from None


def _read(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    path = source.path
    first_column = (source.first_vote_column or 1) - 1
    first_row = source.first_vote_row or 2
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or len(header) <= first_column:
            raise InputError(
                f"no candidate columns from column {first_column + 1} (firstVoteColumnIndex)",
                path=path,
                field="line 1",
            )
        codes = [_code(h, source, names) for h in header[first_column:]]
        seen: dict[tuple[str, ...], Ranking] = {}
        for line, row in enumerate(reader, start=2):
            if line < first_row:
                continue
            if len(row) > len(header):
                raise InputError(
                    f"{len(row)} fields where the header has {len(header)}",
                    path=path,
                    field=f"line {line}",
                )
            cells = tuple(row[first_column:])
            ranking = seen.get(cells)
            if ranking is None:
                ranking = seen[cells] = _ranking(cells, codes, header, first_column, path, line)
            counter.add(ranking)


def _code(header: str, source: Source, names: CandidateNames) -> int:
    if source.write_in_label and header.strip() == source.write_in_label:
        code = names.write_in
    else:
        code = names.lookup(header)
    if code is None:
        raise InputError(
            f"column {header!r} is not a candidate of the config", path=source.path, field="line 1"
        )
    return code


def _ranking(
    cells: tuple[str, ...], codes: list[int], header: list[str], first: int, path, line: int
) -> Ranking:
    marks = []
    for cell, code, column in zip(cells, codes, header[first:], strict=False):
        text = cell.strip()
        if not text:
            continue
        if not (text.isascii() and text.isdigit()) or int(text) < 1:
            raise InputError(
                f"column {column!r}: expected a rank (a whole number from 1), got {cell!r}",
                path=path,
                field=f"line {line}",
            )
        marks.append((int(text), code))
    return ranking_from_marks(marks)
