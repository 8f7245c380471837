"""Brute-force references for the aggregation tests, built from raw ballots (small n only).

Nothing here reads a :class:`Profile`: every expectation starts from the ballots as a voter
writes them (:class:`Ballots`: repeated ballots, tie groups in any order, candidates left
out), so a bug in how ``Profile`` merges or stores ballots cannot pass unnoticed. The rules
are re-derived from their definitions over all of ``S_n``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from rankmodels.aggregation import Profile
from rankmodels.permutations import all_permutations, inverse

TOL = 1e-9


@dataclass(frozen=True)
class Ballots:
    """Raw ballots: ``groups[j]`` lists ballot ``j``'s tie groups of candidate indices, best
    first (candidates it leaves out are unranked); ``weights[j]`` its count. Equal ballots
    may repeat."""

    groups: list[list[list[int]]]
    weights: list[float]
    n: int

    def profile(self) -> Profile:
        """The profile under test, built from these ballots."""
        return Profile.from_weak_orders(self.groups, self.weights, self.n)


def random_ballots(
    n: int, rng: np.random.Generator, m: int = 8, pool: int | None = None, max_weight: int = 4
) -> Ballots:
    """``m`` ballots drawn with replacement from ``pool`` random weak orders (repeats occur),
    each with random ties and truncation, members of a group in random order. Few distinct
    ballots and small integer weights make exact ties between rankings common."""
    types = []
    for _ in range(pool or m):
        perm = rng.permutation(n)
        keep = int(rng.integers(1, n + 1))
        cuts = np.sort(rng.choice(np.arange(1, keep), size=rng.integers(0, keep), replace=False))
        types.append([rng.permutation(g).tolist() for g in np.split(perm[:keep], cuts) if g.size])
    picks = rng.integers(0, len(types), size=m)
    weights = rng.integers(1, max_weight + 1, size=m).astype(float).tolist()
    return Ballots([types[i] for i in picks], weights, n)


def expanded_distribution(ballots: Ballots) -> tuple[np.ndarray, np.ndarray]:
    """``(orders, probs)`` over all of ``S_n``: each ballot spread uniformly over the
    permutations that respect its groups (unranked candidates last), found by testing
    every permutation."""
    n = ballots.n
    perms = all_permutations(n)
    probs = np.zeros(len(perms))
    for groups, w in zip(ballots.groups, ballots.weights, strict=True):
        level = np.full(n, len(groups))
        for g, members in enumerate(groups):
            level[members] = g
        ok = np.all(np.diff(level[perms], axis=1) >= 0, axis=1)
        probs[ok] += w / ok.sum()
    return perms, probs / sum(ballots.weights)


def pairwise(perms: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``P[x, y]``: probability that ``x`` is ranked above ``y``."""
    ranks = inverse(perms)
    n = perms.shape[1]
    return np.array([[probs[ranks[:, x] < ranks[:, y]].sum() for y in range(n)] for x in range(n)])


def minimisers(losses: np.ndarray, perms: np.ndarray) -> set[tuple[int, ...]]:
    """The orders whose loss is minimal (within ``TOL``)."""
    return {tuple(p) for p in perms[losses <= losses.min() + TOL].tolist()}


def sorted_by(scores: np.ndarray, perms: np.ndarray) -> set[tuple[int, ...]]:
    """Every order listing the candidates by non-increasing ``scores`` (ties in any order)."""
    s = scores[perms]
    return {tuple(p) for p in perms[np.all(np.diff(s, axis=1) <= TOL, axis=1)].tolist()}


def respecting(before: set[tuple[int, int]], perms: np.ndarray) -> set[tuple[int, ...]]:
    """Every order putting ``x`` above ``y`` for each ``(x, y)`` in ``before``."""
    ranks = inverse(perms)
    ok = np.ones(len(perms), dtype=bool)
    for x, y in before:
        ok &= ranks[:, x] < ranks[:, y]
    return {tuple(p) for p in perms[ok].tolist()}


# ---------------------------------------------------------------- rules from their definitions
POSITIONAL = {
    "borda": lambda n, o: n - np.arange(1, n + 1.0),
    "plurality": lambda n, o: np.eye(n)[0],
    "antiplurality": lambda n, o: 1.0 - np.eye(n)[-1],
    "k-approval": lambda n, o: (np.arange(n) < o["k"]).astype(float),
    "log": lambda n, o: -np.log(np.arange(1, n + 1.0)),
    "squared": lambda n, o: -(np.arange(1, n + 1.0) ** 2),
    "scores": lambda n, o: np.asarray(o["scores"], dtype=float),
}


def expected_distance(perms: np.ndarray, probs: np.ndarray, distance) -> np.ndarray:
    """``E_{sigma' ~ P} d(sigma, sigma')`` for every ``sigma`` (``distance`` on rank vectors)."""
    ranks = inverse(perms)
    support = probs > 0
    return distance(ranks[:, None, :], ranks[None, support, :]) @ probs[support]


def _kendall(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.shape[-1]
    return sum(
        ((a[..., x] < a[..., y]) != (b[..., x] < b[..., y])).astype(float)
        for x, y in itertools.combinations(range(n), 2)
    )


DISTANCES = {
    "kemeny": _kendall,
    "footrule": lambda a, b: np.abs(a - b).sum(axis=-1).astype(float),
    "mode": lambda a, b: np.any(a != b, axis=-1).astype(float),
}


def margins(perms: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``D[x, y] = P_{x<y} - P_{y<x}``, rounded so that equal margins compare equal."""
    P = pairwise(perms, probs)
    return np.round(P - P.T, 9)


def schulze_strengths(D: np.ndarray) -> np.ndarray:
    """Strongest-path strengths from every simple path (no Floyd-Warshall)."""
    n = D.shape[0]
    p = np.zeros((n, n))
    for x, y in itertools.permutations(range(n), 2):
        others = [z for z in range(n) if z not in (x, y)]
        for r in range(len(others) + 1):
            for mid in itertools.permutations(others, r):
                path = (x, *mid, y)
                p[x, y] = max(p[x, y], min(max(D[a, b], 0) for a, b in itertools.pairwise(path)))
    return p


def ranked_pairs_tie_breakings(D: np.ndarray) -> int:
    """How many orders of the majority pairs respect decreasing margins."""
    _, counts = np.unique(D[D > 0], return_counts=True)
    return int(np.prod([np.prod(np.arange(1, c + 1)) for c in counts]))


def ranked_pairs_rankings(D: np.ndarray, perms: np.ndarray) -> set[tuple[int, ...]]:
    """Ranked pairs over every tie-breaking: lock pairs by decreasing margin, skipping those
    that close a cycle; collect the orders that respect each outcome's locked pairs."""
    n = D.shape[0]
    levels = sorted({D[x, y] for x in range(n) for y in range(n) if D[x, y] > 0}, reverse=True)
    groups = [[(x, y) for x in range(n) for y in range(n) if D[x, y] == m] for m in levels]
    out: set[tuple[int, ...]] = set()
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        locked: set[tuple[int, int]] = set()
        for x, y in itertools.chain.from_iterable(orders):
            if not _reaches(locked, y, x):
                locked.add((x, y))
        out |= respecting(locked, perms)
    return out


def _reaches(edges: set[tuple[int, int]], a: int, b: int) -> bool:
    seen, todo = {a}, [a]
    while todo:
        u = todo.pop()
        if u == b:
            return True
        for x, y in edges:
            if x == u and y not in seen:
                seen.add(y)
                todo.append(y)
    return False


def irv_votes(ballots: Ballots, continuing: set[int]) -> dict[int, Fraction]:
    """Instant runoff's exact tally over ``continuing``: each raw ballot counts for the
    continuing members of its first group that has any, split equally; the candidates it
    leaves out, and a last group of two or more, are unranked (the ballot is exhausted)."""
    votes = {x: Fraction(0) for x in continuing}
    for groups, w in zip(ballots.groups, ballots.weights, strict=True):
        ranked = {x for g in groups for x in g}
        full = [list(g) for g in groups] + (
            [sorted(set(range(ballots.n)) - ranked)] * (len(ranked) < ballots.n)
        )
        for i, group in enumerate(full):
            live = [x for x in group if x in continuing]
            if live:
                if i < len(full) - 1 or len(group) == 1:
                    for x in live:
                        votes[x] += Fraction(w) / len(live)
                break
    return votes


def irv_rankings(
    ballots: Ballots, batch: bool = False, candidates: list[int] | None = None
) -> set[tuple[int, ...]]:
    """Every order (best first) that instant runoff can produce: read from the bottom, each
    candidate had the fewest votes among those above it and itself; with ``batch``, where
    the lowest ``k >= 2`` have fewer votes together than the next, the bottom ``k`` places
    hold exactly them, by non-increasing votes. With ``candidates``, the count runs among
    them only (the others eliminated from the start) and the orders are of them."""
    out = set()
    everyone = list(range(ballots.n)) if candidates is None else candidates
    for perm in itertools.permutations(everyone):
        size = len(everyone)
        while size > 1:
            continuing = set(perm[:size])
            votes = irv_votes(ballots, continuing)
            low = sorted(continuing, key=lambda x: votes[x])
            sums = list(itertools.accumulate(votes[x] for x in low))
            k = next((k for k in range(size - 1, 1, -1) if sums[k - 1] < votes[low[k]]), 0)
            if batch and k and not all(votes[x] == 0 for x in low[:k]):
                segment = perm[size - k : size]
                if set(segment) != set(low[:k]) or any(
                    votes[a] < votes[b] for a, b in itertools.pairwise(segment)
                ):
                    break
                size -= k
            elif votes[perm[size - 1]] != votes[low[0]]:
                break
            else:
                size -= 1
        else:
            out.add(perm)
    return out


def beats(ballots: Ballots) -> np.ndarray:
    """``B[x, y]``: ``x`` beats ``y`` by a strict majority of the expanded distribution."""
    return margins(*expanded_distribution(ballots)) > 0


def benham_rankings(ballots: Ballots) -> set[tuple[int, ...]]:
    """Every order Benham's rule can produce: the candidates not yet placed are a middle
    segment of the order; when one of them beats all the others it takes the segment's
    top place, otherwise the bottom place goes to one with the fewest votes among them."""
    B = beats(ballots)
    out = set()
    for perm in itertools.permutations(range(ballots.n)):
        top, bottom = 0, ballots.n
        while bottom - top > 1:
            live = set(perm[top:bottom])
            winner = [x for x in live if all(B[x, y] for y in live - {x})]
            if winner:
                if perm[top] != winner[0]:
                    break
                top += 1
            else:
                votes = irv_votes(ballots, live)
                if votes[perm[bottom - 1]] != min(votes.values()):
                    break
                bottom -= 1
        else:
            out.add(perm)
    return out


def smith_sets(ballots: Ballots) -> list[list[int]]:
    """The Smith set (smallest set whose members all beat every outsider), then the Smith
    set of the rest, and so on: found by trying every subset, smallest first."""
    B = beats(ballots)
    rest, out = set(range(ballots.n)), []
    while rest:
        smith = next(
            list(S)
            for r in range(1, len(rest) + 1)
            for S in itertools.combinations(sorted(rest), r)
            if all(B[x, y] for x in S for y in rest - set(S))
        )
        out.append(smith)
        rest -= set(smith)
    return out


def smith_irv_rankings(ballots: Ballots) -> set[tuple[int, ...]]:
    """Every order Smith-IRV can produce: each Smith set in turn, ranked by instant runoff
    among its own candidates."""
    parts = [irv_rankings(ballots, candidates=s) for s in smith_sets(ballots)]
    return {sum(combo, ()) for combo in itertools.product(*parts)}


def optimal_rankings(rule: str, ballots: Ballots, **options: object) -> set[tuple[int, ...]]:
    """Every optimal ranking of ``rule`` on ``ballots``, from the rule's definition over
    all of ``S_n``. An unknown rule is a ``KeyError``: every registered rule needs one."""
    if rule == "irv":
        return irv_rankings(ballots, bool(options.get("batch_elimination")))
    if rule == "benham":
        return benham_rankings(ballots)
    if rule == "smith-irv":
        return smith_irv_rankings(ballots)
    perms, probs = expanded_distribution(ballots)
    n = ballots.n
    if rule in POSITIONAL:
        h = POSITIONAL[rule](n, options)
        return sorted_by(probs @ h[inverse(perms)], perms)  # f_P(x) = E[h(sigma(x))]
    if rule in DISTANCES:
        return minimisers(expected_distance(perms, probs, DISTANCES[rule]), perms)
    D = margins(perms, probs)
    if rule == "copeland":
        return sorted_by((D > 0).sum(axis=1) + 0.5 * ((D == 0).sum(axis=1) - 1), perms)
    if rule == "schulze":
        p = schulze_strengths(D)
        return respecting({(x, y) for x in range(n) for y in range(n) if p[x, y] > p[y, x]}, perms)
    if rule == "ranked-pairs":
        return ranked_pairs_rankings(D, perms)
    raise KeyError(f"no reference for rule {rule!r}")
