"""Position fixes mid-record: the filter's steps, the filter and smoother against the Kalman
filter and RTS smoother with fixes at and between cycles (the recovery one of them), the
record's validation, the tables, the simulator and the command line end to end (a lost float
with fixes and no recovery fix)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking import TrackConfig, track_float
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.fixes import MIN_STEP_DAYS, filter_steps
from rankmodels.tracking.geometry import great_circle_km, tangent_offsets, tangent_step
from rankmodels.tracking.passes import Predictor, run_filter
from rankmodels.tracking.passes import smooth as smooth_pass
from rankmodels.tracking.pipeline import progress_steps
from rankmodels.tracking.prepared import prepare, start_parameters
from rankmodels.tracking.records import read_float, validate_float, write_float
from rankmodels.tracking.simulate import FixSchedule, dimes_float767
from rankmodels.tracking.tables import (
    export_tables,
    parse_meta,
    read_meta_table,
    record_from_tables,
)
from rankmodels_app.cli import cli
from tests._tracking_planar import kalman

DAY = np.timedelta64(86_400_000_000_000, "ns")


# ------------------------------------------------------------------------------------------
# the filter's steps
# ------------------------------------------------------------------------------------------


def test_steps_merge_cycles_and_fixes_in_time_order_a_fix_first_on_a_tie():
    steps = filter_steps(np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0, 2.5]))
    assert steps.cycle.tolist() == [-1, 0, -1, 1, -1, 2]
    assert steps.fix.tolist() == [0, -1, 1, -1, 2, -1]
    assert np.allclose(steps.dt, [0.5, 0.5, 1.0, MIN_STEP_DAYS, 0.5, 0.5])
    assert steps.cycle_steps.tolist() == [1, 3, 5]
    with_recovery = steps.append_fix(3, 0.0)
    assert with_recovery.fix[-1] == 3 and with_recovery.dt[-1] == MIN_STEP_DAYS


def test_without_fixes_the_steps_are_the_cycles():
    day = np.array([0.0, 1.0, 2.5])
    steps = filter_steps(day, np.array([]))
    assert steps.cycle.tolist() == [0, 1, 2] and (steps.fix == -1).all()
    assert np.array_equal(steps.dt, np.maximum(np.diff(day, prepend=0.0), MIN_STEP_DAYS))


# ------------------------------------------------------------------------------------------
# filter and smoother against Kalman / RTS
# ------------------------------------------------------------------------------------------


def _silent_record(fix_days, fix_km, error, recovery_km=None):
    """A 6-cycle record whose arrivals the test switches off: the position rests on the
    random walk and the fixes (``fix_km (K, 2)`` east, north of the launch)."""
    record, _ = dimes_float767(1, days=7)
    record = validate_float(record).drop_vars("source_label")
    lat0, lon0 = float(record["launch_lat"]), float(record["launch_lon"])
    launch = np.datetime64(record["launch_time"].values, "ns")
    lat, lon = tangent_step(lat0, lon0, fix_km[:, 0], fix_km[:, 1])
    record["fix_time"] = (
        "fix",
        launch + np.round(np.asarray(fix_days) * 86_400e9).astype("m8[ns]"),
    )
    record["fix_lat"], record["fix_lon"] = ("fix", np.atleast_1d(lat)), ("fix", np.atleast_1d(lon))
    record["fix_error"] = ("fix", np.full(len(fix_days), error))
    if recovery_km is None:
        record = record.drop_vars(["recovery_lat", "recovery_lon", "recovery_time"])
    else:
        rlat, rlon = tangent_step(lat0, lon0, *recovery_km)
        record["recovery_lat"], record["recovery_lon"] = float(rlat), float(rlon)
    return validate_float(record)


@pytest.mark.parametrize("smooth", [False, True])
def test_fixes_at_and_between_cycles_match_the_kalman_filter_and_rts_smoother(smooth):
    """Cycles at days 1..6 without arrivals; a fix between cycles (day 2.5) and one at a
    cycle's time (day 4); with smoothing the recovery fix at day 7. The particle filter's
    means, variances and the fixes' predictive log-likelihoods, and the smoother's means and
    variances, are the Kalman filter's and RTS smoother's on the merged steps."""
    q, error = 4.0, 3.0  # fixes about as precise as the walk over a day: a healthy ESS
    fix_km = np.array([[5.0, -3.0], [7.0, 2.0]])
    record = _silent_record([2.5, 4.0], fix_km, error, recovery_km=(10.0, 4.0))
    config = TrackConfig(
        particles=20_000, process_noise=q, smooth=smooth, ensemble=2000, recovery_sigma=error
    )
    run = prepare(record, config)
    run = replace(run, has_data=np.zeros_like(run.has_data))  # only the fixes inform
    assert run.n_fixes == 2 and run.steps.fix.tolist()[:5] == [-1, -1, 0, -1, 1]
    predictor = Predictor(run, start_parameters(run, config))
    filt = run_filter(predictor, config, np.random.default_rng(0))
    observed = run.steps.fix >= 0
    y = np.zeros((observed.size, 2))
    y[observed] = np.vstack([fix_km, [10.0, 4.0]])[: observed.sum()]
    mf, pf, ll, ms, ps = kalman(y, q, error, run.dt, observed)
    lat0, lon0 = run.x0
    east, north = tangent_offsets(lat0, lon0, filt.mean[:, 0], filt.mean[:, 1])
    got = np.column_stack([east, north])
    sd = np.sqrt(pf)[:, None]
    assert np.all(np.abs(got - mf) < 5 * sd / np.sqrt(filt.ess)[:, None] + 0.05)
    assert np.allclose(filt.cov[:, 0, 0], pf, rtol=0.08, atol=0.05)
    assert np.allclose(filt.loglik[observed], ll[observed], atol=0.03)
    assert filt.loglik[observed].sum() < 0 and (filt.loglik[~observed] == 0).all()
    if smooth:
        _, mean, cov = smooth_pass(predictor, filt, config, np.random.default_rng(1))
        at = run.cycle_steps
        e, n = tangent_offsets(lat0, lon0, mean[:, 0], mean[:, 1])
        tol = 5 * np.sqrt(ps[at] / 2000) + 0.1
        assert np.all(np.abs(np.column_stack([e, n]) - ms[at]) < tol[:, None])
        assert np.allclose(cov[:, 0, 0], ps[at], rtol=0.12, atol=0.1)
        assert ps[at].max() < pf[at].max()  # the later fixes did inform the earlier cycles


def test_progress_counts_the_fix_steps():
    record = _silent_record([2.5, 4.0], np.array([[5.0, 0.0], [9.0, 1.0]]), 1.0, (12.0, 2.0))
    calls = []
    config = TrackConfig(particles=200, ensemble=50, calibrate=False)
    track_float(record, config, progress=calls.append)
    assert sum(calls) == progress_steps(record, config) == 2 * 6 + 2 + 1


# ------------------------------------------------------------------------------------------
# the record's fixes: validation
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixed_record():
    record, _ = dimes_float767(2, days=30, fixes=FixSchedule(7.0, error=0.3))
    return validate_float(record)


def test_the_simulator_writes_fixes_at_the_schedule_near_the_truth():
    record, truth = dimes_float767(2, days=30, fixes=FixSchedule(7.0, until=20.0, error=0.3))
    days = (record["fix_time"].values - record["launch_time"].values) / DAY
    assert days.tolist() == [7.0, 14.0]
    assert (record["fix_error"].values == 0.3).all()
    at = truth["time"].values.searchsorted(record["fix_time"].values)
    off = great_circle_km(
        record["fix_lat"].values, record["fix_lon"].values,
        truth["lat"].values[at], truth["lon"].values[at],
    )  # fmt: skip
    assert (off < 4 * 0.3).all() and off.max() > 0
    same, _ = dimes_float767(2, days=30)
    xr.testing.assert_equal(
        record.drop_vars([f"fix_{n}" for n in ("time", "lat", "lon", "error")]), same
    )
    lost, _ = dimes_float767(2, days=30, fixes=FixSchedule(7.0), recovered=False)
    assert "recovery_time" not in lost and lost.sizes["fix"] == 4


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda t, e: (t[[1, 0, 2, 3]], e), "fix_time", "fixes not in time order: fix 1"),
        (
            lambda t, e: (np.r_[t[:1], t[2:3], t[2:]], e),
            "fix_time",
            "fix 2 at 2009-02-13T00:00:00 is not after fix 1",
        ),
        (lambda t, e: (t - 10 * DAY, e), "fix_time", "before launch_time"),
        (lambda t, e: (t + 10 * DAY, e), "fix_time", "after the last cycle"),
        (lambda t, e: (t, np.array([0.3, 0.0, 0.3, 0.3])), "fix_error", "expected values > 0"),
        (lambda t, e: (t, np.array([0.3, -1.0, 0.3, 0.3])), "fix_error", "expected values > 0"),
        (lambda t, e: (t, np.array([0.3, np.nan, 0.3, 0.3])), "fix_error", "non-finite"),
        (lambda t, e: (t, np.array([0.3, np.inf, 0.3, 0.3])), "fix_error", "non-finite"),
    ],
)
def test_bad_fixes_are_refused_naming_the_variable(fixed_record, change, field, message):
    times, error = change(fixed_record["fix_time"].values.copy(), fixed_record["fix_error"].values)
    bad = fixed_record.assign(fix_time=("fix", times), fix_error=("fix", error))
    with pytest.raises(InputError) as info:
        validate_float(bad, path="f.nc")
    assert isinstance(info.value, ValueError) and info.value.field == field
    assert message in info.value.message and str(info.value).startswith(f"f.nc: {field}: ")


def test_fix_variables_go_together_and_the_recovery_may_be_listed_among_them(fixed_record):
    with pytest.raises(InputError, match="go together"):
        validate_float(fixed_record.drop_vars("fix_error"))
    rec = fixed_record
    n = rec.sizes["fix"]
    listed = xr.concat(
        [
            rec[[f"fix_{v}" for v in ("time", "lat", "lon", "error")]],
            xr.Dataset(
                {
                    "fix_time": ("fix", [rec["recovery_time"].values]),
                    "fix_lat": ("fix", [float(rec["recovery_lat"])]),
                    "fix_lon": ("fix", [float(rec["recovery_lon"])]),
                    "fix_error": ("fix", [0.3]),
                }
            ),
        ],
        dim="fix",
    )
    out = validate_float(rec.drop_dims("fix").merge(listed))
    assert out.sizes["fix"] == n  # the recovery, listed again, is dropped
    moved = listed.assign(fix_lat=listed["fix_lat"] + xr.where(listed["fix"] == n, 0.1, 0.0))
    with pytest.raises(InputError, match="not at the recovery position"):
        validate_float(rec.drop_dims("fix").merge(moved))


def test_units_of_the_fix_error_are_converted(fixed_record):
    given = fixed_record.copy(deep=True)
    given["fix_error"] = given["fix_error"] * 1000.0
    given["fix_error"].attrs["units"] = "m"
    assert np.allclose(validate_float(given)["fix_error"].values, 0.3)


# ------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------


def test_tables_round_trip_with_fixes_and_source_drift(fixed_record, tmp_path):
    record = fixed_record.copy(deep=True)
    record["source_drift"] = ("source", np.linspace(-0.01, 0.02, record.sizes["source"]))
    record = validate_float(record)
    written = export_tables(record, tmp_path)
    assert written[-1] == "fixes.csv"
    assert (tmp_path / "fixes.csv").read_text().splitlines()[0] == "time,lat,lon,error"
    assert "drift" in (tmp_path / "sources.csv").read_text().splitlines()[0].split(",")
    meta = parse_meta(read_meta_table(tmp_path / "meta.csv"))
    back = record_from_tables(
        tmp_path / "toa.csv", tmp_path / "sources.csv", meta, tmp_path / "fixes.csv"
    )
    back["toa"] = back["toa"].astype(record["toa"].dtype)  # float32 TOAs: written as float32
    xr.testing.assert_equal(back.drop_vars("source_label"), record.drop_vars("source_label"))


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("2009-01-30,-56,-104,0.3\n2009-01-29,-56,-104,0.3\n", "line 3, column 1 (time): time is "
         "not after the previous fix's (2009-01-30T00:00:00); fixes must be in increasing time"),
        ("2009-01-30,-56,-104,0\n", "line 2, column 4 (error): expected a position error > 0"),
        ("2009-01-30,-56,-104,-2\n", "line 2, column 4 (error): expected a position error > 0"),
        ("2009-01-30,-56,-104,nan\n", "line 2, column 4 (error): expected a finite number"),
        ("2009-01-01,-56,-104,0.3\n", "fix_time: fix 0 at 2009-01-01T00:00:00 is before "
         "launch_time (2009-01-23T00:00:00)"),
    ],
)  # fmt: skip
def test_float_import_refuses_bad_fixes_in_one_line(fixed_record, tmp_path, rows, expected):
    export_tables(fixed_record, tmp_path)
    (tmp_path / "bad.csv").write_text("time,lat,lon,error\n" + rows)
    done = _invoke(
        "float", "import", "--toa", tmp_path / "toa.csv", "--sources", tmp_path / "sources.csv",
        "--meta-table", tmp_path / "meta.csv", "--fixes", tmp_path / "bad.csv",
        "-o", tmp_path / "out.nc",
    )  # fmt: skip
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and expected in lines[0], lines


def test_track_float_refuses_a_record_with_a_bad_fix_error(fixed_record, tmp_path):
    bad = fixed_record.copy(deep=True)
    bad["fix_error"].values[1] = 0.0
    path = tmp_path / "bad.nc"
    bad.to_netcdf(path)
    done = _invoke("track-float", path, "--out", tmp_path / "out", "--particles", "100")
    assert done.exit_code == 2
    assert done.output.strip() == (
        f"Error: {path}: fix_error: expected values > 0.0, got 0 at index 1"
    )


# ------------------------------------------------------------------------------------------
# end to end: a lost float with fixes and no recovery fix
# ------------------------------------------------------------------------------------------


def test_a_lost_float_with_fixes_tracks_and_says_it_has_no_recovery_fix(tmp_path):
    done = _invoke(
        "simulate-float", "--days", "40", "--seed", "5", "--fix-every", "10", "--fix-until",
        "25", "--fix-error", "0.3", "--lost", "--out", tmp_path, "--name", "lost",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "2 fixes, no recovery fix" in done.output
    done = _invoke(
        "track-float", tmp_path / "lost.nc", "--out", tmp_path / "out", "--particles", "400",
        "--no-calibrate",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    first = done.output.splitlines()[0]
    assert first.endswith("smoothed (with 2 position fixes); no recovery fix in the record")
    assert "1 not computed (recovery_distance)" in done.output
    track = xr.load_dataset(tmp_path / "out" / "track.nc")
    assert track.attrs["fixes_used"] == 2 and track.attrs["recovery_used"] == 0
    assert np.allclose(track["fix_error"].values, 0.3) and track.sizes["fix"] == 2
    check = dict(zip(track["quality_check"].values, track["quality_message"].values, strict=True))
    assert check["recovery_distance"] == (
        "not computed: no recovery fix in the record (its 2 position fixes went into the "
        "filter, so none can test it)"
    )
    truth = xr.load_dataset(tmp_path / "lost_truth.nc")
    at = truth["time"].values.searchsorted(track["fix_time"].values)
    err = great_circle_km(track["lat"].values[at], track["lon"].values[at],
                          truth["lat"].values[at], truth["lon"].values[at])  # fmt: skip
    assert (err < 1.5).all(), err
    assert (tmp_path / "out" / "map.png").stat().st_size > 0


def test_the_map_marks_the_fixes(fixed_record):
    import matplotlib.pyplot as plt

    from rankmodels.plots.maps import track_map

    track, _ = track_float(fixed_record, TrackConfig(particles=200, ensemble=50))
    fig = track_map(fixed_record, track)
    marks = [a for a in fig.axes[0].collections if a.get_gid() == "fixes"]
    assert len(marks) == 1 and len(marks[0].get_offsets()) == fixed_record.sizes["fix"]
    assert any("GPS fix (4)" == t.get_text() for t in fig.legends[0].get_texts())
    plt.close(fig)


# ------------------------------------------------------------------------------------------
# what fixes buy
# ------------------------------------------------------------------------------------------


def _fix_benefit(days, every, until, particles):
    """Errors (km) of the smoothed track at the fix times and over the first ``until`` days,
    with and without the fixes, on one drifting float."""
    schedule = FixSchedule(every, until=until, error=0.5)
    record, truth = dimes_float767(11, days=days, fixes=schedule)
    bare = record.drop_vars([f"fix_{n}" for n in ("time", "lat", "lon", "error")])
    config = TrackConfig(particles=particles, ensemble=300)
    out = {}
    for name, rec in (("fixes", record), ("none", bare)):
        track, _ = track_float(validate_float(rec), config)
        out[name] = position_error_km(track, truth)
    at = truth["time"].values.searchsorted(record["fix_time"].values)
    return out, at


def test_fixes_pin_the_track_at_their_times_and_help_the_days_around():
    """Reduced version of the slow 300-day measurement: a 60-day float with a fix every 10
    days for 30 days."""
    err, at = _fix_benefit(60, 10.0, 30.0, 1000)
    assert np.median(err["fixes"][at]) < 1.0 and err["fixes"][at].max() < 4 * 0.5
    assert np.median(err["fixes"][:30]) < np.median(err["none"][:30])


@pytest.mark.slow
def test_fixes_for_100_days_of_a_300_day_float():
    err, at = _fix_benefit(300, 10.0, 100.0, 10_000)
    assert np.median(err["fixes"][at]) < 1.0 and err["fixes"][at].max() < 4 * 0.5
    for part in (slice(0, 100), slice(None)):
        assert np.median(err["fixes"][part]) < np.median(err["none"][part])
        assert np.percentile(err["fixes"][part], 90) < np.percentile(err["none"][part], 90)


def test_the_fixes_round_trip_through_netcdf(fixed_record, tmp_path):
    write_float(fixed_record, tmp_path / "f.nc")
    back = read_float(tmp_path / "f.nc")
    assert (back["fix_time"].values == fixed_record["fix_time"].values).all()
    assert np.array_equal(back["fix_lat"].values, fixed_record["fix_lat"].values)
