"""Joint calibration of an experiment (``track-float FOLDER/ --calibrate-mode experiment``):
the pooled M-step against the closed-form weighted least squares over the stacked floats, a
tiny simulated experiment whose shared sound speed the floats recover together and not
alone, the command end to end, and sources placed differently by different floats."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking import em
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    ResidualStatistics,
)
from rankmodels.tracking.config import EXPERIMENT_EM_PARTICLES, TrackConfig
from rankmodels.tracking.experiment import (
    ExperimentProblem,
    calibrate_experiment,
    experiment_sources,
    pass_settings,
)
from rankmodels.tracking.joint import (
    MIN_POOLED_SHARE,
    SOURCE_DRIFT_PRIOR_STD,
    JointLayout,
    JointParameters,
    float_design,
    joint_m_step,
    monte_carlo_covariance,
    pool,
    replicated_score,
)
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import read_float
from rankmodels.tracking.shared import SOURCE_ERRORS_CAVEAT
from rankmodels_app.track import track_float as track_command
from tests._experiment_data import OFFSET_ERRORS, TRUE_SPEED, write_experiment

NOMINAL = 1500.0


def _synthetic(rng):
    """Three floats hearing overlapping subsets of five sources (local orders differ), with
    their own noise, and residual data drawn from known parameters."""
    layout = JointLayout(n_sources=5, n_floats=3)
    truth = np.r_[
        1000.0 / 1490.0,
        rng.normal(0, 1.0, 5),
        rng.normal(0, 0.005, 5),
        rng.normal(0, [0.5, 0.01] * 3),
    ]
    floats = []
    for f, (sources, sigma) in enumerate(
        (([0, 1, 2, 3], 2.0), ([3, 2, 4], 4.0), ([4, 0, 1, 2, 3], 3.0))
    ):
        k = 400
        local = rng.integers(0, len(sources), k)
        dist = rng.uniform(100.0, 1500.0, k)
        day = rng.uniform(0.0, 300.0, k)
        source_day = day + rng.uniform(0.0, 200.0, len(sources))[local]
        weight = rng.uniform(0.2, 1.0, k)
        glob = np.array(sources)[local]
        design = np.zeros((k, layout.size))
        design[:, 0] = dist
        design[np.arange(k), layout.offsets(glob)] = 1.0
        design[np.arange(k), layout.drifts(glob)] = source_day
        design[:, layout.clock(f)] = np.column_stack([np.ones(k), day])
        y = design @ truth + rng.normal(0.0, sigma, k)
        floats.append((np.array(sources), local, dist, day, source_day, weight, sigma, design, y))
    return layout, truth, floats


def test_pooled_m_step_equals_the_closed_form_weighted_least_squares(rng):
    layout, _, floats = _synthetic(rng)
    current = JointParameters.nominal(layout, NOMINAL)
    u0 = 1000.0 / NOMINAL
    stats = [
        float_design(dist, day, local, sday, y - dist * u0, w, n_sources=len(src), sigma=sig)
        for src, local, dist, day, sday, w, sig, _, y in floats
    ]
    got = joint_m_step(pool(stats, [f[0] for f in floats], layout), current, layout, NOMINAL)
    # brute force: the stacked design of every float, its weights and the priors
    a = np.vstack([f[7] for f in floats])
    y = np.concatenate([f[8] for f in floats])
    w = np.concatenate([f[5] / f[6] ** 2 for f in floats])
    width = _prior_width(u0)
    mean = np.zeros(layout.size)
    mean[0] = u0
    info = a.T @ (a * w[:, None]) + np.diag(1.0 / width**2)
    theta = np.linalg.solve(info, a.T @ (w * y) + mean / width**2)
    values, std = got.vector()
    assert np.all(np.isfinite(std))  # every entry determined by these data
    np.testing.assert_allclose(values, theta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(std, np.sqrt(np.diag(np.linalg.inv(info))), rtol=1e-6)


def _passes(floats, theta, noise_std, rng):
    """Each float's statistics at ``theta`` (:func:`_synthetic`'s linear model) from residuals
    with extra noise of ``noise_std`` (another pass's random numbers), and the scores by hand."""
    stats, scores = [], []
    for src, local, dist, day, sday, w, sig, design, y in floats:
        y = y + rng.normal(0.0, noise_std, y.size) if noise_std else y
        resid = y - design @ theta
        stats.append(float_design(dist, day, local, sday, resid, w, n_sources=len(src),
                                  sigma=sig))  # fmt: skip
        scores.append(design.T @ (w / sig**2 * resid))
    return stats, scores


@pytest.mark.parametrize("held", [[], [3, 9]])
def test_replicated_score_and_monte_carlo_covariance_by_hand(rng, held):
    """Two passes whose residuals differ by noise (other random numbers): the averaged
    penalised gradient, one pass's score noise 1/2 sum_f d_f d_f^T (d_f float f's score
    difference) and the end point's Monte Carlo covariance H^-1 noise H^-1, H the stacked
    design's information plus the priors restricted to the estimated entries, by hand; the
    held entries' gradient and rows are zero."""
    layout, _, floats = _synthetic(rng)
    u0 = 1000.0 / NOMINAL
    estimated = np.ones(layout.size, dtype=bool)
    estimated[held] = False
    theta = np.r_[u0, rng.normal(0.0, 0.1, layout.size - 1)]
    current = JointParameters.from_vector(layout, theta, np.where(estimated, 0.1, np.nan))
    (first, one), (second, two) = (_passes(floats, theta, extra, rng) for extra in (0.0, 1.5))
    sources = [f[0] for f in floats]
    pooled, gradient, noise = replicated_score(first, second, sources, current, NOMINAL)
    want_noise = sum(0.5 * np.outer(x - y, x - y) for x, y in zip(one, two, strict=True))
    np.testing.assert_allclose(noise, want_noise, rtol=1e-9, atol=1e-12)
    centre = np.r_[u0, np.zeros(layout.size - 1)]
    want_gradient = 0.5 * (sum(one) + sum(two)) - (theta - centre) / _prior_width(u0) ** 2
    np.testing.assert_allclose(gradient, np.where(estimated, want_gradient, 0.0), rtol=1e-9)
    got = monte_carlo_covariance(pooled, noise, current, NOMINAL)
    a = np.vstack([f[7] for f in floats])
    w = np.concatenate([f[5] / f[6] ** 2 for f in floats])
    info = a.T @ (a * w[:, None]) + np.diag(1.0 / _prior_width(u0) ** 2)
    e = np.ix_(estimated, estimated)
    inverse = np.linalg.inv(info[e])
    want = np.zeros_like(got)
    want[e] = inverse @ want_noise[e] @ inverse
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-14)
    assert not got[held].any() and not got[:, held].any()
    _, _, same = replicated_score(first, first, sources, current, NOMINAL)
    assert not same.any()  # the same random numbers: no Monte Carlo error


def test_replicated_score_refuses_passes_of_different_floats(rng):
    layout, _, floats = _synthetic(rng)
    stats, _ = _passes(floats, np.r_[1000.0 / NOMINAL, np.zeros(layout.size - 1)], 0.0, rng)
    with pytest.raises(ValueError, match="both passes and the sources of every float"):
        replicated_score(stats, stats[:2], [f[0] for f in floats],
                         JointParameters.nominal(layout, NOMINAL), NOMINAL)  # fmt: skip


@pytest.mark.parametrize(("shortened", "reach"), [(1.0, 1.0), (0.6, 1.0 / 0.6), (0.25, 2.0)])
def test_polish_finds_where_the_averaged_derivative_along_the_step_is_zero(rng, shortened, reach):
    """On the linear model the averaged score is linear in theta: from an exact M-step the
    polish stays at its target (t = 1); from an M-step that goes only part of the way the
    secant through the two directional derivatives reaches the root of the averaged score
    (t = 1 / part), at most POLISH_REACH steps. Passes run at seed + 1 at the start, then
    at seed and seed + 1 at the probe; the Monte Carlo covariance gets a quarter of the two
    noises' sum (two passes averaged, at two points)."""
    from rankmodels.tracking.experiment import POLISH_REACH, _polish

    layout, _, floats = _synthetic(rng)
    sources = [f[0] for f in floats]
    theta0 = np.r_[1000.0 / NOMINAL, np.zeros(layout.size - 1)]
    start = JointParameters.from_vector(layout, theta0, np.full(layout.size, 0.1))
    extra = {seed: np.random.default_rng(seed) for seed in (7, 8)}  # each seed's own noise
    noise_of = {seed: [g.normal(0.0, 1.0, f[8].size) for f in floats] for seed, g in extra.items()}
    calls = []

    def passes_at(theta, seed):
        calls.append((seed, theta))
        values = theta.vector()[0]
        return [
            float_design(dist, day, local, sday, y + e - design @ values, w,
                         n_sources=len(src), sigma=sig)
            for (src, local, dist, day, sday, w, sig, design, y), e in zip(
                floats, noise_of[seed], strict=True)
        ]  # fmt: skip

    def m_step(pooled, theta):
        exact = joint_m_step(pooled, theta, layout, NOMINAL)
        values, std = exact.vector()
        origin = theta.vector()[0]
        return JointParameters.from_vector(layout, origin + shortened * (values - origin), std)

    seen = {}

    def covariance(pooled, noise, theta):
        seen["noise"], seen["theta"] = noise, theta
        return np.eye(layout.size)

    def score(a, b, theta):
        out = replicated_score(a, b, sources, theta, NOMINAL)
        seen.setdefault("noises", []).append(out[2])
        return out

    end, cov, t = _polish(start, passes_at(start, 7), passes_at, 7, m_step, score, covariance)
    assert t == pytest.approx(min(reach, POLISH_REACH), rel=1e-7)
    assert [c[0] for c in calls] == [7, 8, 7, 8]
    assert calls[2][1] is calls[3][1]  # both probe passes at the same point
    # the root of the averaged score: closed form with the two seeds' data averaged
    a = np.vstack([f[7] for f in floats])
    w = np.concatenate([f[5] / f[6] ** 2 for f in floats])
    y = np.concatenate([f[8] + 0.5 * (e7 + e8) for f, e7, e8 in zip(
        floats, noise_of[7], noise_of[8], strict=True)])  # fmt: skip
    width = _prior_width(theta0[0])
    mean = np.r_[theta0[0], np.zeros(layout.size - 1)]
    info = a.T @ (a * w[:, None]) + np.diag(1.0 / width**2)
    root = np.linalg.solve(info, a.T @ (w * y) + mean / width**2)
    expected = theta0 + min(reach, POLISH_REACH) * shortened * (root - theta0)
    np.testing.assert_allclose(end.vector()[0], expected, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(seen["noise"], 0.25 * sum(seen["noises"]), rtol=1e-12)
    assert seen["theta"] is end and (cov == np.eye(layout.size)).all()


def test_polish_without_a_step_keeps_the_end_point_with_one_passes_noise(rng):
    from rankmodels.tracking.experiment import _polish

    layout, _, floats = _synthetic(rng)
    theta0 = np.r_[1000.0 / NOMINAL, np.zeros(layout.size - 1)]
    start = JointParameters.from_vector(layout, theta0, np.full(layout.size, 0.1))
    stats, _ = _passes(floats, theta0, 0.0, rng)
    again, _ = _passes(floats, theta0, 1.0, rng)
    calls = []

    def cannot_solve(pooled, theta):
        raise ValueError("not identifiable")

    def score(a, b, theta):
        return replicated_score(a, b, [f[0] for f in floats], theta, NOMINAL)

    end, cov, t = _polish(start, stats, lambda t, s: calls.append(s) or again, 3, cannot_solve,
                          score, lambda pooled, noise, theta: noise)  # fmt: skip
    assert end is start and calls == [4] and np.isnan(t)
    np.testing.assert_allclose(cov, score(stats, again, start)[2], rtol=1e-12)


def _prior_width(u0: float) -> np.ndarray:
    """The priors' standard deviations over theta of :func:`_synthetic`'s layout."""
    return np.r_[
        u0**2 * SPEED_PRIOR_STD / 1000.0,
        np.full(5, OFFSET_PRIOR_STD),
        np.full(5, SOURCE_DRIFT_PRIOR_STD),
        np.tile([CLOCK_OFFSET_PRIOR_STD, DRIFT_PRIOR_STD], 3),
    ]


@pytest.mark.parametrize("spread", [6.5, 7.0])
def test_pooled_newton_step_keeps_most_of_the_missing_information(rng, spread):
    """Positions drawn with a spread that takes 70-97 % of the slowness' information away
    (the speed alone estimated, the rest held): the pooled step and standard error use
    Louis' ``I_obs = I_c + P - var(S_m)`` as it is down to MIN_POOLED_SHARE of ``I_c + P``
    (one float's M-step would floor it at 0.3 and stop short), by hand."""
    layout = JointLayout(n_sources=1, n_floats=1)
    k, m = 400, 200
    base = rng.uniform(200.0, 1500.0, k)
    dist = base + rng.normal(0.0, spread, (m, k))
    u0 = 1000.0 / NOMINAL
    y = base * 1000.0 / 1490.0 + rng.normal(0.0, 5.0, k)
    zeros = np.zeros(k)
    stats = float_design(dist, zeros, zeros.astype(int), zeros, y - dist * u0, np.ones(k),
                         n_sources=1, sigma=5.0)  # fmt: skip
    got = joint_m_step(pool([stats], [np.array([0])], layout), JointParameters.nominal(layout,
                       NOMINAL), layout, NOMINAL, estimate=frozenset({"speed"}))  # fmt: skip
    prior = 1.0 / (u0**2 * SPEED_PRIOR_STD / 1000.0) ** 2
    complete = stats.information[0, 0] + prior
    share = 1.0 - stats.score_cov[0, 0] / complete
    assert MIN_POOLED_SHARE < share < 0.3
    u = u0 + stats.score[0] / (share * complete)
    assert got.sound_speed == pytest.approx(1000.0 / u, rel=1e-10)
    # plus the held offset correction's prior variance through the complete-data
    # sensitivity (the consider covariance; the clock columns are exact, the drift's zero)
    sensitivity = stats.information[0, 3] / complete
    var = 1.0 / (share * complete) + sensitivity**2 * OFFSET_PRIOR_STD**2
    assert got.sound_speed_std == pytest.approx(1000.0 * np.sqrt(var) / u**2, rel=1e-8)
    # the end point's Monte Carlo error divides the score noise by the same observed information
    again = float_design(dist, zeros, zeros.astype(int), zeros, y + 0.3 - dist * u0,
                         np.ones(k), n_sources=1, sigma=5.0)  # fmt: skip
    speed_only = JointParameters.from_vector(layout, np.r_[u0, 0.0, 0.0, 0.0, 0.0],
                                             np.r_[1.0, np.full(4, np.nan)])  # fmt: skip
    _, _, noise = replicated_score([stats], [again], [np.array([0])], speed_only, NOMINAL)
    assert noise[0, 0] == pytest.approx(0.5 * (stats.score[0] - again.score[0]) ** 2)
    pooled = pool([stats], [np.array([0])], layout)
    cov = monte_carlo_covariance(pooled, noise, speed_only, NOMINAL)
    assert cov[0, 0] == pytest.approx(noise[0, 0] / (share * complete) ** 2, rel=1e-8)


def test_a_source_nobody_hears_keeps_its_written_values(rng):
    """Source 4 is heard by no float: its corrections stay at 0 with no standard error."""
    layout, _, floats = _synthetic(rng)
    layout = JointLayout(n_sources=6, n_floats=3)  # one more source, never heard
    stats = [
        float_design(dist, day, local, sday, y - dist / 1.5, w, n_sources=len(src), sigma=sig)
        for src, local, dist, day, sday, w, sig, _, y in floats
    ]
    got = joint_m_step(
        pool(stats, [f[0] for f in floats], layout),
        JointParameters.nominal(layout, NOMINAL),
        layout,
        NOMINAL,
    )
    assert got.offset_correction[5] == 0.0 and np.isnan(got.offset_correction_std[5])
    assert got.drift_correction[5] == 0.0 and np.isnan(got.drift_correction_std[5])
    assert np.isfinite(got.offset_correction_std[:5]).all()


def _moved(record: xr.Dataset, source: str, km_north: float) -> xr.Dataset:
    out = record.copy(deep=True)
    i = list(out["source"].values).index(source)
    lat = out["source_lat"].values.copy()
    lat[i] += km_north / 111.2
    out["source_lat"] = ("source", lat)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return write_experiment(folder, days=12, n_floats=2)


def test_floats_placing_a_source_differently_are_refused(tiny, tmp_path):
    records = {p.stem: read_float(p) for p in tiny}
    records["f1"] = _moved(records["f1"], "US1-3", 25.0)
    with pytest.raises(InputError, match=r"f0 and f1 place source US1-3 25\.0 km apart"):
        experiment_sources(records)
    records["f1"] = _moved(read_float(tiny[1]), "US1-3", 0.3)  # rounding: the same source
    assert experiment_sources(records).names[2] == "US1-3"


def test_cli_refuses_an_inconsistent_experiment_in_one_line(tiny, tmp_path):
    from rankmodels.tracking.records import write_float

    (tmp_path / "in").mkdir()
    write_float(read_float(tiny[0]), tmp_path / "in" / "a.nc")
    write_float(_moved(read_float(tiny[1]), "UK1-2", -40.0), tmp_path / "in" / "b.nc")
    run = CliRunner().invoke(
        track_command,
        [str(tmp_path / "in"), "--calibrate-mode", "experiment", "--out", str(tmp_path / "o"),
         "--workers", "1", "--quiet"],
    )  # fmt: skip
    assert run.exit_code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "a and b place source UK1-2 40.0 km apart" in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-calibrate"], "needs --calibrate"),
        (["ONE"], "only for many floats"),
    ],
)
def test_cli_refuses_experiment_mode_without_calibration_or_with_one_float(
    tiny, tmp_path, args, message
):
    files = [str(tiny[0])] if args == ["ONE"] else [str(p) for p in tiny]
    extra = [] if args == ["ONE"] else args
    run = CliRunner().invoke(
        track_command,
        [*files, "--calibrate-mode", "experiment", "--out", str(tmp_path / "o"), *extra],
    )
    assert run.exit_code == 2
    assert run.stderr.count("Error:") == 1 and message in run.stderr


def test_cli_end_to_end_with_two_floats(tiny, tmp_path):
    """The joint calibration's reports, with estimated source offsets: two 12-day floats
    determine seven offsets under the random walk and none under the Lagrangian motion, whose
    joint calibration holds them all at their written values."""
    out = tmp_path / "out"
    run = CliRunner().invoke(
        track_command,
        [*map(str, tiny), "--calibrate-mode", "experiment", "--out", str(out), "--workers",
         "1", "--particles", "150", "--seed", "2", "--motion", "random-walk"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output + run.stderr
    assert run.stdout == ""  # with --out the summary goes to stderr
    assert "experiment calibrated jointly (2 floats" in run.stderr
    shared = json.loads((out / "summary.json").read_text())["experiment"]
    assert shared["sound_speed_std"] is not None  # these floats determine the speed
    assert 0 < shared["sound_speed_monte_carlo_std"] <= shared["sound_speed_std"]
    assert "the EM's Monte Carlo error" in run.stderr
    assert f"polished {shared['polish_reach']:.2f} of a Newton step" in run.stderr
    assert "the EM&#x27;s Monte Carlo error" in (out / "fleet.html").read_text()
    assert shared["floats"] == 2 and len(shared["sources"]) == 12
    heard = {s["source"]: s for s in shared["sources"]}
    assert sum(s["floats"] for s in heard.values()) >= 2
    assert all(s["arrivals"] >= 0 for s in heard.values())
    page = (out / "fleet.html").read_text()
    assert "Shared calibration of the experiment" in page
    assert any(s["offset_correction_std"] is not None for s in heard.values())
    assert f"(sources.csv; {SOURCE_ERRORS_CAVEAT})" in run.stderr
    assert SOURCE_ERRORS_CAVEAT in page
    csv = (out / "sources.csv").read_text().splitlines()
    assert csv[0].startswith("source,lat,lon,offset_correction") and len(csv) == 13
    for path in tiny:
        with xr.open_dataset(out / path.stem / "track.nc") as track:
            assert track.attrs["calibration_mode"] == "experiment"
            assert track.attrs["experiment_floats"] == 2
            assert float(track["sound_speed"]) == pytest.approx(shared["sound_speed"])
            assert "source_drift_correction" in track
            src = [s["offset_correction"] for s in shared["sources"]]
            np.testing.assert_allclose(track["source_offset_correction"].values, src, atol=1e-9)


def _speed_experiment(folder, days, n_floats, particles):
    paths = write_experiment(folder, days=days, n_floats=n_floats)
    config = TrackConfig(
        particles=particles, calibration_particles=particles, seed=1, calibrate=True,
        multipath=0.02, sigma=3.0,
    )  # fmt: skip
    joint = calibrate_experiment(paths, config).parameters
    alone = [track_float(read_float(p), config)[1].calibration.calibration for p in paths]
    return joint, alone


def _check_speed(joint, alone):
    # together: the true speed within 2.5 standard errors, which are a few m/s
    assert np.isfinite(joint.sound_speed_std) and joint.sound_speed_std < 4.0
    assert abs(joint.sound_speed - TRUE_SPEED) < 2.5 * joint.sound_speed_std
    # alone: no float separates the speed from its clock and offsets as well
    for cal in alone:
        assert not (
            np.isfinite(cal.sound_speed_std)
            and cal.sound_speed_std <= joint.sound_speed_std
            and abs(cal.sound_speed - TRUE_SPEED) < 2.5 * cal.sound_speed_std
        )


def test_joint_calibration_recovers_the_shared_speed(tmp_path):
    _check_speed(*_speed_experiment(tmp_path, days=20, n_floats=3, particles=200))


@pytest.mark.slow
def test_joint_calibration_recovers_speed_and_offsets_on_four_floats(tmp_path):
    joint, alone = _speed_experiment(tmp_path, days=60, n_floats=4, particles=500)
    _check_speed(joint, alone)
    # the shared offsets: the written errors undone, up to the common part the clocks share
    heard = np.isfinite(joint.offset_correction_std)
    err = joint.offset_correction[heard] + OFFSET_ERRORS[heard]
    assert np.all(np.abs(err - err.mean()) < 3.0 * joint.offset_correction_std[heard] + 0.3)


def test_a_drift_correction_moves_the_written_offsets_along_the_source_clocks(tiny):
    """The corrected record's written offsets grow by the correction times the days since
    each source's deployment (the clock reference)."""
    from rankmodels.tracking.records import source_days, written_offsets
    from rankmodels.tracking.shared import with_drift_correction

    record = read_float(tiny[0])
    correction = np.linspace(-0.02, 0.03, record.sizes["source"])
    moved = written_offsets(with_drift_correction(record, correction)) - written_offsets(record)
    days = source_days(record)
    assert days.min() > 5.0  # the sources were deployed before the launch
    np.testing.assert_allclose(moved, correction * days, atol=1e-9)


def test_a_drift_a_short_record_cannot_tell_from_an_offset_is_held_first(rng):
    """Over 20 days, 60 days after the deployment, a source drift is a near-constant delay:
    the drifts are held and the offsets, then determined, estimated."""
    layout = JointLayout(n_sources=3, n_floats=2)
    stats, sources = [], []
    for _ in range(2):
        k = 200
        src = rng.integers(0, 3, k)
        day = rng.uniform(0.0, 20.0, k)
        dist = rng.uniform(100.0, 1500.0, k)
        resid = rng.normal(0.0, 4.0, k)
        stats.append(
            float_design(dist, day, src, day + 60.0, resid, np.ones(k), n_sources=3, sigma=4.0)
        )
        sources.append(np.arange(3))
    got = joint_m_step(pool(stats, sources, layout), JointParameters.nominal(layout, NOMINAL),
                       layout, NOMINAL)  # fmt: skip
    assert np.isnan(got.drift_correction_std).all()
    assert np.isfinite(got.offset_correction_std).all()


# --- the search at the configured noise: M-steps and their extrapolations ---


@dataclass
class _Scripted:
    """A scripted experiment EM for :func:`rankmodels.tracking.em.search`: ``score(theta,
    models)`` gives a candidate's score and passes, ``step(theta, passes)`` its M-step; the
    file values ``files``; the rest as the experiment's own problem."""

    score: Callable
    step: Callable | None = None
    files: JointParameters | None = None

    def evaluate(self, candidate, factor=1.0):
        score, passes = self.score(*candidate)
        return em.Scored(score, score, False, passes)

    def propose(self, candidate, evidence, groups):
        return self.step(candidate[0], evidence)

    along = ExperimentProblem.along
    without = ExperimentProblem.without
    estimates = ExperimentProblem.estimates
    largest_z = ExperimentProblem.largest_z


def _search(start, evaluate, propose, iterations, extrapolate):
    """The search (one stage) of the scripted EM: candidates, passes, scores, best, stop."""
    found = em.search(_Scripted(evaluate, propose), start, (frozenset(),), iterations, extrapolate)
    scores = [s.score for s in found.scored]
    return found.candidates, [s.evidence for s in found.scored], scores, found.best, found.stop


def _check_groups(candidates, passes, scores, best, evaluate, files):
    """The likelihood-ratio check of the scripted EM from a search that kept ``best``."""
    scored = [em.Scored(s, s, False, p) for s, p in zip(scores, passes, strict=True)]
    found = em.Search(list(candidates), scored, best)
    return em.likelihood_ratio_check(_Scripted(evaluate, files=files), found), found


def _slow_em(target: float, share: float):
    """A scripted EM on the speed alone: the penalised log-likelihood ``-1e9 (u - u*)^2`` in
    the slowness (s/km; 45,000 nats from 1500 to 1485 m/s), and an M-step that goes ``share``
    of the way to the target (an EM whose tracks absorb most of every change)."""
    layout = JointLayout(n_sources=2, n_floats=1)
    u_star = 1000.0 / target
    seen = []

    def evaluate(theta, models):
        seen.append(theta.sound_speed)
        u = 1000.0 / theta.sound_speed
        return -1e9 * (u - u_star) ** 2, ["pass"]

    def propose(theta, passes):
        u = 1000.0 / theta.sound_speed
        new = replace(theta, sound_speed=1000.0 / (u + share * (u_star - u)), sound_speed_std=0.5)
        return new, [None]

    start = [(JointParameters.nominal(layout, NOMINAL), [None])]
    return start, evaluate, propose, seen


def test_search_extrapolates_a_step_that_helps_until_it_no_longer_does():
    from rankmodels.tracking.em import EXTRAPOLATION, MAX_REACH

    start, evaluate, propose, seen = _slow_em(1485.0, 0.02)
    candidates, _, scores, best, stop = _search(start, evaluate, propose, 5, True)
    u = [1000.0 / v for v in seen]
    step = u[1] - u[0]  # the first M-step's change, then 4x, 16x, 64x as far while rising
    for j in (2, 3, 4):
        assert u[j] - u[0] == pytest.approx(EXTRAPOLATION ** (j - 1) * step, rel=1e-9)
    assert EXTRAPOLATION**3 == MAX_REACH and scores[4] > scores[3]  # no 256x: the limit
    u_star = 1000.0 / 1485.0  # the next candidate is the next M-step's, from the 64x one
    assert u[5] - u[4] == pytest.approx(0.02 * (u_star - u[4]), rel=1e-9)
    assert abs(candidates[best][0].sound_speed - 1485.0) < 0.5
    assert scores[best] == max(scores) and len(scores) == len(candidates) == len(seen)
    # without extrapolation the same EM crawls: five M-steps leave it ~13.6 m/s away
    start, evaluate, propose, _ = _slow_em(1485.0, 0.02)
    plain = _search(start, evaluate, propose, 5, False)
    assert abs(plain[0][plain[3]][0].sound_speed - 1485.0) > 10.0
    assert len(plain[2]) == 6 and plain[4] == "iteration limit"


def test_search_shortens_a_step_that_overshoots():
    """An M-step that goes 2.5 times too far (a Newton step on a Monte Carlo observed
    information that understates the curvature) scores lower than where it started: the
    search then tries a quarter of it, which rises, and goes on from there; every M-step
    gets one shortened candidate and no extrapolation."""
    from rankmodels.tracking.em import EXTRAPOLATION

    start, evaluate, propose, seen = _slow_em(1485.0, 2.5)
    candidates, _, scores, best, stop = _search(start, evaluate, propose, 8, True)
    u = [1000.0 / v for v in seen]
    assert scores[1] < scores[0] and scores[2] > scores[0]
    assert u[2] - u[0] == pytest.approx((u[1] - u[0]) / EXTRAPOLATION, rel=1e-9)
    assert abs(candidates[best][0].sound_speed - 1485.0) < 0.1
    # each M-step: its proposal (lower than where it started) and a quarter of it, until
    # the gain is under MIN_GAIN
    assert stop == "no longer rising" and len(scores) % 2 == 1
    assert all(scores[k] < scores[k - 1] < scores[k + 1] for k in range(1, len(scores), 2))
    # a single overshoot without the shortened candidate would end the search at the start
    start, evaluate, propose, _ = _slow_em(1485.0, 2.5)
    plain = _search(start, evaluate, propose, 8, False)
    assert plain[3] == 0 and plain[4] == "no longer rising"


def test_search_stops_when_a_step_and_its_extrapolation_gain_little():
    """An overshooting extrapolation is not kept: the search goes on from the best, and ends
    "no longer rising" once an M-step and its extrapolations raise the best by <= MIN_GAIN."""
    start, evaluate, propose, seen = _slow_em(1485.0, 0.5)
    candidates, _, scores, best, stop = _search(start, evaluate, propose, 20, True)
    assert stop == "no longer rising"
    assert abs(candidates[best][0].sound_speed - 1485.0) < 0.2
    assert any(s < scores[best] for s in scores[1:])  # some extrapolations overshot
    assert len(scores) < 20


# --- the likelihood-ratio check after the search ---


def _estimated(layout: JointLayout, speed: float, speed_std: float, offsets: np.ndarray):
    """The files' values with the speed and the offset corrections estimated."""
    files = JointParameters.nominal(layout, NOMINAL)
    theta = replace(
        files,
        sound_speed=speed,
        sound_speed_std=speed_std,
        offset_correction=offsets,
        offset_correction_std=np.full(offsets.size, 0.5),
    )
    return files, theta


@pytest.mark.parametrize(
    ("drops", "kept_groups"),
    [
        ({"speed": 1.5, "offsets": 50.0}, {"offsets"}),  # the speed is not determined
        ({"speed": 30.0, "offsets": 2.0}, {"speed"}),  # the offsets are not
        ({"speed": 30.0, "offsets": 50.0}, {"speed", "offsets"}),
    ],
)
def test_groups_the_floats_do_not_determine_go_back_to_the_file_values(drops, kept_groups):
    """Each group estimated under DETERMINED_Z standard errors from the file values gets one
    pass at them; a drop of at most MIN_GAIN nats puts it back for good (the next group is
    checked from there), a larger one keeps the estimate."""
    from rankmodels.tracking.em import MIN_GAIN

    layout = JointLayout(n_sources=2, n_floats=1)
    files, theta = _estimated(layout, 1495.0, 2.0, np.array([0.8, -0.6]))  # z 2.5, 1.6
    assert MIN_GAIN < 30.0
    seen = []

    def evaluate(candidate, models):
        reverted = {
            "speed": candidate.sound_speed == NOMINAL,
            "offsets": not candidate.offset_correction.any(),
        }
        seen.append(reverted)
        return -100.0 - sum(drops[g] for g, r in reverted.items() if r), ["pass"]

    start = [(files, [None]), (theta, ["models"])]
    best, found = _check_groups(start, [["p0"], ["p1"]], [-500.0, -100.0], 1, evaluate, files)
    candidates = found.candidates
    assert len(seen) == 2 and len(found.scored) == len(candidates) == 4
    kept = candidates[best][0]
    assert kept.estimates("speed") == ("speed" in kept_groups)
    assert kept.estimates("offsets") == ("offsets" in kept_groups)
    assert candidates[best][1] == ["models"]  # the statistical models of the best
    if "speed" in kept_groups:
        assert kept.sound_speed == 1495.0
    else:
        assert kept.sound_speed == NOMINAL and np.isnan(kept.sound_speed_std)
        assert seen[1]["speed"]  # the offsets were checked from the reverted speed


def test_a_group_far_from_the_file_values_or_nothing_estimated_is_not_checked():
    from rankmodels.tracking.em import DETERMINED_Z

    layout = JointLayout(n_sources=2, n_floats=1)
    files, theta = _estimated(layout, 1485.0, 1.0, np.array([3.0, 0.1]))
    assert theta.largest_z("speed", files) >= DETERMINED_Z  # 15 m/s at 1 m/s
    assert theta.largest_z("offsets", files) == pytest.approx(6.0)
    assert theta.largest_z("drift", files) == 0.0 and not theta.estimates("drift")

    def evaluate(candidate, models):
        raise AssertionError("no pass expected")

    start = [(files, [None]), (theta, [None])]
    assert _check_groups(start, [[], []], [-500.0, -100.0], 1, evaluate, files)[0] == 1
    # the files' values kept: nothing to check
    assert _check_groups(start, [[], []], [-100.0, -500.0], 0, evaluate, files)[0] == 0


def test_without_puts_one_group_back_and_keeps_the_rest():
    layout = JointLayout(n_sources=2, n_floats=2)
    files = JointParameters.nominal(layout, NOMINAL)
    values, std = files.vector()
    rng = np.random.default_rng(3)
    theta = JointParameters.from_vector(layout, values + rng.normal(0, 0.01, values.size),
                                        np.full(values.size, 0.01))  # fmt: skip
    for group in ("speed", "offsets", "drift"):
        got, got_std = theta.without(group, files).vector()
        index = layout.group(group)
        rest = np.setdiff1d(np.arange(layout.size), index)
        np.testing.assert_allclose(got[index], values[index])
        assert np.isnan(got_std[index]).all()
        np.testing.assert_allclose(got[rest], theta.vector()[0][rest])
        np.testing.assert_allclose(got_std[rest], 0.01)
    assert sorted(np.r_[tuple(layout.group(g) for g in ("speed", "offsets", "drift"))]) == list(
        range(layout.size)
    )
    with pytest.raises(ValueError, match="group must be one of"):
        layout.group("clock")


@pytest.mark.parametrize("lost_floats", [0, 1])
def test_a_float_lost_in_the_first_annealing_pass_makes_it_hotter(monkeypatch, tiny, lost_floats):
    """When any float's first annealing pass ends away from its recovery fix, the pass runs
    again for every float at twice the factor, and the annealing comes down by halves; the
    progress still adds up to experiment_passes."""
    from rankmodels.tracking import experiment

    factors, verdicts = [], iter([True] * lost_floats + [False] * 10_000)
    original = experiment.float_e_step

    def spy(file, config, theta, f, sources, model, factor=1.0, fit=True):
        factors.append(factor)
        return original(file, config, theta, f, sources, model, factor, fit)

    monkeypatch.setattr(experiment, "float_e_step", spy)
    monkeypatch.setattr(experiment, "ended_lost", lambda *_: next(verdicts))
    config = TrackConfig(calibrate=True, particles=150, calibration_particles=150, ensemble=20,
                         calibration_iterations=1, seed=3)  # fmt: skip
    done = []
    calibrate_experiment(tiny, config, progress=done.append)
    n = len(tiny)
    ladder = [8.0, 4.0, 2.0] if lost_floats else [4.0, 2.0]
    first = [4.0] * lost_floats * n  # the lost pass, all floats
    assert factors[: len(first) + n * len(ladder)] == first + [f for f in ladder for _ in range(n)]
    assert set(factors[len(first) + n * len(ladder) :]) == {1.0}
    assert sum(done) == experiment.experiment_passes(config) * n


def test_the_polished_end_point_and_its_monte_carlo_error_are_what_the_experiment_states(
    monkeypatch, tiny
):
    """After the search and the check the polish runs every float three more times without
    fitting a model: at the kept candidate with the next seed, then at the probe with both;
    the experiment states the polished values, their standard errors combined with the
    Monte Carlo covariance's diagonal, that part apart, and each float is tracked with it."""
    from rankmodels.tracking import experiment

    calls, seen = [], {}
    original_step, original_polish = experiment.float_e_step, experiment._polish

    def spy(file, config, theta, f, sources, model, factor=1.0, fit=True):
        calls.append((config.seed, fit, factor, theta))
        return original_step(file, config, theta, f, sources, model, factor, fit)

    def polish(theta, *args):
        seen["start"] = theta
        seen["end"], seen["cov"], seen["reach"] = original_polish(theta, *args)
        return seen["end"], seen["cov"], seen["reach"]

    monkeypatch.setattr(experiment, "float_e_step", spy)
    monkeypatch.setattr(experiment, "_polish", polish)
    config = TrackConfig(calibrate=True, particles=150, calibration_particles=150, ensemble=20,
                         calibration_iterations=1, seed=3)  # fmt: skip
    result = calibrate_experiment(tiny, config)
    n = len(tiny)
    assert [c[:3] for c in calls[-3 * n :]] == [(4, False, 1.0)] * n + [(3, False, 1.0)] * n + [
        (4, False, 1.0)
    ] * n
    assert {c[0] for c in calls[: -3 * n]} == {3}
    assert all(c[3] is seen["start"] for c in calls[-3 * n : -2 * n])
    assert result.polish_reach == seen["reach"] and np.isfinite(seen["reach"])
    values, std = seen["end"].vector()
    assert np.isfinite(std).any() and seen["cov"][np.ix_(*2 * [np.isfinite(std)])].any()
    mc = np.where(np.isfinite(std), np.sqrt(np.diag(seen["cov"])), np.nan)
    np.testing.assert_allclose(result.monte_carlo_std, mc, rtol=1e-12)
    np.testing.assert_allclose(result.parameters.vector()[1], np.hypot(std, mc), rtol=1e-12)
    np.testing.assert_allclose(result.parameters.vector()[0], values, rtol=1e-12)
    speed_mc = mc[0] * result.parameters.sound_speed**2 / 1000.0
    assert result.sound_speed_monte_carlo_std == pytest.approx(speed_mc, rel=1e-12)
    share = result.floats[0].result
    tracked = share.trace[share.best]
    assert tracked.sound_speed == pytest.approx(result.parameters.sound_speed, rel=1e-12)
    assert tracked.sound_speed_std == pytest.approx(result.parameters.sound_speed_std, rel=1e-12)


def test_experiment_passes_counts_every_pass_the_em_may_run():
    """The annealing (2, and 2 more per level the first pass may go hotter: 4 to 8 and 16
    sigma), the files' values and the annealed estimate, per M-step its proposal and the
    extrapolations to 4, 16 and 64 times, one likelihood-ratio check per geometry group, and
    with any geometry the polish's three."""
    from rankmodels.tracking.experiment import experiment_passes

    for params, checks in (("speed,offsets,drift", 3), ("speed", 1), ("sigma", 0)):
        config = TrackConfig(calibrate=True, calibrate_params=params, calibration_iterations=5)
        polish = 3 * (checks > 0)
        assert experiment_passes(config) == (2 + 2 * 2) + 2 + 5 * (1 + 3) + checks + polish


@pytest.mark.parametrize(("given", "used"), [(None, EXPERIMENT_EM_PARTICLES), (700, 700)])
def test_the_experiments_em_passes_run_at_its_own_particle_count(given, used):
    assert pass_settings(TrackConfig(calibration_particles=given)).particles == used


def test_the_mean_of_replicate_statistics_averages_every_field(rng):
    one, two = (
        ResidualStatistics(rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), 50)
        for _ in range(2)
    )
    mean = ResidualStatistics.mean([one, two])
    for field in ("score", "score_cov", "information"):
        np.testing.assert_allclose(
            getattr(mean, field), 0.5 * (getattr(one, field) + getattr(two, field))
        )
    assert mean.trajectories == 50


def test_the_pooled_m_step_estimates_what_carries_a_quarter_of_its_priors_information():
    """Diagonal pooled information: a source offset whose data carry half its prior's
    information is estimated by the experiment's M-step (posterior variance 2/3 of the
    prior's, under MIN_POOLED_DATA_TO_PRIOR's 0.8) where one float's rule would hold it; a
    source drift with a fifth of its prior's information is held by both."""
    from rankmodels.tracking.calibration import solve_newton
    from rankmodels.tracking.joint import MIN_POOLED_DATA_TO_PRIOR, joint_prior

    layout = JointLayout(n_sources=1, n_floats=1)
    _, width = joint_prior(layout, NOMINAL)
    ratio = np.array([100.0, 0.5, 0.2, 100.0, 100.0])  # data information / prior information
    info = np.diag(ratio / width**2)
    stats = ResidualStatistics(np.full(5, 1e-3), np.zeros((5, 5)), info, 1)
    got = joint_m_step(stats, JointParameters.nominal(layout, NOMINAL), layout, NOMINAL)
    _, std = got.vector()
    assert np.isfinite(std[[0, 1, 3, 4]]).all() and np.isnan(std[2])
    assert MIN_POOLED_DATA_TO_PRIOR < 0.5
    theta = JointParameters.nominal(layout, NOMINAL).vector()[0]
    one_float = solve_newton(theta, np.ones(5, bool), stats, 1.0 / width**2, theta * 0,
                             np.zeros(5))[2]  # fmt: skip
    assert list(one_float) == [True, False, False, True, True]


@pytest.mark.parametrize("estimated", [False, True])
def test_summary_and_fleet_page_say_what_the_source_errors_leave_out_when_estimated(estimated):
    from types import SimpleNamespace

    from apps.track_batch import _shared_lines
    from rankmodels.plots.fleet import shared_section

    std = np.array([0.4, np.nan]) if estimated else np.full(2, np.nan)
    params = SimpleNamespace(
        sound_speed=1485.0, sound_speed_std=np.nan, offset_correction=np.array([0.5, 0.0]),
        offset_correction_std=std, drift_correction=np.zeros(2),
        drift_correction_std=np.full(2, np.nan),
    )  # fmt: skip
    result = SimpleNamespace(
        parameters=params, sound_speed_monte_carlo_std=np.nan, polish_reach=np.nan,
        names=("a", "b"), best=1, loglik=(0.0, 1.0), stop="no longer rising",
    )  # fmt: skip
    line = _shared_lines(result)[1]
    assert line.endswith(f"(sources.csv; {SOURCE_ERRORS_CAVEAT})" if estimated else "(sources.csv)")
    sources = [
        {"source": name, "offset_correction": 0.5, "drift_correction": 0.0,
         "offset_correction_std": None if np.isnan(e) else float(e),
         "drift_correction_std": None, "floats": 2, "arrivals": 10.0}
        for name, e in zip("XY", std, strict=True)
    ]  # fmt: skip
    page = shared_section(
        {"sound_speed": 1485.0, "sound_speed_std": None, "floats": 2, "kept_pass": 1,
         "em_passes": 2, "stop": "no longer rising", "sources": sources}
    )  # fmt: skip
    assert ("leave out how far all the tracks can move together" in page) is estimated


def test_the_experiment_m_step_hands_each_float_its_fitted_model():
    """The pooled M-step moves the shared geometry when the groups hold geometry and hands
    every float the model its own E-step fitted when they hold a statistical parameter;
    otherwise each part stays."""
    from types import SimpleNamespace

    layout = JointLayout(n_sources=2, n_floats=2)
    files = JointParameters.nominal(layout, NOMINAL)
    moved = replace(files, sound_speed=1490.0)
    problem = ExperimentProblem(
        e_steps=None, m_step=lambda theta, passes: moved, geometry=frozenset({"speed"}),
        files=files, nominal=NOMINAL, clocks=[],
    )  # fmt: skip
    passes = [SimpleNamespace(fitted="model 0"), SimpleNamespace(fitted="model 1")]
    start = (files, [None, None])
    assert problem.propose(start, passes, frozenset({"speed", "sigma"})) == (
        moved, ["model 0", "model 1"]
    )  # fmt: skip
    assert problem.propose(start, passes, frozenset({"speed"})) == (moved, [None, None])
    assert problem.propose(start, passes, frozenset({"sigma"}))[0] is files


def test_the_shared_sound_speed_starts_from_the_floats_own_starting_speeds(
    monkeypatch, tiny, tmp_path
):
    """One float with temperature and pressure, one without: the joint EM starts at the mean
    of the first's TEOS-10 speed and the second's file speed (``--sound-speed`` overrides)."""
    from rankmodels.tracking import experiment
    from rankmodels.tracking.records import write_float
    from rankmodels.tracking.sound_speed import starting_sound_speed

    warm = read_float(tiny[0])
    n = warm.sizes["cycle"]
    warm = warm.assign(
        temperature=("cycle", np.full(n, 2.5), {"units": "degree_Celsius"}),
        pressure=("cycle", np.full(n, 800.0), {"units": "dbar"}),
    )
    files = [tmp_path / "warm.nc", tiny[1]]
    write_float(warm, files[0])
    sensors = starting_sound_speed(read_float(files[0]))
    assert sensors.origin == "sensors"
    expected = 0.5 * (sensors.value + float(read_float(tiny[1])["sound_speed"]))
    started = []

    class Started(Exception):
        pass

    def spy(layout, speed, clocks):
        started.append(speed)
        raise Started

    monkeypatch.setattr(experiment.JointParameters, "nominal", staticmethod(spy))
    for given, want in ((None, expected), (1490.0, 1490.0)):
        with pytest.raises(Started):
            calibrate_experiment(files, TrackConfig(calibrate=True, sound_speed=given))
        assert started[-1] == pytest.approx(want, abs=1e-9)
