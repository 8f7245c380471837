"""The tracker's stages on their own: a float's EM problem runs a candidate at the noise it is
asked for and fits what it is asked to, the M-step weighs the pass at the noise that pass
assumed, and the quality checks' start and end points carry the variance and random
numbers they state."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rankmodels.tracking.assessment import assess, end_point, start_point
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    m_step,
    m_step_pairs,
)
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.float_calibration import FloatProblem, em_config, float_m_step
from rankmodels.tracking.launch import first_position, window_cycles
from rankmodels.tracking.model_fit import StatisticalModel
from rankmodels.tracking.passes import Predictor, run_pass
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters
from rankmodels.tracking.quality import launch_check, recovery_check
from rankmodels.tracking.simulate import dimes_float767

CONFIG = TrackConfig(particles=200, ensemble=20, seed=4, calibrate=True, sigma=4.0)


@pytest.fixture(scope="module")
def setup():
    record = dimes_float767(seed=6, days=12)[0]
    prepared = prepare(record, CONFIG)
    return record, prepared, start_parameters(prepared, CONFIG)


def test_a_candidate_runs_at_the_noise_asked_for_and_fits_what_is_asked(setup):
    """Annealing: the problem's pass at factor 3 assumes 3 sigma (its log-likelihood is that
    of the noisier model: a pass run at 12 s directly), its M-step keeps the candidate's
    model; with a statistical parameter and the priors' centres the M-step fits it."""
    _, prepared, start = setup
    problem = FloatProblem(prepared, em_config(CONFIG), start)
    hot = problem.evaluate(start, 3.0)
    assert hot.evidence.params.signal.sigma == 12.0
    direct = run_pass(prepared, start.inflated(3.0), em_config(CONFIG), keep_members=True)
    assert hot.loglik == direct.loglik != problem.evaluate(start).loglik
    assert problem.propose(start, hot.evidence, frozenset({"speed"})).model is start.model
    fitted = problem.propose(start, problem.passes[-1], frozenset({"speed", "sigma"}))
    assert fitted.model.estimate("sigma") is not None and fitted.model is not start.model
    assert fitted.model.signal.sigma != 4.0


def test_the_geometry_m_step_weighs_by_the_noise_its_pass_assumed(setup):
    """An annealing pass at 2 sigma: the M-step is m_step at 8 s, not the candidate's 4 s."""
    record, prepared, start = setup
    this = run_pass(prepared, start.inflated(2.0), CONFIG, keep_members=True)
    got = float_m_step(this, start, frozenset({"speed", "drift"})).calibration
    day = (record["time"].values - record["launch_time"].values) / np.timedelta64(1, "D")
    pairs = m_step_pairs(prepared.toa, this.assoc.posterior, this.distances, day,
                         prepared.offset, this.assoc.predicted_toa, this.params.signal,
                         this.assoc.members)  # fmt: skip

    def solved(sigma):
        return m_step(
            **pairs, n_sources=prepared.n_sources, sound_speed=prepared.nominal_speed,
            sigma=sigma, offset_prior_std=OFFSET_PRIOR_STD, params=frozenset({"speed", "drift"}),
            start=start.calibration, speed_prior_std=SPEED_PRIOR_STD,
            clock_prior_std=CLOCK_OFFSET_PRIOR_STD, drift_prior_std=DRIFT_PRIOR_STD,
            clock_readings=prepared.clock,
        )  # fmt: skip

    assert got.sound_speed == pytest.approx(solved(8.0).sound_speed, rel=1e-12)
    assert got.sound_speed != pytest.approx(solved(4.0).sound_speed, rel=1e-9)


def test_the_end_point_adds_the_walk_to_the_surfacing_and_the_fix_error(setup):
    """``extra_var = q^2 days_to_recovery + s_r^2``, by hand: q = 3 km/day, the recovery
    1 day after the last cycle (the simulator's), s_r = 2 km."""
    record, _, start = setup
    config = replace(CONFIG, recovery_sigma=2.0)
    prepared = prepare(record, config)
    params = replace(start, model=StatisticalModel(start.signal, 3.0))
    filt = run_pass(prepared, params, config).filt
    end = end_point(prepared, params, filt)
    days = float((record["recovery_time"] - record["time"][-1]) / np.timedelta64(1, "D"))
    assert days == pytest.approx(1.0)
    assert end.extra_var == pytest.approx(9.0 * days + 4.0, rel=1e-12)
    assert end.fix == (float(record["recovery_lat"]), float(record["recovery_lon"]))
    last = prepared.cycle_steps[-1]
    np.testing.assert_array_equal(end.mean, filt.mean[last])


def test_the_start_point_filters_backwards_on_the_seed_s_launch_stream(setup):
    """The launch check's backward filter draws from ``default_rng([seed, 1])`` and predicts
    the launch fix with ``q^2 dt_0 + s_r^2``."""
    _, prepared, start = setup
    predictor = Predictor(prepared, start)
    got = start_point(predictor, seed=9)
    k = window_cycles(prepared.day)
    mean, cov = first_position(prepared.x0, prepared.cycle_dt[:k], predictor.cycle_loglik,
                               start.dynamics, np.random.default_rng([9, 1]))  # fmt: skip
    np.testing.assert_array_equal(got.point.mean, mean)
    np.testing.assert_array_equal(got.point.cov, cov)
    other = start_point(predictor, seed=10)
    assert not np.array_equal(other.point.mean, mean)
    q2 = start.model.process_noise**2
    assert got.point.extra_var == pytest.approx(q2 * prepared.cycle_dt[0] + 1.0)
    assert got.cycles == k and got.with_arrivals == int(prepared.has_data[:k].sum())


def test_parameters_inflate_only_the_noise(setup):
    _, _, start = setup
    hot = start.inflated(4.0)
    assert hot.signal.sigma == 16.0 and start.signal.sigma == 4.0
    assert hot.calibration is start.calibration and start.inflated(1.0) is start
    assert replace(hot.signal, sigma=4.0) == start.signal
    assert Parameters(start.calibration, start.model).dynamics.process_noise == 8.0


def test_assess_checks_the_launch_and_recovery_with_the_points_stated(setup):
    """The checks of a pass: ``launch_distance`` is :func:`launch_check` of the start point
    on the seed's launch stream, ``recovery_distance`` :func:`recovery_check` of the end
    point (its walk to the surfacing included)."""
    _, prepared, start = setup
    this = run_pass(prepared, start, CONFIG)
    checks = {c.name: c for c in assess(this, this.assoc, 9)}
    launch = launch_check(start_point(Predictor(prepared, start), 9))
    assert checks["launch_distance"].value == launch.value
    assert (
        checks["recovery_distance"].value
        == recovery_check(end_point(prepared, start, this.filt)).value
    )
    assert {c.name: c for c in assess(this, this.assoc, 10)}["launch_distance"].value != (
        launch.value
    )
