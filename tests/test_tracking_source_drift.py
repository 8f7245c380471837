"""Source clock drift: the written offset at each cycle (closed form), the simulator and the
tracker's predictions against the known truth, tracking with the drift given against a
drift-free float, the calibration's E-step, validation and the sources table."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking import TrackConfig, track_float
from rankmodels.tracking.calibration import m_step_pairs
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.passes import Predictor
from rankmodels.tracking.prepared import prepare, start_parameters
from rankmodels.tracking.records import validate_float, written_offsets
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.tables import export_tables
from rankmodels_app.cli import cli

DAY = np.timedelta64(86_400_000_000_000, "ns")


@pytest.fixture(scope="module")
def drifting():
    """A 40-day float whose sources drift 0.3 s/day (12 s at the launch for the sources
    deployed 39 days before it), and the same float (same seed) without drift: the same track
    and draws; arrivals late by the drift may trade places with clutter among the first r."""
    record, truth = dimes_float767(3, days=40, source_drift=0.3)
    plain, plain_truth = dimes_float767(3, days=40)
    xr.testing.assert_equal(truth.drop_vars("true_label"), plain_truth.drop_vars("true_label"))
    assert np.mean(truth["true_label"].values == plain_truth["true_label"].values) > 0.95
    return validate_float(record), validate_float(plain), truth


def test_written_offsets_add_the_drift_since_deployment_or_launch(drifting):
    record = drifting[0].copy(deep=True)
    record["source_start_time"].values[1] = np.datetime64("NaT")  # no deployment: the launch
    drift = np.linspace(-0.2, 0.4, record.sizes["source"])
    record["source_drift"].values[:] = drift
    got = written_offsets(validate_float(record))
    times = record["time"].values
    for i in (0, 1, 7):
        start = record["source_start_time"].values[i]
        reference = record["launch_time"].values if np.isnat(start) else start
        days = (times - reference) / DAY
        expected = record["source_offset"].values[i] + drift[i] * days
        assert np.allclose(got[:, i], expected, rtol=0, atol=1e-9)
    assert got[0, 1] == pytest.approx(record["source_offset"].values[1] + drift[1] * 1.0)
    assert got[0, 0] == pytest.approx(record["source_offset"].values[0] + drift[0] * 40.0)


def _residual_slope(record, truth):
    """Slope (s/day) and mean (s) of the true arrivals' TOA minus the tracker's prediction at
    the true position."""
    cycles = prepare(record, TrackConfig())
    predictor = Predictor(cycles, start_parameters(cycles, TrackConfig()))
    label = truth["true_label"].values
    pos = np.column_stack([truth["lat"].values, truth["lon"].values])
    days, resid = [], []
    for t in range(label.shape[0]):
        pred = np.full(cycles.n_sources, np.nan)
        pred[cycles.active[t]] = predictor.predicted(t, pos[t : t + 1])[0]
        for j in np.flatnonzero(label[t] >= 0):
            days.append(cycles.day[t])
            resid.append(cycles.toa[t, j] - pred[label[t, j]])
    slope, mean = np.polyfit(days, resid, 1)
    return slope, np.mean(resid)


def test_with_the_drift_given_the_predictions_meet_the_truth():
    """Known truth, sources drifting 0.01 s/day over 300 days: the true arrivals' residuals at
    the true positions have no trend with the drift given, and the drift's trend without."""
    record, truth = dimes_float767(8, days=300, source_drift=0.01)
    record = validate_float(record)
    slope, mean = _residual_slope(record, truth)
    assert abs(slope) < 0.003 and abs(mean) < 0.5
    ignored, _ = _residual_slope(record.drop_vars("source_drift"), truth)
    assert abs(ignored - 0.01) < 0.003


def test_tracking_with_the_drift_given_equals_tracking_the_drift_free_float(drifting):
    record, plain, truth = drifting
    config = TrackConfig(particles=1000)
    err = {}
    for name, rec in (("given", record), ("plain", plain), ("ignored", _ignored(record))):
        track, _ = track_float(rec, config)
        err[name] = position_error_km(track, truth)
        if name == "given":
            assert np.allclose(track["source_drift"].values, 0.3)
    assert abs(np.median(err["given"]) - np.median(err["plain"])) < 1.0
    assert abs(np.percentile(err["given"], 90) - np.percentile(err["plain"], 90)) < 1.5
    assert np.median(err["ignored"]) > 3 * np.median(err["plain"])  # the drift matters


def _ignored(record):
    out = record.copy(deep=True)
    out["source_drift"].values[:] = 0.0
    return out


@pytest.mark.slow
def test_sources_drifting_0_01_s_per_day_over_300_days():
    plain, truth = dimes_float767(8, days=300)
    record, _ = dimes_float767(8, days=300, source_drift=0.01)
    config = TrackConfig(particles=10_000)
    given = position_error_km(track_float(validate_float(record), config)[0], truth)
    free = position_error_km(track_float(validate_float(plain), config)[0], truth)
    assert abs(np.median(given) - np.median(free)) < 0.5
    assert abs(np.percentile(given, 90) - np.percentile(free, 90)) < 1.0


def test_the_e_step_subtracts_the_offset_at_each_cycle():
    rng = np.random.default_rng(0)
    toa = rng.uniform(0, 1000, (4, 2))
    posterior = np.zeros((4, 2, 4))
    posterior[:, 0, 1] = posterior[:, 1, 2] = 1.0
    dist = rng.uniform(100, 900, (3, 4, 3))
    day = np.arange(4.0)
    offset = np.array([5.0, 10.0, 20.0])
    drifted = offset + 0.5 * day[:, None]
    flat = m_step_pairs(toa, posterior, dist, day, offset)
    per_cycle = m_step_pairs(toa, posterior, dist, day, drifted)
    assert np.array_equal(flat["source"], per_cycle["source"])
    assert np.allclose(flat["residual_toa"] - per_cycle["residual_toa"], 0.5 * flat["day"])
    assert np.allclose(
        per_cycle["residual_toa"], toa.ravel() - drifted[flat["day"].astype(int), flat["source"]]
    )


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_drift_that_is_not_finite_is_refused(drifting, value):
    bad = drifting[0].copy(deep=True)
    bad["source_drift"].values[2] = value
    with pytest.raises(InputError) as info:
        validate_float(bad, path="f.nc")
    assert info.value.field == "source_drift" and "non-finite value at index 2" in str(info.value)


def test_drift_units_are_converted(drifting):
    given = drifting[0].copy(deep=True)
    given["source_drift"] = given["source_drift"] * 365.25
    given["source_drift"].attrs["units"] = "s/year"
    assert np.allclose(validate_float(given)["source_drift"].values, 0.3)


@pytest.mark.parametrize(
    ("cell", "expected"),
    [("x", "expected a number, got 'x'"), ("inf", "expected a finite number, got 'inf'")],
)
def test_float_import_refuses_a_bad_drift_in_one_line(drifting, tmp_path, cell, expected):
    export_tables(drifting[0], tmp_path)
    lines = (tmp_path / "sources.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[2].split(",")
    row[header.index("drift")] = cell
    lines[2] = ",".join(row)
    (tmp_path / "sources.csv").write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(
        cli,
        [
            "float", "import", "--toa", str(tmp_path / "toa.csv"), "--sources",
            str(tmp_path / "sources.csv"), "--meta-table", str(tmp_path / "meta.csv"),
            "-o", str(tmp_path / "out.nc"),
        ],
    )  # fmt: skip
    assert done.exit_code == 2
    column = header.index("drift") + 1
    assert done.output.strip() == (
        f"Error: {tmp_path / 'sources.csv'}: line 3, column {column} (drift): {expected}"
    )
