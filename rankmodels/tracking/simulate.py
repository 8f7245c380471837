"""Simulated RAFOS float records with known truth.

The generative model is the one the tracker assumes ([Pareek2017] section 5.2 and eq.
5.64-5.67), with a few realistic departures that the tracker does *not* know about:

* trajectories: straight, spiral, or a *drifting* random walk whose velocity is a mean drift
  plus Ornstein-Uhlenbeck "eddy" velocity (correlated over days, not the tracker's white
  random walk), pinned to the launch and recovery positions;
* sources transmit only within their deployment period (``source_start_time`` ..
  ``source_end_time``) and with a per-source ``source_offset`` (transmission schedule) and,
  optionally, a clock drift ``source_drift`` (s/day since the deployment, stated in the
  record);
* each active source's signal is detected with probability ``p_detect`` that may fall with
  range (:func:`range_dependent_detection`); a detected signal arrives at
  ``distance / sound_speed + offset + N(0, sigma^2)`` s and is recorded only inside the
  listening window ``[0, window_length]``;
* ``Poisson(clutter_rate)`` clutter arrivals uniform on the window;
* the float keeps the first ``r`` arrivals of the merged, sorted list;
* optionally (a ``correlation_rng``) the correlation height of each recorded arrival, drawn
  from a world that is *not* the tracker's log-normal model
  (:mod:`~rankmodels.tracking.correlation`): a source's from ``Gamma(shape 9, mean m)``
  with ``m`` falling linearly from 90 at the source to 60 from 2,500 km (weaker signals far
  away) and times 0.7 for a multipath-delayed arrival, clutter's ``15 + Gamma(shape 2,
  mean 20)``; rounded to whole numbers of at least 1, as decoders write them
  (:func:`correlation_heights`);
* optionally (:class:`FixSchedule`) GPS fixes of a float that surfaces every few days for a
  while (a RAFOS-enabled Argo float in open water), each off by ``N(0, error^2)`` km per axis,
  and a float without a recovery fix (lost);
* optionally (:class:`Mismatch`) what real records carry and their files do not state: a float
  clock running off by ``clock_offset + clock_drift * days`` since launch (every recorded TOA
  is late by that much), signals travelling at a true sound speed other than the file's
  ``sound_speed``, written ``source_offset`` values off by ``N(0, offset_error^2)``, and a
  fraction ``multipath`` of source arrivals delayed by ``Uniform(multipath_delay)`` s.

:func:`dimes_float767` simulates a float on the real DIMES geometry, launched where DIMES
float 767 was; with its defaults and :data:`SAMPLE_MISMATCH` it is the shipped sample
``data/float767.nc`` (``docs/simulation.md``). Long simulations report
progress through a ``progress(n)`` callback (:func:`simulation_steps` calls in all).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.config import LIMITS
from rankmodels.tracking.dynamics import M_PER_S
from rankmodels.tracking.geometry import (
    great_circle_km,
    tangent_offsets,
    tangent_step,
)
from rankmodels.tracking.schema import CLUTTER, FLOAT_RECORD, NO_ARRIVAL, TRUTH, annotate

__all__ = [
    "BRIDGE_ITERATIONS",
    "DIMES_SOURCES",
    "DriftingTrack",
    "FixSchedule",
    "MAX_DAYS",
    "MISMATCH_LIMITS",
    "SAMPLE_MISMATCH",
    "SUBSTEPS_PER_DAY",
    "TRAJECTORIES",
    "Mismatch",
    "SignalSpec",
    "Source",
    "correlation_heights",
    "dimes_float767",
    "drifting_track",
    "range_dependent_detection",
    "simulate_record",
    "simulated_float_id",
    "simulation_steps",
    "spiral_track",
    "straight_track",
]

DAY = np.timedelta64(86_400_000_000_000, "ns")
#: Most passes :func:`drifting_track` makes to pin a drifting float to its recovery position.
BRIDGE_ITERATIONS = 50
#: Fewest sub-steps a day :func:`drifting_track` integrates its eddy velocity over.
SUBSTEPS_PER_DAY = 24
#: Cycles between two ``progress`` calls of :func:`simulate_record`.
_PROGRESS_CYCLES = 256

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Source:
    """A moored sound source: name, position (degrees), schedule offset (s) at its deployment
    (``start``; the launch when None), clock drift (s/day), active period."""

    name: str
    lat: float
    lon: float
    offset: float = 0.0
    start: np.datetime64 | None = None
    end: np.datetime64 | None = None
    drift: float = 0.0


@dataclass(frozen=True)
class FixSchedule:
    """GPS fixes of a float that surfaces every ``every`` days from the launch up to ``until``
    days after it (None: the whole record), as a RAFOS-enabled Argo float does while there is
    no ice; each fix is off by ``N(0, error^2)`` km per axis (``error`` is also the stated
    ``fix_error``). Fixes fall on whole days only when ``every`` is whole; none comes after
    the last cycle. Raises :class:`~rankmodels.errors.InputError` (``field`` the setting) for
    ``every`` or ``error`` not > 0, ``until`` < 0, or a value that is not finite."""

    every: float
    until: float | None = None
    error: float = 0.5

    def __post_init__(self) -> None:
        for name, lo, open_ in (("every", 0.0, True), ("until", 0.0, False), ("error", 0.0, True)):
            value = getattr(self, name)
            if value is None and name == "until":
                continue
            ok = isinstance(value, numbers.Real) and math.isfinite(value)
            if not (ok and (value > lo if open_ else value >= lo)):
                raise InputError(
                    f"expected a finite number {'>' if open_ else '>='} {lo:g}, got {value!r}",
                    field=name,
                )

    def days(self, last_cycle_day: float) -> np.ndarray:
        """The fix days since launch: ``every, 2 every, ...`` up to ``until`` and the last
        cycle."""
        end = last_cycle_day if self.until is None else min(self.until, last_cycle_day)
        return self.every * np.arange(1, int(math.floor(end / self.every + 1e-9)) + 1)


#: DIMES sound sources (name, lat, lon). US2-x and UK1-x were deployed about a year after US1-x.
DIMES_SOURCES: tuple[tuple[str, float, float], ...] = (
    ("US1-1", -59.914, -109.911),
    ("US1-2", -55.996, -109.910),
    ("US1-3", -58.101, -97.960),
    ("US1-4", -59.966, -86.154),
    ("US1-5", -55.963, -85.986),
    ("US1-6", -58.334, -74.414),
    ("US2-1", -58.169, -102.169),
    ("US2-2", -59.939, -78.003),
    ("UK1-1", -59.977, -65.990),
    ("UK1-2", -58.014, -61.886),
    ("UK1-3", -56.023, -57.784),
    ("UK1-4", -58.051, -53.645),
)


@dataclass(frozen=True)
class SignalSpec:
    """Parameters of the simulated acoustics (times in s, speed in m/s)."""

    sigma: float = 5.0
    p_detect: float | Callable[[np.ndarray], np.ndarray] = 0.9
    clutter_rate: float = 1.0
    window_length: float = 1800.0
    sound_speed: float = 1480.0
    ranks: int = 4


#: Accepted range of each :class:`Mismatch` setting: (lo, hi, unit, lo_open, hi_open). A
#: float clock drifts by seconds a year (1 s/day is far beyond any); the true sound speed has
#: the tracker's range; written offsets are wrong by seconds, not minutes; ``multipath = 1``
#: would leave no direct arrival.
MISMATCH_LIMITS: dict[str, tuple[float, float, str, bool, bool]] = {
    "clock_offset": (-600.0, 600.0, "s", False, False),
    "clock_drift": (-1.0, 1.0, "s/day", False, False),
    "true_sound_speed": (LIMITS["sound_speed"].lo, LIMITS["sound_speed"].hi, "m/s", False, False),
    "offset_error": (0.0, 60.0, "s", False, False),
    "multipath": (0.0, 1.0, "", False, True),
}


@dataclass(frozen=True)
class Mismatch:
    """What a simulated record carries and its file does not state (all off by default).

    ``clock_offset`` (s) and ``clock_drift`` (s/day): the float clock reads
    ``e(t) = clock_offset + clock_drift * days since launch`` seconds ahead of true time, so its
    listening window opens ``e(t)`` early and every source arrival is recorded ``e(t)`` s late.
    ``true_sound_speed`` (m/s): the speed signals travel at (None: the file's
    ``sound_speed``). ``offset_error`` (s): each written ``source_offset`` is the true one plus
    ``N(0, offset_error^2)``. ``multipath``: probability that a source arrival is delayed by
    ``Uniform(multipath_delay)`` s. Raises :class:`~rankmodels.errors.InputError` (``field`` =
    the setting) for a value outside :data:`MISMATCH_LIMITS`, NaN or infinite.
    """

    clock_offset: float = 0.0
    clock_drift: float = 0.0
    true_sound_speed: float | None = None
    offset_error: float = 0.0
    multipath: float = 0.0
    multipath_delay: tuple[float, float] = (10.0, 60.0)

    def __post_init__(self) -> None:
        for name, (lo, hi, unit, lo_open, hi_open) in MISMATCH_LIMITS.items():
            value = getattr(self, name)
            if name == "true_sound_speed" and value is None:
                continue
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            ok = ok and math.isfinite(value)
            ok = ok and (value > lo if lo_open else value >= lo)
            ok = ok and (value < hi if hi_open else value <= hi)
            if not ok:
                rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
                raise InputError(
                    f"expected a number in {rng}{' ' + unit if unit else ''}, got {value!r}",
                    field=name,
                )
        lo, hi = self.multipath_delay
        if not 0.0 <= lo <= hi:
            raise InputError(
                f"expected 0 <= lo <= hi, got {self.multipath_delay!r}", field="multipath_delay"
            )

    @property
    def any(self) -> bool:
        """Whether the record departs from its file at all."""
        return bool(
            self.clock_offset
            or self.clock_drift
            or self.true_sound_speed is not None
            or self.offset_error
            or self.multipath
        )


def range_dependent_detection(
    near: float = 0.95, far: float = 0.75, near_km: float = 800.0, far_km: float = 2500.0
) -> Callable[[np.ndarray], np.ndarray]:
    """``P_D(d)``: ``near`` up to ``near_km``, falling linearly to ``far`` at ``far_km``."""

    def p_detect(distance_km: np.ndarray) -> np.ndarray:
        frac = np.clip((np.asarray(distance_km) - near_km) / (far_km - near_km), 0.0, 1.0)
        return near + (far - near) * frac

    return p_detect


# --- trajectories ------------------------------------------------------------------------


def straight_track(
    days: np.ndarray, start: tuple[float, float], end: tuple[float, float], total_days: float
) -> tuple[np.ndarray, np.ndarray]:
    """Constant-velocity track (in the tangent plane at ``start``) from ``start`` at day 0 to
    ``end`` at ``total_days``; positions at ``days``."""
    east, north = tangent_offsets(start[0], start[1], end[0], end[1])
    frac = np.asarray(days, dtype=float) / total_days
    return tangent_step(
        np.full(frac.shape, start[0]), np.full(frac.shape, start[1]), frac * east, frac * north
    )


def spiral_track(
    days: np.ndarray,
    centre: tuple[float, float],
    radius_km: tuple[float, float],
    turns: float,
    total_days: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Spiral about ``centre`` whose radius grows linearly from ``radius_km[0]`` to
    ``radius_km[1]`` over ``total_days`` while turning ``turns`` times anticlockwise."""
    frac = np.asarray(days, dtype=float) / total_days
    radius = radius_km[0] + (radius_km[1] - radius_km[0]) * frac
    angle = 2.0 * np.pi * turns * frac
    return tangent_step(
        np.full(frac.shape, centre[0]),
        np.full(frac.shape, centre[1]),
        radius * np.cos(angle),
        radius * np.sin(angle),
    )


class DriftingTrack(NamedTuple):
    """A drifting float's truth: positions ``lat``/``lon`` (D,) (degrees), its instantaneous
    ``velocity`` ``(D, 2)`` (east, north km/day: the mean drift plus the eddy velocity) at
    the same times, the ``mean_velocity`` (2,) (km/day) its bridge solved for, and the eddy
    speed (km/day per axis) and time scale (days) it was drawn with."""

    lat: np.ndarray
    lon: np.ndarray
    velocity: np.ndarray
    mean_velocity: np.ndarray
    eddy_speed: float
    time_scale: float

    def truth(self, cycles: int) -> dict[str, tuple[Any, ...]]:
        """The truth file's motion variables (:data:`~rankmodels.tracking.schema.TRUTH`) for
        the first ``cycles`` positions: the velocity in m/s, the parameters in km/day and
        days."""
        east, north = self.velocity[:cycles].T * M_PER_S
        return {
            "velocity_east": ("cycle", east),
            "velocity_north": ("cycle", north),
            "mean_velocity_east": ((), float(self.mean_velocity[0])),
            "mean_velocity_north": ((), float(self.mean_velocity[1])),
            "eddy_speed": ((), float(self.eddy_speed)),
            "time_scale": ((), float(self.time_scale)),
        }


def _eddy_displacements(
    t: np.ndarray, eddy_speed: float, eddy_days: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A stationary Ornstein-Uhlenbeck eddy velocity ``u(t)`` per axis (standard deviation
    ``eddy_speed`` km/day, correlation time ``eddy_days``) integrated continuously over the
    times ``t`` (K + 1,) (days, ``t[0]`` the start). Returns the eddy displacements ``(K, 2)``
    (east, north km) between consecutive times and the eddy velocity ``(K, 2)`` at
    ``t[1:]``.

    Each interval is cut into at least :data:`SUBSTEPS_PER_DAY` sub-steps a day; over a
    sub-step ``h`` the velocity moves by the exact OU update ``u' = phi u + s sqrt(1 - phi^2)
    e`` (``phi = exp(-h / tau)``) and the float by the trapezoid ``h (u + u') / 2``.
    """
    dt = np.diff(t)
    pieces = np.maximum(1, np.ceil(dt * SUBSTEPS_PER_DAY)).astype(int)
    h = np.repeat(dt / pieces, pieces)
    phi = np.exp(-h / eddy_days)
    kick = eddy_speed * np.sqrt(-np.expm1(-2.0 * h / eddy_days))
    first = rng.normal(0.0, eddy_speed, 2)
    noise = rng.standard_normal((h.size, 2))
    velocity = np.empty((h.size + 1, 2))
    velocity[0] = first
    for axis in range(2):  # OU recursion over sub-steps, as plain floats (fast in CPython)
        u = float(first[axis])
        out = [u]
        for p, c, e in zip(phi.tolist(), kick.tolist(), noise[:, axis].tolist(), strict=True):
            u = p * u + c * e
            out.append(u)
        velocity[:, axis] = out
    sub_step = 0.5 * h[:, None] * (velocity[:-1] + velocity[1:])
    ends = np.cumsum(pieces)
    displacement = np.add.reduceat(sub_step, ends - pieces, axis=0)
    return displacement, velocity[ends]


def drifting_track(
    days: np.ndarray,
    start: tuple[float, float],
    end: tuple[float, float] | None,
    rng: np.random.Generator,
    *,
    eddy_speed: float = 4.0,
    eddy_days: float = 5.0,
    drift: tuple[float, float] = (2.0, 0.0),
    progress: Progress | None = None,
) -> DriftingTrack:
    """Drifting float: velocity = mean drift + Ornstein-Uhlenbeck eddy velocity.

    ``days``: increasing times (days since launch, ``days[0] > 0``); the float starts at
    ``start`` at day 0. Eddy velocity per axis is stationary OU with standard deviation
    ``eddy_speed`` km/day and correlation time ``eddy_days``, integrated continuously (sub-daily
    steps, :func:`_eddy_displacements`), so the track is an integrated OU process as
    oceanographers model floats. With ``end`` given, the constant drift is solved
    (fixed-point iteration) so the path ends exactly at ``end`` at ``days[-1]`` -- a
    velocity-space bridge, at most :data:`BRIDGE_ITERATIONS` corrections; otherwise ``drift``
    (east, north km/day) is used. Each interval's displacement is taken in the tangent plane
    of the position at its start. ``progress(len(days))`` is called after every pass over the
    days, ``1 + BRIDGE_ITERATIONS`` times in all with ``end`` (passes a converged bridge skips
    are reported at its end), once without.

    Returns the :class:`DriftingTrack` at ``days``.
    """
    t = np.concatenate([[0.0], np.asarray(days, dtype=float)])
    if (np.diff(t) <= 0).any():
        raise ValueError("days must be positive and strictly increasing")
    if not (math.isfinite(eddy_speed) and eddy_speed >= 0.0):
        raise ValueError(f"eddy_speed must be a finite number >= 0 km/day, got {eddy_speed}")
    if not (math.isfinite(eddy_days) and eddy_days > 0.0):
        raise ValueError(f"eddy_days must be a finite number > 0 days, got {eddy_days}")
    dt = np.diff(t)
    eddy_step, eddy_velocity = _eddy_displacements(t, eddy_speed, eddy_days, rng)
    mean = np.asarray(drift, dtype=float)

    def integrate(v_mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lat = np.empty(dt.size)
        lon = np.empty(dt.size)
        la, lo = start
        for k in range(dt.size):
            step = v_mean * dt[k] + eddy_step[k]
            la, lo = tangent_step(la, lo, step[0], step[1])
            lat[k], lon[k] = la, lo
        if progress is not None:
            progress(dt.size)
        return lat, lon

    lat, lon = integrate(mean)
    if end is not None:
        for done in range(BRIDGE_ITERATIONS):
            e, n = tangent_offsets(lat[-1], lon[-1], end[0], end[1])
            if np.hypot(e, n) < 1e-6:
                if progress is not None:
                    progress((BRIDGE_ITERATIONS - done) * dt.size)
                break
            mean = mean + np.array([e, n]) / t[-1]
            lat, lon = integrate(mean)
    return DriftingTrack(lat, lon, mean + eddy_velocity, mean, eddy_speed, eddy_days)


# --- signals -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _SourceTable:
    """The sources as arrays, each ``(S,)``: ``names``, positions ``lat``/``lon`` (degrees),
    schedule ``offset`` (s), deployment ``start``/``end`` (datetime64[ns], NaT: unbounded) and
    clock ``drift`` (s/day)."""

    names: list[str]
    lat: np.ndarray
    lon: np.ndarray
    offset: np.ndarray
    start: np.ndarray
    end: np.ndarray
    drift: np.ndarray


def _source_table(sources: Sequence[Source]) -> _SourceTable:
    """The ``S`` sources' settings as ``(S,)`` arrays (:class:`_SourceTable`)."""
    return _SourceTable(
        names=[s.name for s in sources],
        lat=np.array([s.lat for s in sources]),
        lon=np.array([s.lon for s in sources]),
        offset=np.array([s.offset for s in sources]),
        start=np.array([s.start or np.datetime64("NaT") for s in sources], dtype="datetime64[ns]"),
        end=np.array([s.end or np.datetime64("NaT") for s in sources], dtype="datetime64[ns]"),
        drift=np.array([s.drift for s in sources], dtype=float),
    )


@dataclass(frozen=True)
class _Signals:
    """The source signals of ``T`` cycles from ``S`` sources: ``arrival`` (T, S) times in the
    listening window (s), ``heard`` (T, S) whether each is recorded, ``active`` (T, S) whether
    the source transmits, ``speed`` the true sound speed (m/s), ``written_offset`` (S,) the
    offsets the file states (s), with a mismatch, ``delay`` (T, S) the multipath delays
    (s, 0 for a direct arrival; None without), and ``distance`` (T, S) from the float to
    each source (km)."""

    arrival: np.ndarray
    heard: np.ndarray
    active: np.ndarray
    speed: float
    written_offset: np.ndarray
    delay: np.ndarray | None
    distance: np.ndarray


#: The simulated correlation heights (module docstring): a source arrival's mean height near
#: the source and from :data:`HEIGHT_FAR_KM` on, the factor of a delayed arrival, the Gamma
#: shapes of source and clutter heights, clutter's floor and mean above it.
HEIGHT_NEAR, HEIGHT_FAR, HEIGHT_FAR_KM, HEIGHT_DELAYED = 90.0, 60.0, 2500.0, 0.7
HEIGHT_SOURCE_SHAPE, HEIGHT_CLUTTER_SHAPE = 9.0, 2.0
HEIGHT_CLUTTER_FLOOR, HEIGHT_CLUTTER_MEAN = 15.0, 20.0


def correlation_heights(
    label: np.ndarray,
    distance: np.ndarray,
    delay: np.ndarray | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """``(T, r)`` correlation heights of the recorded arrivals of true ``label`` (T, r)
    (source index, ``CLUTTER``, ``NO_ARRIVAL``: NaN), the sources at ``distance`` (T, S) km,
    ``delay`` (T, S) their multipath delays (None: none): module docstring. A source height
    and a clutter height are drawn for every (cycle, rank), in that order, from ``rng``."""
    source = label >= 0
    column = np.where(source, label, 0).astype(np.intp)
    far = np.clip(np.take_along_axis(distance, column, axis=1) / HEIGHT_FAR_KM, 0.0, 1.0)
    mean = HEIGHT_NEAR + (HEIGHT_FAR - HEIGHT_NEAR) * far
    if delay is not None:
        delayed = np.take_along_axis(delay, column, axis=1) > 0
        mean = np.where(delayed, HEIGHT_DELAYED * mean, mean)
    from_source = rng.gamma(HEIGHT_SOURCE_SHAPE, mean / HEIGHT_SOURCE_SHAPE)
    from_clutter = HEIGHT_CLUTTER_FLOOR + rng.gamma(
        HEIGHT_CLUTTER_SHAPE, HEIGHT_CLUTTER_MEAN / HEIGHT_CLUTTER_SHAPE, label.shape
    )
    height = np.where(source, from_source, np.where(label == CLUTTER, from_clutter, np.nan))
    return np.where(np.isnan(height), np.nan, np.maximum(np.round(height), 1.0))


def _signals(
    table: _SourceTable,
    times: np.ndarray,
    track: tuple[np.ndarray, np.ndarray],
    launch_time: np.datetime64,
    spec: SignalSpec,
    rng: np.random.Generator,
    mismatch: Mismatch,
    mismatch_rng: np.random.Generator | None,
) -> _Signals:
    """The signals (:class:`_Signals`) of the sources ``table`` at the cycle ``times`` (T,)
    (datetime64[ns]) heard from the true positions ``track = (lat, lon)`` (T,) each: the
    arrival noise (T, S) then the detections (T, S) drawn from ``rng``, the mismatch from
    ``mismatch_rng`` (:func:`_mismatch_draws`)."""
    launch_time = np.datetime64(launch_time, "ns")
    t = times[:, None]
    start, stop = table.start, table.end
    active = (np.isnat(start) | (start <= t)) & (np.isnat(stop) | (t <= stop))
    lat, lon = track
    dist = great_circle_km(lat[:, None], lon[:, None], table.lat[None, :], table.lon[None, :])
    p_d = spec.p_detect(dist) if callable(spec.p_detect) else np.full(dist.shape, spec.p_detect)
    speed = mismatch.true_sound_speed or spec.sound_speed
    arrival = dist * 1000.0 / speed + table.offset + rng.normal(0.0, spec.sigma, dist.shape)
    if table.drift.any():
        reference = np.where(np.isnat(start), launch_time, start)
        arrival = arrival + table.drift * ((t - reference) / DAY)
    written_offset, delay = table.offset, None
    if mismatch.any:
        days = (times - launch_time) / DAY
        clock, written_offset, delay = _mismatch_draws(
            mismatch, mismatch_rng, days, table.offset, dist.shape
        )
        arrival = arrival + clock[:, None] + delay
    heard = (
        active & (rng.random(dist.shape) < p_d) & (arrival >= 0) & (arrival <= spec.window_length)
    )
    return _Signals(arrival, heard, active, speed, written_offset, delay, dist)


def _mismatch_draws(
    mismatch: Mismatch,
    rng: np.random.Generator,
    days: np.ndarray,
    offset: np.ndarray,
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``mismatch`` does to the signals at ``days`` (T,) since launch: the float clock's
    lead (T,) (s), the written source offsets (S,) (the true ``offset`` (S,) plus their
    errors) and the multipath delay of each arrival, ``shape = (T, S)`` (s, 0 for a direct
    arrival); the offset errors, the multipath choices and the delays are drawn from ``rng``
    in that order."""
    clock = mismatch.clock_offset + mismatch.clock_drift * days  # (T,) float clock ahead
    written_offset = offset + rng.normal(0.0, mismatch.offset_error, offset.shape)
    delayed = rng.random(shape) < mismatch.multipath
    delay = np.where(delayed, rng.uniform(*mismatch.multipath_delay, shape), 0.0)
    return clock, written_offset, delay


def _first_arrivals(
    arrival: np.ndarray,
    heard: np.ndarray,
    spec: SignalSpec,
    rng: np.random.Generator,
    progress: Progress | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The recorded TOAs ``toa`` (T, r) (s; NaN past the last arrival) and their labels
    ``label`` (T, r) (source index, ``CLUTTER`` or ``NO_ARRIVAL``): per cycle the first
    ``r = spec.ranks`` of the heard source ``arrival`` times (T, S; ``heard`` (T, S)) merged
    with ``Poisson(spec.clutter_rate)`` clutter arrivals uniform on the window, the counts
    (T,) then each cycle's clutter drawn from ``rng``. ``progress(n)`` as ``n`` more cycles are
    done."""
    n_cyc, r = arrival.shape[0], spec.ranks
    toa = np.full((n_cyc, r), np.nan)
    label = np.full((n_cyc, r), NO_ARRIVAL, dtype=np.int8)
    n_clutter = rng.poisson(spec.clutter_rate, n_cyc)
    for c in range(n_cyc):  # merge per cycle (a handful of arrivals each)
        clutter = rng.uniform(0.0, spec.window_length, n_clutter[c])
        times_c = np.concatenate([arrival[c, heard[c]], clutter])
        labels_c = np.concatenate([np.flatnonzero(heard[c]), np.full(clutter.size, CLUTTER)])
        order = np.argsort(times_c, kind="stable")[:r]
        toa[c, : order.size] = times_c[order]
        label[c, : order.size] = labels_c[order]
        if progress is not None and ((c + 1) % _PROGRESS_CYCLES == 0 or c + 1 == n_cyc):
            progress((c % _PROGRESS_CYCLES) + 1)
    return toa, label


def simulate_record(
    sources: Sequence[Source],
    times: np.ndarray,
    lat: np.ndarray,
    lon: np.ndarray,
    launch: tuple[float, float, np.datetime64],
    spec: SignalSpec,
    rng: np.random.Generator,
    *,
    recovery: tuple[float, float, np.datetime64] | None = None,
    float_id: str = "sim",
    progress: Progress | None = None,
    mismatch: Mismatch | None = None,
    mismatch_rng: np.random.Generator | None = None,
    fixes: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None,
    correlation_rng: np.random.Generator | None = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Simulate the float's recorded TOAs along a known track.

    ``times`` (T,) datetime64 cycle times, ``lat``/``lon`` (T,) true positions. Returns
    ``(record, truth)``: the record in the float format (``schema.FLOAT_RECORD``, with
    ``source_label`` = the true labels, as if hand-labelled perfectly) and the truth
    (``schema.TRUTH``: ``lat``, ``lon``, ``true_label``). ``progress(n)`` is called as ``n``
    more cycles are done (``T`` in all).

    ``mismatch`` (:class:`Mismatch`) makes the signals depart from what the file states; its
    random draws (offset errors, multipath) come from ``mismatch_rng`` only, so the track,
    noise, detections and clutter drawn from ``rng`` are those of the same call without it.
    The truth then also holds the true ``clock_offset``, ``clock_drift``, ``sound_speed``,
    ``source_offset`` and ``multipath_delay`` (0 for direct arrivals).

    A source's arrivals are late by its ``drift`` times the days since its ``start`` (the
    launch without one); the record states the drifts (``source_drift``, written only when
    some source drifts). ``fixes``: ``(time, lat, lon, error)`` position fixes written to the
    record as they are (``fix_*``; drawn by the caller). ``correlation_rng``: the record
    gets the ``correlation`` height of each arrival (:func:`correlation_heights`), drawn from
    it alone (every other draw stays that of the same call without it); None: no heights.
    """
    mismatch = mismatch or Mismatch()
    if mismatch.any and mismatch_rng is None:
        raise ValueError("a mismatch needs its own mismatch_rng")
    times = np.asarray(times).astype("datetime64[ns]")
    table = _source_table(sources)
    signals = _signals(table, times, (lat, lon), launch[2], spec, rng, mismatch, mismatch_rng)
    toa, label = _first_arrivals(signals.arrival, signals.heard, spec, rng, progress)
    record = _record_dataset(
        table, times, toa, label, signals.written_offset, launch, spec, float_id
    )
    if correlation_rng is not None:
        heights = correlation_heights(label, signals.distance, signals.delay, correlation_rng)
        record["correlation"] = (("cycle", "rank"), heights)
    if fixes is not None:
        fix_time, fix_lat, fix_lon, fix_error = fixes
        record["fix_time"] = ("fix", np.asarray(fix_time).astype("datetime64[ns]"))
        record["fix_lat"] = ("fix", np.asarray(fix_lat, dtype=float))
        record["fix_lon"] = ("fix", np.asarray(fix_lon, dtype=float))
        record["fix_error"] = ("fix", np.full(np.size(fix_time), float(fix_error)))
    if recovery is not None:
        record["recovery_lat"] = ((), float(recovery[0]))
        record["recovery_lon"] = ((), float(recovery[1]))
        record["recovery_time"] = ((), np.datetime64(recovery[2], "ns"))
    truth = _truth_dataset(table.names, times, lat, lon, label, float_id)
    if mismatch.any:
        truth.update(_mismatch_truth(mismatch, signals, table.offset))
        truth.attrs["sim_mismatch"] = _mismatch_text(mismatch)
        record.attrs["sim_mismatch"] = truth.attrs["sim_mismatch"]
    return annotate(record, FLOAT_RECORD), annotate(truth, TRUTH)


def _record_dataset(
    table: _SourceTable,
    times: np.ndarray,
    toa: np.ndarray,
    label: np.ndarray,
    written_offset: np.ndarray,
    launch: tuple[float, float, np.datetime64],
    spec: SignalSpec,
    float_id: str,
) -> xr.Dataset:
    """The float record of ``T`` cycles at ``times`` (T,) from the ``S`` sources of ``table``,
    without its fixes and recovery: ``toa`` (T, r) (s) and their true ``label`` (T, r) as the
    ``source_label``, the ``written_offset`` (S,) as ``source_offset``, the sources' drifts
    (``source_drift`` (S,)) when some source drifts, the ``launch`` ``(lat, lon, time)`` and
    the stated acoustics of ``spec``."""
    record = xr.Dataset(
        {
            "toa": (("cycle", "rank"), toa.astype(np.float32)),
            "source_lat": ("source", table.lat),
            "source_lon": ("source", table.lon),
            "source_offset": ("source", written_offset),
            "source_start_time": ("source", table.start),
            "source_end_time": ("source", table.end),
            "source_label": (
                ("cycle", "rank"),
                label,
                {"comment": "simulated: equal to the true labels"},
            ),
            "launch_lat": ((), float(launch[0])),
            "launch_lon": ((), float(launch[1])),
            "launch_time": ((), np.datetime64(launch[2], "ns")),
            "sound_speed": ((), float(spec.sound_speed)),
            "window_length": ((), float(spec.window_length)),
        },
        coords={"time": ("cycle", times), "source": ("source", table.names)},
        attrs={
            "float_id": float_id,
            "simulated": 1,
            "comment": "SIMULATED record (rankmodels.tracking.simulate); not real float data",
            "sim_sigma_s": spec.sigma,
            "sim_clutter_rate": spec.clutter_rate,
        },
    )
    if table.drift.any():
        record["source_drift"] = ("source", table.drift)
    return record


def _truth_dataset(
    names: list[str],
    times: np.ndarray,
    lat: np.ndarray,
    lon: np.ndarray,
    label: np.ndarray,
    float_id: str,
) -> xr.Dataset:
    """The truth of the record of ``float_id``: the true positions ``lat``/``lon`` (T,) at the
    cycle ``times`` (T,) and the true ``label`` (T, r) of each recorded arrival (sources
    ``names`` (S,) as the ``source`` coordinate)."""
    return xr.Dataset(
        {
            "lat": ("cycle", lat),
            "lon": ("cycle", lon),
            "true_label": (("cycle", "rank"), label),
        },
        coords={"time": ("cycle", times), "source": ("source", names)},
        attrs={
            "float_id": float_id,
            "simulated": 1,
            "comment": "true track of the SIMULATED record",
        },
    )


def _mismatch_truth(
    mismatch: Mismatch, signals: _Signals, offset: np.ndarray
) -> dict[str, tuple[Any, ...]]:
    """The truth's variables of ``mismatch``: the float clock's ``clock_offset`` (s) and
    ``clock_drift`` (s/day), the true ``sound_speed`` (m/s) and ``source_offset`` (the true
    ``offset`` (S,), s), and the ``multipath_delay`` (T, S) of each arrival (s; NaN while the
    source is inactive)."""
    return {
        "clock_offset": ((), float(mismatch.clock_offset)),
        "clock_drift": ((), float(mismatch.clock_drift)),
        "sound_speed": ((), float(signals.speed)),
        "source_offset": ("source", offset),
        "multipath_delay": (
            ("cycle", "source"),
            np.where(signals.active, signals.delay, np.nan),
        ),
    }


def _mismatch_text(mismatch: Mismatch) -> str:
    """The mismatch in words, for the files' ``sim_mismatch`` attribute."""
    lo, hi = mismatch.multipath_delay
    speed = mismatch.true_sound_speed
    return (
        f"float clock {mismatch.clock_offset:g} s + {mismatch.clock_drift:g} s/day ahead; "
        f"true sound speed {'as written' if speed is None else f'{speed:g} m/s'}; "
        f"written source offsets off by N(0, {mismatch.offset_error:g}^2) s; "
        f"{mismatch.multipath:g} of source arrivals delayed by Uniform({lo:g}, {hi:g}) s"
    )


TRAJECTORIES = ("drift", "straight", "spiral")
FLOAT767_DAYS = 729
#: Where DIMES float 767 was launched and recovered (lat, lon in degrees).
_FLOAT767_LAUNCH = (-56.326, -105.003)
_FLOAT767_RECOVERY = (-60.225, -82.746)
#: What the shipped sample ``data/float767.nc`` carries and its file does not state:
#: a float clock drifting 0.02 s/day (7 s a year), signals at 1470 m/s while the file says
#: 1480, written source offsets off by ``N(0, 1)`` s, 2 % of source arrivals delayed by
#: multipath. ``dimes_float767(mismatch=SAMPLE_MISMATCH)`` is the sample, as is
#: ``rankmodels simulate-float --name float767 --float-clock-drift 0.02 --true-sound-speed 1470
#: --offset-error 1 --multipath 0.02``.
SAMPLE_MISMATCH = Mismatch(
    clock_drift=0.02, true_sound_speed=1470.0, offset_error=1.0, multipath=0.02
)
#: Longest simulated float (days, 10 years). RAFOS floats listen for a few years; further on,
#: float 767's mean drift would carry the float towards the pole (-76 deg after 10 years).
MAX_DAYS = 3653


def simulated_float_id(trajectory: str, seed: int, days: int) -> str:
    """``sim-TRAJECTORY-seedSEED-DAYSd``: the ``float_id`` of a float simulated by
    :func:`dimes_float767`, and the default base name of its files."""
    return f"sim-{trajectory}-seed{seed}-{days}d"


def simulation_steps(days: int, trajectory: str) -> int:
    """Total of the ``progress(n)`` calls :func:`dimes_float767` makes: the passes of the
    drifting track over the ``days`` (none for the other trajectories), then the cycles."""
    passes = 1 + BRIDGE_ITERATIONS if trajectory == "drift" else 0
    return passes * days + days - 1


def _dimes_sources(drift: float) -> list[Source]:
    """The 12 :data:`DIMES_SOURCES` as deployed: US1-x from 2008-12-15, US2-x and UK1-x from
    2009-12-20 on, 3 days apart, all until 2011-03-01; schedule offsets 0/20/40/60 s; clock
    ``drift`` (s/day) each."""
    start_us1 = np.datetime64("2008-12-15", "ns")
    stop = np.datetime64("2011-03-01", "ns")
    second = [np.datetime64("2009-12-20", "ns") + k * 3 * DAY for k in range(6)]
    sources = []
    for i, (name, la, lo) in enumerate(DIMES_SOURCES):
        begin = start_us1 if name.startswith("US1") else second[i - 6]
        sources.append(
            Source(name, la, lo, offset=20.0 * (i % 4), start=begin, end=stop, drift=drift)
        )
    return sources


def _float767_end(days: int) -> tuple[float, float]:
    """Where a float of ``days`` days with float 767's mean velocity is recovered (lat, lon in
    degrees): float 767's recovery after :data:`FLOAT767_DAYS`, otherwise the proportional part
    of its launch-to-recovery displacement."""
    start, end = _FLOAT767_LAUNCH, _FLOAT767_RECOVERY
    if days == FLOAT767_DAYS:
        return end
    east, north = tangent_offsets(*start, *end)
    lat_end, lon_end = tangent_step(
        *start, east * days / FLOAT767_DAYS, north * days / FLOAT767_DAYS
    )
    return float(lat_end), float(lon_end)


def _float767_track(
    trajectory: str,
    track_days: np.ndarray,
    end: tuple[float, float],
    rng: np.random.Generator,
    progress: Progress | None,
    eddies: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, DriftingTrack | None]:
    """The true positions ``lat``/``lon`` (D,) of the ``trajectory`` float launched where
    float 767 was, at ``track_days = 1 .. D`` days after its launch, ending at ``end`` (lat,
    lon) unless a spiral: the drifting track (drawn from ``rng`` with ``eddies`` = (eddy speed
    km/day, time scale days), reporting ``progress``; also returned whole, with its
    velocities), the straight one, or float 767's spiral cut short to
    ``D`` days (these two with None)."""
    days = track_days.size
    start = _FLOAT767_LAUNCH
    if trajectory == "drift":
        eddy_speed, eddy_days = eddies
        drift = drifting_track(
            track_days, start, end, rng, eddy_speed=eddy_speed, eddy_days=eddy_days,
            progress=progress,
        )  # fmt: skip
        return drift.lat, drift.lon, drift
    if trajectory == "straight":
        return (*straight_track(track_days, start, end, float(days)), None)
    frac = days / FLOAT767_DAYS  # the same spiral, cut short for shorter records
    spiral = spiral_track(track_days, start, (20.0, 20.0 + 280.0 * frac), 3.0 * frac, float(days))
    return (*spiral, None)


def _float767_fixes(
    fixes: FixSchedule,
    rng: np.random.Generator,
    track_days: np.ndarray,
    lat: np.ndarray,
    lon: np.ndarray,
    launch_time: np.datetime64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The GPS fixes of ``fixes`` as ``(time, lat, lon, error)``: the F fix times, latitudes and
    longitudes (F,) each and their stated error (km). The fixes fall on the fix days of the
    cycles (days ``1 .. D - 1`` of ``track_days = 1 .. D`` after ``launch_time``) at the true
    positions ``lat``/``lon`` (D,) interpolated linearly (from the launch at day 0), moved by
    east and north errors (2, F) (km) drawn from ``rng``."""
    fix_days = fixes.days(float(track_days.size - 1))
    east, north = rng.normal(0.0, fixes.error, (2, fix_days.size))
    day = np.r_[0.0, track_days]
    fix_lat, fix_lon = tangent_step(
        np.interp(fix_days, day, np.r_[_FLOAT767_LAUNCH[0], lat]),
        np.interp(fix_days, day, np.r_[_FLOAT767_LAUNCH[1], lon]),
        east,
        north,
    )
    step = np.timedelta64(1, "ns")
    fix_time = launch_time + np.round(fix_days * 86_400e9).astype(np.int64) * step
    return fix_time, fix_lat, fix_lon, fixes.error


def dimes_float767(
    seed: int = 767,
    *,
    days: int = FLOAT767_DAYS,
    trajectory: str = "drift",
    spec: SignalSpec | None = None,
    mismatch: Mismatch | None = None,
    progress: Progress | None = None,
    fixes: FixSchedule | None = None,
    recovered: bool = True,
    source_drift: float = 0.0,
    eddies: tuple[float, float] = (4.0, 5.0),
    correlations: bool = False,
) -> tuple[xr.Dataset, xr.Dataset]:
    """A simulated float on the DIMES source array from DIMES float 767's launch (12 sources,
    daily cycles); with the defaults and ``mismatch=SAMPLE_MISMATCH``, the shipped sample
    ``data/float767.nc``.

    Launch (-56.326, -105.003) on 2009-01-23; ``trajectory`` "drift" (the sample: mean
    eastward drift + OU eddies, pinned to the recovery position (-60.225, -82.746) 729 days
    later), "straight" (constant velocity to that recovery position) or "spiral" (3 turns
    about the launch point in 729 days, radius 20 -> 300 km; shorter records follow the same
    spiral for ``days`` days). With ``days`` other than 729 the drift and
    straight floats keep float 767's mean velocity and are recovered where it would have been
    after ``days`` days (a proportional part of the launch-to-recovery displacement).
    US1-x active from 2008-12-15, US2-x and UK1-x deployed a year later (2009-12-20 ..
    2010-01-04), all until 2011-03-01; schedule offsets 0/20/40/60 s; 4 earliest arrivals
    per cycle, sigma = 5 s, ``P_D`` 0.95 falling to 0.75 with range, ``Poisson(1)`` clutter
    per 1800 s window, sound speed 1480 m/s (written to the file's ``sound_speed``).
    ``days`` <= :data:`MAX_DAYS`; ``float_id``: :func:`simulated_float_id`; ``progress(n)``
    is called as work is done (:func:`simulation_steps` in all). Drawn from generators of
    their own (the same seed gives the same float with and without them): ``mismatch``
    (:class:`Mismatch`, seeded ``[seed, 1]``), ``fixes`` (:class:`FixSchedule`: GPS fixes at
    the true positions plus their errors; ``[seed, 2]``), with ``correlations`` each
    arrival's correlation height (:func:`correlation_heights`, ``[seed, 3]``).
    ``recovered=False``: a lost float (no recovery fix); ``source_drift`` (s/day): every
    source's clock drifts this much, as the record states; ``eddies``: a drifting float's
    eddy speed (km/day per axis) and Lagrangian time scale (days), whose truth (and
    velocity, m/s, at the cycles) the truth file holds.
    """
    if trajectory not in TRAJECTORIES:
        raise ValueError(f"trajectory must be one of {TRAJECTORIES}, got {trajectory!r}")
    if not 2 <= days <= MAX_DAYS:
        raise ValueError(f"days must be in [2, {MAX_DAYS}] (10 years), got {days}")
    rng = np.random.default_rng(seed)
    spec = spec or SignalSpec(p_detect=range_dependent_detection())
    launch_time = np.datetime64("2009-01-23T00:00", "ns")
    track_days = np.arange(1, days + 1, dtype=float)  # the cycles, then the recovery
    end = _float767_end(days)
    lat, lon, drift = _float767_track(trajectory, track_days, end, rng, progress, eddies)
    fix = end if trajectory != "spiral" else (float(lat[-1]), float(lon[-1]))
    surfacings = None
    if fixes is not None:
        fix_rng = np.random.default_rng([seed, 2])
        surfacings = _float767_fixes(fixes, fix_rng, track_days, lat, lon, launch_time)
    record, truth = simulate_record(
        _dimes_sources(source_drift),
        launch_time + track_days[:-1].astype(np.int64) * DAY,
        lat[:-1],
        lon[:-1],
        (*_FLOAT767_LAUNCH, launch_time),
        spec,
        rng,
        recovery=(fix[0], fix[1], launch_time + days * DAY) if recovered else None,
        float_id=simulated_float_id(trajectory, seed, days),
        progress=progress,
        mismatch=mismatch,
        mismatch_rng=np.random.default_rng([seed, 1]),
        fixes=surfacings,
        correlation_rng=np.random.default_rng([seed, 3]) if correlations else None,
    )
    record.attrs["title"] = (
        f"Simulated {trajectory} RAFOS float (seed {seed}, {days} days) on the DIMES source "
        "array, launched where DIMES float 767 was"
    )
    record.attrs["sim_seed"] = seed
    record.attrs["sim_trajectory"] = trajectory
    if drift is not None:
        truth = annotate(truth.assign(drift.truth(days - 1)), TRUTH)
    return record, truth
