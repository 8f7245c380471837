"""Distance-based rules: ``argmin_sigma E_{sigma' ~ P}[l(sigma, sigma')]`` (eq. 4.4).

* **Kemeny** (Kendall tau loss). With ``C[x, y] = P_{y<x}`` (the probability that a voter
  disagrees with ``x`` above ``y``), ``E[d_K(sigma, sigma')] = sum_{x above y in sigma} C[x, y]``.
  Exact by dynamic programming over subsets (Held-Karp style): for the set ``S`` of
  candidates occupying the top ``|S|`` places,

      F(S) = min_{x in S} F(S \\ {x}) + sum_{y not in S} C[x, y],     F({}) = 0,

  ``x`` being the lowest of ``S``: O(n^2 2^n) time, O(2^n) memory (n = 20: 8 MB). The number
  of optimal orders of ``S`` is the sum of those of ``S \\ {x}`` over the minimising ``x``
  (counted along in the DP), and every optimal ranking is recovered by following all
  minimising ``x`` back from the full set (listed up to ``max_ties``).
  Before that the candidates are split into the strongly connected components of the
  weak-majority graph (edge ``x -> y`` when ``P_{x<y} >= 1/2``); every Kemeny ranking puts
  a component that beats another entirely above it (extended Condorcet property), so the
  DP runs per component and the optimal rankings are the products of the components'.
  A component larger than ``max_exact`` (default 20) gets a heuristic -- Borda start plus
  best-insertion local search -- checked against the lower bound
  ``sum_{x<y in the component} min(P_{x<y}, P_{y<x})``. When the heuristic meets the bound
  it is optimal, and the optimal orders of the component are exactly those that put ``x``
  above ``y`` whenever ``P_{x<y} > 1/2``: the linear extensions of the strict majority
  relation, counted like Schulze's. Otherwise the number of optimal rankings is unknown.
* **Footrule** (Spearman's footrule loss): ``E|sigma'(x) - k| = sum_j M[x, j] |j - k|`` is a
  linear assignment cost, solved exactly (scipy's LAPJV). By LP duality, potentials
  ``u_x + v_k <= cost[x, k]`` with equality on an optimal assignment exist (``v`` are
  shortest-path distances in the graph with arcs ``k -> l`` of length
  ``cost[x, l] - cost[x, k]`` for the candidate ``x`` assigned to ``k``), and the optimal
  rankings are exactly the perfect matchings of the *tight* edges ``u_x + v_k = cost[x, k]``
  (complementary slackness): listed and counted by
  :mod:`rankmodels.aggregation.counting`.
* **Mode** (0-1 loss): the most probable full ranking. Under the tie convention a ballot
  with a ranked prefix ``p`` and ``g`` unranked candidates gives ``w / g!`` to each of its
  completions, so ``P(sigma) = sum_{prefixes p of sigma} c(p)`` is maximised on the trie of
  observed prefixes (optimal rankings counted exactly along it). Ties inside a ballot (not
  at its bottom) are expanded into their linear extensions first.

Tolerances: two objective values closer than ``1e-9`` (probabilities) are tied.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numba
import numpy as np

from rankmodels.aggregation.counting import (
    Count,
    combine_blocks,
    count_linear_extensions,
    count_perfect_matchings,
    linear_extensions,
    perfect_matchings,
    transitive_closure,
)
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import DEFAULT_MAX_TIES, Aggregation

__all__ = [
    "MAX_EXACT_KEMENY",
    "footrule",
    "kemeny",
    "kemeny_cost",
    "mode",
]

MAX_EXACT_KEMENY = 20
"""Largest strongly connected component solved exactly by default (2^20 subsets)."""
MAX_EXACT_LIMIT = 24
"""Hard cap on ``max_exact``: the DP stores 2^n floats and counts (2^24: 256 MB)."""
OBJECTIVE_TOL = 1e-9
MAX_MODE_EXPANSION = 200_000
"""Mode rule: at most this many linear extensions when expanding ties inside ballots."""


def kemeny_cost(pairwise: np.ndarray, order: np.ndarray) -> float:
    """Expected Kendall distance ``sum_{x above y} P_{y<x}`` of ``order`` (best first)."""
    order = np.asarray(order)
    C = np.asarray(pairwise).T
    upper = np.triu(np.ones((order.size, order.size), dtype=bool), 1)
    return float(C[np.ix_(order, order)][upper].sum())


# --------------------------------------------------------------------------- Kemeny
@numba.njit(cache=True)
def _kemeny_dp(C: np.ndarray) -> tuple[np.ndarray, int, bool]:  # pragma: no cover - numba
    """Forward DP over subsets: ``F[S]``, the number of optimal orders of all candidates and
    whether that number passed 2^62 (then it is a lower bound)."""
    n = C.shape[0]
    full = (1 << n) - 1
    F = np.full(1 << n, np.inf)
    count = np.zeros(1 << n, dtype=np.int64)
    F[0] = 0.0
    count[0] = 1
    saturated = False
    tol = 1e-9
    for S in range(1, full + 1):
        best = np.inf
        for x in range(n):
            if not (S >> x) & 1:
                continue
            prev = S ^ (1 << x)
            c = F[prev]
            for y in range(n):
                if not (S >> y) & 1:
                    c += C[x, y]
            if c < best - tol:
                best = c
                count[S] = count[prev]
            elif c <= best + tol:
                count[S] += count[prev]
                if count[S] > 1 << 62:
                    count[S] = 1 << 62
                    saturated = True
                if c < best:
                    best = c
        F[S] = best
    return F, count[full], saturated


def _kemeny_block_orders(C: np.ndarray, F: np.ndarray, limit: int) -> list[list[int]]:
    """All optimal orders (up to ``limit``) by walking the DP back from the full set."""
    n = C.shape[0]
    out: list[list[int]] = []

    def back(S: int, suffix: list[int]) -> None:
        if len(out) >= limit:
            return
        if S == 0:
            out.append(suffix)
            return
        outside = [y for y in range(n) if not (S >> y) & 1]
        for x in range(n):
            if (S >> x) & 1:
                prev = S ^ (1 << x)
                c = F[prev] + C[x, outside].sum()
                if c <= F[S] + OBJECTIVE_TOL:
                    back(prev, [x, *suffix])

    back((1 << n) - 1, [])
    return out


@numba.njit(cache=True)
def _local_search(C: np.ndarray, order: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    """Best-insertion local search for Kemeny: move one candidate while it lowers the cost."""
    n = order.shape[0]
    order = order.copy()
    improved = True
    while improved:
        improved = False
        for i in range(n):
            x = order[i]
            # delta of moving x from position i to position j
            best_delta = -1e-12
            best_j = i
            delta = 0.0
            for j in range(i - 1, -1, -1):  # move up past order[j]
                y = order[j]
                delta += C[x, y] - C[y, x]
                if delta < best_delta:
                    best_delta = delta
                    best_j = j
            delta = 0.0
            for j in range(i + 1, n):  # move down past order[j]
                y = order[j]
                delta += C[y, x] - C[x, y]
                if delta < best_delta:
                    best_delta = delta
                    best_j = j
            if best_j != i:
                if best_j < i:
                    order[best_j + 1 : i + 1] = order[best_j:i].copy()
                else:
                    order[i:best_j] = order[i + 1 : best_j + 1].copy()
                order[best_j] = x
                improved = True
    return order


def _components(P: np.ndarray) -> list[np.ndarray]:
    """Strongly connected components of the weak-majority graph, best component first."""
    from scipy.sparse.csgraph import connected_components  # here: scipy is slow to import

    n = P.shape[0]
    graph = (P >= 0.5 - OBJECTIVE_TOL) & ~np.eye(n, dtype=bool)
    k, labels = connected_components(graph, directed=True, connection="strong")
    comps = [np.flatnonzero(labels == c) for c in range(k)]
    # Components are totally ordered; the best one is beaten by nobody outside it.
    beaten_by = [int(np.sum(np.any(graph[:, c], axis=1)) - c.size) for c in comps]
    return [comps[i] for i in np.argsort(beaten_by, kind="stable")]


def _pairwise_bound(P: np.ndarray) -> float:
    """``sum_{x<y} min(P_{x<y}, P_{y<x})``: no ranking can do better on any pair."""
    return float(np.minimum(P, P.T)[np.triu_indices(P.shape[0], 1)].sum())


def _kemeny_component(
    P: np.ndarray, max_ties: int, max_exact: int
) -> tuple[list[list[int]], Count, float]:
    """Optimal orders (local indices, up to ``max_ties``), their count and the certified gap
    ``objective - lower bound`` (0 when proved optimal) of one block of candidates."""
    k = P.shape[0]
    C = np.ascontiguousarray(P.T)
    if k == 1:
        return [[0]], Count(1), 0.0
    if k <= max_exact:
        F, count, saturated = _kemeny_dp(C)
        return _kemeny_block_orders(C, F, max_ties), Count(int(count), not saturated), 0.0
    borda = P.sum(axis=1)
    order = _local_search(C, np.argsort(-borda, kind="stable").astype(np.int64))
    gap = kemeny_cost(P, order) - _pairwise_bound(P)
    if gap > OBJECTIVE_TOL:
        return [order.tolist()], Count(1, exact=False), gap
    # The heuristic meets the bound: the optimal orders follow every strict majority.
    before = transitive_closure(P > 0.5 + OBJECTIVE_TOL)
    orders = linear_extensions(before, borda, max_ties)
    return [o.tolist() for o in orders], count_linear_extensions(before, max_ties), 0.0


def kemeny(
    profile: Profile,
    max_ties: int = DEFAULT_MAX_TIES,
    max_exact: int = MAX_EXACT_KEMENY,
    split: bool = True,
) -> Aggregation:
    """Kemeny consensus (Kendall-tau loss), exact for components up to ``max_exact``.

    ``split=False`` skips the component decomposition and runs one DP (or heuristic) over
    all candidates -- the same optimum, kept for checks and benchmarks. When a heuristic
    was used, ``bound`` is a certified lower bound on the optimum; if the heuristic's
    objective meets it the result is optimal (``exact``), otherwise ``n_optimal`` is
    unknown (``None``).
    """
    if not 1 <= max_exact <= MAX_EXACT_LIMIT:
        raise ValueError(f"max_exact must be in 1..{MAX_EXACT_LIMIT}, got {max_exact}")
    P = profile.pairwise
    components = _components(P) if split else [np.arange(profile.n)]
    blocks = []
    counts = []
    gap = 0.0
    start = 0
    for comp in components:
        local, count, comp_gap = _kemeny_component(P[np.ix_(comp, comp)], max_ties, max_exact)
        blocks.append((np.arange(start, start + comp.size), [comp[o] for o in local]))
        counts.append(count)
        gap += comp_gap
        start += comp.size
    ties = combine_blocks(profile.n, blocks, max_ties)
    objective = kemeny_cost(P, ties[0])
    heuristic = any(comp.size > max_exact for comp in components)
    count = Count.product(counts)
    return Aggregation(
        rule="kemeny",
        ranking=ties[0],
        ties=ties,
        count=count,
        objective=objective,
        exact=gap <= OBJECTIVE_TOL,
        bound=objective - gap if heuristic else None,
        details={"components": [c.tolist() for c in components]},
    )


# --------------------------------------------------------------------------- footrule
def _tight_edges(cost: np.ndarray, assigned: np.ndarray) -> np.ndarray:
    """``(n, n)`` boolean: the edges ``(x, k)`` with zero reduced cost for an optimal dual of
    the assignment problem, given an optimal assignment ``x -> assigned[x]``.

    With ``x_k`` the candidate assigned to ``k``, ``v`` solves ``v_l <= v_k + cost[x_k, l] -
    cost[x_k, k]`` (Bellman-Ford from a virtual source; optimality rules out negative
    cycles) and ``u_x = cost[x, assigned[x]] - v[assigned[x]]``."""
    n = cost.shape[0]
    holder = np.empty(n, dtype=np.int64)
    holder[assigned] = np.arange(n)
    arc = cost[holder] - cost[holder, np.arange(n)][:, None]  # arc[k, l]
    v = np.zeros(n)
    for _ in range(n):
        relaxed = np.minimum(v, (v[:, None] + arc).min(axis=0))
        if np.array_equal(relaxed, v):
            break
        v = relaxed
    u = cost[np.arange(n), assigned] - v[assigned]
    return cost - u[:, None] - v[None, :] <= OBJECTIVE_TOL


def footrule(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Footrule consensus: the minimum-cost assignments of candidates to positions."""
    from scipy.optimize import linear_sum_assignment  # here: scipy is slow to import

    M = profile.positional_matrix
    k = np.arange(profile.n)
    cost = M @ np.abs(k[:, None] - k[None, :])  # cost[x, k] = E|sigma'(x) - k|
    rows, cols = linear_sum_assignment(cost)
    tight = _tight_edges(cost, cols[np.argsort(rows)])
    ties = perfect_matchings(tight, max_ties)
    return Aggregation(
        rule="footrule",
        ranking=ties[0],
        ties=ties,
        count=count_perfect_matchings(tight, max_ties),
        objective=float(cost[rows, cols].sum()),
    )


# --------------------------------------------------------------------------- mode
def _prefix_weights(profile: Profile) -> dict[tuple[int, ...], float]:
    """``c(p)``: probability given to each completion of the strict prefix ``p``."""
    c: dict[tuple[int, ...], float] = defaultdict(float)
    expanded = 0
    for groups, p in zip(profile.weak_orders(), profile.probabilities, strict=True):
        if len(groups[-1]) == 1:  # a complete ballot: the bottom "group" is one candidate
            head, bottom = groups, 0
        else:
            head, bottom = groups[:-1], len(groups[-1])
        n_ext = math.prod(math.factorial(len(g)) for g in head)
        expanded += n_ext
        if expanded > MAX_MODE_EXPANSION:
            raise ValueError(
                f"the mode rule expands ties inside ballots into more than "
                f"{MAX_MODE_EXPANSION} rankings; use another rule for this profile"
            )
        share = p / n_ext / math.factorial(bottom)
        for combo in itertools.product(*(itertools.permutations(g) for g in head)):
            prefix = tuple(x for part in combo for x in part)
            c[prefix] += share
    return c


def mode(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Mode of the profile (0-1 loss): the most probable ranking(s) under the tie convention."""
    n = profile.n
    c = _prefix_weights(profile)
    children: dict[tuple[int, ...], set[int]] = defaultdict(set)
    for prefix in c:
        for d in range(len(prefix)):
            children[prefix[:d]].add(prefix[d])
    best: dict[tuple[int, ...], float] = {}  # best completion probability below a node
    count: dict[tuple[int, ...], int] = {}  # how many completions reach it
    for node in sorted(set(children) | set(c), key=len, reverse=True):  # children first
        value = c.get(node, 0.0)
        kids = children.get(node)
        if not kids:
            best[node], count[node] = value, math.factorial(n - len(node))
            continue
        top = max(best[(*node, x)] for x in kids)
        best[node] = value + top
        count[node] = sum(
            count[(*node, x)] for x in kids if best[(*node, x)] >= top - OBJECTIVE_TOL
        )
    p_mode = best[()]
    ties: list[np.ndarray] = []
    stack: list[tuple[int, ...]] = [()]  # depth first, lowest candidate first
    while stack and len(ties) < max_ties:
        node = stack.pop()
        kids = children.get(node)
        if not kids:
            rest = sorted(set(range(n)) - set(node))
            for tail in itertools.islice(itertools.permutations(rest), max_ties - len(ties)):
                ties.append(np.array((*node, *tail), dtype=np.int64))
            continue
        top = max(best[(*node, x)] for x in kids)
        stack.extend(
            (*node, x)
            for x in sorted(kids, reverse=True)
            if best[(*node, x)] >= top - OBJECTIVE_TOL
        )
    return Aggregation(
        rule="mode",
        ranking=ties[0],
        ties=ties,
        count=Count(count[()]),
        objective=1.0 - p_mode,
        details={"probability": p_mode},
    )
