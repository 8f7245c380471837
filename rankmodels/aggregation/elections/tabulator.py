"""The count of a ranked-choice contest, round by round, as RCTab counts it.

Every round each ballot counts for its highest-ranked *continuing* candidate, read from
the top of the ballot as cast (:mod:`.ballots`) with the rules (:class:`.rules.Rules`)
applied there and then:

* a ballot whose next marked rank comes after more than ``max_skipped_ranks`` unmarked
  ranks is inactive by *skipped rankings*;
* a candidate ranked again exhausts the ballot (*repeated rankings*) with
  ``exhaust_on_duplicate``, else the repeat is passed over (its candidate is not
  continuing);
* an overvote exhausts the ballot (*overvotes*), is passed over (``skip``; on the last
  marked rank the ballot is then *exhausted choices*), or, with ``exhaust-if-multiple``,
  exhausts it only when two or more of its candidates are continuing;
* a ballot whose marked ranks have no continuing candidate left is *exhausted choices*;
  a ballot without marks is an *undervote* from round 1.

A ballot keeps counting for its candidate while that candidate continues; an inactive
ballot stays inactive. After the tally: the threshold (majority of the active ballots for
one seat, Droop or Hare quota of round 1 for several, in decimal arithmetic), the winners
(at or above it), else one elimination -- undeclared write-ins first, then candidates below
``minimum_vote_threshold``, then a batch, then the candidate with the fewest votes, ties
broken by ``tiebreak``. With several seats a winner keeps ``threshold / votes`` of each of
its ballots (the *surplus fraction* ``(votes - threshold) / votes`` moves on with the
ballot: Gregory's weighted inclusive method, every product and quotient rounded down to
``decimal_places``); what rounding leaves above the threshold is the *residual surplus*.

The per-ballot work is compiled (:mod:`.kernels`) with votes as integers scaled by
``10**decimal_places``, exact; the per-candidate decisions stay in ``Decimal``. Cost: a
round passes over the ``m`` distinct ballots and re-reads only those whose candidate left
the count, so a count is ``O(m R)`` for ``R`` marked ranks, plus ``O(m + n^2)`` per round.
"""

from __future__ import annotations

import decimal
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_DOWN, ROUND_UP, Decimal

import numpy as np

from rankmodels.aggregation.elections.ballots import UNDECLARED_WRITE_INS, CastBallots
from rankmodels.aggregation.elections.javarandom import JavaRandom, shuffle
from rankmodels.aggregation.elections.kernels import BallotStates, Packed, fits_int64, pack
from rankmodels.aggregation.elections.rules import Rules

__all__ = ["EXHAUSTED", "RESIDUAL", "Count", "Round", "Status", "TabulationError", "tabulate"]

EXHAUSTED = "exhausted"
"""Transfer destination of ballots that became inactive."""
RESIDUAL = "residual surplus"
"""Transfer destination of the surplus that rounding could not move."""

_CONTEXT = decimal.Context(prec=60, rounding=ROUND_DOWN, traps=[decimal.InvalidOperation])


class TabulationError(ValueError):
    """The count cannot go on (e.g. every candidate is below the minimum vote threshold)."""


class Status(enum.IntEnum):
    """A ballot's state in a round: counting, or inactive and why."""

    ACTIVE = 0
    UNDERVOTE = 1
    OVERVOTE = 2
    SKIPPED_RANKINGS = 3
    REPEATED_RANKINGS = 4
    EXHAUSTED_CHOICES = 5
    FINAL_ROUND_SURPLUS = 6


@dataclass
class Round:
    """One round: ``tally`` maps each continuing candidate (and, with several seats, the
    earlier winners) to its votes; ``threshold`` the votes needed to win; ``inactive``
    the weight of inactive ballots by :class:`Status`; ``elected`` and ``eliminated`` the
    candidates (codes) decided at its end; ``transfers[x]`` where candidate ``x``'s votes
    went in the next round (candidate code, :data:`EXHAUSTED` or :data:`RESIDUAL` ->
    weight); ``tied`` the candidates a tie-break chose among (else empty) and
    ``residual_surplus`` the residual surplus so far."""

    number: int
    tally: dict[int, Decimal]
    threshold: Decimal
    inactive: dict[Status, Decimal]
    elected: list[int] = field(default_factory=list)
    eliminated: list[int] = field(default_factory=list)
    transfers: dict[int, dict[int | str, Decimal]] = field(default_factory=dict)
    tied: list[int] = field(default_factory=list)
    residual_surplus: Decimal = Decimal(0)

    @property
    def active(self) -> Decimal:
        """Weight counting for continuing candidates and winners."""
        return sum(self.tally.values(), Decimal(0))


@dataclass
class Count:
    """A finished count: ``rounds``, ``winners`` in order of election, ``candidates``
    (names by code), the ballots' ``total`` and ``undervotes``, the ``rules``."""

    candidates: tuple[str, ...]
    rounds: list[Round]
    winners: list[int]
    total: int
    undervotes: int
    rules: Rules
    contest_seats: int = 1

    @property
    def n_candidates(self) -> int:
        """Candidates in the count (the excluded ones left out)."""
        return len([c for c in self.candidates if c not in self.rules.excluded])

    @property
    def threshold(self) -> Decimal:
        """The last round's threshold."""
        return self.rounds[-1].threshold if self.rounds else Decimal(0)


def tabulate(ballots: CastBallots, rules: Rules, order: Sequence[str] | None = None) -> list[Count]:
    """Count ``ballots`` by ``rules``. ``order``: the declared candidates in the config's
    order (tie-breaks by candidate order and permutations use it; default: the ballots'
    candidates). Returns one :class:`Count`, or one per seat in ``sequential`` mode."""
    order = list(order) if order is not None else _declared(ballots.candidates)
    packed = pack(ballots)
    if rules.mode != "sequential":
        return [_Tabulator(ballots, packed, rules, order).run()]
    counts: list[Count] = []
    excluded = set(rules.excluded)
    for _ in range(rules.seats):  # one single-seat count per seat, earlier winners excluded
        single = replace(rules, seats=1, mode="single", excluded=frozenset(excluded))
        count = _Tabulator(ballots, packed, single, order).run()
        counts.append(replace(count, contest_seats=rules.seats))
        excluded.update(ballots.candidates[w] for w in counts[-1].winners)
    return counts


def _declared(candidates: Sequence[str]) -> list[str]:
    return [c for c in candidates if c != UNDECLARED_WRITE_INS]


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def java_hash_order(codes: list[int], names: Sequence[str], grown: bool = False) -> list[int]:
    """``codes`` in the iteration order of a ``java.util.HashSet`` of their names built
    from them in this order (buckets of ``h ^ (h >>> 16)`` for Java's ``String.hashCode``,
    insertion order within a bucket): RCTab's previous-round tie-break draws from a list
    in that order, and its reports list candidates with equal votes in that order.
    ``grown``: the table grew by insertions (doubling past 3/4 full) rather than being
    sized for the whole collection at once."""
    capacity = 16
    if grown:
        while len(codes) > capacity * 3 // 4:
            capacity *= 2
    else:
        while capacity < int(len(codes) / 0.75) + 1:
            capacity *= 2

    def bucket(x: int) -> int:
        h = _java_string_hash(names[x])
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(codes, key=bucket)  # stable: insertion order within a bucket


class _Tabulator:
    """One count (RCTab's ``Tabulator``) over distinct ballots with counts."""

    def __init__(
        self, ballots: CastBallots, packed: Packed, rules: Rules, order: list[str]
    ) -> None:
        self.ballots = ballots
        self.rules = rules
        names = ballots.candidates
        self.names = names
        self.code = {name: i for i, name in enumerate(names)}
        self.uwi = self.code.get(UNDECLARED_WRITE_INS)
        excluded = {self.code[x] for x in rules.excluded if x in self.code}
        self.excluded = excluded
        self.eliminated: dict[int, int] = {}
        self.won: dict[int, int] = {}
        self.max_skip = rules.max_skipped_ranks
        self.n_candidates = len(names) - len(excluded)
        self.permutation = [self.code[x] for x in order if x in self.code]
        self.random: JavaRandom | None = None
        if rules.tiebreak in ("random", "previous-rounds-then-random", "permutation"):
            self.random = JavaRandom(rules.seed)
            if rules.tiebreak == "permutation":
                perm = sorted(order)
                shuffle(perm, self.random)
                self.permutation = [self.code[x] for x in perm if x in self.code]
        exact = not fits_int64(ballots.total, rules.decimal_places)
        self.states = BallotStates(packed, rules.decimal_places, exact)
        self.kept: dict[int, Decimal] = {}  # what each winner's ballots kept
        self.rounds: list[Round] = []

    # -- candidates' states ------------------------------------------------------------
    def continuing(self, x: int) -> bool:
        if x in self.excluded or x in self.eliminated:
            return False
        return x not in self.won or self.rules.continue_until_two

    # -- one round's tally -------------------------------------------------------------
    def decimal(self, scaled, touched) -> Decimal:
        """A scaled sum as RCTab's ``BigDecimal`` holds it: whole until a value that a
        surplus transfer touched went into it, then ``decimal_places`` places."""
        if touched:
            return Decimal(int(scaled)).scaleb(-self.rules.decimal_places, _CONTEXT)
        return Decimal(int(scaled) // self.states.scale)

    def tally_round(self, number: int) -> Round:
        n = len(self.names)
        continuing = np.array([self.continuing(x) for x in range(n)], dtype=np.bool_)
        rules = self.rules
        try:
            sums = self.states.tally(
                continuing,
                -1 if self.max_skip is None else self.max_skip,
                rules.exhaust_on_duplicate,
                rules.overvote,
                rules.transfers_surplus and len(self.won) == rules.seats,
            )
        except ValueError as err:
            raise TabulationError(str(err)) from None
        tally = {
            x: self.decimal(sums.votes[x], sums.votes_touched[x]) for x in range(n) if continuing[x]
        }
        inactive = {
            s: self.decimal(sums.inactive[s], sums.inactive_touched[s])
            for s in Status
            if s != Status.ACTIVE
        }
        moves: dict[int, dict[int | str, Decimal]] = {}
        for x, to in zip(*np.nonzero(sums.moves), strict=True):
            dest = moves.setdefault(int(x), {})
            key = EXHAUSTED if to == n else int(to)
            dest[key] = self.decimal(sums.moves[x, to], sums.moves_touched[x, to])
        if self.rounds:
            self.rounds[-1].transfers = moves
        return Round(number, tally, Decimal(0), inactive)

    # -- thresholds, winners, eliminations ---------------------------------------------
    def threshold(self, active: Decimal) -> Decimal:
        rules = self.rules
        with decimal.localcontext(_CONTEXT):
            if rules.mode == "bottoms-up-threshold":
                value = active * (rules.bottoms_up_percentage / 100)
            else:
                divisor = rules.seats if rules.hare_quota else rules.seats + 1
                places = rules.decimal_places if rules.non_integer_threshold else 0
                quantum = Decimal(1).scaleb(-places)
                if rules.hare_quota:
                    value = (active / divisor).quantize(quantum, ROUND_UP)
                else:
                    value = (active / divisor).quantize(quantum, ROUND_DOWN) + quantum
        minimum = rules.minimum_vote_threshold
        return minimum if minimum > 0 and minimum > value else value

    def winners(self, rnd: Round, by_votes: dict[Decimal, list[int]]) -> list[int]:
        rules = self.rules
        if self.uwi is not None and rnd.tally.get(self.uwi, 0) != 0:
            return []
        if rules.mode == "bottoms-up-threshold":
            meet = [x for x, v in rnd.tally.items() if v > rnd.threshold]
            return list(rnd.tally) if len(meet) == len(rnd.tally) else []
        chosen: list[int] = []
        unfilled = rules.seats - len(self.won)
        n_active = len(rnd.tally)
        if unfilled > 0:
            if n_active <= unfilled:
                chosen = list(rnd.tally)
            elif rules.first_round_determines_threshold and n_active - 1 == rules.seats:
                chosen = list(by_votes[max(by_votes)])
            elif rules.mode != "bottoms-up":
                chosen = [
                    x
                    for votes in sorted(by_votes)
                    if votes >= rnd.threshold
                    for x in by_votes[votes]
                    if x != self.uwi
                ]
        several = len(chosen) > 1 and (
            rules.mode == "multi-seat-one-per-round" or rules.first_round_determines_threshold
        )
        none = (
            rules.seats == 1
            and not chosen
            and n_active == 2
            and unfilled == 1
            and all(v >= rules.minimum_vote_threshold for v in by_votes)
        )
        if several or none:
            top = max(by_votes)
            chosen = list(by_votes[top])
            if len(chosen) > 1:
                rnd.tied = sorted(chosen, key=self.names.__getitem__)
                chosen = [self.tiebreak(chosen, winner=True, number=rnd.number)]
        return chosen

    def eliminate(self, rnd: Round, by_votes: dict[Decimal, list[int]]) -> list[int]:
        if self.uwi is not None and rnd.tally.get(self.uwi, 0) > 0:
            return [self.uwi]
        minimum = self.rules.minimum_vote_threshold
        if minimum > 0 and min(by_votes) < minimum:
            below = [x for v in sorted(by_votes) if v < minimum for x in by_votes[v]]
            if len(below) == len(_declared(self.names)):
                raise TabulationError(
                    "every declared candidate is below the minimum vote threshold"
                )
            return below
        if self.rules.batch_elimination:
            batch = self.batch(by_votes)
            if len(batch) > 1:
                return batch
        low = min(by_votes)
        tied = by_votes[low]
        if len(tied) == 1:
            return list(tied)
        rnd.tied = sorted(tied, key=self.names.__getitem__)
        return [self.tiebreak(tied, winner=False, number=rnd.number)]

    def batch(self, by_votes: dict[Decimal, list[int]]) -> list[int]:
        """The lowest candidates whose votes together are fewer than the next one's."""
        running = Decimal(0)
        seen: list[int] = []
        out: list[int] = []
        previous: list[int] = []
        for votes in sorted(by_votes):
            grown = list(out)
            if running < votes:
                grown.extend(x for x in seen if x not in out)
            with decimal.localcontext(_CONTEXT):
                running += (votes * len(by_votes[votes])).quantize(self.rules.unit, ROUND_DOWN)
            seen.extend(by_votes[votes])
            if len(grown) > len(out):
                previous, out = out, grown
        if (
            self.rules.continue_until_two
            and len(out) + len(self.eliminated) == self.n_candidates - 1
        ):
            out = previous
        return out

    def tiebreak(self, tied: list[int], winner: bool, number: int) -> int:
        mode = self.rules.tiebreak
        names = self.names
        tied = sorted(tied, key=names.__getitem__)
        if mode in ("candidate-order", "permutation"):
            order = self.permutation if winner else self.permutation[::-1]
            return next(x for x in order if x in tied)
        if mode in ("previous-rounds-then-random", "previous-rounds-then-ask"):
            for earlier in reversed(self.rounds[: number - 1]):
                votes = {x: earlier.tally.get(x) for x in tied}
                pick = max if winner else min
                best = pick(v for v in votes.values() if v is not None)
                tied = java_hash_order([x for x in tied if votes[x] == best], names)
                if len(tied) == 1:
                    return tied[0]
        if mode in ("ask", "previous-rounds-then-ask"):
            raise TabulationError(
                f"round {number}: a tie between {', '.join(names[x] for x in tied)} needs an "
                "operator's decision (tiebreakMode asks); choose a tiebreakMode that decides"
            )
        assert self.random is not None
        return tied[int(self.random.next_double() * len(tied))]

    # -- surpluses ---------------------------------------------------------------------
    def transfer_surplus(self, rnd: Round, winners: list[int]) -> None:
        unit = self.rules.unit
        with decimal.localcontext(_CONTEXT):
            for w in winners:
                votes = rnd.tally[w]
                extra = votes - rnd.threshold
                fraction = (extra / votes).quantize(unit, ROUND_DOWN) if extra > 0 else Decimal(0)
                scaled = int(fraction.scaleb(self.rules.decimal_places))
                kept, found = self.states.surplus(w, scaled)
                self.kept[w] = self.decimal(kept, True) if found else Decimal(0)

    def winner_tallies(self, rnd: Round) -> None:
        """Add the earlier winners to the round's tally; winners of the previous round
        get what their ballots kept, the excess over the threshold becoming residual
        surplus."""
        previous = self.rounds[-2] if len(self.rounds) > 1 else None
        rnd.residual_surplus = previous.residual_surplus if previous else Decimal(0)
        fresh = [w for w, r in self.won.items() if r == rnd.number - 1]
        for w, r in self.won.items():
            if r < rnd.number - 1 and previous is not None:
                rnd.tally[w] = previous.tally[w]
        for w in fresh:
            kept = self.kept.get(w, Decimal(0))
            residual = kept - rnd.threshold
            rnd.tally[w] = kept
            if residual > 0:
                rnd.residual_surplus += residual
                rnd.tally[w] = rnd.threshold
                assert previous is not None
                dest = previous.transfers.setdefault(w, {})
                dest[RESIDUAL] = dest.get(RESIDUAL, Decimal(0)) + residual

    # -- the loop ----------------------------------------------------------------------
    def keep_going(self, number: int) -> bool:
        rules = self.rules
        if rules.stop_after_round is not None and number >= rules.stop_after_round:
            return False
        if len(self.won) == len(_declared(self.names)) and rules.seats > self.n_candidates:
            return False  # more seats than candidates: everybody is elected
        if rules.continue_until_two:
            return (
                len(self.eliminated) + len(self.won) + 1 < self.n_candidates
                or number in self.eliminated.values()
            )
        if rules.mode == "bottoms-up-threshold":
            return not self.won
        return len(self.won) < rules.seats or (
            rules.transfers_surplus and number in self.won.values()
        )

    def run(self) -> Count:
        rules = self.rules
        number = 0
        while self.keep_going(number):
            number += 1
            rnd = self.tally_round(number)
            self.rounds.append(rnd)
            if number > 1 and (
                rules.seats > 1 or rules.first_round_determines_threshold or self.won
            ):  # several seats: the quota of round 1; one seat: kept once it is won
                rnd.threshold = self.rounds[-2].threshold
            else:
                rnd.threshold = self.threshold(rnd.active)
            by_votes: dict[Decimal, list[int]] = {}
            for x, votes in rnd.tally.items():
                by_votes.setdefault(votes, []).append(x)
            winners = self.winners(rnd, by_votes)
            if winners:
                winners = sorted(winners, key=self.names.__getitem__)
                rnd.elected = winners
                for w in winners:
                    self.won[w] = number
                if rules.transfers_surplus:
                    self.transfer_surplus(rnd, winners)
            elif (
                len(self.won) < rules.seats
                or (rules.continue_until_two and len(self.eliminated) < self.n_candidates - 2)
                or rules.mode == "bottoms-up-threshold"
            ):
                gone = self.eliminate(rnd, by_votes)
                rnd.eliminated = gone
                for x in gone:
                    self.eliminated[x] = number
            if rules.seats > 1:
                self.winner_tallies(rnd)
        return Count(
            self.names,
            self.rounds,
            list(self.won),
            self.ballots.total,
            self.ballots.undervotes,
            self.rules,
            self.rules.seats,
        )
