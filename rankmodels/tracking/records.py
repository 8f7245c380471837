"""Float records: read, validate and write the RAFOS float NetCDF format.

A float record holds, for every listening cycle, the first ``r`` times of arrival (TOAs) the
float heard, plus the geometry needed to predict them (see ``docs/tracking.md``, "File
formats"). :func:`validate_float` checks every variable and raises
:class:`rankmodels.errors.InputError` naming the file and the variable on the first problem;
it returns a copy with the optional variables that have defaults filled in:

============================  ==========  =============================================
variable                      dims        default when absent
============================  ==========  =============================================
``source_offset``             (source)    0 s
``sound_speed``               ()          1500 m/s
``window_length``             ()          1800 s, or more if a TOA is later (next minute)
``source_start_time``         (source)    NaT (active since before the record)
``source_end_time``           (source)    NaT (active until after the record)
============================  ==========  =============================================
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.signal_model import DEFAULT_WINDOW

__all__ = [
    "DEFAULT_SOUND_SPEED",
    "active_sources",
    "compressed_encoding",
    "read_float",
    "validate_float",
    "write_float",
]

DEFAULT_SOUND_SPEED = 1500.0  # m/s
LABEL_CLUTTER = -1
LABEL_NONE = -2

PathLike = str | os.PathLike[str]


class _Checker:
    """Raises :class:`InputError` for one record, naming its file."""

    def __init__(self, ds: xr.Dataset, path: PathLike | None) -> None:
        self.ds = ds
        self.path = path

    def fail(self, field: str, message: str) -> None:
        raise InputError(message, path=self.path, field=field)

    def var(
        self, name: str, dims: tuple[str, ...], *, required: bool = True
    ) -> xr.DataArray | None:
        if name not in self.ds.variables:
            if required:
                self.fail(name, f"missing required variable (expected dims {dims or '()'})")
            return None
        da = self.ds[name]
        if da.dims != dims:
            self.fail(name, f"expected dims {dims or '()'}, got {da.dims or '()'}")
        return da

    def numeric(self, name: str, da: xr.DataArray) -> np.ndarray:
        if not (
            np.issubdtype(da.dtype, np.number) and not np.issubdtype(da.dtype, np.complexfloating)
        ):
            self.fail(name, f"expected a real number, got dtype {da.dtype}")
        return np.asarray(da.values, dtype=float)

    def finite(
        self,
        name: str,
        values: np.ndarray,
        *,
        lo: float = -math.inf,
        hi: float = math.inf,
        strict_lo: bool = False,
    ) -> None:
        bad = ~np.isfinite(values)
        if bad.any():
            self.fail(name, f"non-finite value at index {_first(bad)}")
        below = values <= lo if strict_lo else values < lo
        if below.any():
            op = ">" if strict_lo else ">="
            self.fail(
                name,
                f"expected values {op} {lo}, got {values[below].flat[0]:g} "
                f"at index {_first(below)}",
            )
        above = values > hi
        if above.any():
            self.fail(
                name,
                f"expected values <= {hi}, got {values[above].flat[0]:g} at index {_first(above)}",
            )

    def scalar(
        self,
        name: str,
        *,
        required: bool,
        lo: float = -math.inf,
        hi: float = math.inf,
        strict_lo: bool = False,
    ) -> float | None:
        da = self.var(name, (), required=required)
        if da is None:
            return None
        value = self.numeric(name, da)
        self.finite(name, value.reshape(1), lo=lo, hi=hi, strict_lo=strict_lo)
        return float(value)

    def datetime(self, name: str, da: xr.DataArray, *, allow_nat: bool) -> np.ndarray:
        if not np.issubdtype(da.dtype, np.datetime64):
            self.fail(
                name,
                f"expected datetime64 (CF time units such as 'days since "
                f"2009-01-01'), got dtype {da.dtype}",
            )
        values = np.asarray(da.values).astype("datetime64[ns]")
        if not allow_nat and np.isnat(values).any():
            self.fail(name, f"missing (NaT) time at index {_first(np.isnat(values))}")
        return values


def _first(mask: np.ndarray) -> int | tuple[int, ...]:
    idx = np.argwhere(mask)[0]
    return int(idx[0]) if idx.size == 1 else tuple(int(i) for i in idx)


def validate_float(ds: xr.Dataset, path: PathLike | None = None) -> xr.Dataset:
    """Check a float record against the format; return a copy with defaults filled in.

    Raises :class:`InputError` (``path: variable: what was expected``) on the first violation:
    missing variable, wrong dims, non-finite or out-of-range values, TOAs not ascending within a
    cycle (NaN allowed only after the recorded arrivals), times not increasing, sources without
    positions, hand labels outside ``{-2, -1, 0, ..., s-1}`` or disagreeing with the TOAs.
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    ck = _Checker(ds, path)
    out = ds.copy()

    # --- cycles and arrivals --------------------------------------------------------------
    toa_da = ck.var("toa", ("cycle", "rank"))
    toa = ck.numeric("toa", toa_da)
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

    time_da = ck.var("time", ("cycle",))
    times = ck.datetime("time", time_da, allow_nat=False)
    if (np.diff(times) <= np.timedelta64(0, "ns")).any():
        ck.fail(
            "time",
            f"cycle times not strictly increasing at cycle "
            f"{_first(np.diff(times) <= np.timedelta64(0, 'ns')) + 1}",
        )

    # --- sources --------------------------------------------------------------------------
    if "source" not in ds.variables:
        ck.fail("source", "missing required coordinate (source names, dims ('source',))")
    src = ds["source"]
    if src.dims != ("source",):
        ck.fail("source", f"expected dims ('source',), got {src.dims}")
    names = [str(v) for v in np.asarray(src.values).tolist()]
    n_src = len(names)
    if n_src == 0:
        ck.fail("source", "no sound sources")
    if len(set(names)) != n_src:
        ck.fail("source", "source names are not unique")
    for name, lo, hi in (("source_lat", -90.0, 90.0), ("source_lon", -180.0, 360.0)):
        values = ck.numeric(name, ck.var(name, ("source",)))
        if np.isnan(values).any():
            ck.fail(name, f"source {names[_first(np.isnan(values))]!r} has no position")
        ck.finite(name, values, lo=lo, hi=hi)
    if "source_offset" in ds.variables:
        ck.finite(
            "source_offset", ck.numeric("source_offset", ck.var("source_offset", ("source",)))
        )
    else:
        out["source_offset"] = ("source", np.zeros(n_src), {"units": "s"})
    for name in ("source_start_time", "source_end_time"):
        da = ck.var(name, ("source",), required=False)
        if da is None:
            out[name] = ("source", np.full(n_src, np.datetime64("NaT", "ns")))
        else:
            ck.datetime(name, da, allow_nat=True)
    start = np.asarray(out["source_start_time"].values).astype("datetime64[ns]")
    end = np.asarray(out["source_end_time"].values).astype("datetime64[ns]")
    inverted = ~np.isnat(start) & ~np.isnat(end) & (end < start)
    if inverted.any():
        ck.fail("source_end_time", f"source {names[_first(inverted)]!r} ends before it starts")

    # --- launch, recovery, physics --------------------------------------------------------
    ck.scalar("launch_lat", required=True, lo=-90.0, hi=90.0)
    ck.scalar("launch_lon", required=True, lo=-180.0, hi=360.0)
    launch = ck.datetime("launch_time", ck.var("launch_time", ()), allow_nat=False)
    if times[0] < launch:
        ck.fail("time", "first cycle is before launch_time")
    have = [n in ds.variables for n in ("recovery_lat", "recovery_lon", "recovery_time")]
    if any(have) and not all(have):
        missing = [
            n
            for n, h in zip(("recovery_lat", "recovery_lon", "recovery_time"), have, strict=True)
            if not h
        ]
        ck.fail(missing[0], "recovery_lat, recovery_lon and recovery_time go together")
    if all(have):
        ck.scalar("recovery_lat", required=True, lo=-90.0, hi=90.0)
        ck.scalar("recovery_lon", required=True, lo=-180.0, hi=360.0)
        recovery = ck.datetime("recovery_time", ck.var("recovery_time", ()), allow_nat=False)
        if recovery < times[-1]:
            ck.fail("recovery_time", "before the last cycle; expected the surfacing time")
    speed = ck.scalar("sound_speed", required=False, lo=0.0, strict_lo=True)
    if speed is None:
        out["sound_speed"] = ((), DEFAULT_SOUND_SPEED, {"units": "m s-1"})
    window = ck.scalar("window_length", required=False, lo=0.0, strict_lo=True)
    max_toa = float(np.nanmax(toa))
    if window is None:
        default = max(DEFAULT_WINDOW, 60.0 * math.ceil(max_toa / 60.0))
        out["window_length"] = ((), default, {"units": "s"})
    elif max_toa > window:
        ck.fail(
            "toa",
            f"arrival at {max_toa:g} s is after the end of the listening window "
            f"(window_length = {window:g} s)",
        )

    # --- optional per-arrival / per-cycle extras ------------------------------------------
    labels_da = ck.var("source_label", ("cycle", "rank"), required=False)
    if labels_da is not None:
        labels = ck.numeric("source_label", labels_da)
        bad = (
            ~np.isfinite(labels)
            | (labels != np.round(labels))
            | (labels < LABEL_NONE)
            | (labels >= n_src)
        )
        if bad.any():
            ck.fail(
                "source_label",
                f"unknown label {labels[bad].flat[0]:g} at (cycle, rank) "
                f"{_first(bad)}; expected a source index 0..{n_src - 1}, "
                "-1 (clutter) or -2 (no arrival)",
            )
        mismatch = (labels == LABEL_NONE) == present
        if mismatch.any():
            ck.fail(
                "source_label",
                f"label -2 (no arrival) must mark exactly the NaN TOAs; "
                f"mismatch at (cycle, rank) {_first(mismatch)}",
            )
        out["source_label"] = labels_da.astype(np.int64)
    ck.var("correlation", ("cycle", "rank"), required=False)
    for name in ("temperature", "pressure"):
        ck.var(name, ("cycle",), required=False)
    return out


#: Leading bytes of NetCDF classic (CDF\x01, \x02 64-bit offsets, \x05 CDF-5) and NetCDF4 (HDF5).
_NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def read_float(path: PathLike) -> xr.Dataset:
    """Read and validate a float record (NetCDF, netCDF4 engine); data loaded into memory.

    Files that do not start like a NetCDF file are rejected before the NetCDF/HDF5 library
    sees them (that C library is not hardened against arbitrary bytes)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, expected a NetCDF float record", path=path)
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head.startswith(_NETCDF_MAGIC):
        raise InputError(
            "not a readable NetCDF float record (not a NetCDF or HDF5 file)", path=path
        )
    try:
        with xr.open_dataset(path, engine="netcdf4", cache=False) as raw:
            ds = raw.load()
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, IndexError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"not a readable NetCDF float record ({reason})", path=path) from None
    return validate_float(ds, path=path)


def compressed_encoding(ds: xr.Dataset) -> dict[Hashable, dict[str, object]]:
    """NetCDF4 encoding: zlib-compressed numeric arrays, NaN fill, datetimes in seconds."""
    enc: dict[Hashable, dict[str, object]] = {}
    for name, da in ds.variables.items():
        if np.issubdtype(da.dtype, np.datetime64):
            enc[name] = {"units": "seconds since 1970-01-01", "dtype": "float64"}
        elif da.dtype.kind in "fiu" and da.ndim > 0:
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True}
            if da.dtype.kind == "f":
                enc[name]["_FillValue"] = np.nan
    return enc


def write_float(ds: xr.Dataset, path: PathLike) -> None:
    """Validate ``ds`` and write it as a compressed NetCDF4 float record at ``path``."""
    ds = validate_float(ds)
    ds.to_netcdf(os.fspath(path), engine="netcdf4", encoding=compressed_encoding(ds))


def active_sources(record: xr.Dataset) -> np.ndarray:
    """``(cycle, source)`` bool: source ``i`` is transmitting at cycle ``t``
    (``source_start_time <= time <= source_end_time``, NaT = unbounded)."""
    times = np.asarray(record["time"].values).astype("datetime64[ns]")[:, None]
    start = np.asarray(record["source_start_time"].values).astype("datetime64[ns]")[None, :]
    end = np.asarray(record["source_end_time"].values).astype("datetime64[ns]")[None, :]
    return (np.isnat(start) | (start <= times)) & (np.isnat(end) | (times <= end))
