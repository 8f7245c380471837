"""Arrivals from the layouts RAFOS float and glider decoders write.

Three readers, each returning :class:`~rankmodels.tracking.tables.Arrivals` (and, for Argo, the
surface fixes) that :func:`~rankmodels.tracking.tables.record_from_arrivals` turns into a float
record with the sources, metadata and fixes tables. Every sample holds up to six arrivals
(travel time, correlation height); they are stored ascending in time with their correlations,
samples become the record's cycles, in time order. Problems are one-line
:class:`~rankmodels.errors.InputError` s naming the file, the line or variable and what was
expected. What each layout states and what is inferred is in ``docs/tracking.md``.

* **NEMO ``.profile``** (:func:`read_nemo_profiles`): text sections ``[NAME]``; the line after
  ``[RAFOS_VALUES_FORMAT]`` names the tab-separated columns of the ``[RAFOS_VALUES]`` lines.
  Columns 2-7 are the float clock's year, month, day, hour, minute, second; by name:
  ``status``, ``1STCORHEIGHT`` .. ``6THCORHEIGHT``, ``1STTRAVELTIME`` .. ``6THTRAVELTIME`` (s),
  ``pressure`` (dbar), ``temp`` (degC), ``salinity``. Several files (one per profile) are one
  float.
* **Argo trajectory auxiliary file** (:func:`read_argo_aux`): NetCDF with ``JULD``
  (N_MEASUREMENT) and, per sample, ``RAFOS_STATUS``, six ``COR``, ``TOA`` (s) or ``RAW_TOA``
  (counts: ``TOA = RAW_TOA * 0.3075 - 80`` s, the APF11 default), optional ``PRES``, ``TEMP``,
  ``PSAL``; measurements without RAFOS data but with ``LATITUDE``/``LONGITUDE`` are surface
  (GPS) positions, which become position fixes.
* **Seaglider log ``$RAFOS`` table** (:func:`read_seaglider_logs`): lines ``$RAFOS,src,
  listen_s,listen_ms,source_s,c1,..,c6,i1,..,i6`` (integers); the listening time is ``listen_s
  + listen_ms / 1000`` s since 1970, the arrivals ``i_k * index_seconds`` s after it.

Status (NEMO ``status``, Argo ``RAFOS_STATUS``): 2 ok, 4 overlap error, 8 on-at-end error, 16
communication error, sums of these for several; samples whose status is not 2 are dropped and
counted (:attr:`Decoded.dropped`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.tables import Arrivals

__all__ = [
    "ARRIVALS_PER_SAMPLE",
    "ARGO_FIX_ERROR_KM",
    "NEMO_COLUMNS",
    "RAW_TOA_OFFSET",
    "RAW_TOA_SCALE",
    "STATUS_OK",
    "Decoded",
    "read_argo_aux",
    "read_nemo_profiles",
    "read_seaglider_logs",
]

PathLike = str | os.PathLike[str]

#: Arrivals a decoder stores per sample.
ARRIVALS_PER_SAMPLE = 6
#: RAFOS status of a good sample; the error bits are 4, 8, 16.
STATUS_OK = 2
_STATUS_BITS = 2 | 4 | 8 | 16
#: APF11 raw TOA counts to seconds: ``TOA = RAW_TOA * RAW_TOA_SCALE + RAW_TOA_OFFSET``.
RAW_TOA_SCALE = 0.3075
RAW_TOA_OFFSET = -80.0
#: Position error (km per axis) given to an Argo surface position (GPS).
ARGO_FIX_ERROR_KM = 0.1

_ORDINALS = ("1ST", "2ND", "3RD", "4TH", "5TH", "6TH")
_NEMO_COR = tuple(f"{o}CORHEIGHT" for o in _ORDINALS)
_NEMO_TOA = tuple(f"{o}TRAVELTIME" for o in _ORDINALS)
#: The named columns of a NEMO ``[RAFOS_VALUES]`` line (besides the date and time, columns 2-7).
NEMO_COLUMNS = ("status", *_NEMO_COR, *_NEMO_TOA, "pressure", "temp", "salinity")
_NEMO_SECTION = re.compile(r"^\[([A-Z0-9_]+)\]$")
_NEMO_SECTIONS = frozenset(
    (
        "FLOAT_IDENTIFICATION OVERALL_MISSION_INFORMATION DEPLOYMENT_INFO "
        "PROFILE_TECHNICAL_DATA BOTTOM_VALUES_DURING_DRIFT RAFOS_VALUES_FORMAT RAFOS_VALUES "
        "PROFILE_HEADER QUALITY_CONTROL_HEADER PROFILE_DATA_HEADER PROFILE_DATA "
        "SURFACE_GPS_DATA_FORMAT SURFACE_GPS_DATA IRIDIUM_POSITIONS_FORMAT IRIDIUM_POSITIONS "
        "IRIDIUM_DATA_FORMAT IRIDIUM_DATA STARTUP_MESSAGE SECOND_ORDER_INFORMATION"
    ).split()
)
_SEAGLIDER_COLUMNS = (
    "src",
    "listen_s",
    "listen_ms",
    "source_s",
    *(f"c{k}" for k in range(1, 7)),
    *(f"i{k}" for k in range(1, 7)),
)


@dataclass
class Decoded:
    """A decoder file's ``arrivals``, the surface ``fixes`` it holds (``fix_time``,
    ``fix_lat``, ``fix_lon``, ``fix_error`` on dim ``fix``; None: none) and how many samples
    were ``dropped`` for a bad status."""

    arrivals: Arrivals
    fixes: xr.Dataset | None
    dropped: int


def _status_ok(status: float, fail) -> bool:
    """Whether a RAFOS status is good; a value that is not a sum of the status bits fails."""
    if not (math.isfinite(status) and status == int(status) and 0 < status):
        fail(f"expected a RAFOS status (2 ok; 4, 8, 16 errors), got {status:g}")
    if int(status) & ~_STATUS_BITS:
        fail(f"expected a RAFOS status made of 2, 4, 8, 16, got {int(status)}")
    return int(status) == STATUS_OK


def _sorted_arrivals(toa: np.ndarray, cor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 6)`` travel times ascending per sample, NaN last, correlations alongside."""
    order = np.argsort(np.where(np.isnan(toa), np.inf, toa), axis=1, kind="stable")
    return np.take_along_axis(toa, order, 1), np.take_along_axis(cor, order, 1)


def _arrivals(
    time: list[np.datetime64],
    toa: list[np.ndarray],
    cor: list[np.ndarray],
    extra: dict[str, list[float]],
    path: PathLike,
    field: str,
) -> Arrivals:
    """Samples as :class:`Arrivals`, checked to be in strictly increasing time."""
    if not time:
        raise InputError("no RAFOS sample with a good status", path=path, field=field)
    times = np.array(time, dtype="datetime64[ns]")
    back = np.flatnonzero(np.diff(times) <= np.timedelta64(0, "ns"))
    if back.size:
        raise InputError(
            f"sample {back[0] + 2} at {times[back[0] + 1]} is not after the one before; "
            "expected samples in increasing time",
            path=path,
            field=field,
        )
    t, c = _sorted_arrivals(np.array(toa, dtype=float), np.array(cor, dtype=float))
    ranks = max(int(np.isfinite(t).sum(axis=1).max()), 1)  # the slots ever used
    t, c = t[:, :ranks], c[:, :ranks]
    kept = {name: np.array(v, dtype=float) for name, v in extra.items()}
    return Arrivals(times, t, None, c, {k: v for k, v in kept.items() if np.isfinite(v).any()})


# NEMO .profile ---------------------------------------------------------------------------------


def _nemo_sections(path: PathLike) -> dict[str, list[tuple[int, str]]]:
    """The lines of each section of one ``.profile`` file, with their line numbers."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current = None
    try:
        with open(path, encoding="utf-8", errors="strict") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"not a readable NEMO .profile file ({err})", path=path) from None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("["):
            match = _NEMO_SECTION.match(line)
            if not match or match.group(1) not in _NEMO_SECTIONS:
                raise InputError(
                    f"unknown section {line[:40]!r}; expected a NEMO .profile section such "
                    "as [RAFOS_VALUES_FORMAT] or [RAFOS_VALUES]",
                    path=path,
                    field=f"line {number}",
                )
            current = match.group(1)
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append((number, raw.strip("\r\n")))
        elif not line.startswith("%"):
            raise InputError(
                "data before the first section; expected a [SECTION] line",
                path=path,
                field=f"line {number}",
            )
    return sections


def _nemo_columns(path: PathLike, sections: dict[str, list[tuple[int, str]]]) -> dict[str, int]:
    """Column index of each named RAFOS column (the format line's names)."""
    fmt = sections.get("RAFOS_VALUES_FORMAT", [])
    if len(fmt) != 1:
        raise InputError(
            f"expected one column-name line in [RAFOS_VALUES_FORMAT], got {len(fmt)}",
            path=path,
            field="[RAFOS_VALUES_FORMAT]",
        )
    number, line = fmt[0]
    names = line.split("\t")
    missing = [n for n in NEMO_COLUMNS if n not in names]
    if missing or len(names) < 7:
        raise InputError(
            f"missing column {missing[0] if missing else 'date and time (columns 2-7)'}; "
            f"expected the date and time in columns 2-7 and {', '.join(NEMO_COLUMNS)}",
            path=path,
            field=f"line {number}",
        )
    return {name: names.index(name) for name in NEMO_COLUMNS} | {"": len(names)}


def _nemo_time(values: list[float], fail) -> np.datetime64:
    if not all(math.isfinite(v) and v == int(v) for v in values):
        fail("expected the date and time as whole numbers in columns 2-7 (NaN time)")
    y, mo, d, h, mi, s = (int(v) for v in values)
    try:
        day = np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}", "D")
    except ValueError:
        fail(f"expected a date in columns 2-4, got {y}-{mo}-{d}")
    if not (0 <= h < 24 and 0 <= mi < 60 and 0 <= s < 61):
        fail(f"expected a time of day in columns 5-7, got {h}:{mi}:{s}")
    return day + np.timedelta64(h * 3600 + mi * 60 + s, "s")


def read_nemo_profiles(paths: Sequence[PathLike]) -> Decoded:
    """The RAFOS samples of one float's NEMO ``.profile`` files (module docstring)."""
    time: list[np.datetime64] = []
    toa: list[np.ndarray] = []
    cor: list[np.ndarray] = []
    extra: dict[str, list[float]] = {"pressure": [], "temperature": [], "salinity": []}
    dropped = 0
    for path in paths:
        sections = _nemo_sections(path)
        col = _nemo_columns(path, sections)
        for number, line in sections.get("RAFOS_VALUES", []):
            where = f"line {number}"

            def fail(message: str, where: str = where, path: PathLike = path) -> None:
                raise InputError(message, path=path, field=where)

            cells = line.split("\t")
            if len(cells) != col[""]:
                fail(f"expected {col['']} tab-separated values, got {len(cells)}")
            try:
                values = [float(c) if c.strip() else math.nan for c in cells]
            except ValueError:
                bad = next(c for c in cells if not _is_number(c))
                fail(f"expected a number, got {bad[:20]!r}")
            t_k = np.array([values[col[n]] for n in _NEMO_TOA])
            c_k = np.array([values[col[n]] for n in _NEMO_COR])
            if np.isnan(values[1:7]).all() and np.isnan(t_k).all() and np.isnan(c_k).all():
                continue  # an empty sample (no time, no arrival), as the decoder drops it
            stamp = _nemo_time(values[1:7], fail)
            if not _status_ok(values[col["status"]], fail):
                dropped += 1
                continue
            time.append(stamp)
            toa.append(t_k)
            cor.append(c_k)
            for name, column in (("pressure", "pressure"), ("temperature", "temp")):
                extra[name].append(values[col[column]])
            extra["salinity"].append(values[col["salinity"]])
    first = paths[0] if paths else ""
    return Decoded(_arrivals(time, toa, cor, extra, first, "[RAFOS_VALUES]"), None, dropped)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# Argo trajectory auxiliary ---------------------------------------------------------------------


def _argo_var(ds: xr.Dataset, name: str, path: PathLike, dims: int) -> np.ndarray:
    if name not in ds:
        raise InputError(f"missing variable (expected {dims}-d)", path=path, field=name)
    values = np.asarray(ds[name].values, dtype=float)
    if values.ndim != dims or values.shape[0] != ds["JULD"].shape[0]:
        raise InputError(
            f"expected {dims} dims along N_MEASUREMENT, got shape {values.shape}",
            path=path,
            field=name,
        )
    if dims == 2 and values.shape[1] != ARRIVALS_PER_SAMPLE:
        raise InputError(
            f"expected {ARRIVALS_PER_SAMPLE} values per sample, got {values.shape[1]}",
            path=path,
            field=name,
        )
    return values


def read_argo_aux(path: PathLike) -> Decoded:
    """The RAFOS samples and surface positions of an Argo trajectory auxiliary file."""
    try:
        with xr.open_dataset(path, engine="netcdf4", decode_timedelta=False) as raw:
            ds = raw.load()
    except (OSError, ValueError, RuntimeError, KeyError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"not a readable Argo trajectory file ({reason})", path=path) from None
    if "JULD" not in ds or ds["JULD"].ndim != 1:
        raise InputError(
            "missing variable (expected dims (N_MEASUREMENT,))", path=path, field="JULD"
        )
    juld = np.asarray(ds["JULD"].values)
    if not np.issubdtype(juld.dtype, np.datetime64):
        raise InputError("expected CF time units (days since 1950-01-01)", path=path, field="JULD")
    cor = _argo_var(ds, "COR", path, 2)
    if "TOA" in ds:
        toa = _argo_var(ds, "TOA", path, 2)
    else:
        toa = _argo_var(ds, "RAW_TOA", path, 2) * RAW_TOA_SCALE + RAW_TOA_OFFSET
    status = _argo_var(ds, "RAFOS_STATUS", path, 1)
    extra = {
        new: (_argo_var(ds, old, path, 1) if old in ds else np.full(juld.shape, np.nan))
        for new, old in (("pressure", "PRES"), ("temperature", "TEMP"), ("salinity", "PSAL"))
    }
    rafos = ~(np.isnan(toa).all(axis=1) & np.isnan(status))
    time, toas, cors = [], [], []
    out: dict[str, list[float]] = {name: [] for name in extra}
    dropped = 0
    for i in np.flatnonzero(rafos):

        def fail(message: str, i: int = i) -> None:
            raise InputError(f"measurement {i}: {message}", path=path, field="RAFOS_STATUS")

        if np.isnat(juld[i]):
            raise InputError(f"measurement {i}: missing (NaT) time", path=path, field="JULD")
        if not _status_ok(float(status[i]), fail):
            dropped += 1
            continue
        time.append(juld[i])
        toas.append(toa[i])
        cors.append(cor[i])
        for name, values in extra.items():
            out[name].append(float(values[i]))
    arrivals = _arrivals(time, toas, cors, out, path, "JULD")
    return Decoded(arrivals, _argo_fixes(ds, juld, rafos, path), dropped)


def _argo_fixes(
    ds: xr.Dataset, juld: np.ndarray, rafos: np.ndarray, path: PathLike
) -> xr.Dataset | None:
    """The measurements without RAFOS data that have a position, as fixes."""
    if "LATITUDE" not in ds or "LONGITUDE" not in ds:
        return None
    lat = _argo_var(ds, "LATITUDE", path, 1)
    lon = _argo_var(ds, "LONGITUDE", path, 1)
    surface = ~rafos & np.isfinite(lat) & np.isfinite(lon) & ~np.isnat(juld)
    if not surface.any():
        return None
    n = int(surface.sum())
    return xr.Dataset(
        {
            "fix_time": ("fix", juld[surface].astype("datetime64[ns]")),
            "fix_lat": ("fix", lat[surface]),
            "fix_lon": ("fix", lon[surface]),
            "fix_error": ("fix", np.full(n, ARGO_FIX_ERROR_KM)),
        }
    )


# Seaglider $RAFOS ------------------------------------------------------------------------------


def read_seaglider_logs(paths: Sequence[PathLike], index_seconds: float) -> Decoded:
    """The ``$RAFOS`` rows of Seaglider dive logs (module docstring); ``index_seconds``: the
    seconds per arrival index (> 0)."""
    if not (math.isfinite(index_seconds) and index_seconds > 0):
        raise ValueError(f"index_seconds: expected a number > 0, got {index_seconds}")
    time, toa, cor = [], [], []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError as err:
            raise InputError(f"not a readable Seaglider log ({err})", path=path) from None
        for number, line in enumerate(lines, start=1):
            if not line.startswith("$RAFOS,"):
                continue
            cells = line.strip().split(",")[1:]
            where = f"line {number}"
            if len(cells) != len(_SEAGLIDER_COLUMNS):
                raise InputError(
                    f"expected {len(_SEAGLIDER_COLUMNS)} values "
                    f"({','.join(_SEAGLIDER_COLUMNS)}), got {len(cells)}",
                    path=path,
                    field=where,
                )
            if not all(re.fullmatch(r"-?[0-9]+", c.strip()) for c in cells):
                bad = next(c for c in cells if not re.fullmatch(r"-?[0-9]+", c.strip()))
                raise InputError(f"expected an integer, got {bad[:20]!r}", path=path, field=where)
            row = dict(zip(_SEAGLIDER_COLUMNS, (int(c) for c in cells), strict=True))
            if not 0 <= row["listen_ms"] < 1000:
                raise InputError(
                    f"listen_ms: expected 0 to 999, got {row['listen_ms']}", path=path, field=where
                )
            ms = row["listen_s"] * 1000 + row["listen_ms"]
            time.append(np.datetime64(ms, "ms"))
            index = np.array([row[f"i{k}"] for k in range(1, 7)], dtype=float)
            height = np.array([row[f"c{k}"] for k in range(1, 7)], dtype=float)
            none = index <= 0  # no arrival in that slot
            toa.append(np.where(none, np.nan, index * index_seconds))
            cor.append(np.where(none, np.nan, height))
    first = paths[0] if paths else ""
    return Decoded(_arrivals(time, toa, cor, {}, first, "$RAFOS"), None, 0)
