"""The RAFOS float file formats in one place: variables, dims, units, defaults, sentinels.

Three NetCDF files share these tables:

* :data:`FLOAT_RECORD` -- the float record (input of ``track-float``; written by
  ``simulate-float``), checked by :func:`rankmodels.tracking.records.validate_float`;
* :data:`TRUTH` -- the true track of a simulated record;
* :data:`TRACK` -- the track written by ``track-float``.

Writers take their ``units``/``long_name`` attributes from here (:func:`annotate`), the reader
its dims, kinds, ranges and accepted units, and ``docs/tracking.md`` ("File formats") shows
:meth:`FileFormat.markdown_table` of each (a test keeps the docs and this module equal).

Per-arrival labels (``source_label``, ``true_label``, ``association``, shape ``(cycle, rank)``)
hold a source index ``0 .. s-1``, :data:`CLUTTER` or :data:`NO_ARRIVAL`.

Units: a variable's ``units`` attribute may use any spelling in :data:`UNIT_SPELLINGS` for its
canonical unit (e.g. ``"ms"`` for seconds: the values are scaled to seconds); an absent
attribute means the canonical unit; any other spelling is refused by the reader.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

import xarray as xr

from rankmodels.tracking.signal_model import DEFAULT_WINDOW

__all__ = [
    "CLUTTER",
    "DEFAULT_CLOCK_READING_ERROR",
    "DEFAULT_SALINITY",
    "DEFAULT_SOUND_SPEED",
    "FLOAT_RECORD",
    "MOTION_QUANTITIES",
    "NO_ARRIVAL",
    "TRACK",
    "TRUTH",
    "UNIT_SPELLINGS",
    "FileFormat",
    "Variable",
    "annotate",
    "unit_factor",
    "unit_spellings_table",
]

#: Label of an arrival that is clutter (noise, from no source).
CLUTTER = -1
#: Label of a rank with no recorded arrival (``toa`` is NaN there).
NO_ARRIVAL = -2
#: Sound speed (m/s) assumed when a record has no ``sound_speed``.
DEFAULT_SOUND_SPEED = 1500.0
#: Practical salinity assumed for the starting sound speed where a record states none (the
#: Antarctic Circumpolar Current at RAFOS depths, 34.0 to 34.7).
DEFAULT_SALINITY = 34.5
#: Standard deviation (s) of a measured float clock offset when the record states none: offsets
#: are read against GPS time in whole seconds (the DIMES float table), a rounding error of
#: 0.29 s, plus the reading itself.
DEFAULT_CLOCK_READING_ERROR = 0.5

Kind = Literal["real", "time", "label", "name"]

#: Canonical unit -> accepted spellings (lower case, single spaces) -> factor to the canonical
#: unit. ``"m s-1"`` is metres per second (CF spelling), not milliseconds.
UNIT_SPELLINGS: dict[str, dict[str, float]] = {
    "s": {
        **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
        **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), 1e-3),
        **dict.fromkeys(("min", "minute", "minutes"), 60.0),
    },
    "m s-1": {
        **dict.fromkeys(("m s-1", "m/s", "m s^-1", "m.s-1", "meters per second"), 1.0),
        **dict.fromkeys(("metres per second", "m s**-1"), 1.0),
        **dict.fromkeys(("km s-1", "km/s", "km s^-1", "km.s-1"), 1000.0),
    },
    "s day-1": {
        **dict.fromkeys(("s day-1", "s/day", "s d-1", "s/d", "seconds per day"), 1.0),
        **dict.fromkeys(("ms day-1", "ms/day", "milliseconds per day"), 1e-3),
        **dict.fromkeys(("s year-1", "s/year", "s yr-1", "s/yr"), 1.0 / 365.25),
    },
    "km": {
        **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers"), 1.0),
        **dict.fromkeys(("m", "metre", "metres", "meter", "meters"), 1e-3),
    },
    "degree_Celsius": dict.fromkeys(
        ("degree_celsius", "degrees_celsius", "degc", "deg c", "celsius", "c", "\u00b0c"), 1.0
    ),
    "dbar": {
        **dict.fromkeys(("dbar", "decibar", "decibars", "db"), 1.0),
        "bar": 10.0,
        "kpa": 0.1,
        "pa": 1e-4,
    },
    "1": dict.fromkeys(("1", "psu", "pss-78", "pss"), 1.0),
    "degrees_north": dict.fromkeys(
        ("degrees_north", "degree_north", "degrees_n", "degree_n", "degrees", "degree", "deg"),
        1.0,
    ),
    "degrees_east": dict.fromkeys(
        ("degrees_east", "degree_east", "degrees_e", "degree_e", "degrees", "degree", "deg"),
        1.0,
    ),
}


def unit_spellings_table() -> str:
    """The markdown table of :data:`UNIT_SPELLINGS` that ``docs/tracking.md`` shows."""
    rows = ["| unit | accepted `units` attributes (factor to the unit) |", "|---|---|"]
    for canonical, spellings in UNIT_SPELLINGS.items():
        by_factor: dict[float, list[str]] = {}
        for spelling, factor in spellings.items():
            by_factor.setdefault(factor, []).append(f"`{spelling}`")
        groups = [f"{', '.join(names)} ({factor:g})" for factor, names in by_factor.items()]
        rows.append(f"| `{canonical}` | {'; '.join(groups)} |")
    return "\n".join(rows)


def unit_factor(canonical: str, spelling: object) -> float | None:
    """Factor from ``spelling`` to the ``canonical`` unit (values times it are canonical);
    ``None`` when the spelling is not known for that unit. Case and runs of blanks ignored."""
    if not isinstance(spelling, str):
        return None
    return UNIT_SPELLINGS[canonical].get(" ".join(spelling.lower().split()))


@dataclass(frozen=True)
class Variable:
    """One variable of a file format.

    ``kind``: ``"real"`` (numbers, converted to float), ``"time"`` (datetime64, CF time
    units), ``"label"`` (integer labels, see :data:`CLUTTER`), ``"name"`` (strings).
    ``units``: the canonical CF ``units`` attribute ("" = none, or not interpreted).
    ``lo``/``hi``: the valid range (``lo_open``: strictly above ``lo``), ``missing_ok``: NaN
    (NaT) entries allowed. ``default``: what an absent optional variable means.
    """

    name: str
    dims: tuple[str, ...]
    kind: Kind
    long_name: str
    notes: str = ""
    units: str = ""
    required: bool = False
    default: str = ""
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    missing_ok: bool = False

    def attrs(self) -> dict[str, str]:
        """The NetCDF attributes a writer gives this variable."""
        out = {"long_name": self.long_name}
        if self.units:
            out["units"] = self.units
        return out

    def range_text(self) -> str:
        """The valid range in words, e.g. ``"in [-90, 90]"``, ``"> 0"``, or ``""``."""
        lo, hi = self.lo, self.hi
        if math.isfinite(lo) and math.isfinite(hi):
            return f"in {'(' if self.lo_open else '['}{lo:g}, {hi:g}]"
        if math.isfinite(lo):
            return f"{'>' if self.lo_open else '>='} {lo:g}"
        return f"<= {hi:g}" if math.isfinite(hi) else ""


@dataclass(frozen=True)
class FileFormat:
    """The variables of one file, in documentation order; ``input``: read (and validated) by
    rankmodels, so the docs table says which variables are required."""

    name: str
    variables: tuple[Variable, ...]
    input: bool = False

    def __post_init__(self) -> None:
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate variable names")

    def __iter__(self) -> Iterator[Variable]:
        return iter(self.variables)

    def __contains__(self, name: object) -> bool:
        return any(v.name == name for v in self.variables)

    def __getitem__(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(f"{self.name} has no variable {name!r}")

    def markdown_table(self) -> str:
        """The table ``docs/tracking.md`` shows: one row per variable, except that an output's
        ``X_std`` shares the row of ``X`` and its EM traces ``calibration_X`` share one row."""
        head = ["name", "dims", "units", "meaning", *(["required"] if self.input else [])]
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        names = {v.name for v in self.variables}
        folded = not self.input
        traced = [v for v in self.variables if folded and _is_trace(v, names)]
        for v in self.variables:
            if folded and v.name.endswith("_std") and v.name[: -len("_std")] in names:
                continue
            if v in traced[1:]:
                continue
            cells = _trace_cells(traced) if traced and v is traced[0] else self._cells(v)
            if folded and f"{v.name}_std" in names:
                std = self[f"{v.name}_std"]
                cells[0] += f", `{std.name}`"
                its = _meaning(std, self.input).replace(
                    f"standard error of {v.name}", "its standard error"
                )
                cells[3] += f"; `{std.name}`: {its}"
            rows.append("| " + " | ".join(cells) + " |")
        return "\n".join(rows)

    def _cells(self, v: Variable) -> list[str]:
        """The cells of one variable's row."""
        cells = [f"`{v.name}`", f"({', '.join(v.dims)})", v.units, _meaning(v, self.input)]
        if self.input:
            cells.append("yes" if v.required else f"no{', ' + v.default if v.default else ''}")
        return cells


#: Prefix of the EM trace of a calibrated quantity.
_TRACED = "calibration_"


def _is_trace(v: Variable, names: set[str]) -> bool:
    """Whether ``v`` is the plain EM trace ``calibration_X`` (``X of each EM iteration``) of a
    variable ``X`` in ``names``."""
    quantity = v.name[len(_TRACED) :]
    return (
        v.name.startswith(_TRACED)
        and quantity in names
        and v.long_name == f"{quantity} of each EM iteration"
    )


def _trace_cells(traces: list[Variable]) -> list[str]:
    """The cells of the one row the plain EM traces ``traces`` share."""
    quantities = ", ".join(f"`{u.name[len(_TRACED) :]}`" for u in traces)
    dims = " or ".join(dict.fromkeys(f"({', '.join(u.dims)})" for u in traces))
    meaning = f"NAME of each EM iteration, for NAME = {quantities}; {traces[0].notes}"
    return [f"`{_TRACED}NAME`", dims, "NAME's", meaning.replace("|", "\\|")]


def _meaning(v: Variable, with_range: bool) -> str:
    """A variable's meaning cell: long name, notes and (for an input) its valid range."""
    parts = (v.long_name, v.notes, v.range_text() if with_range else "")
    return "; ".join(p for p in parts if p).replace("|", "\\|")


def _lat(name: str, long_name: str, dims: tuple[str, ...] = (), **kw: Any) -> Variable:
    return Variable(name, dims, "real", long_name, units="degrees_north", lo=-90.0, hi=90.0, **kw)


def _lon(name: str, long_name: str, dims: tuple[str, ...] = (), **kw: Any) -> Variable:
    return Variable(name, dims, "real", long_name, units="degrees_east", lo=-180.0, hi=360.0, **kw)


_LABELS = f"source index, {CLUTTER} clutter, {NO_ARRIVAL} no arrival"
_TIME = Variable("time", ("cycle",), "time", "time of the listening cycle", "coordinate")
_SOURCE = Variable("source", ("source",), "name", "sound source name", "coordinate")

FLOAT_RECORD = FileFormat(
    "float record",
    (
        Variable(
            "toa",
            ("cycle", "rank"),
            "real",
            "time of arrival after the listening-window start",
            "ascending within a cycle; NaN only after the recorded arrivals; "
            "finite, >= 0, <= `window_length`",
            units="s",
            required=True,
            missing_ok=True,
        ),
        replace(
            _TIME,
            notes="coordinate (CF time units); strictly increasing, not before `launch_time`",
            required=True,
        ),
        replace(_SOURCE, notes="coordinate; unique", required=True),
        _lat(
            "source_lat",
            "sound source latitude",
            ("source",),
            notes="NaN = source without position",
            required=True,
        ),
        _lon("source_lon", "sound source longitude", ("source",), required=True),
        Variable(
            "source_offset",
            ("source",),
            "real",
            "added to every predicted TOA of the source",
            "transmission schedule, clock offset; at the source's deployment "
            "(`source_start_time`, else `launch_time`) when `source_drift` is given",
            units="s",
            default="0",
        ),
        Variable(
            "source_drift",
            ("source",),
            "real",
            "source clock drift",
            "the predicted TOA adds `source_drift` times the days since the source's "
            "deployment (`source_start_time`, else `launch_time`) to `source_offset`; finite",
            units="s day-1",
            default="0",
        ),
        Variable(
            "source_start_time",
            ("source",),
            "time",
            "start of the source's active period",
            "NaT = unbounded; outside the period the source is left out of the likelihood",
            default="active since before the record",
            missing_ok=True,
        ),
        Variable(
            "source_end_time",
            ("source",),
            "time",
            "end of the source's active period",
            "NaT = unbounded; not before `source_start_time`",
            default="active until after the record",
            missing_ok=True,
        ),
        _lat("launch_lat", "launch latitude", notes="the filter's start", required=True),
        _lon("launch_lon", "launch longitude", required=True),
        Variable(
            "launch_time", (), "time", "launch time", "not after the first cycle", required=True
        ),
        _lat(
            "recovery_lat",
            "surfacing latitude",
            notes="the recovery fix, used by the smoother; all three recovery variables or none",
        ),
        _lon("recovery_lon", "surfacing longitude"),
        Variable(
            "recovery_time",
            (),
            "time",
            "surfacing time",
            "not before the last cycle",
        ),
        Variable(
            "fix_time",
            ("fix",),
            "time",
            "time of a position fix (GPS at a surfacing)",
            "all four fix variables or none; increasing, not before `launch_time`, not after "
            "the last cycle (a fix at `recovery_time` is the recovery fix and must equal it)",
            default="no fixes",
        ),
        _lat("fix_lat", "fix latitude", ("fix",), notes="used by the filter and the smoother"),
        _lon("fix_lon", "fix longitude", ("fix",)),
        Variable(
            "fix_error",
            ("fix",),
            "real",
            "position error of the fix",
            "standard deviation per axis (east, north)",
            units="km",
            lo=0.0,
            lo_open=True,
        ),
        Variable(
            "clock_offset_launch",
            (),
            "real",
            "float clock offset measured at launch",
            "how far the float clock reads ahead of GPS time at `launch_time`; the float clock "
            "is taken as linear between the measured offsets (the file's clock), which "
            "calibration refines",
            units="s",
            default="unknown (0, calibrated with a prior)",
        ),
        Variable(
            "clock_offset_recovery",
            (),
            "real",
            "float clock offset measured at recovery",
            "at `recovery_time` (needs it and `clock_offset_launch`)",
            units="s",
            default="unknown (no drift, calibrated with a prior)",
        ),
        Variable(
            "clock_offset_error",
            (),
            "real",
            "error of a measured clock offset",
            "standard deviation of each measured offset",
            units="s",
            default=f"{DEFAULT_CLOCK_READING_ERROR:g}",
            lo=0.0,
            lo_open=True,
        ),
        Variable(
            "sound_speed",
            (),
            "real",
            "speed of sound",
            units="m s-1",
            default=f"{DEFAULT_SOUND_SPEED:g}",
            lo=0.0,
            lo_open=True,
        ),
        Variable(
            "window_length",
            (),
            "real",
            "listening-window length",
            "clutter is uniform on [0, `window_length`]",
            units="s",
            default=f"{DEFAULT_WINDOW:g} (or the next whole minute after the largest TOA)",
            lo=0.0,
            lo_open=True,
        ),
        Variable(
            "source_label",
            ("cycle", "rank"),
            "label",
            f"hand label: {_LABELS}",
            f"{NO_ARRIVAL} exactly where `toa` is NaN; a source labels at most one arrival "
            "per cycle, only while active",
            default="needed by `--engine labels`",
        ),
        Variable(
            "correlation",
            ("cycle", "rank"),
            "real",
            "correlation height of each arrival",
            "heights > 0 are used by the correlation calibration (`--calibrate-params "
            "correlation`) and `--min-correlation`; NaN or <= 0: no height",
            units="1",
            missing_ok=True,
        ),
        Variable(
            "temperature",
            ("cycle",),
            "real",
            "float temperature (in situ)",
            "copied to the track; with `pressure`, the sound speed's starting value",
            units="degree_Celsius",
            missing_ok=True,
        ),
        Variable(
            "pressure",
            ("cycle",),
            "real",
            "float pressure",
            "copied to the track",
            units="dbar",
            missing_ok=True,
        ),
        Variable(
            "salinity",
            ("cycle",),
            "real",
            "float practical salinity",
            f"for the starting sound speed (default {DEFAULT_SALINITY:g} where absent or NaN)",
            units="1",
            missing_ok=True,
        ),
    ),
    input=True,
)

_MISMATCH_ONLY = "only when simulated with a mismatch"
_DRIFTING_ONLY = "only for a drifting float (Ornstein-Uhlenbeck eddies)"

TRUTH = FileFormat(
    "truth",
    (
        replace(_TIME, notes="coordinate, as in the record"),
        _SOURCE,
        _lat("lat", "true latitude", notes="at the cycle times", dims=("cycle",)),
        _lon("lon", "true longitude", dims=("cycle",)),
        Variable("true_label", ("cycle", "rank"), "label", f"true label: {_LABELS}"),
        Variable(
            "clock_offset",
            (),
            "real",
            "float clock ahead of true time at launch",
            _MISMATCH_ONLY,
            units="s",
        ),
        Variable("clock_drift", (), "real", "float clock drift", _MISMATCH_ONLY, units="s day-1"),
        Variable(
            "sound_speed",
            (),
            "real",
            "true speed of sound",
            f"{_MISMATCH_ONLY}; the record keeps its nominal value",
            units="m s-1",
        ),
        Variable(
            "source_offset",
            ("source",),
            "real",
            "true source offset",
            f"{_MISMATCH_ONLY}; the record's are written with errors",
            units="s",
        ),
        Variable(
            "source_drift",
            ("source",),
            "real",
            "true source clock drift",
            "only in an experiment replay (simulate-experiment); the record states the table's",
            units="s day-1",
        ),
        Variable(
            "multipath_delay",
            ("cycle", "source"),
            "real",
            "multipath delay of each source arrival",
            f"{_MISMATCH_ONLY}; 0 = direct, NaN = source inactive",
            units="s",
        ),
        *(
            Variable(
                f"velocity_{axis}",
                ("cycle",),
                "real",
                f"true {axis}ward velocity",
                f"{_DRIFTING_ONLY}; instantaneous, at the cycle times",
                units="m s-1",
            )
            for axis in ("east", "north")
        ),
        *(
            Variable(name, (), "real", what, _DRIFTING_ONLY, units=units)
            for name, what, units in (
                ("mean_velocity_east", "true mean velocity east", "km day-1"),
                ("mean_velocity_north", "true mean velocity north", "km day-1"),
                ("eddy_speed", "true eddy velocity std per axis", "km day-1"),
                ("time_scale", "true Lagrangian time scale", "day"),
            )
        ),
    ),
)

_NOT_ESTIMATED = "NaN when not estimated"
_STATISTICAL = (
    "the value the track used; attributes start (the configured value), status (estimated, "
    "kept, not calibrated) and status_reason"
)
_TRACE = "one value per EM iteration (the first: the file's values); only when calibrated"


_MOTION = "with --motion lagrangian only"
_HEIGHTS = (
    "log-normal component of the correlation heights (mean or standard deviation of log "
    "correlation); only when the record has correlation heights and correlation is "
    "calibrated; " + _STATISTICAL
)
#: The track's scalars of the Lagrangian motion: its parameters and statistics.
MOTION_QUANTITIES = (
    "mean_velocity_east",
    "mean_velocity_north",
    "eddy_speed",
    "time_scale",
    "eddy_kinetic_energy",
    "diffusivity",
)


_USED = "the value the predictions used"
# (name, dims, long name, units, notes) of each calibrated quantity of the track
_CALIBRATION_QUANTITIES = (
    (
        "sound_speed",
        (),
        "effective sound speed",
        "m s-1",
        f"{_USED}; the file's when not estimated",
    ),
    ("clock_offset", (), "float clock offset at launch (ahead of true time)", "s", _USED),
    ("clock_drift", (), "float clock drift", "s day-1", _USED),
    ("sigma", (), "TOA noise standard deviation", "s", _STATISTICAL),
    ("p_detect", (), "detection probability P_D", "1", _STATISTICAL),
    ("clutter_rate", (), "clutter arrivals per listening window", "1", _STATISTICAL),
    ("multipath", (), "share of source arrivals delayed by multipath", "1", _STATISTICAL),
    ("multipath_delay", (), "mean multipath delay", "s", _STATISTICAL),
    ("process_noise", (), "random-walk std per axis of a 1-day step", "km", _STATISTICAL),
    *(
        (
            f"correlation_{part}_{what}",
            (),
            f"{part} arrivals' log correlation height {desc}",
            "1",
            _HEIGHTS,
        )
        for part in ("source", "clutter")
        for what, desc in (("mean", "mean"), ("spread", "standard deviation"))
    ),
    ("mean_velocity_east", (), "mean velocity east", "km day-1", _MOTION),
    ("mean_velocity_north", (), "mean velocity north", "km day-1", _MOTION),
    ("eddy_speed", (), "eddy velocity std per axis", "km day-1", _MOTION),
    ("time_scale", (), "Lagrangian time scale of the eddy velocity", "day", _MOTION),
    ("eddy_kinetic_energy", (), "eddy kinetic energy (u'^2 + v'^2) / 2", "m2 s-2", _MOTION),
    ("diffusivity", (), "single-particle diffusivity per axis", "m2 s-1", _MOTION),
    (
        "source_offset_correction",
        ("source",),
        "correction added to the file's source_offset",
        "s",
        _USED,
    ),
    (
        "source_drift_correction",
        ("source",),
        "shared correction of the source clock drift (source_drift includes it)",
        "s day-1",
        "only with --calibrate-mode experiment",
    ),
)


def _calibration_variables() -> tuple[Variable, ...]:
    """The calibration's variables of the track (``rankmodels.tracking.calibration``)."""
    out = []
    for name, dims, long_name, units, notes in _CALIBRATION_QUANTITIES:
        out.append(Variable(name, dims, "real", long_name, notes, units=units))
        out.append(
            Variable(
                f"{name}_std",
                dims,
                "real",
                f"standard error of {name}",
                _NOT_ESTIMATED,
                units=units,
            )
        )
    out.append(
        Variable(
            "calibration_loglik",
            ("iteration",),
            "real",
            "particle estimate of log p(data | parameters) at the calibration's particles",
            _TRACE,
            units="1",
        )
    )
    out.append(
        Variable(
            "calibration_sigma",
            ("iteration",),
            "real",
            "TOA noise std the EM pass assumed",
            "larger than the track's sigma in the first (annealing) passes; " + _TRACE,
            units="s",
        )
    )
    # calibration_sigma: above; the drift correction is shared, its trace is the experiment's
    untraced = ("sigma", "source_drift_correction", *MOTION_QUANTITIES)
    traced = [q for q in _CALIBRATION_QUANTITIES if q[0] not in untraced]
    for name, dims, _, units, _ in traced:
        out.append(
            Variable(
                f"calibration_{name}",
                ("iteration", *dims),
                "real",
                f"{name} of each EM iteration",
                _TRACE,
                units=units,
            )
        )
    return tuple(out)


TRACK = FileFormat(
    "track",
    (
        replace(_TIME, notes="coordinate, copied from the input"),
        _SOURCE,
        Variable(
            "candidate",
            ("candidate",),
            "name",
            "association candidate",
            'coordinate: the sources, then "clutter"',
        ),
        Variable("enu", ("enu",), "name", "offset axis", 'coordinate: "east", "north"'),
        Variable("enu2", ("enu2",), "name", "offset axis", 'coordinate: "east", "north"'),
        _lat("lat", "posterior mean latitude", notes="smoothed when smoothing", dims=("cycle",)),
        _lon("lon", "posterior mean longitude", notes="smoothed when smoothing", dims=("cycle",)),
        Variable(
            "lat_std",
            ("cycle",),
            "real",
            "posterior standard deviation of latitude",
            units="degree",
        ),
        Variable(
            "lon_std",
            ("cycle",),
            "real",
            "posterior standard deviation of longitude",
            units="degree",
        ),
        Variable(
            "position_cov",
            ("cycle", "enu", "enu2"),
            "real",
            "posterior covariance of the (east, north) offset",
            units="km2",
        ),
        *(
            Variable(
                f"velocity_{axis}{suffix}",
                ("cycle",),
                "real",
                f"{what} {axis}ward velocity (sea water at the float)",
                _MOTION,
                units="m s-1",
            )
            for axis in ("east", "north")
            for suffix, what in (("", "posterior mean"), ("_std", "posterior std of the"))
        ),
        _lat(
            "lat_filtered", "forward-filter mean latitude", notes="always present", dims=("cycle",)
        ),
        _lon(
            "lon_filtered", "forward-filter mean longitude", notes="always present", dims=("cycle",)
        ),
        Variable("association", ("cycle", "rank"), "label", f"most probable source: {_LABELS}"),
        Variable(
            "association_prob",
            ("cycle", "rank"),
            "real",
            "posterior probability of the association",
            "NaN where no arrival",
            units="1",
        ),
        Variable(
            "association_posterior",
            ("cycle", "rank", "candidate"),
            "real",
            "posterior over the sources and clutter",
            "NaN where no arrival; 0 for inactive sources",
            units="1",
        ),
        Variable(
            "toa",
            ("cycle", "rank"),
            "real",
            "recorded time of arrival",
            "copied from the input",
            units="s",
        ),
        Variable(
            "predicted_toa",
            ("cycle", "source"),
            "real",
            "predicted TOA at the posterior mean",
            "NaN for inactive sources",
            units="s",
        ),
        Variable("ess", ("cycle",), "real", "effective sample size after weighting", units="1"),
        Variable(
            "loglik",
            ("cycle",),
            "real",
            "log predictive likelihood log p(T_t | T_1:t-1)",
            "0 for cycles without arrivals, -inf when collapsed",
            units="1",
        ),
        Variable("collapsed", ("cycle",), "real", "1 where every particle had zero likelihood"),
        _lat("source_lat", "sound source latitude", ("source",)),
        _lon("source_lon", "sound source longitude", ("source",)),
        Variable(
            "source_drift",
            ("source",),
            "real",
            "source clock drift the predictions used",
            "copied from the input (0 when it has none)",
            units="s day-1",
        ),
        Variable(
            "fix_time",
            ("fix",),
            "time",
            "time of a position fix the filter and smoother used",
            "only when the input has fixes (the recovery fix is not among them)",
        ),
        _lat("fix_lat", "fix latitude", ("fix",)),
        _lon("fix_lon", "fix longitude", ("fix",)),
        Variable("fix_error", ("fix",), "real", "position error of the fix", units="km"),
        Variable(
            "temperature",
            ("cycle",),
            "real",
            "float temperature (in situ)",
            "copied from the input when present",
            units="degree_Celsius",
        ),
        Variable(
            "pressure",
            ("cycle",),
            "real",
            "float pressure",
            "copied from the input when present",
            units="dbar",
        ),
        *_calibration_variables(),
    ),
)


def annotate(ds: xr.Dataset, fmt: FileFormat) -> xr.Dataset:
    """``ds`` with every variable of ``fmt`` it holds given its ``long_name``/``units``
    attributes (other attributes kept); the dataset is changed in place and returned."""
    for name, var in ds.variables.items():
        if name in fmt:
            var.attrs.update(fmt[str(name)].attrs())
    return ds
