"""The DIMES experiment replayed (``rankmodels.tracking.replay``, ``simulate-experiment``):
real metadata in, simulated floats out, checked against the tables read independently."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.experiment_metadata import read_metadata
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.records import active_sources, validate_float
from rankmodels.tracking.replay import WINDOW_START, draw_experiment, replay_float
from rankmodels.tracking.simulate import SignalSpec, range_dependent_detection
from rankmodels_app.experiment import simulate_experiment
from rankmodels_app.track import track_float
from tests.conftest import SHARED_DATA

DAY = np.timedelta64(86_400_000_000_000, "ns")
SPEC = SignalSpec(p_detect=range_dependent_detection(), sound_speed=1500.0, window_length=4800.0)
SHARED = {"true_sound_speed": 1485.0, "offset_error": 2.0, "source_drift": 0.01, "multipath": 0.02}
#: Float 919: 51 days (2010-02-06 .. 03-29), all 12 DIMES sources moored; float 759:
#: 2009-02-04 .. 11-29, before the second deployment (US1-x only); float 754: clock -2 -> 45 s.
FLOATS = ("919", "759", "754")


def _table(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {row.get("float_id") or row["source_id"]: row for row in rows}


@pytest.fixture(scope="module")
def dimes() -> Path:
    folder = SHARED_DATA / "dimes"
    if not folder.is_dir():
        pytest.skip(f"DIMES metadata not found at {folder}")
    return folder


@pytest.fixture(scope="module")
def replay(dimes):
    """The three floats replayed in one experiment (754 cut at 40 days), as (record, truth)."""
    meta = read_metadata(dimes)
    experiment = draw_experiment(meta, 5, spec=SPEC, **SHARED)
    out = {}
    for float_id in FLOATS:
        cut = 40 if float_id == "754" else None
        record, truth = replay_float(experiment, meta.float_entry(float_id), max_days=cut)
        out[float_id] = (validate_float(record), truth)
    return out


def _when(text: str) -> np.datetime64:
    return np.datetime64(text, "ns")


def test_records_start_and_end_at_the_real_positions(replay, dimes):
    floats = _table(dimes / "dimes_floats.csv")
    for float_id in ("919", "759"):
        record, truth = replay[float_id]
        row = floats[float_id]
        assert float(record["launch_lat"]) == float(row["launch_lat"])
        assert float(record["launch_lon"]) == float(row["launch_lon"])
        assert record["launch_time"].values == _when(row["launch_date"])
        assert float(record["recovery_lat"]) == float(row["recovery_lat"])
        assert float(record["recovery_lon"]) == float(row["recovery_lon"])
        assert record["recovery_time"].values == _when(row["recovery_date"])
        # the true track leaves the launch and reaches the recovery: within a day of drift
        first = great_circle_km(
            truth["lat"][0], truth["lon"][0], float(row["launch_lat"]), float(row["launch_lon"])
        )
        last = great_circle_km(
            truth["lat"][-1],
            truth["lon"][-1],
            float(row["recovery_lat"]),
            float(row["recovery_lon"]),
        )
        assert first < 25.0 and last < 25.0, (float_id, first, last)
        # daily cycles at the window start, from the day after the launch to the day before
        times = record["time"].values
        assert times[0] == _when(row["launch_date"]) + DAY + np.timedelta64(3600, "s")
        assert times[-1] == _when(row["recovery_date"]) - DAY + np.timedelta64(3600, "s")
        assert (np.diff(times) == DAY).all()


def test_a_cut_record_surfaces_on_its_track(replay, dimes):
    record, truth = replay["754"]
    launch = _when(_table(dimes / "dimes_floats.csv")["754"]["launch_date"])
    assert record["recovery_time"].values == launch + 40 * DAY
    assert record.attrs["sim_cut_days"] == 40
    assert record["time"].values[-1] < record["recovery_time"].values
    assert record.sizes["cycle"] == 39
    step = great_circle_km(
        truth["lat"][-1], truth["lon"][-1], record["recovery_lat"], record["recovery_lon"]
    )
    assert 0.0 < step < 25.0


def test_records_state_the_clock_offsets_measured_at_launch_and_at_their_end(replay, dimes):
    """The table's offsets (whole seconds) for a whole record; for a cut one the true clock at
    the cut, rounded to the second (float 754: -2 s drifting to 45 s over 720 days)."""
    floats = _table(dimes / "dimes_floats.csv")
    for float_id in ("919", "759"):
        record, _ = replay[float_id]
        row = floats[float_id]
        assert float(record["clock_offset_launch"]) == float(row["clock_offset_initial"])
        assert float(record["clock_offset_recovery"]) == float(row["clock_offset_final"])
    record, truth = replay["754"]
    at_cut = float(truth["clock_offset"]) + float(truth["clock_drift"]) * 40.0
    assert float(record["clock_offset_recovery"]) == round(at_cut)
    assert abs(float(record["clock_offset_recovery"]) - at_cut) <= 0.5
    assert float(record["clock_offset_recovery"]) != float(record["clock_offset_launch"])


def test_float_clock_drift_replaces_the_tables(dimes):
    meta = read_metadata(dimes)
    experiment = draw_experiment(meta, 5, spec=SPEC, float_clock_drift=1.0, **SHARED)
    record, truth = replay_float(experiment, meta.float_entry("919"))
    days = float((record["recovery_time"] - record["launch_time"]) / DAY)
    assert float(truth["clock_drift"]) == 1.0
    # a second a day: the reading at the surfacing, not a day before or after
    assert float(record["clock_offset_recovery"]) == round(
        float(record["clock_offset_launch"]) + days
    )
    with pytest.raises(InputError) as info:
        draw_experiment(meta, 5, spec=SPEC, float_clock_drift=math.inf)
    assert info.value.field == "float_clock_drift"


def test_only_the_sources_moored_during_the_record(replay, dimes):
    sources = _table(dimes / "sound_sources.csv")
    for float_id, (record, _) in replay.items():
        begin = record["launch_time"].values
        end = record["recovery_time"].values
        expected = [
            name
            for name, row in sources.items()
            if row["mission"] == "DIMES"
            and _when(row["deploy_date"]) <= end
            and _when(row["extraction_date"]) >= begin
        ]
        assert list(record["source"].values) == expected, float_id
    assert list(replay["759"][0]["source"].values) == [f"US1-{k}" for k in range(1, 7)]
    assert replay["919"][0].sizes["source"] == 12
    # a source is heard only while moored: US2-1 was deployed 2010-02-02
    record, truth = replay["919"]
    heard = truth["true_label"].values
    active = active_sources(record)
    for c, k in zip(*np.nonzero(heard >= 0), strict=True):
        assert active[c, heard[c, k]]


def test_arrivals_follow_the_true_clock_speed_offsets_and_drifts(replay, dimes):
    """Direct arrivals minus the truth's prediction -- distance / true speed + true offset +
    true drift * days since deployment + float clock -- are the TOA noise: mean 0, sigma 5 s.
    The float clock is the table's offset at launch, drifting to its offset at recovery."""
    floats = _table(dimes / "dimes_floats.csv")
    residuals = []
    for float_id, (record, truth) in replay.items():
        row = floats[float_id]
        start, stop = float(row["clock_offset_initial"]), float(row["clock_offset_final"])
        days = (_when(row["recovery_date"]) - _when(row["launch_date"])) / DAY
        assert float(truth["clock_offset"]) == start
        assert float(truth["clock_offset"]) + float(truth["clock_drift"]) * days == pytest.approx(
            stop, abs=1e-9
        )
        since_launch = (record["time"].values - record["launch_time"].values) / DAY
        since_deploy = (
            record["time"].values[:, None] - record["source_start_time"].values[None, :]
        ) / DAY
        dist = great_circle_km(
            truth["lat"].values[:, None],
            truth["lon"].values[:, None],
            record["source_lat"].values[None, :],
            record["source_lon"].values[None, :],
        )
        predicted = (
            dist * 1000.0 / 1485.0
            + truth["source_offset"].values
            + truth["source_drift"].values * since_deploy
            + (start + float(truth["clock_drift"]) * since_launch)[:, None]
        )
        label = truth["true_label"].values
        for c, k in zip(*np.nonzero(label >= 0), strict=True):
            i = label[c, k]
            if truth["multipath_delay"].values[c, i] == 0.0:
                residuals.append(float(record["toa"].values[c, k]) - predicted[c, i])
    residuals = np.array(residuals)
    assert residuals.size > 300
    assert abs(residuals.mean()) < 4 * 5.0 / np.sqrt(residuals.size)
    assert residuals.std() == pytest.approx(5.0, rel=0.1)


def test_shared_truth_is_one_for_all_floats(replay, dimes):
    sources = _table(dimes / "sound_sources.csv")
    true_offset: dict[str, float] = {}
    for record, truth in replay.values():
        assert float(truth["sound_speed"]) == 1485.0
        assert float(record["sound_speed"]) == 1500.0
        assert "source_drift" not in record  # the table states no drift for DIMES
        for k, name in enumerate(record["source"].values):
            name = str(name)
            written = float(record["source_offset"][k])
            assert written == float(sources[name]["offset"]) - WINDOW_START
            assert float(truth["source_drift"][k]) == 0.01
            true = float(truth["source_offset"][k])
            assert true_offset.setdefault(name, true) == true
    errors = np.array(
        [true_offset[n] - float(sources[n]["offset"]) + WINDOW_START for n in true_offset]
    )
    assert len(true_offset) == 12 and np.all(errors != 0.0)
    assert 0.5 < errors.std() < 4.0


def test_the_shared_truth_depends_on_the_seed_only(dimes):
    meta = read_metadata(dimes)
    one = draw_experiment(meta, 5, spec=SPEC, **SHARED)
    again = draw_experiment(meta, 5, spec=SPEC, **{**SHARED, "multipath": 0.0})
    other = draw_experiment(meta, 6, spec=SPEC, **SHARED)
    assert [s.true_offset for s in one.sources] == [s.true_offset for s in again.sources]
    assert [s.true_offset for s in one.sources] != [s.true_offset for s in other.sources]


# --- the metadata tables ----------------------------------------------------------------

SOURCES_HEADER = "source_id,lat,lon,mission,drift,deploy_date,offset,extraction_date\n"
FLOATS_HEADER = (
    "float_id,launch_lat,launch_lon,launch_date,recovery_lat,recovery_lon,recovery_date,"
    "clock_offset_initial,clock_offset_final\n"
)


def _metadata(folder: Path, sources: str, floats: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sound_sources.csv").write_text(SOURCES_HEADER + sources)
    (folder / "dimes_floats.csv").write_text(FLOATS_HEADER + floats)
    return folder


def test_source_drift_is_stated_per_day_of_the_deployment(tmp_path):
    sources = (
        "A,-58,-100,DIMES,10,2009-01-01,3900,2009-04-11\n"  # 10 s over 100 days
        "B,-57,-90,DIMES,0,2009-01-01,4500,2099-12-29\n"
    )
    meta = read_metadata(
        _metadata(tmp_path, sources, "1,-57,-95,2009-01-10,-58,-94,2009-03-01,0,1\n")
    )
    assert meta.sources[1].recovered is None
    experiment = draw_experiment(meta, 1, spec=SPEC, source_drift=0.002)
    assert [s.file_drift for s in experiment.sources] == pytest.approx([0.1, 0.0])
    assert [s.true_drift for s in experiment.sources] == pytest.approx([0.102, 0.002])
    record, truth = replay_float(experiment, meta.floats[0])
    assert record["source_drift"].values == pytest.approx([0.1, 0.0])
    assert truth["source_drift"].values == pytest.approx([0.102, 0.002])
    assert float(truth["clock_drift"]) == pytest.approx(1.0 / 50.0)
    moored = sources.replace("0,2009-01-01,4500", "3,2009-01-01,4500")
    meta = read_metadata(
        _metadata(tmp_path, moored, "1,-57,-95,2009-01-10,-58,-94,2009-03-01,0,1\n")
    )
    with pytest.raises(InputError, match="B: drift 3 s over a deployment that has not ended"):
        draw_experiment(meta, 1, spec=SPEC)


@pytest.mark.parametrize(
    ("sources", "floats", "message"),
    [
        (
            "A,-58,abc,DIMES,0,2009-01-01,3900,2099-12-29\n",
            None,
            "line 2, column 3 (lon): expected a number",
        ),
        (
            "A,-95,-100,DIMES,0,2009-01-01,3900,2099-12-29\n",
            None,
            "column 2 (lat): expected degrees",
        ),
        (
            "A,-58,-100,DIMES,0,2009-01-01,86400,2099-12-29\n",
            None,
            "(offset): expected seconds after midnight",
        ),
        ("A,-58,-100,DIMES,0,2009-05-01,3900,2009-01-01\n", None, "not before deploy_date"),
        (
            "A,-58,-100,DIMES,0,2009-01-01,3900,2099-12-29\nA,-58,-100,DIMES,0,2009-01-01,3900,2099-12-29\n",
            None,
            "'A' appears twice",
        ),
        (
            None,
            "1,-57,-95,2009-03-01,-58,-94,2009-03-01,0,1\n",
            "expected a date after launch_date",
        ),
        (None, "../x,-57,-95,2009-01-10,-58,-94,2009-03-01,0,1\n", "expected a plain name"),
        (
            None,
            "1,-57,-95,2009-01-10,-58,-94,2009-03-01,0,700\n",
            "float clock offset in [-600, 600]",
        ),
        (None, "1,-57,-95,2009-01-10,-58,-94,2009-01-11,0,5\n", "drift from launch to recovery"),
        (None, "1,-57,-95,2009-01-10,-58,-94\n", "6 fields, expected 9"),
    ],
)
def test_garbled_metadata_is_refused_naming_file_line_and_column(
    tmp_path, sources, floats, message
):
    good_sources = "A,-58,-100,DIMES,0,2009-01-01,3900,2099-12-29\n"
    good_floats = "1,-57,-95,2009-01-10,-58,-94,2009-03-01,0,1\n"
    folder = _metadata(tmp_path, sources or good_sources, floats or good_floats)
    with pytest.raises(InputError, match=re.escape(message)) as err:
        read_metadata(folder)
    table = "sound_sources.csv" if sources else "dimes_floats.csv"
    assert err.value.path == str(folder / table)


# --- the command ----------------------------------------------------------------------------


def _run(*args: str):
    """simulate-experiment; with ``--floats 1`` unless floats are chosen (a test that fails to
    fail would otherwise replay all 140)."""
    chosen = any(a in ("--float", "--floats") for a in args)
    return CliRunner().invoke(
        simulate_experiment, [*args, "--quiet", *([] if chosen else ["--floats", "1"])]
    )


def test_simulate_experiment_end_to_end_and_trackable(dimes, tmp_path):
    out = tmp_path / "replay"
    args = [str(dimes), "--float", "767", "--float", "919", "--max-days", "8", "--seed", "7"]
    run = _run(*args, "--out", str(out))
    assert run.exit_code == 0, run.output
    assert run.output == ""  # --quiet: no summary
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "experiment.json",
        "experiment_floats.csv",
        "experiment_sources.csv",
        "float767.nc",
        "float767_truth.nc",
        "float919.nc",
        "float919_truth.nc",
    ]
    summary = json.loads((out / "experiment.json").read_text())
    assert summary["true_sound_speed"] == summary["file_sound_speed"] == 1500.0
    assert [f["float_id"] for f in summary["floats"]] == ["767", "919"]
    assert len(summary["sources"]) == 12
    heard = {s["source"]: s["floats"] for s in summary["sources"]}
    assert heard["US1-1"] == 2 and heard["UK1-1"] == 1  # 767's first 8 days: US1-x only
    with (out / "experiment_sources.csv").open() as handle:
        assert [row["source"] for row in csv.DictReader(handle)] == list(heard)
    record = xr.open_dataset(out / "float767.nc")
    assert record.sizes["cycle"] == 7 and record.attrs["sim_real_float_id"] == "767"
    # track-float FOLDER/ tracks the replay as it tracks any folder of records
    tracks = tmp_path / "tracks"
    settings = [
        "--particles",
        "500",
        "--seed",
        "1",
        "--no-calibrate",
        "--no-plots",
        "--workers",
        "1",
    ]
    run = CliRunner().invoke(track_float, [str(out), "--out", str(tracks), *settings])
    assert run.exit_code == 0, run.output
    assert "2 of 2 floats tracked" in run.stderr
    for name in ("float767", "float919"):
        score = score_track(
            xr.open_dataset(tracks / name / "track.nc"), xr.open_dataset(out / f"{name}_truth.nc")
        )
        assert score["median_km"] < 30.0, (name, score)


def _undated(path):
    """The file's dataset without the attributes that say when it was written."""
    ds = xr.open_dataset(path)
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("date_created", "history")}
    return ds


def test_same_seed_gives_identical_files(dimes, tmp_path):
    args = [
        str(dimes),
        "--floats",
        "2",
        "--max-days",
        "5",
        "--offset-error",
        "2",
        "--multipath",
        "0.1",
    ]
    for folder, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert _run(*args, "--seed", seed, "--out", str(tmp_path / folder)).exit_code == 0
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(files) == 7
    for name in files:
        a, b, c = (tmp_path / f / name for f in "abc")
        if name.endswith(".nc"):
            assert _undated(a).identical(_undated(b)), name
            assert not _undated(a).identical(_undated(c)), name
        else:
            assert a.read_bytes() == b.read_bytes(), name
    assert (tmp_path / "a" / "float741.nc").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--float", "12345"],
            "Error: --float: unknown float id '12345'; the floats table has 741",
        ),
        (["--floats", "2", "--float", "741"], "Error: --floats and --float: give one of them"),
        (["--true-sound-speed", "2000"], "Error: --true-sound-speed: expected a number in [1400"),
        (["--offset-error", "nan"], "Error: --offset-error: expected a number in [0, 60] s"),
        (["--source-drift-error", "2"], "Error: --source-drift-error: expected a number in [-1"),
        (["--max-days", "1"], "Error: Invalid value for '--max-days'"),
    ],
)
def test_bad_options_are_one_line_errors(dimes, tmp_path, argv, message):
    run = _run(str(dimes), "--out", str(tmp_path / "o"), *argv)
    assert run.exit_code == 2
    assert run.output.startswith(message), run.output
    assert run.output.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_missing_or_garbled_metadata_is_one_line_error(dimes, tmp_path):
    """(A Weddell source's row is garbled: every row is read, not only the replayed ones.)"""
    run = _run(str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"))
    assert run.exit_code == 2 and run.output.count("\n") == 1
    assert run.output.endswith("nowhere: no such file\n"), run.output
    run = _run(str(dimes / "dimes_floats.csv"), "--out", str(tmp_path / "o"))
    assert run.exit_code == 2 and "is a file" in run.output, run.output
    copy = tmp_path / "meta"
    shutil.copytree(dimes, copy)
    (copy / "dimes_floats.csv").unlink()
    run = _run(str(copy), "--out", str(tmp_path / "o"))
    assert run.exit_code == 2 and run.output.count("\n") == 1
    assert f"Error: {copy / 'dimes_floats.csv'}: no such file" in run.output
    shutil.copy(dimes / "dimes_floats.csv", copy)
    lines = (copy / "sound_sources.csv").read_text().splitlines(keepends=True)
    assert lines[2].startswith("W1b,")
    lines[2] = lines[2].replace("2005-12-15", "15/12/2005")
    (copy / "sound_sources.csv").write_text("".join(lines))
    run = _run(str(copy), "--out", str(tmp_path / "o"))
    assert run.exit_code == 2 and run.output.count("\n") == 1
    assert (
        "sound_sources.csv: line 3, column 8 (extraction_date): expected an ISO 8601" in run.output
    )
    assert not (tmp_path / "o").exists()
