"""Float records from and to CSV tables: round trips, both TOA layouts, line/column errors,
fuzzed readers, and the ``rankmodels float import/export`` commands."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.tracking import simulate, tables
from rankmodels.tracking.cf import WRITTEN_ATTRIBUTES
from rankmodels.tracking.records import read_float, validate_float, write_float
from rankmodels_app.cli import cli

META = ["launch_lat=-56.3", "launch_lon=-105.0", "launch_time=2009-01-23"]
SOURCES = "name,lat,lon\nA,-56.0,-100.0\nB,-58.0,-95.0\n"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def import_error(tmp_path, toa: str, sources: str = SOURCES, meta=tuple(META)) -> str:
    """The one stderr line of a failing ``float import`` of these tables (exit 2, no
    output written)."""
    toa_path, sources_path = (
        write(tmp_path / "toa.csv", toa),
        write(tmp_path / "sources.csv", sources),
    )
    args = ["--toa", str(toa_path), "--sources", str(sources_path), *(f"--meta={m}" for m in meta)]
    done = invoke("float", "import", *args, "-o", str(tmp_path / "f.nc"))
    assert done.exit_code == 2, done.output
    assert not (tmp_path / "f.nc").exists()
    (line,) = done.stderr.strip().splitlines()
    return line


@pytest.fixture(scope="module")
def small_record():
    """A simulated 25-day record with hand labels, plus correlation, temperature, pressure and
    a source with a bounded active period, to carry every optional column."""
    record, _ = simulate.dimes_float767(seed=4, days=25)
    record = validate_float(record, labels_required=True)
    rng = np.random.default_rng(0)
    toa = record["toa"].values
    record["correlation"] = (
        ("cycle", "rank"),
        np.where(np.isfinite(toa), rng.random(toa.shape), np.nan),
    )
    record["temperature"] = ("cycle", rng.normal(2.0, 0.1, record.sizes["cycle"]))
    record["pressure"] = ("cycle", rng.normal(800.0, 5.0, record.sizes["cycle"]))
    record["source_offset"].values[3] = 12.5
    return validate_float(record, labels_required=True)


def assert_same_record(a: xr.Dataset, b: xr.Dataset) -> None:
    """``a`` read back from tables equals ``b``; ``b``'s float32 variables are written in
    their own shortest text, so they are equal in float32 (not in the float64 ``a`` holds)."""
    single = [name for name in b.data_vars if b[name].dtype == np.float32]
    a = a.assign({name: a[name].astype(np.float32) for name in single if name in a})
    xr.testing.assert_equal(a, b)
    assert _stated(a.attrs) == _stated(b.attrs)
    assert set(a.data_vars) == set(b.data_vars)


def _stated(attrs: dict) -> dict:
    """The attributes a record states, without those the writer makes (CF/ACDD metadata)."""
    return {k: v for k, v in attrs.items() if k not in WRITTEN_ATTRIBUTES}


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------


def test_export_then_import_gives_the_same_record(small_record, tmp_path):
    written = tables.export_tables(small_record, tmp_path)
    assert written == ["toa.csv", "sources.csv", "meta.csv"]
    meta = tables.parse_meta(tables.read_meta_table(tmp_path / "meta.csv"))
    back = tables.record_from_tables(tmp_path / "toa.csv", tmp_path / "sources.csv", meta)
    assert_same_record(back, small_record)
    header = (tmp_path / "toa.csv").read_text().splitlines()[0].split(",")
    r = small_record.sizes["rank"]
    assert header == [
        "time",
        *(f"{kind}_{k}" for kind in ("toa", "label", "correlation") for k in range(1, r + 1)),
        "temperature",
        "pressure",
    ]


def test_cli_round_trip_of_the_shipped_sample(repo_data, tmp_path):
    done = invoke("float", "export", str(repo_data / "float767.nc"), "--out", str(tmp_path / "t"))
    assert done.exit_code == 0, done.output
    t = tmp_path / "t"
    done = invoke(
        "float", "import", "--toa", str(t / "toa.csv"), "--sources", str(t / "sources.csv"),
        "--meta-table", str(t / "meta.csv"), "-o", str(tmp_path / "back.nc"),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "728 cycles, 4 ranks, 12 sources" in done.output
    assert_same_record(read_float(tmp_path / "back.nc"), read_float(repo_data / "float767.nc"))
    # float32 TOAs as their own shortest text (224.75424), not the float64 widening
    record = read_float(repo_data / "float767.nc")
    assert record["toa"].dtype == np.float32
    with open(t / "toa.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    texts = [row["toa_1"] for row in rows if row["toa_1"]]
    assert all(str(np.float32(text)) == text for text in texts)
    assert max(map(len, texts)) <= 10


def test_long_layout_gives_the_same_record_as_wide(small_record, tmp_path):
    """The long table lists each arrival on its own row, in shuffled order within a cycle,
    and a cycle without arrivals as a row with an empty toa."""
    tables.export_tables(small_record, tmp_path)
    rng = np.random.default_rng(1)
    toa = small_record["toa"].values
    labels = small_record["source_label"].values
    corr = small_record["correlation"].values
    times = [line.split(",")[0] for line in (tmp_path / "toa.csv").read_text().splitlines()[1:]]
    rows = []
    for i, when in enumerate(times):
        ks = np.flatnonzero(np.isfinite(toa[i]))
        if ks.size == 0:
            rows.append([when, "", "", ""])
        for k in rng.permutation(ks):
            rows.append([when, repr(float(toa[i, k])), str(labels[i, k]), repr(float(corr[i, k]))])
    with open(tmp_path / "long.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["time", "toa", "label", "correlation"], *rows])
    meta = tables.parse_meta(tables.read_meta_table(tmp_path / "meta.csv"))
    back = tables.record_from_tables(tmp_path / "long.csv", tmp_path / "sources.csv", meta)
    assert_same_record(back, small_record.drop_vars(["temperature", "pressure"]))


def test_wide_rows_are_sorted_with_their_labels(tmp_path):
    toa = write(
        tmp_path / "toa.csv",
        "time,toa_1,toa_2,toa_3,label_1,label_2,label_3\n"
        "2009-01-24,300.5,,100.25,1,,-1\n"
        "2009-01-25T12:00,,,,,,\n"
        "2009-01-26 06:30:15.5,50,40,30,0,1,-1\n",
    )
    sources = write(tmp_path / "sources.csv", SOURCES)
    rec = tables.record_from_tables(
        toa, sources, tables.parse_meta(("--meta", *m.split("=")) for m in META)
    )
    np.testing.assert_array_equal(
        rec["toa"].values, [[100.25, 300.5, np.nan], [np.nan] * 3, [30.0, 40.0, 50.0]]
    )
    np.testing.assert_array_equal(
        rec["source_label"].values, [[-1, 1, -2], [-2, -2, -2], [-1, 1, 0]]
    )
    assert rec["time"].values[2] == np.datetime64("2009-01-26T06:30:15.500", "ns")


# ------------------------------------------------------------------------------------------
# errors: one line with the file, line and column
# ------------------------------------------------------------------------------------------

TOA_ERRORS = [
    ("time,toa_1\n2009-01-24,abc\n", "line 2, column 2 (toa_1): expected a number, got 'abc'"),
    ("time,toa_1\n2009-01-24,-3\n", "line 2, column 2 (toa_1): expected an arrival time >= 0"),
    ("time,toa_1\n2009-01-24,inf\n", "line 2, column 2 (toa_1): expected a finite number"),
    ("time,toa_1\n24/01/2009,5\n", "line 2, column 1 (time): expected an ISO 8601 time"),
    ("time,toa_1\n2009-02-30,5\n", "line 2, column 1 (time): not a valid date"),
    (
        "# comment\ntime,toa_1\n2009-01-24,5\n2009-01-24,6\n",
        "line 4, column 1 (time): time is not after",
    ),
    ("time,toa_1\n2009-01-24,5\n2009-01-25,6,7\n", "line 3: 3 fields, expected 2"),
    ("time,toa_1,toa_3\n2009-01-24,5,6\n", "line 1: rank columns [1, 3]"),
    ("time,toa_1,lat\n2009-01-24,5,6\n", "line 1, column 3: unknown column 'lat'"),
    ("time,toa_1,toa_1\n2009-01-24,5,6\n", "line 1, column 3: column 'toa_1' appears twice"),
    ("toa_1\n5\n", "line 1: no 'time' column"),
    ("time\n2009-01-24\n", "line 1: no arrival columns"),
    ("time,toa_1\n", "line 1: no rows after the header"),
    ("", "empty table"),
    (
        "time,toa_1,label_1\n2009-01-24,,0\n",
        "line 2, column 3 (label_1): a value where toa_1 is empty",
    ),
    (
        "time,toa_1,label_1\n2009-01-24,5,-4\n",
        "line 2, column 3 (label_1): expected a source index",
    ),
    (
        "time,toa_1,label_1\n2009-01-24,5,0.5\n",
        "line 2, column 3 (label_1): expected a whole number",
    ),
    ("time,toa\n2009-01-25,5\n2009-01-24,6\n", "line 3, column 1 (time): time is before"),
    ("time,toa,extra\n2009-01-25,5,1\n", "line 1, column 3: unknown column 'extra'"),
    ('time,toa_1\n2009-01-24,"5\n', "line 2: malformed CSV"),
    ("time,toa_1\n2009-01-24,5\x00\n", "line 2: NUL character"),
]


@pytest.mark.parametrize(("content", "expected"), TOA_ERRORS)
def test_toa_table_errors_name_line_and_column(tmp_path, content, expected):
    line = import_error(tmp_path, content)
    assert line.startswith(f"Error: {tmp_path / 'toa.csv'}: {expected}"), line


SOURCE_ERRORS = [
    ("name,lat\nA,1\n", "line 1: no 'lon' column"),
    ("name,lat,lon,depth\nA,1,2,3\n", "line 1, column 4: unknown column 'depth'"),
    ("name,lat,lon\nA,-95,2\n", "line 2, column 2 (lat): expected degrees in [-90, 90]"),
    ("name,lat,lon\nA,1,2\nA,3,4\n", "line 3, column 1 (name): source 'A' appears twice"),
    ("name,lat,lon\n,1,2\n", "line 2, column 1 (name): expected a source name"),
    ("name,lat,lon,start,end\nA,1,2,2010-01-01,2009-01-01\n", "line 2, column 5 (end): the end"),
    ("name,lat,lon,offset\nA,1,2,x\n", "line 2, column 4 (offset): expected a number"),
]


@pytest.mark.parametrize(("content", "expected"), SOURCE_ERRORS)
def test_sources_table_errors_name_line_and_column(tmp_path, content, expected):
    line = import_error(tmp_path, "time,toa_1\n2009-01-24,5\n", content)
    assert line.startswith(f"Error: {tmp_path / 'sources.csv'}: {expected}"), line


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (META[1:], "launch_lat: missing"),
        ([*META, "launch_lat=1"], "--meta 'launch_lat': given twice"),
        ([*META, "sound_speed=fast"], "--meta 'sound_speed': expected a number, got 'fast'"),
        ([*META, "lauch_lat=1"], "--meta 'lauch_lat': unknown key"),
        ([*META, "recovery_lat=-60"], "recovery_lat: the recovery fix needs"),
        ([*META, "recovery_time=yesterday"], "--meta 'recovery_time': expected an ISO 8601"),
        (["launch_lat"], "--meta: expected KEY=VALUE"),
        # validated with the record: the launch must not be after the first cycle
        (
            ["launch_lat=1", "launch_lon=2", "launch_time=2010-01-01"],
            "time: first cycle is before launch_time",
        ),
    ],
)
def test_metadata_errors(tmp_path, meta, expected):
    line = import_error(tmp_path, "time,toa_1\n2009-01-24,5\n", meta=meta)
    assert expected in line, line


def test_meta_table_errors_name_its_line(tmp_path):
    bad = write(tmp_path / "meta.csv", "key,value\nlaunch_lat,1\nlaunch_lon,nope\n")
    with pytest.raises(InputError, match=r"meta\.csv: line 3 'launch_lon': expected a number"):
        tables.parse_meta(tables.read_meta_table(bad))


def test_import_and_export_never_write_over_an_input(tmp_path, repo_data):
    toa = write(tmp_path / "toa.csv", "time,toa_1\n2009-01-24,5\n")
    sources = write(tmp_path / "sources.csv", SOURCES)
    before = toa.read_bytes()
    args = ["--toa", str(toa), "--sources", str(sources), *(f"--meta={m}" for m in META)]
    done = invoke("float", "import", *args, "-o", str(toa))
    assert done.exit_code == 2 and "refusing to write" in done.stderr
    assert toa.read_bytes() == before
    record = tmp_path / "toa.csv"  # a record named like an export output, in the out folder
    done = invoke("float", "export", str(record), "--out", str(tmp_path))
    assert done.exit_code == 2 and "refusing to write" in done.stderr


def test_export_of_a_bad_record_is_one_line(tmp_path):
    bad = write(tmp_path / "f.nc", "not netcdf")
    done = invoke("float", "export", str(bad), "--out", str(tmp_path / "t"))
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: {bad}: not a readable NetCDF float record (not a NetCDF or HDF5 file; CSV "
        "tables become a record with `rankmodels float import`)"
    ]


def test_imported_record_is_a_valid_float_file(tmp_path):
    toa = write(tmp_path / "toa.csv", "time,toa\n2009-01-24,5.5\n2009-01-24,2.5\n2009-01-25,\n")
    sources = write(tmp_path / "sources.csv", SOURCES)
    args = ["--toa", str(toa), "--sources", str(sources), *(f"--meta={m}" for m in META)]
    done = invoke(
        "float", "import", *args, "--meta", "attr:cruise=JC029", "-o", str(tmp_path / "f.nc")
    )
    assert done.exit_code == 0, done.output
    rec = read_float(tmp_path / "f.nc")
    np.testing.assert_array_equal(rec["toa"].values, [[2.5, 5.5], [np.nan, np.nan]])
    assert rec.attrs["cruise"] == "JC029" and "source_label" not in rec
    assert rec["toa"].attrs["units"] == "s"


# ------------------------------------------------------------------------------------------
# fuzz
# ------------------------------------------------------------------------------------------

_CELL = st.one_of(
    st.sampled_from(
        ["", "5", "-1", "1e3", "nan", "2009-01-24", "2009-01-24T01:02", "x", '"', "0.5"]
    ),
    st.text(max_size=6),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    header=st.lists(
        st.sampled_from(
            [
                "time",
                "toa",
                "toa_1",
                "toa_2",
                "label_1",
                "label",
                "name",
                "lat",
                "lon",
                "start",
                "x",
            ]
        ),
        min_size=0,
        max_size=4,
    ),
    rows=st.lists(st.lists(_CELL, max_size=5), max_size=5),
    junk=st.text(max_size=20),
)
def test_readers_raise_only_input_errors(tmp_path, header, rows, junk):
    """Whatever the bytes, the table readers return or raise InputError (never another
    exception), and an error message is one line naming the file."""
    text = "\n".join([",".join(header), *(",".join(r) for r in rows)]) + junk
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))  # lone surrogates: not UTF-8
    for reader in (tables.read_toa_table, tables.read_sources_table, tables.read_meta_table):
        try:
            reader(path)
        except InputError as err:
            assert str(err).startswith(str(path)) and "\n" not in err.message


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    arrivals=st.lists(
        st.lists(
            st.floats(0.0, 1799.0, allow_nan=False).map(lambda v: round(v, 3)),
            max_size=4,
            unique=True,
        ),
        min_size=1,
        max_size=8,
    ).filter(any),  # a record needs an arrival
    seconds=st.integers(0, 86399),
)
def test_written_tables_read_back_exactly(tmp_path, arrivals, seconds):
    """Random arrival sets written in the wide layout (unsorted) read back sorted, each
    cycle's set intact; the export of that record reads back the same."""
    r = max(1, max(len(a) for a in arrivals))
    start = np.datetime64("2009-01-24T00:00:00", "ns") + np.timedelta64(seconds, "s")
    times = [start + np.timedelta64(i, "D") for i in range(len(arrivals))]
    lines = ["time," + ",".join(f"toa_{k + 1}" for k in range(r))]
    for when, row in zip(times, arrivals, strict=True):
        cells = [repr(v) for v in row[::-1]] + [""] * (r - len(row))
        lines.append(",".join([np.datetime_as_string(when, unit="s"), *cells]))
    toa = write(tmp_path / "toa.csv", "\n".join(lines) + "\n")
    sources = write(tmp_path / "sources.csv", SOURCES)
    meta = tables.parse_meta(("--meta", *m.split("=")) for m in META)
    rec = tables.record_from_tables(toa, sources, meta)
    for i, row in enumerate(arrivals):
        got = rec["toa"].values[i]
        np.testing.assert_array_equal(got[: len(row)], sorted(row))
        assert np.isnan(got[len(row) :]).all()
    tables.export_tables(rec, tmp_path / "out")
    meta2 = tables.parse_meta(tables.read_meta_table(tmp_path / "out" / "meta.csv"))
    back = tables.record_from_tables(
        tmp_path / "out" / "toa.csv", tmp_path / "out" / "sources.csv", meta2
    )
    assert_same_record(back, rec)
    write_float(back, tmp_path / "f.nc")
    assert_same_record(read_float(tmp_path / "f.nc"), rec)
