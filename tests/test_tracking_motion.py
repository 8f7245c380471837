"""The Lagrangian motion (integrated Ornstein-Uhlenbeck velocity): its transition against the
exact discretisation of the SDE (Van Loan's matrix exponential), its sampler and densities
against the Gaussian they state, its random-walk limit, the launch's velocity prior, the
quality checks' predicted step, the M-step against direct maximisation and its standard
errors against the truth, and the command end to end."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy import linalg, optimize, stats

from rankmodels.plots.report import calibration_rows
from rankmodels.tracking.calibration import Calibration
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.dynamics import LagrangianMotion, RandomWalk, Velocity, velocity_moments
from rankmodels.tracking.estimates import parameter_reports
from rankmodels.tracking.geometry import tangent_offsets
from rankmodels.tracking.model_fit import MAX_STEP, PRIORS, StatisticalModel
from rankmodels.tracking.motion_fit import (
    K_M2_S,
    MOTION_NAMES,
    LagrangianStatistics,
    fit_motion,
    lagrangian_statistics,
    step_scores,
)
from rankmodels.tracking.prepared import prepare, start_drift
from rankmodels.tracking.records import write_float
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.simulate import SignalSpec, dimes_float767
from rankmodels_app.track import track_float as track_float_command

MOTION = LagrangianMotion((3.0, -1.0), 4.0, 5.0, 0.5)
START = np.array([-56.0, -105.0])


def _van_loan(motion: LagrangianMotion, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact discretisation of ``d(x, u') = [[0, 1], [0, -1/tau]] (x, u') dt + (0,
    sqrt(2 s^2 / tau)) dW`` (one axis, eddy part ``u' = u - mu``): transition matrix and noise
    covariance by Van Loan's block matrix exponential, plus the white position diffusion."""
    a = np.array([[0.0, 1.0], [0.0, -1.0 / motion.time_scale]])
    q = np.diag([motion.position_noise**2, 2.0 * motion.eddy_speed**2 / motion.time_scale])
    block = np.block([[-a, q], [np.zeros((2, 2)), a.T]]) * dt
    e = linalg.expm(block)
    phi = e[2:, 2:].T
    return phi, phi @ e[:2, 2:]


@pytest.mark.parametrize("dt", [1e-3, 0.1, 1.0, 2.5, 40.0])
def test_transition_equals_the_exact_discretisation(dt):
    phi, a, vxx, vxu, vuu = MOTION.transition(dt)
    f, cov = _van_loan(MOTION, dt)
    np.testing.assert_allclose([f[1, 1], f[0, 1]], [phi, a], rtol=1e-8)
    np.testing.assert_allclose([vxx, vxu, vuu], [cov[0, 0], cov[0, 1], cov[1, 1]], rtol=1e-6)


def test_the_step_density_is_the_stated_gaussian():
    dt = np.array([1.0, 2.0])
    rng = np.random.default_rng(0)
    steps, u0, u1 = rng.normal(0, 3, (3, 1, 2, 2))
    got = MOTION.step_loglik(steps, u0, u1, dt)[0]
    phi, a, vxx, vxu, vuu = MOTION.transition(dt)
    mu = np.array(MOTION.mean_velocity)
    want = np.zeros(2)
    for k in range(2):
        for axis in range(2):
            mean = [mu[axis] * dt[k] + a[k] * (u0[0, k, axis] - mu[axis]),
                    mu[axis] + phi[k] * (u0[0, k, axis] - mu[axis])]  # fmt: skip
            cov = [[vxx[k], vxu[k]], [vxu[k], vuu[k]]]
            want[k] += stats.multivariate_normal(mean, cov).logpdf([steps[0, k, axis],
                                                                    u1[0, k, axis]])  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_state_density_adds_the_degree_jacobian_to_the_step_density():
    rng = np.random.default_rng(1)
    x = MOTION.start(START, 5, rng)
    y = MOTION.propagate(x, 1.5, rng)
    east, north = tangent_offsets(x[:, 0], x[:, 1], y[:, 0], y[:, 1])
    step = np.column_stack([east, north])[:, None, :]
    plane = MOTION.step_loglik(step, x[:, None, 2:], y[:, None, 2:], np.array([1.5]))[:, 0]
    jacobian = np.log((6371.0 * math.pi / 180.0) ** 2 * np.cos(np.radians(x[:, 0])))
    np.testing.assert_allclose(MOTION.log_density(x, y, 1.5), plane + jacobian, rtol=1e-9)
    assert (MOTION.log_density(x, y, 1.5) <= MOTION.log_density_bound(x, 1.5)).all()


def test_propagate_samples_the_transition():
    rng = np.random.default_rng(2)
    n, dt = 200_000, 1.0
    x = MOTION.start(START, n, rng)
    y = MOTION.propagate(x, dt, rng)
    east, north = tangent_offsets(x[:, 0], x[:, 1], y[:, 0], y[:, 1])
    phi, a, vxx, vxu, vuu = MOTION.transition(dt)
    mu = np.array(MOTION.mean_velocity)
    for axis, step in enumerate((east, north)):
        rx = step - mu[axis] * dt - a * (x[:, 2 + axis] - mu[axis])
        ru = y[:, 2 + axis] - mu[axis] - phi * (x[:, 2 + axis] - mu[axis])
        assert abs(rx.mean()) < 4 * math.sqrt(vxx / n) and abs(ru.mean()) < 4 * math.sqrt(vuu / n)
        np.testing.assert_allclose(np.cov(rx, ru), [[vxx, vxu], [vxu, vuu]], rtol=0.02)


def test_the_launch_draws_velocities_from_the_stationary_law():
    x = MOTION.start(START, 100_000, np.random.default_rng(3))
    assert (x[:, :2] == START).all()
    np.testing.assert_allclose(x[:, 2:].mean(axis=0), MOTION.mean_velocity, atol=0.05)
    np.testing.assert_allclose(x[:, 2:].std(axis=0), MOTION.eddy_speed, rtol=0.01)


def test_short_time_scales_tend_to_the_random_walk_of_the_same_diffusivity():
    q = 6.0
    for tau in (1e-2, 1e-3):
        motion = LagrangianMotion((0.0, 0.0), math.sqrt(q * q / (2 * tau)), tau, 0.0)
        _, a, vxx, _, _ = motion.transition(1.0)
        step_var = vxx + a * a * motion.eddy_speed**2  # the stationary velocity's step
        assert step_var == pytest.approx(q * q, rel=3 * tau)
        assert isinstance(motion.diffusive(), RandomWalk)
        assert motion.diffusive().process_noise == pytest.approx(q)
        _, added = motion.predicted_step(None, 1.0)
        np.testing.assert_allclose(added, q * q * np.eye(2), rtol=3 * tau)


def test_predicted_step_is_the_moments_of_the_propagated_cloud():
    rng = np.random.default_rng(4)
    x = MOTION.start(START, 200_000, rng)
    x[:, 2:] = x[:, 2:] * 0.5 + 1.0  # a narrower cloud of velocities off the mean
    x[:, :2] += rng.normal(0.0, 0.02, (x.shape[0], 2)) + 0.01 * (x[:, 2:] - 1.0)  # correlated
    mean_v, cov_v, cross = velocity_moments(x)
    step, added = MOTION.predicted_step(Velocity(mean_v, cov_v, cross), 2.0)
    y = MOTION.propagate(x, 2.0, rng)
    east, north = tangent_offsets(*START, y[:, 0], y[:, 1])
    e0, n0 = tangent_offsets(*START, x[:, 0], x[:, 1])
    np.testing.assert_allclose(np.mean(east) - np.mean(e0), step[0], atol=0.03)
    np.testing.assert_allclose(np.mean(north) - np.mean(n0), step[1], atol=0.03)
    cov_before = np.cov(np.stack([e0, n0]))
    np.testing.assert_allclose(np.cov(np.stack([east, north])) - cov_before, added, atol=0.1)


def _trajectory(motion: LagrangianMotion, days: int, seed: int):
    """One exact trajectory: steps (1, T, 2) km, velocities (1, T, 2), dt (T,)."""
    rng = np.random.default_rng(seed)
    x = motion.start(START, 1, rng)
    states = []
    for _ in range(days):
        x = motion.propagate(x, 1.0, rng)
        states.append(x[0].copy())
    s = np.array(states)
    lat, lon = np.r_[START[0], s[:, 0]], np.r_[START[1], s[:, 1]]
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    return np.stack([east, north], 1)[None], s[None, :, 2:], np.ones(days)


def _fixed_point(start: LagrangianMotion, steps, velocities, dt, iterations=30):
    motion = start
    for _ in range(iterations):
        fit = fit_motion(motion, start, steps, velocities, dt)
        motion = fit.motion
    return fit


def test_the_m_step_converges_to_the_penalised_maximum():
    steps, velocities, dt = _trajectory(MOTION, 300, seed=5)
    start = LagrangianMotion((0.0, 0.0), 3.0, 3.0, 0.5)
    fit = _fixed_point(start, steps, velocities, dt)
    width = np.array([PRIORS[n].width for n in MOTION_NAMES])
    phi0 = np.array([0.0, 0.0, math.log(3.0), math.log(3.0)])

    def minus_posterior(phi):
        m = LagrangianMotion((phi[0], phi[1]), math.exp(phi[2]), math.exp(phi[3]), 0.5)
        data = m.step_loglik(steps[:, 1:], velocities[:, :-1], velocities[:, 1:], dt[1:]).sum()
        return -(data - 0.5 * np.sum((phi - phi0) ** 2 / width**2))

    best = optimize.minimize(minus_posterior, phi0, method="Nelder-Mead",
                             options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 5000})  # fmt: skip
    got = fit.motion
    np.testing.assert_allclose(got.mean_velocity, best.x[:2], atol=1e-4)
    np.testing.assert_allclose([got.eddy_speed, got.time_scale], np.exp(best.x[2:]), rtol=1e-4)


def test_stated_errors_cover_the_truth():
    z = []
    for seed in range(20):
        steps, velocities, dt = _trajectory(MOTION, 300, seed=100 + seed)
        fit = _fixed_point(MOTION, steps, velocities, dt, iterations=15)
        est = dict(fit.estimates)
        truth = [*MOTION.mean_velocity, MOTION.eddy_speed, MOTION.time_scale]
        z.append([(est[n].value - v) / est[n].std for n, v in zip(MOTION_NAMES, truth,
                                                                   strict=True)])  # fmt: skip
    z = np.abs(np.array(z))
    assert ((z < 2.0).mean(axis=0) >= 0.8).all(), z


def test_a_short_record_keeps_the_time_scale_at_its_start():
    """Three days the arrivals say nothing about (the trajectories independent draws of the
    motion): the time scale is not determined and keeps its start; 300 days determine it."""
    draws = [_trajectory(MOTION, 3, seed=600 + m) for m in range(200)]
    steps = np.concatenate([d[0] for d in draws])
    velocities = np.concatenate([d[1] for d in draws])
    start = LagrangianMotion((0.0, 0.0), 4.0, 3.0, 0.5)
    est = dict(fit_motion(start, start, steps, velocities, np.ones(3)).estimates)
    assert not est["time_scale"].estimated and est["time_scale"].value == 3.0
    assert math.isnan(est["time_scale"].std)
    long_steps, long_velocities, long_dt = _trajectory(MOTION, 300, seed=6)
    assert dict(fit_motion(start, start, long_steps, long_velocities, long_dt).estimates)[
        "time_scale"
    ].estimated


@pytest.fixture(scope="module")
def lagrangian_track(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lagrangian")
    record, truth = dimes_float767(21, days=90, spec=SignalSpec(sigma=3.0, p_detect=0.9))
    write_float(record, folder / "float.nc")
    result = CliRunner().invoke(
        track_float_command,
        [str(folder / "float.nc"), "-o", str(folder / "out"), "--motion", "lagrangian",
         "--particles", "3000", "--no-plots"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with xr.open_dataset(folder / "out" / "track.nc") as track:
        return track.load(), truth, result.output


def test_the_track_states_velocities_near_the_truth(lagrangian_track):
    track, truth, output = lagrangian_track
    assert track["velocity_east"].attrs["units"] == "m s-1"
    true_v = np.stack([truth.velocity_east.values, truth.velocity_north.values], 1)  # m/s
    got = np.stack([track.velocity_east.values, track.velocity_north.values], 1)
    std = np.stack([track.velocity_east_std.values, track.velocity_north_std.values], 1)
    assert np.sqrt(np.mean((got - true_v) ** 2)) < 0.5 * np.std(true_v)
    inside = np.mean(np.abs(got - true_v) < 2 * std)
    assert 0.85 <= inside <= 0.995
    assert "mean velocity east" in output and "process noise" not in output


def test_the_track_states_its_lagrangian_statistics(lagrangian_track):
    track, _, _ = lagrangian_track
    s, tau = float(track.eddy_speed), float(track.time_scale)
    assert float(track.eddy_kinetic_energy) == pytest.approx((s / 86.4) ** 2)
    assert float(track.diffusivity) == pytest.approx(s * s * tau * 1e6 / 86_400)
    assert float(track.diffusivity_std) > 0
    assert "process_noise" not in track


def test_reports_name_the_motion_the_track_used():
    signal = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=1800.0)
    cal = Calibration.nominal(3, 1480.0, ClockReadings.none())
    walk = parameter_reports(cal, StatisticalModel(signal, 8.0), StatisticalModel(signal, 8.0),
                             None, 1480.0)  # fmt: skip
    lag_model = StatisticalModel(signal, 8.0, motion=MOTION)
    lag = parameter_reports(cal, lag_model, lag_model, None, 1480.0)
    assert "process_noise" in {r.name for r in walk} and "time_scale" not in {r.name for r in walk}
    assert {r.name for r in lag} >= set(MOTION_NAMES) and "process_noise" not in {
        r.name for r in lag
    }
    assert {r.name: r.value for r in lag}["mean_velocity_north"] == -1.0


def test_disagreeing_trajectories_take_information_away():
    """Louis: identical trajectories state the complete-data errors, trajectories that
    disagree about the velocities larger ones."""
    steps, velocities, dt = _trajectory(MOTION, 300, seed=8)
    width = np.array([PRIORS[n].width for n in MOTION_NAMES])
    same = fit_motion(MOTION, MOTION, np.repeat(steps, 20, 0), np.repeat(velocities, 20, 0), dt)
    scores = step_scores(MOTION, steps, velocities, dt)[0]  # (K, 4)
    complete_only = np.linalg.inv(scores.T @ scores + np.diag(1.0 / width**2))
    np.testing.assert_allclose(np.diag(same.phi_cov), np.diag(complete_only), rtol=1e-6)
    draws = [_trajectory(MOTION, 300, seed=900 + m) for m in range(20)]
    apart_steps = np.concatenate([d[0] for d in draws])
    noisy = np.concatenate([d[1] for d in draws])
    apart = fit_motion(MOTION, MOTION, apart_steps, noisy, dt)
    own = step_scores(MOTION, apart_steps, noisy, dt)
    complete = np.einsum("mki,mkj->ij", own, own) / 20
    without_louis = np.linalg.inv(complete + np.diag(1.0 / width**2))
    assert (np.diag(apart.phi_cov) > 1.2 * np.diag(without_louis)).all()


def test_the_step_is_newton_on_the_observed_information():
    """Trajectories that disagree (the velocities are never observed): the M-step is the
    Newton step of the marginal likelihood, ``(I_c - I_m + W)^-1 g`` with Louis' missing
    information ``I_m`` the covariance of the trajectories' scores (Fisher's identity makes
    ``g`` the marginal score), not EM's ``(I_c + W)^-1 g``, which would creep."""
    base_steps, base_velocities, dt = _trajectory(MOTION, 300, seed=7)
    steps = np.repeat(base_steps, 20, 0)  # 20 trajectories: one path, velocities uncertain
    rng = np.random.default_rng(8)
    velocities = base_velocities + rng.normal(0.0, 0.5, (20, *base_velocities.shape[1:]))
    current = LagrangianMotion((3.0, -1.0), 4.2, 4.5, 0.5)
    fit = fit_motion(current, current, steps, velocities, dt)  # the prior adds no pull
    scores = step_scores(current, steps, velocities, dt)  # (M, K, 4)
    per_traj = scores.sum(axis=1)
    complete = np.einsum("mki,mkj->ij", scores, scores) / 20
    observed = complete - np.cov(per_traj, rowvar=False)
    share = np.linalg.eigvals(np.linalg.solve(complete, observed)).real
    assert share.min() > 0.05 and share.min() < 0.9  # Louis matters, the floor does not bind
    width = np.array([PRIORS[n].width for n in MOTION_NAMES])
    newton = np.linalg.solve(observed + np.diag(1.0 / width**2), per_traj.mean(axis=0))
    phi = lambda m: np.array([*m.mean_velocity, math.log(m.eddy_speed), math.log(m.time_scale)])  # noqa: E731
    em = np.linalg.solve(complete + np.diag(1.0 / width**2), per_traj.mean(axis=0))
    assert np.abs(newton - em).max() > 0.1
    expected = np.clip(newton, -MAX_STEP, MAX_STEP)
    np.testing.assert_allclose(phi(fit.motion) - phi(current), expected, rtol=1e-6, atol=1e-9)


def test_the_diffusivity_error_is_that_of_s_squared_tau_under_the_joint_covariance():
    steps, velocities, dt = _trajectory(MOTION, 300, seed=10)
    fit = _fixed_point(MOTION, steps, velocities, dt, iterations=10)
    model = StatisticalModel(SignalModel(5.0, 0.9, 1.0, 1800.0), 8.0, fit.estimates,
                             fit.motion, tuple(map(tuple, fit.phi_cov.tolist())))  # fmt: skip
    stats_ = lagrangian_statistics(model)
    rng = np.random.default_rng(11)
    phi = rng.multivariate_normal(np.zeros(2), fit.phi_cov[2:, 2:], 400_000)
    log_k = 2.0 * phi[:, 0] + phi[:, 1]
    assert stats_.diffusivity_std / stats_.diffusivity == pytest.approx(log_k.std(), rel=0.01)
    assert stats_.eke_std / stats_.eke == pytest.approx(2.0 * phi[:, 0].std(), rel=0.01)


def test_the_mean_velocity_starts_at_the_launch_to_recovery_drift():
    record, truth = dimes_float767(22, days=120, trajectory="straight")
    prepared = prepare(record, TrackConfig())
    east, north = tangent_offsets(truth.lat.values[:-1], truth.lon.values[:-1],
                                  truth.lat.values[1:], truth.lon.values[1:])  # fmt: skip
    drift = start_drift(prepared)
    np.testing.assert_allclose(drift, [east.mean(), north.mean()], rtol=0.03)
    assert drift[0] > 0 > drift[1]  # float 767 drifts east and south


def test_velocity_moments_are_the_weighted_moments_of_the_cloud():
    rng = np.random.default_rng(12)
    x = MOTION.start(START, 3000, rng)
    for _ in range(5):
        x = MOTION.propagate(x, 1.0, rng)
    w = rng.random(3000)
    mean, cov, cross = velocity_moments(x, w)
    w = w / w.sum()
    v = x[:, 2:]
    np.testing.assert_allclose(mean, w @ v, atol=1e-12)
    np.testing.assert_allclose(cov, np.cov(v.T, aweights=w, bias=True), atol=1e-9)
    east, north = tangent_offsets(*(w @ x[:, :2]), x[:, 0], x[:, 1])
    offsets = np.column_stack([east - w @ east, north - w @ north])
    np.testing.assert_allclose(cross, (offsets * w[:, None]).T @ (v - w @ v), rtol=1e-3)


def test_the_report_shows_the_lagrangian_motion(lagrangian_track):
    track, _, _ = lagrangian_track
    rows = calibration_rows(track)
    assert rows["Lagrangian time scale (days)"].startswith(f"{float(track.time_scale):.1f}")
    assert "Process noise (km per axis, 1-day step)" not in rows
    start = float(track.mean_velocity_east.attrs["start"])
    assert f"started at {start:.2f})" in rows["Mean velocity east (km/day)"]


def test_lagrangian_statistics_say_which_values_were_not_estimated():
    """A quantity without a standard error reads 'not estimated', never 's.e. unknown'; with
    none estimated the line says these are the starting values, and no value has an error."""
    cm_s = 100_000.0 / 86_400.0
    stats_ = LagrangianStatistics(
        mean_velocity=(1.0, -0.5), mean_velocity_std=(0.2, 0.2), eke=16.0, eke_std=2.0,
        time_scale=3.0, time_scale_std=math.nan, diffusivity=48.0, diffusivity_std=math.nan,
    )  # fmt: skip
    line = stats_.text()
    assert line.startswith(f"mean velocity +{cm_s:.2f} ± {0.2 * cm_s:.2f} east, ")
    assert f"-{0.5 * cm_s:.2f} ± {0.2 * cm_s:.2f} north cm/s" in line
    assert f"eddy kinetic energy {16 * cm_s**2:.1f} ± {2 * cm_s**2:.1f} cm2/s2" in line
    assert "time scale 3.0 (not estimated) days" in line
    assert f"diffusivity {48 * K_M2_S:.0f} (not estimated) m2/s" in line
    assert "s.e. unknown" not in line
    none = replace(stats_, mean_velocity_std=(math.nan, math.nan), eke_std=math.nan).text()
    assert none.startswith("not estimated (the starting values): mean velocity +1.16 east, ")
    assert "±" not in none and none.count("not estimated") == 1
