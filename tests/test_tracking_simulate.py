"""The simulator: trajectories, the signal model, names and progress, the shipped sample data,
and the ``simulate-float`` command end to end."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import rankmodels_app._common as app_common
from rankmodels.tracking.dynamics import LagrangianMotion
from rankmodels.tracking.geometry import great_circle_km, tangent_offsets
from rankmodels.tracking.records import (
    active_sources,
    read_float,
    validate_float,
    write_float,
    write_truth,
)
from rankmodels.tracking.simulate import (
    BRIDGE_ITERATIONS,
    DIMES_SOURCES,
    MAX_DAYS,
    SAMPLE_MISMATCH,
    TRAJECTORIES,
    SignalSpec,
    Source,
    dimes_float767,
    drifting_track,
    range_dependent_detection,
    simulate_record,
    simulated_float_id,
    simulation_steps,
    spiral_track,
    straight_track,
)
from rankmodels_app.simulate import simulate_float


def test_drifting_track_is_pinned_and_eddying(rng):
    days = np.arange(1, 731, dtype=float)
    start, end = (-56.326, -105.003), (-60.225, -82.746)
    drift = drifting_track(days, start, end, rng, eddy_speed=4.0, eddy_days=5.0)
    lat, lon = drift.lat, drift.lon
    assert great_circle_km(lat[-1], lon[-1], *end) < 1e-3
    assert great_circle_km(lat[0], lon[0], *start) < 40  # one day from launch
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    # daily displacement = mean drift + correlated eddies of ~4 km/day per axis
    assert 2.5 < np.std(east) < 5.5 and 2.5 < np.std(north) < 5.5
    # the true velocity: eddies of 4 km/day about the solved mean, correlated over days
    eddy = drift.velocity - drift.mean_velocity
    assert np.allclose(np.std(eddy, axis=0), 4.0, rtol=0.25)
    lag1 = np.corrcoef(eddy[:-1, 1], eddy[1:, 1])[0, 1]
    assert abs(lag1 - np.exp(-1 / 5)) < 0.07  # 3 standard errors of an AR(1) estimate
    # the velocity is the derivative of the track: a day's step is near the mean of the
    # velocities at its ends (the eddies change little in a day)
    trapezoid = 0.5 * (drift.velocity[:-1] + drift.velocity[1:])
    assert np.sqrt(np.mean((np.stack([east, north], 1) - trapezoid) ** 2)) < 1.0


def test_drifting_track_integrates_the_ou_velocity_as_the_lagrangian_model_states():
    """The simulator's sub-stepped eddies against the closed form of the integrated OU
    (Gardiner 3.8.4), which the tracker's Lagrangian motion uses: given the velocity at one
    cycle, the step to the next and the velocity there have the stated mean gains ``a`` and
    ``phi`` and the stated noise covariance."""
    days = np.arange(1, 2001, dtype=float)
    steps, before, after = [], [], []
    for seed in range(12):
        drift = drifting_track(days, (0.0, 0.0), None, np.random.default_rng(seed),
                               eddy_speed=4.0, eddy_days=3.0, drift=(0.0, 0.0))  # fmt: skip
        east, north = tangent_offsets(drift.lat[:-1], drift.lon[:-1], drift.lat[1:], drift.lon[1:])
        steps.append(np.stack([east, north], 1)[1:])
        before.append(drift.velocity[1:-1])
        after.append(drift.velocity[2:])
    d, u0, u1 = (np.concatenate(x).ravel() for x in (steps, before, after))
    phi, a, vxx, vxu, vuu = LagrangianMotion((0.0, 0.0), 4.0, 3.0).transition(1.0)
    var0 = np.mean(u0 * u0)
    assert np.mean(u1 * u0) / var0 == pytest.approx(phi, abs=0.01)
    assert np.mean(d * u0) / var0 == pytest.approx(a, abs=0.01)
    rx, ru = d - a * u0, u1 - phi * u0
    # 48,000 samples: a variance's standard error is 0.6 %
    assert np.mean(rx * rx) == pytest.approx(vxx, rel=0.03)
    assert np.mean(ru * ru) == pytest.approx(vuu, rel=0.03)
    assert np.mean(rx * ru) == pytest.approx(vxu, rel=0.03)


@pytest.mark.parametrize(
    ("setting", "value"),
    [("eddy_speed", -1.0), ("eddy_speed", float("nan")), ("eddy_days", 0.0),
     ("eddy_days", float("inf")), ("eddy_days", -5.0)],
)  # fmt: skip
def test_drifting_track_refuses_eddies_that_are_not_finite_and_positive(rng, setting, value):
    with pytest.raises(ValueError, match=setting):
        drifting_track(np.arange(1.0, 5.0), (-56.3, -105.0), None, rng, **{setting: value})


def test_straight_and_spiral_tracks():
    days = np.linspace(0, 100, 101)
    lat, lon = straight_track(days, (-58.0, -100.0), (-58.0, -90.0), 100.0)
    step = great_circle_km(lat[:-1], lon[:-1], lat[1:], lon[1:])
    assert np.allclose(step, step.mean(), rtol=0.01)
    assert np.isclose(lon[-1], -90.0) and np.isclose(lat[-1], -58.0)
    lat, lon = spiral_track(days, (-58.0, -100.0), (20.0, 300.0), 3.0, 100.0)
    radius = great_circle_km(lat, lon, -58.0, -100.0)
    assert np.allclose(radius, np.linspace(20, 300, 101), rtol=0.02)


def test_signals_follow_the_generative_model(rng):
    """Many cycles at a fixed position: TOA residuals of true arrivals are N(0, sigma^2),
    detection and clutter rates as specified, first r arrivals kept, inactive sources silent."""
    t0 = np.datetime64("2010-01-01", "ns")
    sources = [
        Source("A", -58.0, -100.0, offset=0.0),
        Source("B", -56.0, -95.0, offset=30.0),
        Source("C", -60.0, -92.0, offset=10.0),
        Source("D", -57.0, -88.0, offset=0.0, start=t0 + np.timedelta64(5000, "D")),
        Source("E", -59.0, -84.0, offset=60.0),
    ]
    n = 4000
    times = t0 + np.arange(n) * np.timedelta64(1, "D")
    lat, lon = np.full(n, -58.5), np.full(n, -94.0)
    spec = SignalSpec(
        sigma=5.0, p_detect=0.8, clutter_rate=0.5, window_length=1500.0, sound_speed=1480.0, ranks=3
    )
    record, truth = simulate_record(sources, times, lat, lon, (-58.5, -94.0, t0), spec, rng)
    validate_float(record)
    toa = record["toa"].values.astype(float)
    label = truth["true_label"].values
    assert (label == record["source_label"].values).all()
    assert not (label == 3).any()  # D not yet deployed
    pred = np.array(
        [great_circle_km(-58.5, -94.0, s.lat, s.lon) / 1.48 + s.offset for s in sources]
    )
    is_src = label >= 0
    resid = toa[is_src] - pred[label[is_src]]
    assert abs(resid.mean()) < 0.3 and resid.std() == pytest.approx(5.0, rel=0.05)
    # the nearest active sources arrive first: each recorded source is recorded with
    # probability ~P_D (minus what clutter pushes out of the first r)
    first_two = np.argsort(pred[[0, 1, 2, 4]])[:2]
    for k in np.array([0, 1, 2, 4])[first_two]:
        assert 0.7 < np.mean((label == k).any(axis=1)) <= 0.82
    # clutter: Poisson(0.5) uniform on the window; the fraction recorded before the r-th
    # source arrival is small but present
    assert (label == -1).any() and np.mean(label == -1) < 0.2
    assert (toa[label == -1] >= 0).all() and (toa[label == -1] <= 1500).all()


def test_short_records_keep_the_mean_drift():
    _, truth = dimes_float767(seed=5, days=73, trajectory="straight")
    step = great_circle_km(
        truth["lat"].values[:-1],
        truth["lon"].values[:-1],
        truth["lat"].values[1:],
        truth["lon"].values[1:],
    )
    _, full = dimes_float767(seed=5, trajectory="straight")
    full_step = great_circle_km(
        full["lat"].values[:-1],
        full["lon"].values[:-1],
        full["lat"].values[1:],
        full["lon"].values[1:],
    )
    # the same daily steps as the first 73 days of the full record (~2 km/day)
    assert np.allclose(step, full_step[: step.size], rtol=1e-6)


def test_range_dependent_detection():
    p = range_dependent_detection(0.95, 0.75, 800, 2500)
    assert np.allclose(p(np.array([0, 800, 1650, 2500, 4000])), [0.95, 0.95, 0.85, 0.75, 0.75])


def test_shipped_sample_is_reproducible_and_marked_simulated(repo_data, tmp_path):
    shipped = read_float(repo_data / "float767.nc")
    truth = xr.load_dataset(repo_data / "float767_truth.nc")
    record, true = dimes_float767(seed=int(shipped.attrs["sim_seed"]), mismatch=SAMPLE_MISMATCH)
    assert shipped.attrs["simulated"] == 1 and "SIMULATED" in shipped.attrs["comment"]
    # the mismatch is stated in both files and the truth holds the true values
    assert "1470 m/s" in shipped.attrs["sim_mismatch"] == truth.attrs["sim_mismatch"]
    assert float(shipped["sound_speed"]) == 1480.0 and float(truth["sound_speed"]) == 1470.0
    assert float(truth["clock_drift"]) == SAMPLE_MISMATCH.clock_drift
    assert shipped.attrs["float_id"] == record.attrs["float_id"] == "sim-drift-seed767-729d"
    write_float(record, tmp_path / "float.nc")
    write_truth(true, tmp_path / "truth.nc")
    written = read_float(tmp_path / "float.nc"), xr.load_dataset(tmp_path / "truth.nc")
    dated = ("date_created", "history")
    for made, file in zip(written, (shipped, truth), strict=True):  # attributes are today's
        assert {k: v for k, v in file.attrs.items() if k not in dated} == {
            k: v for k, v in made.attrs.items() if k not in dated
        }
        for name, var in made.variables.items():
            got, want = file[name].attrs, var.attrs
            assert set(got) == set(want), name
            assert all(np.array_equal(got[k], want[k]) for k in want), name
    assert np.allclose(shipped["toa"], record["toa"], equal_nan=True)
    assert np.allclose(truth["lat"], true["lat"]) and np.allclose(truth["lon"], true["lon"])
    assert (truth["true_label"].values == shipped["source_label"].values).all()
    # float 767's geometry (DESIGN.md): 12 DIMES sources, launch, recovery 729 days later
    assert list(shipped["source"].values) == [name for name, _, _ in DIMES_SOURCES]
    assert float(shipped["launch_lat"]) == -56.326 and float(shipped["launch_lon"]) == -105.003
    assert float(shipped["recovery_lat"]) == -60.225 and float(shipped["recovery_lon"]) == -82.746
    span = shipped["recovery_time"].values - shipped["launch_time"].values
    assert span == np.timedelta64(729, "D") and shipped.sizes["cycle"] == 728
    assert shipped.sizes["rank"] == 4
    act = active_sources(shipped)
    assert act[0].sum() == 6 and act[-1].sum() == 12  # US2/UK1 deployed a year later
    # at least three true arrivals in almost every cycle (the float is trackable)
    assert np.mean((truth["true_label"].values >= 0).sum(axis=1) >= 3) > 0.95


# --- names, bounds and progress ---------------------------------------------------------------


@pytest.mark.parametrize("trajectory", TRAJECTORIES)
def test_a_simulation_is_named_after_how_it_was_made(trajectory):
    """Not "float 767": plots' titles read the float id, reports the title."""
    record, truth = dimes_float767(seed=1, days=12, trajectory=trajectory)
    assert record.attrs["float_id"] == truth.attrs["float_id"] == f"sim-{trajectory}-seed1-12d"
    assert simulated_float_id(trajectory, 1, 12) == record.attrs["float_id"]
    assert record.attrs["title"].startswith(f"Simulated {trajectory} RAFOS float (seed 1, 12 days)")
    assert "RAFOS float 767" not in record.attrs["title"]


def test_days_are_bounded():
    dimes_float767(seed=1, days=2, trajectory="straight")
    for days in (1, MAX_DAYS + 1, 99_999_999_999):
        with pytest.raises(ValueError, match=rf"days must be in \[2, {MAX_DAYS}\].*got {days}"):
            dimes_float767(seed=1, days=days)


@pytest.mark.parametrize(("trajectory", "days"), [(t, 600) for t in TRAJECTORIES] + [("drift", 9)])
def test_progress_counts_add_up_to_the_announced_total(trajectory, days):
    calls: list[int] = []
    record, _ = dimes_float767(seed=2, days=days, trajectory=trajectory, progress=calls.append)
    assert sum(calls) == simulation_steps(days, trajectory) and min(calls) > 0
    cycles = record.sizes["cycle"]
    chunks = [256] * (cycles // 256) + [cycles % 256] * (cycles % 256 > 0)
    assert calls[-len(chunks) :] == chunks  # the cycles, in steps of at most 256
    if trajectory == "drift":  # before them, the passes over the days
        assert calls[0] == days and sum(calls[: -len(chunks)]) == (1 + BRIDGE_ITERATIONS) * days


def test_drifting_track_reports_every_pass_converged_or_not(rng):
    days = np.arange(1, 11, dtype=float)
    for end in (None, (-56.5, -104.0), (-89.99999, 0.0)):  # no bridge, converges, cannot reach
        calls: list[int] = []
        drifting_track(days, (-56.3, -105.0), end, rng, progress=calls.append)
        passes = 1 if end is None else 1 + BRIDGE_ITERATIONS
        assert sum(calls) == passes * days.size


# --- simulate-float end to end ----------------------------------------------------------------


def _simulate(tmp_path, *args):
    return CliRunner().invoke(simulate_float, ["--out", str(tmp_path), *args])


def test_default_output_is_named_after_the_simulation(tmp_path):
    res = _simulate(tmp_path, "--trajectory", "spiral", "--seed", "1", "--days", "9")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "sim-spiral-seed1-9d.nc",
        "sim-spiral-seed1-9d_truth.nc",
    ]
    record = read_float(tmp_path / "sim-spiral-seed1-9d.nc")
    assert record.attrs["float_id"] == "sim-spiral-seed1-9d"
    assert record.attrs["sim_trajectory"] == "spiral" and record.sizes["cycle"] == 8


@pytest.mark.parametrize("name", ["../escape", "sub/escape", "..", "", "x\ny", "n" * 201])
def test_name_may_not_leave_the_output_folder(tmp_path, name):
    out = tmp_path / "out"
    res = _simulate(out, "--name", name, "--days", "3")
    assert res.exit_code == 2
    assert res.output.startswith("Error: Invalid value for '--name': ")
    assert "not a plain file name" in res.output and res.output.count("\n") == 1
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing written anywhere


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--days", "99999999999"], f"'--days': 99999999999 is not in the range 2<=x<={MAX_DAYS}"),
        (["--days", "1"], f"'--days': 1 is not in the range 2<=x<={MAX_DAYS}"),
        (["--seed", "-1"], "'--seed': -1 is not in the range 0<=x<2**63"),
        (["--seed", str(2**63)], "'--seed'"),
    ],
)
def test_out_of_range_options_are_one_line_errors(tmp_path, args, words):
    res = _simulate(tmp_path, *args)
    assert res.exit_code == 2 and words in res.output
    assert res.output.startswith("Error: ") and res.output.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_out_inside_a_file_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = _simulate(blocker / "sub", "--days", "3")
    assert res.exit_code == 2 and res.output.startswith(f"Error: {blocker / 'sub'}: --out: ")
    assert res.output.count("\n") == 1


def test_progress_bar_on_a_terminal_unless_quiet(tmp_path, monkeypatch):
    monkeypatch.setattr(app_common, "show_progress", lambda quiet: not quiet)  # "a terminal"
    shown = _simulate(tmp_path, "--days", "40", "--name", "a")
    quiet = _simulate(tmp_path, "--days", "40", "--name", "b", "--quiet")
    assert shown.exit_code == quiet.exit_code == 0
    assert "Simulating" in shown.stderr and "Simulating" not in quiet.stderr
    assert "Simulating" not in shown.stdout
    a, b = (xr.load_dataset(tmp_path / f"{name}.nc") for name in ("a", "b"))
    for ds in (a, b):  # the clock time of the writing: two runs may straddle a second
        for key in ("date_created", "history"):
            ds.attrs.pop(key, None)
    assert a.identical(b)
