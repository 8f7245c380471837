"""Self-calibration of track-float (issue 8): the simulator's mismatch options (float clock
offset and drift, true sound speed, source offset errors, multipath) and the records they
write; the M-step; the Monte Carlo EM around the smoother, its outputs and the command line."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking.arrival_density import direct_path_share
from rankmodels.tracking.calibration import (
    CALIBRATION_PARAMS,
    Calibration,
    ResidualStatistics,
    m_step,
    m_step_pairs,
    parse_calibrate_params,
    residual_statistics,
    solve_newton,
)
from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    EXPERIMENT_EM_PARTICLES,
    FLOAT_EM_PARTICLES,
    TrackConfig,
)
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.float_calibration import em_passes
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.model_fit import MOTION_VALUES
from rankmodels.tracking.passes import Predictor, associate, run_filter, run_pass, smooth
from rankmodels.tracking.pipeline import progress_steps, track_float
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters
from rankmodels.tracking.records import read_float, validate_float, write_float
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.simulate import DAY, Mismatch, dimes_float767
from rankmodels_app.simulate import simulate_float
from rankmodels_app.track import track_float as track_float_command

MISMATCH = Mismatch(
    clock_offset=3.0, clock_drift=0.05, true_sound_speed=1485.0, offset_error=2.0, multipath=0.2
)


def _simulate(out, *args):
    return CliRunner().invoke(simulate_float, ["--out", str(out), "--quiet", *args])


@pytest.fixture(scope="module")
def pair():
    """The same 120-day float without and with every mismatch."""
    plain = dimes_float767(seed=11, days=120)
    mixed = dimes_float767(seed=11, days=120, mismatch=MISMATCH)
    return plain, mixed


def test_a_mismatch_leaves_the_float_itself_alone(pair):
    (rec0, truth0), (rec1, truth1) = pair
    validate_float(rec1)
    assert np.array_equal(truth0["lat"], truth1["lat"]) and np.array_equal(
        truth0["lon"], truth1["lon"]
    )
    assert float(rec1["sound_speed"]) == float(rec0["sound_speed"]) == 1480.0  # nominal kept
    assert "clock_drift" not in truth0 and "sim_mismatch" not in rec0.attrs
    assert "1485 m/s" in rec1.attrs["sim_mismatch"] == truth1.attrs["sim_mismatch"]
    assert float(truth1["sound_speed"]) == 1485.0 and float(truth1["clock_drift"]) == 0.05
    assert np.array_equal(truth1["source_offset"], rec0["source_offset"])  # the true ones
    written_error = rec1["source_offset"].values - truth1["source_offset"].values
    assert np.all(written_error != 0) and np.all(np.abs(written_error) < 5 * 2.0)


def test_mismatched_arrivals_follow_the_true_values(pair):
    """Residuals of the true arrivals against the TRUE speed, offsets, clock and multipath
    delay are N(0, 5^2); the delays are Uniform(10, 60) on the stated fraction of arrivals."""
    _, (rec, truth) = pair
    label = truth["true_label"].values
    toa = rec["toa"].values.astype(float)
    days = (rec["time"].values - rec["launch_time"].values) / DAY
    dist = great_circle_km(
        truth["lat"].values[:, None],
        truth["lon"].values[:, None],
        rec["source_lat"].values[None, :],
        rec["source_lon"].values[None, :],
    )
    pred = dist * 1000.0 / 1485.0 + truth["source_offset"].values + (3.0 + 0.05 * days)[:, None]
    delay = truth["multipath_delay"].values
    cyc, rank = np.nonzero(label >= 0)
    src = label[cyc, rank]
    resid = toa[cyc, rank] - pred[cyc, src] - delay[cyc, src]
    assert abs(resid.mean()) < 0.5 and resid.std() == pytest.approx(5.0, rel=0.1)
    drawn = delay[np.isfinite(delay)]
    assert np.mean(drawn > 0) == pytest.approx(0.2, abs=0.03)
    assert drawn[drawn > 0].min() >= 10.0 and drawn.max() <= 60.0
    assert drawn[drawn > 0].mean() == pytest.approx(35.0, abs=2.5)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("true_sound_speed", 0.0),
        ("multipath", 1.0),
        ("clock_drift", float("nan")),
        ("offset_error", -1.0),
        ("clock_offset", float("inf")),
    ],
)
def test_mismatch_settings_out_of_range_name_the_field(field, value):
    with pytest.raises(InputError) as err:
        Mismatch(**{field: value})
    assert err.value.field == field


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--true-sound-speed", "0"], "--true-sound-speed: expected a number in [1400, 1600]"),
        (["--multipath", "1.5"], "--multipath: expected a number in [0, 1), got 1.5"),
        (["--float-clock-drift", "nan"], "--float-clock-drift: expected a number in [-1, 1] s/day"),
        (["--float-clock-offset", "1e9"], "--float-clock-offset: expected a number in [-600"),
        (["--offset-error", "-2"], "--offset-error: expected a number in [0, 60] s"),
    ],
)
def test_bad_mismatch_options_are_one_line_errors(tmp_path, args, words):
    res = _simulate(tmp_path, "--days", "3", *args)
    assert res.exit_code == 2 and res.output.startswith("Error: ") and words in res.output
    assert res.output.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_mismatch_options_end_to_end(tmp_path):
    res = _simulate(
        tmp_path,
        "--days", "30", "--name", "m", "--seed", "4",
        "--float-clock-drift", "0.02", "--float-clock-offset", "-1", "--true-sound-speed", "1485",
        "--offset-error", "2", "--multipath", "0.05",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    record, truth = dimes_float767(
        seed=4,
        days=30,
        mismatch=Mismatch(
            clock_offset=-1.0,
            clock_drift=0.02,
            true_sound_speed=1485.0,
            offset_error=2.0,
            multipath=0.05,
        ),
    )
    written = xr.load_dataset(tmp_path / "m_truth.nc")
    for name in ("clock_offset", "clock_drift", "sound_speed", "source_offset"):
        assert np.array_equal(written[name], truth[name]), name
    assert written["clock_drift"].attrs["units"] == "s day-1"
    assert np.allclose(xr.load_dataset(tmp_path / "m.nc")["toa"], record["toa"], equal_nan=True)


# --- the M-step: weighted least squares for (1/v, clock offset, drift, offset corrections) ---


def _pairs(rng, n=3000, s=6, *, speed=1485.0, c0=2.0, c1=0.02, delta=None, sigma=5.0):
    """Arrival residuals y = d u + c0 + c1 t + delta_i + N(0, sigma^2) (sigma = 0: exact)."""
    delta = np.linspace(-3.0, 2.0, s) if delta is None else delta
    dist = rng.uniform(200.0, 2000.0, n)
    day = rng.uniform(0.0, 404.0, n)
    src = rng.integers(0, s, n)
    y = dist * 1000.0 / speed + c0 + c1 * day + delta[src] + rng.normal(0.0, sigma, n) * (sigma > 0)
    return dist, day, src, y, delta


def test_m_step_recovers_noise_free_parameters_up_to_the_stated_confounding(rng):
    """A weak prior (tau = 1000 s): u and the drift exactly; c0 + delta_i exactly; the prior
    gives the common shift to c0 (delta then has mean 0): the confounding the module docstring
    states. A strong prior (tau = 0.01 s) pins the corrections to the file's values."""
    dist, day, src, y, delta = _pairs(rng, sigma=0.0)
    pinned = m_step(
        dist, day, src, y, np.ones_like(y),
        n_sources=6, sound_speed=1500.0, sigma=5.0, offset_prior_std=0.01,
    )  # fmt: skip
    assert np.abs(pinned.source_offset_correction).max() < 0.05
    cal = m_step(
        dist, day, src, y, np.ones_like(y),
        n_sources=6, sound_speed=1500.0, sigma=5.0, offset_prior_std=1000.0,
    )  # fmt: skip
    assert cal.sound_speed == pytest.approx(1485.0, rel=1e-7)
    assert cal.clock_drift == pytest.approx(0.02, abs=1e-8)
    np.testing.assert_allclose(
        cal.clock_offset + cal.source_offset_correction, 2.0 + delta, atol=1e-4
    )
    assert abs(cal.source_offset_correction.mean()) < 1e-4


def test_m_step_standard_errors_match_the_spread_of_estimates():
    """200 noisy replicates: the estimates scatter around the truth as their stated std says."""
    z = {"sound_speed": [], "clock_drift": []}
    for k in range(200):
        rng = np.random.default_rng(9000 + k)
        dist, day, src, y, _ = _pairs(rng, n=400, delta=np.zeros(6))
        cal = m_step(
            dist, day, src, y, np.ones_like(y), n_sources=6, sound_speed=1500.0, sigma=5.0,
            offset_prior_std=2.0, params=frozenset({"speed", "drift"}),
        )  # fmt: skip
        z["sound_speed"].append((cal.sound_speed - 1485.0) / cal.sound_speed_std)
        z["clock_drift"].append((cal.clock_drift - 0.02) / cal.clock_drift_std)
    for name, values in z.items():
        assert abs(np.mean(values)) < 0.25 and 0.8 < np.std(values) < 1.2, name


def test_standard_errors_include_the_offsets_held_at_their_written_values():
    """The speed fitted with the written offsets held (``params`` without ``offsets``): each
    source sits at its own range of distances, as on a real array, and every replicate's
    written offsets are off by ``N(0, tau^2)``, the prior. The stated standard errors must
    cover that (z-scores of spread 1); without the held offsets' share (the consider
    covariance) they claim about 3 times the precision the estimates have."""
    tau, s = 2.0, 6
    z = []
    for k in range(200):
        rng = np.random.default_rng(7000 + k)
        src = rng.integers(0, s, 400)
        dist = rng.uniform(200.0, 600.0, src.size) + 250.0 * src
        day = rng.uniform(0.0, 404.0, src.size)
        delta = rng.normal(0.0, tau, s)
        y = dist * 1000.0 / 1485.0 + 0.02 * day + delta[src] + rng.normal(0.0, 5.0, src.size)
        cal = m_step(
            dist, day, src, y, np.ones_like(y), n_sources=s, sound_speed=1500.0, sigma=5.0,
            offset_prior_std=tau, params=frozenset({"speed", "drift"}),
        )  # fmt: skip
        z.append((cal.sound_speed - 1485.0) / cal.sound_speed_std)
    assert abs(np.mean(z)) < 0.25 and 0.8 < np.std(z) < 1.2


def test_m_step_keeps_what_it_does_not_estimate_and_ignores_zero_weights(rng):
    dist, day, src, y, _ = _pairs(rng, c0=0.0, c1=0.0, delta=np.zeros(6))
    w = np.ones_like(y)
    junk = rng.uniform(0, 1800, 50)
    cal = m_step(
        np.r_[dist, dist[:50]], np.r_[day, day[:50]], np.r_[src, src[:50]], np.r_[y, junk],
        np.r_[w, np.zeros(50)], n_sources=6, sound_speed=1500.0, sigma=5.0,
        offset_prior_std=2.0, params=frozenset({"speed"}),
    )  # fmt: skip
    alone = m_step(
        dist, day, src, y, w, n_sources=6, sound_speed=1500.0, sigma=5.0,
        offset_prior_std=2.0, params=frozenset({"speed"}),
    )  # fmt: skip
    assert cal.sound_speed == pytest.approx(alone.sound_speed, rel=1e-12)
    assert abs(cal.sound_speed - 1485.0) < 4 * cal.sound_speed_std
    assert cal.clock_offset == cal.clock_drift == 0.0 and np.isnan(cal.clock_drift_std)
    assert not cal.source_offset_correction.any()
    assert np.isnan(cal.source_offset_correction_std).all()


def test_m_step_refuses_the_unidentifiable_and_the_malformed(rng):
    dist, day, src, y, _ = _pairs(rng, n=200)
    w = np.ones_like(y)
    with pytest.raises(ValueError, match="not identifiable"):
        m_step(dist, day, src, y, w, n_sources=6, sound_speed=1500.0, sigma=5.0,
               offset_prior_std=math.inf)  # fmt: skip
    with pytest.raises(ValueError, match=r"weight must lie in \[0, 1\]"):
        m_step(dist, day, src, y, -w, n_sources=6, sound_speed=1500.0, sigma=5.0,
               offset_prior_std=2.0)  # fmt: skip
    with pytest.raises(ValueError, match="source must index 0 .. 4"):
        m_step(dist, day, src, y, w, n_sources=5, sound_speed=1500.0, sigma=5.0,
               offset_prior_std=2.0)  # fmt: skip


def test_calibrate_params_are_parsed_strictly():
    assert parse_calibrate_params("speed, drift") == {"speed", "drift"}
    everything = "drift,speed,offsets,sigma,pd,clutter,multipath,process-noise,correlation"
    assert parse_calibrate_params(everything) == set(CALIBRATION_PARAMS)
    words = (
        "expected a comma-separated list of drift, speed, offsets, sigma, pd, clutter, "
        "multipath, process-noise, correlation, got 'foo'"
    )
    with pytest.raises(ValueError, match=words):
        parse_calibrate_params("speed,foo")


def test_m_step_over_identical_trajectories_is_the_one_track_solve(rng):
    """M copies of one track carry no position uncertainty: Louis' missing information is 0
    and the Newton step from any start lands on the one-track weighted least squares."""
    dist, day, src, y, _ = _pairs(rng, n=500)
    kw = {"n_sources": 6, "sound_speed": 1500.0, "sigma": 5.0, "offset_prior_std": 2.0}
    one = m_step(dist, day, src, y, np.ones_like(y), **kw)
    start = Calibration.nominal(6, 1470.0)
    many = m_step(np.tile(dist, (8, 1)), day, src, y, np.ones_like(y), start=start, **kw)
    assert many.sound_speed == pytest.approx(one.sound_speed, rel=1e-9)
    assert many.clock_drift == pytest.approx(one.clock_drift, abs=1e-9)
    np.testing.assert_allclose(
        many.source_offset_correction, one.source_offset_correction, atol=1e-7
    )
    assert many.sound_speed_std == pytest.approx(one.sound_speed_std, rel=1e-6)


# --- the EM loop and track-float --calibrate ---

CLOCK_AND_SPEED = Mismatch(clock_drift=0.05, true_sound_speed=1495.0)  # file: 1480 m/s
FAST = {"particles": 1000, "calibration_particles": 1000, "ensemble": 200, "seed": 2}


@pytest.fixture(scope="module")
def drifting():
    """A 120-day float whose clock drifts 0.05 s/day and whose signals travel at 1495 m/s
    while its file says 1480 m/s, tracked without and with calibration of the drift and
    speed."""
    record, truth = dimes_float767(seed=5, days=120, mismatch=CLOCK_AND_SPEED)
    plain, _ = track_float(record, TrackConfig(**FAST))
    calibrated, summary = track_float(
        record, TrackConfig(**FAST, calibrate=True, calibrate_params="drift,speed")
    )
    return record, truth, plain, calibrated, summary


def test_calibration_recovers_a_known_drift_and_sound_speed(drifting):
    """Tolerance: speed within 4 m/s, drift within 0.015 s/day, clock offset within 2 s (the
    stated standard errors on this 120-day record are about 2 m/s, 0.009 s/day and 1 s,
    the written offsets' prior uncertainty included; the EM ends at 1496.5 m/s and 0.063
    s/day from three seeds); each within 3 stated standard errors; the track's median error
    falls by a quarter or more (6.4 -> 4.2 km when written)."""
    _, truth, plain, calibrated, summary = drifting
    cal = summary.calibration.calibration
    assert abs(cal.sound_speed - 1495.0) < 4.0
    assert abs(cal.clock_drift - 0.05) < 0.015
    assert abs(cal.clock_offset) < 2.0
    assert abs(cal.sound_speed - 1495.0) < 3 * cal.sound_speed_std
    assert abs(cal.clock_drift - 0.05) < 3 * cal.clock_drift_std
    assert not cal.source_offset_correction.any()  # not estimated
    before, after = score_track(plain, truth), score_track(calibrated, truth)
    assert after["median_km"] < 0.75 * before["median_km"]
    assert after["arrivals_right"] > before["arrivals_right"]


def test_the_em_keeps_its_best_iterate_and_writes_its_trace(drifting):
    record, _, _, track, summary = drifting
    result = summary.calibration
    loglik = np.array(result.loglik)
    sigma = np.array(result.sigma)
    start = result.start
    # annealing passes first (4 and 2 times sigma), then the file's values at sigma
    assert sigma[:start].tolist() == [20.0, 10.0] and (sigma[start:] == 5.0).all()
    assert result.trace[start] == result.trace[0]
    assert result.best == start + int(np.argmax(loglik[start:])) and result.best > start
    assert not result.kept_file_values
    assert result.stop == "no longer rising" or len(loglik) == em_passes(
        TrackConfig(**FAST, calibrate=True, calibrate_params="drift,speed")
    )
    assert np.array_equal(track["calibration_loglik"], loglik)
    assert np.array_equal(track["calibration_sigma"], sigma)
    assert track["calibration_sound_speed"][0] == 1480.0 == track.attrs["sound_speed"]
    assert float(track["sound_speed"]) == result.calibration.sound_speed
    assert float(track["clock_drift_std"]) == result.calibration.clock_drift_std
    assert np.isnan(track["source_offset_correction_std"]).all()
    assert track.attrs["calibrated"] == "drift,speed"
    assert track.attrs["calibration_best_iteration"] == result.best
    assert track["clock_drift"].attrs["units"] == "s day-1"
    # the predictions (and so the TOA diagram's lines) use the calibrated parameters
    cal = result.calibration
    day = (record["time"].values - record["launch_time"].values) / DAY
    dist = great_circle_km(
        track["lat"].values[:, None], track["lon"].values[:, None],
        record["source_lat"].values[None, :], record["source_lon"].values[None, :],
    )  # fmt: skip
    expected = (
        dist * 1000.0 / cal.sound_speed
        + record["source_offset"].values
        + (cal.clock_offset + cal.clock_drift * day)[:, None]
    )
    predicted = track["predicted_toa"].values
    active = np.isfinite(predicted)
    np.testing.assert_allclose(predicted[active], expected[active], atol=1e-6)


def test_calibration_with_the_full_count_only_in_the_final_pass(drifting):
    """calibration_particles below particles: the EM runs at the lower count and the final
    pass with the parameters kept equals a run with those parameters from the start."""
    record = drifting[0]
    config = TrackConfig(**{**FAST, "calibration_particles": 300}, calibrate=True)
    track, summary = track_float(record, config)
    assert summary.calibration.particles == 300 and summary.particles == 1000
    run = prepare(record, replace(config, calibrate=False))
    kept = summary.calibration
    direct = run_pass(run, Parameters(kept.calibration, kept.statistical_model), config)
    assert np.array_equal(track["lat"], direct.mean[:, 0])
    assert np.array_equal(track["loglik"], direct.filt.loglik[: run.n_cycles])
    model = kept.statistical_model  # the track states the model it ran with
    assert track.attrs["sigma"] == model.signal.sigma != config.sigma
    assert track.attrs["process_noise_km"] == model.process_noise
    assert track.attrs["multipath"] == model.signal.multipath


def _cli_track(path, out, *args):
    res = CliRunner().invoke(
        track_float_command,
        [str(path), "--out", str(out), "--particles", "300", "--seed", "7", *args],
    )
    assert res.exit_code == 0, res.output
    return res, xr.load_dataset(out / "track.nc")


def test_no_calibrate_reproduces_the_uncalibrated_tracker(tmp_path):
    """--no-calibrate: the track of the pre-calibration pipeline (one pass of the filter,
    smoother and association with a generator seeded --seed, the file's parameters), value
    for value."""
    record, _ = dimes_float767(seed=5, days=40, mismatch=CLOCK_AND_SPEED)
    path = tmp_path / "f.nc"
    write_float(record, path)
    res, track = _cli_track(path, tmp_path / "o", "--no-calibrate", "--no-plots")
    assert "not calibrated" in res.output
    config = TrackConfig(particles=300, seed=7, multipath=COMMAND_MULTIPATH, motion=COMMAND_MOTION)
    run = prepare(read_float(path), config)
    predictor = Predictor(run, start_parameters(run, config))
    rng = np.random.default_rng(7)
    filt = run_filter(predictor, config, rng)
    ensembles, mean, cov = smooth(predictor, filt, config, rng)
    assoc = associate(predictor, ensembles, mean, keep_members=False)
    n = run.n_cycles
    for name, value in {
        "lat": mean[:, 0], "lon": mean[:, 1], "position_cov": cov,
        "lat_filtered": filt.mean[:n, 0], "association_posterior": assoc.posterior,
        "predicted_toa": assoc.predicted_toa, "loglik": filt.loglik[:n], "ess": filt.ess[:n],
    }.items():  # fmt: skip
        np.testing.assert_array_equal(track[name].values, value, err_msg=name)
    assert track.attrs["calibrated"] == "" and float(track["sound_speed"]) == 1480.0
    assert float(track["clock_drift"]) == 0.0 and np.isnan(float(track["clock_drift_std"]))
    assert "calibration_loglik" not in track


def test_calibrate_end_to_end_summary_and_report(tmp_path):
    record, _ = dimes_float767(seed=5, days=40, mismatch=CLOCK_AND_SPEED)
    path = tmp_path / "f.nc"
    write_float(record, path)
    res, track = _cli_track(path, tmp_path / "o", "--calibrate-params", "speed")
    line = next(x for x in res.output.splitlines() if x.startswith("calibrated: "))
    assert f"sound speed {float(track['sound_speed']):.1f} ± " in line and "drift" not in line
    assert track.attrs["calibrated"] == "speed" and float(track["clock_drift"]) == 0.0
    report = (tmp_path / "o" / "report.html").read_text()
    assert "Sound speed used (m/s)" in report and f"{float(track['sound_speed']):.1f} ± " in report
    assert "Float clock drift (s/day)" in report
    assert "+0.0000 (kept at its starting value: not asked for (--calibrate-params))" in report


def test_calibration_iterations_bounds_the_em_from_the_command_line(tmp_path):
    """--calibration-iterations 1: at most the annealing, the file's values, the annealed
    estimate, one M-step per stage and the likelihood-ratio checks; the default allows more."""
    record, _ = dimes_float767(seed=5, days=40, mismatch=CLOCK_AND_SPEED)
    path = tmp_path / "f.nc"
    write_float(record, path)
    params = ("--calibrate-params", "speed,drift,sigma", "--no-plots", "-q")
    _, one = _cli_track(path, tmp_path / "one", *params, "--calibration-iterations", "1")
    config = TrackConfig(calibrate=True, calibrate_params=frozenset({"speed", "drift", "sigma"}))
    most = em_passes(replace(config, calibration_iterations=1))
    assert 3 <= one.sizes["iteration"] <= most < em_passes(config)


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [("--calibration-iterations", "7", "calibration_iterations"),
     ("--calibration-particles", "2500", "calibration_particles")],
)  # fmt: skip
def test_calibration_options_reach_the_tracker(monkeypatch, tmp_path, option, value, field):
    built = _config_of_command(monkeypatch, tmp_path, option, value)
    assert getattr(built, field) == int(value)
    assert getattr(built, field) != getattr(TrackConfig(), field)


def _config_of_command(monkeypatch, tmp_path, *options: str) -> TrackConfig:
    """The TrackConfig that ``track-float FILE *options`` builds (stopped before tracking)."""
    import rankmodels_app.track as app

    built = []

    def capture(**settings):
        built.append(TrackConfig(**settings))
        raise KeyboardInterrupt  # stop before any tracking

    monkeypatch.setattr(app, "TrackConfig", capture)
    record, _ = dimes_float767(seed=5, days=4)
    write_float(record, tmp_path / "f.nc")
    CliRunner().invoke(track_float_command, [str(tmp_path / "f.nc"), *options])
    return built[0]


@pytest.mark.parametrize(
    ("given", "particles", "one_float", "experiment"),
    [(None, 10_000, FLOAT_EM_PARTICLES, EXPERIMENT_EM_PARTICLES),
     (None, 1_500, FLOAT_EM_PARTICLES, 1_500),
     (3_000, 10_000, 3_000, 3_000),
     (3_000, 500, 500, 500)],
)  # fmt: skip
def test_em_particles_by_mode(given, particles, one_float, experiment):
    """No --calibration-particles: one float's EM at FLOAT_EM_PARTICLES, an experiment's at
    EXPERIMENT_EM_PARTICLES; a given count is used by both; never more than --particles."""
    assert FLOAT_EM_PARTICLES < 1_500 < EXPERIMENT_EM_PARTICLES
    config = TrackConfig(particles=particles, calibration_particles=given)
    assert config.em_particles() == one_float
    assert config.em_particles(experiment=True) == experiment


def test_the_command_leaves_the_em_particles_to_the_mode(monkeypatch, tmp_path):
    assert _config_of_command(monkeypatch, tmp_path).calibration_particles is None


def test_a_short_record_keeps_what_it_cannot_determine_and_says_so(tmp_path):
    """Four cycles determine neither the speed nor the drift nor the offsets: they are kept
    at the file's values, said in words (never 's.e. unknown'), with NaN standard errors,
    and left out of the 'calibrated' attribute."""
    record, _ = dimes_float767(seed=5, days=5)
    path = tmp_path / "f.nc"
    write_float(record, path)
    res, track = _cli_track(path, tmp_path / "o")
    assert "s.e. unknown" not in res.output
    kept = next(x for x in res.output.splitlines() if x.startswith("kept (the record cannot"))
    assert "sound speed at the file's 1480.0 m/s" in kept and "clock drift at 0.0000" in kept
    assert "source offsets as written" in kept
    assert track["sound_speed"].attrs["status"] == "kept"
    assert track["sound_speed"].attrs["status_reason"] == "the record cannot determine it"
    assert float(track["sound_speed"]) == 1480.0 and np.isnan(float(track["sound_speed_std"]))
    assert not {"speed", "offsets"} & set(track.attrs["calibrated"].split(","))
    statistical = ("sigma", "p_detect", "clutter_rate", "multipath", *MOTION_VALUES)
    assert "process_noise" not in track  # the Lagrangian motion's values replace it
    for name in statistical:
        attrs = track[name].attrs
        estimated = attrs["status"] == "estimated"
        assert estimated == np.isfinite(float(track[f"{name}_std"])), name
        assert estimated or float(track[name]) == attrs["start"], name


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("foo", "--calibrate-params: expected a comma-separated list of drift, speed, offsets, "
         "sigma, pd, clutter, multipath, process-noise, correlation, got 'foo'"),
        ("speed,", "--calibrate-params: expected a comma-separated list of drift, speed, "
         "offsets, sigma, pd, clutter, multipath, process-noise, correlation, got ''"),
    ],
)  # fmt: skip
def test_bad_calibrate_params_is_a_one_line_error(tmp_path, value, words):
    record, _ = dimes_float767(seed=5, days=5)
    path = tmp_path / "f.nc"
    write_float(record, path)
    res = CliRunner().invoke(
        track_float_command, [str(path), "--out", str(tmp_path / "o"), "--calibrate-params", value]
    )
    assert res.exit_code == 2 and res.output == f"Error: {words}\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("calibrate_params", "speed,foo"), ("calibration_particles", 0),
     ("calibration_iterations", 51), ("calibration_iterations", 2.0)],
)  # fmt: skip
def test_calibration_settings_are_checked(field, value):
    with pytest.raises(InputError) as err:
        TrackConfig(**{field: value})
    assert err.value.field == field


def test_direct_path_share_is_the_share_of_direct_arrivals_by_residual(rng):
    """Arrivals drawn from the multipath mixture (P_M = 0.2, exponential delays of mean 30 s,
    sigma 5 s): in each 2-s bin of the residual the fraction that came direct matches
    direct_path_share at the bin centre (to 0.03)."""
    model = SignalModel(sigma=5.0, multipath=0.2)
    n = 400_000
    delayed = rng.random(n) < 0.2
    resid = rng.normal(0.0, 5.0, n) + np.where(delayed, rng.exponential(30.0, n), 0.0)
    edges = np.arange(-10.0, 30.0, 2.0)
    which = np.digitize(resid, edges)
    for k in range(1, edges.size):
        inside = which == k
        share = direct_path_share(np.array([edges[k - 1] + 1.0]), model)[0]
        assert np.mean(~delayed[inside]) == pytest.approx(share, abs=0.03), edges[k - 1]


def test_m_step_pairs_drop_delayed_arrivals_only_with_multipath_in_the_model():
    toa = np.array([[100.0, 160.0, np.nan]])
    posterior = np.array([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [np.nan] * 3]])  # both: source 0
    dist = np.full((3, 1, 2), 150.0)
    predicted = np.array([[100.0, 250.0]])
    args = (toa, posterior, dist, np.array([1.0]), np.array([0.0, 20.0]), predicted)
    plain = m_step_pairs(*args, SignalModel(multipath=0.0))
    assert np.array_equal(plain["weight"], [1.0, 1.0])
    mixed = m_step_pairs(*args, SignalModel(multipath=0.05))
    # the arrival 60 s after its prediction is a delayed one: its pair is dropped
    assert mixed["weight"].size == 1 and mixed["weight"][0] > 0.98
    assert np.array_equal(mixed["residual_toa"], [100.0])


def _two_position_world(u: float, sigma: float = 5.0):
    """One source, two recorded arrivals (one the source's, one clutter, uniform on the
    window) and two positions at distances ``d_m`` that predict the arrivals 3 s late and 3 s
    early at slowness ``u0`` (equally likely there): the marginal ``log p(T | u) = log
    sum_m sum_k N(T_k; d_m u, sigma^2) + const`` and the association given each position."""
    toa = np.array([300.0, 312.0])
    u0 = 1000.0 / 1485.0
    dist = (toa + np.array([3.0, -3.0])) / u0
    dens = np.exp(-0.5 * ((toa[None, :] - dist[:, None] * u) / sigma) ** 2)  # (m, k)
    return toa, dist, math.log(dens.sum()), dens / dens.sum(axis=1, keepdims=True)


def test_m_step_score_with_the_association_given_each_trajectory_is_the_fisher_score():
    """Fisher's identity, by enumeration: at ``u0`` both positions are equally likely, so
    the two trajectories are the exact posterior; with each trajectory's own association the
    M-step's score for the slowness is ``d log p(T | u) / du`` (central difference). The
    marginal association (the same on both trajectories) pairs each position with the
    arrival it does not explain as much as with the one it does, and is off."""
    u0, sigma = 1000.0 / 1485.0, 5.0
    toa, dist, _, given = _two_position_world(u0, sigma)
    h = 1e-7
    exact = (_two_position_world(u0 + h, sigma)[2] - _two_position_world(u0 - h, sigma)[2]) / (
        2 * h
    )
    members = np.zeros((1, 2, 2, 2))  # (T, M, r, source + clutter)
    members[0, :, :, 0] = given
    members[0, :, :, 1] = 1.0 - given
    posterior = members.mean(axis=1)
    distance = dist[:, None, None]  # (M, T, s)
    scores = {}
    for name, per_member in (("members", members), ("marginal", None)):
        pairs = m_step_pairs(toa[None, :], posterior, distance, np.zeros(1), np.zeros(1),
                             members=per_member)  # fmt: skip
        resid = pairs["residual_toa"] - pairs["distance_km"] * u0
        fixed = np.array([[1.0], [3.0]])  # a column that differs between the arrivals
        w = pairs["weight"] / sigma**2
        stats = residual_statistics(pairs["distance_km"], fixed, resid, pairs["weight"], sigma)
        scores[name] = stats.score[0]
        # the complete-data information averages each trajectory's own weights
        a = np.stack([pairs["distance_km"], np.broadcast_to(fixed[:, 0], resid.shape)], axis=2)
        w = np.broadcast_to(w, resid.shape)
        expected = np.einsum("mk,mki,mkj->ij", w, a, a) / resid.shape[0]
        np.testing.assert_allclose(stats.information, expected, rtol=1e-12)
    assert exact > 0.1
    assert scores["members"] == pytest.approx(exact, rel=1e-5)
    assert scores["marginal"] < 0.0  # the marginal weights even get the sign wrong


@pytest.mark.parametrize(("iterations", "particles"), [(1, 300), (3, 300), (3, 200)])
def test_progress_counts_every_em_pass_and_the_final_one(iterations, particles):
    """progress(n) adds up to progress_steps whether the EM stops early or not, and whether the
    final pass reuses the EM's (equal counts) or runs apart."""
    record, _ = dimes_float767(seed=5, days=20, mismatch=CLOCK_AND_SPEED)
    config = TrackConfig(
        particles=300,
        calibration_particles=particles,
        ensemble=100,
        calibrate=True,
        calibration_iterations=iterations,
    )
    done = []
    track_float(record, config, progress=done.append)
    assert sum(done) == progress_steps(record, config)


def test_missing_information_adds_the_pair_labels_own_variance_by_enumeration():
    """Louis' missing information is the variance of the complete-data score over the
    trajectory and the pairs' labels. Three independent pairs with label probabilities
    ``w`` on ``M`` copies of one trajectory (no spread over trajectories): enumerating the
    2^3 labellings gives the variance exactly; on two different trajectories the spread of
    the labels' expected score over them (sample covariance) adds."""
    import itertools

    sigma = 4.0
    dist = np.array([[800.0, 650.0, 1200.0]])
    fixed = np.array([[1.0, 0.0], [1.0, 3.0], [1.0, 7.0]])
    resid = np.array([[2.5, -6.0, 9.0]])
    weight = np.array([0.9, 0.5, 0.2])
    a = np.column_stack([dist[0], fixed])  # (K, 3)
    g = a * (resid[0] / sigma**2)[:, None]  # each pair's complete-data score
    mean = np.zeros(3)
    second = np.zeros((3, 3))
    for z in itertools.product((0, 1), repeat=3):
        p = np.prod(np.where(np.array(z) == 1, weight, 1 - weight))
        score = np.array(z) @ g
        mean += p * score
        second += p * np.outer(score, score)
    exact = second - np.outer(mean, mean)
    copies = residual_statistics(np.repeat(dist, 4, 0), fixed, np.repeat(resid, 4, 0),
                                 np.repeat(weight[None], 4, 0), sigma)  # fmt: skip
    np.testing.assert_allclose(copies.score, mean, rtol=1e-12)
    np.testing.assert_allclose(copies.score_cov, 0.0, atol=1e-15)
    np.testing.assert_allclose(copies.score_cov + copies.label_cov, exact, rtol=1e-12)
    two = residual_statistics(np.vstack([dist, dist + 40.0]), fixed, np.vstack([resid, -resid]),
                              weight, sigma)  # fmt: skip
    scores = [np.column_stack([dist[0] + d, fixed]).T @ (weight * r / sigma**2)
              for d, r in ((0.0, resid[0]), (40.0, -resid[0]))]  # fmt: skip
    labels = [
        (np.column_stack([dist[0] + d, fixed]) * (weight * (1 - weight) * (r / sigma**2) ** 2)
         [:, None]).T @ np.column_stack([dist[0] + d, fixed])
        for d, r in ((0.0, resid[0]), (40.0, -resid[0]))
    ]  # fmt: skip
    np.testing.assert_allclose(two.score_cov, np.cov(np.array(scores), rowvar=False), rtol=1e-12)
    np.testing.assert_allclose(two.label_cov, (labels[0] + labels[1]) / 2, rtol=1e-12)
    one = residual_statistics(dist, fixed, resid, weight, sigma)  # positions known
    assert not one.score_cov.any() and not one.label_cov.any()
    # they travel with the statistics: scattered, added, averaged
    moved = two.scattered(np.array([0, 2, 4]), 5)
    np.testing.assert_allclose(moved.label_cov[np.ix_([0, 2, 4], [0, 2, 4])], two.label_cov)
    assert not moved.label_cov[1].any()
    np.testing.assert_allclose((moved + moved).label_cov, 2 * moved.label_cov)
    np.testing.assert_allclose(ResidualStatistics.mean([moved, moved]).label_cov, moved.label_cov)


def test_the_newton_step_ignores_the_labels_variance_and_the_stated_covariance_adds_it():
    """solve_newton: the step (and which entries are determined) from the positions' missing
    information alone; the stated covariance the inverse of the observed information less
    the labels' part too (hand-computed, no floor reached)."""
    info = np.array([[4.0, 1.0], [1.0, 3.0]])
    spread = np.array([[1.0, 0.2], [0.2, 0.5]])
    labels = np.array([[0.3, -0.1], [-0.1, 0.2]])
    score = np.array([0.4, -0.7])
    theta = np.array([1.0, 2.0])
    prior = np.array([0.5, 0.0])
    args = (theta, np.ones(2, bool))
    rest = (prior, np.zeros(2), np.zeros(2))
    without = ResidualStatistics(score, spread, info, 50)
    with_labels = ResidualStatistics(score, spread, info, 50, labels)
    v0, c0, e0 = solve_newton(*args, without, *rest)
    v1, c1, e1 = solve_newton(*args, with_labels, *rest)
    penalised = info + np.diag(prior)
    grad = score - prior * (theta - 0.0)
    np.testing.assert_allclose(v1, theta + np.linalg.solve(penalised - spread, grad))
    np.testing.assert_array_equal(v0, v1)
    np.testing.assert_array_equal(e0, e1)
    np.testing.assert_allclose(c0, np.linalg.inv(penalised - spread))
    np.testing.assert_allclose(c1, np.linalg.inv(penalised - spread - labels))
    # an entry determined by the step's information (variance 1 / 1.4 under the hold line 1)
    # stays estimated though its stated variance (1 / 0.8) is above it
    info, spread, labels = np.diag([1.2, 3.0]), np.diag([0.3, 0.5]), np.diag([0.6, 0.2])
    v, c, e = solve_newton(*args, ResidualStatistics(score, spread, info, 50, labels), *rest)
    assert e.all()
    np.testing.assert_allclose(np.diag(c), 1.0 / (np.diag(info) + prior - np.diag(spread + labels)))
