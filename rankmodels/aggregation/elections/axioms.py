"""Condorcet and majority axioms of a counted contest, on the ballots as the count reads them.

Head to head: for two candidates ``x`` and ``y``, ``N[x, y]`` is the number of ballots that
count for ``x`` when ``x`` and ``y`` are the only candidates continuing, each ballot read
from the top by the contest's rules (:class:`.rules.Rules`: an overvote exhausts it, is
passed over, or exhausts it when both are in it; too many skipped ranks or a repeated
candidate may exhaust it), exactly as the count reads it in a round with those two left.
So a ballot prefers ``x`` to ``y`` when it reaches ``x`` first; ballots that reach
neither abstain. On those numbers (over the declared candidates, the excluded ones and
undeclared write-ins left out):

* the **Condorcet winner** beats every other candidate (``N[x, y] > N[y, x]``), the
  **Condorcet loser** loses to every other one;
* the **Smith set** is the smallest set of candidates each of whom beats everyone outside
  it (the first majority component, :func:`~rankmodels.aggregation.irv.majority_components`);
* the **majority winner** has more than half of the votes of round 1 of the count (the
  ballots active in round 1); the **majority loser** is counted against in each of its
  pairs by more than half of the ballots that mark any rank (it is last on them);

and whether each was elected. ``margin`` of a pair is ``|N[x, y] - N[y, x]| / (2 V)`` for
the ``V`` ballots that mark any rank: the distance of ``P_{x<y}`` from 1/2 when a ballot
reaching neither counts as a tie, as the profile report's margins are. Cost ``O(m (R + k^2))``
for ``m`` distinct ballots, ``k`` candidates, ``R`` marked ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rankmodels.aggregation.condorcet import condorcet_winner
from rankmodels.aggregation.elections.ballots import UNDECLARED_WRITE_INS, CastBallots
from rankmodels.aggregation.elections.kernels import head_to_head, pack
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import Count
from rankmodels.aggregation.irv import majority_components

__all__ = ["axiom_lines", "election_axioms"]


def election_axioms(ballots: CastBallots, rules: Rules, counts: Sequence[Count]) -> dict[str, Any]:
    """The axiom report of ``counts`` (one count, or one per seat of a sequential count)
    of ``ballots`` under ``rules`` (module docstring). JSON-ready, candidate names:
    ``ballots`` (``V``), ``candidates`` compared, ``elected``; ``condorcet_winner``,
    ``condorcet_loser``, ``majority_winner``, ``majority_loser`` (a name or ``None``)
    each with ``*_elected`` (``None`` without the premise); ``smith_set`` and
    ``smith_set_elected``; ``pairwise``: per pair ``x``, ``y``, ``x_over_y``,
    ``y_over_x``, ``margin``."""
    names = ballots.candidates
    compared = [
        i for i, x in enumerate(names) if x != UNDECLARED_WRITE_INS and x not in rules.excluded
    ]
    elected = {names[w] for c in counts for w in c.winners}
    voters = ballots.total - ballots.undervotes
    wins, last = head_to_head(
        pack(ballots),
        np.array(compared, dtype=np.int64),
        len(names),
        -1 if rules.max_skipped_ranks is None else rules.max_skipped_ranks,
        rules.exhaust_on_duplicate,
        rules.overvote,
    )
    k = len(compared)
    shown = [names[i] for i in compared]
    P = wins / max(voters, 1)
    winner = condorcet_winner(P) if k else None
    loser = condorcet_winner(P.T) if k > 1 else None
    smith = majority_components(P)[0] if k else []
    first = counts[0].rounds[0] if counts and counts[0].rounds else None
    majority = None
    if first is not None:
        active = first.active
        majority = next(
            (names[x] for x, v in first.tally.items() if 2 * v > active and names[x] in shown),
            None,
        )
    losers = [shown[a] for a in range(k) if k > 1 and 2 * last[a] > voters]

    def was_elected(name: str | None) -> bool | None:
        return None if name is None else name in elected

    return {
        "ballots": voters,
        "candidates": shown,
        "elected": [x for x in shown if x in elected],
        "condorcet_winner": None if winner is None else shown[winner],
        "condorcet_winner_elected": was_elected(None if winner is None else shown[winner]),
        "condorcet_loser": None if loser is None else shown[loser],
        "condorcet_loser_elected": was_elected(None if loser is None else shown[loser]),
        "smith_set": [shown[a] for a in smith],
        "smith_set_elected": [shown[a] for a in smith if shown[a] in elected],
        "majority_winner": majority,
        "majority_winner_elected": was_elected(majority),
        "majority_loser": losers[0] if losers else None,
        "majority_loser_elected": was_elected(losers[0] if losers else None),
        "pairwise": [
            {
                "x": shown[a],
                "y": shown[b],
                "x_over_y": int(wins[a, b]),
                "y_over_x": int(wins[b, a]),
                "margin": abs(int(wins[a, b]) - int(wins[b, a])) / (2 * max(voters, 1)),
            }
            for a in range(k)
            for b in range(a + 1, k)
        ],
    }


def axiom_lines(report: dict[str, Any]) -> list[str]:
    """:func:`election_axioms` in words, for the text report: each premise with whether
    it was elected, capitals where the axiom fails (a winner not elected, a loser
    elected)."""

    def premise(key: str, should_win: bool) -> str:
        name = report[key]
        if name is None:
            return "none"
        won = report[f"{key}_elected"]
        word = "yes" if won else "no"
        return f"{name} (elected: {word if won == should_win else word.upper()})"

    smith = report["smith_set"]
    outside = [x for x in report["elected"] if x not in smith]
    return [
        f"axioms, head to head on the {report['ballots']} ballots as counted:",
        f"  Condorcet winner: {premise('condorcet_winner', True)}",
        f"  Condorcet loser: {premise('condorcet_loser', False)}",
        f"  Smith set: {'; '.join(smith) or 'none'}"
        + (f" (ELECTED OUTSIDE IT: {'; '.join(outside)})" if outside else ""),
        f"  majority winner: {premise('majority_winner', True)}",
        f"  majority loser: {premise('majority_loser', False)}",
    ]
