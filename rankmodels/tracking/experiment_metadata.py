"""The metadata of a real RAFOS experiment: its sound sources and its floats (no arrivals).

A metadata folder holds two CSV tables (:data:`SOURCES_FILE`, :data:`FLOATS_FILE`), as the
published Kalman-smoother code base for the DIMES and Weddell Sea floats lists them:

* **sound sources**: ``source_id``, ``lat``, ``lon`` (degrees), ``mission`` (e.g. ``DIMES``),
  ``drift`` (the source clock's drift in seconds over the deployment), ``deploy_date``,
  ``offset`` (the transmission time, seconds after midnight UTC, in ``[0, 86400)``),
  ``extraction_date`` (recovery; a year of :data:`STILL_MOORED_YEAR` or later means still
  moored when the table was written);
* **floats**: ``float_id`` (a plain name: letters, digits, ``-``, ``_``, ``.``),
  ``launch_lat``, ``launch_lon``, ``launch_date``, ``recovery_lat``, ``recovery_lon``,
  ``recovery_date`` (after the launch), ``clock_offset_initial`` and ``clock_offset_final``
  (the float clock's offset in seconds at launch and at recovery). Other columns (the dates
  as RAFOS day numbers) are ignored.

Every problem is an :class:`~rankmodels.errors.InputError` naming the file, the line and the
column, as the CSV tables of ``rankmodels float import`` are reported.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankmodels.errors import InputError
from rankmodels.tracking.simulate import MISMATCH_LIMITS
from rankmodels.tracking.tables import Cell, Table, read_table

__all__ = [
    "DIMES_METADATA",
    "FLOATS_FILE",
    "SOURCES_FILE",
    "STILL_MOORED_YEAR",
    "ExperimentMetadata",
    "FloatEntry",
    "SourceEntry",
    "read_metadata",
]

SOURCES_FILE = "sound_sources.csv"
FLOATS_FILE = "dimes_floats.csv"
#: An ``extraction_date`` in this year or later: the source was still moored.
STILL_MOORED_YEAR = 2099

_SOURCE_COLUMNS = (
    "source_id",
    "lat",
    "lon",
    "mission",
    "drift",
    "deploy_date",
    "offset",
    "extraction_date",
)
_FLOAT_COLUMNS = (
    "float_id",
    "launch_lat",
    "launch_lon",
    "launch_date",
    "recovery_lat",
    "recovery_lon",
    "recovery_date",
    "clock_offset_initial",
    "clock_offset_final",
)
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
_DAY = np.timedelta64(86_400_000_000_000, "ns")


@dataclass(frozen=True)
class SourceEntry:
    """A moored sound source: ``name``, position (degrees), ``mission``, ``drift`` (s over the
    deployment), ``deployed`` and ``recovered`` (datetime64; ``recovered`` None while still
    moored), ``transmission`` (s after midnight UTC)."""

    name: str
    lat: float
    lon: float
    mission: str
    drift: float
    deployed: np.datetime64
    transmission: float
    recovered: np.datetime64 | None

    def active_during(self, start: np.datetime64, end: np.datetime64) -> bool:
        """Whether the source was moored at some time of ``[start, end]``."""
        return bool(self.deployed <= end and (self.recovered is None or self.recovered >= start))


@dataclass(frozen=True)
class FloatEntry:
    """A real float: ``float_id``, launch and recovery position (degrees) and time
    (datetime64), float clock offset (s, ahead of true time) at launch and at recovery."""

    float_id: str
    launch_lat: float
    launch_lon: float
    launch_time: np.datetime64
    recovery_lat: float
    recovery_lon: float
    recovery_time: np.datetime64
    clock_offset_launch: float
    clock_offset_recovery: float

    @property
    def days(self) -> float:
        """Days from launch to recovery."""
        return float((self.recovery_time - self.launch_time) / _DAY)

    @property
    def clock_drift(self) -> float:
        """The float clock's drift (s/day) that takes its launch offset to its recovery
        offset: ``(offset_recovery - offset_launch) / days``."""
        return (self.clock_offset_recovery - self.clock_offset_launch) / self.days


@dataclass(frozen=True)
class ExperimentMetadata:
    """The sources and floats of the metadata tables, in table order, and the tables' paths."""

    sources: tuple[SourceEntry, ...]
    floats: tuple[FloatEntry, ...]
    sources_path: str = SOURCES_FILE
    floats_path: str = FLOATS_FILE

    def float_entry(self, float_id: str) -> FloatEntry:
        """The float named ``float_id``; InputError (field ``float``) naming the known ids."""
        for entry in self.floats:
            if entry.float_id == float_id:
                return entry
        known = ", ".join(f.float_id for f in self.floats[:5])
        more = f", ... ({len(self.floats)} floats)" if len(self.floats) > 5 else ""
        raise InputError(
            f"unknown float id {float_id!r}; the floats table has {known}{more}", field="float"
        )


def _table(path: Path, required: tuple[str, ...]) -> Table:
    table = read_table(path)
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; expected {', '.join(required)}",
            path=table.path,
            field=f"line {table.header_line}",
        )
    return table


def _degrees(cell: Cell, limit: float) -> float:
    value = cell.number()
    if not -limit <= value <= (360.0 if limit == 180.0 else limit):
        span = "[-180, 360]" if limit == 180.0 else "[-90, 90]"
        raise cell.fail(f"expected degrees in {span}, got {value:g}")
    return value


def _name(cell: Cell, seen: set[str]) -> str:
    name = cell.text.strip()
    if not _PLAIN_NAME.match(name):
        raise cell.fail(
            f"expected a plain name (letters, digits, '-', '_', '.'), got {name[:40]!r}"
        )
    if name in seen:
        raise cell.fail(f"{name!r} appears twice")
    seen.add(name)
    return name


def _read_sources(path: Path) -> tuple[SourceEntry, ...]:
    table = _table(path, _SOURCE_COLUMNS)
    seen: set[str] = set()
    sources = []
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        deployed = cells["deploy_date"].time()
        recovered = cells["extraction_date"].time()
        if recovered < deployed:
            raise cells["extraction_date"].fail("expected a date not before deploy_date")
        transmission = cells["offset"].number()
        if not 0.0 <= transmission < 86_400.0:
            raise cells["offset"].fail(
                f"expected seconds after midnight in [0, 86400), got {transmission:g}"
            )
        still_moored = recovered.astype("datetime64[Y]").astype(int) + 1970 >= STILL_MOORED_YEAR
        sources.append(
            SourceEntry(
                name=_name(cells["source_id"], seen),
                lat=_degrees(cells["lat"], 90.0),
                lon=_degrees(cells["lon"], 180.0),
                mission=cells["mission"].text.strip(),
                drift=cells["drift"].number(),
                deployed=deployed,
                transmission=transmission,
                recovered=None if still_moored else recovered,
            )
        )
    return tuple(sources)


def _within(cell: Cell, value: float, setting: str) -> None:
    """Refuse a float clock ``value`` outside the simulator's range of ``setting``."""
    lo, hi, unit, _, _ = MISMATCH_LIMITS[setting]
    if not lo <= value <= hi:
        what = "offset" if setting == "clock_offset" else "drift from launch to recovery"
        raise cell.fail(f"expected a float clock {what} in [{lo:g}, {hi:g}] {unit}, got {value:g}")


def _read_floats(path: Path) -> tuple[FloatEntry, ...]:
    table = _table(path, _FLOAT_COLUMNS)
    seen: set[str] = set()
    floats = []
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        launch, recovery = cells["launch_date"].time(), cells["recovery_date"].time()
        if recovery <= launch:
            raise cells["recovery_date"].fail("expected a date after launch_date")
        entry = FloatEntry(
            float_id=_name(cells["float_id"], seen),
            launch_lat=_degrees(cells["launch_lat"], 90.0),
            launch_lon=_degrees(cells["launch_lon"], 180.0),
            launch_time=launch,
            recovery_lat=_degrees(cells["recovery_lat"], 90.0),
            recovery_lon=_degrees(cells["recovery_lon"], 180.0),
            recovery_time=recovery,
            clock_offset_launch=cells["clock_offset_initial"].number(),
            clock_offset_recovery=cells["clock_offset_final"].number(),
        )
        for column in ("clock_offset_initial", "clock_offset_final"):
            _within(cells[column], cells[column].number(), "clock_offset")
        _within(cells["clock_offset_final"], entry.clock_drift, "clock_drift")
        floats.append(entry)
    return tuple(floats)


#: The DIMES metadata shipped with the package (a copy of the tables the README there
#: describes).
DIMES_METADATA = Path(__file__).resolve().parents[1] / "_data" / "dimes"


def read_metadata(folder: str | os.PathLike[str] | None = None) -> ExperimentMetadata:
    """The sources and floats of the metadata folder ``folder`` (module docstring); None:
    the DIMES tables shipped with the package (:data:`DIMES_METADATA`)."""
    root = DIMES_METADATA if folder is None else Path(folder)
    if not root.is_dir():
        raise InputError(f"expected a folder holding {SOURCES_FILE} and {FLOATS_FILE}", path=root)
    sources, floats = root / SOURCES_FILE, root / FLOATS_FILE
    return ExperimentMetadata(
        _read_sources(sources), _read_floats(floats), os.fspath(sources), os.fspath(floats)
    )
