"""Float records from and to the plain CSV tables analysts export from other tools.

Three tables make a record, a fourth adds position fixes (format
:data:`rankmodels.tracking.schema.FLOAT_RECORD`):

* **TOA table**, one of two layouts (told apart by the header):

  - *wide*: ``time`` and one column per rank, ``toa_1 .. toa_R`` (also ``toa1``), one row per
    listening cycle, an empty cell where fewer arrivals were recorded; optional per-rank
    ``label_K`` (hand labels: source index, -1 clutter) and ``correlation_K``, and per-cycle
    ``temperature`` and ``pressure`` columns;
  - *long*: ``time``, ``toa`` and optional ``label``, ``correlation``: one row per arrival,
    the rows of a cycle share its time (a row with an empty ``toa`` is a cycle without
    arrivals). Cycles must come in time order.

  The arrivals of a cycle are put in ascending order (with their labels); ranks without an
  arrival get NaN TOA and label -2.
* **Sources table**: ``name``, ``lat``, ``lon`` (degrees) and optional ``offset`` (s, empty =
  0), ``drift`` (the source clock's drift, s/day since ``start`` or, without one, the launch;
  empty = 0), ``start`` and ``end`` (active period, empty = unbounded), one row per source.
* **Fixes table** (optional): ``time``, ``lat``, ``lon``, ``error`` (km, > 0: the fix's
  standard deviation per axis), one row per position fix (GPS at a surfacing), in time
  order.
* **Metadata** ``key=value`` (the ``--meta`` options, or the rows ``key,value`` of a metadata
  table): ``launch_lat``, ``launch_lon``, ``launch_time`` (required), ``recovery_lat``,
  ``recovery_lon``, ``recovery_time`` (all or none), ``sound_speed`` (m/s), ``window_length``
  (s), the float clock offsets measured against GPS at launch and recovery
  ``clock_offset_launch``, ``clock_offset_recovery`` and their error ``clock_offset_error``
  (s), ``float_id``, and ``attr:NAME`` for any other global attribute (numbers stay numbers).

Times are ISO 8601 (``2009-01-23``, ``2009-01-23T06:00:00``, a space for the ``T``, fractional
seconds), in UTC; numbers are plain decimals. Every problem in a table is an
:class:`~rankmodels.errors.InputError` naming the file, the line and the column (``toa.csv:
line 7, column 3 (toa_2): expected a number, got 'abc'``); the assembled record then goes
through :func:`~rankmodels.tracking.records.validate_float`. :func:`export_tables` writes the
wide TOA table, the sources table, the metadata table and, when the record has fixes, the fixes
table of a record; reading them back gives the same record.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.files import atomic_output
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.schema import FLOAT_RECORD, NO_ARRIVAL, annotate

__all__ = [
    "FIX_COLUMNS",
    "META_KEYS",
    "SOURCE_COLUMNS",
    "TABLE_FILES",
    "export_tables",
    "parse_meta",
    "read_fixes_table",
    "read_meta_table",
    "read_sources_table",
    "read_toa_table",
    "record_from_arrivals",
    "record_from_tables",
]

PathLike = str | os.PathLike[str]

SOURCE_COLUMNS = ("name", "lat", "lon", "offset", "drift", "start", "end")
"""Columns of the sources table (the first three required)."""
FIX_COLUMNS = ("time", "lat", "lon", "error")
"""Columns of the fixes table (all required)."""
META_KEYS: dict[str, str] = {
    "float_id": "name",
    "launch_lat": "real",
    "launch_lon": "real",
    "launch_time": "time",
    "recovery_lat": "real",
    "recovery_lon": "real",
    "recovery_time": "time",
    "sound_speed": "real",
    "window_length": "real",
    "clock_offset_launch": "real",
    "clock_offset_recovery": "real",
    "clock_offset_error": "real",
}
"""Metadata keys and their kinds (besides ``attr:NAME``)."""
ATTR_PREFIX = "attr:"
TABLE_FILES = {
    "toa": "toa.csv",
    "sources": "sources.csv",
    "meta": "meta.csv",
    "fixes": "fixes.csv",
}
"""File names :func:`export_tables` writes (``fixes.csv`` only for a record with fixes)."""

_RANK_COLUMN = re.compile(r"^(toa|label|correlation)_?([0-9]+)$")
_PER_CYCLE = ("temperature", "pressure")
_LONG_OPTIONAL = ("label", "correlation")
_TIME_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?Z?$")


# --------------------------------------------------------------------------------------------
# reading cells
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One cell of a table: its text and where it is (1-based line and column)."""

    path: str
    line: int
    column: int
    name: str
    text: str

    def fail(self, message: str) -> InputError:
        return InputError(
            message, path=self.path, field=f"line {self.line}, column {self.column} ({self.name})"
        )

    @property
    def empty(self) -> bool:
        return self.text.strip() == ""

    def number(self, *, missing_ok: bool = False) -> float:
        """The cell as a finite float; NaN for an empty cell when ``missing_ok``."""
        text = self.text.strip()
        if not text:
            if missing_ok:
                return math.nan
            raise self.fail("expected a number, got an empty cell")
        try:
            value = float(text)
        except ValueError:
            raise self.fail(f"expected a number, got {_shown(text)}") from None
        if not math.isfinite(value):
            raise self.fail(f"expected a finite number, got {_shown(text)}")
        return value

    def whole(self, *, missing_ok: bool = False) -> int | None:
        """The cell as an integer (``3`` or ``3.0``); None for an empty cell when
        ``missing_ok``."""
        value = self.number(missing_ok=missing_ok)
        if math.isnan(value):
            return None
        if value != round(value) or abs(value) > 2**31:
            raise self.fail(f"expected a whole number, got {_shown(self.text.strip())}")
        return int(value)

    def time(self, *, missing_ok: bool = False) -> np.datetime64:
        """The cell as an ISO 8601 UTC time (``datetime64[ns]``); NaT for an empty cell when
        ``missing_ok``."""
        return parse_time(self.text, self.fail, missing_ok=missing_ok)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def parse_time(text: str, fail, *, missing_ok: bool = False) -> np.datetime64:
    """``datetime64[ns]`` of an ISO 8601 date or date-time (UTC; ``T`` or a space between date
    and time; a trailing ``Z`` allowed); ``fail(message)`` builds the error to raise."""
    text = text.strip()
    if not text:
        if missing_ok:
            return np.datetime64("NaT", "ns")
        raise fail("expected an ISO 8601 time such as 2009-01-23T06:00:00, got an empty cell")
    if not _TIME_TEXT.match(text):
        raise fail(f"expected an ISO 8601 time such as 2009-01-23T06:00:00, got {_shown(text)}")
    try:
        return np.datetime64(text.rstrip("Z").replace(" ", "T"), "ns")
    except ValueError:
        raise fail(f"not a valid date or time: {_shown(text)}") from None


def _rows(path: PathLike) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of each non-blank, non-comment (``#``) row of a CSV file (UTF-8, an
    optional byte-order mark); errors name the line."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except IsADirectoryError:
        raise InputError("is a directory, expected a CSV table", path=name) from None
    except FileNotFoundError:
        raise InputError("no such file", path=name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError("not UTF-8 text", path=name, field=f"line {line}") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError("NUL character: not a CSV text table", path=name, field=f"line {line}")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    try:
        for fields in reader:
            if any(f.strip() for f in fields) and not fields[0].lstrip().startswith("#"):
                yield start, fields
            start = reader.line_num + 1
    except csv.Error as err:
        raise InputError(f"malformed CSV ({err})", path=name, field=f"line {start}") from None


@dataclass
class Table:
    """A CSV table: its header (lower-cased, stripped) and rows of cells."""

    path: str
    columns: list[str]
    header_line: int
    rows: list[tuple[int, list[str]]]

    def cells(self, line: int, fields: list[str]) -> dict[str, Cell]:
        if len(fields) != len(self.columns):
            raise InputError(
                f"{len(fields)} fields, expected {len(self.columns)} (as in the header)",
                path=self.path,
                field=f"line {line}",
            )
        return {
            name: Cell(self.path, line, k + 1, name, text)
            for k, (name, text) in enumerate(zip(self.columns, fields, strict=True))
        }


def read_table(path: PathLike) -> Table:
    """The header and rows of a CSV table; refuses an empty table, empty or repeated column
    names."""
    name = os.fspath(path)
    rows = list(_rows(name))
    if not rows:
        raise InputError("empty table, expected a header line and rows", path=name)
    header_line, header = rows[0]
    columns = [h.strip().lower() for h in header]
    for k, column in enumerate(columns):
        where = f"line {header_line}, column {k + 1}"
        if not column:
            raise InputError("empty column name in the header", path=name, field=where)
        if column in columns[:k]:
            raise InputError(f"column {column!r} appears twice", path=name, field=where)
    if len(rows) == 1:
        raise InputError("no rows after the header", path=name, field=f"line {header_line}")
    return Table(name, columns, header_line, rows[1:])


def _unknown_column(table: Table, column: str, expected: str) -> InputError:
    k = table.columns.index(column)
    return InputError(
        f"unknown column {_shown(column)}; expected {expected}",
        path=table.path,
        field=f"line {table.header_line}, column {k + 1}",
    )


# --------------------------------------------------------------------------------------------
# the TOA table
# --------------------------------------------------------------------------------------------


@dataclass
class Arrivals:
    """What a TOA table holds, for ``T`` cycles and ``R`` ranks: ``time (T,)``,
    ``toa (T, R)`` ascending within a cycle then NaN, ``label (T, R)`` or None (-2 where no
    arrival), ``correlation (T, R)`` or None, per-cycle ``extra`` variables ``(T,)``."""

    time: np.ndarray
    toa: np.ndarray
    label: np.ndarray | None
    correlation: np.ndarray | None
    extra: dict[str, np.ndarray]


def read_toa_table(path: PathLike) -> Arrivals:
    """The arrivals of a TOA table, wide or long (module docstring): a header with a ``toa``
    column is long, one with ``toa_1 ..`` columns wide."""
    table = read_table(path)
    if "time" not in table.columns:
        raise InputError(
            "no 'time' column in the header", path=table.path, field=f"line {table.header_line}"
        )
    if "toa" in table.columns:
        return _long_arrivals(table)
    return _wide_arrivals(table)


def _rank_columns(table: Table) -> dict[str, list[str]]:
    """Per kind (toa, label, correlation) its rank columns in rank order; others refused."""
    ranks: dict[str, dict[int, str]] = {"toa": {}, "label": {}, "correlation": {}}
    for column in table.columns:
        match = _RANK_COLUMN.match(column)
        if match:
            ranks[match.group(1)][int(match.group(2))] = column
        elif column not in ("time", *_PER_CYCLE):
            raise _unknown_column(
                table, column, "time, toa_1 .. toa_R, label_K, correlation_K, temperature, pressure"
            )
    toa = ranks["toa"]
    if not toa:
        raise InputError(
            "no arrival columns: expected toa_1 .. toa_R (wide) or toa (long)",
            path=table.path,
            field=f"line {table.header_line}",
        )
    if sorted(toa) != list(range(1, len(toa) + 1)):
        raise InputError(
            f"rank columns {sorted(toa)}: expected toa_1 .. toa_{len(toa)} without gaps",
            path=table.path,
            field=f"line {table.header_line}",
        )
    out = {"toa": [toa[k] for k in sorted(toa)]}
    for kind in ("label", "correlation"):
        if ranks[kind]:
            if sorted(ranks[kind]) != sorted(toa):
                raise InputError(
                    f"{kind} columns for ranks {sorted(ranks[kind])}, expected one for each "
                    f"of ranks 1 .. {len(toa)}",
                    path=table.path,
                    field=f"line {table.header_line}",
                )
            out[kind] = [ranks[kind][k] for k in sorted(toa)]
    return out


def _wide_arrivals(table: Table) -> Arrivals:
    columns = _rank_columns(table)
    n, r = len(table.rows), len(columns["toa"])
    time = np.empty(n, dtype="datetime64[ns]")
    toa = np.full((n, r), np.nan)
    label = np.full((n, r), NO_ARRIVAL, dtype=np.int64) if "label" in columns else None
    corr = np.full((n, r), np.nan) if "correlation" in columns else None
    extra = {name: np.full(n, np.nan) for name in _PER_CYCLE if name in table.columns}
    for i, (line, fields) in enumerate(table.rows):
        cells = table.cells(line, fields)
        time[i] = _next_time(cells["time"], time[i - 1] if i else None, strict=True)
        for name, values in extra.items():
            values[i] = cells[name].number(missing_ok=True)
        row = [_arrival(cells, columns, k) for k in range(r)]
        row = sorted((a for a in row if a is not None), key=lambda a: a[0])
        for k, (t, lab, c) in enumerate(row):
            toa[i, k] = t
            if label is not None:
                label[i, k] = lab
            if corr is not None:
                corr[i, k] = c
    return Arrivals(time, toa, label, corr, extra)


def _arrival(
    cells: Mapping[str, Cell], columns: Mapping[str, list[str]], k: int
) -> tuple[float, int, float] | None:
    """(toa, label, correlation) of rank ``k`` of a wide row; None for an empty TOA cell (its
    label and correlation must be empty too)."""
    toa_cell = cells[columns["toa"][k]]
    others = [cells[columns[kind][k]] for kind in ("label", "correlation") if kind in columns]
    if toa_cell.empty:
        for cell in others:
            if not cell.empty:
                raise cell.fail(f"a value where {toa_cell.name} is empty (no arrival)")
        return None
    label = cells[columns["label"][k]] if "label" in columns else None
    corr = cells[columns["correlation"][k]] if "correlation" in columns else None
    return (
        _toa(toa_cell),
        _label(label) if label is not None else NO_ARRIVAL,
        corr.number(missing_ok=True) if corr is not None else math.nan,
    )


def _toa(cell: Cell) -> float:
    value = cell.number()
    if value < 0:
        raise cell.fail(f"expected an arrival time >= 0 s, got {value:g}")
    return value


def _label(cell: Cell) -> int:
    value = cell.whole()
    assert value is not None
    if value < -1:
        raise cell.fail(f"expected a source index >= 0 or -1 (clutter), got {value}")
    return value


_PLURAL = {"cycle": "cycles", "fix": "fixes"}


def _next_time(
    cell: Cell, previous: np.datetime64 | None, *, strict: bool, what: str = "cycle"
) -> np.datetime64:
    """The time of a ``what`` (cycle, fix) in ``cell``, after ``previous`` (strictly, or not
    before it)."""
    value = cell.time()
    if previous is not None and (value <= previous if strict else value < previous):
        shown = np.datetime_as_string(previous, unit="s")
        raise cell.fail(
            f"time is {'not after' if strict else 'before'} the previous {what}'s ({shown}); "
            f"{_PLURAL[what]} must be in increasing time order"
        )
    return value


def _long_arrivals(table: Table) -> Arrivals:
    for column in table.columns:
        if column not in ("time", "toa", *_LONG_OPTIONAL):
            raise _unknown_column(table, column, "time, toa, label, correlation (long layout)")
    cycles: list[np.datetime64] = []
    arrivals: list[list[tuple[float, int, float]]] = []
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        when = _next_time(cells["time"], cycles[-1] if cycles else None, strict=False)
        if not cycles or when != cycles[-1]:
            cycles.append(when)
            arrivals.append([])
        if cells["toa"].empty:
            for name in _LONG_OPTIONAL:
                if name in cells and not cells[name].empty:
                    raise cells[name].fail("a value where toa is empty (no arrival)")
            continue
        arrivals[-1].append(
            (
                _toa(cells["toa"]),
                _label(cells["label"]) if "label" in cells else NO_ARRIVAL,
                cells["correlation"].number(missing_ok=True)
                if "correlation" in cells
                else math.nan,
            )
        )
    n, r = len(cycles), max(1, max(len(a) for a in arrivals))
    toa = np.full((n, r), np.nan)
    label = np.full((n, r), NO_ARRIVAL, dtype=np.int64)
    corr = np.full((n, r), np.nan)
    for i, row in enumerate(arrivals):
        for k, (t, lab, c) in enumerate(sorted(row, key=lambda a: a[0])):
            toa[i, k], label[i, k], corr[i, k] = t, lab, c
    return Arrivals(
        np.array(cycles, dtype="datetime64[ns]"),
        toa,
        label if "label" in table.columns else None,
        corr if "correlation" in table.columns else None,
        {},
    )


# --------------------------------------------------------------------------------------------
# the sources table and the metadata
# --------------------------------------------------------------------------------------------


def read_sources_table(path: PathLike) -> xr.Dataset:
    """The sources of a sources table as the record's ``source`` variables (``source_lat``,
    ``source_lon``, ``source_offset``, ``source_drift`` (only with a ``drift`` column),
    ``source_start_time``, ``source_end_time``)."""
    table = read_table(path)
    for column in table.columns:
        if column not in SOURCE_COLUMNS:
            raise _unknown_column(table, column, ", ".join(SOURCE_COLUMNS))
    for column in SOURCE_COLUMNS[:3]:
        if column not in table.columns:
            raise InputError(
                f"no {column!r} column in the header (needs name, lat, lon)",
                path=table.path,
                field=f"line {table.header_line}",
            )
    names: list[str] = []
    values: dict[str, list] = {c: [] for c in SOURCE_COLUMNS[1:]}
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        name = cells["name"].text.strip()
        if not name:
            raise cells["name"].fail("expected a source name, got an empty cell")
        if name in names:
            raise cells["name"].fail(f"source {_shown(name)} appears twice")
        names.append(name)
        values["lat"].append(_in_range(cells["lat"], -90.0, 90.0))
        values["lon"].append(_in_range(cells["lon"], -180.0, 360.0))
        for key in ("offset", "drift"):
            value = cells[key].number(missing_ok=True) if key in cells else math.nan
            values[key].append(0.0 if math.isnan(value) else value)
        for key in ("start", "end"):
            missing = np.datetime64("NaT", "ns")
            values[key].append(cells[key].time(missing_ok=True) if key in cells else missing)
        if not (np.isnat(values["start"][-1]) or np.isnat(values["end"][-1])):
            if values["end"][-1] < values["start"][-1]:
                raise cells["end"].fail("the end of the active period is before its start")
    drift = {"source_drift": ("source", np.array(values["drift"]))}
    return xr.Dataset(
        {
            "source_lat": ("source", np.array(values["lat"])),
            "source_lon": ("source", np.array(values["lon"])),
            "source_offset": ("source", np.array(values["offset"])),
            **(drift if "drift" in table.columns else {}),
            "source_start_time": ("source", np.array(values["start"], dtype="datetime64[ns]")),
            "source_end_time": ("source", np.array(values["end"], dtype="datetime64[ns]")),
        },
        coords={"source": ("source", names)},
    )


def read_fixes_table(path: PathLike) -> xr.Dataset:
    """The position fixes of a fixes table (:data:`FIX_COLUMNS`) as the record's ``fix_time``,
    ``fix_lat``, ``fix_lon`` and ``fix_error`` variables; times must increase, errors be > 0
    km. Whether the fixes fit the record (not before the launch, not after the last cycle) is
    :func:`~rankmodels.tracking.records.validate_float`'s to say."""
    table = read_table(path)
    for column in table.columns:
        if column not in FIX_COLUMNS:
            raise _unknown_column(table, column, ", ".join(FIX_COLUMNS))
    for column in FIX_COLUMNS:
        if column not in table.columns:
            raise InputError(
                f"no {column!r} column in the header (needs {', '.join(FIX_COLUMNS)})",
                path=table.path,
                field=f"line {table.header_line}",
            )
    values: dict[str, list] = {c: [] for c in FIX_COLUMNS}
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        previous = values["time"][-1] if values["time"] else None
        values["time"].append(_next_time(cells["time"], previous, strict=True, what="fix"))
        values["lat"].append(_in_range(cells["lat"], -90.0, 90.0))
        values["lon"].append(_in_range(cells["lon"], -180.0, 360.0))
        error = cells["error"].number()
        if not error > 0:
            raise cells["error"].fail(f"expected a position error > 0 km, got {error:g}")
        values["error"].append(error)
    return xr.Dataset(
        {
            "fix_time": ("fix", np.array(values["time"], dtype="datetime64[ns]")),
            "fix_lat": ("fix", np.array(values["lat"])),
            "fix_lon": ("fix", np.array(values["lon"])),
            "fix_error": ("fix", np.array(values["error"])),
        }
    )


def _in_range(cell: Cell, lo: float, hi: float) -> float:
    value = cell.number()
    if not lo <= value <= hi:
        raise cell.fail(f"expected degrees in [{lo:g}, {hi:g}], got {value:g}")
    return value


def parse_meta(items: Iterable[tuple[str, str, str]]) -> dict[str, object]:
    """Metadata ``(where, key, value)`` triples (module docstring) parsed: reals, times, the
    float id and ``attr:NAME`` attributes (an integer or a real when the text is one, else the
    text). ``where`` says in errors where the pair came from (``--meta``,
    ``meta.csv: line 3``)."""
    out: dict[str, object] = {}
    for where, raw_key, text in items:
        key = raw_key.strip()

        def fail(message: str, where: str = where, key: str = key) -> InputError:
            return InputError(message, field=f"{where} {_shown(key)}")

        if key in out:
            raise fail("given twice")
        if key.startswith(ATTR_PREFIX) and len(key) > len(ATTR_PREFIX):
            out[key] = _attribute_value(text)
        elif META_KEYS.get(key) == "real":
            try:
                out[key] = Cell("", 0, 0, key, text).number()
            except InputError as err:
                raise fail(err.message) from None
        elif META_KEYS.get(key) == "time":
            out[key] = parse_time(text, fail)
        elif META_KEYS.get(key) == "name":
            out[key] = text.strip()
        else:
            raise fail(f"unknown key; expected one of {', '.join(META_KEYS)} or {ATTR_PREFIX}NAME")
    for key in ("launch_lat", "launch_lon", "launch_time"):
        if key not in out:
            raise InputError(f"missing; give --meta {key}=VALUE or a metadata table row", field=key)
    given = [k for k in ("recovery_lat", "recovery_lon", "recovery_time") if k in out]
    if given and len(given) != 3:
        raise InputError(
            f"the recovery fix needs recovery_lat, recovery_lon and recovery_time; "
            f"only {', '.join(given)} given",
            field=given[0],
        )
    return out


def _attribute_value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_meta_table(path: PathLike) -> list[tuple[str, str, str]]:
    """The ``(where, key, value)`` rows of a metadata table (header ``key,value``) for
    :func:`parse_meta`, ``where`` naming the file and line."""
    table = read_table(path)
    if table.columns != ["key", "value"]:
        raise InputError(
            f"header {_shown(','.join(table.columns))}: expected key,value",
            path=table.path,
            field=f"line {table.header_line}",
        )
    out = []
    for line, fields in table.rows:
        cells = table.cells(line, fields)
        out.append((f"{table.path}: line {line}", cells["key"].text, cells["value"].text))
    return out


# --------------------------------------------------------------------------------------------
# record <-> tables
# --------------------------------------------------------------------------------------------


def record_from_tables(
    toa_path: PathLike,
    sources_path: PathLike,
    meta: Mapping[str, object],
    fixes_path: PathLike | None = None,
) -> xr.Dataset:
    """The validated float record of a TOA table, a sources table, the parsed metadata
    (:func:`parse_meta`) and, optionally, a fixes table. Problems the tables cannot show line
    by line (a TOA after the listening window, a launch after the first cycle, labels of
    unknown sources, a fix before the launch or after the last cycle) are :class:`InputError`
    s of :func:`~rankmodels.tracking.records.validate_float` naming the TOA table and the
    variable."""
    return record_from_arrivals(read_toa_table(toa_path), toa_path, sources_path, meta, fixes_path)


def record_from_arrivals(
    arrivals: Arrivals,
    arrivals_path: PathLike,
    sources_path: PathLike,
    meta: Mapping[str, object],
    fixes_path: PathLike | None = None,
    fixes: xr.Dataset | None = None,
) -> xr.Dataset:
    """The validated float record of ``arrivals`` (read from ``arrivals_path``, the file
    problems of the assembled record are named after), a sources table, the parsed metadata,
    optionally a fixes table and further ``fixes`` (``fix_*`` on dim ``fix``; merged with the
    table's in time order)."""
    sources = read_sources_table(sources_path)
    tabled = read_fixes_table(fixes_path) if fixes_path is not None else None
    parts = [f for f in (tabled, fixes) if f is not None]
    if parts:
        merged = xr.concat(parts, dim="fix") if len(parts) > 1 else parts[0]
        sources = sources.merge(merged.sortby("fix_time"))
    ds = sources.assign(
        toa=(("cycle", "rank"), arrivals.toa),
        time=("cycle", arrivals.time),
    ).set_coords("time")
    if arrivals.label is not None:
        ds["source_label"] = (("cycle", "rank"), arrivals.label)
    if arrivals.correlation is not None:
        ds["correlation"] = (("cycle", "rank"), arrivals.correlation)
    for name, values in arrivals.extra.items():
        ds[name] = ("cycle", values)
    for key, value in meta.items():
        if key.startswith(ATTR_PREFIX):
            ds.attrs[key[len(ATTR_PREFIX) :]] = value
        elif key == "float_id":
            ds.attrs["float_id"] = value
        else:
            ds[key] = ((), value)
    record = validate_float(ds, path=os.fspath(arrivals_path), labels_required="source_label" in ds)
    return annotate(record, FLOAT_RECORD)


def _time_text(values: np.ndarray) -> list[str]:
    """ISO 8601 texts (empty for NaT) in the coarsest of s, ms, us, ns that is exact."""
    values = np.asarray(values).astype("datetime64[ns]")
    ok = ~np.isnat(values)
    ns = values[ok].astype(np.int64)
    unit = next(
        (u for u, step in (("s", 10**9), ("ms", 10**6), ("us", 10**3)) if (ns % step == 0).all()),
        "ns",
    )
    text = np.datetime_as_string(values, unit=unit)
    return [str(t) if good else "" for t, good in zip(text, ok, strict=True)]


def _number_text(value: float | np.floating) -> str:
    """Shortest text that reads back as the same number in its own precision (a float32
    ``224.75424``, not its float64 widening ``224.75424194335938``); empty for NaN."""
    if math.isnan(value):
        return ""
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        return str(value)  # numpy prints the shortest round-tripping text of its precision
    return repr(float(value))


def export_tables(record: xr.Dataset, out: PathLike) -> list[str]:
    """Write the tables of a float record (validated first) into folder ``out``:
    :data:`TABLE_FILES` -- the wide TOA table (with ``label_K``, ``correlation_K``,
    ``temperature`` and ``pressure`` when the record has them), the sources table, the
    metadata table (the scalars, ``float_id`` and every other global attribute as
    ``attr:NAME``) and, when the record has position fixes, the fixes table. Files are
    written atomically; returns their names."""
    record = validate_float(record, labels_required="source_label" in record)
    folder = Path(out)
    toa = np.asarray(record["toa"].values)
    n, r = toa.shape
    per_rank = {"toa": toa}
    if "source_label" in record:
        per_rank["label"] = np.asarray(record["source_label"].values)
    if "correlation" in record:
        per_rank["correlation"] = np.asarray(record["correlation"].values)
    extra = [name for name in _PER_CYCLE if name in record]
    header = ["time"]
    for kind in per_rank:
        header += [f"{kind}_{k + 1}" for k in range(r)]
    header += extra
    times = _time_text(record["time"].values)
    rows = []
    recorded = np.isfinite(toa)
    for i in range(n):
        row = [times[i]]
        for kind, values in per_rank.items():
            if kind == "label":
                row += [str(int(v)) if recorded[i, k] else "" for k, v in enumerate(values[i])]
            else:
                row += [_number_text(v) if recorded[i, k] else "" for k, v in enumerate(values[i])]
        row += [_number_text(record[name].values[i]) for name in extra]
        rows.append(row)
    _write_csv(folder / TABLE_FILES["toa"], header, rows)

    numbers = ["source_lat", "source_lon", "source_offset", "source_drift"]
    numbers = [n for n in numbers if n in record]  # a drift column only for a record with one
    columns = [c for c in SOURCE_COLUMNS if c != "drift" or "source_drift" in record]
    starts = _time_text(record["source_start_time"].values)
    ends = _time_text(record["source_end_time"].values)
    source_rows = [
        [str(name), *(_number_text(record[n].values[k]) for n in numbers)] + [starts[k], ends[k]]
        for k, name in enumerate(record["source"].values)
    ]
    _write_csv(folder / TABLE_FILES["sources"], columns, source_rows)

    meta: list[list[str]] = []
    for key, kind in META_KEYS.items():
        if key == "float_id":
            if "float_id" in record.attrs:
                meta.append([key, str(record.attrs["float_id"])])
        elif key in record:
            value = record[key].values
            text = _time_text(value[None])[0] if kind == "time" else _number_text(value[()])
            meta.append([key, text])
    for name, value in record.attrs.items():
        if name != "float_id":
            meta.append([f"{ATTR_PREFIX}{name}", _attribute_text(value)])
    _write_csv(folder / TABLE_FILES["meta"], ["key", "value"], meta)
    written = [TABLE_FILES[k] for k in ("toa", "sources", "meta")]
    if "fix_time" in record:
        fix_rows = [
            [when, *(_number_text(record[f"fix_{n}"].values[k]) for n in FIX_COLUMNS[1:])]
            for k, when in enumerate(_time_text(record["fix_time"].values))
        ]
        _write_csv(folder / TABLE_FILES["fixes"], list(FIX_COLUMNS), fix_rows)
        written.append(TABLE_FILES["fixes"])
    return written


def _attribute_text(value: object) -> str:
    if isinstance(value, float | np.floating):
        return repr(float(value))
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with atomic_output(path, "w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
