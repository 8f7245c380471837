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

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import BallotTable
from rankmodels.aggregation.cvr import WRITE_IN
from rankmodels.aggregation.elections.ballots import OVERVOTE, UNDECLARED_WRITE_INS, CastBallots
from rankmodels.aggregation.elections.kernels import pack
from rankmodels.aggregation.profile import Profile

__all__ = ["profile_of"]


@numba.njit(cache=True)
def _prefix_keys(
    p_start, p_rank, p_mstart, p_marks, n, overvote_exhausts, max_skipped
):  # pragma: no cover
    """The prefix keys (``2 x + 1`` per candidate ``x``, :mod:`.ballot_table`) of every
    packed ballot under the read-time conventions: ``(data, offsets)``."""
    m = p_start.shape[0] - 1
    data = np.empty(p_mstart[-1], dtype=np.int32)
    offsets = np.zeros(m + 1, dtype=np.int64)
    stamp = np.zeros(n, dtype=np.int64)
    d = 0
    for j in range(m):
        last = 0
        for e in range(p_start[j], p_start[j + 1]):
            r = p_rank[e]
            if max_skipped >= 0 and r - last > max_skipped + 1:
                break
            last = r
            lo, hi = p_mstart[e], p_mstart[e + 1]
            if hi - lo > 1 or p_marks[lo] == OVERVOTE:
                if overvote_exhausts:
                    break
                continue
            x = p_marks[lo]
            if stamp[x] != j + 1:
                stamp[x] = j + 1
                data[d] = 2 * x + 1
                d += 1
        offsets[j + 1] = d
    return data[:d], offsets


def profile_of(
    ballots: CastBallots, overvote_exhausts: bool = True, max_skipped: int | None = None
) -> Profile:
    """The profile of ``ballots`` (module docstring), compiled over the packed ballots:
    ``O(total marks)``. ``ValueError`` when no ballot ranks anybody."""
    p = pack(ballots)
    n = len(ballots.candidates)
    data, offsets = _prefix_keys(
        p.start, p.rank, p.mstart, p.marks, n, overvote_exhausts,
        -1 if max_skipped is None else max_skipped,
    )  # fmt: skip
    if not data.size:
        raise ValueError("no ballot ranks any candidate")
    table = BallotTable()
    ids = table.add(data, offsets)
    ranked = np.diff(offsets) > 0  # a ballot ranking nobody is left out
    table.count(ids, np.where(ranked, p.counts, 0).astype(np.float64))
    names = [WRITE_IN if x == UNDECLARED_WRITE_INS else x for x in ballots.candidates]
    return table.profile(names)
