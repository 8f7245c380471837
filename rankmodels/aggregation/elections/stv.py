"""Single transferable vote as a rule of the registry: ``aggregate(profile, "stv", seats=S)``.

The profile's ballots are counted as cast (:func:`.ballots.from_profile`: each tie group
is a rank, a group of two or more an overvote, which exhausts the ballot) by the
tabulator (:mod:`.tabulator`) with RCTab's default rules: one seat by majority, several by
the Droop quota ``floor(V / (S + 1)) + 1`` of round 1 with Gregory's fractional surplus
transfer at 4 decimal places; ties broken by Java's ``Random(seed)`` as RCTab draws.

The ranking: the winners in the order they were elected (a round's winners by name), then
the candidates still continuing when the seats were filled, by their last votes, then the
eliminated ones, the latest first (a round's eliminated by their votes in that round).
It is one outcome of the seeded tie-breaks, not the set of every tie-breaking's outcome,
so the number of optimal rankings is reported as "at least 1".
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from rankmodels.aggregation.counting import Count as RankingCount
from rankmodels.aggregation.elections.ballots import from_profile
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import Count, tabulate
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import Aggregation

__all__ = ["stv", "stv_ranking"]


def stv_ranking(count: Count) -> list[int]:
    """Every candidate code of ``count``, best first (module docstring)."""
    rounds = count.rounds
    eliminated: dict[int, tuple[int, Decimal]] = {}
    for rnd in rounds:
        for x in rnd.eliminated:
            eliminated[x] = (rnd.number, rnd.tally.get(x, Decimal(0)))
    last = rounds[-1].tally if rounds else {}
    rest = [
        x for x in range(len(count.candidates)) if x not in count.winners and x not in eliminated
    ]
    rest.sort(key=lambda x: (-last.get(x, Decimal(0)), x))
    gone = sorted(eliminated, key=lambda x: (-eliminated[x][0], -eliminated[x][1], x))
    return [*count.winners, *rest, *gone]


def stv(profile: Profile, seats: int, seed: int = 0) -> Aggregation:
    """Single transferable vote for ``seats`` on ``profile`` (whole ballot weights).
    ``details``: ``winners`` (codes in order of election) and ``count`` (the round by
    round :class:`.tabulator.Count`). ``ValueError`` for fractional weights or fewer
    than one seat."""
    if seats < 1:
        raise ValueError(f"seats must be at least 1, got {seats}")
    rules = Rules(seats=seats, mode="single" if seats == 1 else "multi-seat", seed=seed)
    (count,) = tabulate(from_profile(profile), rules)
    ranking = np.array(stv_ranking(count), dtype=np.int64)
    return Aggregation(
        "stv",
        ranking,
        [ranking],
        RankingCount(1, exact=False),
        details={"winners": list(count.winners), "count": count},
    )
