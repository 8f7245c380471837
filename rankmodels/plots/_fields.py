"""Reading the plotted fields out of record / track datasets (shared by the figures)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from rankmodels.plots.track_summary import attr_flag
from rankmodels.text import printable


def figure_text(value: object) -> str:
    """A user string as matplotlib text: control characters replaced
    (:func:`rankmodels.text.printable`) and ``$`` escaped, so a name never switches on
    mathtext (where ``$\\frac{$`` would even fail to draw)."""
    return printable(value).replace("$", r"\$")


def values(ds: xr.Dataset | None, name: str) -> np.ndarray | None:
    """``ds[name]`` as a float array, or None when ``ds`` or the variable is absent."""
    if ds is None or name not in ds:
        return None
    return np.asarray(ds[name].values, dtype=float)


def isolated(valid: np.ndarray) -> np.ndarray:
    """``valid`` entries with no valid neighbour: a line through them draws nothing, so the
    figures mark them (a one-cycle record, a fix between gaps)."""
    valid = np.asarray(valid, dtype=bool)
    before = np.r_[False, valid[:-1]]
    after = np.r_[valid[1:], False]
    return valid & ~before & ~after


def scalar(ds: xr.Dataset | None, name: str) -> float | None:
    """A finite scalar variable as float, else None."""
    val = values(ds, name)
    if val is None or val.size != 1 or not np.isfinite(val.item()):
        return None
    return float(val.item())


def times(ds: xr.Dataset) -> np.ndarray:
    """The ``time`` (cycle) values as datetime64[ns]."""
    if "time" not in ds.coords and "time" not in ds:
        raise ValueError("dataset has no 'time' coordinate along 'cycle'")
    return np.asarray(ds["time"].values).astype("datetime64[ns]")


def span_days(t: np.ndarray) -> float:
    """Days between the first and last valid time (0 for fewer than two)."""
    finite = t[~np.isnat(t)]
    if finite.size < 2:
        return 0.0
    return float((finite.max() - finite.min()) / np.timedelta64(1, "D"))


def time_limits(t: np.ndarray) -> tuple[np.datetime64, np.datetime64] | None:
    """(first - 12 h, last + 12 h) of the valid times, for a date axis (a one-cycle record
    sits in the middle of one day); None if there are none."""
    finite = t[~np.isnat(t)]
    if finite.size == 0:
        return None
    half_day = np.timedelta64(12, "h")
    return finite.min() - half_day, finite.max() + half_day


def title(track: xr.Dataset, record: xr.Dataset | None, what: str) -> str:
    """'RAFOS float ID: WHAT, FIRST to LAST' plus '(simulated record)' when flagged (the id as
    :func:`figure_text`)."""
    t = times(track)
    finite = t[~np.isnat(t)]
    span = ""
    if finite.size:
        span = (
            f", {np.datetime_as_string(finite.min(), unit='D')}"
            f" to {np.datetime_as_string(finite.max(), unit='D')}"
        )
    float_id = "?"
    for ds in (track, record):
        if ds is not None and "float_id" in ds.attrs:
            float_id = figure_text(ds.attrs["float_id"])
            break
    simulated = bool(attr_flag(track.attrs, "simulated")) or (
        record is not None and bool(attr_flag(record.attrs, "simulated"))
    )
    return f"RAFOS float {float_id}: {what}{span}{' (simulated record)' if simulated else ''}"
