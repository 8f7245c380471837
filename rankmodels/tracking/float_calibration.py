"""One float's calibration: the clock, sound speed, source offsets and statistical model by
Monte Carlo EM (:mod:`~rankmodels.tracking.em`) with the track.

Every pass runs the filter, smoother and association (:func:`~rankmodels.tracking.passes.
run_pass`) at ``config.em_particles()`` particles (and at most
:data:`~rankmodels.tracking.em.EM_ENSEMBLE` smoothed trajectories) with the same seed
(common random numbers, so passes differ only by their parameters). The E-step takes the
association posteriors given each trajectory and the smoothed ensemble; the M-step
(:func:`float_m_step`) is the weighted least squares of
:func:`~rankmodels.tracking.calibration.m_step` for the geometry (priors
:data:`~rankmodels.tracking.calibration.OFFSET_PRIOR_STD` and the clock's and speed's) and
:func:`~rankmodels.tracking.model_fit.fit_statistics` for the statistical model (priors
centred on the configured values). A pass's penalised log-likelihood is its particle
log-likelihood plus the log priors of what its parameters estimated
(:func:`~rankmodels.tracking.calibration.geometry_log_prior`,
:meth:`~rankmodels.tracking.model_fit.StatisticalModel.log_prior`).

The geometry is fitted in the stages of
:func:`~rankmodels.tracking.calibration.calibration_stages` (the speed before the offsets:
one float cannot separate them), each M-step also fitting the statistical parameters asked
for; the annealing fits the first stage's geometry. Parameters the record does not determine
are held at their starting values, and the likelihood-ratio check puts back a geometry group
the record does not determine (on short records a sound speed known to a few m/s would move
the track by kilometres for nothing). The pass with the largest penalised log-likelihood is
kept (the file's and the configured values when nothing beats them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from rankmodels.tracking import em
from rankmodels.tracking.assessment import ended_lost
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    GEOMETRY_PARAMS,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    CalibrationResult,
    calibration_stages,
    geometry_log_prior,
    m_step,
    m_step_pairs,
)
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.model_fit import STATISTICAL_PARAMS, FitInputs, fit_statistics
from rankmodels.tracking.motion_fit import fit_model_motion
from rankmodels.tracking.passes import Pass, run_pass
from rankmodels.tracking.prepared import Parameters, Prepared

__all__ = ["FloatProblem", "calibrate", "em_passes", "float_m_step"]

Progress = Callable[[int], None] | None


def float_m_step(
    this: Pass,
    candidate: Parameters,
    groups: frozenset[str],
    start: Parameters | None = None,
) -> Parameters:
    """One M-step of ``groups`` from the pass ``this`` of ``candidate`` (which it ran with,
    up to an inflated noise): the E-step pairs, then
    :func:`~rankmodels.tracking.calibration.m_step` for the geometry at the pass's ``sigma``
    and, given ``start`` (the priors' centres), :func:`~rankmodels.tracking.model_fit.
    fit_statistics` for the statistical parameters of ``groups`` (otherwise ``candidate``'s
    model stays). ValueError when the geometry's M-step cannot solve."""
    prepared, signal, distances = this.prepared, this.params.signal, this.distances
    cal = candidate.calibration
    geometry = groups & set(GEOMETRY_PARAMS)
    if geometry:
        pairs = m_step_pairs(
            prepared.toa, this.assoc.posterior, distances, prepared.day, prepared.offset,
            this.assoc.predicted_toa, signal, this.assoc.members,
        )  # fmt: skip
        cal = m_step(
            **pairs,
            n_sources=prepared.n_sources,
            sound_speed=prepared.nominal_speed,
            sigma=signal.sigma,
            offset_prior_std=OFFSET_PRIOR_STD,
            params=frozenset(geometry),
            start=candidate.calibration,
            speed_prior_std=SPEED_PRIOR_STD,
            clock_prior_std=CLOCK_OFFSET_PRIOR_STD,
            drift_prior_std=DRIFT_PRIOR_STD,
            clock_readings=prepared.clock,
        )
    statistical = groups & set(STATISTICAL_PARAMS)
    if start is None or not statistical:
        return Parameters(cal, candidate.model)
    start_cal = candidate.calibration
    shift = start_cal.predicted_shift(prepared.day[:, None], np.arange(prepared.n_sources)[None, :])
    predicted = distances / (start_cal.sound_speed / 1000.0) + prepared.offset + shift
    inputs = FitInputs(
        toa=prepared.toa,
        posterior=this.assoc.posterior,
        predicted=predicted,
        predicted_mean=this.assoc.predicted_toa,
        steps_km=this.trajectory_steps(),
        dt=prepared.cycle_dt,
        members=this.assoc.members,
        correlation=prepared.correlation,
        truncation=prepared.truncation,
    )
    model = fit_statistics(inputs, candidate.model, start.model, statistical)
    if "process-noise" in statistical and model.motion is not None:
        model = fit_model_motion(
            model, start.model, inputs.steps_km, this.velocities.transpose(1, 0, 2), inputs.dt
        )
    return Parameters(cal, model)


@dataclass
class FloatProblem:
    """One float's calibration as an :class:`~rankmodels.tracking.em.Problem`: candidates
    are :class:`~rankmodels.tracking.prepared.Parameters`, the evidence a candidate's
    :class:`~rankmodels.tracking.passes.Pass`; ``start`` the file's and configured values
    (the priors' centres); ``passes`` every pass run, in order."""

    prepared: Prepared
    config: TrackConfig
    start: Parameters
    progress: Progress = None
    passes: list[Pass] = field(default_factory=list)

    def evaluate(self, candidate: Parameters, factor: float = 1.0) -> em.Scored:
        this = run_pass(
            self.prepared,
            candidate.inflated(factor),
            self.config,
            keep_members=True,
            progress=self.progress,
        )
        self.passes.append(this)
        lost = factor != 1.0 and ended_lost(self.prepared, this.params, this.filt)
        return em.Scored(self.penalised(candidate, this.loglik), this.loglik, lost, this)

    def penalised(self, candidate: Parameters, loglik: float) -> float:
        """``loglik`` plus the log priors of what ``candidate`` estimated: the statistical
        parameters' about the configured values, the geometry's
        (:func:`~rankmodels.tracking.calibration.geometry_log_prior`)."""
        prepared = self.prepared
        return (
            loglik
            + candidate.model.log_prior(self.start.model)
            + geometry_log_prior(candidate.calibration, prepared.nominal_speed, prepared.clock)
        )

    def propose(self, candidate: Parameters, evidence: Pass, groups: frozenset[str]) -> Parameters:
        return float_m_step(evidence, candidate, groups, self.start)

    def along(self, start: Parameters, proposal: Parameters, reach: float) -> Parameters:
        raise NotImplementedError("one float's search does not extrapolate")

    def without(self, candidate: Parameters, group: str) -> Parameters:
        prepared = self.prepared
        reduced = candidate.calibration.without(group, prepared.nominal_speed, prepared.clock)
        return replace(candidate, calibration=reduced)

    def estimates(self, candidate: Parameters, group: str) -> bool:
        return candidate.calibration.estimates(group)

    def largest_z(self, candidate: Parameters, group: str) -> float:
        prepared = self.prepared
        return candidate.calibration.largest_z(group, prepared.nominal_speed, prepared.clock)

    def discard(self, scored: em.Scored) -> None:
        scored.evidence.settle_progress()


def em_passes(config: TrackConfig) -> int:
    """Most filter passes of :func:`calibrate`: the annealing passes (and two per level the
    first one may go hotter: the lost pass and one more level), the file's values and the
    annealed estimate, ``calibration_iterations`` M-steps per stage and one
    likelihood-ratio check per geometry group asked for."""
    stages = len(calibration_stages(config.calibrate_params))
    checks = len(set(em.TESTED_GROUPS) & config.calibrate_params)
    annealing = len(em.ANNEALING) + 2 * em.hotter_levels()  # each level: a lost pass, one more
    return annealing + 2 + stages * config.calibration_iterations + checks


def em_config(config: TrackConfig) -> TrackConfig:
    """The EM passes' settings: ``config.em_particles()`` particles, at most
    :data:`~rankmodels.tracking.em.EM_ENSEMBLE` trajectories."""
    return replace(
        config, particles=config.em_particles(), ensemble=min(config.ensemble, em.EM_ENSEMBLE)
    )


def calibrate(
    prepared: Prepared,
    config: TrackConfig,
    start: Parameters,
    progress: Progress = None,
    *,
    problem: FloatProblem | None = None,
) -> tuple[CalibrationResult, Pass]:
    """Calibrate the float of ``prepared`` (module docstring; the search of
    :mod:`~rankmodels.tracking.em`) from ``start``; ``problem`` replaces the passes and
    M-steps (by default :class:`FloatProblem` at :func:`em_config`). ``progress(1)`` is
    called ``em_passes(config) * prepared.pass_steps`` times. Returns the result (the
    annealing passes first, then the search's and the check's) and the kept pass."""
    problem = problem or FloatProblem(prepared, em_config(config), start, progress)
    stages = calibration_stages(config.calibrate_params)
    annealed, estimate = em.anneal(problem, start, stages[0] & set(GEOMETRY_PARAMS))
    candidates = [start, estimate] if annealed else [start]
    found = em.search(problem, candidates, stages, config.calibration_iterations)
    kept = em.likelihood_ratio_check(problem, found)
    for this in problem.passes:
        this.settle_progress()
    unused = em_passes(config) - len(problem.passes)
    if progress and unused > 0:
        progress(unused * prepared.pass_steps)
    first = len(annealed)
    scored = [a.scored for a in annealed] + found.scored
    runs = [a.candidate.inflated(a.factor) for a in annealed] + found.candidates
    result = CalibrationResult(
        params=config.calibrate_params,
        trace=tuple(c.calibration for c in runs),
        loglik=tuple(s.loglik for s in scored),
        sigma=tuple(c.signal.sigma for c in runs),
        start=first,
        best=first + kept,
        stop=found.stop,
        particles=problem.config.particles,
        models=tuple(c.model for c in [a.candidate for a in annealed] + found.candidates),
    )
    return result, found.scored[kept].evidence
