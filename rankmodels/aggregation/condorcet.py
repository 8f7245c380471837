"""Condorcet methods on the pairwise marginals: Copeland, Schulze, ranked pairs.

All three read only ``P[x, y] = P_{x<y}`` (see :attr:`Profile.pairwise`) through the margins
``D[x, y] = P_{x<y} - P_{y<x}``; ``x`` beats ``y`` by majority when ``D[x, y] > 0``.
Margins are compared with an absolute tolerance :data:`MARGIN_TOL` (probabilities).

* **Copeland** scores ``x`` by ``#{y : x beats y} + 1/2 #{y : tie}`` and sorts.
* **Schulze** (margins): ``p[x, y]`` is the strength of the strongest path from ``x`` to ``y``
  in the majority graph (widest path, Floyd-Warshall); ``x`` is above ``y`` when
  ``p[x, y] > p[y, x]``, a strict partial order (Schulze 2011). The optimal rankings are its
  linear extensions, counted by :func:`~rankmodels.aggregation.counting.count_linear_extensions`.
* **Ranked pairs** (Tideman, margins): lock majority pairs by decreasing margin unless they
  close a cycle. Equal margins are broken in every possible order (parallel-universe
  tie-breaking). Every outcome decides every majority pair (locked, or reversed by the
  locked pairs already there), so two different outcomes disagree on some pair and their
  rankings -- the linear extensions of the locked relation (pairs with margin 0 stay free
  unless locked pairs imply them) -- are disjoint: the number of optimal rankings is the sum
  of the outcomes' counts. The tie-breakings are searched, not enumerated: within a group
  of equal margins, a pair that closes a cycle now is skipped in every order, and a pair on
  no cycle of the locked and still unlocked pairs is locked in every order without
  affecting the others, so only pairs that really compete are branched on (memoised on the
  locked relation). The search stops after :data:`MAX_LOCK_SEARCH` steps or
  :data:`MAX_LOCK_DEPTH` nested choices; then the outcomes found so far (each from a genuine
  tie-breaking) are reported and the count is a lower bound.
"""

from __future__ import annotations

import numba
import numpy as np

from rankmodels.aggregation.counting import (
    Count,
    count_linear_extensions,
    linear_extensions,
    transitive_closure,
)
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import DEFAULT_MAX_TIES, Aggregation, from_scores

__all__ = [
    "MARGIN_TOL",
    "condorcet_winner",
    "copeland",
    "ranked_pairs",
    "schulze",
    "schulze_strengths",
]

MARGIN_TOL = 1e-12
MAX_LOCK_SEARCH = 10_000
"""Ranked pairs explores at most this many tie-breaking states per profile (for up to
:data:`LOCK_STEP_SIZE` candidates; a step on ``n`` more costs ``(n / LOCK_STEP_SIZE)^3``)."""
LOCK_STEP_SIZE = 30
MAX_LOCK_DEPTH = 200
"""... and stops at the first path of more nested tie-breaking choices (recursion levels)."""


def _margins(profile: Profile | np.ndarray) -> np.ndarray:
    P = np.asarray(profile, dtype=float) if isinstance(profile, np.ndarray) else profile.pairwise
    D = P - P.T
    D[np.abs(D) <= MARGIN_TOL] = 0.0
    return D


def condorcet_winner(profile: Profile | np.ndarray) -> int | None:
    """The candidate beating every other one by a strict majority (axiom D10), or ``None``."""
    D = _margins(profile)
    n = D.shape[0]
    for x in range(n):
        if np.all(np.delete(D[x], x) > 0):
            return x
    return None


def copeland(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Copeland: wins plus half the pairwise ties."""
    D = _margins(profile)
    scores = (D > 0).sum(axis=1) + 0.5 * ((D == 0).sum(axis=1) - 1)
    return from_scores("copeland", scores.astype(float), max_ties)


@numba.njit(cache=True)
def _widest_paths(D: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    n = D.shape[0]
    p = np.zeros((n, n))
    for x in range(n):
        for y in range(n):
            if x != y and D[x, y] > 0:
                p[x, y] = D[x, y]
    for k in range(n):
        for x in range(n):
            if x == k:
                continue
            for y in range(n):
                if y == x or y == k:
                    continue
                via = min(p[x, k], p[k, y])
                if via > p[x, y]:
                    p[x, y] = via
    return p


def schulze_strengths(profile: Profile | np.ndarray) -> np.ndarray:
    """``(n, n)`` strongest-path strengths ``p[x, y]`` on the positive margins."""
    return _widest_paths(_margins(profile))


def schulze(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Schulze method with margins.

    The relation ``p[x, y] > p[y, x]`` is a strict partial order (Schulze 2011); every
    linear extension is reported as an optimal ranking. Scores are the number of candidates
    each one beats; the first ranking places available candidates by decreasing score.
    """
    p = schulze_strengths(profile)
    beats = transitive_closure(p > p.T + MARGIN_TOL)
    scores = beats.sum(axis=1).astype(float)
    ties = linear_extensions(beats, scores, max_ties)
    return Aggregation(
        rule="schulze",
        ranking=ties[0],
        ties=ties,
        count=count_linear_extensions(beats, max_ties),
        scores=scores,
        settled=beats,
        details={"strengths": p},
    )


def _locked_with(reach: np.ndarray, x: int, y: int) -> np.ndarray:
    """The transitive closure ``reach`` after locking ``x > y``: everything reaching ``x``
    (and ``x``) now reaches everything ``y`` reaches (and ``y``), O(n^2)."""
    above = reach[:, x].copy()
    above[x] = True
    below = reach[y].copy()
    below[y] = True
    return reach | np.outer(above, below)


class _LockSearch:
    """Every locked relation ranked pairs can end with, over all tie-breakings.

    States are transitive closures of the locked pairs (whether a pair closes a cycle
    depends on nothing else), so equal states reached in different orders are merged."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.complete = True
        self.memo: dict[tuple[bytes, frozenset[tuple[int, int]]], list[np.ndarray]] = {}

    def group(
        self, reach: np.ndarray, pairs: frozenset[tuple[int, int]], depth: int = 0
    ) -> list[np.ndarray]:
        """Outcomes of locking the equal-margin ``pairs`` in every order, from the locked
        relation ``reach`` (``depth`` nested choices made so far)."""
        key = (reach.tobytes(), pairs)
        if key not in self.memo:
            self.memo[key] = self._group(reach, pairs, depth)
        return self.memo[key]

    def _group(
        self, reach: np.ndarray, pairs: frozenset[tuple[int, int]], depth: int
    ) -> list[np.ndarray]:
        cost = max(1, reach.shape[0] ** 3 // LOCK_STEP_SIZE**3)  # a step is O(n^3)
        while True:  # lock pairs that every order locks; branch where orders differ
            self.budget -= cost
            live = sorted((x, y) for x, y in pairs if not reach[y, x])  # others close a cycle
            if not live:
                return [reach]
            # a pair on no cycle of the locked and live pairs is locked in every order
            graph = reach.copy()
            xs, ys = np.array(live).T
            graph[xs, ys] = True
            reach_all = transitive_closure(graph)
            chosen = [(x, y) for x, y in live if not reach_all[y, x]]
            if not chosen and (self.budget <= 0 or depth >= MAX_LOCK_DEPTH):
                self.complete = False  # out of budget: follow one tie-breaking only
                self.budget = 0  # and stop searching
                for x, y in live:
                    if not reach[y, x]:
                        reach = _locked_with(reach, x, y)
                return [reach]
            if not chosen:
                break
            for x, y in chosen:
                reach = _locked_with(reach, x, y)
            pairs = frozenset(live) - frozenset(chosen)
        outcomes: dict[bytes, np.ndarray] = {}
        for x, y in live:
            if self.budget <= 0:  # out of budget: no further branches
                break
            after = _locked_with(reach, x, y)
            for out in self.group(after, frozenset(live) - {(x, y)}, depth + 1):
                outcomes.setdefault(out.tobytes(), out)
        return list(outcomes.values())


def ranked_pairs_outcomes(D: np.ndarray) -> tuple[list[np.ndarray], bool]:
    """Locked relations (transitively closed) of ranked pairs on the margins ``D`` over all
    tie-breakings, and whether the search was complete."""
    n = D.shape[0]
    xs, ys = np.nonzero(D > 0)
    levels = np.round(D[xs, ys] / MARGIN_TOL)
    search = _LockSearch(MAX_LOCK_SEARCH)
    states = [np.zeros((n, n), dtype=bool)]
    for level in np.unique(levels)[::-1]:
        pick = levels == level
        group = frozenset(zip(xs[pick].tolist(), ys[pick].tolist(), strict=True))
        found: dict[bytes, np.ndarray] = {}
        for state in states:
            for out in search.group(state, group):
                found.setdefault(out.tobytes(), out)
        states = list(found.values())
    return states, search.complete


def ranked_pairs(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Ranked pairs with parallel-universe tie-breaking among equal margins.

    Outcomes are listed in lexicographic order of their first (score-greedy) ranking; scores
    are the number of candidates each one is locked above in the first outcome.
    """
    closures, complete = ranked_pairs_outcomes(_margins(profile))
    closures.sort(key=lambda c: linear_extensions(c, c.sum(axis=1), 1)[0].tolist())
    ties: list[np.ndarray] = []
    for c in closures:
        ties += linear_extensions(c, c.sum(axis=1), max_ties - len(ties))
        if len(ties) >= max_ties:
            break
    count = sum((count_linear_extensions(c, max_ties) for c in closures), Count(0))
    return Aggregation(
        rule="ranked-pairs",
        ranking=ties[0],
        ties=ties,
        count=Count(count.value, count.exact and complete),
        scores=closures[0].sum(axis=1).astype(float),
        settled=np.logical_and.reduce(closures) if complete else None,
        details={"tie_breakings_complete": complete, "outcomes": len(closures)},
    )
