"""The rules of a ranked-choice count, as certified tabulators (RCTab) state them.

Each field names one rule; ``docs/aggregation.md`` lists them beside RCTab's config keys
(:mod:`.config` reads those). Vote arithmetic is decimal with ``decimal_places`` digits,
rounded down, as RCTab's ``BigDecimal`` arithmetic is.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

__all__ = ["MODES", "OVERVOTE_RULES", "TIEBREAKS", "Rules"]

MODES = (
    "single",
    "multi-seat",
    "multi-seat-one-per-round",
    "bottoms-up",
    "bottoms-up-threshold",
    "sequential",
)
"""Winner modes: one seat by majority; several seats by single transferable vote with
fractional surplus transfer (several winners per round, or at most one); bottoms-up
(eliminate until ``seats`` are left, no surplus transfer); bottoms-up until every
continuing candidate has ``bottoms_up_percentage`` of the vote; sequential (one
single-seat count per seat, each excluding the earlier winners)."""

OVERVOTE_RULES = ("exhaust", "skip", "exhaust-if-multiple")
"""An overvote ends the ballot; is passed over; ends it only if two or more of its
candidates are continuing (none: passed over; one: the vote goes to that one)."""

TIEBREAKS = (
    "random",
    "previous-rounds-then-random",
    "candidate-order",
    "permutation",
    "ask",
    "previous-rounds-then-ask",
)
"""Ties: Java's ``Random(seed)`` draws among the tied candidates sorted by name; the tied
candidate with the most (winner) / fewest (loser) votes in the latest earlier round that
separates them, else random; the config's candidate order (a winner is the earliest, a
loser the latest); a permutation of the names (sorted, then shuffled by
``Random(seed)``) used the same way; an operator decides (the count stops with an error
naming the tied candidates, as it needs one), directly or when earlier rounds do not
separate them."""


@dataclass(frozen=True)
class Rules:
    """How to count (defaults: single seat, RCTab's defaults otherwise).

    ``seats``: number of winners (0 only for ``bottoms-up-threshold``); ``mode``: one of
    :data:`MODES`; ``overvote``: one of :data:`OVERVOTE_RULES`; ``max_skipped_ranks``: a
    ballot whose next marked rank comes after more than this many unmarked ranks is
    exhausted (``None``: never); ``max_rankings``: ranks beyond it are not read (``None``:
    the number of declared candidates); ``exhaust_on_duplicate``: a candidate ranked again
    exhausts the ballot (else the repeat is passed over); ``batch_elimination``: eliminate
    at once all lowest candidates whose votes together are fewer than the next one's;
    ``continue_until_two``: single seat, go on eliminating until two candidates are left;
    ``minimum_vote_threshold``: candidates with fewer votes are eliminated together
    (round 1); ``decimal_places``: of the vote arithmetic; ``non_integer_threshold``:
    quota ``V/(S+1) + 10**-d`` instead of ``floor(V/(S+1)) + 1``; ``hare_quota``:
    divide by ``S`` instead of ``S + 1`` (rounded up); ``first_round_determines_threshold``:
    single seat, keep round 1's threshold; ``bottoms_up_percentage``: percent for
    ``bottoms-up-threshold``; ``stop_after_round``: stop after this round;
    ``tiebreak``: one of :data:`TIEBREAKS` with ``seed``; ``excluded``: candidates left
    out of the count.
    """

    seats: int = 1
    mode: str = "single"
    overvote: str = "exhaust"
    max_skipped_ranks: int | None = None
    max_rankings: int | None = None
    exhaust_on_duplicate: bool = False
    batch_elimination: bool = False
    continue_until_two: bool = False
    minimum_vote_threshold: Decimal = Decimal(0)
    decimal_places: int = 4
    non_integer_threshold: bool = False
    hare_quota: bool = False
    first_round_determines_threshold: bool = False
    bottoms_up_percentage: Decimal | None = None
    stop_after_round: int | None = None
    tiebreak: str = "random"
    seed: int = 0
    excluded: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("mode", self.mode, MODES),
            ("overvote", self.overvote, OVERVOTE_RULES),
            ("tiebreak", self.tiebreak, TIEBREAKS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if self.mode == "bottoms-up-threshold":
            if self.seats != 0 or self.bottoms_up_percentage is None:
                raise ValueError("bottoms-up-threshold needs seats 0 and a percentage")
        elif self.seats < 1:
            raise ValueError(f"seats must be at least 1, got {self.seats}")
        if (self.mode == "single") != (self.seats == 1):
            raise ValueError(f"mode {self.mode!r} does not go with {self.seats} seat(s)")
        if not 1 <= self.decimal_places <= 20:
            raise ValueError(f"decimal_places must be 1..20, got {self.decimal_places}")
        for name in ("max_skipped_ranks", "max_rankings", "stop_after_round"):
            value = getattr(self, name)
            if value is not None and value < (0 if name == "max_skipped_ranks" else 1):
                raise ValueError(f"{name} out of range: {value}")

    @property
    def unit(self) -> Decimal:
        """The smallest amount of the vote arithmetic, ``10**-decimal_places``."""
        return Decimal(1).scaleb(-self.decimal_places)

    @property
    def transfers_surplus(self) -> bool:
        """Whether winners' surpluses are transferred (single transferable vote)."""
        return self.seats > 1 and self.mode in ("multi-seat", "multi-seat-one-per-round")
