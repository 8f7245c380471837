"""Tracking MSE versus clutter: [Pareek2017] section 5.5.1, Figures 5.6-5.8.

The paper's simulation: a target moving in a straight line (Fig. 5.6, 5.8) or a spiral
(Fig. 5.7) among 10 fixed beacons in the plane records, each step, the first ``r = 4`` arrival
times; each beacon's signal is detected with ``P_D = 0.7`` and arrives with Gaussian noise
``sigma = 0.02`` (planar units); ``Poisson(lambda)`` clutter arrivals fall uniformly on a
predefined interval, ``P_C = lambda / (1 + lambda)``. Figure 5.8 plots the mean squared error of
the track against ``lambda`` for the ranked-signal model and the baseline of eq. 5.72, which
ignores the arrival order.

Units. The project's simulator and tracker work on the sphere, so the planar experiment is put
on a small patch at the equator (:class:`PlanarPatch`): one planar unit is ``UNIT_KM = 150`` km
and the unit square is centred on (0 N, 0 E), so every beacon-target distance is under 215 km,
where great-circle and planar distances differ by well under 0.1 km (the TOA noise is 3 km).
With sound speed 1.5 km/s a unit of distance is ``SECONDS_PER_UNIT = 100`` s of travel time, so
the paper's ``sigma = 0.02`` is 2 s; the clutter interval is ``[0, 1.5]`` units = 150 s, just
longer than the square's diagonal. Beacons: the first 10 points (after the origin) of the
(2, 3) Halton sequence in the unit square -- fixed, well spread, reproducible.

Trajectories (``TRAJECTORIES``), in units: ``straight`` from (0.15, 0.2) to (0.85, 0.8) over
the run (about 2.8 km a cycle for 50 cycles); ``spiral`` about (0.5, 0.5), radius 0.05 -> 0.3,
1.5 turns anticlockwise; the path is the same whatever the number of cycles ``T`` (one a day),
so the tracker's random walk has ``process_noise = 6 km x 50 / T`` per cycle and axis (6 km
for the default 50 cycles: about twice the straight path's step). The tracker knows the true
``sigma``, ``P_D`` and ``lambda``, and starts at the known launch point (Algorithm 2). The MSE
is that of the *filtered* posterior mean (Algorithm 2 has no smoother), averaged over the cycles:

    MSE = (1/T) sum_t ||x_hat_t - x_t||^2     (planar units^2; x 150^2 for km^2).

:func:`tracking_clutter_task` is one replicate (simulate, track, score) and
:func:`tracking_clutter_study` the grid ``lambda x engine`` (x trajectory) with paired seeds, so
every engine is scored on the same simulated records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from scipy.stats import qmc

from rankmodels.studies.study import Study, integer_seed
from rankmodels.tracking.engines import ENGINES
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.geometry import tangent_offsets, tangent_step
from rankmodels.tracking.pipeline import TrackConfig, track_float
from rankmodels.tracking.simulate import (
    SignalSpec,
    Source,
    simulate_record,
    spiral_track,
    straight_track,
)

__all__ = [
    "DEFAULT_ENGINES",
    "DEFAULT_LAMBDAS",
    "P_DETECT",
    "RANKS",
    "SECONDS_PER_UNIT",
    "SIGMA_UNITS",
    "TRAJECTORIES",
    "UNIT_KM",
    "PlanarPatch",
    "beacons",
    "process_noise_km",
    "example_tracks",
    "filtered_units",
    "simulate_planar",
    "track_planar",
    "tracking_clutter_study",
    "tracking_clutter_task",
    "true_path",
]

UNIT_KM = 150.0
SOUND_SPEED = 1500.0  # m/s
SECONDS_PER_UNIT = UNIT_KM * 1000.0 / SOUND_SPEED
SIGMA_UNITS = 0.02
WINDOW_UNITS = 1.5
P_DETECT = 0.7
RANKS = 4
N_BEACONS = 10
PROCESS_NOISE_KM = 6.0  # per cycle and axis, for REFERENCE_CYCLES cycles along the path
REFERENCE_CYCLES = 50
#: Fewest cycles of a study track: the path is the same whatever the cycle count, so one cycle
#: would ask for a 300 km/day random walk, beyond TrackConfig's plausible 200 km/day.
MIN_CYCLES = 2
TRAJECTORIES = ("straight", "spiral")
DEFAULT_LAMBDAS = (0.0, 0.5, 1.0, 2.0, 4.0)
DEFAULT_ENGINES = ("exact", "bp", "baseline")
STUDY_ENGINES = tuple(e for e in ENGINES if e not in ("minfactor", "labels"))

_DAY = np.timedelta64(86_400_000_000_000, "ns")
_EPOCH = np.datetime64("2000-01-01T00:00", "ns")


@dataclass(frozen=True)
class PlanarPatch:
    """Planar units <-> (lat, lon): point ``(x, y)`` is ``((x - 0.5) u, (y - 0.5) u)`` km east
    and north of (``lat0``, ``lon0``) in that point's tangent plane, ``u = unit_km``."""

    unit_km: float = UNIT_KM
    lat0: float = 0.0
    lon0: float = 0.0

    def to_latlon(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 2)`` planar points -> ``(lat, lon)`` degrees, each ``(n,)``."""
        xy = np.atleast_2d(np.asarray(xy, dtype=float))
        origin = np.full(xy.shape[0], self.lat0), np.full(xy.shape[0], self.lon0)
        return tangent_step(
            *origin, (xy[:, 0] - 0.5) * self.unit_km, (xy[:, 1] - 0.5) * self.unit_km
        )

    def to_units(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_latlon`: ``(n, 2)`` planar points."""
        east, north = tangent_offsets(self.lat0, self.lon0, lat, lon)
        return np.column_stack([east / self.unit_km + 0.5, north / self.unit_km + 0.5])


def beacons() -> np.ndarray:
    """``(10, 2)`` beacon positions in units: Halton points 1..10 in bases (2, 3)."""
    return qmc.Halton(d=2, scramble=False).random(N_BEACONS + 1)[1:]


def true_path(trajectory: str, cycles: int) -> np.ndarray:
    """``(cycles + 1, 2)`` true positions (units) at the start (row 0) and after each cycle."""
    if trajectory not in TRAJECTORIES:
        raise ValueError(f"trajectory must be one of {TRAJECTORIES}, got {trajectory!r}")
    if cycles < 1:
        raise ValueError(f"cycles must be >= 1, got {cycles}")
    patch = PlanarPatch()
    days = np.arange(cycles + 1, dtype=float)
    if trajectory == "straight":
        (la0, la1), (lo0, lo1) = patch.to_latlon(np.array([[0.15, 0.2], [0.85, 0.8]]))
        lat, lon = straight_track(days, (la0, lo0), (la1, lo1), float(cycles))
    else:
        (la,), (lo,) = patch.to_latlon(np.array([[0.5, 0.5]]))
        radius = (0.05 * patch.unit_km, 0.3 * patch.unit_km)
        lat, lon = spiral_track(days, (la, lo), radius, 1.5, float(cycles))
    return patch.to_units(lat, lon)


def simulate_planar(
    trajectory: str, cycles: int, clutter_rate: float, rng: np.random.Generator
) -> tuple[xr.Dataset, xr.Dataset]:
    """A float record (and its truth) of the section 5.5.1 simulation on the planar patch:
    ``cycles`` daily cycles along ``trajectory``, ``Poisson(clutter_rate)`` clutter."""
    patch = PlanarPatch()
    b_lat, b_lon = patch.to_latlon(beacons())
    sources = [
        Source(f"B{i}", float(a), float(o))
        for i, (a, o) in enumerate(zip(b_lat, b_lon, strict=True))
    ]
    lat, lon = patch.to_latlon(true_path(trajectory, cycles))
    spec = SignalSpec(
        sigma=SIGMA_UNITS * SECONDS_PER_UNIT,
        p_detect=P_DETECT,
        clutter_rate=clutter_rate,
        window_length=WINDOW_UNITS * SECONDS_PER_UNIT,
        sound_speed=SOUND_SPEED,
        ranks=RANKS,
    )
    times = _EPOCH + np.arange(1, cycles + 1) * _DAY
    return simulate_record(
        sources, times, lat[1:], lon[1:], (lat[0], lon[0], _EPOCH), spec, rng, float_id=trajectory
    )


def process_noise_km(cycles: int) -> float:
    """Random-walk std per cycle and axis (km) for a path covered in ``cycles`` cycles."""
    return PROCESS_NOISE_KM * REFERENCE_CYCLES / cycles


def track_planar(
    record: xr.Dataset, engine: str, clutter_rate: float, particles: int, seed: int
) -> xr.Dataset:
    """Filter ``record`` (Algorithm 2, no smoother) with the true signal-model parameters and
    the random walk of :func:`process_noise_km`."""
    config = TrackConfig(
        engine=engine,
        particles=particles,
        seed=seed,
        sigma=SIGMA_UNITS * SECONDS_PER_UNIT,
        p_detect=P_DETECT,
        clutter_rate=clutter_rate,
        process_noise=process_noise_km(record.sizes["cycle"]),
        smooth=False,
        ensemble=min(particles, 100),
    )
    track, _ = track_float(record, config)
    return track


def filtered_units(track: xr.Dataset) -> np.ndarray:
    """``(T, 2)`` filtered posterior means of a track on the patch, in planar units."""
    return PlanarPatch().to_units(track["lat_filtered"].values, track["lon_filtered"].values)


def example_tracks(
    trajectory: str,
    *,
    clutter_rate: float = 4.0,
    engines: Sequence[str] = DEFAULT_ENGINES,
    cycles: int = 50,
    particles: int = 2000,
    seed: int = 0,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Figures 5.6a / 5.7a: one simulated record (``SeedSequence(seed)`` as replicate 0 of the
    study), tracked by each engine. Returns the true path ``(cycles + 1, 2)`` (start first)
    and ``{engine: (cycles, 2)}`` filtered means, in planar units."""
    sim_seed, filter_seed = np.random.SeedSequence(seed, spawn_key=(0,)).spawn(2)
    record, _ = simulate_planar(trajectory, cycles, clutter_rate, np.random.default_rng(sim_seed))
    tracks = {
        engine: filtered_units(
            track_planar(record, engine, clutter_rate, particles, integer_seed(filter_seed))
        )
        for engine in engines
    }
    return true_path(trajectory, cycles), tracks


def tracking_clutter_task(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, float]:
    """One replicate: simulate (``params``: ``trajectory``, ``cycles``, ``clutter_rate``) and
    filter (``engine``, ``particles``). The record depends on the seed and the simulation
    parameters only, so engines compared at the same seed see the same record.

    Returns ``mse`` (units^2), ``rmse_km``, ``final_error_km``, ``median_error_km`` and the
    association accuracies of :func:`rankmodels.tracking.evaluate.score_track`
    (``arrivals_right``, ``clutter_called_clutter``).
    """
    sim_seed, filter_seed = seed.spawn(2)
    record, truth = simulate_planar(
        params["trajectory"],
        int(params["cycles"]),
        float(params["clutter_rate"]),
        np.random.default_rng(sim_seed),
    )
    track = track_planar(
        record,
        params["engine"],
        float(params["clutter_rate"]),
        int(params["particles"]),
        integer_seed(filter_seed),
    )
    patch = PlanarPatch()
    estimate = filtered_units(track)
    actual = patch.to_units(truth["lat"].values, truth["lon"].values)
    sq = np.sum((estimate - actual) ** 2, axis=1)
    scores = score_track(track, truth)
    return {
        "mse": float(sq.mean()),
        "rmse_km": float(np.sqrt(sq.mean()) * patch.unit_km),
        "median_error_km": float(np.median(np.sqrt(sq)) * patch.unit_km),
        "final_error_km": float(np.sqrt(sq[-1]) * patch.unit_km),
        "arrivals_right": scores["arrivals_right"],
        "clutter_called_clutter": scores["clutter_called_clutter"],
    }


def tracking_clutter_study(
    *,
    lambdas: Sequence[float] = DEFAULT_LAMBDAS,
    engines: Sequence[str] = DEFAULT_ENGINES,
    trajectories: Sequence[str] = ("straight",),
    replicates: int = 20,
    cycles: int = 50,
    particles: int = 2000,
    seed: int = 0,
) -> Study:
    """Figure 5.8 (and its spiral twin): grid ``trajectory x clutter_rate x engine``,
    ``replicates`` paired seeds. Raises ValueError for an unknown engine or trajectory, a
    negative ``lambda`` or non-positive sizes."""
    bad = [e for e in engines if e not in STUDY_ENGINES]
    if bad:
        raise ValueError(f"unknown engines {bad}; expected some of {', '.join(STUDY_ENGINES)}")
    bad = [t for t in trajectories if t not in TRAJECTORIES]
    if bad:
        raise ValueError(f"unknown trajectories {bad}; expected some of {', '.join(TRAJECTORIES)}")
    if any(not (np.isfinite(lam) and lam >= 0) for lam in lambdas):
        raise ValueError(f"clutter rates must be finite and >= 0, got {list(lambdas)}")
    if cycles < MIN_CYCLES or particles < 1:
        raise ValueError(
            f"cycles must be >= {MIN_CYCLES} (fewer make the walk scaled to the path faster than "
            f"any float) and particles >= 1, got {cycles}, {particles}"
        )
    return Study(
        name="tracking_clutter",
        task=tracking_clutter_task,
        grid={
            "trajectory": list(trajectories),
            "clutter_rate": [float(x) for x in lambdas],
            "engine": list(engines),
        },
        replicates=replicates,
        seed=seed,
        fixed={
            "cycles": cycles,
            "particles": particles,
            "unit_km": UNIT_KM,
            "sigma_units": SIGMA_UNITS,
            "p_detect": P_DETECT,
            "ranks": RANKS,
            "process_noise_km": process_noise_km(cycles),
        },
    )
