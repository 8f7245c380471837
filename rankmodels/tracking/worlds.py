"""Varied simulated worlds for measuring the tracker, and records broken on purpose.

A :class:`World` is one simulated float on the DIMES geometry
(:func:`~rankmodels.tracking.simulate.dimes_float767`) whose statistics and geometry are drawn
by :func:`draw_world` across the ranges real records span (:data:`RANGES`):

* length ``days`` log-uniform in [10, 730] (short records as often as long ones, per decade);
* TOA noise ``sigma`` uniform in [2, 8] s; clutter rate ``lambda`` log-uniform in [0.3, 3]
  arrivals per window;
* detection probability ``P_D``: a near-range value uniform in [0.6, 0.97]; in half of the
  worlds it falls linearly with range (800 -> 2,500 km) to a far value uniform in
  [0.6, near] (else constant); in half of the worlds each source's probability is further
  multiplied by its own factor uniform in [0.85, 1] (source strength), so a source may be
  heard with probability down to ``0.85 * 0.6 = 0.51``;
* multipath: in a quarter of the worlds none, else a share uniform in [0, 8 %] of source
  arrivals delayed by ``Uniform(10, 60)`` s;
* in half of the worlds the geometric mismatch of the shipped sample's kind
  (:data:`~rankmodels.tracking.simulate.SAMPLE_MISMATCH`): a float clock drifting uniform in
  [-0.03, 0.03] s/day, signals travelling at a true sound speed uniform in [1465, 1495] m/s
  while the file says 1480, written source offsets off by ``N(0, e^2)`` s with ``e`` uniform
  in [0.5, 2];
* the trajectory: ``drift`` (mean drift + correlated eddies, 60 %), ``straight`` or
  ``spiral`` (20 % each); a drifting float's eddy speed uniform in [2, 8] km/day per axis and
  its Lagrangian time scale log-uniform in [1, 15] days.

The worlds depart from the tracker's model where a real ocean does: detection that depends on
range and source (the tracker assumes one ``P_D``), multipath delays uniform (the tracker's
are exponential), eddying or steady motion (an integrated Ornstein-Uhlenbeck velocity like the
tracker's Lagrangian motion, or a straight line or a spiral, which neither of its motions is).

:func:`break_record` breaks a record the way real records go wrong (:data:`BROKEN_KINDS`):
``gap`` (a block of :data:`GAP_CYCLES` cycles without TOAs), ``speed`` (the file's sound
speed 10 % wrong, tracked without calibration), ``shuffled`` (source positions permuted so
that no source keeps its own) and ``launch`` (launch position 100 km off).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import xarray as xr

from rankmodels.tracking.geometry import EARTH_RADIUS_KM, great_circle_km, tangent_offsets
from rankmodels.tracking.records import active_sources, validate_float
from rankmodels.tracking.schema import NO_ARRIVAL
from rankmodels.tracking.simulate import (
    DIMES_SOURCES,
    TRAJECTORIES,
    Mismatch,
    SignalSpec,
    dimes_float767,
    range_dependent_detection,
)

__all__ = [
    "BROKEN_KINDS",
    "FILE_SOUND_SPEED",
    "GAP_CYCLES",
    "GAP_MIN_CYCLES",
    "LAUNCH_ERROR_KM",
    "RANGES",
    "SPEED_ERROR",
    "Broken",
    "Detection",
    "World",
    "break_record",
    "destination",
    "draw_world",
    "simulate_world",
    "true_parameters",
]

#: The sound speed every world's file states (m/s), as the shipped sample's.
FILE_SOUND_SPEED = 1480.0
#: (lo, hi) of each drawn setting (module docstring); geometric ones only when mismatched.
RANGES: dict[str, tuple[float, float]] = {
    "days": (10, 730),
    "sigma": (2.0, 8.0),
    "p_detect": (0.6, 0.97),
    "clutter_rate": (0.3, 3.0),
    "multipath": (0.0, 0.08),
    "source_detect": (0.85, 1.0),
    "clock_drift": (-0.03, 0.03),
    "true_sound_speed": (1465.0, 1495.0),
    "offset_error": (0.5, 2.0),
    "eddy_speed": (2.0, 8.0),
    "time_scale": (1.0, 15.0),
}
#: Shares of the worlds with each trajectory (order of ``TRAJECTORIES``: drift, straight, spiral).
TRAJECTORY_SHARES = (0.6, 0.2, 0.2)
#: Cycles without TOAs in a ``gap`` record, and the fewest cycles a record needs for one.
GAP_CYCLES = 120
GAP_MIN_CYCLES = 180
#: Relative error of the file's sound speed in a ``speed`` record.
SPEED_ERROR = 0.10
#: Distance (km) of a ``launch`` record's launch position from the true one.
LAUNCH_ERROR_KM = 100.0
BROKEN_KINDS = ("gap", "speed", "shuffled", "launch")
#: The truth file's Lagrangian motion of a drifting float, as :func:`true_parameters` gives it.
_MOTION_TRUTH = ("mean_velocity_east", "mean_velocity_north", "eddy_speed", "time_scale")


@dataclass(frozen=True)
class Detection:
    """Detection probability of each source at each distance: ``P_D(d) * factor_i``.

    ``P_D(d)`` is ``near`` up to 800 km falling linearly to ``far`` at 2,500 km
    (:func:`~rankmodels.tracking.simulate.range_dependent_detection`); ``factors (s,)`` the
    per-source strengths. Called with distances ``(..., s)`` (the simulator's ``(T, s)``)."""

    near: float
    far: float
    factors: tuple[float, ...]

    def __call__(self, distance_km: np.ndarray) -> np.ndarray:
        distance_km = np.asarray(distance_km)
        if distance_km.shape[-1] != len(self.factors):
            raise ValueError(
                f"expected distances (..., {len(self.factors)}) to the sources, "
                f"got shape {distance_km.shape}"
            )
        profile = range_dependent_detection(self.near, self.far)(distance_km)
        return profile * np.asarray(self.factors)


@dataclass(frozen=True)
class World:
    """One simulated world: ``seed`` of the simulation, length ``days`` (the float surfaces
    then; ``days - 1`` daily cycles), ``trajectory`` (one of ``TRAJECTORIES``), TOA noise
    ``sigma`` (s), detection ``p_detect`` near and ``p_detect_far`` far (equal: constant with
    range) with per-source ``source_detect`` factors (all 1: sources alike), ``clutter_rate``
    per window, ``multipath`` share, and the geometric mismatch: ``clock_drift`` (s/day),
    ``true_sound_speed`` (m/s; the file says :data:`FILE_SOUND_SPEED`), ``offset_error`` (s,
    std of the written source offsets' error), and a drifting float's ``eddy_speed`` (km/day
    per axis) and ``time_scale`` (days)."""

    seed: int
    days: int
    trajectory: str
    sigma: float
    p_detect: float
    p_detect_far: float
    clutter_rate: float
    multipath: float
    source_detect: tuple[float, ...] = field(default=(1.0,) * len(DIMES_SOURCES))
    clock_drift: float = 0.0
    true_sound_speed: float = FILE_SOUND_SPEED
    offset_error: float = 0.0
    eddy_speed: float = 4.0
    time_scale: float = 5.0

    @property
    def geometric(self) -> bool:
        """Whether the geometry departs from the file (clock, sound speed, offsets)."""
        return bool(
            self.clock_drift or self.true_sound_speed != FILE_SOUND_SPEED or self.offset_error
        )

    def detection(self) -> Detection:
        """The world's :class:`Detection`."""
        return Detection(self.p_detect, self.p_detect_far, self.source_detect)

    def spec(self) -> SignalSpec:
        """The simulator's signal settings."""
        return SignalSpec(
            sigma=self.sigma,
            p_detect=self.detection(),
            clutter_rate=self.clutter_rate,
            sound_speed=FILE_SOUND_SPEED,
        )

    def mismatch(self) -> Mismatch:
        """What the record carries and its file does not state."""
        speed = self.true_sound_speed
        return Mismatch(
            clock_drift=self.clock_drift,
            true_sound_speed=None if speed == FILE_SOUND_SPEED else speed,
            offset_error=self.offset_error,
            multipath=self.multipath,
        )

    def row(self) -> dict[str, object]:
        """The settings as a flat dict (``source_detect`` as its smallest factor)."""
        out = asdict(self)
        out["source_detect"] = min(self.source_detect)
        out["geometric"] = self.geometric
        return out


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def draw_world(rng: np.random.Generator | int, *, days: tuple[int, int] | None = None) -> World:
    """A world drawn across :data:`RANGES` (module docstring) from ``rng`` (a Generator or a
    seed); ``days`` (lo, hi) narrows the length range (e.g. to records long enough for a
    gap). The same generator state gives the same world."""
    rng = np.random.default_rng(rng)
    lo, hi = days or RANGES["days"]
    if not RANGES["days"][0] <= lo <= hi <= RANGES["days"][1]:
        raise ValueError(f"days must lie within {RANGES['days']}, got {(lo, hi)}")
    n_days = min(max(round(_log_uniform(rng, lo, hi)), lo), hi)
    trajectory = str(rng.choice(TRAJECTORIES, p=TRAJECTORY_SHARES))
    sigma = float(rng.uniform(*RANGES["sigma"]))
    near = float(rng.uniform(*RANGES["p_detect"]))
    far = float(rng.uniform(RANGES["p_detect"][0], near)) if rng.random() < 0.5 else near
    factors = rng.uniform(*RANGES["source_detect"], len(DIMES_SOURCES))
    source_detect = tuple(float(f) for f in factors) if rng.random() < 0.5 else None
    clutter_rate = _log_uniform(rng, *RANGES["clutter_rate"])
    multipath = float(rng.uniform(*RANGES["multipath"])) if rng.random() >= 0.25 else 0.0
    geometric = {
        "clock_drift": float(rng.uniform(*RANGES["clock_drift"])),
        "true_sound_speed": float(rng.uniform(*RANGES["true_sound_speed"])),
        "offset_error": float(rng.uniform(*RANGES["offset_error"])),
    }
    seed = int(rng.integers(2**31))
    mismatched = rng.random() < 0.5
    eddy_speed = float(rng.uniform(*RANGES["eddy_speed"]))
    time_scale = _log_uniform(rng, *RANGES["time_scale"])
    return World(
        seed=seed,
        days=int(n_days),
        trajectory=trajectory,
        sigma=sigma,
        p_detect=near,
        p_detect_far=far,
        clutter_rate=clutter_rate,
        multipath=multipath,
        **({"source_detect": source_detect} if source_detect else {}),
        **(geometric if mismatched else {}),
        eddy_speed=eddy_speed,
        time_scale=time_scale,
    )


def simulate_world(world: World) -> tuple[xr.Dataset, xr.Dataset]:
    """``(record, truth)`` of the world: the validated float record (ready for
    :func:`~rankmodels.tracking.pipeline.track_float`) and the truth
    (:func:`~rankmodels.tracking.simulate.dimes_float767`'s)."""
    record, truth = dimes_float767(
        world.seed,
        days=world.days,
        trajectory=world.trajectory,
        spec=world.spec(),
        mismatch=world.mismatch(),
        eddies=(world.eddy_speed, world.time_scale),
    )
    return validate_float(record), truth


def true_parameters(world: World, record: xr.Dataset, truth: xr.Dataset) -> dict[str, float]:
    """The world's values of what the tracker can estimate, in its terms: ``sound_speed``,
    ``clock_drift``, ``sigma``, ``clutter_rate``, ``multipath`` (share); ``p_detect`` the mean
    detection probability over the (cycle, active source) pairs at the true positions;
    ``process_noise`` the RMS per axis of the true daily steps (km; the launch to the first
    cycle included), what a random walk's ``q`` would have to be to make them; and for a
    drifting float the Lagrangian motion's ``eddy_speed`` (km/day), ``time_scale`` (days) and
    ``diffusivity`` (km^2/day) as drawn, its ``mean_velocity_east``/``_north`` (km/day) as the
    bridge to the recovery solved them."""
    dist = great_circle_km(
        truth["lat"].values[:, None],
        truth["lon"].values[:, None],
        record["source_lat"].values[None, :],
        record["source_lon"].values[None, :],
    )
    p_d = world.detection()(dist)[active_sources(record)]
    lat = np.concatenate([[float(record["launch_lat"])], truth["lat"].values])
    lon = np.concatenate([[float(record["launch_lon"])], truth["lon"].values])
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    out = {
        "sound_speed": world.true_sound_speed,
        "clock_drift": world.clock_drift,
        "sigma": world.sigma,
        "p_detect": float(np.mean(p_d)) if p_d.size else math.nan,
        "clutter_rate": world.clutter_rate,
        "multipath": world.multipath,
        "process_noise": float(np.sqrt(np.mean(np.concatenate([east, north]) ** 2))),
    }
    if "time_scale" in truth:
        out.update({name: float(truth[name]) for name in _MOTION_TRUTH})
        out["diffusivity"] = out["eddy_speed"] ** 2 * out["time_scale"]
    return out


def destination(lat: float, lon: float, bearing_deg: float, km: float) -> tuple[float, float]:
    """The point ``km`` along the great circle from ``(lat, lon)`` at initial ``bearing_deg``
    (clockwise from north), on the sphere of radius ``EARTH_RADIUS_KM``."""
    phi, lmb = math.radians(lat), math.radians(lon)
    theta, delta = math.radians(bearing_deg), km / EARTH_RADIUS_KM
    phi2 = math.asin(
        math.sin(phi) * math.cos(delta) + math.cos(phi) * math.sin(delta) * math.cos(theta)
    )
    lmb2 = lmb + math.atan2(
        math.sin(theta) * math.sin(delta) * math.cos(phi),
        math.cos(delta) - math.sin(phi) * math.sin(phi2),
    )
    return math.degrees(phi2), (math.degrees(lmb2) + 180.0) % 360.0 - 180.0


@dataclass(frozen=True)
class Broken:
    """A broken record, the :class:`~rankmodels.tracking.config.TrackConfig` fields its run
    needs (e.g. ``{"calibrate": False}``), and what was changed, in words."""

    record: xr.Dataset
    config: dict[str, object]
    note: str


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly drawn permutation of ``n >= 2`` items without fixed points (rejection:
    about ``e`` draws on average)."""
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return perm


def break_record(record: xr.Dataset, kind: str, rng: np.random.Generator) -> Broken:
    """``record`` broken as ``kind`` (one of :data:`BROKEN_KINDS`; a copy, ``record`` is left
    alone):

    * ``gap``: the TOAs (and hand labels) of :data:`GAP_CYCLES` consecutive cycles, starting
      at a cycle uniform among those where the block fits, removed; needs at least
      :data:`GAP_MIN_CYCLES` cycles (ValueError otherwise);
    * ``speed``: the file's ``sound_speed`` times ``1 +- SPEED_ERROR`` (sign drawn); run with
      ``calibrate=False``;
    * ``shuffled``: the sources' positions permuted so that no source keeps its own (names,
      offsets and schedules stay);
    * ``launch``: the launch position moved :data:`LAUNCH_ERROR_KM` along a great circle in a
      uniformly drawn direction.
    """
    out = record.copy(deep=True)
    config: dict[str, object] = {}
    if kind == "gap":
        n = out.sizes["cycle"]
        if n < GAP_MIN_CYCLES:
            raise ValueError(f"a gap needs at least {GAP_MIN_CYCLES} cycles, the record has {n}")
        start = int(rng.integers(n - GAP_CYCLES + 1))
        block = slice(start, start + GAP_CYCLES)
        out["toa"].values[block] = np.nan
        if "source_label" in out:
            out["source_label"].values[block] = NO_ARRIVAL
        note = f"no TOAs in cycles {start} .. {start + GAP_CYCLES - 1}"
    elif kind == "speed":
        factor = 1.0 + SPEED_ERROR * (1.0 if rng.random() < 0.5 else -1.0)
        true = float(out["sound_speed"])
        out["sound_speed"] = out["sound_speed"] * factor
        config["calibrate"] = False
        note = f"sound speed {true * factor:.1f} m/s in the file instead of {true:.1f}"
    elif kind == "shuffled":
        perm = _derangement(out.sizes["source"], rng)
        for name in ("source_lat", "source_lon"):
            out[name] = ("source", out[name].values[perm], out[name].attrs)
        note = f"source positions permuted {perm.tolist()}"
    elif kind == "launch":
        bearing = float(rng.uniform(0.0, 360.0))
        lat, lon = destination(
            float(out["launch_lat"]), float(out["launch_lon"]), bearing, LAUNCH_ERROR_KM
        )
        out["launch_lat"] = ((), lat, out["launch_lat"].attrs)
        out["launch_lon"] = ((), lon, out["launch_lon"].attrs)
        note = f"launch position {LAUNCH_ERROR_KM:g} km off, bearing {bearing:.0f} deg"
    else:
        raise ValueError(f"kind must be one of {BROKEN_KINDS}, got {kind!r}")
    return Broken(validate_float(out), config, note)
