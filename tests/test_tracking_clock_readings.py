"""Float clock offsets measured at launch and recovery: the file's clock, data of the M-steps
(against the closed-form weighted least squares with the readings as rows), the records'
variables, and an uncalibrated track that uses them (against the truth)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rankmodels.errors import InputError
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    Calibration,
    geometry_log_prior,
    m_step,
)
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.joint import (
    JointParameters,
    float_design,
    joint_log_prior,
    joint_m_step,
    pool,
)
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.schema import FLOAT_RECORD, annotate
from rankmodels.tracking.simulate import Mismatch, dimes_float767
from tests.test_tracking_experiment import NOMINAL, _synthetic

SIGMA = 5.0


def test_the_files_clock_is_the_line_through_the_readings():
    two = ClockReadings(np.array([0.0, 400.0]), np.array([2.0, -6.0]), 0.5)
    assert two.file_clock() == pytest.approx((2.0, -0.02))
    assert two.log_likelihood(*two.file_clock()) == pytest.approx(0.0, abs=1e-12)
    assert ClockReadings(np.array([0.0]), np.array([3.0])).file_clock() == (3.0, 0.0)
    assert ClockReadings.none().file_clock() == (0.0, 0.0)
    cal = Calibration.nominal(4, 1490.0, two)
    assert (cal.clock_offset, cal.clock_drift) == pytest.approx((2.0, -0.02))
    assert math.isnan(cal.clock_offset_std)  # the file's clock, not an estimate
    moved = replace(cal, clock_offset=5.0, clock_offset_std=0.1, clock_drift=0.3)
    back = moved.without("drift", 1490.0, two)
    assert (back.clock_offset, back.clock_drift) == pytest.approx((2.0, -0.02))
    # how far an estimate is from the file's clock, in standard errors
    near = replace(cal, clock_offset=2.3, clock_offset_std=0.1, clock_drift_std=0.01)
    assert near.largest_z("drift", 1490.0, two) == pytest.approx(3.0)
    assert near.largest_z("drift", 1490.0) == pytest.approx(23.0)


@pytest.mark.parametrize(
    ("day", "offset", "error", "expected"),
    [
        ([0.0, 1.0, 2.0], [0.0, 0.0, 0.0], 0.5, "R <= 2"),
        ([0.0], [0.0, 1.0], 0.5, "alike"),
        ([0.0, 0.0], [1.0, 1.0], 0.5, "after the launch"),
        ([0.0], [math.nan], 0.5, "finite"),
        ([0.0], [1.0], 0.0, "error must be > 0"),
    ],
)
def test_readings_refuse_what_they_cannot_mean(day, offset, error, expected):
    with pytest.raises(ValueError, match=expected):
        ClockReadings(np.array(day), np.array(offset), error)


def test_the_score_and_information_are_the_log_likelihoods_derivatives():
    r = ClockReadings(np.array([0.0, 300.0]), np.array([1.0, 4.0]), 0.7)
    c = np.array([0.4, 0.03])
    h = np.array([1e-5, 1e-8])
    fd = [
        (r.log_likelihood(*(c + e)) - r.log_likelihood(*(c - e))) / (2 * e[j])
        for j, e in enumerate(np.diag(h))
    ]
    np.testing.assert_allclose(r.score(*c), fd, rtol=1e-6)
    hessian = [
        (r.score(*(c + e)) - r.score(*(c - e))) / (2 * e[j]) for j, e in enumerate(np.diag(h))
    ]
    np.testing.assert_allclose(-np.array(hessian).T, r.information(), rtol=1e-6)


def _arrivals(rng, n=600, s=6):
    dist = rng.uniform(200.0, 1500.0, n)
    day = rng.uniform(0.0, 300.0, n)
    src = rng.integers(0, s, n)
    y = dist * 1000.0 / 1490.0 + 4.0 + 0.02 * day + np.linspace(-2, 3, s)[src]
    return dist, day, src, y + rng.normal(0.0, SIGMA, n)


@pytest.mark.parametrize("n_readings", [1, 2])
def test_m_step_with_readings_is_the_closed_form_with_them_as_rows(rng, n_readings):
    """The readings are rows ``(0, 1, t_j, 0..)`` of weight ``1 / s^2`` in the stacked least
    squares, and they replace the clock priors of what they measure (the drift's prior stays
    with the launch reading alone)."""
    s, nominal = 6, 1500.0
    dist, day, src, y = _arrivals(rng, s=s)
    w = rng.uniform(0.3, 1.0, y.size)
    readings = ClockReadings(
        np.array([0.0, 300.0][:n_readings]), np.array([4.3, 10.1][:n_readings]), 0.4
    )
    cal = m_step(
        dist, day, src, y, w, n_sources=s, sound_speed=nominal, sigma=SIGMA,
        offset_prior_std=OFFSET_PRIOR_STD, speed_prior_std=SPEED_PRIOR_STD,
        clock_prior_std=CLOCK_OFFSET_PRIOR_STD, drift_prior_std=DRIFT_PRIOR_STD,
        clock_readings=readings,
    )  # fmt: skip
    a = np.zeros((y.size, 3 + s))
    a[:, 0], a[:, 1], a[:, 2] = dist, 1.0, day
    a[np.arange(y.size), 3 + src] = 1.0
    rows = np.zeros((n_readings, 3 + s))
    rows[:, 1], rows[:, 2] = 1.0, readings.day
    a = np.vstack([a, rows])
    yy = np.r_[y, readings.offset]
    ww = np.r_[w / SIGMA**2, np.full(n_readings, 1.0 / 0.4**2)]
    u0 = 1000.0 / nominal
    drift_prior = DRIFT_PRIOR_STD if n_readings == 1 else math.inf
    p = np.r_[u0**2 * SPEED_PRIOR_STD / 1000.0, math.inf, drift_prior, np.full(s, OFFSET_PRIOR_STD)]
    m = np.r_[u0, np.zeros(2 + s)]
    info = a.T @ (a * ww[:, None]) + np.diag(p**-2.0)
    theta = np.linalg.solve(info, a.T @ (ww * yy) + m / p**2)
    got = np.r_[1000.0 / cal.sound_speed, cal.clock_offset, cal.clock_drift,
                cal.source_offset_correction]  # fmt: skip
    np.testing.assert_allclose(got, theta, rtol=1e-9, atol=1e-9)
    std = np.sqrt(np.diag(np.linalg.inv(info)))
    np.testing.assert_allclose([cal.clock_offset_std, cal.clock_drift_std], std[1:3], rtol=1e-6)


def test_geometry_log_prior_counts_the_readings_as_data():
    readings = ClockReadings(np.array([0.0, 100.0]), np.array([1.0, 3.0]), 0.5)
    cal = replace(
        Calibration.nominal(3, 1480.0), clock_offset=1.5, clock_drift=0.01, clock_offset_std=0.2,
        clock_drift_std=0.001,
    )  # fmt: skip
    expected = -0.5 * ((1.0 - 1.5) ** 2 + (3.0 - 2.5) ** 2) / 0.25  # no clock priors
    assert geometry_log_prior(cal, 1480.0, readings) == pytest.approx(expected, rel=1e-12)
    launch_only = ClockReadings(np.array([0.0]), np.array([1.0]), 0.5)
    expected = -0.5 * (0.5 / 0.5) ** 2 - 0.5 * (0.01 / DRIFT_PRIOR_STD) ** 2
    assert geometry_log_prior(cal, 1480.0, launch_only) == pytest.approx(expected, rel=1e-12)


def test_joint_m_step_with_readings_is_the_stacked_closed_form(rng):
    """Readings of floats 0 (launch and recovery) and 2 (launch) as rows of the stacked
    design; float 1 keeps its clock priors."""
    layout, _, floats = _synthetic(rng)
    readings = [
        ClockReadings(np.array([0.0, 50.0]), np.array([1.0, 2.0]), 0.3),
        ClockReadings.none(),
        ClockReadings(np.array([0.0]), np.array([-2.0]), 0.6),
    ]
    current = JointParameters.nominal(layout, NOMINAL, readings)
    assert current.clock_offset.tolist() == [1.0, 0.0, -2.0]
    assert current.clock_drift == pytest.approx([0.02, 0.0, 0.0])
    theta0, _ = current.vector()
    stats = []
    for src, local, dist, day, sday, w, sig, design, y in floats:
        resid = y - design @ theta0
        stats.append(float_design(dist, day, local, sday, resid, w, n_sources=len(src), sigma=sig))
    got = joint_m_step(
        pool(stats, [f[0] for f in floats], layout), current, layout, NOMINAL, clocks=readings
    )
    rows, targets, weights = [], [], []
    for f, r in enumerate(readings):
        for d, m in zip(r.day, r.offset, strict=True):
            row = np.zeros(layout.size)
            row[layout.clock(f)] = (1.0, d)
            rows.append(row)
            targets.append(m)
            weights.append(1.0 / r.error**2)
    a = np.vstack([f[7] for f in floats] + rows)
    y = np.concatenate([f[8] for f in floats] + [np.array(targets)])
    w = np.concatenate([f[5] / f[6] ** 2 for f in floats] + [np.array(weights)])
    u0 = 1000.0 / NOMINAL
    clock_width = np.array(
        [math.inf, math.inf, CLOCK_OFFSET_PRIOR_STD, DRIFT_PRIOR_STD, math.inf, DRIFT_PRIOR_STD]
    )
    from rankmodels.tracking.joint import SOURCE_DRIFT_PRIOR_STD

    width = np.r_[
        u0**2 * SPEED_PRIOR_STD / 1000.0,
        np.full(5, OFFSET_PRIOR_STD),
        np.full(5, SOURCE_DRIFT_PRIOR_STD),
        clock_width,
    ]
    mean = np.zeros(layout.size)
    mean[0] = u0
    info = a.T @ (a * w[:, None]) + np.diag(1.0 / width**2)
    theta = np.linalg.solve(info, a.T @ (w * y) + mean / width**2)
    values, std = got.vector()
    np.testing.assert_allclose(values, theta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(std, np.sqrt(np.diag(np.linalg.inv(info))), rtol=1e-6)
    expected = sum(r.log_likelihood(c0, c1) for r, c0, c1 in
                   zip(readings, got.clock_offset, got.clock_drift, strict=True))  # fmt: skip
    z = (values - mean) / width
    assert joint_log_prior(got, NOMINAL, readings) == pytest.approx(
        -0.5 * np.sum(z * z) + expected, rel=1e-9
    )


# --- the records' variables and a track that uses them ---


def _with_readings(record, **values):
    return annotate(record.assign({k: ((), v) for k, v in values.items()}), FLOAT_RECORD)


@pytest.fixture(scope="module")
def clocked():
    """40 days of float 767 whose clock runs 25 s ahead at launch and drifts 0.2 s/day."""
    return dimes_float767(seed=5, days=40, mismatch=Mismatch(clock_offset=25.0, clock_drift=0.2))


def test_readings_are_read_from_a_record(clocked):
    record = validate_float(
        _with_readings(clocked[0], clock_offset_launch=25.0, clock_offset_recovery=33.0)
    )
    r = ClockReadings.from_record(record)
    days = (record["recovery_time"].values - record["launch_time"].values) / np.timedelta64(1, "D")
    np.testing.assert_allclose(r.day, [0.0, days])
    assert r.offset.tolist() == [25.0, 33.0] and r.error == 0.5
    assert len(ClockReadings.from_record(validate_float(clocked[0]))) == 0


@pytest.mark.parametrize(
    ("values", "drop", "field", "expected"),
    [
        ({"clock_offset_recovery": 1.0}, (), "clock_offset_recovery", "needs clock_offset_launch"),
        (
            {"clock_offset_launch": 0.0, "clock_offset_recovery": 1.0},
            ("recovery_lat", "recovery_lon", "recovery_time"),
            "clock_offset_recovery",
            "needs recovery_time",
        ),
        ({"clock_offset_launch": math.inf}, (), "clock_offset_launch", "non-finite"),
        ({"clock_offset_launch": 0.0, "clock_offset_error": 0.0}, (), "clock_offset_error", "> 0"),
    ],
)
def test_bad_readings_are_refused_naming_the_variable(clocked, values, drop, field, expected):
    record = _with_readings(clocked[0].drop_vars(list(drop)), **values)
    with pytest.raises(InputError, match=expected) as info:
        validate_float(record, path="f.nc")
    assert info.value.field == field


def test_an_uncalibrated_track_runs_on_the_measured_clock(clocked):
    """Without calibration the file's clock is the line through the readings: the float whose
    clock runs 25 s (37 km) ahead and more is tracked as well as a float with a true clock,
    and far better than when its readings are withheld."""
    record, truth = clocked
    config = TrackConfig(particles=2000, calibrate=False, seed=1)
    days = float((record["recovery_time"] - record["launch_time"]) / np.timedelta64(1, "D"))
    read = _with_readings(record, clock_offset_launch=25.0, clock_offset_recovery=25.0 + 0.2 * days)
    errors = {}
    for name, rec in (("withheld", record), ("read", read)):
        track, _ = track_float(validate_float(rec), config)
        errors[name] = float(np.median(position_error_km(track, truth)))
        if name == "read":
            assert float(track["clock_offset"]) == pytest.approx(25.0)
            assert float(track["clock_drift"]) == pytest.approx(0.2)
            assert np.isnan(float(track["clock_offset_std"]))
    assert errors["read"] < 15.0 and 2.0 * errors["read"] < errors["withheld"], errors
