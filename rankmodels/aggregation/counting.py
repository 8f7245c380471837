"""Listing and counting optimal rankings: linear extensions, perfect matchings, products.

Theorem 9 of chapter 4 makes ties inherent, so every rule reports *how many* rankings are
optimal, not just one. The optimal sets of the rules have three shapes:

* **Linear extensions** of a strict partial order ``before[x, y]`` (``x`` above ``y``):
  Schulze, ranked pairs, score ties, a Kemeny heuristic proved optimal. The components of
  the *incomparability* graph of a partial order are totally ordered (every member of one is
  above every member of the next), so the number of extensions is the product over them,
  ``e(P) = prod_i e(P_i)``. A component of ``k <= MAX_COUNT_SIZE`` members is counted by
  the subset recursion

      W({}) = 1,    W(S + {x}) += W(S)  for x not in S with every predecessor of x in S,

  ``e(P_i) = W(all)``, in ``O(k 2^k)``.
* **Perfect matchings** of a bipartite graph of candidates and positions (the tight edges
  of the footrule assignment problem). Edges that lie in no perfect matching are dropped
  first: for a perfect matching ``M``, an edge outside ``M`` lies in another one iff its
  candidate and position are in the same strongly connected component of the graph that
  orients ``M``'s edges position -> candidate and the others candidate -> position. The
  remaining graph falls apart into those components, so the count is the product of their
  permanents, each by the subset recursion over the candidates placed in the component's
  first ``|S|`` positions, ``O(k 2^k)``.
* **Products** of independent blocks (groups of tied scores, Kemeny's majority components,
  matching components): :func:`combine_blocks`.

Counts are Python integers. A block with no constraint at all (an antichain; a complete
bipartite block) has ``k!`` members. Another block larger than ``MAX_COUNT_SIZE`` is
counted by listing its members up to ``limit``: exact when the listing ends earlier,
otherwise the count is a lower bound (:class:`Count` with ``exact=False``); so is a subset
recursion whose value passes ``2^62``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numba
import numpy as np

__all__ = [
    "DEFAULT_MAX_TIES",
    "MAX_COUNT_SIZE",
    "Count",
    "combine_blocks",
    "count_linear_extensions",
    "count_perfect_matchings",
    "linear_extensions",
    "perfect_matchings",
    "transitive_closure",
]

DEFAULT_MAX_TIES = 1000
"""At most this many optimal rankings are listed."""
MAX_COUNT_SIZE = 20
"""Largest component counted by the subset recursion (2^20 int64 counters: 8 MB)."""
_SATURATED = 1 << 62


@dataclass(frozen=True)
class Count:
    """A number of rankings: exactly ``value``, or at least ``value`` when not ``exact``."""

    value: int
    exact: bool = True

    def __mul__(self, other: Count) -> Count:
        return Count(self.value * other.value, self.exact and other.exact)

    def __add__(self, other: Count) -> Count:
        return Count(self.value + other.value, self.exact and other.exact)

    @staticmethod
    def product(counts: Iterable[Count]) -> Count:
        """The product of ``counts`` (the empty product is exactly 1)."""
        total = Count(1)
        for c in counts:
            total = total * c
        return total


# --------------------------------------------------------------------------- products
def combine_blocks(
    n: int,
    blocks: Sequence[tuple[Sequence[int], Iterable[Sequence[int]]]],
    limit: int = DEFAULT_MAX_TIES,
) -> list[np.ndarray]:
    """Up to ``limit`` orders built from independent blocks.

    ``blocks[i] = (slots, listing)``: the positions the block fills and its (lazy) listing of
    candidate sequences for them. The orders are the lexicographic product of the listings
    (the first block varies slowest); each listing is consumed only as far as the first
    ``limit`` products need, so a block with astronomically many members costs nothing.
    """
    lists: list[list[Sequence[int]]] = [[] for _ in blocks]
    need = limit
    for i in range(len(blocks) - 1, -1, -1):
        lists[i] = list(itertools.islice(blocks[i][1], max(need, 1)))
        if not lists[i]:
            return []
        need = -(-need // len(lists[i]))
    slots = [np.asarray(s, dtype=np.int64) for s, _ in blocks]
    out = []
    for combo in itertools.islice(itertools.product(*lists), limit):
        order = np.empty(n, dtype=np.int64)
        for where, members in zip(slots, combo, strict=True):
            order[where] = members
        out.append(order)
    return out


# --------------------------------------------------------------------------- partial orders
def transitive_closure(rel: np.ndarray) -> np.ndarray:
    """``(n, n)`` boolean transitive closure of the relation ``rel`` (Warshall, O(n^3))."""
    return _warshall(np.array(rel, dtype=np.bool_))


@numba.njit(cache=True)
def _warshall(closure: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    n = closure.shape[0]
    for k in range(n):
        for i in range(n):
            if closure[i, k]:
                for j in range(n):
                    if closure[k, j]:
                        closure[i, j] = True
    return closure


def linear_extensions(
    before: np.ndarray, preference: np.ndarray | None = None, limit: int = DEFAULT_MAX_TIES
) -> list[np.ndarray]:
    """Up to ``limit`` orders respecting the acyclic relation ``before[x, y]`` (x above y).

    Orders are generated depth first, trying available candidates by decreasing
    ``preference`` (then index), so the first one is the preference-greedy extension.
    """
    return list(itertools.islice(_extensions(np.asarray(before, dtype=bool), preference), limit))


def _extensions(before: np.ndarray, preference: np.ndarray | None) -> Iterator[np.ndarray]:
    """All linear extensions of ``before``, lazily (an explicit stack: no recursion limit)."""
    n = before.shape[0]
    if n == 0:
        yield np.empty(0, dtype=np.int64)
        return
    pref = np.zeros(n) if preference is None else np.asarray(preference, dtype=float)
    try_order = np.lexsort((np.arange(n), -pref)).tolist()
    indegree = before.sum(axis=0).astype(np.int64)
    placed = np.zeros(n, dtype=bool)
    prefix: list[int] = []

    def options() -> list[int]:
        return [y for y in try_order if indegree[y] == 0 and not placed[y]]

    stack = [options()]  # stack[d]: candidates still to try at depth d
    while stack:
        if len(prefix) == len(stack):  # undo the choice made at this depth
            x = prefix.pop()
            placed[x] = False
            indegree[before[x]] += 1
        if not stack[-1]:
            stack.pop()
            continue
        x = stack[-1].pop(0)
        prefix.append(x)
        placed[x] = True
        indegree[before[x]] -= 1
        if len(prefix) == n:
            yield np.array(prefix, dtype=np.int64)
        else:
            stack.append(options())


def count_linear_extensions(before: np.ndarray, limit: int = DEFAULT_MAX_TIES) -> Count:
    """Number of linear extensions of the strict partial order ``before`` (see module doc).

    ``before`` must be transitively closed (use :func:`transitive_closure`). Components of
    the incomparability graph above ``MAX_COUNT_SIZE`` are counted by listing up to ``limit``.
    """
    from scipy.sparse import csr_matrix  # here: scipy is slow to import, and rarely needed
    from scipy.sparse.csgraph import connected_components

    before = np.asarray(before, dtype=bool)
    n = before.shape[0]
    incomparable = ~(before | before.T) & ~np.eye(n, dtype=bool)
    k, labels = connected_components(csr_matrix(incomparable), directed=False)
    counts = []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        sub = before[np.ix_(members, members)]
        # unconstrained: candidates tied among themselves, every order
        counts.append(
            _block_count(sub, not sub.any(), _count_extensions, _extensions(sub, None), limit)
        )
    return Count.product(counts)


def _block_count(
    sub: np.ndarray,
    unconstrained: bool,
    recursion: Callable[[np.ndarray, int], tuple[int, bool]],
    listing: Iterator[np.ndarray],
    limit: int,
) -> Count:
    """The count of one block with relation ``sub`` (``k x k``): ``k!`` when unconstrained,
    else the subset ``recursion`` on the bit masks of ``sub``'s columns when
    ``k <= MAX_COUNT_SIZE``, else the length of the lazy ``listing`` up to ``limit``."""
    k = sub.shape[0]
    if unconstrained:
        return Count(math.factorial(k))
    if k <= MAX_COUNT_SIZE:
        masks = (sub.astype(np.int64) << np.arange(k)[:, None]).sum(axis=0)
        value, saturated = recursion(masks, k)
        return Count(int(value), not saturated)
    listed = sum(1 for _ in itertools.islice(listing, limit))
    return Count(listed, listed < limit)


@numba.njit(cache=True)
def _count_extensions(preds: np.ndarray, n: int) -> tuple[int, bool]:  # pragma: no cover
    """Subset recursion ``W``; ``preds[x]`` is the bit mask of ``x``'s predecessors."""
    ways = np.zeros(1 << n, dtype=np.int64)
    ways[0] = 1
    saturated = False
    for S in range(1 << n):
        if ways[S] == 0:
            continue
        for x in range(n):
            if not (S >> x) & 1 and (preds[x] & S) == preds[x]:
                saturated |= _add_saturating(ways, S | (1 << x), ways[S])
    return ways[(1 << n) - 1], saturated


@numba.njit(cache=True)
def _add_saturating(ways: np.ndarray, T: int, value: int) -> bool:  # pragma: no cover
    """``ways[T] += value``, capped at 2^62 (then True: the count became a lower bound)."""
    ways[T] += value
    if ways[T] > _SATURATED:
        ways[T] = _SATURATED
        return True
    return False


# --------------------------------------------------------------------------- matchings
def _live_edges(adj: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """For the square bipartite graph ``adj[x, k]``: the edges that lie in some perfect
    matching, a component label per candidate and the position each candidate takes in one
    perfect matching (in the same component); ``None`` when there is no perfect matching."""
    from scipy.sparse import csr_matrix  # here: scipy is slow to import, and rarely needed
    from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

    n = adj.shape[0]
    graph = csr_matrix(adj)
    match = maximum_bipartite_matching(graph, perm_type="column")
    if np.any(match < 0):
        return None
    xs, ks = graph.nonzero()
    free = match[xs] != ks
    # nodes 0..n-1 candidates, n..2n-1 positions; free edges x -> k, matched edges k -> x
    src = np.concatenate([xs[free], n + match])
    dst = np.concatenate([n + ks[free], np.arange(n)])
    arcs = csr_matrix((np.ones(src.size, dtype=bool), (src, dst)), shape=(2 * n, 2 * n))
    _, scc = connected_components(arcs, directed=True, connection="strong")
    live = np.zeros_like(adj, dtype=bool)
    live[xs, ks] = ~free | (scc[xs] == scc[n + ks])
    return live, scc[:n], match


def _matching_components(
    labels: np.ndarray, match: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(candidates, positions)`` of each component of the live graph, by first position."""
    comps = []
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        comps.append((rows, np.sort(match[rows])))
    return sorted(comps, key=lambda rc: int(rc[1][0]))


def count_perfect_matchings(adj: np.ndarray, limit: int = DEFAULT_MAX_TIES) -> Count:
    """Number of perfect matchings of the bipartite graph ``adj[x, k]`` (see module doc)."""
    adj = np.asarray(adj, dtype=bool)
    found = _live_edges(adj)
    if found is None:
        return Count(0)
    live, labels, match = found
    counts = []
    for rows, cols in _matching_components(labels, match):
        sub = live[np.ix_(rows, cols)]
        # unconstrained: every candidate fits every position of the block
        counts.append(_block_count(sub, sub.all(), _count_matchings, _matchings(sub), limit))
    return Count.product(counts)


@numba.njit(cache=True)
def _count_matchings(masks: np.ndarray, n: int) -> tuple[int, bool]:  # pragma: no cover
    """Permanent of a 0/1 matrix: ``masks[k]`` = bit mask of the rows allowed in column ``k``;
    ``ways[S]`` = fillings of the first ``|S|`` columns by the rows in ``S``."""
    ways = np.zeros(1 << n, dtype=np.int64)
    ways[0] = 1
    saturated = False
    for S in range(1 << n):
        if ways[S] == 0:
            continue
        k = 0
        T = S
        while T:
            T &= T - 1
            k += 1
        if k == n:
            continue
        free = masks[k] & ~S
        while free:
            bit = free & -free
            free ^= bit
            saturated |= _add_saturating(ways, S | bit, ways[S])
    return ways[(1 << n) - 1], saturated


def perfect_matchings(adj: np.ndarray, limit: int = DEFAULT_MAX_TIES) -> list[np.ndarray]:
    """Up to ``limit`` perfect matchings of ``adj[x, k]`` as orders (``order[k]`` = the
    candidate at position ``k``); the first takes, position by position, the lowest
    candidate index that still completes a matching."""
    adj = np.asarray(adj, dtype=bool)
    found = _live_edges(adj)
    if found is None:
        return []
    live, labels, match = found
    blocks = [
        (cols, _relabelled(_matchings(live[np.ix_(rows, cols)]), rows))
        for rows, cols in _matching_components(labels, match)
    ]
    return combine_blocks(adj.shape[0], blocks, limit)


def _relabelled(orders: Iterable[np.ndarray], labels: np.ndarray) -> Iterator[np.ndarray]:
    """``labels[order]`` for each order, lazily (local indices to candidate indices)."""
    for order in orders:
        yield labels[order]


def _matchings(adj: np.ndarray) -> Iterator[np.ndarray]:
    """All perfect matchings of ``adj`` (rows matched to columns 0, 1, ... in turn), lazily.

    Every node of the search holds the edges of what is left that lie in some perfect
    matching, so every branch ends in a matching (no dead ends). They are recomputed only
    after a real choice: when a column has a single such edge, dropping it and its row
    leaves exactly the remaining such edges."""
    n = adj.shape[0]
    found = _live_edges(adj)
    if found is None:
        return
    if n == 0:
        yield np.empty(0, dtype=np.int64)
        return
    prefix: list[int] = []
    # stack[d]: (rows left, their live edges to columns d.., local rows still to try, forced)
    first = np.flatnonzero(found[0][:, 0]).tolist()
    stack = [(np.arange(n), found[0], first, len(first) == 1)]
    while stack:
        rows, live, options, forced = stack[-1]
        if len(prefix) == len(stack):  # undo the choice made at this column
            prefix.pop()
        if not options:
            stack.pop()
            continue
        i = options.pop(0)
        prefix.append(int(rows[i]))
        if len(prefix) == n:
            yield np.array(prefix, dtype=np.int64)
            continue
        rest_rows = np.delete(rows, i)
        rest = np.delete(live[:, 1:], i, axis=0)
        if not forced:
            rest = _live_edges(rest)[0]  # a real choice: some edges die with it
        nxt = np.flatnonzero(rest[:, 0]).tolist()
        stack.append((rest_rows, rest, nxt, len(nxt) == 1))
