"""Self-calibration of track-float (issue 8): the simulator's mismatch options (float clock
offset and drift, true sound speed, source offset errors, multipath) and the records they
write."""

from __future__ import annotations

import filecmp
import math

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking.calibration import CALIBRATION_PARAMS, m_step, parse_calibrate_params
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.simulate import DAY, Mismatch, dimes_float767
from rankmodels_app.simulate import simulate_float

MISMATCH = Mismatch(
    clock_offset=3.0, clock_drift=0.05, true_sound_speed=1485.0, offset_error=2.0, multipath=0.2
)


def _simulate(out, *args):
    return CliRunner().invoke(simulate_float, ["--out", str(out), "--quiet", *args])


def test_default_command_still_writes_the_shipped_sample_bit_for_bit(tmp_path, repo_data):
    res = _simulate(tmp_path, "--name", "float767")
    assert res.exit_code == 0, res.output
    for name in ("float767.nc", "float767_truth.nc"):
        assert filecmp.cmp(tmp_path / name, repo_data / name, shallow=False), name


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
        (["--float-drift", "nan"], "--float-drift: expected a number in [-1, 1] s/day"),
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
        "--float-drift", "0.02", "--float-clock-offset", "-1", "--true-sound-speed", "1485",
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
    assert parse_calibrate_params("drift,speed,offsets") == set(CALIBRATION_PARAMS)
    with pytest.raises(ValueError, match="expected a comma-separated list of drift, speed, "
                       "offsets, got 'foo'"):  # fmt: skip
        parse_calibrate_params("speed,foo")
