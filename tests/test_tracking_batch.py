"""Tracking many floats: ``track-float a.nc b.nc ...`` / ``track-float FOLDER/`` on a 2-worker
Dask LocalCluster, failed floats reported while the others go on, the summary table, the fleet
overview (``fleet.png``, ``fleet.html``), ``--strict``, dropped hand labels, unreachable
schedulers, and ``rankmodels.tracking.batch.track_many`` (serial = Dask)."""

from __future__ import annotations

import csv
import html
import json
import re

import cartopy.crs as ccrs
import dask
import distributed  # noqa: F401  (its config defaults load before any dask.config.set)
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from matplotlib.colors import to_rgba

from rankmodels.plots import style
from rankmodels.plots.fleet import (
    MIN_CONTRAST,
    contrast_ratio,
    fleet_map,
    fleet_recoveries,
    fleet_tracks,
    float_colors,
    parameters_table,
    write_fleet,
)
from rankmodels.plots.report import MOTION_ROWS
from rankmodels.plots.run_report import float_figures
from rankmodels.tracking import simulate
from rankmodels.tracking.batch import (
    CALIBRATED,
    LAGRANGIAN,
    SUMMARY_COLUMNS,
    SUMMARY_DECIMALS,
    track_many,
)
from rankmodels.tracking.config import COMMAND_MOTION, COMMAND_MULTIPATH, TrackConfig
from rankmodels.tracking.records import read_float, write_float
from rankmodels_app.track import track_float
from tests._plots_data import great_circle_km
from tests._report_check import decoded_images, external_references

SETTINGS = ["--particles", "300", "--seed", "4", "--quiet"]
# as track-float (calibration on, its multipath model)
CONFIG = TrackConfig(
    particles=300, seed=4, calibrate=True, multipath=COMMAND_MULTIPATH, motion=COMMAND_MOTION
)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """Three floats in one folder: two small simulated records (with their truth beside
    them) and a corrupt one; the batch run on a 2-worker LocalCluster."""
    root = tmp_path_factory.mktemp("experiment")
    (root / "in").mkdir()
    for name, seed, days in (("f1", 1, 8), ("f2", 2, 10)):
        record, truth = simulate.dimes_float767(seed=seed, days=days)
        write_float(record, root / "in" / f"{name}.nc")
        truth.to_netcdf(root / "in" / f"{name}_truth.nc")
    (root / "in" / "f3.nc").write_bytes(b"\x89HDF\r\n\x1a\n but not really")
    run = CliRunner().invoke(
        track_float, [str(root / "in"), "-o", str(root / "out"), "--workers", "2", *SETTINGS[:-1]]
    )  # not --quiet: the summary goes to stderr
    return root, run


def test_batch_tracks_the_good_floats_and_reports_the_corrupt_one(experiment):
    root, run = experiment
    assert run.exit_code == 2, run.output
    errors = [line for line in run.stderr.strip().splitlines() if line.startswith("Error")]
    corrupt = root / "in" / "f3.nc"
    assert len(errors) == 2 and errors[1] == "Error: 1 of 3 floats failed"
    assert errors[0].startswith(f"Error: {corrupt}: not a readable NetCDF float record")
    assert "2 of 3 floats tracked" in run.stderr
    for name in ("f1", "f2"):
        folder = root / "out" / name
        assert {p.name for p in folder.iterdir()} == {
            "track.nc", "map.png", "toa.png", "diagnostics.png", "report.html", "manifest.json",
        }  # fmt: skip
        report = (folder / "report.html").read_text()
        assert external_references(report) == [] and len(decoded_images(report)) == 3
        assert "Comparison with the true track" in report  # the truth beside it was found
    assert not (root / "out" / "f3").exists()


def rounded(value, column, rel=0.0):
    """``value`` as summary.csv keeps it: within half a unit of the column's last decimal
    (plus ``rel`` for values computed independently of the tracker)."""
    step = 10.0 ** -SUMMARY_DECIMALS[column]
    return pytest.approx(value, abs=0.5 * step * (1 + 1e-9), rel=rel, nan_ok=True)


def test_summary_csv_holds_no_float_noise(experiment):
    """Every real-valued cell of summary.csv has at most its column's decimals (the text
    written, not what pandas reads back)."""
    root, _ = experiment
    with open(root / "out" / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(SUMMARY_COLUMNS)
    seen = 0
    for cells in rows:
        for column, digits in SUMMARY_DECIMALS.items():
            text = cells[column]
            if text and text != "nan":
                seen += 1
                decimals = len(text.split(".")[1]) if "." in text else 0
                assert decimals <= digits, (column, text)
    assert seen > 20


def test_summary_says_which_failed_and_matches_the_tracks(experiment):
    root, _ = experiment
    table = pd.read_csv(root / "out" / "summary.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns) == list(SUMMARY_COLUMNS)
    assert list(table["float"]) == ["f1", "f2", "f3"]
    assert list(table["status"]) == ["ok", "ok", "failed"]
    assert table["reason"].iloc[2].startswith(str(root / "in" / "f3.nc"))
    assert table.loc[2, ["cycles", "mean_ess", "end_distance_km"]].isna().all()
    for i, name in enumerate(("f1", "f2")):
        row = table.iloc[i]
        track = xr.load_dataset(root / "out" / name / "track.nc")
        record = read_float(root / "in" / f"{name}.nc")
        assert row["cycles"] == track.sizes["cycle"] == record.sizes["cycle"]
        assert row["arrivals"] == np.isfinite(record["toa"].values).sum()
        assert row["mean_ess"] == rounded(float(track["ess"].mean()), "mean_ess")
        labels = track["association"].values
        share = (labels == -1).sum() / (labels >= -1).sum()
        assert row["clutter_fraction"] == rounded(share, "clutter_fraction")
        last = np.flatnonzero(np.isfinite(track["lat_filtered"].values))[-1]
        expected = great_circle_km(
            track["lat_filtered"].values[last],
            track["lon_filtered"].values[last],
            record["recovery_lat"].item(),
            record["recovery_lon"].item(),
        )
        assert row["end_distance_km"] == rounded(expected, "end_distance_km", rel=1e-6)
        assert row["calibrated"] == track.attrs["calibrated"] != ""
        code = track["quality_passed"].values
        failed = [str(c) for c in track["quality_check"].values[code == 0]]
        assert row["quality"] == (", ".join(failed) if failed else "passed")
        assert row["quality_failed"] == len(failed) == (code == 0).sum()
        assert row["collapsed_cycles"] == int(track["collapsed"].values.sum())
        assert row["float_id"] == track.attrs["float_id"] == record.attrs.get("float_id", "")
        assert row["file"] == str(root / "in" / f"{name}.nc") and pd.isna(row["warning"])
        # the Lagrangian motion's quantities in place of the random walk's step
        assert "process_noise" not in track and pd.isna(row["process_noise"])
        for name in (*(c for c in CALIBRATED if c != "process_noise"), *LAGRANGIAN):
            for column in (name, f"{name}_std"):
                assert row[column] == rounded(float(track[column]), column), column
        assert row["run_time_s"] > 0
    # every column is checked above (run_time_s only for its sign)
    assert set(SUMMARY_COLUMNS) == {
        "float", "status", "reason", "warning", "file", "float_id", "cycles", "arrivals",
        "run_time_s", "mean_ess", "clutter_fraction", "collapsed_cycles", "end_distance_km",
        "quality", "quality_failed", "calibrated",
        *CALIBRATED, *(f"{name}_std" for name in CALIBRATED),
        *LAGRANGIAN, *(f"{name}_std" for name in LAGRANGIAN),
    }  # fmt: skip
    doc = json.loads((root / "out" / "summary.json").read_text())
    assert doc["columns"] == SUMMARY_COLUMNS
    assert [r["status"] for r in doc["floats"]] == ["ok", "ok", "failed"]
    assert doc["floats"][2]["cycles"] is None and doc["floats"][0]["cycles"] == table["cycles"][0]


def test_track_many_serially_gives_the_same_table_as_on_dask(experiment, tmp_path):
    root, _ = experiment
    files = [root / "in" / f"{n}.nc" for n in ("f3", "f1")]
    table = track_many(files, tmp_path, CONFIG).round(SUMMARY_DECIMALS)
    dask_table = pd.read_csv(root / "out" / "summary.csv", keep_default_na=False, na_values=[""])
    mine = table.set_index("float").drop(columns=["run_time_s"])
    theirs = dask_table.set_index("float").loc[["f3", "f1"]].drop(columns=["run_time_s"])
    assert list(mine["status"]) == ["failed", "ok"]
    numbers = [
        "cycles",
        "arrivals",
        "mean_ess",
        "clutter_fraction",
        "end_distance_km",
        "sound_speed",
    ]
    np.testing.assert_allclose(
        mine[numbers].to_numpy(float), theirs[numbers].to_numpy(float), rtol=1e-9
    )
    assert {p.name for p in (tmp_path / "f1").iterdir()} == {"track.nc", "manifest.json"}


def test_a_float_with_bad_content_fails_alone(tmp_path):
    """A readable NetCDF file that is not a valid record is a failed row naming the variable."""
    record, _ = simulate.dimes_float767(seed=5, days=6)
    write_float(record, tmp_path / "good.nc")
    record.drop_vars("launch_lat").to_netcdf(tmp_path / "nolaunch.nc")
    table = track_many([tmp_path / "nolaunch.nc", tmp_path / "good.nc"], tmp_path / "out", CONFIG)
    assert list(table["status"]) == ["failed", "ok"]
    assert table["reason"][0].startswith(f"{tmp_path / 'nolaunch.nc'}: launch_lat: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["{d}/a/x.nc", "{d}/b/x.nc"], "would both write to the folder 'x'"),
        (["{d}/empty"], "{d}/empty: no float records (*.nc) in this folder"),
        (["{d}/a/x.nc", "--workers", "2"], "--workers: only for many floats"),
        (["{d}/a/x.nc", "--worker-threads", "1"], "--worker-threads: only for many floats"),
        (["{d}/a/x.nc", "{d}/b/y.nc", "--worker-threads", "0"], "--worker-threads"),
        (["{d}/a/x.nc", "{d}/b/x.nc", "--workers", "0"], "--workers"),
    ],
)
def test_batch_usage_errors_are_one_line(tmp_path, args, expected):
    for sub in ("a", "b", "empty"):
        (tmp_path / sub).mkdir()
    (tmp_path / "a" / "x.nc").write_bytes(b"x")
    (tmp_path / "b" / "x.nc").write_bytes(b"x")
    argv = [a.format(d=tmp_path) for a in args]
    run = CliRunner().invoke(track_float, [*argv, "--out", str(tmp_path / "o"), "--quiet"])
    assert run.exit_code == 2, run.output
    (line,) = run.stderr.strip().splitlines()
    assert expected.format(d=tmp_path) in line


# --- the fleet overview -------------------------------------------------------------------


def test_fleet_page_links_each_tracked_float_and_travels(experiment):
    root, run = experiment
    out = root / "out"
    assert "summary.json, fleet.png, fleet.html" in run.stderr
    page = (out / "fleet.html").read_text()
    links = external_references(page)  # the only references: the floats' own reports
    assert links == ["f1/report.html", "f2/report.html"]
    assert all((out / link).is_file() for link in links)
    ((png, image),) = decoded_images(page)
    assert png == (out / "fleet.png").read_bytes() and image.width > 500
    floats = page.split('<table class="fleet floats">')[1].split("</table>")[0]
    rows = floats.split("<tr>")[2:]  # after the header row
    assert [re.sub("<[^>]*>", "", row.split("</td>")[0]) for row in rows] == ["f1", "f2", "f3"]
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False, na_values=[""])
    failed_reason = summary["reason"][2]
    assert "f3/report.html" not in page and html.escape(failed_reason) in rows[2]
    assert "swatch" not in rows[2]  # not on the map, so no colour


def test_fleet_map_draws_every_tracked_float_and_no_failed_one(experiment):
    root, _ = experiment
    out = root / "out"
    table = pd.read_csv(out / "summary.csv", keep_default_na=False, na_values=[""])
    tracks = fleet_tracks(out, table)
    assert list(tracks) == ["f1", "f2"]  # f3 failed: no track
    recoveries = {
        name: (read_float(root / "in" / f"{name}.nc")["recovery_lat"].item(),
               read_float(root / "in" / f"{name}.nc")["recovery_lon"].item())
        for name in tracks
    }  # fmt: skip
    with_cwd = table.assign(file=[str(root / "in" / f"{n}.nc") for n in table["float"]])
    assert fleet_recoveries(with_cwd) == recoveries
    fig = fleet_map(tracks, recoveries)
    ax = fig.axes[0]
    lines = [line for line in ax.lines if line.get_gid() == "fleet-track"]
    assert [line.get_label() for line in lines] == ["f1", "f2"]
    colors = [to_rgba(line.get_color()) for line in lines]
    assert colors == [tuple(c) for c in float_colors(2)] and colors[0] != colors[1]
    ends = [c for c in ax.collections if c.get_gid() == "fleet-end"]
    for line, end, track in zip(lines, ends, tracks.values(), strict=True):
        expected = ax.projection.transform_points(
            ccrs.Geodetic(), track["lon"].values, track["lat"].values
        )[:, :2]
        np.testing.assert_allclose(np.c_[line.get_xdata(), line.get_ydata()], expected)
        np.testing.assert_allclose(end.get_offsets(), expected[-1:])  # the last position
    (fixes,) = [c for c in ax.collections if c.get_gid() == "fleet-recovery"]
    lat, lon = np.array(list(recoveries.values())).T
    expected = ax.projection.transform_points(ccrs.Geodetic(), lon, lat)[:, :2]
    np.testing.assert_allclose(fixes.get_offsets(), expected)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == ["f1", "f2"] and "recovery fix" in legend and "last position" in legend
    # the title says when: the first and last day of the records
    every = np.concatenate([t["time"].values for t in tracks.values()])
    first, last = (np.datetime_as_string(v, unit="D") for v in (every.min(), every.max()))
    assert ax.get_title(loc="left") == f"2 tracked floats, {first} to {last}"


def test_fleet_map_shows_only_sources_active_during_the_records(experiment):
    """The floats' records end months before the US2 and UK sources were deployed: those are
    neither drawn nor named, on the map or in the inset; the others are, at their places."""
    root, _ = experiment
    out = root / "out"
    table = pd.read_csv(out / "summary.csv", keep_default_na=False, na_values=[""])
    tracks = fleet_tracks(out, table)
    records = [read_float(root / "in" / f"{name}.nc") for name in tracks]
    record = records[0]
    active = np.zeros(record.sizes["source"], dtype=bool)
    for rec in records:  # every float's own span against every source's schedule
        first, last = rec["time"].values.min(), rec["time"].values.max()
        start = rec["source_start_time"].values
        end = rec["source_end_time"].values
        active |= (np.isnat(start) | (start <= last)) & (np.isnat(end) | (end >= first))
    names = [str(n) for n in record["source"].values]
    assert 0 < active.sum() < len(names)  # the fixture has both kinds
    fig = fleet_map(tracks)
    ax = fig.axes[0]
    (sources,) = [c for c in ax.collections if c.get_gid() == "sources"]
    expected = ax.projection.transform_points(
        ccrs.Geodetic(), record["source_lon"].values[active], record["source_lat"].values[active]
    )[:, :2]
    np.testing.assert_allclose(sources.get_offsets(), expected)
    np.testing.assert_allclose(
        sources.get_facecolors(), style.source_colors(len(names))[active]
    )  # each keeps its colour in the floats' reports
    labels = {t.get_text() for t in ax.texts} | {
        t.get_text() for inset in ax.child_axes for t in inset.texts
    }
    for name, on in zip(names, active, strict=True):
        assert (name in labels) == bool(on), name
    for inset in ax.child_axes:
        (shown,) = [c for c in inset.collections if c.get_gid() == "overview-sources"]
        assert len(shown.get_offsets()) == active.sum()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    left_out = len(names) - int(active.sum())
    assert f"sound source ({left_out} not transmitting during the records: not drawn)" in legend


@pytest.mark.parametrize("n", [1, 2, 3, 5, 12, 32])
def test_float_colours_are_readable_on_the_sea(n):
    colors = float_colors(n)
    assert (contrast_ratio(colors[:, :3], style.OCEAN_COLOR) >= MIN_CONTRAST - 1e-6).all()
    # only as dark as needed: the colours that were readable are unchanged (turbo's ends)
    assert contrast_ratio(np.array([1.0, 1.0, 0.0]), style.OCEAN_COLOR) < MIN_CONTRAST
    assert contrast_ratio(np.array([0.0, 0.0, 0.0]), "white") == pytest.approx(21.0)


def test_fleet_page_tables_fit_a_laptop_screen(experiment):
    """Human headers with units, no column without a value, no more than 11 columns a table,
    numbers as the reports round them, a failed float's reason across its row."""
    root, _ = experiment
    page = (root / "out" / "fleet.html").read_text()
    summary = pd.read_csv(root / "out" / "summary.csv", keep_default_na=False, na_values=[""])
    tables = re.findall(r'<table class="fleet (\w+)">(.*?)</table>', page, flags=re.S)
    assert [name for name, _ in tables] == ["floats", "parameters", "motion"]
    parameters, motion = tables[1][1], tables[2][1]
    assert "Sound speed used" in parameters and "Lagrangian time scale" not in parameters
    assert "Lagrangian time scale" in motion and "Sound speed used" not in motion
    for _, body in tables:
        rows = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in body.split("<tr>")[1:]]
        head = [re.sub("<[^>]*>", "", h) for h in rows[0]]
        assert len(head) <= 11
        assert not any("_" in h for h in head), head  # no snake_case
        full = [r for r in rows[1:] if len(r) == len(head)]  # failed rows span their cells
        for k, h in enumerate(head):
            assert any(re.sub("<[^>]*>", "", r[k]).strip() for r in full), f"empty column {h}"
    assert "Called clutter (%)" in page and "Filtered end to recovery fix (km)" in page
    floats = tables[0][1]
    for _, row in summary[summary["status"] == "ok"].iterrows():
        (cells,) = [r for r in floats.split("<tr>") if f">{row['float']}</a>" in r]
        shown = [float(v) for v in re.findall(r'<td class="num">([-\d.]+)</td>', cells)]
        for expected in (100 * row["clutter_fraction"], row["end_distance_km"]):  # one decimal
            assert any(abs(v - expected) <= 0.05 + 1e-9 and f"{v:.1f}" == str(v) for v in shown)
        track = xr.load_dataset(root / "out" / row["float"] / "track.nc")
        for name, digits in (("sound_speed", 1), ("sigma", 2)):  # ± only where estimated
            value, sd = float(track[name]), float(track[f"{name}_std"])
            text = f"{value:.{digits}f}" + (f" ± {sd:.{digits}f}" if np.isfinite(sd) else "")
            assert f'<td class="num">{text}</td>' in tables[1][1], name
    reason = html.escape(summary["reason"].iloc[2])
    assert re.search(rf'<td class="reason" colspan="\d+">{re.escape(reason)}</td>', floats)


def test_fleet_of_failed_floats_is_a_table_without_map(tmp_path):
    (tmp_path / "bad.nc").write_bytes(b"not a record")
    table = track_many([tmp_path / "bad.nc"], tmp_path / "out", CONFIG, figures=float_figures)
    assert write_fleet(tmp_path / "out", table) == ["fleet.html"]
    page = (tmp_path / "out" / "fleet.html").read_text()
    assert "No float was tracked" in page and external_references(page) == []
    assert not (tmp_path / "out" / "fleet.png").exists()
    with pytest.raises(ValueError, match="no tracks"):
        fleet_map({})


@pytest.mark.parametrize("n", [0, 1, 2, 32])
def test_float_colors_are_distinct(n):
    colors = float_colors(n)
    assert colors.shape == (n, 4) and len({tuple(c) for c in colors}) == n


# --- --strict, dropped hand labels, --scheduler ---------------------------------------------


def test_batch_strict_exits_3_and_dropped_labels_are_warned(tmp_path):
    """A float tracked with a sound speed 10 % too high fails its quality checks: a warning,
    exit 0; with --strict exit 3 and the count. A record with inconsistent hand labels is
    tracked without them and said so, as track-float does for one float."""
    record = simulate.dimes_float767(seed=12, days=60)[0]
    write_float(record.assign(sound_speed=record["sound_speed"] * 1.1), tmp_path / "fast.nc")
    labelled = simulate.dimes_float767(seed=3, days=8)[0]
    labels = labelled["source_label"].values
    labelled["source_label"] = labelled["source_label"].copy(data=np.where(labels == 0, 12, labels))
    labelled.to_netcdf(tmp_path / "labels.nc")  # write_float refuses inconsistent labels
    files = [str(tmp_path / "fast.nc"), str(tmp_path / "labels.nc")]
    args = ["--particles", "1000", "--seed", "1", "--no-calibrate", "--no-plots", "--workers", "1"]
    loose = CliRunner().invoke(track_float, [*files, "--out", str(tmp_path / "a"), *args, "-q"])
    assert loose.exit_code == 0, loose.output
    table = pd.read_csv(tmp_path / "a" / "summary.csv", keep_default_na=False, na_values=[""])
    assert list(table["status"]) == ["ok", "ok"] and table["quality_failed"][0] > 0
    bad = int((table["quality_failed"] > 0).sum())
    stderr = loose.stderr.strip().splitlines()
    note = f"warning: {tmp_path / 'labels.nc'}: source_label: unknown label 12"
    assert [line for line in stderr if line.startswith(note)] == [f"warning: {table.warning[1]}"]
    assert pd.isna(table["warning"][0]) and "ignored" in table["warning"][1]  # '' read as NaN
    single = CliRunner().invoke(track_float, [files[1], "--out", str(tmp_path / "one"), *args[:6]])
    assert single.exit_code == 0 and f"warning: {table.warning[1]}\n" in single.stderr
    assert f"warning: {bad} float(s) failed a track quality check" in stderr

    strict = CliRunner().invoke(
        track_float, [*files, "--out", str(tmp_path / "b"), *args, "-q", "--strict"]
    )
    assert strict.exit_code == 3, strict.output
    assert strict.stderr.strip().splitlines()[-1] == (
        f"Error: {bad} float(s) failed a track quality check (--strict)"
    )
    assert (tmp_path / "b" / "fast" / "track.nc").is_file()
    assert (tmp_path / "b" / "summary.csv").read_text() != ""


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("tcp://127.0.0.1:9", "'tcp://127.0.0.1:9': cannot connect (Timed out"),
        ("xyz://host:1", "'xyz://host:1': not a scheduler address (unknown address scheme"),
        ("127.0.0.1:port", "'127.0.0.1:port': not a scheduler address ("),
    ],
)
def test_scheduler_that_cannot_be_reached_is_one_line(tmp_path, address, expected):
    for name in ("a", "b"):
        (tmp_path / f"{name}.nc").write_bytes(b"x")
    argv = [str(tmp_path / "a.nc"), str(tmp_path / "b.nc"), "--scheduler", address]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        run = CliRunner().invoke(track_float, [*argv, "--out", str(tmp_path / "o"), "-q"])
    assert run.exit_code == 2, run.output
    (line,) = run.output.strip().splitlines()
    assert line.startswith(f"Error: --scheduler {expected}")
    assert not (tmp_path / "o").exists()


def test_motion_table_holds_the_lagrangian_floats_only():
    """The fleet page's motion table: a row per float with a Lagrangian motion (± where
    estimated), none for a random walk's float, nothing when no float has one; the
    parameters table keeps the random walk's step and leaves the motion out."""
    nan = np.nan
    table = pd.DataFrame({
        "float": ["lag", "rw"], "status": ["ok", "ok"], "file": ["lag.nc", "rw.nc"],
        "sigma": [4.9, 5.0], "sigma_std": [0.1, nan],
        "process_noise": [nan, 6.7], "process_noise_std": [nan, 0.2],
        "time_scale": [3.2, nan], "time_scale_std": [0.3, nan],
        "diffusivity": [581.0, nan], "diffusivity_std": [nan, nan],
    })  # fmt: skip
    motion = parameters_table(table, MOTION_ROWS, "motion")
    assert motion.startswith('<table class="fleet motion">')
    rows = motion.split("<tr>")[2:]
    assert len(rows) == 1 and ">lag<" in rows[0]
    assert "3.2 ± 0.3" in rows[0] and '<td class="num">581</td>' in rows[0]
    assert "Lagrangian time scale" in motion and "Process noise" not in motion
    params = parameters_table(table)
    assert "Process noise" in params and "Lagrangian time scale" not in params
    assert params.count("<tr>") == 3  # the header and both floats
    assert parameters_table(table.drop(columns=["time_scale", "diffusivity"]).iloc[1:],
                            MOTION_ROWS, "motion") == ""  # fmt: skip
