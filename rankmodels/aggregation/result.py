"""The result of a rank aggregation and the tie bookkeeping shared by all rules.

Theorem 9 of chapter 4: a rule that is continuous in ``P`` and Pareto efficient cannot
always return a unique ranking. Every rule therefore reports *all* optimal rankings in
:attr:`Aggregation.ties` (up to a cap, with the exact count in ``n_optimal``) and never
picks one silently; :attr:`Aggregation.ranking` is the first of them in a fixed,
documented order (lexicographic by candidate index within tied groups).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numba
import numpy as np

__all__ = [
    "DEFAULT_MAX_TIES",
    "Aggregation",
    "count_linear_extensions",
    "from_scores",
    "linear_extensions",
    "orders_from_groups",
    "score_groups",
]

DEFAULT_MAX_TIES = 1000
"""At most this many optimal rankings are listed in :attr:`Aggregation.ties`."""


@dataclass
class Aggregation:
    """Consensus ranking(s) of one rule on one profile.

    Attributes
    ----------
    rule: rule name as given to :func:`rankmodels.aggregation.aggregate`.
    ranking: ``(n,)`` order, best first: the first optimal ranking.
    ties: every optimal order (``(n,)`` arrays), at most ``max_ties`` of them.
    n_optimal: number of optimal rankings (exact, even when ``ties`` is capped).
    scores: ``(n,)`` per-candidate scores, higher is better, or ``None`` for rules that
        optimise over whole rankings (Kemeny, footrule, mode); see ``objective``.
    objective: the minimised expected loss for distance rules, else ``None``.
    exact: False when a heuristic was used (then ``bound`` is a lower bound on the optimum).
    bound: certified lower bound on ``objective`` when not exact.
    """

    rule: str
    ranking: np.ndarray
    ties: list[np.ndarray]
    n_optimal: int
    scores: np.ndarray | None = None
    objective: float | None = None
    exact: bool = True
    bound: float | None = None
    details: dict[str, object] = field(default_factory=dict)

    @property
    def unique(self) -> bool:
        """True when the optimum is a single ranking (universality holds on this profile)."""
        return self.n_optimal == 1

    def winners(self) -> list[int]:
        """Candidates ranked first in some optimal ranking."""
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
) -> tuple[list[np.ndarray], int]:
    """All orders that rank the groups in turn and each group in any order.

    Returns ``(orders, count)``: at most ``max_ties`` orders (lexicographic in the within-group
    permutations) and the exact count ``prod(len(g)!)``.
    """
    count = math.prod(math.factorial(len(g)) for g in groups)
    out = [
        np.array(combo, dtype=np.int64)
        for combo in itertools.islice(_lazy_product(groups, ()), max_ties)
    ]
    return out, count


def _lazy_product(groups: list[np.ndarray], prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Concatenations of one permutation per group, generated lazily (no factorial blow-up)."""
    if not groups:
        yield prefix
        return
    for perm in itertools.permutations(groups[0].tolist()):
        yield from _lazy_product(groups[1:], prefix + perm)


def linear_extensions(
    before: np.ndarray, preference: np.ndarray | None = None, limit: int = DEFAULT_MAX_TIES
) -> list[np.ndarray]:
    """Up to ``limit`` orders respecting the strict partial order ``before[x, y]`` (x above y).

    Orders are generated depth first, trying available candidates by decreasing
    ``preference`` (then index), so the first one is the preference-greedy extension.
    """
    before = np.asarray(before, dtype=bool)
    n = before.shape[0]
    pref = np.zeros(n) if preference is None else np.asarray(preference, dtype=float)
    try_order = np.lexsort((np.arange(n), -pref)).tolist()
    out: list[np.ndarray] = []

    def extend(prefix: list[int], placed: np.ndarray) -> None:
        if len(out) >= limit:
            return
        if len(prefix) == n:
            out.append(np.array(prefix, dtype=np.int64))
            return
        for x in try_order:
            if not placed[x] and not np.any(before[~placed, x]):
                placed[x] = True
                extend([*prefix, x], placed)
                placed[x] = False

    extend([], np.zeros(n, dtype=bool))
    return out


def count_linear_extensions(before: np.ndarray) -> int:
    """Number of linear extensions of the strict partial order ``before`` (exact, n <= 20)."""
    before = np.asarray(before, dtype=bool)
    n = before.shape[0]
    if n > 20:
        raise ValueError(f"counting linear extensions is limited to n <= 20, got {n}")
    preds = np.array([int(sum(1 << y for y in np.flatnonzero(before[:, x]))) for x in range(n)])
    return int(_count_extensions(preds.astype(np.int64), n))


@numba.njit(cache=True)
def _count_extensions(preds: np.ndarray, n: int) -> float:  # pragma: no cover - numba
    ways = np.zeros(1 << n)
    ways[0] = 1.0
    for S in range(1 << n):
        if ways[S] == 0.0:
            continue
        for x in range(n):
            if not (S >> x) & 1 and (preds[x] & S) == preds[x]:
                ways[S | (1 << x)] += ways[S]
    return ways[(1 << n) - 1]


def from_scores(
    rule: str, scores: np.ndarray, max_ties: int = DEFAULT_MAX_TIES, **extra: object
) -> Aggregation:
    """Aggregation that sorts candidates by decreasing ``scores``, ties reported in full."""
    orders, count = orders_from_groups(score_groups(scores), max_ties)
    return Aggregation(
        rule=rule, ranking=orders[0], ties=orders, n_optimal=count, scores=scores, **extra
    )
