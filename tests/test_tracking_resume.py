"""No work lost: ``track-float FOLDER/ --resume`` keeps the floats whose folders are complete
under the same record and settings (``manifest.json``, :mod:`rankmodels.tracking.manifest`),
redoes the others and says why, and a batch killed with SIGKILL leaves nothing unreadable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.files import remove_partial
from rankmodels.tracking import manifest as manifest_module
from rankmodels.tracking.batch import resume_checks, track_many
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.manifest import MANIFEST_FILE, check_manifest, float_manifest
from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels_app.track import track_float

CONFIG = TrackConfig(particles=120, seed=2, ensemble=10)


def _records(folder, n, days=5):
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        record, _ = dimes_float767(seed=10 + k, days=days)
        write_float(record, folder / f"f{k}.nc")
    return sorted(folder.glob("*.nc"))


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    files = _records(root / "in", 3)
    table = track_many(files, root / "out", CONFIG)
    return root, files, table


def _stamps(folder):
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}


def test_complete_folders_are_recognised_with_their_summary_rows(tracked):
    root, files, table = tracked
    checks = resume_checks(files, root / "out", CONFIG, figures=False)
    assert [c.complete for c in checks] == [True, True, True]
    for check, (_, row) in zip(checks, table.iterrows(), strict=True):
        for column, value in row.items():
            if isinstance(value, float) and np.isnan(value):
                assert np.isnan(check.row[column]), column
            elif isinstance(value, str):
                assert check.row[column] == value, column
            else:
                assert check.row[column] == pytest.approx(value, rel=1e-11), column
    written = json.loads((root / "out" / "f0" / MANIFEST_FILE).read_text())["written"]
    assert written == ["track.nc"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"particles": 121}, "settings changed: particles"),
        ({"seed": 3, "sigma": 4.0}, "settings changed: seed, sigma"),
        ({"calibrate_params": frozenset({"speed"})}, "settings changed: calibrate_params"),
    ],
)
def test_changed_settings_name_what_changed(tracked, change, reason):
    root, files, _ = tracked
    from dataclasses import replace

    checks = resume_checks(files, root / "out", replace(CONFIG, **change), figures=False)
    assert {c.reason for c in checks} == {reason} and not any(c.complete for c in checks)
    figures = resume_checks(files, root / "out", CONFIG, figures=True)
    assert {c.reason for c in figures} == {"settings changed: figures"}


def test_a_changed_record_a_missing_output_or_another_version_is_redone(tracked, monkeypatch):
    root, files, _ = tracked
    out = root / "out"
    wanted = float_manifest(files[0], CONFIG, figures=False)
    other, _ = dimes_float767(seed=99, days=5)
    changed = root / "changed.nc"
    write_float(other, changed)
    assert check_manifest(out / "f0", float_manifest(changed, CONFIG, figures=False)).reason == (
        "the record changed"
    )
    monkeypatch.setattr(manifest_module, "__version__", "0.0.1")
    later = float_manifest(files[0], CONFIG, figures=False)
    assert check_manifest(out / "f0", later).reason.startswith("made by rankmodels ")
    assert check_manifest(root / "nowhere", wanted).reason == "no complete output"
    broken = root / "broken"
    broken.mkdir()
    (broken / MANIFEST_FILE).write_text("{not json")
    assert check_manifest(broken, wanted).reason == "no complete output"


def test_a_float_without_its_track_is_redone_and_the_others_left_untouched(tmp_path):
    files = _records(tmp_path / "in", 3)
    out = tmp_path / "out"
    first = track_many(files, out, CONFIG)
    (out / "f1" / "track.nc").unlink()
    stamps = {name: _stamps(out / name) for name in ("f0", "f2")}
    checks = resume_checks(files, out, CONFIG, figures=False)
    assert [c.reason for c in checks] == ["", "no complete output", ""]
    kept = [c.row if c.complete else None for c in checks]
    again = track_many(files, out, CONFIG, kept=kept)
    assert {name: _stamps(out / name) for name in ("f0", "f2")} == stamps
    assert (out / "f1" / "track.nc").is_file()
    pd.testing.assert_frame_equal(
        again.drop(columns="run_time_s"), first.drop(columns="run_time_s"), rtol=1e-11
    )
    assert all(c.complete for c in resume_checks(files, out, CONFIG, figures=False))


def test_a_failed_float_has_no_manifest_and_is_tried_again(tmp_path):
    files = _records(tmp_path / "in", 1)
    bad = tmp_path / "in" / "bad.nc"
    bad.write_bytes(b"not a netcdf file")
    table = track_many([bad, *files], tmp_path / "out", CONFIG)
    assert list(table["status"]) == ["failed", "ok"]
    assert not (tmp_path / "out" / "bad" / MANIFEST_FILE).exists()
    checks = resume_checks([bad, *files], tmp_path / "out", CONFIG, figures=False)
    assert [c.complete for c in checks] == [False, True]


def test_leftover_temporary_files_are_removed_before_a_float_is_redone(tmp_path):
    folder = tmp_path / "f0"
    folder.mkdir()
    leftovers = [
        os.path.basename(tempfile.mkstemp(prefix=p, suffix=s, dir=folder)[1])
        for p, s in ((".track.", ".nc"), (".map.", ".png"), (".report.html.", ".tmp"))
    ]
    (folder / "notes.txt").write_text("mine")
    (folder / ".hidden").write_text("mine too")
    assert remove_partial(folder) == sorted(leftovers)
    assert sorted(p.name for p in folder.iterdir()) == [".hidden", "notes.txt"]
    assert remove_partial(tmp_path / "nowhere") == []


def _cli(args):
    return CliRunner().invoke(track_float, [*args, "--particles", "120", "--seed", "2"])


def test_cli_resume_keeps_complete_floats_and_says_which_are_redone(tmp_path):
    files = _records(tmp_path / "in", 3)
    out = tmp_path / "out"
    base = [str(tmp_path / "in"), "-o", str(out), "--workers", "1", "--no-plots"]
    assert _cli([*base, "-q"]).exit_code == 0
    summary = (out / "summary.csv").read_text()
    stamps = {f.stem: _stamps(out / f.stem) for f in files}
    run = _cli([*base, "--resume"])
    assert run.exit_code == 0, run.output
    assert "resume: kept 3 of 3 floats (complete under the same record and settings)\n" in (
        run.output
    )
    assert {f.stem: _stamps(out / f.stem) for f in files} == stamps
    assert (out / "summary.csv").read_text() == summary
    (out / "f2" / "track.nc").unlink()
    run = CliRunner().invoke(track_float, [*base, "--resume", "--particles", "130", "--seed", "2"])
    assert run.exit_code == 0, run.output
    line = [x for x in run.output.splitlines() if x.startswith("resume:")]
    assert line == [
        "resume: kept 0 of 3 floats (complete under the same record and settings); redoing 3: "
        "f0, f1: settings changed: particles; f2: no complete output"
    ]
    single = _cli([str(files[0]), "-o", str(tmp_path / "one"), "--resume"])
    assert single.exit_code == 2
    assert single.output == "Error: --resume: only for many floats (several files or a folder)\n"


def test_a_batch_killed_with_sigkill_resumes_where_it_stopped(tmp_path):
    """Six floats tracked one at a time, the whole process group killed with SIGKILL once two
    folders are complete: every track.nc left is readable; --resume redoes only the other
    four, leaves the two finished folders untouched and ends with six tracks and a summary
    naming all six."""
    files = _records(tmp_path / "in", 6, days=30)
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "rankmodels_app.track", str(tmp_path / "in"), "-o", str(out),
        "--workers", "1", "--no-plots", "-q", "--particles", "400", "--seed", "1",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    process = subprocess.Popen(command, start_new_session=True, env=env)
    deadline = time.monotonic() + 600
    try:
        while len(list(out.glob(f"*/{MANIFEST_FILE}"))) < 2:
            assert process.poll() is None, "the batch ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = sorted(p.parent.name for p in out.glob(f"*/{MANIFEST_FILE}"))
    assert 2 <= len(done) < 6
    for track in out.glob("*/track.nc"):
        xr.load_dataset(track)  # readable
    stamps = {name: _stamps(out / name) for name in done}
    resumed = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, check=False
    )
    assert resumed.returncode == 0, resumed.stderr
    assert {name: _stamps(out / name) for name in done} == stamps
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["float"]) == [f.stem for f in files]
    assert set(summary["status"]) == {"ok"}
    assert all((out / f.stem / "track.nc").is_file() for f in files)
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no temporary file left
