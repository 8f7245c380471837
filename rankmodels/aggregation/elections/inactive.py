"""Why ballots are inactive, for a count done elsewhere (instant runoff on a profile).

Given the candidates continuing in each round, every ballot as cast is read from the top
with the rules of the count (:mod:`.kernels`, the tabulator's reading): it counts for its
highest continuing candidate or is inactive by one cause -- an overvote, skipped rankings,
exhausted choices, repeated rankings, or no marks at all (undervote). Reading from the top
with the round's candidates gives the same cause as following the ballot round by round,
since the continuing candidates only shrink.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from rankmodels.aggregation.elections.ballots import CastBallots
from rankmodels.aggregation.elections.kernels import BallotStates, pack
from rankmodels.aggregation.elections.tabulator import Status

__all__ = ["inactive_by_round"]


def inactive_by_round(
    ballots: CastBallots,
    continuing: Sequence[Collection[str]],
    overvote: str = "exhaust",
    max_skipped_ranks: int | None = None,
) -> list[dict[Status, int]]:
    """For each round's continuing candidates (names), the number of ballots inactive by
    each cause. ``overvote``: ``exhaust`` or ``skip``; ``max_skipped_ranks``: as
    :class:`.rules.Rules`; a candidate ranked again is passed over. ``O(m R)`` a round
    for ``m`` distinct ballots of ``R`` marked ranks."""
    packed = pack(ballots)
    code = {name: i for i, name in enumerate(ballots.candidates)}
    out = []
    for names in continuing:
        mask = np.zeros(len(ballots.candidates), dtype=np.bool_)
        mask[[code[x] for x in names if x in code]] = True
        states = BallotStates(packed, decimal_places=0, exact=False)
        skip = -1 if max_skipped_ranks is None else max_skipped_ranks
        sums = states.tally(mask, skip, False, overvote, False)
        out.append({s: int(sums.inactive[s]) for s in Status if s != Status.ACTIVE})
    return out
