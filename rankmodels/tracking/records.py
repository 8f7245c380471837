"""Float records: read, validate and write the RAFOS float NetCDF format.

The format is :data:`rankmodels.tracking.schema.FLOAT_RECORD` (shown in ``docs/tracking.md``,
"File formats"). :func:`validate_float` checks a record concern by concern -- the declared
variables (presence, dims, kinds, units), the arrivals, the cycle times, the sources, launch and
recovery, the listening window, the hand labels -- and raises
:class:`rankmodels.errors.InputError` (``FILE: VARIABLE: what was expected``) on the first
problem. It returns a copy in canonical units (TOAs in seconds, ...) with the optional variables
that have defaults filled in.

Hand labels (``source_label``) are used only by the ``labels`` engine. With
``labels_required=True`` they must be present and consistent with the TOAs; otherwise
inconsistent labels only raise an :class:`InvalidLabelsWarning` (``warnings.warn``) and are
dropped from the returned record, so no later step can use them.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Hashable

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.cf import conventions
from rankmodels.tracking.netcdf import write_netcdf
from rankmodels.tracking.schema import (
    CLUTTER,
    DEFAULT_SOUND_SPEED,
    FLOAT_RECORD,
    NO_ARRIVAL,
    UNIT_SPELLINGS,
    unit_factor,
)
from rankmodels.tracking.signal_model import DEFAULT_WINDOW

__all__ = [
    "InvalidLabelsWarning",
    "WindowStretchedWarning",
    "active_sources",
    "source_days",
    "written_offsets",
    "compressed_encoding",
    "read_float",
    "validate_float",
    "write_float",
    "write_truth",
]

PathLike = str | os.PathLike[str]

_RECOVERY = ("recovery_lat", "recovery_lon", "recovery_time")
_FIXES = ("fix_time", "fix_lat", "fix_lon", "fix_error")
_CLOCK_READINGS = ("clock_offset_launch", "clock_offset_recovery", "clock_offset_error")
_DAY = np.timedelta64(86_400_000_000_000, "ns")
#: How the files store times: CF time units, in doubles.
_TIME_ENCODING: dict[str, object] = {"units": "seconds since 1970-01-01", "dtype": "float64"}


class InvalidLabelsWarning(UserWarning):
    """A record's hand labels (``source_label``) are inconsistent and were dropped; only the
    ``labels`` engine needs them (pass ``labels_required=True`` to make this an error)."""


class WindowStretchedWarning(UserWarning):
    """A record without ``window_length`` has an arrival after the default listening window:
    the window was stretched to the next whole minute after it (give ``window_length`` to say
    how long the float listened)."""


def _first(mask: np.ndarray) -> int | tuple[int, ...]:
    idx = np.argwhere(mask)[0]
    return int(idx[0]) if idx.size == 1 else tuple(int(i) for i in idx)


class _Checker:
    """Checks one record against :data:`FLOAT_RECORD`; raises :class:`InputError` naming the
    file and the variable."""

    def __init__(self, ds: xr.Dataset, path: PathLike | None) -> None:
        self.ds = ds
        self.path = path

    def fail(self, field: str, message: str) -> None:
        raise InputError(message, path=self.path, field=field)

    def structure_problem(self, name: str) -> str | None:
        """Dims and kind of variable ``name`` (present in the record) against the schema."""
        spec, da = FLOAT_RECORD[name], self.ds[name]
        if da.dims != spec.dims:
            return f"expected dims {spec.dims or '()'}, got {da.dims or '()'}"
        if spec.kind in ("real", "label") and not (
            np.issubdtype(da.dtype, np.number) and not np.issubdtype(da.dtype, np.complexfloating)
        ):
            return f"expected a real number, got dtype {da.dtype}"
        if spec.kind == "time" and not np.issubdtype(da.dtype, np.datetime64):
            return (
                f"expected datetime64 (CF time units such as 'days since 2009-01-01'), "
                f"got dtype {da.dtype}"
            )
        return None

    def units_factor(self, name: str) -> float:
        """Factor from the variable's ``units`` attribute to the schema's unit (1 if absent)."""
        canonical = FLOAT_RECORD[name].units
        if "units" not in self.ds[name].attrs:
            return 1.0
        given = self.ds[name].attrs["units"]
        factor = unit_factor(canonical, given)
        if factor is None:
            known = ", ".join(repr(u) for u in UNIT_SPELLINGS[canonical])
            self.fail(
                name,
                f"units attribute {str(given)[:40]!r} is not understood; expected "
                f"{canonical!r} or another spelling of a known unit ({known})",
            )
        return factor

    def values(self, out: xr.Dataset, name: str) -> np.ndarray:
        """Float values of ``name`` in ``out``, checked: finite (NaN only where the schema
        allows missing values) and inside the schema's range."""
        spec = FLOAT_RECORD[name]
        values = np.atleast_1d(np.asarray(out[name].values, dtype=float))
        bad = np.isinf(values) | (np.isnan(values) & (not spec.missing_ok))
        if bad.any():
            self.fail(name, f"non-finite value{self._at(bad)}")
        with np.errstate(invalid="ignore"):
            below = values <= spec.lo if spec.lo_open else values < spec.lo
            above = values > spec.hi
        for mask, op, bound in (
            (below, ">" if spec.lo_open else ">=", spec.lo),
            (above, "<=", spec.hi),
        ):
            if mask.any():
                self.fail(
                    name,
                    f"expected values {op} {bound}, got {values[mask].flat[0]:g}{self._at(mask)}",
                )
        return values

    def times(self, out: xr.Dataset, name: str) -> np.ndarray:
        """``datetime64[ns]`` values of ``name``; NaT only where the schema allows it."""
        values = np.atleast_1d(np.asarray(out[name].values).astype("datetime64[ns]"))
        if not FLOAT_RECORD[name].missing_ok and np.isnat(values).any():
            self.fail(name, f"missing (NaT) time{self._at(np.isnat(values))}")
        return values

    def _at(self, mask: np.ndarray) -> str:
        return f" at index {_first(mask)}" if mask.size > 1 else ""


def _canonical(ck: _Checker) -> xr.Dataset:
    """A copy of the record with every declared variable checked for presence, dims and kind,
    and real values converted to the schema's units (``units`` attribute set to them).
    ``source_label`` is left to :func:`_labels_problem`."""
    out = ck.ds.copy()
    for spec in FLOAT_RECORD:
        if spec.name not in ck.ds.variables:
            if spec.required:
                ck.fail(spec.name, f"missing required variable (expected dims {spec.dims or '()'})")
            continue
        if spec.kind == "label":
            continue
        problem = ck.structure_problem(spec.name)
        if problem:
            ck.fail(spec.name, problem)
        if spec.kind == "real" and spec.units:
            factor = ck.units_factor(spec.name)
            da = out[spec.name]
            data = da.values if factor == 1.0 else np.asarray(da.values, dtype=float) * factor
            out[spec.name] = xr.Variable(da.dims, data, {**da.attrs, "units": spec.units})
    return out


def _check_arrivals(ck: _Checker, out: xr.Dataset) -> np.ndarray:
    """``toa`` (cycle, rank): non-empty, NaN only after the recorded arrivals, ascending."""
    toa = np.asarray(out["toa"].values, dtype=float)
    if toa.shape[0] == 0:
        ck.fail("toa", "empty record: no listening cycles")
    if toa.shape[1] == 0:
        ck.fail("toa", "no rank dimension: at least one arrival per cycle expected")
    present = ~np.isnan(toa)
    if not present.any():
        ck.fail("toa", "empty record: no arrival recorded in any cycle")
    if np.isinf(toa).any():
        ck.fail("toa", f"infinite arrival time at (cycle, rank) {_first(np.isinf(toa))}")
    if (toa[present] < 0).any():
        ck.fail(
            "toa",
            f"negative arrival time at (cycle, rank) {_first(present & (toa < 0))}; "
            "expected seconds after the listening-window start",
        )
    gap = present[:, 1:] & ~present[:, :-1]
    if gap.any():
        c, k = _first(gap)
        ck.fail(
            "toa",
            f"cycle {c}: arrival at rank {k + 1} after a missing (NaN) one; "
            "NaN is allowed only after the recorded arrivals",
        )
    unsorted = present[:, 1:] & (np.diff(toa, axis=1) < 0)
    if unsorted.any():
        c, k = _first(unsorted)
        ck.fail(
            "toa",
            f"cycle {c}: arrival times not ascending ({toa[c, k]:g} s before "
            f"{toa[c, k + 1]:g} s); expected sorted within each cycle",
        )
    return toa


def _check_cycle_times(ck: _Checker, out: xr.Dataset) -> np.ndarray:
    """``time`` (cycle): no NaT, strictly increasing."""
    times = ck.times(out, "time")
    step = np.diff(times) <= np.timedelta64(0, "ns")
    if step.any():
        ck.fail("time", f"cycle times not strictly increasing at cycle {_first(step) + 1}")
    return times


def _check_sources(ck: _Checker, out: xr.Dataset) -> list[str]:
    """Unique names, positions, schedule (offsets and active periods); returns the names."""
    names = [str(v) for v in np.asarray(out["source"].values).tolist()]
    if not names:
        ck.fail("source", "no sound sources")
    if len(set(names)) != len(names):
        ck.fail("source", "source names are not unique")
    for name in ("source_lat", "source_lon"):
        missing = np.isnan(np.asarray(out[name].values, dtype=float))
        if missing.any():
            ck.fail(name, f"source {names[_first(missing)]!r} has no position")
        ck.values(out, name)
    for name in ("source_offset", "source_drift"):
        if name in out:
            ck.values(out, name)
    if "source_start_time" in out and "source_end_time" in out:
        start = ck.times(out, "source_start_time")
        end = ck.times(out, "source_end_time")
        inverted = ~np.isnat(start) & ~np.isnat(end) & (end < start)
        if inverted.any():
            ck.fail("source_end_time", f"source {names[_first(inverted)]!r} ends before it starts")
    return names


def _check_launch_and_recovery(ck: _Checker, out: xr.Dataset, times: np.ndarray) -> None:
    """Launch position and time (not after the first cycle); recovery fix all or nothing, not
    before the last cycle; measured clock offsets finite, the recovery one only with the
    launch one and the recovery fix, their error > 0."""
    ck.values(out, "launch_lat")
    ck.values(out, "launch_lon")
    if times[0] < ck.times(out, "launch_time")[0]:
        ck.fail("time", "first cycle is before launch_time")
    have = [name in out.variables for name in _RECOVERY]
    if any(have) and not all(have):
        missing = [name for name, h in zip(_RECOVERY, have, strict=True) if not h]
        ck.fail(missing[0], "recovery_lat, recovery_lon and recovery_time go together")
    if all(have):
        ck.values(out, "recovery_lat")
        ck.values(out, "recovery_lon")
        if ck.times(out, "recovery_time")[0] < times[-1]:
            ck.fail("recovery_time", "before the last cycle; expected the surfacing time")
    for name in _CLOCK_READINGS:
        if name in out.variables:
            ck.values(out, name)
    if "clock_offset_recovery" in out.variables:
        for needed in ("clock_offset_launch", "recovery_time"):
            if needed not in out.variables:
                ck.fail(
                    "clock_offset_recovery",
                    f"a clock offset measured at recovery needs {needed}; expected both "
                    "clock_offset_launch and the recovery fix with it",
                )


def _when(value: np.datetime64) -> str:
    return np.datetime_as_string(value, unit="s")


def _check_fixes(ck: _Checker, out: xr.Dataset, times: np.ndarray) -> xr.Dataset:
    """Position fixes: all four variables or none; finite positions, errors > 0 km; times in
    increasing order, not before the launch, not after the last cycle -- except a fix at
    ``recovery_time``, which is the recovery fix listed again: it must equal it and is dropped
    (the recovery variables hold it). Returns ``out`` (without that duplicate)."""
    have = [name in out.variables for name in _FIXES]
    if not any(have):
        return out
    if not all(have):
        missing = [name for name, h in zip(_FIXES, have, strict=True) if not h]
        ck.fail(missing[0], "fix_time, fix_lat, fix_lon and fix_error go together")
    when = ck.times(out, "fix_time")
    lat, lon = ck.values(out, "fix_lat"), ck.values(out, "fix_lon")
    ck.values(out, "fix_error")
    if when.size == 0:
        return out
    back = np.diff(when) <= np.timedelta64(0, "ns")
    if back.any():
        k = _first(back) + 1
        ck.fail(
            "fix_time",
            f"fixes not in time order: fix {k} at {_when(when[k])} is not after fix {k - 1} at "
            f"{_when(when[k - 1])}; expected increasing times",
        )
    launch = ck.times(out, "launch_time")[0]
    if when[0] < launch:
        ck.fail(
            "fix_time",
            f"fix 0 at {_when(when[0])} is before launch_time ({_when(launch)})",
        )
    late = when > times[-1]
    if "recovery_time" in out:
        recovery = ck.times(out, "recovery_time")[0]
        is_recovery = when == recovery
        same = np.isclose(lat, float(out["recovery_lat"])) & np.isclose(
            lon, float(out["recovery_lon"])
        )
        if (is_recovery & late & ~same).any():
            ck.fail(
                "fix_lat",
                f"the fix at recovery_time ({_when(recovery)}) is not at the recovery position; "
                "expected the recovery fix (recovery_lat, recovery_lon) or no fix at that time",
            )
        late &= ~is_recovery
        if is_recovery.any():
            out = out.isel(fix=np.flatnonzero(~is_recovery))
    if late.any():
        k = _first(late)
        ck.fail(
            "fix_time",
            f"fix {k} at {_when(when[k])} is after the last cycle ({_when(times[-1])}); "
            "only the recovery fix (recovery_lat, recovery_lon, recovery_time) may come after it",
        )
    return out


def _check_physics(ck: _Checker, out: xr.Dataset, toa: np.ndarray) -> None:
    """Sound speed > 0; every arrival inside the listening window."""
    if "sound_speed" in out:
        ck.values(out, "sound_speed")
    if "window_length" in out:
        window = float(ck.values(out, "window_length")[0])
        max_toa = float(np.nanmax(toa))
        if max_toa > window:
            ck.fail(
                "toa",
                f"arrival at {max_toa:g} s is after the end of the listening window "
                f"(window_length = {window:g} s)",
            )


def _fill_defaults(out: xr.Dataset, toa: np.ndarray, path: PathLike | None) -> None:
    """Add the optional variables with defaults (in place): zero offsets, the default sound
    speed, a window ending at least a minute boundary after the latest TOA (a
    :class:`WindowStretchedWarning` when that is longer than the default window), no schedule.
    ``source_drift`` stays absent when absent (its default, 0, is read where it is used:
    :func:`written_offsets`), so records without drift are written as before."""
    n_src = out.sizes["source"]
    latest = 60.0 * math.ceil(float(np.nanmax(toa)) / 60.0)
    if "window_length" not in out and latest > DEFAULT_WINDOW:
        note = InputError(
            f"no window_length and an arrival at {float(np.nanmax(toa)):g} s, after the default "
            f"{DEFAULT_WINDOW:g} s window: the window is taken as {latest:g} s",
            path=path,
            field="window_length",
        )
        warnings.warn(str(note), WindowStretchedWarning, stacklevel=3)
    defaults = {
        "source_offset": ("source", np.zeros(n_src)),
        "sound_speed": ((), DEFAULT_SOUND_SPEED),
        "window_length": ((), max(DEFAULT_WINDOW, latest)),
        "source_start_time": ("source", np.full(n_src, np.datetime64("NaT", "ns"))),
        "source_end_time": ("source", np.full(n_src, np.datetime64("NaT", "ns"))),
    }
    for name, (dims, value) in defaults.items():
        if name not in out:
            out[name] = (dims, value, FLOAT_RECORD[name].attrs())


def _labels_problem(out: xr.Dataset, ck: _Checker, toa: np.ndarray) -> str | None:
    """What is wrong with ``source_label`` (present), or ``None``: it must be integer labels
    (source index, ``CLUTTER``, ``NO_ARRIVAL``) with ``NO_ARRIVAL`` exactly where ``toa`` is
    NaN, each source labelling at most one arrival per cycle and only while active."""
    problem = ck.structure_problem("source_label")
    if problem:
        return problem
    labels = np.asarray(out["source_label"].values, dtype=float)
    n_src = out.sizes["source"]
    bad = ~np.isfinite(labels) | (labels != np.round(labels)) | (labels < NO_ARRIVAL)
    bad |= labels >= n_src
    if bad.any():
        return (
            f"unknown label {labels[bad].flat[0]:g} at (cycle, rank) {_first(bad)}; "
            f"expected a source index 0..{n_src - 1}, {CLUTTER} (clutter) or "
            f"{NO_ARRIVAL} (no arrival)"
        )
    mismatch = (labels == NO_ARRIVAL) == ~np.isnan(toa)
    if mismatch.any():
        return (
            f"label {NO_ARRIVAL} (no arrival) must mark exactly the NaN TOAs; "
            f"mismatch at (cycle, rank) {_first(mismatch)}"
        )
    lab = labels.astype(np.int64)
    names = [str(v) for v in np.asarray(out["source"].values).tolist()]
    cycle, rank = np.nonzero(lab >= 0)
    counts = np.zeros((lab.shape[0], n_src), dtype=np.int64)
    np.add.at(counts, (cycle, lab[cycle, rank]), 1)
    if (counts > 1).any():
        c, i = _first(counts > 1)
        return f"cycle {c}: source {names[i]!r} labels {counts[c, i]} arrivals; at most one"
    inactive = ~active_sources(out)[cycle, lab[cycle, rank]]
    if inactive.any():
        k = int(np.argmax(inactive))
        return (
            f"cycle {cycle[k]}: labelled source {names[lab[cycle[k], rank[k]]]!r} is not "
            "active at that time (source_start_time/source_end_time)"
        )
    return None


def _check_labels(ck: _Checker, out: xr.Dataset, toa: np.ndarray, *, required: bool) -> xr.Dataset:
    """``out`` with ``source_label`` as int64, or without it when it is inconsistent and not
    ``required`` (then an :class:`InvalidLabelsWarning` says why)."""
    if "source_label" not in out:
        if required:
            ck.fail("source_label", "needed by the labels engine but absent")
        return out
    problem = _labels_problem(out, ck, toa)
    if problem is None:
        out["source_label"] = out["source_label"].astype(np.int64)
        return out
    if required:
        ck.fail("source_label", problem)
    note = InputError(
        f"{problem}; the labels are ignored (only the labels engine uses them)",
        path=ck.path,
        field="source_label",
    )
    warnings.warn(str(note), InvalidLabelsWarning, stacklevel=3)
    return out.drop_vars("source_label")


def validate_float(
    ds: xr.Dataset, path: PathLike | None = None, *, labels_required: bool = False
) -> xr.Dataset:
    """Check a float record against :data:`~rankmodels.tracking.schema.FLOAT_RECORD`; return a
    copy in canonical units with defaults filled in.

    Raises :class:`InputError` (``path: variable: what was expected``) on the first violation:
    missing variable, wrong dims or dtype, a ``units`` attribute that is not a known spelling of
    the variable's unit, non-finite or out-of-range values, TOAs not ascending within a cycle
    (NaN allowed only after the recorded arrivals) or after the window, times not increasing,
    sources without positions, position fixes out of time order, before the launch, after the
    last cycle (but for the recovery fix) or with an error that is not > 0 km. Hand labels:
    see the module docstring (``labels_required``).
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    ck = _Checker(ds, path)
    out = _canonical(ck)
    toa = _check_arrivals(ck, out)
    times = _check_cycle_times(ck, out)
    _check_sources(ck, out)
    _check_launch_and_recovery(ck, out, times)
    out = _check_fixes(ck, out, times)
    _check_physics(ck, out, toa)
    _fill_defaults(out, toa, ck.path)
    return _check_labels(ck, out, toa, required=labels_required)


#: Leading bytes of NetCDF classic (CDF\x01, \x02 64-bit offsets, \x05 CDF-5) and NetCDF4 (HDF5).
NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def read_float(path: PathLike, *, labels_required: bool = False) -> xr.Dataset:
    """Read and validate a float record (NetCDF, netCDF4 engine); data loaded into memory.

    ``labels_required``: see :func:`validate_float`. Files that do not start like a NetCDF file
    are rejected before the NetCDF/HDF5 library sees them (that C library is not hardened
    against arbitrary bytes). Numbers with time units stay numbers (``decode_timedelta=False``):
    their ``units`` attribute is interpreted by the validator."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, expected a NetCDF float record", path=path)
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head.startswith(NETCDF_MAGIC):
        hint = (
            "; CSV tables become a record with `rankmodels float import`" if _is_text(head) else ""
        )
        raise InputError(
            f"not a readable NetCDF float record (not a NetCDF or HDF5 file{hint})", path=path
        )
    try:
        with xr.open_dataset(path, engine="netcdf4", cache=False, decode_timedelta=False) as raw:
            ds = raw.load()
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, IndexError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"not a readable NetCDF float record ({reason})", path=path) from None
    if "launch_lat" not in ds and {"lat_filtered", "association"} <= set(ds.variables):
        made_from = ds.attrs.get("source_file")
        raise InputError(
            "is a track written by track-float, not a float record"
            + (f"; it was made from {made_from}" if made_from else ""),
            path=path,
        )
    ds = ds.drop_vars("trajectory", errors="ignore")  # the CF trajectory id: float_id's copy
    return validate_float(ds, path=path, labels_required=labels_required)


def _is_text(head: bytes) -> bool:
    """Whether a file's first bytes look like text (a CSV table given instead of a record)."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(text) and all(c.isprintable() or c in "\t\r\n" for c in text)


def compressed_encoding(ds: xr.Dataset) -> dict[Hashable, dict[str, object]]:
    """NetCDF4 encoding: zlib-compressed numeric arrays, NaN fill, datetimes in seconds."""
    enc: dict[Hashable, dict[str, object]] = {}
    for name, da in ds.variables.items():
        if np.issubdtype(da.dtype, np.datetime64):
            enc[name] = _TIME_ENCODING
        elif da.dtype.kind in "fiu" and da.ndim > 0:
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True}
            if da.dtype.kind == "f":
                enc[name]["_FillValue"] = np.nan
    return enc


def write_float(ds: xr.Dataset, path: PathLike, history: str = "float record") -> None:
    """Validate ``ds`` (hand labels must then be consistent, if present) and write it as a
    compressed NetCDF4 float record at ``path`` with its CF 1.8 / ACDD 1.3 metadata
    (:func:`~rankmodels.tracking.cf.conventions`; ``history``: what made it)."""
    ds = conventions(validate_float(ds, labels_required="source_label" in ds), "record", history)
    write_netcdf(ds, path, compressed_encoding(ds))


def write_truth(truth: xr.Dataset, path: PathLike, history: str = "true track") -> None:
    """Write the truth of a simulated record (``schema.TRUTH``) as NetCDF4 at ``path``, its
    per-cycle arrays compressed, with its CF 1.8 / ACDD 1.3 metadata (``history``: what made
    it)."""
    truth = conventions(truth, "truth", history)
    per_cycle = ("true_label", "lat", "lon", "multipath_delay")
    encoding: dict[Hashable, dict[str, object]] = {
        name: {"zlib": True} for name in per_cycle if name in truth
    }
    for name, da in truth.variables.items():  # CF 1.8 has no 64-bit integers: times as doubles
        if np.issubdtype(da.dtype, np.datetime64):
            encoding[name] = _TIME_ENCODING
    write_netcdf(truth, path, encoding)


def active_sources(record: xr.Dataset) -> np.ndarray:
    """``(cycle, source)`` bool: source ``i`` is transmitting at cycle ``t``
    (``source_start_time <= time <= source_end_time``, NaT = unbounded)."""
    times = np.asarray(record["time"].values).astype("datetime64[ns]")[:, None]
    start = np.asarray(record["source_start_time"].values).astype("datetime64[ns]")[None, :]
    end = np.asarray(record["source_end_time"].values).astype("datetime64[ns]")[None, :]
    return (np.isnat(start) | (start <= times)) & (np.isnat(end) | (times <= end))


def source_days(record: xr.Dataset) -> np.ndarray:
    """``(cycle, source)`` days since each source's clock reference: its deployment
    (``source_start_time``) or, for a source without one, ``launch_time``."""
    times = np.asarray(record["time"].values).astype("datetime64[ns]")[:, None]
    start = np.asarray(record["source_start_time"].values).astype("datetime64[ns]")
    launch = np.datetime64(record["launch_time"].values, "ns")
    reference = np.where(np.isnat(start), launch, start)[None, :]
    return (times - reference) / _DAY


def written_offsets(record: xr.Dataset) -> np.ndarray:
    """``(cycle, source)`` s: each source's written offset at each cycle, ``source_offset +
    source_drift * (time - reference)`` in days (:func:`source_days`): the offset the
    record states is the one at deployment, when a source's clock is set."""
    offset = np.asarray(record["source_offset"].values, dtype=np.float64)[None, :]
    if "source_drift" not in record:  # the default: no drift
        return np.repeat(offset, record.sizes["cycle"], axis=0)
    drift = np.asarray(record["source_drift"].values, dtype=np.float64)[None, :]
    return offset + drift * source_days(record)
