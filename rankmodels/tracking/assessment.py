"""The inputs of a track's quality checks (:mod:`~rankmodels.tracking.quality`) from a pass:
the filter's one-step predictions, its last cycle against the recovery fix, the first cycles
filtered backwards against the launch fix, the association posteriors."""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.filter import FilterResult
from rankmodels.tracking.geometry import tangent_step
from rankmodels.tracking.launch import first_position, window_cycles
from rankmodels.tracking.passes import Association, Pass, Predictor
from rankmodels.tracking.prepared import Parameters, Prepared
from rankmodels.tracking.quality import (
    EndPoint,
    QualityCheck,
    QualityInputs,
    StartPoint,
    quality_checks,
    recovery_check,
)

__all__ = ["assess", "end_point", "ended_lost", "one_step_predictions", "start_point"]

#: (east, north) km steps of the mean and its two finite-difference neighbours.
_STEP_E = np.array([0.0, 1.0, 0.0])
_STEP_N = np.array([0.0, 0.0, 1.0])
#: Stream of the launch check's backward filter in the seed sequence ``(seed, stream)``.
_LAUNCH_STREAM = 1


def one_step_predictions(predictor: Predictor, filt: FilterResult) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(T, s)`` and covariance ``(T, s, s)`` of the active sources' noiseless TOAs
    predicted from the data before cycle ``t`` (NaN for inactive sources), linearised: the
    position predicted from the filter step before cycle ``t``'s (cycle ``t - 1`` or a fix) is
    ``N(m + d, C + D)`` with ``m``, ``C`` the filtered mean and covariance (the launch position
    with ``C = 0`` before the first step) and ``d``, ``D`` the step's mean and added covariance
    under the filter's dynamics (``0`` and ``q^2 dt I_2`` for the random walk, eq. 5.1; from
    the filtered velocity for the Lagrangian motion:
    :meth:`~rankmodels.tracking.dynamics.LagrangianMotion.predicted_step`), so the
    TOAs have mean ``pred_i(m)`` and covariance ``g_i^T P g_k`` with ``g_i`` the gradient of
    ``pred_i`` in s per km east and north (finite differences over 1 km). The linearisation
    matches the particle cloud's predictive variance to within 5 % (5-95 % range over a
    120-day float)."""
    prepared = predictor.prepared
    n_src = prepared.n_sources
    mean = np.full((prepared.n_cycles, n_src), np.nan)
    cov = np.full((prepared.n_cycles, n_src, n_src), np.nan)
    before = prepared.cycle_steps - 1  # the step before each cycle's; -1: the launch
    prior_mean = np.vstack([prepared.x0, filt.mean])[before + 1]
    prior_cov = np.concatenate([np.zeros((1, 2, 2)), filt.cov])[before + 1]
    dynamics = predictor.params.dynamics
    for t in range(prepared.n_cycles):
        velocity = None if before[t] < 0 else filt.velocity_at(before[t])
        step, added = dynamics.predicted_step(velocity, prepared.dt[prepared.cycle_steps[t]])
        prior_cov[t] += added
        lat, lon = tangent_step(
            np.full(3, prior_mean[t, 0]), np.full(3, prior_mean[t, 1]), _STEP_E + step[0],
            _STEP_N + step[1],
        )  # fmt: skip
        pred = predictor.predicted(t, np.column_stack([lat, lon]))  # (3, s_active)
        grad = (pred[1:] - pred[0]).T  # (s_active, 2): s per km east, north
        act = np.flatnonzero(prepared.active[t])
        mean[t, act] = pred[0]
        cov[t, act[:, None], act[None, :]] = grad @ prior_cov[t] @ grad.T
    return mean, cov


def start_point(predictor: Predictor, seed: int) -> StartPoint:
    """The first cycle's position from the cycles within
    :data:`~rankmodels.tracking.launch.WINDOW_DAYS` of the launch, filtered backwards from a
    diffuse start about the launch fix (:func:`~rankmodels.tracking.launch.first_position`,
    seeded ``(seed, 1)``), and the launch fix it should predict over the first step ``dt_0``
    (``q^2 dt_0 + s_r^2``, the fix's error taken as the recovery fix's; the Lagrangian
    motion's by its diffusive limit, the random walk of ``q^2 = 2 K + q_0^2``)."""
    prepared = predictor.prepared
    k = window_cycles(prepared.day)
    with_arrivals = int(prepared.has_data[:k].sum())
    if k == 0:
        return StartPoint(0, 0, None)
    rng = np.random.default_rng([seed, _LAUNCH_STREAM])
    dynamics = predictor.params.dynamics.diffusive()
    mean, cov = first_position(
        prepared.x0, prepared.cycle_dt[:k], predictor.cycle_loglik, dynamics, rng
    )
    point = EndPoint(
        mean=mean,
        cov=cov,
        fix=(float(prepared.x0[0]), float(prepared.x0[1])),
        extra_var=dynamics.process_noise**2 * prepared.cycle_dt[0] + prepared.recovery_sigma**2,
    )
    return StartPoint(k, with_arrivals, point)


def end_point(prepared: Prepared, params: Parameters, filt: FilterResult) -> EndPoint | None:
    """The filter's last cycle moved on to the surfacing (the step's mean and variance under
    the filter's dynamics, the largest eigenvalue of its covariance as the added variance)
    and the recovery fix it should predict (None without one)."""
    if prepared.recovery is None:
        return None
    last = prepared.cycle_steps[-1]
    step, added = params.dynamics.predicted_step(filt.velocity_at(last), prepared.days_to_recovery)
    mean = filt.mean[last]
    if step.any():
        mean = np.array(tangent_step(mean[0], mean[1], step[0], step[1]), dtype=float)
    return EndPoint(
        mean=mean,
        cov=filt.cov[last],
        fix=prepared.recovery,
        extra_var=float(np.linalg.eigvalsh(added)[-1]) + prepared.recovery_sigma**2,
    )


def ended_lost(prepared: Prepared, params: Parameters, filt: FilterResult) -> bool:
    """Whether the forward filter ``filt`` (run under ``params``) ends where the recovery fix
    says the float was not (the ``recovery_distance`` quality check fails; False without a
    fix)."""
    end = end_point(prepared, params, filt)
    return end is not None and recovery_check(end).passed is False


def assess(this: Pass, assoc: Association, seed: int) -> tuple[QualityCheck, ...]:
    """The quality checks of the pass ``this``, from the record, the forward filter (its
    one-step predictions and its last cycle, under the filter's process noise), the early
    cycles filtered backwards without the launch fix (seeded ``(seed, 1)``), the association
    posteriors ``assoc`` and the TOAs predicted at the posterior mean, under the pass's
    parameters."""
    prepared, filt = this.prepared, this.filt
    predictor = Predictor(prepared, this.params)
    predicted_mean, predicted_cov = one_step_predictions(predictor, filt)
    return quality_checks(
        QualityInputs(
            toa=prepared.toa,
            association_posterior=assoc.posterior,
            predicted_mean=predicted_mean,
            predicted_cov=predicted_cov,
            smoothed_toa=assoc.predicted_toa,
            model=this.params.signal,
            times=prepared.times,
            end=end_point(prepared, this.params, filt),
            start=start_point(predictor, seed),
            fixes_used=prepared.n_fixes,
        )
    )
