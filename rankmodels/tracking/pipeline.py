"""Track a float: prepare -> calibrate? -> final pass -> assess -> build track -> summary.

:func:`track_float` only sequences the stages:

1. :func:`~rankmodels.tracking.prepared.prepare`: the record's cycles, fixes, filter steps,
   start and recovery, and the starting parameters (the file's geometry, the configured
   statistical model);
2. with ``config.calibrate``, :func:`~rankmodels.tracking.float_calibration.calibrate`: the
   Monte Carlo EM at ``config.em_particles()`` particles (or an experiment's joint
   calibration, given);
3. the final pass (:func:`~rankmodels.tracking.passes.run_pass`: filter, smoother,
   association) under the parameters kept, at ``config.particles``;
4. :func:`~rankmodels.tracking.assessment.assess`: the quality checks;
5. :func:`~rankmodels.tracking.output.build_track` and
   :func:`~rankmodels.tracking.summary.summarise`.

Time spent compiling numba kernels (on a first run, before they are cached) is measured with
numba's compile events and reported apart from the run time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import xarray as xr
from numba.core import event as numba_event

from rankmodels.tracking.assessment import assess
from rankmodels.tracking.calibration import CalibrationResult
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.estimates import parameter_reports
from rankmodels.tracking.float_calibration import calibrate, em_passes
from rankmodels.tracking.motion_fit import lagrangian_statistics
from rankmodels.tracking.output import TrackEstimate, build_track
from rankmodels.tracking.passes import Pass, run_pass
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters, tracked_record
from rankmodels.tracking.summary import TrackSummary, run_attributes, summarise

__all__ = ["TrackConfig", "TrackSummary", "progress_steps", "track_float"]

Progress = Callable[[int], None] | None


def progress_steps(record: xr.Dataset, config: TrackConfig) -> int:
    """Total of the ``progress(n)`` calls :func:`track_float` makes: filter steps (the cycles,
    the fixes and the recovery step, when used) and the association pass, once per EM pass
    (at most :func:`~rankmodels.tracking.float_calibration.em_passes`, the rest counted when
    the EM stops) and once for the final pass."""
    fixes = record.sizes.get("fix", 0) if "fix_time" in record else 0
    recovery = int(config.smooth and "recovery_time" in record)
    one_pass = 2 * record.sizes["cycle"] + fixes + recovery
    return one_pass * (1 + em_passes(config) * config.calibrate)


def _estimate(final: Pass) -> TrackEstimate:
    filt, assoc, at = final.filt, final.assoc, final.prepared.cycle_steps
    velocities = final.velocities  # (T, M, 2) or None
    return TrackEstimate(
        mean=final.mean,
        cov=final.cov,
        filtered_mean=filt.mean[at],
        association_posterior=assoc.posterior,
        predicted_toa=assoc.predicted_toa,
        ess=filt.ess[at],
        loglik=filt.loglik[at],
        collapsed=filt.collapsed[at],
        velocity=None if velocities is None else velocities.mean(axis=1),
        velocity_std=None if velocities is None else velocities.std(axis=1),
        lagrangian=lagrangian_statistics(final.params.model),
    )


def track_float(
    record: xr.Dataset,
    config: TrackConfig | None = None,
    *,
    progress: Progress = None,
    calibration: CalibrationResult | None = None,
) -> tuple[xr.Dataset, TrackSummary]:
    """Track one float. ``record``: a validated float record
    (:func:`rankmodels.tracking.records.read_float`). Returns the track dataset (format in
    ``docs/tracking.md``, quality checks included) and a :class:`TrackSummary`.
    ``progress(1)`` is called :func:`progress_steps` times. ``calibration``: an EM run
    elsewhere (an experiment's joint calibration,
    :func:`rankmodels.tracking.experiment.calibrate_experiment`): the float is tracked with
    its kept parameters, as after its own calibration, and ``config.calibrate`` is not used.

    With ``config.min_correlation`` the record's arrivals below it are dropped first
    (:func:`~rankmodels.tracking.prepared.tracked_record`; the track holds the arrivals kept).

    Raises :class:`InputError` (before any work) for hand labels the labels engine cannot use,
    a smoother history that does not fit in memory or ``min_correlation`` without
    ``correlation``.
    """
    config = config or TrackConfig()
    record = tracked_record(record, config)
    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    compiling: list[float] = []
    started = time.perf_counter()
    result, final = calibration, None
    with numba_event.install_timer("numba:compile", compiling.append):
        if calibration is None and config.calibrate:
            result, kept = calibrate(prepared, config, start, progress)
            if result.particles == config.particles:  # the kept pass is the final one
                final = kept
                if progress:
                    progress(progress_steps(record, replace(config, calibrate=False)))
        params = start
        if result is not None and not result.kept_file_values:
            params = Parameters(result.calibration, result.statistical_model)
        final = final or run_pass(prepared, params, config, progress=progress)
        checks = assess(final, final.assoc, config.seed)
        estimate = _estimate(final)
    used = start.calibration if result is None else result.calibration
    reports = parameter_reports(
        used, params.model, start.model, result, prepared.nominal_speed, prepared.speed_source
    )
    track = build_track(
        record,
        estimate,
        run_attributes(final, config),
        quality=checks,
        calibration=used,
        trace=result,
        reports=reports,
    )
    compile_time = sum(compiling)
    run_time = time.perf_counter() - started - compile_time
    summary = summarise(final, config, track, checks, (run_time, compile_time), result, reports)
    return track, summary
