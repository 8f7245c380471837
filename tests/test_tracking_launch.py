"""The launch check: the backward filter from a diffuse start against a Kalman smoother (a
linear-Gaussian case), the distance of the launch fix by hand and its chi^2_2 law, what is not
computed, and tracked floats: intact ones pass, the same floats with their launch moved
100 km fail."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rankmodels.tracking.config import COMMAND_MULTIPATH
from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.geometry import tangent_offsets, tangent_step
from rankmodels.tracking.launch import (
    PRIOR_KM,
    WINDOW_DAYS,
    first_position,
    pool,
    window_cycles,
)
from rankmodels.tracking.pipeline import TrackConfig, track_float
from rankmodels.tracking.quality import (
    CHECKS,
    MIN_LAUNCH_CYCLES,
    EndPoint,
    StartPoint,
    chi2_2_threshold,
    launch_check,
)
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.worlds import LAUNCH_ERROR_KM, break_record, draw_world, simulate_world

CENTRE = (-57.0, -100.0)
SPEC = CHECKS["launch_distance"]


# --- the backward filter -------------------------------------------------------------------


def _kalman_first(obs: list, dt: np.ndarray, q: float, s: float) -> tuple[float, float]:
    """Mean and variance (per axis, km) of ``X_0`` given ``y_t = X_t + N(0, s^2)`` (``obs[t]``
    a float, or None) under the random walk with steps ``q^2 dt[t]``, flat prior: the
    information filter run from the last cycle back to the first."""
    info, weighted = 0.0, 0.0  # precision and precision * mean of X_t given y_t..
    for t in range(len(obs) - 1, -1, -1):
        if obs[t] is not None:
            info, weighted = info + 1.0 / s**2, weighted + obs[t] / s**2
        if t > 0:  # back one step: var + q^2 dt[t]
            var = 1.0 / info + q**2 * dt[t]
            info, weighted = 1.0 / var, (weighted / info) / var
    return weighted / info, 1.0 / info


def _observed(obs_e: list, obs_n: list, s: float):
    """``loglik(t, x)``: the cycle observes the position in km east, north of CENTRE."""

    def loglik(t: int, x: np.ndarray) -> np.ndarray | None:
        if obs_e[t] is None:
            return None
        east, north = tangent_offsets(CENTRE[0], CENTRE[1], x[:, 0], x[:, 1])
        return -0.5 * ((east - obs_e[t]) ** 2 + (north - obs_n[t]) ** 2) / s**2

    return loglik


@pytest.mark.parametrize("shift_km", [0.0, 120.0])
def test_first_position_is_the_smoothed_first_cycle_of_a_linear_gaussian_walk(shift_km):
    """Position observations with noise s = 3 km, a walk of q = 4 km/day with unequal steps
    and a cycle without data: the backward filter's first-cycle posterior is the Kalman
    smoother's under a flat prior, whether the diffuse start is centred on the data or
    120 km off it (the centre barely pulls)."""
    q, s = 4.0, 3.0
    dt = np.array([1.0, 0.5, 2.0, 1.0, 3.0, 1.0, 0.25, 1.5])
    rng = np.random.default_rng(3)
    path = np.cumsum(rng.normal(0.0, q * np.sqrt(dt)[:, None], (dt.size, 2)), axis=0)
    noisy = path + rng.normal(0.0, s, path.shape)
    obs_e = [None if t == 2 else float(v) for t, v in enumerate(noisy[:, 0])]
    obs_n = [None if t == 2 else float(v) for t, v in enumerate(noisy[:, 1])]
    centre = np.array(tangent_step(CENTRE[0], CENTRE[1], shift_km, 0.0), dtype=float)
    mean, cov = first_position(
        centre, dt, _observed(obs_e, obs_n, s), RandomWalk(q), np.random.default_rng(1)
    )
    got = tangent_offsets(CENTRE[0], CENTRE[1], mean[0], mean[1])
    for axis, obs in enumerate((obs_e, obs_n)):
        want_mean, want_var = _kalman_first(obs, dt, q, s)
        assert got[axis] == pytest.approx(want_mean, abs=4 * math.sqrt(want_var / 2000))
        assert cov[axis, axis] == pytest.approx(want_var, rel=0.12)
    assert abs(cov[0, 1]) < 0.12 * math.sqrt(cov[0, 0] * cov[1, 1])


def test_without_data_the_first_position_is_the_diffuse_start_walked_back():
    """No arrivals: the first cycle's position is the start ``N(c, (R^2 + q^2 day_K-1) I)``
    walked back over the remaining steps: variance ``R^2 + q^2 (sum dt + sum dt[1:])``."""
    q, dt = 5.0, np.array([2.0, 1.0, 3.0, 1.0])
    mean, cov = first_position(
        np.array(CENTRE), dt, lambda t, x: None, RandomWalk(q), np.random.default_rng(4)
    )
    want = PRIOR_KM**2 + q**2 * (dt.sum() + dt[1:].sum())
    np.testing.assert_allclose(np.diag(cov), [want, want], rtol=0.05)
    east, north = tangent_offsets(CENTRE[0], CENTRE[1], mean[0], mean[1])
    assert math.hypot(east, north) < 4 * math.sqrt(want / 2500)


def _points(*offsets_km) -> np.ndarray:
    """``(B, 2)`` (lat, lon) of the (east, north) km offsets from CENTRE."""
    return np.array([tangent_step(CENTRE[0], CENTRE[1], e, n) for e, n in offsets_km])


def test_pool_weighs_islands_by_their_evidence():
    """Equal evidence: the mixture's mean and covariance (within plus between spread) by hand;
    an island 50 nats worse weighs e^-50: the pool is the better island; no evidence at all
    (every island collapsed): equal weights."""
    means = _points((-5.0, 0.0), (5.0, 2.0))
    covs = np.array([[[9.0, 1.0], [1.0, 4.0]], [[5.0, 0.0], [0.0, 6.0]]])
    mean, cov = pool(means, covs, np.array([-300.0, -300.0]))
    east, north = tangent_offsets(CENTRE[0], CENTRE[1], mean[0], mean[1])
    assert (east, north) == (pytest.approx(0.0, abs=1e-6), pytest.approx(1.0, abs=1e-6))
    between = np.array([[25.0, 5.0], [5.0, 1.0]])
    np.testing.assert_allclose(cov, covs.mean(axis=0) + between, rtol=1e-6)
    mean, cov = pool(means, covs, np.array([-350.0, -300.0]))
    np.testing.assert_allclose(mean, means[1], atol=1e-9)
    np.testing.assert_allclose(cov, covs[1], atol=1e-9)
    _, cov = pool(means, covs, np.array([-np.inf, -np.inf]))
    np.testing.assert_allclose(cov, covs.mean(axis=0) + between, rtol=1e-6)


def test_window_cycles_counts_the_cycles_of_the_first_days():
    day = np.array([1.0, 2.0, 5.0, WINDOW_DAYS, WINDOW_DAYS + 0.5, 40.0])
    assert window_cycles(day) == 4
    assert window_cycles(day + WINDOW_DAYS) == 0


# --- the check -----------------------------------------------------------------------------


def _start(offset_km, cov, extra_var, with_arrivals=10) -> StartPoint:
    """The first cycle's posterior at CENTRE; the launch fix ``offset_km`` (east, north)
    from it."""
    lat, lon = tangent_step(CENTRE[0], CENTRE[1], offset_km[0], offset_km[1])
    point = EndPoint(
        mean=np.array(CENTRE),
        cov=np.asarray(cov),
        fix=(float(lat), float(lon)),
        extra_var=extra_var,
    )
    return StartPoint(cycles=20, with_arrivals=with_arrivals, point=point)


def test_launch_distance_is_the_mahalanobis_distance_of_the_fix():
    """``d^2 = D^T S^-1 D``, ``S = C + (extra + a^2) I`` (a the allowance, km), by hand."""
    cov = np.array([[30.0, 10.0], [10.0, 21.0]])
    check = launch_check(_start((-40.0, 25.0), cov, 6.0))
    s = cov + (6.0 + SPEC.allowance**2) * np.eye(2)
    det = s[0, 0] * s[1, 1] - s[0, 1] ** 2
    d2 = (s[1, 1] * 40.0**2 + s[0, 0] * 25.0**2 + 2 * s[0, 1] * 40.0 * 25.0) / det
    assert check.value == pytest.approx(math.sqrt(d2), rel=1e-9)
    assert check.threshold == pytest.approx(math.sqrt(-2 * math.log(1e-4)))
    assert f"{math.hypot(40.0, 25.0):.1f} km" in check.message
    assert check.passed == (check.value <= check.threshold)


def test_launch_distance_passes_at_its_threshold_and_fails_just_above():
    """A stated false-alarm probability of 1 puts the threshold at 0: the fix on the
    predicted position (d = 0) passes, one 10 m off fails."""
    certain = replace(SPEC, false_alarm=1.0, allowance=0.0)
    assert chi2_2_threshold(1.0) == 0.0
    at = launch_check(_start((0.0, 0.0), np.eye(2), 1.0), certain)
    assert at.value == 0.0 and at.passed
    above = launch_check(_start((0.01, 0.0), np.eye(2), 1.0), certain)
    assert above.value > 0.0 and above.passed is False


def test_launch_distance_follows_chi2_2_under_the_model():
    """Fixes drawn from the prediction (allowance included): P(d > x) = exp(-x^2 / 2); the
    threshold's tail probability is the stated 1e-4."""
    rng = np.random.default_rng(8)
    cov, extra = np.array([[40.0, -12.0], [-12.0, 25.0]]), 9.0
    spread = cov + (extra + SPEC.allowance**2) * np.eye(2)
    draws = rng.multivariate_normal([0.0, 0.0], spread, size=4000)
    d = np.array([launch_check(_start(o, cov, extra)).value for o in draws])
    for x in (1.0, 2.0, 3.0):
        p = math.exp(-(x**2) / 2)
        assert abs(np.mean(d > x) - p) < 4 * math.sqrt(p * (1 - p) / d.size)
    threshold = launch_check(_start((1.0, 0.0), cov, extra)).threshold
    assert math.exp(-(threshold**2) / 2) == pytest.approx(SPEC.false_alarm)


def test_launch_check_is_not_computed_with_few_early_arrivals():
    few = launch_check(_start((500.0, 0.0), np.eye(2), 1.0, with_arrivals=MIN_LAUNCH_CYCLES - 1))
    assert few.passed is None and math.isnan(few.value) and math.isnan(few.threshold)
    assert few.message == (
        f"not computed: {MIN_LAUNCH_CYCLES - 1} of the 20 cycles within {WINDOW_DAYS:g} days "
        f"of the launch have arrivals (needs at least {MIN_LAUNCH_CYCLES})"
    )
    enough = launch_check(_start((500.0, 0.0), np.eye(2), 1.0, with_arrivals=MIN_LAUNCH_CYCLES))
    assert enough.passed is False
    none = launch_check(StartPoint(0, 0, None))
    assert none.passed is None and none.message.startswith("not computed: 0 of the 0 cycles")


# --- on tracked floats ---------------------------------------------------------------------


def _launch(record, seed: int) -> tuple:
    """``(intact, broken)`` launch_distance of ``record`` and of it with the launch moved
    100 km (direction drawn from ``seed``), tracked at 400 particles."""
    config = TrackConfig(particles=400, ensemble=100, seed=seed)
    broken = break_record(record, "launch", np.random.default_rng(seed))
    out = []
    for rec in (record, broken.record):
        _, summary = track_float(rec, config)
        out.append({c.name: c for c in summary.quality}["launch_distance"])
    return tuple(out)


@pytest.mark.parametrize(("seed", "days"), [(3, 10), (21, 60), (5, 200)])
def test_an_intact_float_passes_and_its_launch_moved_100_km_fails(seed, days):
    record = validate_float(dimes_float767(seed, days=days)[0])
    intact, broken = _launch(record, seed)
    assert intact.passed, intact.message
    assert broken.passed is False, broken.message
    km = float(broken.message.split(" km ")[0].split()[-1])
    assert abs(km - LAUNCH_ERROR_KM) < 30, broken.message


def test_the_launch_fix_is_as_uncertain_as_the_recovery_fix():
    """``s`` is ``recovery_sigma``: a fix known to 300 km accepts a launch 100 km off."""
    record = validate_float(dimes_float767(3, days=10)[0])
    broken = break_record(record, "launch", np.random.default_rng(3)).record
    config = TrackConfig(particles=200, ensemble=50, recovery_sigma=300.0)
    check = {c.name: c for c in track_float(broken, config)[1].quality}["launch_distance"]
    assert check.passed and check.value < 0.5, check.message


def test_the_launch_check_is_reproducible_from_the_seed():
    record = validate_float(dimes_float767(4, days=30)[0])
    config = TrackConfig(particles=200, ensemble=50, seed=2)
    first, again, other = (
        {c.name: c for c in track_float(record, cfg)[1].quality}["launch_distance"]
        for cfg in (config, config, replace(config, seed=3))
    )
    assert first.value == again.value and first.message == again.message
    assert other.value != first.value


def test_a_record_whose_first_weeks_are_empty_is_not_checked():
    record = dimes_float767(6, days=60)[0].drop_vars("source_label")
    toa = record["toa"].values.copy()
    toa[:27] = np.nan  # 3 of the 30 cycles within 30 days keep arrivals
    record = validate_float(record.assign(toa=(("cycle", "rank"), toa)))
    _, summary = track_float(record, TrackConfig(particles=300, ensemble=100))
    check = {c.name: c for c in summary.quality}["launch_distance"]
    assert check.passed is None
    assert check.message.startswith(f"not computed: 3 of the 30 cycles within {WINDOW_DAYS:g}")


@pytest.mark.slow
def test_varied_worlds_pass_intact_and_fail_with_the_launch_100_km_off():
    """Eight worlds of 10-200 days drawn across the ranges of ``draw_world`` (sigma, P_D,
    clutter, multipath, trajectories, geometric mismatch), tracked as ``track-float`` does
    (calibrated, ``--multipath 0.02``) at 1,000 particles: launch_distance passes on each
    intact float and fails on each with its launch moved 100 km."""
    rng = np.random.default_rng(23)
    for _ in range(8):
        world = draw_world(rng, days=(10, 200))
        record, _ = simulate_world(world)
        config = TrackConfig(
            particles=1000, seed=world.seed, calibrate=True, multipath=COMMAND_MULTIPATH
        )
        broken = break_record(record, "launch", rng)
        intact, moved = (
            {c.name: c for c in track_float(rec, config)[1].quality}["launch_distance"]
            for rec in (record, broken.record)
        )
        assert intact.passed, (world, intact.message)
        assert moved.passed is False, (world, moved.message)
