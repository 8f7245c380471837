"""Condorcet methods on the pairwise marginals: Copeland, Schulze, ranked pairs.

All three read only ``P[x, y] = P_{x<y}`` (see :attr:`Profile.pairwise`) through the margins
``D[x, y] = P_{x<y} - P_{y<x}``; ``x`` beats ``y`` by majority when ``D[x, y] > 0``.
Margins are compared with an absolute tolerance :data:`MARGIN_TOL` (probabilities).

* **Copeland** scores ``x`` by ``#{y : x beats y} + 1/2 #{y : tie}`` and sorts.
* **Schulze** (margins): ``p[x, y]`` is the strength of the strongest path from ``x`` to ``y``
  in the majority graph (widest path, Floyd-Warshall); ``x`` is above ``y`` when
  ``p[x, y] > p[y, x]``. The ranking sorts by the number of candidates each one beats.
* **Ranked pairs** (Tideman, margins): lock majority pairs by decreasing margin unless they
  close a cycle; the locked relation is a total order. Equal margins are broken in every
  possible order (parallel-universe tie-breaking) and each distinct outcome is a tie.
"""

from __future__ import annotations

import itertools
import math

import numba
import numpy as np

from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import (
    DEFAULT_MAX_TIES,
    Aggregation,
    count_linear_extensions,
    from_scores,
    linear_extensions,
)

__all__ = [
    "MARGIN_TOL",
    "condorcet_winner",
    "copeland",
    "ranked_pairs",
    "schulze",
    "schulze_strengths",
]

MARGIN_TOL = 1e-12
MAX_TIE_PERMUTATIONS = 720
"""Ranked pairs tries at most this many orderings of one group of equal-margin pairs."""


def _margins(profile: Profile | np.ndarray) -> np.ndarray:
    P = profile.pairwise if isinstance(profile, Profile) else np.asarray(profile, dtype=float)
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
    beats = p > p.T + MARGIN_TOL
    scores = beats.sum(axis=1).astype(float)
    return _from_partial_order("schulze", beats, scores, max_ties, {"strengths": p})


def _from_partial_order(
    rule: str, before: np.ndarray, scores: np.ndarray, max_ties: int, details: dict
) -> Aggregation:
    ties = linear_extensions(before, scores, max_ties)
    n = before.shape[0]
    count = count_linear_extensions(before) if n <= 20 else len(ties)
    return Aggregation(
        rule=rule, ranking=ties[0], ties=ties, n_optimal=count, scores=scores, details=details
    )


def _creates_cycle(locked: np.ndarray, x: int, y: int) -> bool:
    """Would locking ``x > y`` close a cycle, i.e. does ``y`` already reach ``x``?"""
    n = locked.shape[0]
    seen = np.zeros(n, dtype=bool)
    stack = [y]
    while stack:
        u = stack.pop()
        if u == x:
            return True
        if seen[u]:
            continue
        seen[u] = True
        stack.extend(np.flatnonzero(locked[u] & ~seen).tolist())
    return False


def ranked_pairs(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Ranked pairs with parallel-universe tie-breaking among equal margins."""
    D = _margins(profile)
    n = D.shape[0]
    pairs = [(x, y) for x in range(n) for y in range(n) if D[x, y] > 0]
    strengths = sorted({round(D[x, y] / MARGIN_TOL) for x, y in pairs}, reverse=True)
    groups = [[(x, y) for x, y in pairs if round(D[x, y] / MARGIN_TOL) == s] for s in strengths]
    states = {np.zeros((n, n), dtype=bool).tobytes()}
    truncated = False
    for group in groups:
        orders = itertools.islice(itertools.permutations(group), MAX_TIE_PERMUTATIONS)
        if math.factorial(len(group)) > MAX_TIE_PERMUTATIONS:
            truncated = True
        new_states = set()
        for order in list(orders):
            for state in states:
                locked = np.frombuffer(state, dtype=bool).reshape(n, n).copy()
                for x, y in order:
                    if not _creates_cycle(locked, x, y):
                        locked[x, y] = True
                new_states.add(locked.tobytes())
        states = new_states
    results: dict[tuple[int, ...], None] = {}
    closures = [_transitive_closure(np.frombuffer(st, dtype=bool).reshape(n, n)) for st in states]
    for closure in closures:
        # Unlocked pairs are majority ties; every linear extension of the closure is a result.
        for order in linear_extensions(closure, closure.sum(axis=1), max_ties):
            results[tuple(order.tolist())] = None
    ties = [np.array(t, dtype=np.int64) for t in sorted(results)][:max_ties]
    if len(closures) == 1:
        scores = closures[0].sum(axis=1).astype(float)
        return _from_partial_order(
            "ranked-pairs", closures[0], scores, max_ties, {"tie_orders_truncated": truncated}
        )
    scores = (n - 1 - np.argsort(ties[0])).astype(float)
    return Aggregation(
        rule="ranked-pairs",
        ranking=ties[0],
        ties=ties,
        n_optimal=len(results),
        scores=scores,
        details={"tie_orders_truncated": truncated},
    )


def _transitive_closure(rel: np.ndarray) -> np.ndarray:
    closure = rel.copy()
    for k in range(rel.shape[0]):
        closure |= closure[:, k : k + 1] & closure[k : k + 1, :]
    return closure
