"""The result of a rank aggregation and the tie bookkeeping of score-sorting rules.

Theorem 9 of chapter 4: a rule that is continuous in ``P`` and Pareto efficient cannot
always return a unique ranking. Every rule therefore reports *all* optimal rankings in
:attr:`Aggregation.ties` (up to a cap) and how many there are in :attr:`Aggregation.count`
(exact, or a certified lower bound where exact counting is out of reach), and never picks
one silently; :attr:`Aggregation.ranking` is the first of them in a fixed, documented order
(lexicographic by candidate index within tied groups).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from rankmodels.aggregation.counting import DEFAULT_MAX_TIES, Count, combine_blocks

__all__ = [
    "DEFAULT_MAX_TIES",
    "Aggregation",
    "from_scores",
    "orders_from_groups",
    "score_groups",
]


@dataclass
class Aggregation:
    """Consensus ranking(s) of one rule on one profile.

    Attributes
    ----------
    rule: rule name as given to :func:`rankmodels.aggregation.aggregate`.
    ranking: ``(n,)`` order, best first: the first optimal ranking.
    ties: every optimal order (``(n,)`` arrays), at most ``max_ties`` of them.
    count: how many rankings are optimal: exact, or a lower bound (``count.exact`` False)
        when exact counting is out of reach (see :attr:`n_optimal`).
    scores: ``(n,)`` per-candidate scores, higher is better, or ``None`` for rules that
        optimise over whole rankings (Kemeny, footrule, mode); see ``objective``.
    objective: the minimised expected loss for distance rules, else ``None``.
    exact: False when the listed rankings are a heuristic's and not proved optimal (then
        ``objective - bound`` bounds how far from optimal they can be).
    bound: certified lower bound on the optimal ``objective`` when a heuristic was used;
        a heuristic whose objective meets it is optimal (``exact`` True).
    settled: ``(n, n)`` boolean, ``x`` above ``y`` in *every* optimal ranking, for rules that
        know it without listing them all (score groups, partial orders); else ``None``.
    """

    rule: str
    ranking: np.ndarray
    ties: list[np.ndarray]
    count: Count
    scores: np.ndarray | None = None
    objective: float | None = None
    exact: bool = True
    bound: float | None = None
    settled: np.ndarray | None = None
    details: dict[str, object] = field(default_factory=dict)

    @property
    def n_optimal(self) -> int | None:
        """The number of optimal rankings, or ``None`` when only a lower bound is known."""
        return self.count.value if self.count.exact else None

    @property
    def n_optimal_at_least(self) -> int:
        """A certified lower bound on the number of optimal rankings (equal to
        :attr:`n_optimal` when that is known)."""
        return self.count.value

    @property
    def unique(self) -> bool:
        """True when the optimum is known to be a single ranking (universality holds)."""
        return self.n_optimal == 1

    @property
    def listed_all(self) -> bool:
        """True when :attr:`ties` holds every optimal ranking (the count is known and not
        above ``max_ties``)."""
        return self.n_optimal == len(self.ties)

    def always_above(self) -> tuple[np.ndarray, bool]:
        """``(A, complete)``: ``A[x, y]`` is True when ``x`` is above ``y`` in every optimal
        ranking, ``(n, n)`` boolean; ``complete`` is False when that could only be read off
        a capped listing (then it holds for the listed rankings, not necessarily all)."""
        if self.settled is not None:
            return self.settled, True
        n = self.ranking.size
        above = np.ones((n, n), dtype=bool)
        for order in self.ties:
            rank = np.argsort(order)
            above &= rank[:, None] < rank[None, :]
        return above, self.listed_all

    def winners(self) -> list[int]:
        """Candidates ranked first in some optimal ranking.

        Read off the listed rankings, so it needs all of them: a ``ValueError`` when the
        listing was capped by ``max_ties`` or the count is unknown."""
        if not self.listed_all:
            known = "an unknown number" if self.n_optimal is None else str(self.n_optimal)
            raise ValueError(
                f"{self.rule}: {len(self.ties)} of {known} optimal rankings are listed; "
                "the winners need them all (raise max_ties)"
            )
        return sorted({int(t[0]) for t in self.ties})


def score_groups(scores: np.ndarray, rtol: float = 1e-9) -> list[np.ndarray]:
    """Group candidates by equal score (within ``rtol`` of the score range), best first.

    Returns a list of index arrays, each sorted ascending; ``scores`` has shape ``(n,)``.
    Scores are compared after sorting: neighbours closer than the tolerance are tied.
    """
    scores = np.asarray(scores, dtype=float)
    order = np.lexsort((np.arange(scores.size), -scores))
    scale = max(1.0, float(np.max(np.abs(scores)))) if scores.size else 1.0
    tol = rtol * scale
    groups: list[list[int]] = []
    for x in order:
        if groups and abs(scores[groups[-1][0]] - scores[x]) <= tol:
            groups[-1].append(int(x))
        else:
            groups.append([int(x)])
    return [np.array(sorted(g), dtype=np.int64) for g in groups]


def orders_from_groups(
    groups: list[np.ndarray], max_ties: int = DEFAULT_MAX_TIES
) -> tuple[list[np.ndarray], Count]:
    """All orders that rank the groups in turn and each group in any order.

    Returns ``(orders, count)``: at most ``max_ties`` orders (lexicographic in the within-group
    permutations) and the exact count ``prod(len(g)!)``.
    """
    starts = np.cumsum([0] + [len(g) for g in groups])
    blocks = [
        (np.arange(starts[i], starts[i + 1]), itertools.permutations(g.tolist()))
        for i, g in enumerate(groups)
    ]
    n = int(starts[-1])
    count = Count(math.prod(math.factorial(len(g)) for g in groups))
    return combine_blocks(n, blocks, max_ties), count


def from_scores(
    rule: str, scores: np.ndarray, max_ties: int = DEFAULT_MAX_TIES, **extra: object
) -> Aggregation:
    """Aggregation that sorts candidates by decreasing ``scores``, ties reported in full."""
    groups = score_groups(scores)
    orders, count = orders_from_groups(groups, max_ties)
    level = np.empty(len(scores), dtype=np.int64)
    for g, members in enumerate(groups):
        level[members] = g
    return Aggregation(
        rule=rule,
        ranking=orders[0],
        ties=orders,
        count=count,
        scores=scores,
        settled=level[:, None] < level[None, :],
        **extra,
    )
