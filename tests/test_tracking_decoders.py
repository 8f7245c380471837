"""Float records from the decoders' layouts (rankmodels.tracking.decoders, 'float import
--nemo/--argo-aux/--seaglider'): round trips, status flags, raw counts, fixes, bad files (one
line, exit 2) and fuzzed files."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.tracking.decoders import read_nemo_profiles, read_seaglider_logs
from rankmodels.tracking.records import read_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.tables import export_tables
from rankmodels_app.cli import cli
from tests._decoder_layouts import write_argo_aux, write_nemo, write_seaglider

INDEX_SECONDS = 0.25


@pytest.fixture(scope="module")
def record():
    """A simulated record with correlations, temperature, pressure and salinity."""
    rec, _ = dimes_float767(seed=11, days=20)
    rec = rec.assign_coords(time=rec["time"] + np.timedelta64(13 * 3600 + 47 * 60 + 29, "s"))
    rng = np.random.default_rng(0)
    toa = rec["toa"].values
    n = rec.sizes["cycle"]
    return rec.assign(
        correlation=(
            ("cycle", "rank"),
            np.where(np.isfinite(toa), rng.integers(20, 99, toa.shape), np.nan),
        ),
        temperature=("cycle", rng.normal(2.0, 0.2, n)),
        pressure=("cycle", rng.normal(800.0, 5.0, n)),
        salinity=("cycle", rng.normal(34.4, 0.05, n)),
    ).drop_vars("source_label")


@pytest.fixture(scope="module")
def tables(record, tmp_path_factory):
    out = tmp_path_factory.mktemp("tables")
    export_tables(record, out)
    return out


def _import(tables, tmp_path, *args):
    out = tmp_path / "back.nc"
    done = CliRunner().invoke(
        cli,
        ["float", "import", *args, "--sources", str(tables / "sources.csv")]
        + ["--meta-table", str(tables / "meta.csv"), "-o", str(out)],
    )
    return done, out


def _same(back: xr.Dataset, record: xr.Dataset, names=("toa", "correlation")) -> None:
    np.testing.assert_array_equal(back["time"].values, record["time"].values)
    for name in names:
        np.testing.assert_allclose(back[name].values, record[name].values, rtol=0, atol=1e-9)
    assert back.attrs["float_id"] == record.attrs["float_id"]


def test_nemo_round_trip(record, tables, tmp_path):
    """Record -> two .profile files (split in time) -> record: the same arrivals, sensors."""
    half = record.sizes["cycle"] // 2
    write_nemo(record.isel(cycle=slice(None, half)), tmp_path / "a.profile")
    write_nemo(record.isel(cycle=slice(half, None)), tmp_path / "b.profile")
    done, out = _import(
        tables,
        tmp_path,
        "--nemo",
        str(tmp_path / "a.profile"),
        "--nemo",
        str(tmp_path / "b.profile"),
    )
    assert done.exit_code == 0, done.output
    _same(read_float(out), record, ("toa", "correlation", "temperature", "pressure", "salinity"))


def test_slots_in_any_order_are_sorted_with_their_correlations(record, tables, tmp_path):
    """Arrivals written latest first (as by correlation rank) come back ascending, each with
    its own correlation height."""
    backwards = record.assign(
        toa=record["toa"][:, ::-1].copy(), correlation=record["correlation"][:, ::-1].copy()
    )
    write_nemo(backwards, tmp_path / "a.profile")
    done, out = _import(tables, tmp_path, "--nemo", str(tmp_path / "a.profile"))
    assert done.exit_code == 0, done.output
    _same(read_float(out), record)


def test_argo_round_trip_with_raw_counts_and_fixes(record, tables, tmp_path):
    times = record["time"].values
    surface = [(times[5] + np.timedelta64(3, "h"), -56.5, -104.0)]
    write_argo_aux(record, tmp_path / "aux.nc", raw=True, surface=surface)
    done, out = _import(tables, tmp_path, "--argo-aux", str(tmp_path / "aux.nc"))
    assert done.exit_code == 0, done.output
    back = read_float(out)
    _same(back, record, ("toa", "correlation", "temperature", "pressure", "salinity"))
    assert back.sizes["fix"] == 1
    assert back["fix_lat"].values[0] == -56.5 and back["fix_lon"].values[0] == -104.0
    assert back["fix_time"].values[0] == surface[0][0]
    assert "1 fix" in done.output


def test_status_flags_drop_and_count(record, tables, tmp_path):
    status = np.full(record.sizes["cycle"], 2)
    status[[3, 7]] = (4, 8 | 16)
    write_argo_aux(record, tmp_path / "aux.nc", status=status)
    done, out = _import(tables, tmp_path, "--argo-aux", str(tmp_path / "aux.nc"))
    assert done.exit_code == 0, done.output
    assert "2 samples dropped for a bad RAFOS status" in done.output
    kept = np.setdiff1d(np.arange(record.sizes["cycle"]), [3, 7])
    _same(read_float(out), record.isel(cycle=kept))
    write_nemo(record, tmp_path / "a.profile", status=status)
    decoded = read_nemo_profiles([tmp_path / "a.profile"])
    assert decoded.dropped == 2 and decoded.arrivals.time.size == kept.size


def test_seaglider_round_trip(record, tables, tmp_path):
    on_grid = record.assign(toa=np.round(record["toa"] / INDEX_SECONDS) * INDEX_SECONDS)
    export_tables(on_grid, tmp_path / "t")
    write_seaglider(on_grid, tmp_path / "p5410001.log", INDEX_SECONDS)
    done, out = _import(
        tmp_path / "t",
        tmp_path,
        "--seaglider",
        str(tmp_path / "p5410001.log"),
        "--index-seconds",
        str(INDEX_SECONDS),
    )
    assert done.exit_code == 0, done.output
    _same(read_float(out), on_grid)
    with pytest.raises(ValueError, match="index_seconds"):
        read_seaglider_logs([tmp_path / "p5410001.log"], 0.0)


def _nemo_text(record, tmp_path) -> str:
    write_nemo(record, tmp_path / "ok.profile")
    return (tmp_path / "ok.profile").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "damage, field, expected",
    [
        (lambda t: t.replace("[RAFOS_VALUES]", "[RAFOS_VALUE]"), "line 5", "unknown section"),
        (lambda t: t.replace("\n1\t", "\n1\t2009\n1\t", 1), "line 6", "tab-separated values"),
        (lambda t: t.replace("\t2\t", "\t3\t", 1), "line 6", "RAFOS status"),
        (lambda t: t.replace("\n1\t2009\t", "\n1\tNaN\t", 1), "line 6", "NaN time"),
        (lambda t: t.replace("1STTRAVELTIME", "FIRSTTRAVELTIME"), "line 4", "1STTRAVELTIME"),
    ],
    ids=["wrong section", "truncated line", "bad status", "NaN time", "missing column"],
)
def test_bad_nemo_files_are_one_line(record, tables, tmp_path, damage, field, expected):
    path = tmp_path / "bad.profile"
    path.write_text(damage(_nemo_text(record, tmp_path)), encoding="utf-8")
    done, _ = _import(tables, tmp_path, "--nemo", str(path))
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.output
    assert "bad.profile" in lines[0] and field in lines[0] and expected in lines[0]


def test_bad_argo_and_seaglider_files_are_one_line(record, tables, tmp_path):
    bad = record.copy()
    write_argo_aux(bad, tmp_path / "aux.nc", status=np.full(record.sizes["cycle"], 5))
    done, _ = _import(tables, tmp_path, "--argo-aux", str(tmp_path / "aux.nc"))
    assert done.exit_code == 2 and "RAFOS_STATUS" in done.output and "2, 4, 8, 16" in done.output
    log = tmp_path / "p1.log"
    log.write_text("$RAFOS,0,1230768000,5,1230768000,1,2,3\n", encoding="utf-8")
    done, _ = _import(tables, tmp_path, "--seaglider", str(log), "--index-seconds", "1")
    assert done.exit_code == 2 and "p1.log" in done.output and "line 1" in done.output
    done, _ = _import(tables, tmp_path, "--seaglider", str(log))
    assert done.exit_code == 2 and "--index-seconds" in done.output
    done, _ = _import(tables, tmp_path, "--seaglider", str(log), "--toa", str(log))
    assert done.exit_code == 2 and "one of --toa" in done.output


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_nemo_files_read_or_fail_in_one_line(record, tmp_path, data):
    """A .profile file with one line replaced, deleted or cut: read, or an InputError naming
    the file in one line; never another exception."""
    lines = _nemo_text(record.isel(cycle=slice(0, 6)), tmp_path).splitlines()
    k = data.draw(st.integers(0, len(lines) - 1))
    action = data.draw(st.sampled_from(["replace", "delete", "cut"]))
    if action == "replace":
        lines[k] = data.draw(st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
    elif action == "delete":
        del lines[k]
    else:
        lines[k] = lines[k][: data.draw(st.integers(0, len(lines[k])))]
    path = tmp_path / "fuzz.profile"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        decoded = read_nemo_profiles([path])
    except InputError as err:
        assert "\n" not in str(err) and "fuzz.profile" in str(err)
    else:
        assert np.all(np.diff(decoded.arrivals.time) > np.timedelta64(0, "ns"))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_seaglider_logs_read_or_fail_in_one_line(record, tmp_path, data):
    """A dive log with one $RAFOS field replaced: read, or one InputError line naming the
    file and the line."""
    on_grid = record.isel(cycle=slice(0, 5))
    on_grid = on_grid.assign(toa=np.round(on_grid["toa"] / INDEX_SECONDS) * INDEX_SECONDS)
    write_seaglider(on_grid, tmp_path / "p.log", INDEX_SECONDS)
    lines = (tmp_path / "p.log").read_text(encoding="utf-8").splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("$RAFOS,")]
    k = data.draw(st.sampled_from(rows))
    cells = lines[k].split(",")
    j = data.draw(st.integers(1, len(cells)))
    new = data.draw(st.one_of(st.integers(-(10**12), 10**12).map(str), st.text(max_size=6)))
    cells[j : j + 1] = [] if data.draw(st.booleans()) else [new]
    lines[k] = ",".join(cells)
    (tmp_path / "p.log").write_text("\n".join(lines), encoding="utf-8")
    try:
        decoded = read_seaglider_logs([tmp_path / "p.log"], INDEX_SECONDS)
    except InputError as err:
        assert "\n" not in str(err) and "p.log" in str(err)
    else:
        assert np.all(np.diff(decoded.arrivals.time) > np.timedelta64(0, "ns"))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    status=st.lists(
        st.one_of(st.sampled_from([2.0, 4.0, 8.0, 16.0, 6.0, 2.0]), st.floats(allow_nan=True)),
        min_size=5,
        max_size=5,
    )
)
def test_fuzzed_argo_status_reads_or_fails_in_one_line(record, tmp_path, status):
    """Any RAFOS_STATUS values: the good samples read and the others counted, or one
    InputError line naming RAFOS_STATUS."""
    from rankmodels.tracking.decoders import read_argo_aux

    five = record.isel(cycle=slice(0, 5))
    write_argo_aux(five, tmp_path / "aux.nc", status=np.array(status))
    try:
        decoded = read_argo_aux(tmp_path / "aux.nc")
    except InputError as err:
        assert "\n" not in str(err) and err.field in ("RAFOS_STATUS", "JULD")
    else:
        good = sum(s == 2.0 for s in status)
        assert decoded.arrivals.time.size == good and decoded.dropped == 5 - good


def test_sound_speed_from_the_sensors_without_a_stated_one(record, tables, tmp_path):
    """Metadata without sound_speed: the record gets the TEOS-10 speed of the float's water;
    with one, the stated value is kept."""
    from rankmodels.tracking.sound_speed import starting_sound_speed

    meta = [line for line in (tables / "meta.csv").read_text().splitlines()]
    (tmp_path / "meta.csv").write_text(
        "\n".join(line for line in meta if not line.startswith("sound_speed,")) + "\n"
    )
    write_nemo(record, tmp_path / "a.profile")
    out = tmp_path / "back.nc"
    done = CliRunner().invoke(
        cli,
        ["float", "import", "--nemo", str(tmp_path / "a.profile")]
        + ["--sources", str(tables / "sources.csv"), "--meta-table", str(tmp_path / "meta.csv")]
        + ["-o", str(out)],
    )
    assert done.exit_code == 0, done.output
    back = read_float(out)
    expected = starting_sound_speed(record).value
    assert float(back["sound_speed"]) == pytest.approx(expected, abs=1e-9)
    assert 1440 < expected < 1480 and "from the float's temperature and pressure" in done.output
    done, out = _import(tables, tmp_path, "--nemo", str(tmp_path / "a.profile"))
    assert float(read_float(out)["sound_speed"]) == float(record["sound_speed"])
