"""Ballots as cast -> the profile a rank-column record reads into, without reading it again.

:func:`rankmodels.aggregation.cvr.read_cvr` applies its conventions while reading: skipped
ranks and repeated candidates passed over, an overvote ending the ballot or passed over, a
run of more than ``max_skipped_ranks`` unmarked ranks ending it, write-ins one candidate
:data:`~rankmodels.aggregation.cvr.WRITE_IN`, a ballot that reaches nobody left out.
:func:`profile_of` applies the same conventions to ballots read as cast, so one reading of
the file serves both the instant-runoff profile and the split of exhausted ballots by
cause. Candidates keep the order of the cast ballots (first appearance in the file).
"""

from __future__ import annotations

import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable
from rankmodels.aggregation.cvr import WRITE_IN
from rankmodels.aggregation.elections.ballots import OVERVOTE, UNDECLARED_WRITE_INS, CastBallots
from rankmodels.aggregation.profile import Profile

__all__ = ["profile_of"]


def _prefix(ranking, overvote_exhausts: bool, max_skipped: int | None) -> list[int]:
    """The candidates a ballot ranks, in order, under the read-time conventions."""
    out: list[int] = []
    last = 0
    for rank, marks in ranking:
        if max_skipped is not None and rank - last > max_skipped + 1:
            break
        last = rank
        if len(marks) > 1 or marks[0] == OVERVOTE:
            if overvote_exhausts:
                break
            continue
        if marks[0] not in out:
            out.append(marks[0])
    return out


def profile_of(
    ballots: CastBallots, overvote_exhausts: bool = True, max_skipped: int | None = None
) -> Profile:
    """The profile of ``ballots`` (module docstring): ``O(total marks)``. ``ValueError``
    when no ballot ranks anybody."""
    data: list[int] = []
    offsets = [0]
    counts = []
    for ranking, count in zip(ballots.rankings, ballots.counts, strict=True):
        prefix = _prefix(ranking, overvote_exhausts, max_skipped)
        if prefix:
            data.extend(2 * x + 1 for x in prefix)  # the prefix keys of .ballot_table
            offsets.append(len(data))
            counts.append(count)
    if not counts:
        raise ValueError("no ballot ranks any candidate")
    table = BallotTable()
    ids = table.add(np.array(data, dtype=np.int32), np.array(offsets, dtype=np.int64))
    table.count(ids, np.array(counts, dtype=np.float64))
    names = [WRITE_IN if x == UNDECLARED_WRITE_INS else x for x in ballots.candidates]
    return table.profile(names)
