"""The calibration's Monte Carlo EM search, for one float or a whole experiment.

A calibration supplies a :class:`Problem`: ``evaluate`` runs the E-step passes of a
candidate (the particle log-likelihood and the penalised one: plus the log priors of what
the candidate estimated), ``propose`` the M-step from a candidate's passes, and the geometry
groups' file values and standard errors for the likelihood-ratio check. What a candidate is
(one float's :class:`~rankmodels.tracking.prepared.Parameters`, an experiment's shared and
per-float parameters) is the problem's business; the search only compares scores.

1. :func:`anneal`: one pass and M-step (geometry only) per factor of :data:`ANNEALING`,
   assuming that many times the TOA noise, from the file's values; a first pass whose filter
   ends away from a recovery fix (``lost``) runs again at twice the factor, up to
   :data:`MAX_ANNEALING`, and the annealing comes down from there by halves.
2. :func:`search`: at the configured noise, the candidates given (the file's values, the
   annealed estimate), then M-steps from the best candidate so far, stage by stage (for one
   float :func:`~rankmodels.tracking.calibration.calibration_stages`), at most
   ``iterations`` per stage; a stage ends when an M-step (and the candidates along it)
   raise the best penalised log-likelihood by at most :data:`MIN_GAIN` nats, the search
   when the last stage does or the M-step cannot solve. With ``extrapolate``, a proposal
   that rises is followed by candidates :data:`EXTRAPOLATION` times as far along its step
   while they rise (up to :data:`MAX_REACH`), and one that does not by one candidate
   ``1 / EXTRAPOLATION`` of the way (a Newton step on the Monte Carlo observed information
   can overshoot along a ridge).
3. :func:`likelihood_ratio_check`: each geometry group of :data:`TESTED_GROUPS` that the
   best candidate estimated less than :data:`DETERMINED_Z` standard errors from its file
   values is put back to them for one more evaluation; when that lowers the penalised
   log-likelihood by at most :data:`MIN_GAIN` nats, the records do not determine the group
   and the reduced candidate is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "ANNEALING",
    "DETERMINED_Z",
    "EM_ENSEMBLE",
    "EXTRAPOLATION",
    "MAX_ANNEALING",
    "MAX_REACH",
    "MIN_GAIN",
    "TESTED_GROUPS",
    "Annealed",
    "Problem",
    "Scored",
    "Search",
    "anneal",
    "extrapolations",
    "hotter_levels",
    "likelihood_ratio_check",
    "search",
]

C = TypeVar("C")

#: Most smoothed trajectories an EM pass draws (``ensemble`` caps it): the E-step averages
#: distances and the M-step's Louis correction a 15-parameter score over them, which 200
#: trajectories do as well as 500 (the sample: 1474.7 and 1475.1 m/s, 0.0213 and 0.0201
#: s/day, track 4.98 and 4.84 km median) at 0.6x the EM's cost.
EM_ENSEMBLE = 200
#: TOA-noise inflation factors of the first EM passes (annealing): with the file's values
#: far off (15 m/s of sound speed is 10 s at 1,000 km, 0.02 s/day of drift 8 s after a year)
#: the filter at the true ``sigma`` loses the float and its E-step is noise; assuming
#: ``4 sigma`` then ``2 sigma`` keeps the associations roughly right while the M-steps bring
#: the parameters close.
ANNEALING = (4.0, 2.0)
#: Hottest first annealing pass: while the first one's filter ends where the recovery fix
#: says the float was not, it runs again at twice the factor, up to this many times
#: ``sigma``, and the annealing comes down from there by halves. On a 404-day noisy-world
#: float (clutter 2, ``P_D`` 0.8, the sample's mismatch; ``benchmarks/calibration.py``, seed
#: 2) the 1,000-particle pass at ``4 sigma`` ended 660 km from the fix and calibration kept
#: the file's values (29.5 / 204 km median / p90); annealed at 8, 4 and 2 ``sigma``, 3.5 /
#: 7.1 km.
MAX_ANNEALING = 16.0
#: Rise of the penalised log-likelihood (nats) below which an M-step ends its stage: the
#: statistical parameters' EM creeps on by a nat or two a pass on long records, which moves
#: the track by far less than the Monte Carlo noise of the final pass.
MIN_GAIN = 2.0
#: The geometry groups the likelihood-ratio check tests, in order: the least determined
#: first.
TESTED_GROUPS = ("speed", "offsets", "drift")
#: A group whose estimate lies this many standard errors from its file values somewhere
#: skips the likelihood-ratio check's pass: the quadratic approximation puts the drop at no
#: less than ``z^2 / 2 = 8`` nats, four times :data:`MIN_GAIN`. On the calibration
#: benchmark's floats (404 days, seeds 1-2, 20 checks) the 8 checks with ``z >= 4``
#: (4.8-12.4) lowered it by 281-2569 nats; those under 4 by -315 to 2417 (the standard
#: errors carry the priors' and the confounded parameters' uncertainty, so the rule is
#: conservative).
DETERMINED_Z = 4.0
#: After an M-step whose proposal raised the penalised log-likelihood, the next candidate
#: goes ``EXTRAPOLATION`` times as far along the step, and so on while each rises, up to
#: ``MAX_REACH`` times the step; after one that did not, one candidate goes ``1 /
#: EXTRAPOLATION`` of the way.
EXTRAPOLATION = 4.0
MAX_REACH = 64.0


@dataclass(frozen=True)
class Scored:
    """A candidate's evaluation: ``score`` the penalised log-likelihood (the particle
    ``loglik`` plus the log priors of what the candidate estimated), ``lost`` whether a
    filter ended where a recovery fix says the float was not, ``evidence`` the passes an
    M-step reads."""

    score: float
    loglik: float
    lost: bool
    evidence: Any


class Problem(Protocol[C]):
    """What a calibration gives the search (module docstring)."""

    def evaluate(self, candidate: C, factor: float = 1.0) -> Scored:
        """The passes of ``candidate`` assuming ``factor`` times the TOA noise."""

    def propose(self, candidate: C, evidence: Any, groups: frozenset[str]) -> C:
        """The M-step of ``groups`` from ``candidate``'s passes; ValueError when it cannot
        solve."""

    def along(self, start: C, proposal: C, reach: float) -> C:
        """``start + reach (proposal - start)`` (extrapolating searches only)."""

    def without(self, candidate: C, group: str) -> C:
        """``candidate`` with the geometry ``group`` back at the file values."""

    def estimates(self, candidate: C, group: str) -> bool:
        """Whether ``candidate`` holds an estimate of ``group``."""

    def largest_z(self, candidate: C, group: str) -> float:
        """The largest ``|estimate - file value| / standard error`` in ``group``."""

    def discard(self, scored: Scored) -> None:
        """A pass the search will not use (its progress is counted now)."""


@dataclass(frozen=True)
class Annealed:
    """An annealing pass: the ``candidate`` it ran with, at ``factor`` times the noise."""

    candidate: Any
    scored: Scored
    factor: float


def anneal(
    problem: Problem[C], start: C, groups: frozenset[str], factors: tuple[float, ...] = ANNEALING
) -> tuple[list[Annealed], C]:
    """Step 1 (module docstring): the annealing passes used, in order, and the candidate
    their last M-step gives (``start`` when none could solve)."""
    factors_left = list(factors)
    done: list[Annealed] = []
    candidate = start
    while len(done) < len(factors_left):
        factor = factors_left[len(done)]
        scored = problem.evaluate(candidate, factor)
        if not done and 2 * factor <= MAX_ANNEALING and scored.lost:
            problem.discard(scored)
            factors_left.insert(0, 2 * factor)  # hotter, then down by halves
            continue
        try:
            proposal = problem.propose(candidate, scored.evidence, groups)
        except ValueError:  # cannot solve even assuming a noisier TOA: start from the files'
            break
        done.append(Annealed(candidate, scored, factor))
        candidate = proposal
    return done, candidate


def hotter_levels() -> int:
    """Most times the first annealing pass runs again at twice its factor
    (:data:`MAX_ANNEALING`)."""
    return max(round(math.log2(MAX_ANNEALING / ANNEALING[0])), 0)


def extrapolations() -> int:
    """Most candidates along one M-step's step after its proposal."""
    return round(math.log(MAX_REACH) / math.log(EXTRAPOLATION))


@dataclass
class Search(Generic[C]):
    """The candidates evaluated, in order, their evaluations, the ``best`` one's index and
    why the search ended (``"no longer rising"``, ``"iteration limit"`` or the M-step's
    reason)."""

    candidates: list[C]
    scored: list[Scored] = field(default_factory=list)
    best: int = 0
    stop: str = "iteration limit"

    def score(self, k: int) -> float:
        return self.scored[k].score


def _next_reach(reach: float, gain: float) -> float:
    """How far along its step the next candidate of an extrapolating search goes, given the
    newest one's ``reach`` and ``gain`` over the best before it; 0: nothing more."""
    if gain > 0 and 1.0 <= reach < MAX_REACH:  # it helped: go further
        return reach * EXTRAPOLATION
    if gain <= 0 and reach == 1.0:  # it did not: a shorter step
        return reach / EXTRAPOLATION
    return 0.0


def search(
    problem: Problem[C],
    candidates: list[C],
    stages: tuple[frozenset[str], ...],
    iterations: int,
    extrapolate: bool = False,
) -> Search[C]:
    """Step 2 (module docstring) from ``candidates``; the first one is kept unless another
    scores strictly higher."""
    found: Search[C] = Search(list(candidates))
    stage = steps = 0  # the stage and its M-steps so far
    base = proposal = -1  # the last M-step: the candidate it started from, its proposal
    reach = 1.0  # how many times the M-step's change the newest candidate takes
    while True:
        k = len(found.scored)
        found.scored.append(problem.evaluate(found.candidates[k]))
        gain = found.score(k) - found.score(found.best)
        if k == 0 or gain > 0:
            found.best = k
        if k + 1 < len(found.candidates):
            continue
        if proposal >= 0:
            reach = _next_reach(reach, gain) if extrapolate else 0.0
            if reach:
                start, end = found.candidates[base], found.candidates[proposal]
                found.candidates.append(problem.along(start, end, reach))
                continue
            if found.score(found.best) - found.score(base) <= MIN_GAIN:  # barely helped
                if stage + 1 == len(stages):
                    found.stop = "no longer rising"
                    break
                stage, steps = stage + 1, 0
        if steps == iterations:
            if stage + 1 == len(stages):
                break
            stage, steps = stage + 1, 0
        best = found.best
        try:
            step = problem.propose(
                found.candidates[best], found.scored[best].evidence, stages[stage]
            )
        except ValueError as err:
            found.stop = str(err)
            break
        found.candidates.append(step)
        base, proposal, reach = best, len(found.candidates) - 1, 1.0
        steps += 1
    del found.candidates[len(found.scored) :]
    return found


def likelihood_ratio_check(problem: Problem[C], found: Search[C]) -> int:
    """Step 3 (module docstring) from ``found.best``; the reduced candidates are appended to
    ``found``. Returns the index kept."""
    kept = found.best
    for group in TESTED_GROUPS:
        candidate = found.candidates[kept]
        if not problem.estimates(candidate, group):
            continue
        if problem.largest_z(candidate, group) >= DETERMINED_Z:
            continue
        found.candidates.append(problem.without(candidate, group))
        found.scored.append(problem.evaluate(found.candidates[-1]))
        new = len(found.scored) - 1
        if found.score(kept) - found.score(new) <= MIN_GAIN:
            kept = new
    return kept
