"""CF 1.8 and ACDD 1.3 metadata for the files the tracker writes (float records, truths, tracks).

Each file is one CF discrete-sampling-geometry *trajectory* (CF 1.8 section 9, the single-feature
form: no instance dimension): the global attribute ``featureType = "trajectory"`` and a scalar
string variable ``trajectory`` holding the float id with ``cf_role = "trajectory_id"``; the
observations run along ``cycle``. :func:`conventions` adds, to a copy of a dataset:

* per variable: ``standard_name`` from :data:`STANDARD_NAMES` (only names of the CF standard
  name table; ``NAME_std`` becomes ``"<standard name of NAME> standard_error"``, the CF
  modifier, except for coordinates), ``coverage_content_type`` (ISO 19115-1 codes,
  :func:`coverage_content_type`), ``axis = "T"`` on ``time``, and ``flag_values`` /
  ``flag_meanings`` for the label variables (``-2`` no arrival, ``-1`` clutter, then one word
  per source) and the integer codes;
* CF-allowed integer types: ``int64``/``uint64`` variables are stored as ``int32`` (a value
  outside its range is a :class:`ValueError`);
* the ACDD global attributes: ``Conventions``, ``title``, ``summary``, ``keywords`` (kept when
  the dataset states them), ``history`` (one line appended), ``date_created``, the geospatial
  bounds (over every ``latitude``/``longitude`` variable) and the time coverage (over
  ``time``). Who made the data (``creator_*``, ``institution``, ``project``, ...) is never
  filled in: :func:`carried_attributes` copies it from an input record that states it.

New variables get their standard names by adding rows to :data:`STANDARD_NAMES` (and, for a
content type other than the file's default, to :data:`COVERAGE`).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Literal

import numpy as np
import xarray as xr

from rankmodels import __version__
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL

__all__ = [
    "CARRIED",
    "WRITTEN_ATTRIBUTES",
    "COVERAGE",
    "STANDARD_NAMES",
    "carried_attributes",
    "conventions",
    "coverage_content_type",
    "standard_name",
]

FileKind = Literal["record", "truth", "track"]

_TIMES = ("time", "launch_time", "recovery_time", "fix_time", "source_start_time")
_LATS = ("lat", "lat_filtered", "source_lat", "launch_lat", "recovery_lat", "fix_lat")
_LONS = ("lon", "lon_filtered", "source_lon", "launch_lon", "recovery_lon", "fix_lon")

#: Variable name -> CF standard name (CF standard name table, version 93).
STANDARD_NAMES: dict[str, str] = {
    **dict.fromkeys((*_TIMES, "source_end_time"), "time"),
    **dict.fromkeys(_LATS, "latitude"),
    **dict.fromkeys(_LONS, "longitude"),
    "temperature": "sea_water_temperature",
    "pressure": "sea_water_pressure",
    "salinity": "sea_water_practical_salinity",
    "sound_speed": "speed_of_sound_in_sea_water",
    "velocity_east": "eastward_sea_water_velocity",
    "velocity_north": "northward_sea_water_velocity",
}

_COORDINATE_NAMES = ("time", "latitude", "longitude")
_COORDINATES = ("time", "source", "candidate", "enu", "enu2", "iteration", "quality_check")
_REFERENCE = (
    "source_lat",
    "source_lon",
    "source_offset",
    "source_drift",
    "source_start_time",
    "source_end_time",
    "window_length",
)
_QUALITY = (
    "quality_value",
    "quality_threshold",
    "quality_passed",
    "quality_message",
    "quality_description",
    "collapsed",
)

#: ISO 19115-1 ``coverage_content_type`` of the variables whose type is not their file's
#: default (record: ``physicalMeasurement``, truth and track: ``modelResult``).
COVERAGE: dict[str, str] = {
    **dict.fromkeys(_COORDINATES, "coordinate"),
    **dict.fromkeys(_REFERENCE, "referenceInformation"),
    **dict.fromkeys(("source_label", "true_label", "association"), "thematicClassification"),
    **dict.fromkeys(_QUALITY, "qualityInformation"),
}

#: Measurements a track copies from its record.
_COPIED = ("toa", "temperature", "pressure", "fix_time", "fix_lat", "fix_lon", "fix_error")

#: The global attributes that say who made, owns or paid for the data: copied from an input
#: record that states them (:func:`carried_attributes`), never made up.
CARRIED = (
    "institution",
    "project",
    "program",
    "creator_name",
    "creator_email",
    "creator_url",
    "creator_type",
    "creator_institution",
    "contributor_name",
    "contributor_role",
    "publisher_name",
    "publisher_email",
    "publisher_url",
    "acknowledgement",
    "acknowledgment",
    "license",
    "references",
    "platform",
    "instrument",
    "wmo_platform_code",
)

#: Integer codes: variable -> (values, meanings).
_CODES: dict[str, tuple[tuple[int, ...], str]] = {
    "collapsed": ((0, 1), "particles_kept all_particles_zero_likelihood"),
    "quality_passed": ((-1, 0, 1), "not_computed failed passed"),
}
_LABELS = ("source_label", "true_label", "association")
_KEYWORDS = (
    "RAFOS, acoustic tracking, Lagrangian float, subsurface float, trajectory, "
    "time of arrival, sound source"
)
_DEFAULTS: dict[str, tuple[str, str]] = {
    "record": (
        "RAFOS float record",
        "Times of arrival of the signals of moored sound sources heard by a RAFOS float, "
        "one listening cycle a day, with the sources, launch and recovery",
    ),
    "truth": (
        "True track of a simulated RAFOS float",
        "Positions and arrival labels of a simulated RAFOS float, as simulated",
    ),
    "track": (
        "RAFOS float track",
        "Float positions and the association of arrivals to sound sources, inferred from a "
        "RAFOS float record by a particle filter and smoother (rankmodels track-float)",
    ),
}
#: The global attributes :func:`conventions` writes (``title``, ``summary``, ``keywords``: when
#: the dataset has none; ``history``: a line appended).
WRITTEN_ATTRIBUTES = (
    "Conventions",
    "featureType",
    "title",
    "summary",
    "keywords",
    "standard_name_vocabulary",
    "date_created",
    "history",
    *(f"geospatial_{axis}_{what}" for axis in ("lat", "lon") for what in ("min", "max", "units")),
    "time_coverage_start",
    "time_coverage_end",
)
_NOT_A_WORD = re.compile(r"[^A-Za-z0-9_.+@-]")


def standard_name(name: str) -> str | None:
    """The CF standard name of variable ``name``: :data:`STANDARD_NAMES`, or for ``X_std`` the
    standard name of ``X`` with the ``standard_error`` modifier (not for time, latitude and
    longitude: CF readers take any variable so named for a coordinate); ``None`` when CF has
    none."""
    if name in STANDARD_NAMES:
        return STANDARD_NAMES[name]
    base = STANDARD_NAMES.get(name[:-4]) if name.endswith("_std") else None
    if base is None or base in _COORDINATE_NAMES:
        return None
    return f"{base} standard_error"


def coverage_content_type(name: str, kind: FileKind) -> str:
    """The ISO 19115-1 ``coverage_content_type`` of variable ``name`` in a file of ``kind``:
    :data:`COVERAGE`, the measurements a track copies from its record as in the record, else
    the file's default (``physicalMeasurement`` in a record, ``modelResult`` in a truth or a
    track)."""
    if kind == "track" and name in _COPIED:
        return "physicalMeasurement"
    if name in COVERAGE:
        return COVERAGE[name]
    return "physicalMeasurement" if kind == "record" else "modelResult"


def carried_attributes(record: xr.Dataset) -> dict[str, object]:
    """The :data:`CARRIED` global attributes ``record`` states, to copy into a file made
    from it."""
    return {k: record.attrs[k] for k in CARRIED if k in record.attrs}


def flag_words(names: list[str]) -> list[str]:
    """One ``flag_meanings`` word per source name (characters outside CF's set of letters,
    digits and ``_.+@-`` become ``_``); ``source_<i>`` for all when that makes two equal."""
    words = [_NOT_A_WORD.sub("_", s) or "_" for s in names]
    return words if len(set(words)) == len(words) else [f"source_{i}" for i in range(len(words))]


def _narrowed(da: xr.DataArray, name: str) -> xr.DataArray:
    """The 64-bit integers ``da`` as ``int32`` (CF 1.8 has no 64-bit integer type)."""
    info = np.iinfo(np.int32)
    values = np.asarray(da.values)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise ValueError(f"{name}: integer values outside int32, not storable under CF 1.8")
    return da.astype(np.int32)


def _bounds(ds: xr.Dataset, std: str) -> tuple[float, float] | None:
    """(min, max) of the finite values of the variables whose standard name is ``std``."""
    parts = [
        np.asarray(v.values, dtype=float).ravel()
        for v in ds.variables.values()
        if v.attrs.get("standard_name") == std
    ]
    flat = np.concatenate(parts) if parts else np.empty(0)
    flat = flat[np.isfinite(flat)]
    return (float(flat.min()), float(flat.max())) if flat.size else None


def _iso(t: np.datetime64) -> str:
    return f"{np.datetime_as_string(t.astype('datetime64[s]'), unit='s')}Z"


def _global_attributes(
    ds: xr.Dataset, kind: FileKind, history: str, now: datetime
) -> dict[str, object]:
    title, summary = _DEFAULTS[kind]
    fid = str(ds.attrs.get("float_id", ""))
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = f"{stamp} rankmodels {__version__}: {history}"
    previous = str(ds.attrs.get("history", ""))
    out: dict[str, object] = {
        "Conventions": "CF-1.8, ACDD-1.3",
        "featureType": "trajectory",
        "title": ds.attrs.get("title") or (f"{title} {fid}" if fid else title),
        "summary": ds.attrs.get("summary") or summary,
        "keywords": ds.attrs.get("keywords") or _KEYWORDS,
        "standard_name_vocabulary": "CF Standard Name Table v93",
        "date_created": stamp,
        "history": f"{previous}\n{line}" if previous else line,
    }
    for axis, std, units in (
        ("lat", "latitude", "degrees_north"),
        ("lon", "longitude", "degrees_east"),
    ):
        bounds = _bounds(ds, std)
        if bounds is not None:
            out[f"geospatial_{axis}_min"], out[f"geospatial_{axis}_max"] = bounds
            out[f"geospatial_{axis}_units"] = units
    if "time" in ds:
        times = np.asarray(ds["time"].values).astype("datetime64[ns]")
        times = times[~np.isnat(times)]
        if times.size:
            out["time_coverage_start"] = _iso(times.min())
            out["time_coverage_end"] = _iso(times.max())
    return out


def _variable_attributes(var: xr.Variable, name: str, kind: FileKind, sources: list[str]) -> None:
    """Give ``var`` (variable ``name``) its standard name, content type and flags, in place."""
    std = standard_name(name)
    if std is not None:
        var.attrs["standard_name"] = std
    var.attrs["coverage_content_type"] = coverage_content_type(name, kind)
    if name == "time":
        var.attrs["axis"] = "T"
    if name in _LABELS:
        codes = {NO_ARRIVAL: "no_arrival", CLUTTER: "clutter"}
        codes.update(enumerate(flag_words(sources)))
        var.attrs["flag_values"] = np.array(sorted(codes), dtype=var.dtype)
        var.attrs["flag_meanings"] = " ".join(codes[k] for k in sorted(codes))
    elif name in _CODES:
        values, meanings = _CODES[name]
        var.attrs["flag_values"] = np.array(values, dtype=var.dtype)
        var.attrs["flag_meanings"] = meanings


def conventions(
    ds: xr.Dataset, kind: FileKind, history: str, now: datetime | None = None
) -> xr.Dataset:
    """A copy of ``ds`` (a float record, a truth or a track: ``kind``) with the CF 1.8 / ACDD
    1.3 metadata of the module docstring; ``history`` says what made the file (one line, stamped
    ``now``, default the current time, appended to the ``history`` attribute). Values are
    unchanged; 64-bit integers become ``int32``."""
    if kind not in _DEFAULTS:
        raise ValueError(f"kind: expected one of {sorted(_DEFAULTS)}, got {kind!r}")
    out = ds.copy()
    wide = [n for n, v in out.variables.items() if v.dtype.kind in "iu" and v.dtype.itemsize == 8]
    for name in wide:
        narrowed = _narrowed(out[name], str(name))
        out = (
            out.assign_coords({name: narrowed})
            if name in out.coords
            else out.assign({name: narrowed})
        )
    sources = [str(s) for s in out["source"].values] if "source" in out.variables else []
    for name, var in out.variables.items():
        _variable_attributes(var, str(name), kind, sources)
    fid = str(ds.attrs.get("float_id", "")) or "float"
    out["trajectory"] = ((), fid, {"cf_role": "trajectory_id", "long_name": "float identifier"})
    now = now or datetime.now(timezone.utc)
    out.attrs = {**ds.attrs, **_global_attributes(out, kind, history, now)}
    return out
