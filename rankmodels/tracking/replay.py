"""A real RAFOS experiment replayed: simulated floats on its real metadata.

:func:`draw_experiment` draws what the floats of one experiment share and their files do not
state; :func:`replay_float` simulates one float of the metadata
(:mod:`rankmodels.tracking.experiment_metadata`) in it:

* **sources**: the mission's real array (positions, deployment periods, transmission times);
  a float's record names only those moored at some time of its record. Each float listens
  once a day in a window opening at :data:`WINDOW_START` s after midnight UTC and lasting
  ``spec.window_length`` s, so a source's ``source_offset`` is its transmission time minus
  :data:`WINDOW_START` (the table's transmission times, 3,900 .. 6,300 s for DIMES, become
  300 .. 2,700 s). The table's drift (s over the deployment) is stated as ``source_drift``
  = drift / deployment days;
* **shared truth**: the signals travel at ``true_sound_speed`` while every file states
  ``spec.sound_speed``; source ``i``'s true offset is its file offset plus ``e_i ~ N(0,
  offset_error^2)`` and its clock truly drifts ``source_drift`` s/day more than stated, the
  same ``e_i`` and drifts for every float of the experiment (drawn once, for all of the
  mission's sources in table order, from the seed alone: a subset of floats sees the same
  truth);
* **per float**: the real launch and recovery position and dates; daily cycles at the window
  start from the day after the launch to the last one before the recovery; the float clock
  reads ``e(t) = clock_offset_launch + clock_drift * days since launch`` s ahead, with the
  drift that takes it to the table's recovery offset (:attr:`FloatEntry.clock_drift`) or the
  experiment's ``float_clock_drift``; the record states the offsets measured at launch and at
  its end (``clock_offset_launch``, ``clock_offset_recovery``, in whole seconds as the table
  gives them, so within 0.5 s); the
  trajectory is the simulator's drifting float (mean drift + Ornstein-Uhlenbeck eddies,
  :func:`~rankmodels.tracking.simulate.drifting_track`) pinned to the real recovery position
  at the real recovery time (a bridge); detection, noise, clutter and a share ``multipath``
  of delayed arrivals as ``spec`` and :class:`~rankmodels.tracking.simulate.Mismatch` say.
  ``max_days`` cuts a long record: the float then surfaces ``max_days`` days after its
  launch, at its true position there (the record's recovery fix), on the same track.

A float's random draws come from generators seeded by the experiment's seed and the float id
(:func:`float_seed`), so a float is the same in every replay of that seed that holds it.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.experiment_metadata import ExperimentMetadata, FloatEntry, SourceEntry
from rankmodels.tracking.schema import FLOAT_RECORD, TRUTH, annotate
from rankmodels.tracking.simulate import (
    Mismatch,
    SignalSpec,
    Source,
    drifting_track,
    simulate_record,
)

__all__ = [
    "REPLAY_WINDOW",
    "WINDOW_START",
    "Experiment",
    "ReplaySource",
    "draw_experiment",
    "experiment_summary",
    "float_seed",
    "replay_float",
    "replay_name",
]

#: The daily listening window opens at 01:00 UTC (s after midnight), before the first DIMES
#: transmission (3,900 s).
WINDOW_START = 3600.0
#: Length (s) of the replay's listening window: 80 minutes, so that the last DIMES source
#: (2,700 s into the window) is heard out to about 3,000 km.
REPLAY_WINDOW = 4800.0
_DAY_NS = 86_400_000_000_000
_DAY = np.timedelta64(_DAY_NS, "ns")


@dataclass(frozen=True)
class ReplaySource:
    """A source of the experiment: its metadata ``entry``, the ``file_offset`` (s after the
    window start) and ``file_drift`` (s/day since deployment) every record states, and the
    true ``true_offset`` and ``true_drift`` the signals follow."""

    entry: SourceEntry
    file_offset: float
    true_offset: float
    file_drift: float
    true_drift: float

    def simulated(self) -> Source:
        """The simulator's source with the true offset and drift."""
        e = self.entry
        return Source(
            e.name, e.lat, e.lon, self.true_offset, e.deployed, e.recovered, self.true_drift
        )


@dataclass(frozen=True)
class Experiment:
    """What the floats of one replay share: the mission's ``sources`` (table order), the
    signal settings ``spec`` (``spec.sound_speed`` is the speed the files state), the
    ``true_sound_speed``, the std ``offset_error`` (s) of the shared offset errors, the extra
    true ``source_drift`` (s/day), the ``multipath`` share, the ``seed`` and, when not None,
    the ``float_clock_drift`` (s/day) of every float clock instead of its table's."""

    sources: tuple[ReplaySource, ...]
    spec: SignalSpec
    true_sound_speed: float
    offset_error: float
    source_drift: float
    multipath: float
    seed: int
    float_clock_drift: float | None = None

    def float_clock(self, entry: FloatEntry) -> tuple[float, float]:
        """Float ``entry``'s true clock ``(offset at launch (s), drift (s/day))``: the table's
        launch offset and the drift to its recovery offset, or :attr:`float_clock_drift`."""
        drift = entry.clock_drift if self.float_clock_drift is None else self.float_clock_drift
        return entry.clock_offset_launch, drift


def _stated_drift(source: SourceEntry, metadata: ExperimentMetadata) -> float:
    """The table's drift (s over the deployment) in s/day."""
    if source.drift == 0.0:
        return 0.0
    if source.recovered is None:
        raise InputError(
            f"{source.name}: drift {source.drift:g} s over a deployment that has not ended "
            "(still moored): its drift per day is unknown",
            path=metadata.sources_path,
            field="drift",
        )
    return source.drift / float((source.recovered - source.deployed) / _DAY)


def draw_experiment(
    metadata: ExperimentMetadata,
    seed: int,
    *,
    spec: SignalSpec,
    true_sound_speed: float | None = None,
    offset_error: float = 0.0,
    source_drift: float = 0.0,
    multipath: float = 0.0,
    mission: str = "DIMES",
    float_clock_drift: float | None = None,
) -> Experiment:
    """The shared truth of a replay of ``mission`` (module docstring): offset errors
    ``N(0, offset_error^2)`` drawn for the mission's sources in table order from
    ``default_rng([seed, 0])``; ``true_sound_speed`` None is the files' ``spec.sound_speed``.
    The settings are checked as :class:`~rankmodels.tracking.simulate.Mismatch` checks them
    (InputError, ``field`` the setting); a mission without sources is an InputError too."""
    Mismatch(true_sound_speed=true_sound_speed, offset_error=offset_error, multipath=multipath)
    for name, drift in (("source_drift", source_drift), ("float_clock_drift", float_clock_drift)):
        if drift is not None and not (math.isfinite(drift) and abs(drift) <= 1.0):
            raise InputError(f"expected a number in [-1, 1] s/day, got {drift!r}", field=name)
    entries = [s for s in metadata.sources if s.mission == mission]
    if not entries:
        raise InputError(f"no sources of the mission {mission!r}", path=metadata.sources_path)
    errors = np.random.default_rng([seed, 0]).normal(0.0, offset_error, len(entries))
    sources = []
    for entry, error in zip(entries, errors, strict=True):
        offset, drift = entry.transmission - WINDOW_START, _stated_drift(entry, metadata)
        sources.append(
            ReplaySource(entry, offset, offset + float(error), drift, drift + source_drift)
        )
    return Experiment(
        sources=tuple(sources),
        spec=spec,
        true_sound_speed=spec.sound_speed if true_sound_speed is None else true_sound_speed,
        offset_error=offset_error,
        source_drift=source_drift,
        multipath=multipath,
        seed=seed,
        float_clock_drift=float_clock_drift,
    )


def float_seed(seed: int, float_id: str, stream: int) -> list[int]:
    """Seed of a float's generator ``stream`` (1: track and signals, 2: multipath):
    ``[seed, stream, crc32(float_id)]``."""
    return [seed, stream, zlib.crc32(float_id.encode("utf-8"))]


def replay_name(float_id: str) -> str:
    """Base name of a replayed float's files: ``floatID``."""
    return f"float{float_id}"


def _cycle_days(entry: FloatEntry) -> np.ndarray:
    """Days since launch of the daily cycles at the window start before the recovery."""
    start = WINDOW_START / 86_400.0
    return np.arange(1, math.ceil(entry.days - start), dtype=float) + start


def _at(days: float, origin: np.datetime64) -> np.datetime64:
    return origin + np.timedelta64(round(days * _DAY_NS), "ns")


def replay_float(
    experiment: Experiment,
    entry: FloatEntry,
    *,
    max_days: int | None = None,
    correlations: bool = False,
) -> tuple[xr.Dataset, xr.Dataset]:
    """``(record, truth)`` of the float ``entry`` replayed in ``experiment`` (module
    docstring), cut ``max_days`` days after its launch when its record is longer; with
    ``correlations`` the record holds each arrival's correlation height
    (:func:`~rankmodels.tracking.simulate.correlation_heights`, from a generator of their
    own, :func:`float_seed` stream 3; ``simulate-experiment`` draws them).

    The record (``schema.FLOAT_RECORD``) states the file values; the truth
    (``schema.TRUTH``) holds the track, the true labels, the float clock, the true sound
    speed, source offsets and drifts and the multipath delays."""
    launch = np.datetime64(entry.launch_time, "ns")
    cycle_days = _cycle_days(entry)
    cut = max_days is not None and max_days < entry.days
    end_day = float(max_days) if cut else entry.days
    kept = cycle_days[cycle_days < end_day]
    end_time = _at(end_day, launch)
    used = [s for s in experiment.sources if s.entry.active_during(launch, end_time)]
    clock_offset, clock_drift = experiment.float_clock(entry)
    mismatch = Mismatch(
        clock_offset=clock_offset,
        clock_drift=clock_drift,
        true_sound_speed=experiment.true_sound_speed,
        multipath=experiment.multipath,
    )
    rng = np.random.default_rng(float_seed(experiment.seed, entry.float_id, 1))
    drift = drifting_track(
        np.r_[cycle_days, entry.days],
        (entry.launch_lat, entry.launch_lon),
        (entry.recovery_lat, entry.recovery_lon),
        rng,
    )
    if cut:
        nodes = np.r_[0.0, cycle_days, entry.days]
        surfacing = tuple(
            float(np.interp(end_day, nodes, np.r_[first, track]))
            for first, track in ((entry.launch_lat, drift.lat), (entry.launch_lon, drift.lon))
        )
    else:
        surfacing = (entry.recovery_lat, entry.recovery_lon)
    record, truth = simulate_record(
        [s.simulated() for s in used],
        np.array([_at(d, launch) for d in kept], dtype="datetime64[ns]"),
        drift.lat[: kept.size],
        drift.lon[: kept.size],
        (entry.launch_lat, entry.launch_lon, launch),
        experiment.spec,
        rng,
        recovery=(*surfacing, end_time),
        float_id=f"replay-{entry.float_id}-seed{experiment.seed}",
        mismatch=mismatch,
        mismatch_rng=np.random.default_rng(float_seed(experiment.seed, entry.float_id, 2)),
        correlation_rng=(
            np.random.default_rng(float_seed(experiment.seed, entry.float_id, 3))
            if correlations
            else None
        ),
    )
    truth = truth.assign(drift.truth(kept.size))
    return _state_files(record, truth, used, experiment, entry, end_day, cut)


def _state_files(
    record: xr.Dataset,
    truth: xr.Dataset,
    used: Sequence[ReplaySource],
    experiment: Experiment,
    entry: FloatEntry,
    end_day: float,
    cut: bool,
) -> tuple[xr.Dataset, xr.Dataset]:
    """The record stating the file values (and the float clock offsets measured at launch and
    at the record's end, in whole seconds as the table gives them) and the truth the true
    ones, with the replay's attributes."""
    record["source_offset"] = ("source", np.array([s.file_offset for s in used]))
    stated = np.array([s.file_drift for s in used])
    record = record.drop_vars("source_drift", errors="ignore")
    if stated.any():
        record["source_drift"] = ("source", stated)
    truth["source_offset"] = ("source", np.array([s.true_offset for s in used]))
    truth["source_drift"] = ("source", np.array([s.true_drift for s in used]))
    clock_offset, clock_drift = experiment.float_clock(entry)
    record["clock_offset_launch"] = ((), float(clock_offset))
    record["clock_offset_recovery"] = ((), float(round(clock_offset + clock_drift * end_day)))
    clock = (
        f"float clock {clock_offset:g} s ahead at launch, drifting {clock_drift:.6g} s/day "
        f"(measured {float(record['clock_offset_recovery']):g} s at the surfacing)"
    )
    words = (
        f"{clock}; true sound speed {experiment.true_sound_speed:g} m/s (the file states "
        f"{experiment.spec.sound_speed:g}); written source offsets off by the experiment's "
        f"shared N(0, {experiment.offset_error:g}^2) s errors; source clocks drifting "
        f"{experiment.source_drift:g} s/day more than stated; {experiment.multipath:g} of "
        "source arrivals delayed by Uniform(10, 60) s"
    )
    attrs = {
        "title": (
            f"Simulated replay of {experiment.sources[0].entry.mission} float "
            f"{entry.float_id} (seed {experiment.seed}) on the experiment's real metadata"
        ),
        "sim_seed": experiment.seed,
        "sim_real_float_id": entry.float_id,
        "sim_mismatch": words,
    }
    if cut:
        attrs["sim_cut_days"] = end_day
    record.attrs.update(attrs)
    truth.attrs.update(attrs)
    return annotate(record, FLOAT_RECORD), annotate(truth, TRUTH)


def _iso(time: np.datetime64 | None) -> str:
    return "" if time is None else str(np.datetime_as_string(time, unit="s"))


def experiment_summary(
    experiment: Experiment, replays: Sequence[tuple[FloatEntry, xr.Dataset]]
) -> dict[str, object]:
    """The truth of a replay for its summary files: the shared settings, one row per source
    of the mission (file and true offset and drift, how many of the ``replays`` (entry,
    record) name it) and one row per replayed float (file, real launch and recovery, the
    record's end, float clock, sources)."""
    heard = {s.entry.name: 0 for s in experiment.sources}
    for _, record in replays:
        for name in record["source"].values:
            heard[str(name)] += 1
    spec = experiment.spec
    return {
        "mission": experiment.sources[0].entry.mission,
        "seed": experiment.seed,
        "file_sound_speed": spec.sound_speed,
        "true_sound_speed": experiment.true_sound_speed,
        "offset_error": experiment.offset_error,
        "source_drift": experiment.source_drift,
        "multipath": experiment.multipath,
        "sigma": spec.sigma,
        "clutter_rate": spec.clutter_rate,
        "window_start": WINDOW_START,
        "window_length": spec.window_length,
        "sources": [
            {
                "source": s.entry.name,
                "lat": s.entry.lat,
                "lon": s.entry.lon,
                "deployed": _iso(s.entry.deployed),
                "recovered": _iso(s.entry.recovered),
                "file_offset": s.file_offset,
                "true_offset": s.true_offset,
                "offset_error": s.true_offset - s.file_offset,
                "file_drift": s.file_drift,
                "true_drift": s.true_drift,
                "floats": heard[s.entry.name],
            }
            for s in experiment.sources
        ],
        "floats": [
            {
                "float_id": entry.float_id,
                "file": replay_name(entry.float_id) + ".nc",
                "launch_time": _iso(entry.launch_time),
                "launch_lat": entry.launch_lat,
                "launch_lon": entry.launch_lon,
                "recovery_time": _iso(entry.recovery_time),
                "recovery_lat": entry.recovery_lat,
                "recovery_lon": entry.recovery_lon,
                "record_end": _iso(record["recovery_time"].values),
                "cycles": record.sizes["cycle"],
                "clock_offset_launch": (clock := experiment.float_clock(entry))[0],
                "clock_drift": clock[1],
                "clock_offset_recovery_measured": float(record["clock_offset_recovery"]),
                "sources": " ".join(str(n) for n in record["source"].values),
            }
            for entry, record in replays
        ],
    }
