"""Settings of the tracker (:class:`TrackConfig`) and the accepted range of each.

Every physical parameter has a plausible range (:data:`LIMITS`); values outside it, NaN or
infinite are refused with an :class:`~rankmodels.errors.InputError` whose ``field`` is the
parameter's name (the command line maps it to its option). The ranges:

* ``sigma`` (TOA noise std) 0 < sigma <= 600 s: a third of a default 1800 s listening window;
  beyond that an arrival carries no position information;
* ``p_detect`` 0 < P_D <= 1; ``clutter_rate`` 0 <= lambda <= 100 arrivals per window (a float
  records a handful of arrivals per cycle);
* ``multipath`` 0 <= P_M <= 0.5: the share of source arrivals delayed by multipath (mean
  delay ``SignalModel.multipath_delay``); with more than half delayed the "direct" arrival is
  not the typical one and the sound speed or offsets are wrong instead;
* ``process_noise`` 0.01 <= q <= 200 km per day and axis (10 m a day is still; a smaller
  variance underflows the random walk's density): ocean currents move floats at most a few
  tens of km per day (2 m/s is 173 km/day);
* the Lagrangian motion (``motion = "lagrangian"``): ``eddy_speed`` 0.01 <= s <= 200 km/day
  (the process noise's range), ``time_scale`` 0.05 <= tau <= 365 days (from faster than the
  daily cycles, where the motion is a random walk, to a year), ``position_noise`` 0 <= q_0 <=
  200 km/day;
* ``sound_speed`` 1400 <= v_s <= 1600 m/s: the speed of sound in sea water at any depth,
  temperature and salinity a float meets;
* ``min_correlation`` 0 <= C <= 1,000,000 (or None: no cut): correlation heights are
  positive numbers on the decoder's scale (whole numbers up to a few hundred in the
  decoders' files);
* ``particles`` and ``ensemble`` 1 .. :data:`MAX_PARTICLES`; with smoothing the particle
  history must also fit in memory (:func:`check_memory`);
* ``recovery_sigma`` 0 < s_r <= 1000 km; ``ess_threshold`` 0 .. 1;
* calibration: ``calibrate_params`` a non-empty subset of
  :data:`~rankmodels.tracking.calibration.CALIBRATION_PARAMS`, ``calibration_particles``
  1 .. :data:`MAX_PARTICLES` (or None: :data:`FLOAT_EM_PARTICLES` for one float,
  :data:`EXPERIMENT_EM_PARTICLES` for an experiment), ``calibration_iterations``
  1 .. :data:`MAX_CALIBRATION_ITERATIONS`.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass

from rankmodels.errors import InputError
from rankmodels.tracking.calibration import CALIBRATION_PARAMS, parse_calibrate_params
from rankmodels.tracking.engines import ENGINE_REGISTRY, ENGINES

__all__ = [
    "COMMAND_MOTION",
    "COMMAND_MULTIPATH",
    "COMMAND_PARTICLES",
    "EXPERIMENT_EM_PARTICLES",
    "FLOAT_EM_PARTICLES",
    "HISTORY_BYTES_PER_PARTICLE",
    "LIMITS",
    "MAX_CALIBRATION_ITERATIONS",
    "MAX_PARTICLES",
    "MOTIONS",
    "VELOCITY_BYTES_PER_PARTICLE",
    "Limit",
    "TrackConfig",
    "check_memory",
    "memory_budget_bytes",
]

#: Largest particle (and ensemble) count: the per-cycle work arrays (predicted TOAs of 12
#: sources, distances, weights, ~200 bytes a particle) stay near 2 GB.
MAX_PARTICLES = 10_000_000
#: Bytes the smoother keeps per particle and step: position (16), log weight (8), parent (4);
#: the Lagrangian motion's velocity adds :data:`VELOCITY_BYTES_PER_PARTICLE`.
HISTORY_BYTES_PER_PARTICLE = 28
VELOCITY_BYTES_PER_PARTICLE = 16
#: The motion models (:mod:`~rankmodels.tracking.dynamics`): a random walk of the position,
#: or the Lagrangian motion (a position and an Ornstein-Uhlenbeck velocity).
MOTIONS = ("random-walk", "lagrangian")
#: Most EM iterations of the calibration (each a filter and smoother run).
MAX_CALIBRATION_ITERATIONS = 50
#: Particles of the calibration's EM passes unless ``calibration_particles`` says otherwise:
#: one float's calibration, and an experiment's (:mod:`~rankmodels.tracking.experiment`),
#: whose shared estimates are precise enough for the passes' Monte Carlo error to matter (on
#: replayed DIMES experiments of 20 floats cut at 300 days, 2,000 instead of 1,000 took the
#: sound speed from 1.1-5.2 m/s off the truth (8 of 12 runs within 2 standard errors) to
#: 0.3-3.6 m/s (every run within 2 standard errors)).
FLOAT_EM_PARTICLES = 1_000
EXPERIMENT_EM_PARTICLES = 2_000
#: ``track-float``'s ``--multipath`` default (``TrackConfig()`` keeps the paper's ``P_M = 0``):
#: real records have a few per cent of arrivals delayed by tens of seconds (the shipped sample
#: 2 %). On 404-day simulated floats with 5 % multipath (and every other mismatch) the model
#: raises the arrivals associated right by 1-4 points; on floats without multipath it moves
#: the median error by under 0.25 km either way; it costs about 1.1x the run time.
COMMAND_MULTIPATH = 0.02
#: ``track-float``'s ``--motion`` default (``TrackConfig()`` keeps the paper's random walk):
#: floats drift with persistent velocities. On 20 simulated drifting floats of 208-715 days
#: the Lagrangian motion's median error is 1.04x an oracle smoother's (the random walk's
#: 1.24x), and it gives each cycle a velocity with its standard error.
COMMAND_MOTION = "lagrangian"
#: ``track-float``'s ``--particles`` default (``TrackConfig()`` keeps 10,000): with the
#: Lagrangian motion 5,000 particles track simulated drifting floats as well as 10,000 (mean
#: median error 3.43 against 3.41 km on four floats of 343-651 days) at 0.86x the CPU.
COMMAND_PARTICLES = 5_000


def _number(value: float) -> str:
    """``600``, ``0.5``, ``10,000,000``: whole numbers with thousands separators."""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


@dataclass(frozen=True)
class Limit:
    """Accepted range ``lo (<)<= value (<)<= hi`` of one setting, with its unit."""

    lo: float
    hi: float
    unit: str = ""
    lo_open: bool = False

    def text(self, name: str) -> str:
        """The range as text, e.g. ``0 < sigma <= 600 s``."""
        unit = f" {self.unit}" if self.unit else ""
        lo, hi = _number(self.lo), _number(self.hi)
        return f"{lo} {'<' if self.lo_open else '<='} {name} <= {hi}{unit}"

    def contains(self, value: float) -> bool:
        """Whether the finite ``value`` lies in the range."""
        above = value > self.lo if self.lo_open else value >= self.lo
        return above and value <= self.hi


LIMITS: dict[str, Limit] = {
    "particles": Limit(1, MAX_PARTICLES),
    "ensemble": Limit(1, MAX_PARTICLES),
    "sigma": Limit(0.0, 600.0, "s", lo_open=True),
    "p_detect": Limit(0.0, 1.0, lo_open=True),
    "clutter_rate": Limit(0.0, 100.0, "per window"),
    "multipath": Limit(0.0, 0.5),
    "process_noise": Limit(0.01, 200.0, "km/day"),
    "eddy_speed": Limit(0.01, 200.0, "km/day"),
    "time_scale": Limit(0.05, 365.0, "days"),
    "position_noise": Limit(0.0, 200.0, "km/day"),
    "sound_speed": Limit(1400.0, 1600.0, "m/s"),
    "min_correlation": Limit(0.0, 1e6),
    "recovery_sigma": Limit(0.0, 1000.0, "km", lo_open=True),
    "ess_threshold": Limit(0.0, 1.0),
}
"""Accepted range of each numeric setting of :class:`TrackConfig` (module docstring)."""

_COUNTS = ("particles", "ensemble")
#: Settings whose None means "not set" (the record's sound speed, no correlation cut).
_OPTIONAL = ("sound_speed", "min_correlation")


def _check(name: str, value: object) -> None:
    """Raise :class:`InputError` (field ``name``) unless ``value`` is a finite number (a whole
    number for counts) inside ``LIMITS[name]``."""
    limit = LIMITS[name]
    whole = name in _COUNTS
    kind = numbers.Integral if whole else numbers.Real
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = "a whole number" if whole else "a number"
        raise InputError(f"expected {expected} with {limit.text(name)}, got {value!r}", field=name)
    if not (math.isfinite(value) and limit.contains(value)):
        raise InputError(f"expected {limit.text(name)}, got {value!r}", field=name)


@dataclass(frozen=True)
class TrackConfig:
    """Tracker settings. Defaults are the paper's (sigma = 5 s, P_D = 0.9, P_C = 0.5).

    ``process_noise``: random-walk std per axis of a one-day step (km); ``motion``: the motion
    model (:data:`MOTIONS`), with the Lagrangian motion's starting ``eddy_speed`` (km/day per
    axis), ``time_scale`` (days) and ``position_noise`` (km/day per axis); its mean velocity
    starts at the launch-to-recovery drift (0 without a recovery fix); ``smooth``: FFBSi with the
    recovery fix; ``multipath``: ``P_M`` of the signal model; ``ensemble``: size ``M`` of the
    smoothed-trajectory / association ensemble; ``recovery_sigma``: std (km) of the recovery fix;
    ``sound_speed``: m/s, ``None`` = the record's ``sound_speed``; ``ess_threshold``: resample when
    ESS < threshold * N; ``min_correlation``: drop the arrivals whose correlation height is
    below it before tracking (:func:`~rankmodels.tracking.correlation.apply_min_correlation`;
    None: keep every arrival).

    ``calibrate``: estimate the clock, sound speed and source offsets with the track
    (:func:`rankmodels.tracking.float_calibration.calibrate`; off here, so that
    ``TrackConfig()`` is the paper's model; ``track-float`` turns it on),
    ``calibrate_params`` which of them,
    ``calibration_particles`` the filter's particles during the EM iterations (the final pass
    uses ``particles``; None: :meth:`em_particles`' defaults), ``calibration_iterations``
    the most M-steps.

    Raises :class:`~rankmodels.errors.InputError` (a ``ValueError``; ``field`` = the setting)
    for a value outside :data:`LIMITS`, NaN or infinite, an unknown engine, a negative seed,
    or settings the engine cannot use (its ``EngineSpec.constraints``, e.g. ``minfactor``
    without ``p_detect = 1`` and ``clutter_rate = 0``).
    """

    engine: str = "exact"
    particles: int = 10_000
    seed: int = 0
    sigma: float = 5.0
    p_detect: float = 0.9
    clutter_rate: float = 1.0
    multipath: float = 0.0
    process_noise: float = 8.0
    motion: str = "random-walk"
    eddy_speed: float = 4.0
    time_scale: float = 3.0
    position_noise: float = 0.5
    smooth: bool = True
    ensemble: int = 500
    recovery_sigma: float = 1.0
    sound_speed: float | None = None
    ess_threshold: float = 0.5
    min_correlation: float | None = None
    calibrate: bool = False
    calibrate_params: frozenset[str] = frozenset(CALIBRATION_PARAMS)
    calibration_particles: int | None = None
    calibration_iterations: int = 5

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InputError(
                f"unknown engine {self.engine!r}; expected one of {', '.join(ENGINES)}",
                field="engine",
            )
        if self.motion not in MOTIONS:
            raise InputError(
                f"unknown motion {self.motion!r}; expected one of {', '.join(MOTIONS)}",
                field="motion",
            )
        if not isinstance(self.seed, numbers.Integral) or self.seed < 0:
            raise InputError(f"expected a whole number >= 0, got {self.seed!r}", field="seed")
        for name in LIMITS:
            value = getattr(self, name)
            if not (name in _OPTIONAL and value is None):
                _check(name, value)
        try:
            object.__setattr__(
                self, "calibrate_params", parse_calibrate_params(self.calibrate_params)
            )
        except ValueError as err:
            raise InputError(str(err), field="calibrate_params") from None
        for name, hi in (
            ("calibration_particles", MAX_PARTICLES),
            ("calibration_iterations", MAX_CALIBRATION_ITERATIONS),
        ):
            value = getattr(self, name)
            if name == "calibration_particles" and value is None:  # the mode's default
                continue
            if (
                not isinstance(value, numbers.Integral)
                or isinstance(value, bool)
                or not 1 <= value <= hi
            ):
                raise InputError(
                    f"expected a whole number in [1, {hi:,}], got {value!r}", field=name
                )
        problem = ENGINE_REGISTRY[self.engine].model_problem(self)
        if problem is not None:
            raise InputError(problem, field="engine")

    def em_particles(self, experiment: bool = False) -> int:
        """Particles of the calibration's EM passes: ``calibration_particles``, or when that is
        None :data:`FLOAT_EM_PARTICLES` (one float) or :data:`EXPERIMENT_EM_PARTICLES`
        (``experiment``: floats calibrated together); at most ``particles``."""
        default = EXPERIMENT_EM_PARTICLES if experiment else FLOAT_EM_PARTICLES
        chosen = default if self.calibration_particles is None else self.calibration_particles
        return min(chosen, self.particles)


def memory_budget_bytes() -> int:
    """Memory the particle history may take: half of this machine's physical memory."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): assume 8 GB
        total = 8 * 1024**3
    return total // 2


def check_memory(n_steps: int, config: TrackConfig, budget: int | None = None) -> None:
    """Refuse a run whose smoother history (``n_steps x particles x``
    :data:`HISTORY_BYTES_PER_PARTICLE` bytes) exceeds ``budget`` (default
    :func:`memory_budget_bytes`); runs without smoothing keep no history.
    Raises :class:`InputError` with ``field="particles"``."""
    if not config.smooth:
        return
    budget = memory_budget_bytes() if budget is None else budget
    per_particle = HISTORY_BYTES_PER_PARTICLE + (
        VELOCITY_BYTES_PER_PARTICLE if config.motion == "lagrangian" else 0
    )
    need = n_steps * config.particles * per_particle
    if need > budget:
        most = max(budget // (n_steps * per_particle), 1)
        raise InputError(
            f"smoothing {n_steps} steps with {config.particles} particles keeps "
            f"{need / 1e9:.1f} GB of particle history, more than the {budget / 1e9:.1f} GB "
            f"allowed (half the memory); expected at most {most} particles, or no smoothing",
            field="particles",
        )
