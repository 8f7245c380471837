"""The starting sound speed from the float's temperature and pressure (TEOS-10 via gsw)."""

from __future__ import annotations

from pathlib import Path

import gsw
import numpy as np
import pytest

from rankmodels.tracking.schema import DEFAULT_SALINITY
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.sound_speed import sensor_sound_speed, starting_sound_speed

CHECK_VALUES = Path(gsw.__file__).parent / "tests" / "gsw_cv_v3_0.npz"


@pytest.mark.skipif(not CHECK_VALUES.exists(), reason="gsw's check values are not installed")
def test_teos10_check_values_within_a_hundredth():
    """The TEOS-10 check casts (practical salinity, in-situ temperature, pressure, position):
    the published sound speed within 0.01 m/s at every level of every cast."""
    cv = np.load(CHECK_VALUES)
    for j in range(cv["SP_chck_cast"].shape[1]):
        got = sensor_sound_speed(
            cv["t_chck_cast"][:, j],
            cv["p_chck_cast"][:, j],
            cv["SP_chck_cast"][:, j],
            float(np.ravel(cv["lat_chck_cast"])[j]),
            float(np.ravel(cv["long_chck_cast"])[j]),
        )
        want = cv["sound_speed"][:, j]
        ok = np.isfinite(want)
        assert np.abs(got[ok] - want[ok]).max() < 0.01


def test_known_value_and_nan():
    """About 1449 m/s at 0 degC, 35 and the surface; 2 degC at 800 dbar about 1471."""
    c = sensor_sound_speed(
        np.array([0.0, 2.0, np.nan]), np.array([0.0, 800.0, 0.0]), 35.0, -56, -100
    )
    assert c[0] == pytest.approx(1449.1, abs=0.3)
    assert 1468 < c[1] < 1474 and np.isnan(c[2])
    with pytest.raises(ValueError, match="position"):
        sensor_sound_speed(np.zeros(1), np.zeros(1), 35.0, 95.0, 0.0)


def test_start_from_sensors_then_file():
    record, _ = dimes_float767(seed=2, days=10)
    assert starting_sound_speed(record).origin == "file"
    assert starting_sound_speed(record).value == float(record["sound_speed"])
    n = record.sizes["cycle"]
    t = np.linspace(1.0, 3.0, n)
    t[0] = np.nan  # a bad reading is left out
    p = np.full(n, 800.0)
    with_sensors = record.assign(temperature=("cycle", t), pressure=("cycle", p))
    start = starting_sound_speed(with_sensors)
    lat, lon = float(record["launch_lat"]), float(record["launch_lon"])
    expected = np.median(sensor_sound_speed(t[1:], p[1:], DEFAULT_SALINITY, lat, lon))
    assert start.origin == "sensors" and start.cycles == n - 1
    assert start.value == pytest.approx(expected, abs=1e-9)
    salty = with_sensors.assign(salinity=("cycle", np.full(n, 30.0)))
    assert starting_sound_speed(salty).value < start.value - 3  # fresher water, slower sound
    blank = record.assign(temperature=("cycle", np.full(n, np.nan)), pressure=("cycle", p))
    assert starting_sound_speed(blank).origin == "file"
