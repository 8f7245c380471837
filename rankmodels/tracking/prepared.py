"""A float record prepared for tracking, and the parameters a pass runs under.

:func:`prepare` turns a validated record into a :class:`Prepared` value: everything about the
record that no parameter changes -- its arrivals, the sources active at each cycle, their
positions and written offsets, the days since launch, the filter's steps (cycles and position
fixes in time order, then the recovery fix when smoothing), the launch and recovery fixes.
:class:`Parameters` is what an EM changes between passes: the geometry
(:class:`~rankmodels.tracking.calibration.Calibration`: sound speed, clock, source offset
corrections) and the statistical model
(:class:`~rankmodels.tracking.model_fit.StatisticalModel`: the signal model and the random
walk). Both are immutable; a pass (:func:`rankmodels.tracking.passes.run_pass`) is a function
of the two and the run's settings.

Predicted TOA of source ``i`` at position ``X`` on cycle ``t`` (eq. 5.2 with the calibration):
``pred_i(X) = d(X, b_i) / v_s + offset_i(t) + c_0 + c_1 t + delta_i``: great-circle distance
``d``, the written offset at that time with the source's clock drift
(:func:`~rankmodels.tracking.records.written_offsets`), the float clock ``c_0 + c_1 t`` and
the source's offset correction ``delta_i``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.calibration import Calibration
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import TrackConfig, check_memory
from rankmodels.tracking.correlation import TRUNCATION, CorrelationModel, apply_min_correlation
from rankmodels.tracking.dynamics import LagrangianMotion, RandomWalk
from rankmodels.tracking.fixes import MIN_STEP_DAYS, Fixes, Steps, filter_steps
from rankmodels.tracking.geometry import pairwise_distance_km, tangent_offsets, unit_vectors
from rankmodels.tracking.model_fit import StatisticalModel
from rankmodels.tracking.records import active_sources, written_offsets
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.sound_speed import starting_sound_speed

__all__ = [
    "Parameters",
    "Prepared",
    "days_between",
    "prepare",
    "start_drift",
    "start_parameters",
    "tracked_record",
]

_DAY = np.timedelta64(86_400_000_000_000, "ns")


def days_between(a: np.ndarray, b: np.datetime64) -> np.ndarray:
    """Days from ``b`` to each time of ``a``."""
    return (np.asarray(a).astype("datetime64[ns]") - np.datetime64(b, "ns")) / _DAY


@dataclass(frozen=True)
class Parameters:
    """What a pass runs under: the geometry ``calibration`` and the statistical ``model``."""

    calibration: Calibration
    model: StatisticalModel

    @property
    def signal(self) -> SignalModel:
        return self.model.signal

    @property
    def dynamics(self) -> RandomWalk | LagrangianMotion:
        """The model's Lagrangian motion, else the random walk of its ``process_noise``
        (eq. 5.1)."""
        return self.model.motion or RandomWalk(self.model.process_noise)

    def inflated(self, factor: float) -> Parameters:
        """These parameters assuming ``factor`` times the TOA noise (the EM's annealing),
        without the correlation heights: they are not tempered with the times, so against
        flattened time densities they would decide the association alone (on a 365-day float
        at clutter 1 the first annealing pass then lost it and the EM kept the file's values)."""
        if factor == 1.0:
            return self
        signal = replace(self.signal, sigma=self.signal.sigma * factor)
        return replace(self, model=replace(self.model, signal=signal, correlation=None))


@dataclass(frozen=True)
class Prepared:
    """A record ready for the passes.

    Per cycle ``t`` of ``T``: ``toa (T, r)`` and ``has_data (T,)``; ``active (T, s)`` the
    sources transmitting; ``offset (T, s)`` their written offsets; ``day (T,)`` days since
    launch; ``cycle_dt (T,)`` days from the previous cycle (the launch for the first);
    ``times (T,)``; ``labels (T, r)`` the hand labels as columns among the active sources (the
    labels engine only, else None); ``correlation (T, r)`` the arrivals' correlation heights
    (None: the record has none); ``truncation (T,)`` the time after which the float recorded
    nothing when arrivals were cut (:func:`~rankmodels.tracking.correlation.
    apply_min_correlation`; None: the engines' default). ``src_xyz (s, 3)`` the sources' unit
    vectors, ``nominal_speed`` the starting sound speed and ``speed_source`` where it came
    from: ``"option"`` (the configured one), ``"sensors"`` (the float's temperature and
    pressure, :func:`~rankmodels.tracking.sound_speed.starting_sound_speed`) or ``"file"``
    (the record's ``sound_speed``), ``clock`` the measured clock offsets, ``window`` the
    listening window (s), ``engine`` the likelihood engine.

    The filter's ``steps`` (:func:`~rankmodels.tracking.fixes.filter_steps`; the recovery
    step last when ``use_recovery``) and the points the fix steps weigh by, ``fix_points (K,
    3)`` (lat, lon, error km: the record's ``n_fixes`` fixes, then the recovery fix with
    ``recovery_sigma``); the start ``x0`` (lat, lon); ``recovery`` (lat, lon) and
    ``days_to_recovery`` (None without a recovery fix); ``recovery_sigma`` (km).
    """

    toa: np.ndarray
    has_data: np.ndarray
    active: np.ndarray
    offset: np.ndarray
    day: np.ndarray
    cycle_dt: np.ndarray
    times: np.ndarray
    labels: np.ndarray | None
    src_xyz: np.ndarray
    nominal_speed: float
    clock: ClockReadings
    window: float
    engine: str
    steps: Steps
    fix_points: np.ndarray
    x0: np.ndarray
    recovery: tuple[float, float] | None
    days_to_recovery: float | None
    use_recovery: bool
    n_fixes: int
    recovery_sigma: float
    speed_source: str = "file"
    correlation: np.ndarray | None = None
    truncation: np.ndarray | None = None

    @property
    def n_cycles(self) -> int:
        return self.times.size

    @property
    def n_sources(self) -> int:
        return self.offset.shape[1]

    @property
    def dt(self) -> np.ndarray:
        """``(S,)`` days from each filter step to the one before (the launch for the first)."""
        return self.steps.dt

    @property
    def cycle_steps(self) -> np.ndarray:
        """``(T,)`` the filter step of each cycle."""
        return self.steps.cycle_steps

    @property
    def pass_steps(self) -> int:
        """``progress(1)`` calls of one pass: the filter steps and the association's cycles."""
        return self.dt.size + self.n_cycles

    def distance(self, t: int, x: np.ndarray) -> np.ndarray:
        """``(N, s_active)`` great-circle distances (km) to the sources active at cycle ``t``."""
        return pairwise_distance_km(x[:, 0], x[:, 1], src_xyz=self.src_xyz[self.active[t]])


def _local_labels(labels: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Hand labels (global source index) -> column index among the active sources."""
    column = np.cumsum(active, axis=1) - 1
    out = labels.copy()
    rows, ranks = np.nonzero(labels >= 0)
    srcs = labels[rows, ranks]
    inactive = ~active[rows, srcs]
    if inactive.any():
        k = int(np.argmax(inactive))
        raise InputError(
            f"cycle {rows[k]}: labelled source {srcs[k]} is not active at that time "
            "(source_start_time/source_end_time)",
            field="source_label",
        )
    out[rows, ranks] = column[rows, srcs]
    return out


def tracked_record(record: xr.Dataset, config: TrackConfig) -> xr.Dataset:
    """The record the tracker reads: ``record`` itself, or with ``config.min_correlation``
    without the arrivals below it (:func:`~rankmodels.tracking.correlation.
    apply_min_correlation`; :class:`InputError` on ``correlation`` when it has none)."""
    if config.min_correlation is None:
        return record
    return apply_min_correlation(record, config.min_correlation)


def prepare(record: xr.Dataset, config: TrackConfig) -> Prepared:
    """The record's cycles, fixes, steps, start and recovery (:class:`Prepared`); checks that
    the smoother's particle history fits in memory
    (:func:`~rankmodels.tracking.config.check_memory`).

    Raises :class:`InputError`: ``source_label`` absent or labelling an inactive source with
    the labels engine, ``particles`` too many to smooth in memory."""
    toa = np.asarray(record["toa"].values, dtype=np.float64)
    active = active_sources(record)
    labels = None
    if config.engine == "labels":
        if "source_label" not in record:
            raise InputError("needed by the labels engine but absent", field="source_label")
        labels = _local_labels(np.asarray(record["source_label"].values), active)
    times = np.asarray(record["time"].values).astype("datetime64[ns]")
    launch = record["launch_time"].values
    day = days_between(record["time"].values, launch)
    fixes = Fixes.from_record(record)
    steps = filter_steps(day, fixes.days_since(launch))
    points = np.column_stack([fixes.lat, fixes.lon, fixes.error])
    recovery, days_to_recovery = None, None
    if "recovery_time" in record:
        recovery = (float(record["recovery_lat"]), float(record["recovery_lon"]))
        days = days_between(record["recovery_time"].values, times[-1]).item()
        days_to_recovery = max(days, MIN_STEP_DAYS)
    use_recovery = config.smooth and recovery is not None
    if use_recovery:
        steps = steps.append_fix(len(fixes), days_to_recovery)
        points = np.vstack([points, [*recovery, config.recovery_sigma]])
    check_memory(steps.dt.size, config)
    if config.sound_speed is not None:
        speed, speed_source = float(config.sound_speed), "option"
    else:
        start_speed = starting_sound_speed(record)
        speed, speed_source = start_speed.value, start_speed.origin
    return Prepared(
        toa=toa,
        has_data=~np.isnan(toa).all(axis=1),
        active=active,
        offset=written_offsets(record),
        day=day,
        cycle_dt=np.maximum(np.diff(day, prepend=0.0), MIN_STEP_DAYS),
        times=times,
        labels=labels,
        src_xyz=unit_vectors(record["source_lat"].values, record["source_lon"].values),
        nominal_speed=speed,
        speed_source=speed_source,
        clock=ClockReadings.from_record(record),
        window=float(record["window_length"]),
        engine=config.engine,
        steps=steps,
        fix_points=points,
        x0=np.array([float(record["launch_lat"]), float(record["launch_lon"])]),
        recovery=recovery,
        days_to_recovery=days_to_recovery,
        use_recovery=use_recovery,
        n_fixes=len(fixes),
        recovery_sigma=config.recovery_sigma,
        correlation=_values(record, "correlation"),
        truncation=_values(record, TRUNCATION),
    )


def _values(record: xr.Dataset, name: str) -> np.ndarray | None:
    """The record's variable ``name`` as float64, None when absent."""
    return np.asarray(record[name].values, dtype=np.float64) if name in record else None


def start_parameters(prepared: Prepared, config: TrackConfig) -> Parameters:
    """The file's geometry (:meth:`~rankmodels.tracking.calibration.Calibration.nominal`: the
    nominal sound speed, the clock through the measured offsets, no corrections) and the
    configured statistical model (with the Lagrangian motion, its mean velocity from
    :func:`start_drift`; when calibrating ``correlation`` on a record with correlation
    heights, their two-component mixture, :meth:`~rankmodels.tracking.correlation.
    CorrelationModel.from_heights`): where a calibration starts and what an uncalibrated run
    uses."""
    signal = SignalModel(
        sigma=config.sigma,
        p_detect=config.p_detect,
        clutter_rate=config.clutter_rate,
        window=prepared.window,
        multipath=config.multipath,
    )
    motion = None
    if config.motion == "lagrangian":
        motion = LagrangianMotion(
            start_drift(prepared), config.eddy_speed, config.time_scale, config.position_noise
        )
    correlation = None
    if config.calibrate and "correlation" in config.calibrate_params:
        if prepared.correlation is not None:
            recorded = np.where(np.isnan(prepared.toa), np.nan, prepared.correlation)
            correlation = CorrelationModel.from_heights(recorded)
    return Parameters(
        Calibration.nominal(prepared.n_sources, prepared.nominal_speed, prepared.clock),
        StatisticalModel(signal, config.process_noise, motion=motion, correlation=correlation),
    )


def start_drift(prepared: Prepared) -> tuple[float, float]:
    """The Lagrangian motion's starting mean velocity (east, north km/day): the displacement
    from the launch to the recovery fix over the days between them, ``(0, 0)`` without a
    recovery fix."""
    if prepared.recovery is None:
        return (0.0, 0.0)
    east, north = tangent_offsets(*prepared.x0, *prepared.recovery)
    days = float(prepared.day[-1]) + float(prepared.days_to_recovery)
    return (float(east) / days, float(north) / days)
