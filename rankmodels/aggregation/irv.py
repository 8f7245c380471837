"""Instant runoff (IRV, also "ranked-choice voting", "alternative vote", "Hare").

Rounds: every ballot counts for its highest-ranked continuing candidate; the candidate with
the fewest votes is eliminated; repeat until one candidate is left. The consensus ranking is
the winner followed by the others in reverse order of elimination.

Conventions (documented for users in ``docs/aggregation.md``)
    * A ballot's unranked candidates -- its last tie group when that group has two or more
      members (see :class:`.Profile`: ``A>B=C`` of three candidates is the ballot ``A``) --
      receive nothing: once its ranked candidates are all eliminated the ballot is
      *exhausted*. A ranking that misses only one candidate is the complete ranking; the
      missing one is reached only when it is the last candidate left.
    * A tie group elsewhere on a ballot splits the ballot equally among its continuing
      members (pref_voting's ``score_method="split"``). This is IRV of the ballot read as the
      uniform distribution over its linear extensions, the convention of the whole package,
      in every round where exhausted ballots are counted as exhausted.
    * Ties for the fewest votes are broken *every possible way* (parallel-universe
      tie-breaking): each choice is followed, and every ranking it leads to is an optimal
      ranking of the rule (so ``n_optimal`` counts the distinct elimination orders and the
      winners are all candidates some tie-breaking elects). The listed first ranking
      eliminates, among tied candidates, the one with the highest index. Candidates with no
      votes change no tally when eliminated, so they go all at once (all their orders).
    * Undeclared write-ins (the candidate :data:`.cvr.WRITE_IN` that a cast-vote record's
      write-in markers count for) are eliminated alone in the first round, whatever their
      votes, as certified tabulators (RCTab) do; the other rounds are unchanged.
    * The count runs until one candidate is left (the ranking needs the whole elimination
      order); the round in which a candidate first has a majority of the votes counting
      (more than half of the ballots not exhausted) records it as ``elected``, where a
      tabulator stops (two candidates left with equal votes: no such round). A round that
      eliminates the write-ins elects nobody.
    * ``batch_elimination``: in a round where the lowest ``k >= 2`` candidates together
      have fewer votes than the next one, they are eliminated together (they could never
      overtake it); within the batch the ranking orders them by their votes, equal votes
      in every order. The winners are the same as one at a time; the rounds are fewer.

Condorcet-IRV hybrids (same conventions, ties broken every way as above)
    * **Benham** (:func:`benham`): before each round, a continuing candidate who beats every
      other continuing candidate head to head (strict majority of the pairwise marginals
      ``P_{x<y}`` of :class:`.Profile`, unranked candidates below ranked ones and ties
      counted 1/2) is elected and the count stops; otherwise the candidate with the fewest
      votes is eliminated. Candidates go out one at a time, also those without votes
      (eliminating one of them may leave a Condorcet winner). The ranking is built by the
      same rule: the winner, then the rule applied to the candidates left (so the count
      goes on without the winner), then the eliminated candidates in reverse order of
      elimination. [GreenArmytage2011]; pref_voting's ``benham_put``.
    * **Smith-IRV** (:func:`smith_irv`): instant runoff among the Smith set, the smallest
      set of candidates who each beat every candidate outside it by a strict majority (the
      first strongly connected component of the relation ``P_{x<y} >= P_{y<x}``); the
      others count as eliminated from the start. The ranking is the Smith set by instant
      runoff, then the rest by the same rule, i.e. the components in their majority order,
      each ranked by instant runoff among its own candidates. [GreenArmytage2011];
      pref_voting's ``smith_irv_put``.

Both elect the Condorcet winner whenever there is one, and agree with instant runoff when
no candidate beats all others along the way.

Tallies are compared with a tolerance of ``1e-9`` times the total weight (split ballots
give fractions).

Cost: one round is ``O(m n)`` for ``m`` distinct ballots, in a compiled loop; without ties
there are ``n - 1`` rounds. Ties multiply the rounds by the number of distinct sets of
continuing candidates that the tie-breakings reach, at most :data:`MAX_STATES`; beyond it
the count of optimal rankings is a lower bound.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np

from rankmodels.aggregation.condorcet import MARGIN_TOL, condorcet_winner
from rankmodels.aggregation.counting import DEFAULT_MAX_TIES, Count, transitive_closure
from rankmodels.aggregation.cvr import WRITE_IN
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import Aggregation

__all__ = [
    "MAX_STATES",
    "Round",
    "benham",
    "instant_runoff",
    "majority_components",
    "smith_irv",
    "tallies",
]

MAX_STATES = 100_000
"""Most sets of continuing candidates the tie-breaking search visits."""

_RTOL = 1e-9


@numba.njit(cache=True)
def _tallies(
    orders: np.ndarray, levels: np.ndarray, weights: np.ndarray, continuing: np.ndarray
) -> tuple:  # pragma: no cover
    m, n = orders.shape
    votes = np.zeros(n)
    exhausted = 0.0
    for j in range(m):
        last = levels[j, n - 1]
        trailing_tie = n >= 2 and levels[j, n - 2] == last
        for k in range(n):
            if continuing[orders[j, k]]:
                level = levels[j, k]
                if level == last and trailing_tie:
                    exhausted += weights[j]
                    break
                end = k
                members = 0
                while end < n and levels[j, end] == level:
                    members += continuing[orders[j, end]]
                    end += 1
                share = weights[j] / members
                for q in range(k, end):
                    if continuing[orders[j, q]]:
                        votes[orders[j, q]] += share
                break
    return votes, exhausted


def tallies(profile: Profile, continuing: np.ndarray) -> tuple[np.ndarray, float]:
    """``(votes, exhausted)`` of one round: ``votes[x]`` the weight of the ballots counting
    for continuing candidate ``x`` (0 for the others), shape ``(n,)``; ``exhausted`` the
    weight of ballots whose ranked candidates are all eliminated. ``continuing`` is a
    boolean mask of shape ``(n,)``."""
    mask = np.asarray(continuing, dtype=np.bool_)
    return _tallies(profile.orders, profile.levels, profile.weights, mask)


@dataclass(frozen=True)
class Round:
    """One round on the way to the first listed ranking.

    ``votes``: ``(n,)`` weight counting for each continuing candidate (0 for the others);
    ``continuing``: the candidates still in; ``exhausted``: weight of exhausted ballots;
    ``eliminated``: who goes out at the end of the round, in the listed ranking's order
    (several at once in a batch or when they have no votes); ``tied``: the candidates tied
    for the fewest votes when there was a choice (else empty); ``batch``: whether this was
    a batch elimination; ``elected``: Benham's Condorcet winner of the continuing
    candidates, elected in this round (the count stops); instant runoff's and Smith-IRV's
    majority winner, first in this round (the count goes on to rank the others; see the
    module docstring); else empty.
    """

    continuing: tuple[int, ...]
    votes: np.ndarray
    exhausted: float
    eliminated: tuple[int, ...]
    tied: tuple[int, ...]
    batch: bool
    elected: tuple[int, ...] = ()


@dataclass(frozen=True)
class _Move:
    """Leaving a state: ``groups`` go out (each group in any order, groups best first,
    i.e. the first group ends up ranked highest), reaching ``state``; ``batch`` when the
    move is a batch elimination; ``top`` when the group is elected (Benham), i.e. placed
    above the candidates left instead of below them."""

    groups: tuple[tuple[int, ...], ...]
    state: int
    batch: bool = False
    top: bool = False

    @property
    def ways(self) -> int:
        return math.prod(math.factorial(len(g)) for g in self.groups)


class _Search:
    """The states (bit masks of continuing candidates) reachable under every tie-breaking;
    ``condorcet``: elect a Condorcet winner of the continuing candidates first (Benham);
    ``first_out``: a candidate eliminated alone as soon as it has votes (write-ins)."""

    def __init__(
        self, profile: Profile, batch: bool, condorcet: bool = False, first_out: int | None = None
    ) -> None:
        self.profile = profile
        self.batch = batch
        self.condorcet = condorcet
        self.first_out = first_out
        self.tol = _RTOL * profile.total
        self.rounds: dict[int, tuple[np.ndarray, float]] = {}
        self.moves: dict[int, list[_Move]] = {}
        self.complete = True

    def members(self, state: int) -> list[int]:
        return [x for x in range(self.profile.n) if state >> x & 1]

    def explore(self, start: int) -> None:
        """Find the moves of every state reachable from ``start``: first along the listed
        ranking (always, at most ``n`` states), then depth first up to :data:`MAX_STATES`."""
        state = start
        while state not in self.moves:
            self.moves[state] = moves = self._moves(state)
            state = moves[0].state if moves else state
        visited: set[int] = set()
        todo = [start]
        while todo:
            state = todo.pop()
            if state in visited:
                continue
            visited.add(state)
            if state not in self.moves:
                if len(self.moves) >= MAX_STATES:
                    self.complete = False
                    return
                self.moves[state] = self._moves(state)
            todo.extend(m.state for m in self.moves[state] if m.state not in visited)

    def _moves(self, state: int) -> list[_Move]:
        members = self.members(state)
        if len(members) <= 1:
            return []
        mask = np.zeros(self.profile.n, dtype=np.bool_)
        mask[members] = True
        votes, exhausted = tallies(self.profile, mask)
        self.rounds[state] = (votes, exhausted)
        out = self.first_out
        if out is not None and state >> out & 1 and votes[out] > self.tol:
            return [_Move(((out,),), _without(state, [out]))]
        if self.condorcet:
            winner = condorcet_winner(self.profile.pairwise[np.ix_(members, members)])
            if winner is not None:
                elected = members[winner]
                return [_Move(((elected,),), _without(state, [elected]), top=True)]
        by_votes = sorted(members, key=lambda x: votes[x])
        low = votes[by_votes[0]]
        tied = [x for x in members if votes[x] <= low + self.tol]
        if low <= self.tol and len(tied) > 1 and not self.condorcet:
            # no votes: eliminating them changes no tally, so they go together (state 0
            # when that is everybody)
            return [_Move((tuple(tied),), _without(state, tied))]
        if self.batch:
            group = self._batch(by_votes, votes)
            if group:
                groups = _equal_groups(group, votes, self.tol)
                return [_Move(groups, _without(state, group), batch=True)]
        return [_Move(((x,),), _without(state, [x])) for x in sorted(tied, reverse=True)]

    def _batch(self, by_votes: list[int], votes: np.ndarray) -> list[int]:
        """The largest ``k >= 2`` lowest candidates with fewer votes together than the next
        one, or ``[]``."""
        below = np.cumsum(votes[by_votes])
        for k in range(len(by_votes) - 1, 1, -1):
            if below[k - 1] < votes[by_votes[k]] - self.tol:
                return by_votes[:k]
        return []

    def counts(self) -> tuple[dict[int, int], dict[int, frozenset[int]]]:
        """Rankings and winners from every explored state (children before parents)."""
        count: dict[int, int] = {}
        winners: dict[int, frozenset[int]] = {}
        for state in sorted(self.moves, key=int.bit_count):
            moves = self.moves[state]
            if not moves:
                count[state], winners[state] = 1, frozenset(self.members(state))
                continue
            count[state] = sum(m.ways * count.get(m.state, 0) for m in moves)
            winners[state] = frozenset().union(
                *(m.groups[0] if m.top or not m.state else winners.get(m.state, ()) for m in moves)
            )  # elected, or state 0: every continuing candidate had no votes, any may win
        return count, winners

    def rankings(self, start: int) -> Iterator[list[int]]:
        """Every ranking from ``start`` (best first), the first listed first, generated
        lazily (a depth-first walk with an explicit stack): the elected candidates, the
        last one left, the eliminated ones."""
        if not self.moves.get(start):
            yield self.members(start)
            return
        stack = [self._choices(start, [], [])]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                continue
            state, top, bottom = step
            moves = self.moves.get(state)
            if moves is None:  # not explored: the search stopped
                continue
            if not moves:
                yield top + self.members(state) + bottom
            else:
                stack.append(self._choices(state, top, bottom))

    def _choices(
        self, state: int, top: list[int], bottom: list[int]
    ) -> Iterator[tuple[int, list[int], list[int]]]:
        for move in self.moves[state]:
            for order in _orders(move.groups):
                if move.top:
                    yield move.state, top + list(order), bottom
                else:
                    yield move.state, top, list(order) + bottom


def _orders(groups: tuple[tuple[int, ...], ...]) -> Iterator[tuple[int, ...]]:
    """Every concatenation of an order of each group (lazily; groups are few)."""
    if not groups:
        yield ()
        return
    for head in itertools.permutations(groups[0]):
        for rest in _orders(groups[1:]):
            yield head + rest


def _without(state: int, gone: list[int] | tuple[int, ...]) -> int:
    for x in gone:
        state &= ~(1 << x)
    return state


def _equal_groups(group: list[int], votes: np.ndarray, tol: float) -> tuple[tuple[int, ...], ...]:
    """``group`` by decreasing votes, equal votes (within ``tol``) together."""
    ordered = sorted(group, key=lambda x: (-votes[x], x))
    out: list[list[int]] = []
    for x in ordered:
        if out and votes[out[-1][0]] - votes[x] <= tol:
            out[-1].append(x)
        else:
            out.append([x])
    return tuple(tuple(g) for g in out)


def instant_runoff(
    profile: Profile, max_ties: int = DEFAULT_MAX_TIES, batch_elimination: bool = False
) -> Aggregation:
    """Instant runoff on ``profile`` (conventions in the module docstring).

    Returns an :class:`Aggregation` whose rankings are the elimination orders reversed
    (winner first) over every tie-breaking, at most ``max_ties`` listed; ``details`` holds
    ``rounds`` (the :class:`Round` list of the first listed ranking), ``winners`` (sorted
    candidate indices elected by some tie-breaking) and ``states`` (sets of continuing
    candidates visited).
    """
    names = profile.candidates
    write_ins = names.index(WRITE_IN) if WRITE_IN in names else None
    search = _Search(profile, batch_elimination, first_out=write_ins)
    return _count("irv", search, [list(range(profile.n))], max_ties)


def benham(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Benham's rule: instant runoff that elects a Condorcet winner of the continuing
    candidates as soon as there is one (module docstring). The result is laid out as
    :func:`instant_runoff`'s; the last round is the one whose Condorcet winner is elected
    (:attr:`Round.elected`)."""
    search = _Search(profile, batch=False, condorcet=True)
    return _count("benham", search, [list(range(profile.n))], max_ties)


def smith_irv(profile: Profile, max_ties: int = DEFAULT_MAX_TIES) -> Aggregation:
    """Instant runoff among the Smith set, then among each following majority component
    (module docstring). The result is laid out as :func:`instant_runoff`'s; ``rounds``
    are those of the Smith set's count and ``details["smith_set"]`` lists its
    candidates."""
    components = majority_components(profile)
    result = _count("smith-irv", _Search(profile, batch=False), components, max_ties)
    result.details["smith_set"] = components[0]
    return result


def majority_components(profile: Profile | np.ndarray) -> list[list[int]]:
    """The candidates split into the strongly connected components of the relation
    ``P_{x<y} >= P_{y<x}`` ("not beaten by"), best first: every member of a component
    beats every member of a later one by a strict majority. The first is the Smith set.
    Margins within :data:`.condorcet.MARGIN_TOL` count as ties. ``profile``: a profile or
    its ``(n, n)`` pairwise matrix ``P``."""
    P = profile if isinstance(profile, np.ndarray) else profile.pairwise
    reach = transitive_closure((P - P.T >= -MARGIN_TOL) | np.eye(P.shape[0], dtype=bool))
    above = (reach.T & ~reach).sum(axis=1)  # candidates in higher components
    return [np.flatnonzero(above == k).tolist() for k in np.unique(above)]


def _count(rule: str, search: _Search, groups: list[list[int]], max_ties: int) -> Aggregation:
    """Run the count of ``search`` among each group of candidates (the others counted as
    eliminated) and rank the groups one after another, each by its own count."""
    starts = [sum(1 << x for x in group) for group in groups]
    for start in starts:
        search.explore(start)
    count, winners = search.counts()
    exact = search.complete
    listed = [list(itertools.islice(search.rankings(start), max_ties)) for start in starts]
    ties = [
        np.array([x for part in parts for x in part], dtype=np.int64)
        for parts in itertools.islice(itertools.product(*listed), max_ties)
    ]
    total = Count.product(
        Count(max(count.get(start, 0), len(found)), exact)
        for start, found in zip(starts, listed, strict=True)
    )
    return Aggregation(
        rule=rule,
        ranking=ties[0],
        ties=ties,
        count=total,
        details={
            "rounds": _rounds(search, starts[0], majority=not search.condorcet),
            "winners": sorted(winners.get(starts[0], ())) if exact else None,
            "states": len(search.moves),
        },
    )


def _rounds(search: _Search, start: int, majority: bool) -> list[Round]:
    """The rounds along the first listed ranking, up to the election of a Condorcet winner
    (Benham); with ``majority``, the majority winner marked elected (module docstring)."""
    rounds: list[Round] = []
    state = start
    while search.moves.get(state):
        move = search.moves[state][0]
        votes, exhausted = search.rounds[state]
        members = tuple(search.members(state))
        moves = search.moves[state]
        gone = tuple(x for g in move.groups for x in g)
        if move.top:
            rounds.append(Round(members, votes, float(exhausted), (), (), False, elected=gone))
            break
        if len(moves) > 1:
            tied = tuple(sorted(m.groups[0][0] for m in moves))
        else:  # candidates without votes go together; a batch's equal votes are ties too
            tied = gone if not move.batch and len(gone) > 1 else ()
        elected: tuple[int, ...] = ()
        out = search.first_out
        write_ins_go = out in members and votes[out] > search.tol
        if majority and not any(r.elected for r in rounds) and not write_ins_go:
            top = max(members, key=lambda x: votes[x])
            if 2 * votes[top] - votes[list(members)].sum() > search.tol:
                elected = (top,)
        rounds.append(Round(members, votes, float(exhausted), gone, tied, move.batch, elected))
        state = move.state
    return rounds
