"""What a track run did (:class:`TrackSummary`), for the command line's summary, the report
and the batch table, and the track file's attributes of the run (:func:`run_attributes`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import xarray as xr

from rankmodels.tracking.calibration import CalibrationResult
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.estimates import ParameterReport
from rankmodels.tracking.motion_fit import LagrangianStatistics, lagrangian_statistics
from rankmodels.tracking.passes import Pass
from rankmodels.tracking.quality import QualityCheck
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL

__all__ = ["TrackSummary", "run_attributes", "summarise"]


@dataclass(frozen=True)
class TrackSummary:
    """What a run did.

    ``collapsed_cycles``: indices of cycles where every particle had zero likelihood;
    ``run_time_s``: the tracking without ``compile_time_s``, the time numba spent compiling
    kernels (a first run, before they are cached; 0 after); ``quality``: the quality checks;
    ``calibration``: the EM iterations (None without calibration); ``unconverged_cycles``:
    cycles where ``bp`` or ``minfactor`` left a particle unconverged within its sweep limit
    (its likelihood there is the last sweep's; always empty for the other engines);
    ``parameters``: what the track estimated and kept
    (:func:`~rankmodels.tracking.estimates.parameter_reports`); ``fixes_used``: the record's
    position fixes (the recovery not counted), which the filter and the smoother used;
    ``recovery_fix``: whether the record has a recovery fix; ``lagrangian``: the float's
    Lagrangian statistics (None without the Lagrangian motion). :data:`TABLE_FIELDS` are the
    scalar fields the report's summary table shows.
    """

    TABLE_FIELDS: ClassVar[tuple[str, ...]] = (
        "cycles",
        "cycles_without_data",
        "arrivals",
        "mean_ess",
        "clutter_fraction",
        "collapsed_cycles",
        "log_likelihood",
        "engine",
        "particles",
        "smoothed",
        "recovery_used",
        "run_time_s",
    )

    cycles: int
    cycles_without_data: int
    arrivals: int
    mean_ess: float
    clutter_fraction: float
    collapsed_cycles: list[int]
    log_likelihood: float
    engine: str
    particles: int
    smoothed: bool
    recovery_used: bool
    run_time_s: float
    compile_time_s: float
    quality: tuple[QualityCheck, ...]
    calibration: CalibrationResult | None = None
    unconverged_cycles: list[int] = field(default_factory=list)
    parameters: tuple[ParameterReport, ...] = ()
    fixes_used: int = 0
    recovery_fix: bool = True
    lagrangian: LagrangianStatistics | None = None

    @property
    def failed_checks(self) -> tuple[QualityCheck, ...]:
        """The quality checks that failed."""
        return tuple(c for c in self.quality if c.passed is False)

    def table(self) -> dict[str, object]:
        """The :data:`TABLE_FIELDS` by name."""
        return {name: getattr(self, name) for name in self.TABLE_FIELDS}


def summarise(
    final: Pass,
    config: TrackConfig,
    track: xr.Dataset,
    checks: tuple[QualityCheck, ...],
    times: tuple[float, float],
    calibration: CalibrationResult | None = None,
    parameters: tuple[ParameterReport, ...] = (),
) -> TrackSummary:
    """The run's :class:`TrackSummary` from its ``final`` pass; ``times``: the run and
    compile times (s)."""
    prepared, filt = final.prepared, final.filt
    at = prepared.cycle_steps
    association = track["association"].values
    arrivals = association != NO_ARRIVAL
    return TrackSummary(
        cycles=prepared.n_cycles,
        cycles_without_data=int((~prepared.has_data).sum()),
        arrivals=int(arrivals.sum()),
        mean_ess=float(np.mean(filt.ess[at])),
        clutter_fraction=float(np.mean(association[arrivals] == CLUTTER)),
        collapsed_cycles=np.flatnonzero(filt.collapsed[at]).tolist(),
        log_likelihood=float(np.sum(filt.loglik[at])),
        engine=config.engine,
        particles=config.particles,
        smoothed=config.smooth,
        recovery_used=prepared.use_recovery,
        run_time_s=times[0],
        compile_time_s=times[1],
        quality=checks,
        calibration=calibration,
        unconverged_cycles=np.flatnonzero(final.unconverged).tolist(),
        parameters=parameters,
        fixes_used=prepared.n_fixes,
        recovery_fix=prepared.recovery is not None,
        lagrangian=lagrangian_statistics(final.params.model),
    )


def run_attributes(final: Pass, config: TrackConfig) -> dict[str, object]:
    """The track file's attributes of the run: the settings and the statistical model the
    ``final`` pass used."""
    prepared, model = final.prepared, final.params.model
    signal = model.signal
    return {
        "engine": config.engine,
        "particles": config.particles,
        "seed": config.seed,
        "sigma": signal.sigma,
        "p_detect": signal.p_detect,
        "clutter_rate": signal.clutter_rate,
        "multipath": signal.multipath,
        "multipath_delay_s": signal.multipath_delay,
        "sound_speed": prepared.nominal_speed,
        "window_length": signal.window,
        "process_noise_km": model.process_noise,
        "smoothed": int(config.smooth),
        "recovery_used": int(prepared.use_recovery),
        "fixes_used": prepared.n_fixes,
        "ensemble": config.ensemble,
        "unconverged_cycles": int(final.unconverged.sum()),
        **({} if config.min_correlation is None else {"min_correlation": config.min_correlation}),
    }
