"""Track quality checks: each statistic against the model it comes from (Monte Carlo of the
signal model, the chi^2_2 law of the recovery distance, Gaussian innovations), the checks on
broken records (they must fail) and on clean ones (they must pass), and their round trip
through ``track.nc``."""

from __future__ import annotations

import math
import time

import numba
import numpy as np
import pytest
import xarray as xr

from rankmodels.tracking.geometry import tangent_step
from rankmodels.tracking.output import write_track
from rankmodels.tracking.pipeline import TrackConfig, track_float
from rankmodels.tracking.quality import (
    CHECKS,
    EndPoint,
    QualityInputs,
    StartPoint,
    clutter_check,
    expected_recorded,
    innovation_check,
    quality_from_track,
    quality_variables,
    recovery_check,
    run_check,
)
from rankmodels.tracking.records import read_float, validate_float
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.summary import TrackSummary
from tests._quality_helpers import MODEL, one_hot, simulate_cycles

PRED_CASES = {
    "spread sources": [200.0, 400.0, 610.0, 900.0, 1200.0, 1500.0],
    "sources near the window end": [1780.0, 1795.0, 1805.0, np.nan, np.nan, np.nan],
    "sources near the window start": [-4.0, 2.0, 6.0, 30.0, np.nan, np.nan],
    "no active source": [np.nan] * 6,
}


@pytest.mark.parametrize("case", PRED_CASES)
def test_expected_recorded_matches_a_monte_carlo_of_the_model(case):
    pred = np.array(PRED_CASES[case])[None, :]
    sd = np.full(pred.shape, MODEL.sigma)
    clutter, total = expected_recorded(pred, sd, MODEL, r=4)
    toa, lab = simulate_cycles(np.repeat(pred, 200_000, 0), MODEL, 4, np.random.default_rng(1))
    n_clutter = (lab == -1).sum(axis=1)
    n_total = np.isfinite(toa).sum(axis=1)
    for got, sample in ((clutter[0], n_clutter), (total[0], n_total)):
        se = sample.std() / math.sqrt(sample.size)
        assert abs(got - sample.mean()) < 4 * se + 1e-3, (case, got, sample.mean(), se)


def test_expected_recorded_without_sources_is_a_truncated_poisson_mean():
    """No source: every recorded arrival is clutter, E[C] = E[R] = E[min(Poisson(lam), r)]."""
    clutter, total = expected_recorded(np.full((1, 3), np.nan), np.ones((1, 3)), MODEL, r=3)
    k = np.arange(60)
    pmf = np.exp(
        k * math.log(MODEL.clutter_rate)
        - MODEL.clutter_rate
        - np.array([math.lgamma(i + 1) for i in k])
    )
    expect = float(np.sum(np.minimum(k, 3) * pmf))
    assert clutter[0] == pytest.approx(expect, rel=1e-6)
    assert total[0] == pytest.approx(expect, rel=1e-9)


def _end(offset_km, cov, extra_var) -> EndPoint:
    mean = np.array([-57.0, -90.0])
    lat, lon = tangent_step(mean[0], mean[1], offset_km[0], offset_km[1])
    return EndPoint(
        mean=mean, cov=np.asarray(cov), fix=(float(lat), float(lon)), extra_var=extra_var
    )


def test_recovery_distance_is_the_mahalanobis_distance_of_the_fix():
    check = recovery_check(_end((12.0, -5.0), [[30.0, 0.0], [0.0, 21.0]], 6.0))
    assert check.value == pytest.approx(math.sqrt(12.0**2 / 36.0 + 5.0**2 / 27.0), rel=1e-9)
    assert check.passed and "13.0 km" in check.message


def test_recovery_distance_follows_chi2_2_under_the_model():
    """Fixes drawn from the predicted distribution: P(d > x) = exp(-x^2 / 2); so the
    threshold's tail probability is what the docs say (1e-4)."""
    rng = np.random.default_rng(5)
    cov, extra = np.array([[40.0, 12.0], [12.0, 25.0]]), 9.0
    draws = rng.multivariate_normal([0.0, 0.0], cov + extra * np.eye(2), size=4000)
    d = np.array([recovery_check(_end(o, cov, extra)).value for o in draws])
    for x in (1.0, 2.0):
        p = math.exp(-(x**2) / 2)
        assert abs(np.mean(d > x) - p) < 4 * math.sqrt(p * (1 - p) / d.size)
    threshold = recovery_check(_end((1.0, 0.0), cov, extra)).threshold
    assert math.exp(-(threshold**2) / 2) == pytest.approx(CHECKS["recovery_distance"].false_alarm)


def test_recovery_check_without_a_fix_is_not_computed():
    check = recovery_check(None)
    assert check.passed is None and math.isnan(check.value)
    assert check.message == "not computed: no recovery fix in the record"
    assert check.status == "not computed"


def _inputs(toa, post, pred, var, model=MODEL, end=None, smoothed=None) -> QualityInputs:
    """Inputs with independent source predictions of variance ``var (T, s)`` (a diagonal
    covariance; NaN rows and columns where ``pred`` is NaN), the TOAs predicted at the
    posterior mean ``smoothed`` (default ``pred``)."""
    times = np.datetime64("2010-01-01", "ns") + np.arange(toa.shape[0]) * np.timedelta64(1, "D")
    var = np.where(np.isfinite(pred), var, np.nan)
    cov = var[:, :, None] * np.eye(var.shape[1])
    cov[~(np.isfinite(var)[:, :, None] & np.isfinite(var)[:, None, :])] = np.nan
    smoothed = pred if smoothed is None else smoothed
    return QualityInputs(toa, post, pred, cov, smoothed, model, times, end, StartPoint(0, 0, None))


def _model_cycles(n: int, seed: int, model: SignalModel = MODEL):
    rng = np.random.default_rng(seed)
    pred = np.sort(rng.uniform(100.0, 1700.0, (n, 5)), axis=1)
    toa, lab = simulate_cycles(pred, model, 4, rng)
    return pred, toa, lab


def test_clutter_excess_is_one_for_the_true_labels_and_large_when_all_is_clutter():
    pred, toa, lab = _model_cycles(600, 2)
    var = np.zeros_like(pred)
    truth = clutter_check(_inputs(toa, one_hot(lab, 5), pred, var))
    n_clutter = (lab == -1).sum()
    assert truth.passed and abs(truth.value - 1.0) < 4 / math.sqrt(n_clutter)
    everything = np.where(lab >= -1, -1, lab)
    lost = clutter_check(_inputs(toa, one_hot(everything, 5), pred, var))
    assert lost.passed is False  # every arrival clutter: the ratio grows by arrivals / clutter
    assert lost.value == pytest.approx(truth.value * (lab >= -1).sum() / n_clutter, rel=1e-9)
    assert "clutter" in lost.message


def test_clutter_excess_not_computed_without_clutter_or_with_few_arrivals():
    pred, toa, lab = _model_cycles(1, 3)
    few = clutter_check(_inputs(toa, one_hot(lab, 5), pred, np.zeros_like(pred)))
    assert few.passed is None and few.message.startswith("not computed: ")
    assert "needs at least 1)" in few.message and math.isnan(few.threshold)
    no_clutter = SignalModel(sigma=5.0, p_detect=0.8, clutter_rate=0.0)
    pred, toa, lab = _model_cycles(300, 3, no_clutter)
    check = clutter_check(_inputs(toa, one_hot(lab, 5), pred, np.zeros_like(pred), no_clutter))
    assert check.passed is None and "clutter rate 0" in check.message


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_innovation_rms_of_gaussian_innovations(scale):
    """Arrivals at N(mu, scale^2 sigma^2 + v), the true source known: RMS of the normalised
    innovation -> sqrt((scale^2 sigma^2 + v) / (sigma^2 + v)); 1 passes, 2 fails."""
    rng = np.random.default_rng(7)
    n, s, v = 400, 3, 9.0
    pred = np.sort(rng.uniform(100.0, 1700.0, (n, s)), axis=1)
    toa = pred + rng.normal(0.0, math.sqrt(scale**2 * MODEL.sigma**2 + v), pred.shape)
    lab = np.tile(np.arange(s), (n, 1))
    check = innovation_check(_inputs(toa, one_hot(lab, s), pred, np.full(pred.shape, v)))
    expect = math.sqrt((scale**2 * MODEL.sigma**2 + v) / (MODEL.sigma**2 + v))
    assert check.value == pytest.approx(expect, rel=0.08)
    assert check.passed is (scale == 1.0)


def test_innovation_rms_weights_sources_by_their_posterior_and_ignores_clutter():
    toa = np.array([[100.0, 500.0, 900.0]] * 60)
    pred = np.array([[110.0, 500.0, np.nan]] * 60)  # source 2 inactive
    post = np.zeros((60, 3, 4))
    post[:, 0, 0] = 1.0  # z = -10 / 5 = -2
    post[:, 1, 1] = 0.5  # z = 0, half the weight
    post[:, 1, 3] = 0.5
    post[:, 2, 3] = 1.0  # clutter: no innovation
    check = innovation_check(_inputs(toa, post, pred, np.zeros((60, 3))))
    assert check.value == pytest.approx(math.sqrt(4.0 / 1.5))


def test_innovation_rms_not_computed_with_few_matched_arrivals():
    toa = np.array([[100.0, np.nan]] * 10)
    post = np.full((10, 2, 2), np.nan)
    post[:, 0] = [1.0, 0.0]
    check = innovation_check(_inputs(toa[:9], post[:9], np.full((9, 1), 100.0), np.zeros((9, 1))))
    assert check.passed is None and "9.0 direct-path arrivals matched" in check.message
    assert "needs at least 10" in check.message


def test_unassociated_run_counts_unconfident_and_empty_cycles():
    n = 80
    toa = np.full((n, 2), 300.0)
    post = np.zeros((n, 2, 3))
    post[:, 0, 0] = 0.95
    post[:, 0, 2] = 0.05
    post[:, 1, 2] = 1.0  # confident clutter does not count as an association
    post[10:20, 0, :] = [0.6, 0.3, 0.1]  # ambiguous: 10 cycles
    toa[40:71] = np.nan  # no arrivals: 31 cycles
    post[40:71] = np.nan
    check = run_check(_inputs(toa, post, np.zeros((n, 2)), np.zeros((n, 2))))
    assert check.value == 31 and check.passed is False
    assert "31 consecutive cycles (40 .. 70, 2010-02-10 .. 2010-03-12)" in check.message
    post[40:71] = 0.0
    post[40:71, 0, 1] = 1.0
    check = run_check(_inputs(toa, post, np.zeros((n, 2)), np.zeros((n, 2))))
    assert check.value == 10 and check.passed and "(10 .. 19," in check.message


def _same(u: float, v: float) -> bool:
    return u == v or (math.isnan(u) and math.isnan(v))


def _checks_equal(a, b) -> bool:
    return len(a) == len(b) and all(
        (x.name, x.passed, x.message, x.doc) == (y.name, y.passed, y.message, y.doc)
        and _same(x.value, y.value)
        and _same(x.threshold, y.threshold)
        for x, y in zip(a, b, strict=True)
    )


def test_checks_round_trip_through_netcdf(tmp_path):
    checks = (
        recovery_check(_end((12.0, -5.0), [[30.0, 0.0], [0.0, 21.0]], 6.0)),
        recovery_check(None),
        run_check(
            _inputs(np.full((3, 1), np.nan), np.full((3, 1, 2), np.nan), *[np.zeros((3, 1))] * 2)
        ),
    )
    path = tmp_path / "q.nc"
    quality_variables(checks).to_netcdf(path, engine="netcdf4")
    loaded = xr.load_dataset(path)
    assert _checks_equal(quality_from_track(loaded), checks)
    assert [c.status for c in quality_from_track(loaded)] == ["passed", "not computed", "passed"]
    assert quality_from_track(xr.Dataset()) == ()


# --- on tracked records ---------------------------------------------------------------------

_BASE = dimes_float767(seed=12, days=60)[0].drop_vars("source_label")


def _broken(kind: str) -> xr.Dataset:
    rec = _BASE.copy(deep=True)
    if kind == "nan stretch":  # the first 35 cycles recorded nothing
        toa = rec["toa"].values.copy()
        toa[:35] = np.nan
        return rec.assign(toa=(("cycle", "rank"), toa))
    if kind == "sound speed 10 % off":
        return rec.assign(sound_speed=rec["sound_speed"] * 1.1)
    if kind == "shuffled source positions":
        perm = np.roll(np.arange(rec.sizes["source"]), 1)
        return rec.assign(
            source_lat=("source", rec["source_lat"].values[perm]),
            source_lon=("source", rec["source_lon"].values[perm]),
        )
    if kind == "one arrival":
        toa = np.full(rec["toa"].shape, np.nan)
        toa[0, 0] = rec["toa"].values[0, 0]
        return rec.assign(toa=(("cycle", "rank"), toa))
    if kind == "no recovery fix":
        return rec.drop_vars(["recovery_lat", "recovery_lon", "recovery_time"])
    assert kind == "clean"
    return rec


def _track(kind: str):
    return track_float(validate_float(_broken(kind)), TrackConfig(particles=1500, seed=1))


def _by_name(summary: TrackSummary) -> dict:
    return {c.name: c for c in summary.quality}


def test_a_clean_record_passes_every_check():
    track, summary = _track("clean")
    checks = _by_name(summary)
    assert list(checks) == list(CHECKS)
    assert all(c.passed for c in checks.values()), [c.message for c in checks.values()]
    assert summary.failed_checks == () and track.attrs["quality_failed"] == 0
    assert _checks_equal(quality_from_track(track), summary.quality)


@pytest.mark.parametrize(
    ("kind", "must_fail"),
    [
        ("nan stretch", {"unassociated_run"}),
        ("sound speed 10 % off", {"recovery_distance", "clutter_excess"}),
        ("shuffled source positions", {"recovery_distance", "clutter_excess"}),
    ],
)
def test_broken_records_trip_the_checks(kind, must_fail):
    track, summary = _track(kind)
    failed = {c.name for c in summary.failed_checks}
    assert must_fail <= failed, [c.message for c in summary.quality]
    assert track.attrs["quality_failed"] == len(failed)
    stored = dict(zip(track["quality_check"].values, track["quality_passed"].values, strict=True))
    assert {name for name, code in stored.items() if code == 0} == failed


def test_one_arrival_says_what_could_not_be_computed():
    _, summary = _track("one arrival")
    checks = _by_name(summary)
    assert checks["clutter_excess"].passed is None
    assert checks["clutter_excess"].message.startswith("not computed: 1 arrival, ")
    assert checks["innovation_rms"].passed is None
    assert checks["unassociated_run"].passed is False
    assert checks["unassociated_run"].value == _BASE.sizes["cycle"] - 1
    assert checks["recovery_distance"].passed is not None


def test_no_recovery_fix_is_not_computed_rather_than_passed():
    _, summary = _track("no recovery fix")
    check = _by_name(summary)["recovery_distance"]
    assert check.passed is None and check.message == "not computed: no recovery fix in the record"


def test_summary_is_typed_and_its_table_holds_the_scalar_fields():
    """The report's summary table reads the scalar fields; the checks, the calibration and
    the compile time are attributes only."""
    _, summary = _track("clean")
    table = summary.table()
    assert isinstance(summary.cycles, int) and table["cycles"] == _BASE.sizes["cycle"]
    assert table["collapsed_cycles"] == [] and table["engine"] == "exact"
    assert {"quality", "calibration", "parameters", "compile_time_s"}.isdisjoint(table)
    assert table["run_time_s"] == summary.run_time_s > 0


_counter = [0]


def test_compile_time_is_reported_apart_from_the_run_time():
    """A kernel compiled during the run (here by the progress callback: a fresh, uncached
    function) is counted in compile_time_s, not in run_time_s."""

    def compile_once(_: int) -> None:
        if _counter[0] == 0:
            numba.njit(lambda x: x + 1)(1)  # a new function: always compiled
        _counter[0] += 1

    record = validate_float(_BASE.isel(cycle=slice(0, 5)))
    started = time.perf_counter()
    _, summary = track_float(record, TrackConfig(particles=200), progress=compile_once)
    wall = time.perf_counter() - started
    assert summary.compile_time_s > 0 and summary.run_time_s > 0
    assert summary.run_time_s + summary.compile_time_s <= wall
    _, again = track_float(record, TrackConfig(particles=200))
    assert again.compile_time_s == 0


def test_the_shipped_sample_passes_calibrated_and_fails_as_written(repo_data):
    """The sample carries what real records carry (clock drift, a sound speed 10 m/s off the
    file's, offset errors, multipath): tracked with the file's values the checks say the
    track is wrong; calibrated (``track-float``'s default) every check passes."""
    record = read_float(repo_data / "float767.nc")
    _, summary = track_float(record, TrackConfig(particles=2000, calibrate=True))
    assert all(c.passed for c in summary.quality), [c.message for c in summary.quality]
    _, plain = track_float(record, TrackConfig(particles=2000))
    assert not {c.name: c.passed for c in plain.quality}["recovery_distance"]


def test_the_issue_one_arrival_sample_fails_where_it_can_be_checked(repo_data):
    """The issue's second record: the sample with a single arrival used to pass as a track."""
    record = read_float(repo_data / "float767.nc").drop_vars("source_label", errors="ignore")
    toa = np.full(record["toa"].shape, np.nan)
    toa[0, 0] = record["toa"].values[0, 0]
    record = validate_float(record.assign(toa=(("cycle", "rank"), toa)))
    _, summary = track_float(record, TrackConfig(particles=1000))
    status = {c.name: c.passed for c in summary.quality}
    assert status == {
        "recovery_distance": False,
        "launch_distance": None,
        "clutter_excess": None,
        "clutter_window": None,
        "innovation_rms": None,
        "unassociated_run": False,
    }


@pytest.mark.slow
def test_the_issue_record_fails_every_check(repo_data):
    """The issue: the sample with its first 100 cycles' TOAs NaN ended 1,166 km from the
    recovery fix with tight bands and exit 0; now every check fails (but the launch check,
    which has no early arrivals to go by)."""
    record = read_float(repo_data / "float767.nc").drop_vars("source_label", errors="ignore")
    toa = record["toa"].values.copy()
    toa[:100] = np.nan
    record = validate_float(record.assign(toa=(("cycle", "rank"), toa)))
    track, summary = track_float(record, TrackConfig(particles=2000))
    assert {c.name for c in summary.failed_checks} == set(CHECKS) - {"launch_distance"}
    assert {c.name: c for c in summary.quality}["launch_distance"].passed is None
    assert _checks_equal(quality_from_track(track), summary.quality)


def test_quality_round_trips_through_write_track(tmp_path):
    track, summary = _track("sound speed 10 % off")
    path = tmp_path / "track.nc"
    write_track(track, path)
    loaded = xr.load_dataset(path)
    assert _checks_equal(quality_from_track(loaded), summary.quality)
    assert loaded.attrs["quality_failed"] == len(summary.failed_checks) > 0
