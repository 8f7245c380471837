"""Tracking many floats: ``track-float a.nc b.nc ...`` / ``track-float FOLDER/`` on a 2-worker
Dask LocalCluster, failed floats reported while the others go on, the summary table, and
``rankmodels.tracking.batch.track_many`` (serial = Dask)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.tracking import simulate
from rankmodels.tracking.batch import SUMMARY_COLUMNS, track_many
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.records import read_float, write_float
from rankmodels_app.track import track_float
from tests._plots_data import great_circle_km
from tests._report_check import decoded_images, external_references

SETTINGS = ["--particles", "300", "--seed", "4", "--quiet"]
CONFIG = TrackConfig(particles=300, seed=4, calibrate=True)  # as track-float (default on)


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
        track_float, [str(root / "in"), "--out", str(root / "out"), "--workers", "2", *SETTINGS]
    )
    return root, run


def test_batch_tracks_the_good_floats_and_reports_the_corrupt_one(experiment):
    root, run = experiment
    assert run.exit_code == 2, run.output
    errors = [line for line in run.stderr.strip().splitlines() if line.startswith("Error")]
    corrupt = root / "in" / "f3.nc"
    assert len(errors) == 2 and errors[1] == "Error: 1 of 3 floats failed"
    assert errors[0].startswith(f"Error: {corrupt}: not a readable NetCDF float record")
    assert "2 of 3 floats tracked" in run.stdout
    for name in ("f1", "f2"):
        folder = root / "out" / name
        assert {p.name for p in folder.iterdir()} == {
            "track.nc", "map.png", "toa.png", "diagnostics.png", "report.html",
        }  # fmt: skip
        report = (folder / "report.html").read_text()
        assert external_references(report) == [] and len(decoded_images(report)) == 3
        assert "Comparison with the true track" in report  # the truth beside it was found
    assert not (root / "out" / "f3").exists()


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
        assert row["mean_ess"] == pytest.approx(float(track["ess"].mean()))
        labels = track["association"].values
        assert row["clutter_fraction"] == pytest.approx((labels == -1).sum() / (labels >= -1).sum())
        last = np.flatnonzero(np.isfinite(track["lat_filtered"].values))[-1]
        expected = great_circle_km(
            track["lat_filtered"].values[last],
            track["lon_filtered"].values[last],
            record["recovery_lat"].item(),
            record["recovery_lon"].item(),
        )
        assert row["end_distance_km"] == pytest.approx(expected, rel=1e-6)
        assert row["calibrated"] == track.attrs["calibrated"] != ""
        assert row["sound_speed"] == pytest.approx(float(track["sound_speed"]))
        assert row["clock_drift_std"] == pytest.approx(float(track["clock_drift_std"]))
        assert row["quality"] == "passed" or row["quality_failed"] > 0
        assert row["run_time_s"] > 0
    doc = json.loads((root / "out" / "summary.json").read_text())
    assert doc["columns"] == SUMMARY_COLUMNS
    assert [r["status"] for r in doc["floats"]] == ["ok", "ok", "failed"]
    assert doc["floats"][2]["cycles"] is None and doc["floats"][0]["cycles"] == table["cycles"][0]


def test_track_many_serially_gives_the_same_table_as_on_dask(experiment, tmp_path):
    root, _ = experiment
    files = [root / "in" / f"{n}.nc" for n in ("f3", "f1")]
    table = track_many(files, tmp_path, CONFIG, plots=False)
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
    assert {p.name for p in (tmp_path / "f1").iterdir()} == {"track.nc"}  # plots=False


def test_a_float_with_bad_content_fails_alone(tmp_path):
    """A readable NetCDF file that is not a valid record is a failed row naming the variable."""
    record, _ = simulate.dimes_float767(seed=5, days=6)
    write_float(record, tmp_path / "good.nc")
    record.drop_vars("launch_lat").to_netcdf(tmp_path / "nolaunch.nc")
    table = track_many(
        [tmp_path / "nolaunch.nc", tmp_path / "good.nc"], tmp_path / "out", CONFIG, plots=False
    )
    assert list(table["status"]) == ["failed", "ok"]
    assert table["reason"][0].startswith(f"{tmp_path / 'nolaunch.nc'}: launch_lat: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["{d}/a/x.nc", "{d}/b/x.nc"], "would both write to the folder 'x'"),
        (["{d}/empty"], "{d}/empty: no float records (*.nc) in this folder"),
        (["{d}/a/x.nc", "--workers", "2"], "--workers/--scheduler: only for many floats"),
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
