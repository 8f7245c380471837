"""``track-float`` end to end through the command line, including bad input (exit 2)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.tracking.config import LIMITS
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.summary import TrackSummary
from rankmodels_app.cli import cli
from rankmodels_app.track import _summary_lines, track_float

_RECORD, _TRUTH = dimes_float767(seed=11, days=30)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.nc"
    write_float(_RECORD, path)
    return path


def _run(args):
    result = CliRunner().invoke(track_float, [str(a) for a in args], catch_exceptions=False)
    return result


def test_track_float_writes_the_track(small, tmp_path):
    out = tmp_path / "out"
    res = _run([small, "--out", out, "--particles", 400, "--seed", 3])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert "29 cycles" in lines[0] and "mean ESS" in lines[1]
    assert "arrivals called clutter" in lines[1] and "run time" in lines[-1]
    assert lines[2].startswith("calibrated: ")
    # what was kept, one line per reason, the Lagrangian statistics, then the quality checks
    assert all(line.startswith("kept (") for line in lines[3:-3]) and len(lines) <= 8
    assert lines[-3].startswith("Lagrangian statistics: mean velocity ")
    assert lines[-2].startswith("quality checks: ")
    for name in ("track.nc", "map.png", "toa.png", "report.html"):
        assert (out / name).stat().st_size > 0
    track = xr.load_dataset(out / "track.nc")
    n_cyc, r, s = 29, 4, 12
    shapes = {
        "lat": (n_cyc,),
        "lon": (n_cyc,),
        "lat_std": (n_cyc,),
        "lon_std": (n_cyc,),
        "position_cov": (n_cyc, 2, 2),
        "lat_filtered": (n_cyc,),
        "lon_filtered": (n_cyc,),
        "association": (n_cyc, r),
        "association_prob": (n_cyc, r),
        "association_posterior": (n_cyc, r, s + 1),
        "toa": (n_cyc, r),
        "predicted_toa": (n_cyc, s),
        "ess": (n_cyc,),
        "loglik": (n_cyc,),
        "source_lat": (s,),
        "source_lon": (s,),
    }
    for name, shape in shapes.items():
        assert track[name].shape == shape, name
    assert list(track["candidate"].values)[-1] == "clutter"
    assert track["time"].dtype.kind == "M"
    for key in (
        "float_id",
        "engine",
        "particles",
        "seed",
        "sigma",
        "p_detect",
        "clutter_rate",
        "sound_speed",
        "process_noise_km",
        "smoothed",
        "rankmodels_version",
        "created",
        "simulated",
        "source_file",
    ):
        assert key in track.attrs, key
    assert track.attrs["sound_speed"] == 1480.0 and track.attrs["smoothed"] == 1
    # association: -2 exactly where no arrival; probabilities are the posterior's maximum
    toa = track["toa"].values
    assoc = track["association"].values
    assert ((assoc == -2) == np.isnan(toa)).all()
    post = track["association_posterior"].values
    ok = ~np.isnan(toa)
    assert np.allclose(post[ok].sum(axis=1), 1.0)
    assert np.allclose(track["association_prob"].values[ok], post[ok].max(axis=1))
    inactive = ~np.isfinite(track["predicted_toa"].values)
    assert inactive[:, 6:].all() and not inactive[:, :6].any()  # US2/UK1 not yet deployed
    # a short record tracks well too (the float drifts at float 767's mean speed)
    assert score_track(track, _TRUTH)["median_km"] < 15
    # the seed makes runs reproducible
    again = tmp_path / "again"
    _run([small, "--out", again, "--particles", 400, "--seed", 3, "--quiet", "--no-plots"])
    assert np.array_equal(xr.load_dataset(again / "track.nc")["lat"], track["lat"])


@pytest.mark.parametrize("engine", ["labels", "baseline"])
def test_other_engines_and_no_smooth(small, tmp_path, engine):
    out = tmp_path / engine
    res = _run(
        [
            small,
            "--out",
            out,
            "--particles",
            300,
            "--engine",
            engine,
            "--no-smooth",
            "--no-plots",
            "--quiet",
        ]
    )
    assert res.exit_code == 0, res.output
    track = xr.load_dataset(out / "track.nc")
    assert track.attrs["engine"] == engine and track.attrs["smoothed"] == 0
    assert np.array_equal(track["lat"], track["lat_filtered"])
    if engine == "labels":  # hand labels are the truth here: associations follow them
        assert (track["association"].values == _TRUTH["true_label"].values).all()


def test_default_output_folder_is_named_after_the_input(small, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        cli, ["track-float", str(small), "--particles", "200", "--no-plots", "-q"]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "small" / "track.nc").exists()


def _bad_files(tmp_path):
    ds = _RECORD.copy(deep=True)
    files = {}
    files["truncated"] = tmp_path / "truncated.nc"
    write_float(ds, tmp_path / "full.nc")
    data = (tmp_path / "full.nc").read_bytes()
    files["truncated"].write_bytes(data[: len(data) // 3])
    files["not netcdf"] = tmp_path / "text.nc"
    files["not netcdf"].write_text("cycle,toa\n1,2\n")
    files["missing toa"] = tmp_path / "no_toa.nc"
    ds.drop_vars("toa").to_netcdf(files["missing toa"])
    toa = ds["toa"].values.copy()
    toa[4, :2] = toa[4, 1::-1]
    files["unsorted"] = tmp_path / "unsorted.nc"
    ds.assign(toa=(("cycle", "rank"), toa)).to_netcdf(files["unsorted"])
    files["empty"] = tmp_path / "empty.nc"
    ds.isel(cycle=slice(0, 0)).to_netcdf(files["empty"])
    files["missing file"] = tmp_path / "does_not_exist.nc"
    return files


EXPECTED = {
    "truncated": "not a readable NetCDF",
    "not netcdf": "not a readable NetCDF",
    "missing toa": "toa: missing required variable",
    "unsorted": "toa: cycle 4: arrival times not ascending",
    "empty": "toa: empty record",
    "missing file": "no such file",
}


def test_bad_input_exits_2_with_one_line(tmp_path):
    for case, path in _bad_files(tmp_path).items():
        res = CliRunner().invoke(track_float, [str(path), "--out", str(tmp_path / "o")])
        assert res.exit_code == 2, (case, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: "), (case, res.output)
        assert EXPECTED[case] in lines[0], (case, lines[0])
        assert "Traceback" not in res.output


@pytest.mark.skipif(shutil.which("track-float") is None, reason="console script not installed")
def test_console_script_bad_input_has_no_traceback(tmp_path):
    path = _bad_files(tmp_path)["unsorted"]
    proc = subprocess.run(
        ["track-float", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "toa" in proc.stderr and proc.stdout == ""


def test_bad_options_exit_2(small, tmp_path):
    res = CliRunner().invoke(track_float, [str(small), "--engine", "magic"])
    assert res.exit_code == 2 and "magic" in res.output
    res = CliRunner().invoke(track_float, [str(small), "--p-detect", "0"])
    assert res.exit_code == 2
    res = CliRunner().invoke(cli, ["track-float", "--help"])
    assert res.exit_code == 0 and "--no-smooth" in res.output and "--clutter-rate" in res.output


def test_collapse_is_reported_not_fatal(small, tmp_path):
    """Without clutter and loss (the min-factor engine's section 5.2 special case) cycles whose
    arrivals it cannot explain collapse the filter; they are skipped, flagged in the track and
    named in a warning. (Uncalibrated: a fitted TOA noise would widen to explain them.)"""
    out = tmp_path / "mf"
    res = CliRunner().invoke(
        track_float,
        [
            str(small),
            "--out",
            str(out),
            "--engine",
            "minfactor",
            "--p-detect",
            "1",
            "--clutter-rate",
            "0",
            "--particles",
            "300",
            "--no-plots",
            "--no-calibrate",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    track = xr.load_dataset(out / "track.nc")
    collapsed = np.flatnonzero(track["collapsed"].values)
    assert collapsed.size > 0
    assert np.isneginf(track["loglik"].values[collapsed]).all()
    assert np.isfinite(track["lat"].values).all()
    assert "warning: the filter collapsed" in res.stderr and f"{collapsed.size} cycle" in res.stderr


def test_labels_engine_needs_labels(tmp_path):
    path = tmp_path / "nolabels.nc"
    write_float(_RECORD.drop_vars("source_label"), path)
    res = CliRunner().invoke(
        track_float,
        [str(path), "--engine", "labels", "-q", "--no-plots", "--out", str(tmp_path / "o")],
    )
    assert res.exit_code == 2
    assert res.output.strip() == (
        f"Error: {path}: source_label: needed by the labels engine but absent"
    )


#: The command that made the shipped sample (simulate-float's help and docs/simulation.md say it)
SAMPLE_COMMAND = (
    "simulate-float --name float767 --float-clock-drift 0.02 --true-sound-speed 1470 "
    "--offset-error 1 --multipath 0.02"
)


def _undated(path) -> xr.Dataset:
    """The file's dataset without the attributes that say when it was written."""
    ds = xr.load_dataset(path)
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("date_created", "history")}
    return ds


def test_simulate_float_reproduces_the_shipped_sample(tmp_path, repo_data):
    """Identical but for when it was written, with the mismatch the sample carries (its file
    does not state it)."""
    res = CliRunner().invoke(cli, [*SAMPLE_COMMAND.split(), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for name in ("float767.nc", "float767_truth.nc"):
        made, shipped = (_undated(folder / name) for folder in (tmp_path, repo_data))
        assert made.identical(shipped), name
    help_text = "".join(CliRunner().invoke(cli, ["simulate-float", "--help"]).output.split())
    command = f"rankmodels {SAMPLE_COMMAND.replace(' --name', ' --out data --name')}"
    assert "".join(command.split()) in help_text  # (the help is wrapped, even at hyphens)
    res = CliRunner().invoke(
        cli,
        [
            "simulate-float",
            "--out",
            str(tmp_path),
            "--name",
            "s",
            "--trajectory",
            "spiral",
            "--days",
            "20",
            "--seed",
            "4",
        ],
    )
    assert res.exit_code == 0 and xr.load_dataset(tmp_path / "s.nc").sizes["cycle"] == 19


# --- option ranges, protected outputs, quality checks and --strict (issue 7) -----------------

BAD_OPTIONS = [
    ("--particles", "1e12", "particles"),
    ("--particles", "1000000000000", "particles"),
    ("--sigma", "nan", "sigma"),
    ("--sigma", "inf", "sigma"),
    ("--sigma", "601", "sigma"),
    ("--clutter-rate", "nan", "clutter_rate"),
    ("--clutter-rate", "inf", "clutter_rate"),
    ("--p-detect", "nan", "p_detect"),
    ("--p-detect", "inf", "p_detect"),
    ("--process-noise", "nan", "process_noise"),
    ("--process-noise", "1e9", "process_noise"),
    ("--sound-speed", "inf", "sound_speed"),
    ("--sound-speed", "1000", "sound_speed"),
]


@pytest.mark.parametrize(("option", "value", "field"), BAD_OPTIONS)
def test_out_of_range_options_exit_2_naming_the_option_and_range(
    small, tmp_path, option, value, field
):
    out = tmp_path / "o"
    res = CliRunner().invoke(track_float, [str(small), "--out", str(out), option, value, "-q"])
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"Error: {option}: expected ") and LIMITS[field].text(field) in line
    assert "Traceback" not in res.output and not out.exists()


def test_documented_ranges_in_the_messages(small):
    res = CliRunner().invoke(track_float, [str(small), "--sound-speed", "inf"])
    assert "1,400 <= sound_speed <= 1,600 m/s" in res.output
    res = CliRunner().invoke(track_float, [str(small), "--process-noise", "1e9"])
    assert "0.01 <= process_noise <= 200 km/day" in res.output
    res = CliRunner().invoke(track_float, [str(small), "--particles", "2.5"])
    assert res.exit_code == 2 and "--particles" in res.output and "whole number" in res.output


def test_too_many_particles_to_smooth_in_memory_exit_2(small, tmp_path, monkeypatch):
    monkeypatch.setattr("rankmodels.tracking.config.memory_budget_bytes", lambda: 100_000)
    args = [str(small), "--out", str(tmp_path / "o"), "--particles", "500", "--no-plots", "-q"]
    res = CliRunner().invoke(track_float, args)
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith("Error: --particles: smoothing 30 steps with 500 particles")
    res = CliRunner().invoke(track_float, [*args, "--no-smooth"])  # no history kept
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    "name", ["track.nc", "map.png", "toa.png", "diagnostics.png", "report.html"]
)
def test_no_output_is_written_over_the_input(small, tmp_path, name):
    out = tmp_path / "run"
    out.mkdir()
    record = out / name
    shutil.copy(small, record)
    before = record.read_bytes()
    res = CliRunner().invoke(track_float, [str(record), "--out", str(out), "--particles", "50"])
    assert res.exit_code == 2
    assert res.output.strip() == (
        f"Error: {record}: refusing to write an output over the input file"
    )
    assert record.read_bytes() == before and sorted(p.name for p in out.iterdir()) == [name]


def _quality_line(output: str) -> str:
    (line,) = [ln for ln in output.splitlines() if ln.startswith("quality checks: ")]
    return line


def _broken_record(tmp_path):
    """A 60-day float tracked with a sound speed 10 % too high (the checks must fail)."""
    record = dimes_float767(seed=12, days=60)[0]
    path = tmp_path / "fast_sound.nc"
    write_float(record.assign(sound_speed=record["sound_speed"] * 1.1), path)
    return path


def test_failed_quality_checks_are_warnings_and_strict_exits_3(tmp_path):
    path = _broken_record(tmp_path)
    # without calibration: calibrating the sound speed repairs this record
    args = ["--particles", "1000", "--seed", "1", "--no-calibrate"]  # the summary on stderr
    res = CliRunner().invoke(track_float, [str(path), "--out", str(tmp_path / "a"), *args])
    assert res.exit_code == 0, res.output
    track = xr.load_dataset(tmp_path / "a" / "track.nc")
    names = track["quality_check"].values
    failed = [
        str(n) for n, code in zip(names, track["quality_passed"].values, strict=True) if code == 0
    ]
    # (with track-float's multipath model the misfit shows as delayed arrivals, not clutter:
    # recovery_distance and innovation_rms fail, clutter_excess passes)
    assert "recovery_distance" in failed and len(failed) >= 2
    assert f"WARNING {len(failed)} failed (" in _quality_line(res.stderr)
    for name, message, code in zip(
        names, track["quality_message"].values, track["quality_passed"].values, strict=True
    ):
        shown = f"warning: quality check {name} failed: {message}"
        assert (shown in res.stderr) == (code == 0)
    report = (tmp_path / "a" / "report.html").read_text()
    assert '<div class="note" id="quality">' in report
    assert f"{len(failed)} of {names.size} track quality checks failed" in report

    strict = CliRunner().invoke(
        track_float, [str(path), "--out", str(tmp_path / "b"), *args, "--strict"]
    )
    assert strict.exit_code == 3
    assert strict.stderr.strip().splitlines()[-1] == (
        f"Error: {len(failed)} track quality check(s) failed (--strict)"
    )
    assert (tmp_path / "b" / "track.nc").is_file() and (tmp_path / "b" / "report.html").is_file()


def test_strict_passes_a_clean_record(small, tmp_path):
    out = tmp_path / "clean"
    res = CliRunner().invoke(
        track_float, [str(small), "--out", str(out), "--particles", "1000", "--strict"]
    )
    assert res.exit_code == 0, res.output
    assert "WARNING" not in _quality_line(res.stderr) and "warning" not in res.stderr
    track = xr.load_dataset(out / "track.nc")
    assert (track["quality_passed"].values != 0).all() and track.attrs["quality_failed"] == 0
    assert '<div class="ok" id="quality">' in (out / "report.html").read_text()


def test_compile_time_is_shown_apart_only_when_there_was_some(tmp_path):
    summary = TrackSummary(
        cycles=3,
        cycles_without_data=0,
        arrivals=9,
        mean_ess=50.0,
        clutter_fraction=0.1,
        collapsed_cycles=[],
        log_likelihood=-3.0,
        engine="exact",
        particles=100,
        smoothed=False,
        recovery_used=False,
        run_time_s=2.04,
        compile_time_s=12.34,
        quality=(),
    )
    *_, last = _summary_lines(summary, tmp_path, ["track.nc"])
    assert last.startswith("run time 2.0 s (plus numba kernels compiled in 12.3 s); wrote")
    *_, last = _summary_lines(replace(summary, compile_time_s=0.0), tmp_path, ["track.nc"])
    assert last.startswith("run time 2.0 s; wrote")


def test_unconverged_message_passing_is_reported(tmp_path, monkeypatch):
    """A message-passing engine that leaves particles unconverged at some cycles: the track's
    attribute counts them, the summary lists them and track-float warns on stderr (a value
    that may be wrong says so); the exact engine never reports any."""
    from rankmodels.tracking import passes

    real = passes.log_likelihood

    def flaky(toa, predicted, model, *, engine, **kw):
        res = real(toa, predicted, model, engine="exact", **kw)
        slow = engine == "bp" and np.nanmin(toa) < np.nanmedian(_RECORD["toa"].values)
        return replace(res, converged=False if slow else True)

    monkeypatch.setattr(passes, "log_likelihood", flaky)
    path = tmp_path / "f.nc"
    write_float(_RECORD, path)
    args = ["--particles", "200", "--no-calibrate", "--no-plots", "-q"]
    res = CliRunner().invoke(track_float, [str(path), "--out", str(tmp_path / "b"), "--engine",
                                           "bp", *args])  # fmt: skip
    assert res.exit_code == 0, res.output
    track = xr.load_dataset(tmp_path / "b" / "track.nc")
    toa = _RECORD["toa"].values
    expected = int((np.nanmin(np.where(np.isnan(toa), np.inf, toa), axis=1)
                    < np.nanmedian(toa)).sum())  # fmt: skip
    assert 0 < track.attrs["unconverged_cycles"] == expected
    assert f"did not converge for some particles within its sweep limit at {expected} " in (
        res.stderr
    )
    slow = np.nanmin(np.where(np.isnan(toa), np.inf, toa), axis=1) < np.nanmedian(toa)
    first = ", ".join(str(c + 1) for c in np.flatnonzero(slow)[:5])  # numbered from 1
    assert f"(cycles {first}, ...)" in res.stderr or f"(cycles {first})" in res.stderr
    res = CliRunner().invoke(track_float, [str(path), "--out", str(tmp_path / "e"), *args])
    assert xr.load_dataset(tmp_path / "e" / "track.nc").attrs["unconverged_cycles"] == 0
    assert "did not converge" not in res.stderr
