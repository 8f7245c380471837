"""Clear Ballot cast-vote records (ClearVote's RCV CSV export).

One row per ballot; the first ten columns are ballot data (``RowNumber`` ... ``Remade``),
each further column one *(candidate, rank)* choice, its header
``Choice_<id>_<n>:<contest>:<rank>:<vote rule>:<candidate>:<party>`` (fields separated by
``:``; the contest may contain commas, the header cell is then quoted). A cell ``1`` marks
the choice. The source's contest id is the contest name; the candidate is matched to the
config's names and aliases, the undeclared write-in label to write-ins. A rank above
``max_rankings`` is refused, as RCTab refuses it. Rows stream by and equal choices are
merged, so memory holds the distinct ballots.
"""

from __future__ import annotations

import csv

from rankmodels.aggregation.elections.ballots import BallotCounter, Ranking, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_clear_ballot"]

_FIRST_CHOICE = 10  # RowNumber, BoxID, BoxPosition, BallotID, PrecinctID, BallotStyleID,
# PrecinctStyleName, ScanComputerName, Status, Remade


def read_clear_ballot(
    source: Source, names: CandidateNames, max_rankings: int, counter: BallotCounter
) -> None:
    """Add the ballots of the Clear Ballot CSV ``source`` to ``counter``."""
    path = source.path
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or len(header) <= _FIRST_CHOICE:
            raise InputError("no choice columns: not a Clear Ballot record", path=path)
        columns = _choices(header, source, names, max_rankings)
        if not columns:
            raise InputError(f"no choice columns of contest {source.contest_id!r}", path=path)
        seen: dict[tuple[str, ...], Ranking] = {}
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise InputError(
                    f"{len(row)} fields where the header has {len(header)}",
                    path=path,
                    field=f"line {line}",
                )
            cells = tuple(row[c] for c, _ in columns)
            ranking = seen.get(cells)
            if ranking is None:
                bad = [cell for cell in cells if cell.strip() not in ("0", "1")]
                if bad:
                    raise InputError(
                        f"a choice cell holds {bad[0]!r}, not 0 or 1",
                        path=path,
                        field=f"line {line}",
                    )
                marks = [
                    mark
                    for (_, mark), cell in zip(columns, cells, strict=True)
                    if cell.strip() == "1"
                ]
                ranking = seen[cells] = ranking_from_marks(marks)
            counter.add(ranking)


def _choices(
    header: list[str], source: Source, names: CandidateNames, max_rankings: int
) -> list[tuple[int, tuple[int, int]]]:
    """``(column, (rank, candidate code))`` of the contest's choice columns."""
    out = []
    for col in range(_FIRST_CHOICE, len(header)):
        fields = header[col].split(":")
        if len(fields) < 6:
            raise InputError(
                f"choice column {header[col]!r} does not have the 6 fields "
                "Choice:contest:rank:rule:candidate:party",
                path=source.path,
                field="line 1",
            )
        if fields[1] != source.contest_id:
            continue
        name = ":".join(fields[4:-1])
        try:
            rank = int(fields[2])
        except ValueError:
            raise InputError(
                f"choice column {header[col]!r}: rank {fields[2]!r} is not a number",
                path=source.path,
                field="line 1",
            ) from None
        if rank > max_rankings:
            raise InputError(
                f"rank {rank} exceeds maxRankingsAllowed ({max_rankings})",
                path=source.path,
                field="line 1",
            )
        if source.write_in_label and name == source.write_in_label:
            code = names.write_in
        else:
            code = names.lookup(name)
        if code is None:
            raise InputError(
                f"{name!r} is not a candidate of the config", path=source.path, field="line 1"
            )
        out.append((col, (rank, code)))
    return out
