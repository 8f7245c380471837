"""The tracking commands' settings, one row each: the one table their options come from.

Each :class:`Setting` says which commands take it, the keyword the command passes on to the
library (``field``: a :class:`~rankmodels.tracking.config.TrackConfig` field for
``track-float``, a :class:`~rankmodels.tracking.simulate.Mismatch` field or a keyword of
:func:`~rankmodels.tracking.simulate.signal_spec`-like calls for the simulators), the option's
name and its old spellings (``aliases``: they still work and are not shown), the help text,
the kind of value, its accepted range and its default. The ranges and defaults are read from
:data:`~rankmodels.tracking.config.LIMITS`, :class:`~rankmodels.tracking.config.TrackConfig`
and :data:`~rankmodels.tracking.simulate.MISMATCH_LIMITS`, so the help shows what the library
enforces.

One vocabulary: a quantity has one option name in every command (``--p-detect`` the
detection probability, ``--clutter-rate`` the clutter arrivals per window,
``--float-clock-drift`` the float clock's drift, ``--source-drift-error`` the sources' drift
beyond what the records state, in line with ``--offset-error``), and an option name means
one quantity; ``tests/test_cli_settings.py`` checks it over the table.

The library never imports click: the command line turns the rows into options
(``rankmodels_app.setting_options``) and names a refused setting's option with
:func:`option_name`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rankmodels.tracking.calibration import CALIBRATION_PARAMS
from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    COMMAND_PARTICLES,
    EXPERIMENT_EM_PARTICLES,
    FLOAT_EM_PARTICLES,
    LIMITS,
    MAX_CALIBRATION_ITERATIONS,
    MAX_PARTICLES,
    MOTIONS,
    TrackConfig,
)
from rankmodels.tracking.engines import ENGINES
from rankmodels.tracking.simulate import MISMATCH_LIMITS

__all__ = ["COMMANDS", "SETTINGS", "Setting", "option_name", "settings_of"]

TRACK = ("track-float",)
SIMULATE = ("simulate-float", "simulate-experiment")
COMMANDS = (*TRACK, *SIMULATE)
"""The commands whose settings the table holds."""

KINDS = ("number", "whole", "choice", "text", "flag", "seed")
"""``number`` a real number, ``whole`` a count (also written ``1e4``), ``choice`` one of
``choices``, ``text`` a string the library parses, ``flag`` on/off (``--X/--no-X``),
``seed`` a random seed."""


@dataclass(frozen=True)
class Setting:
    """One option of one or more tracking commands.

    ``help`` may hold ``{range}``, where the accepted range is written (``0<x<=600``, as
    every help page writes ranges). ``checked_by``: ``"option"`` when the command line
    refuses a value outside ``lo .. hi`` as it parses (its help then shows the range after
    the default, as click writes it), ``"command"`` when the library (or the command) refuses
    it after parsing, with an error naming ``field``. ``quantity``: what the value is, when
    ``field`` alone does not say it (the same field names different quantities in different
    commands); one quantity, one option name.
    """

    commands: tuple[str, ...]
    field: str
    option: str
    help: str
    kind: str = "number"
    default: object = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    checked_by: str = "command"
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    show_default: bool = True
    quantity: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.option}: unknown kind {self.kind!r}")
        if self.checked_by not in ("option", "command"):
            raise ValueError(f"{self.option}: checked_by {self.checked_by!r}")
        if self.kind == "flag" and self.aliases:  # --X/--no-X: an old spelling needs both
            raise ValueError(f"{self.option}: a flag without aliases")
        if not self.quantity:
            object.__setattr__(self, "quantity", self.field)

    @property
    def names(self) -> tuple[str, ...]:
        """Every spelling the option accepts, the shown one first."""
        return (self.option, *self.aliases)


def _limit(name: str) -> dict[str, float | bool]:
    """The range of the tracker setting ``name`` (:data:`LIMITS`)."""
    limit = LIMITS[name]
    return {"lo": limit.lo, "hi": limit.hi, "lo_open": limit.lo_open}


def _mismatch(name: str) -> dict[str, float | bool]:
    """The range of the :class:`Mismatch` setting ``name`` (:data:`MISMATCH_LIMITS`)."""
    lo, hi, _unit, lo_open, hi_open = MISMATCH_LIMITS[name]
    return {"lo": lo, "hi": hi, "lo_open": lo_open, "hi_open": hi_open}


_TRACK = TrackConfig()

SETTINGS: tuple[Setting, ...] = (
    # --- track-float: the tracker's settings (TrackConfig fields), in the help's order
    Setting(
        TRACK, "particles", "--particles",
        "Particles of the filter (with smoothing also limited by memory).  [{range}]",
        kind="whole", default=COMMAND_PARTICLES, **_limit("particles"),
    ),
    Setting(
        TRACK, "seed", "--seed", "Seed of the random number generator.",
        kind="seed", default=_TRACK.seed,
    ),
    Setting(
        TRACK, "engine", "--engine", "Likelihood engine (labels: the record's hand labels).",
        kind="choice", default=_TRACK.engine, choices=tuple(ENGINES),
    ),
    Setting(
        TRACK, "sigma", "--sigma", "TOA noise standard deviation (s).  [{range}]",
        default=_TRACK.sigma, **_limit("sigma"),
    ),
    Setting(
        TRACK, "p_detect", "--p-detect", "Detection probability P_D.  [{range}]",
        default=_TRACK.p_detect, aliases=("--pd",), **_limit("p_detect"),
    ),
    Setting(
        TRACK, "clutter_rate", "--clutter-rate",
        "Mean clutter arrivals per listening window (P_C = LAMBDA / (1 + LAMBDA)).  [{range}]",
        default=_TRACK.clutter_rate, aliases=("--clutter",), **_limit("clutter_rate"),
    ),
    Setting(
        TRACK, "multipath", "--multipath",
        "Share of source arrivals delayed by multipath (exponential delay, mean 30 s).  "
        "[{range}]",
        default=COMMAND_MULTIPATH, **_limit("multipath"),
    ),
    Setting(
        TRACK, "process_noise", "--process-noise",
        "Random-walk standard deviation per axis of a one-day step (km).  [{range}]",
        default=_TRACK.process_noise, **_limit("process_noise"),
    ),
    Setting(
        TRACK, "motion", "--motion",
        "Motion model: lagrangian (a position and a velocity that persists over the "
        "Lagrangian time scale: mean flow plus Ornstein-Uhlenbeck eddies) or random-walk "
        "(the position alone, --process-noise).",
        kind="choice", default=COMMAND_MOTION, choices=MOTIONS,
    ),
    Setting(
        TRACK, "eddy_speed", "--eddy-speed",
        "Lagrangian motion: starting eddy speed, the velocity's standard deviation per axis "
        "(km/day).  [{range}]",
        default=_TRACK.eddy_speed, **_limit("eddy_speed"),
    ),
    Setting(
        TRACK, "time_scale", "--time-scale",
        "Lagrangian motion: starting Lagrangian time scale of the eddy velocity (days).  "
        "[{range}]",
        default=_TRACK.time_scale, **_limit("time_scale"),
    ),
    Setting(
        TRACK, "position_noise", "--position-noise",
        "Lagrangian motion: white position diffusion beside the velocity, standard deviation "
        "per axis of a one-day step (km).  [{range}]",
        default=_TRACK.position_noise, **_limit("position_noise"),
    ),
    Setting(
        TRACK, "sound_speed", "--sound-speed",
        "Starting sound speed (m/s); default: the TEOS-10 speed of the float's recorded "
        "temperature and pressure, else the record's sound_speed.  [{range}]",
        default=_TRACK.sound_speed, show_default=False, **_limit("sound_speed"),
    ),
    Setting(
        TRACK, "min_correlation", "--min-correlation",
        "Drop the arrivals whose correlation height is below this before tracking (the "
        "record must have correlation; arrivals without a height are kept; a cycle that "
        "recorded all its ranks stays truncated at its last recorded arrival)  [default: "
        "none; {range}].",
        default=_TRACK.min_correlation, show_default=False, **_limit("min_correlation"),
    ),
    Setting(
        TRACK, "calibrate", "--calibrate",
        "Estimate the float clock (offset, drift), the sound speed, the source offset "
        "corrections and the statistical model (TOA noise, P_D, clutter, multipath, process "
        "noise) with the track (Monte Carlo EM; see docs/tracking.md).",
        kind="flag", default=True,  # the command calibrates; TrackConfig() is the paper's model
    ),
    Setting(
        TRACK, "calibrate_params", "--calibrate-params",
        "What --calibrate estimates: a comma-separated subset of drift (clock offset and "
        "drift), speed, offsets (source offset corrections), sigma, pd, clutter, multipath "
        "(share and mean delay), process-noise, correlation (the correlation heights of "
        "source and clutter arrivals; records with heights only). Each starts at the file's "
        "or the option's value and is kept there when the record cannot determine it.",
        kind="text", default=",".join(CALIBRATION_PARAMS),
    ),
    Setting(
        TRACK, "calibration_iterations", "--calibration-iterations",
        "Most M-steps of the calibration's EM (per stage for one float; a summary ending "
        "'iteration limit' says the EM was still rising)  [{range}].",
        kind="whole", default=_TRACK.calibration_iterations, lo=1, hi=MAX_CALIBRATION_ITERATIONS,
    ),
    Setting(
        TRACK, "calibration_particles", "--calibration-particles",
        "Particles of the calibration's EM passes (at most --particles): more make where "
        "the EM ends depend less on its random numbers, for proportionally more time  "
        f"[default: {FLOAT_EM_PARTICLES}; {EXPERIMENT_EM_PARTICLES} with --calibrate-mode "
        "experiment; {range}].",
        kind="whole", default=_TRACK.calibration_particles, show_default=False,
        lo=1, hi=MAX_PARTICLES,
    ),
    Setting(
        TRACK, "smooth", "--smooth", "Smooth the track with the whole record and the recovery fix.",
        kind="flag", default=_TRACK.smooth,
    ),
    # --- simulate-float: the float clock (Mismatch fields) and the sources' stated drift
    Setting(
        ("simulate-float",), "clock_drift", "--float-clock-drift",
        "Float clock drift (s/day): arrivals are recorded later by this much per day since "
        "launch  [{range}].",
        default=0.0, aliases=("--float-drift",), quantity="float_clock_drift",
        **_mismatch("clock_drift"),
    ),
    Setting(
        ("simulate-float",), "clock_offset", "--float-clock-offset",
        "Float clock ahead of true time at launch (s)  [{range}].",
        default=0.0, quantity="float_clock_offset", **_mismatch("clock_offset"),
    ),
    Setting(
        ("simulate-float",), "source_drift", "--source-drift",
        "Clock drift (s/day) of every source since its deployment, stated in the record "
        "(source_drift)  [{range}].",
        default=0.0, lo=-1.0, hi=1.0,
    ),
    # --- simulate-experiment: what every float and source shares
    Setting(
        ("simulate-experiment",), "source_drift", "--source-drift-error",
        "Every source's clock truly drifts this much (s/day since its deployment) more than "
        "the records state  [{range}].",
        default=0.0, lo=-1.0, hi=1.0, aliases=("--source-drift-true",),
        quantity="source_drift_error",
    ),
    Setting(
        ("simulate-experiment",), "float_clock_drift", "--float-clock-drift",
        "Every float clock drifts this much (s/day) instead of from the table's launch "
        "offset to its recovery offset  [default: the table's].",
        default=None, show_default=False, checked_by="option", **_mismatch("clock_drift"),
    ),
    # --- both simulators: the signals, then what the records do not state
    Setting(
        SIMULATE, "sigma", "--sigma", "Standard deviation (s) of the TOA noise.",
        default=5.0, lo=0.0, hi=60.0, lo_open=True, checked_by="option",
    ),
    Setting(
        SIMULATE, "p_detect", "--p-detect", "Probability that a source is heard up to 800 km.",
        default=0.95, lo=0.0, hi=1.0, lo_open=True, checked_by="option",
    ),
    Setting(
        SIMULATE, "p_detect_far", "--p-detect-far",
        "Probability that a source is heard from 2,500 km (linear in between).",
        default=0.75, lo=0.0, hi=1.0, checked_by="option",
    ),
    Setting(
        SIMULATE, "clutter_rate", "--clutter-rate",
        "Mean number of clutter arrivals per listening window (Poisson).",
        default=1.0, lo=0.0, hi=20.0, checked_by="option",
    ),
    Setting(
        SIMULATE, "true_sound_speed", "--true-sound-speed",
        "Speed (m/s) the signals travel at; the record keeps its nominal sound_speed  "
        "[default: the nominal; {range}].",
        default=None, show_default=False, **_mismatch("true_sound_speed"),
    ),
    Setting(
        SIMULATE, "offset_error", "--offset-error",
        "Std (s) of the errors of the written source_offset values  [{range}].",
        default=0.0, **_mismatch("offset_error"),
    ),
    Setting(
        SIMULATE, "multipath", "--multipath",
        "Fraction of source arrivals delayed by Uniform(10, 60) s  [{range}].",
        default=0.0, **_mismatch("multipath"),
    ),
)  # fmt: skip
"""Every setting of the tracking commands (module docstring)."""


def settings_of(command: str) -> dict[str, Setting]:
    """``command``'s settings by field, in the table's order."""
    if command not in COMMANDS:
        raise KeyError(f"{command!r} is not one of {', '.join(COMMANDS)}")
    return {s.field: s for s in SETTINGS if command in s.commands}


def option_name(command: str, field: str | None) -> str | None:
    """The option of ``command`` that sets ``field`` (an ``InputError``'s ``field``), or
    None when no option sets it."""
    setting = settings_of(command).get(field or "")
    return None if setting is None else setting.option
