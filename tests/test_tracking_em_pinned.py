"""The calibration EM's control flow and M-step, pinned step by step.

:func:`rankmodels.tracking.float_calibration.calibrate` is driven here by a scripted problem
(:class:`Script`: the float's own problem with its passes and M-steps replaced): every pass
returns the next log-likelihood of a list the test chooses, and every M-step returns a new
calibration whose sound speed numbers it (1481, 1482, ... m/s), so the test can trace which
pass is kept, which iterate each M-step starts from and with which parameters, and when each
stage and the loop end. The scores are the problem's own (the priors of what a candidate
estimated). The M-step itself (:func:`m_step`) is checked against the closed-form mode of its
penalised least squares, priors included, from a start away from the priors' centres, and
:func:`geometry_log_prior` against its formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from rankmodels.tracking import em
from rankmodels.tracking.assessment import ended_lost
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    Calibration,
    calibration_stages,
    geometry_log_prior,
    m_step,
    m_step_pairs,
)
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.em import MIN_GAIN
from rankmodels.tracking.float_calibration import (
    FloatProblem,
    calibrate,
    em_config,
    em_passes,
    float_m_step,
)
from rankmodels.tracking.joint import JointLayout, JointParameters
from rankmodels.tracking.model_fit import Estimate, StatisticalModel, fit_statistics
from rankmodels.tracking.passes import run_pass
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters
from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767

NOMINAL = 1480.0  # the simulated record's sound speed


@pytest.fixture(scope="module")
def record():
    return dimes_float767(seed=5, days=4)[0]


@dataclass
class FakePass:
    """A scripted pass: its number, log-likelihood and the sigma it ran with."""

    number: int
    loglik: float
    sigma: float
    settled: bool = False

    def settle_progress(self) -> None:
        """Nothing to count (a scripted pass reports no progress): noted."""
        self.settled = True


@dataclass
class Script(FloatProblem):
    """A scripted EM: pass ``n`` returns ``logliks[n]`` (lost when ``lost[n]``); M-step
    ``n`` returns ``steps[n]`` (a Calibration, a (Calibration, StatisticalModel), a callable
    of the candidate giving one of those, or an exception to raise)."""

    logliks: list = field(default_factory=list)
    steps: list | None = None
    lost: list = field(default_factory=list)
    made: list = field(default_factory=list)  # (speed used, sigma used) per pass
    m_steps: list = field(default_factory=list)  # (start speed, params, from pass, sigma)

    def evaluate(self, candidate, factor=1.0):
        n = len(self.passes)
        sigma = candidate.signal.sigma * factor
        self.made.append((round(candidate.calibration.sound_speed, 6), sigma))
        this = FakePass(n, self.logliks[n], sigma)
        self.passes.append(this)
        lost = n < len(self.lost) and self.lost[n]
        return em.Scored(self.penalised(candidate, this.loglik), this.loglik, lost, this)

    def propose(self, candidate, evidence, groups):
        n = len(self.m_steps)
        cal = candidate.calibration
        self.m_steps.append((cal.sound_speed, frozenset(groups), evidence.number, evidence.sigma))
        step = self.steps[n] if self.steps is not None else None
        if isinstance(step, Exception):
            raise step
        if callable(step):
            step = step(candidate)
        if step is None:
            step = Calibration.nominal(12, NOMINAL + 1 + n)
        if isinstance(step, tuple):
            return Parameters(*step)
        return Parameters(step, candidate.model)


def _script(record, logliks, steps=None, lost=(), **settings):
    config = TrackConfig(calibrate=True, **settings)
    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    return Script(prepared, em_config(config), start, None, [], list(logliks), steps, list(lost))


def _calibrate(record, script, **settings):
    """Calibrate ``record`` with ``script``'s passes and M-steps; the result, the kept pass
    and the progress counted."""
    config = TrackConfig(calibrate=True, **settings)
    done = []
    script.progress = done.append
    result, best = calibrate(script.prepared, config, script.start, done.append, problem=script)
    return result, best, done


def test_two_stages_end_at_min_gain_and_keep_the_first_of_equal_passes(record):
    """Speed and offsets: two stages. Passes (at sigma 5 from the third on): the file's
    values 0, the annealed estimate +1.5 (a small gain does not end the stage: the annealed
    pass is not an M-step of it), then +8.5, then exactly +MIN_GAIN (kept, and the stage
    ends), then a tie in the second stage (not kept; the loop ends)."""
    script = _script(record, [-100.0, -50.0, 0.0, 1.5, 10.0, 10.0 + MIN_GAIN, 10.0 + MIN_GAIN])
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,offsets", calibration_iterations=3
    )
    speed, offsets = frozenset({"speed"}), frozenset({"offsets"})
    assert script.made == [
        (1480.0, 20.0), (1481.0, 10.0), (1480.0, 5.0), (1482.0, 5.0), (1483.0, 5.0),
        (1484.0, 5.0), (1485.0, 5.0),
    ]  # fmt: skip
    assert script.m_steps == [
        (1480.0, speed, 0, 20.0), (1481.0, speed, 1, 10.0),  # annealing: first stage's geometry
        (1482.0, speed, 3, 5.0), (1483.0, speed, 4, 5.0),  # from the best pass so far
        (1484.0, offsets, 5, 5.0),  # second stage from the pass kept at MIN_GAIN
    ]  # fmt: skip
    assert result.start == 2 and result.best == 5 and best.number == 5
    assert result.stop == "no longer rising"
    assert result.loglik == tuple(script.logliks)
    assert result.sigma == (20.0, 10.0, 5.0, 5.0, 5.0, 5.0, 5.0)
    assert [c.sound_speed for c in result.trace] == [1480, 1481, 1480, 1482, 1483, 1484, 1485]
    assert result.calibration.sound_speed == 1484.0 and not result.kept_file_values


def test_a_gain_just_above_min_gain_keeps_the_stage_going(record):
    """One stage (speed and drift), at most 2 M-steps: gains above MIN_GAIN never end it, so
    the loop ends at the iteration limit with the last pass kept."""
    script = _script(record, [-9.0, -8.0, 0.0, 10.0, 10.0 + MIN_GAIN + 1e-9, 20.0])
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,drift", calibration_iterations=2
    )
    both = frozenset({"speed", "drift"})
    assert [m[:3] for m in script.m_steps] == [
        (1480.0, both, 0), (1481.0, both, 1), (1482.0, both, 3), (1483.0, both, 4),
    ]  # fmt: skip
    assert result.stop == "iteration limit" and result.best == 5 and best.number == 5
    assert len(result.loglik) == 6


def test_iteration_limit_moves_on_to_the_next_stage(record):
    """Two stages of one M-step each: the first ends at its limit (gains large), the
    second starts from the best pass, and the loop ends at the second's limit."""
    script = _script(record, [-9.0, -8.0, 0.0, 10.0, 20.0, 15.0])
    result, _, _ = _calibrate(
        record, script, calibrate_params="speed,offsets", calibration_iterations=1
    )
    assert [m[:3] for m in script.m_steps] == [
        (1480.0, {"speed"}, 0), (1481.0, {"speed"}, 1), (1482.0, {"speed"}, 3),
        (1483.0, {"offsets"}, 4),
    ]  # fmt: skip
    assert result.stop == "no longer rising" and result.best == 4


def test_nothing_beats_the_file_values(record):
    """Every M-step lowers the likelihood: the file's values (pass ``start``) are kept."""
    script = _script(record, [-9.0, -8.0, 0.0, -1.0, -0.5])
    result, best, _ = _calibrate(record, script, calibrate_params="drift", calibration_iterations=4)
    assert [m[2] for m in script.m_steps] == [0, 1, 2]  # M-steps from the file's pass
    assert result.best == result.start == 2 and best.number == 2 and result.kept_file_values
    assert result.stop == "no longer rising"


def test_an_m_step_that_cannot_solve_ends_the_loop_with_its_reason(record):
    steps = [None, None, None, ValueError("not identifiable: too few")]
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 12.0], steps)
    result, best, _ = _calibrate(record, script, calibrate_params="speed", calibration_iterations=5)
    assert result.stop == "not identifiable: too few" and result.best == 4 and best.number == 4
    assert len(result.trace) == len(result.loglik) == 5


def test_annealing_that_cannot_solve_starts_from_the_file_values(record):
    """The first annealing M-step fails: no annealed passes, the loop starts at pass 0 at
    the configured sigma; the progress left over counts the passes not run (the failed
    annealing pass ran)."""
    steps = [ValueError("no"), Calibration.nominal(12, 1481.0), Calibration.nominal(12, 1482.0)]
    script = _script(record, [-9.0, 0.0, 10.0, 10.5], steps)
    config = {"calibrate_params": "speed", "calibration_iterations": 5}
    result, best, done = _calibrate(record, script, **config)
    assert result.start == 0 and result.sigma == (5.0, 5.0, 5.0)
    assert script.made == [(1480.0, 20.0), (1480.0, 5.0), (1481.0, 5.0), (1482.0, 5.0)]
    assert [m[:3] for m in script.m_steps] == [
        (1480.0, {"speed"}, 0), (1480.0, {"speed"}, 1), (1481.0, {"speed"}, 2),
    ]  # fmt: skip
    # the failed annealing pass leaves no entry; the last M-step gained 0.5: kept, then stop
    assert result.loglik == (0.0, 10.0, 10.5) and result.best == 2 and best.number == 3
    assert result.stop == "no longer rising"
    n_steps = 2 * record.sizes["cycle"] + 1  # filter steps (recovery included) and association
    assert sum(done) == (em_passes(TrackConfig(calibrate=True, **config)) - 4) * n_steps


@pytest.mark.parametrize(
    ("params", "iterations", "passes"),
    [("speed", 5, 4 + 2 + 2 + 5 + 1), ("speed,offsets", 3, 4 + 2 + 2 + 2 * 3 + 2),
     ("drift,speed,offsets,sigma", 2, 4 + 2 + 2 + 2 * 2 + 3), ("sigma", 4, 4 + 2 + 2 + 4)],
)  # fmt: skip
def test_em_passes_counts_annealing_start_stages_and_checks(params, iterations, passes):
    """Two hotter first passes (4 sigma to 8 and 16) and their annealing levels, the
    annealing, the file's values and the annealed estimate, the M-steps of every stage, the
    checks."""
    assert em.hotter_levels() == 2 and em.MAX_ANNEALING == 4 * em.ANNEALING[0]
    config = TrackConfig(calibrate=True, calibrate_params=params, calibration_iterations=iterations)
    assert em_passes(config) == passes


@pytest.mark.parametrize(
    ("lost", "annealing"),
    [((), (20.0, 10.0)), ((True,), (40.0, 20.0, 10.0)), ((True, True), (80.0, 40.0, 20.0, 10.0)),
     ((True, True, True), (80.0, 40.0, 20.0, 10.0)), ((False, True), (20.0, 10.0))],
)  # fmt: skip
def test_a_first_pass_that_loses_the_float_runs_again_hotter(record, lost, annealing):
    """A first annealing pass whose filter ends away from the recovery fix is not used: it
    runs again at twice the factor (8, then 16 sigma; MAX_ANNEALING), and the annealing then
    goes down the factors to 2 sigma. The lost passes leave no entry, and the progress
    topped up at the end counts them as run."""
    n = len(annealing)
    script = _script(
        record,
        [-100.0] * (len(lost) + n) + [0.0, 5.0, 6.0],
        lost=(*lost, False, False, False, False),
    )
    config = {"calibrate_params": "speed", "calibration_iterations": 1}
    result, _, done = _calibrate(record, script, **config)
    hotter = min(lost.count(True), em.hotter_levels()) if lost[:1] == (True,) else 0
    hot = [20.0 * 2**k for k in range(hotter + 1)]  # 4 sigma, then each lost pass twice
    assert [p[1] for p in script.made] == [*hot[:-1], *annealing, 5.0, 5.0, 5.0]
    assert script.made[: hotter + 1] == [(1480.0, sigma) for sigma in hot]  # file's values
    assert all(script.passes[k].settled for k in range(hotter))  # their progress counted
    # the annealing's M-steps: from the hottest pass that kept the float, then down
    assert [m[3] for m in script.m_steps[:n]] == list(annealing)
    assert [m[2] for m in script.m_steps[:n]] == list(range(hotter, hotter + n))
    assert result.sigma[:n] == annealing and result.start == n
    assert len(result.loglik) == n + 3  # the file's values, the annealed estimate, one M-step
    n_steps = 2 * record.sizes["cycle"] + 1
    assert sum(done) == (em_passes(TrackConfig(calibrate=True, **config)) - n - 3 - hotter) * (
        n_steps
    )


def _estimated(speed, drift, c0=0.0, speed_std=5.0):
    """A calibration with speed and clock estimated (finite standard errors; by default
    under DETERMINED_Z standard errors from the file's values, so the checks run)."""
    cal = Calibration.nominal(12, speed)
    return replace(cal, clock_offset=c0, clock_drift=drift, sound_speed_std=speed_std,
                   clock_offset_std=0.5, clock_drift_std=0.025)  # fmt: skip


def test_likelihood_ratio_check_puts_back_groups_the_record_does_not_determine(record):
    """The kept iterate (pass 4) estimates speed (1490 m/s: log prior -0.5) and drift
    (0.05 s/day: -0.5), penalised 10 - 1 = 9. Put back to the file's speed (the drift's
    prior stays) the penalised log-likelihood is 8.5 - 0.5 = 8, 1 below (<= MIN_GAIN: the
    speed goes back); then with no drift either it is 6, exactly MIN_GAIN below (the drift
    goes back too). The speed is tested before the drift, each from what is kept so far."""
    kept = _estimated(1490.0, 0.05)
    steps = [Calibration.nominal(12, s) for s in (1481.0, 1482.0)] + [
        kept, Calibration.nominal(12, 1491.0),
    ]  # fmt: skip
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 10.0, 4.0, 8.5, 8.0 - MIN_GAIN], steps)
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,drift", calibration_iterations=5
    )
    assert geometry_log_prior(kept, NOMINAL) == pytest.approx(-1.0)
    assert [c.sound_speed for c in result.trace[:6]] == [1480, 1481, 1480, 1482, 1490, 1491]
    assert result.stop == "no longer rising"
    reduced = result.trace[6:]
    assert reduced[0].sound_speed == NOMINAL and reduced[0].clock_drift == 0.05
    assert reduced[1].sound_speed == NOMINAL and reduced[1].clock_drift == 0.0
    assert not reduced[1].estimates("drift") and not reduced[1].estimates("speed")
    assert result.best == 7 and best.number == 7 and result.calibration is reduced[1]
    assert result.loglik == tuple(script.logliks)


def test_likelihood_ratio_check_keeps_a_group_worth_more_than_min_gain(record):
    """The kept iterate estimates speed (log prior -0.5) and a drift of 0 (no penalty):
    penalised 9.5. The file's speed is MIN_GAIN + 0.25 worse after the priors (the speed
    stays); no drift (the speed kept: prior -0.5) is 5 worse (the drift stays)."""
    kept = _estimated(1490.0, 0.0)
    steps = [Calibration.nominal(12, s) for s in (1481.0, 1482.0)] + [
        kept, Calibration.nominal(12, 1491.0),
    ]  # fmt: skip
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 10.0, 4.0, 9.5 - MIN_GAIN - 0.25, 5.0], steps)
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,drift", calibration_iterations=5
    )
    assert [c.sound_speed for c in result.trace[6:]] == [NOMINAL, 1490.0]
    assert result.trace[7].clock_drift_std != result.trace[7].clock_drift_std  # NaN: put back
    assert result.best == 4 and best.number == 4 and result.calibration is kept


def test_a_group_determined_beyond_doubt_skips_its_check(record):
    """The kept iterate's speed is 10 standard errors from the file's (DETERMINED_Z or more:
    no check pass), its drift 2 (checked, from the kept iterate: the speed stays 1490)."""
    kept = _estimated(1490.0, 0.05, speed_std=1.0)
    assert kept.largest_z("speed", NOMINAL) == pytest.approx(10.0)
    assert kept.largest_z("drift", NOMINAL) == pytest.approx(2.0)
    assert em.DETERMINED_Z <= 10.0
    steps = [Calibration.nominal(12, s) for s in (1481.0, 1482.0)] + [
        kept, Calibration.nominal(12, 1491.0),
    ]  # fmt: skip
    # the kept: 10 - 1 (priors) = 9; the drift's check: 9.25 - MIN_GAIN - 0.5 (the speed's
    # prior): MIN_GAIN + 0.25 below, so the drift stays
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 10.0, 4.0, 9.25 - MIN_GAIN], steps)
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,drift", calibration_iterations=5
    )
    assert len(script.made) == len(result.loglik) == 7  # one check pass, not two
    (checked,) = result.trace[6:]
    assert checked.sound_speed == 1490.0 and checked.clock_drift == 0.0
    assert result.best == 4 and best.number == 4 and result.calibration is kept


def test_largest_z_of_each_group():
    cal = replace(
        Calibration.nominal(3, 1490.0),
        sound_speed_std=4.0,
        clock_offset=-1.5,
        clock_offset_std=0.5,
        clock_drift=0.01,
        clock_drift_std=0.02,
        source_offset_correction=np.array([1.0, -3.0, 9.0]),
        source_offset_correction_std=np.array([0.5, 1.0, np.nan]),  # the third not estimated
    )
    assert cal.largest_z("speed", 1480.0) == pytest.approx(2.5)
    assert cal.largest_z("drift", 1480.0) == pytest.approx(3.0)
    assert cal.largest_z("offsets", 1480.0) == pytest.approx(3.0)
    assert Calibration.nominal(3, 1480.0).largest_z("speed", 1480.0) == 0.0


def test_the_statistical_priors_count_in_the_gain(record):
    """An M-step raising the likelihood by 2.4 with a fitted sigma one prior width (0.5 in
    log sigma) from its start (log prior -0.5): a penalised gain of 1.9 <= MIN_GAIN ends the
    (only) stage; the pass is still kept (1.9 > 0), and its model's sigma is the pass's."""
    sigma = 5.0 * math.exp(0.5)

    def fitted(candidate):
        now = candidate.model
        est = Estimate(sigma, 0.1, now.signal.sigma, True, 3.0)
        model = StatisticalModel(replace(now.signal, sigma=sigma), now.process_noise,
                                 (("sigma", est),))  # fmt: skip
        assert model.log_prior(now) == pytest.approx(-0.5)
        return Calibration.nominal(12, 1483.0), model

    script = _script(record, [-9.0, -8.0, 0.0, 10.0, 12.4], [None, None, fitted])
    result, _, _ = _calibrate(
        record, script, calibrate_params="speed,sigma", calibration_iterations=5
    )
    assert result.stop == "no longer rising" and result.best == 4
    assert result.sigma[4] == sigma == script.made[4][1]
    assert result.statistical_model.signal.sigma == sigma


def test_likelihood_ratio_check_counts_the_kept_models_prior(record):
    """The kept pass (4) has a speed of 1490 m/s (log prior -0.5) and a fitted sigma (log
    prior -0.5): penalised 10 - 1 = 9. With the file's speed and the same model the
    penalised log-likelihood is 7.25 - 0.5 = 6.75, MIN_GAIN + 0.25 below: the speed stays
    (the model's prior is in both; counted with the wrong sign it would be 1.25 below)."""
    sigma = 5.0 * math.exp(0.5)

    def fitted(speed, std):
        def step(candidate):
            now = candidate.model
            est = Estimate(sigma, 0.1, 5.0, True, 3.0)
            model = StatisticalModel(replace(now.signal, sigma=sigma), now.process_noise,
                                     (("sigma", est),))  # fmt: skip
            cal = replace(Calibration.nominal(12, speed), sound_speed_std=std)
            return cal, model

        return step

    steps = [None, None, fitted(1490.0, 5.0), fitted(1491.0, math.nan)]
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 10.0, 4.0, 7.25], steps)
    result, best, _ = _calibrate(
        record, script, calibrate_params="speed,sigma", calibration_iterations=5
    )
    assert result.trace[6].sound_speed == NOMINAL and result.models[6] is result.models[4]
    assert result.best == 4 and best.number == 4


def test_progress_is_topped_up_only_for_passes_not_run(record):
    """Every pass of em_passes run (one M-step, both checks): nothing to top up, so no call
    at all (the scripted passes report none themselves); without a progress callback an
    early stop tops up nothing."""
    kept = _estimated(1490.0, 0.05)
    script = _script(record, [-9.0, -8.0, 0.0, 5.0, 10.0, 0.0, 0.0], [None, None, kept])
    config = {"calibrate_params": "speed,drift", "calibration_iterations": 1}
    result, _, done = _calibrate(record, script, **config)
    hotter = 2 * em.hotter_levels()  # not run: the first pass kept the float
    assert len(result.loglik) == em_passes(TrackConfig(calibrate=True, **config)) - hotter == 7
    assert done == [hotter * (2 * record.sizes["cycle"] + 1)] and result.stop == "iteration limit"
    script = _script(record, [-9.0, -8.0, 0.0, -1.0, -0.5])
    config = TrackConfig(calibrate=True, calibrate_params="drift")
    result, _ = calibrate(script.prepared, config, script.start, problem=script)
    assert result.kept_file_values and len(result.loglik) == 5


# --- the M-step against the closed-form mode of its penalised least squares ---


def _design(rng, n=800, s=16):
    dist = rng.uniform(200.0, 1500.0, n)
    day = rng.uniform(0.0, 300.0, n)
    src = rng.integers(0, s, n)
    delta = np.linspace(-2.0, 3.0, s)
    y = dist * 1000.0 / 1490.0 + 1.2 + 0.03 * day + delta[src] + rng.normal(0.0, 5.0, n)
    return dist, day, src, y


def _mode(dist, day, src, y, w, s, sigma, nominal):
    """``argmax -sum w (y - A theta)^2 / (2 sigma^2) - sum (theta - m)^2 / (2 p^2)`` over
    ``theta = (u, c0, c1, delta)``: the priors' stds as m_step states them (the speed's on the
    slowness by the delta method)."""
    a = np.zeros((y.size, 3 + s))
    a[:, 0], a[:, 1], a[:, 2] = dist, 1.0, day
    a[np.arange(y.size), 3 + src] = 1.0
    u0 = 1000.0 / nominal
    m = np.r_[u0, 0.0, 0.0, np.zeros(s)]
    p = np.r_[u0**2 * SPEED_PRIOR_STD / 1000.0, CLOCK_OFFSET_PRIOR_STD, DRIFT_PRIOR_STD,
              np.full(s, OFFSET_PRIOR_STD)]  # fmt: skip
    info = a.T @ (a * w[:, None]) / sigma**2 + np.diag(p**-2.0)
    theta = np.linalg.solve(info, a.T @ (w * y) / sigma**2 + m / p**2)

    def objective(t):
        return -0.5 * np.sum(w * (y - a @ t) ** 2) / sigma**2 - 0.5 * np.sum(((t - m) / p) ** 2)

    return theta, objective, np.sqrt(np.diag(np.linalg.inv(info)))


def test_m_step_from_any_start_is_the_penalised_mode(rng):
    """One track: the log posterior is quadratic, so the Newton step lands on its mode from
    any start -- here 20 m/s, 3 s, 0.1 s/day and 2 s per source away from the priors'
    centres (16 sources: with the priors every entry is determined, none held), so that
    a wrong sign on the prior's pull in the gradient moves the result.
    The finite-difference gradient of the penalised objective vanishes there."""
    s, nominal = 16, 1480.0
    dist, day, src, y = _design(rng)
    w = rng.uniform(0.2, 1.0, y.size)
    start = replace(Calibration.nominal(s, 1500.0), clock_offset=3.0, clock_drift=0.1,
                    source_offset_correction=np.full(s, 2.0))  # fmt: skip
    cal = m_step(
        dist, day, src, y, w, n_sources=s, sound_speed=nominal, sigma=5.0,
        offset_prior_std=OFFSET_PRIOR_STD, start=start, speed_prior_std=SPEED_PRIOR_STD,
        clock_prior_std=CLOCK_OFFSET_PRIOR_STD, drift_prior_std=DRIFT_PRIOR_STD,
    )  # fmt: skip
    theta, objective, std = _mode(dist, day, src, y, w, s, 5.0, nominal)
    got = np.r_[1000.0 / cal.sound_speed, cal.clock_offset, cal.clock_drift,
                cal.source_offset_correction]  # fmt: skip
    np.testing.assert_allclose(got, theta, rtol=1e-9, atol=1e-9)
    for j in range(theta.size):
        h = np.zeros_like(theta)
        h[j] = 1e-4 * max(abs(theta[j]), 1e-2)
        fd = (objective(got + h) - objective(got - h)) / (2 * h[j])
        assert abs(fd * std[j]) < 1e-4, j  # in units of the posterior's spread
    assert cal.sound_speed_std == pytest.approx(1000.0 * std[0] / theta[0] ** 2, rel=1e-6)
    np.testing.assert_allclose(
        [cal.clock_offset_std, cal.clock_drift_std, *cal.source_offset_correction_std],
        std[1:], rtol=1e-6,
    )  # fmt: skip


def test_geometry_log_prior_sums_the_estimated_groups_only():
    cal = replace(
        Calibration.nominal(3, 1495.0),
        clock_offset=2.0, clock_drift=-0.1, source_offset_correction=np.array([4.0, -2.0, 6.0]),
        sound_speed_std=1.0, clock_offset_std=math.nan, clock_drift_std=0.01,
        source_offset_correction_std=np.array([0.5, 0.5, math.nan]),
    )  # fmt: skip
    expected = -0.5 * (
        (15.0 / SPEED_PRIOR_STD) ** 2 + (0.1 / DRIFT_PRIOR_STD) ** 2
        + (4.0 / OFFSET_PRIOR_STD) ** 2 + (2.0 / OFFSET_PRIOR_STD) ** 2
    )  # fmt: skip
    assert geometry_log_prior(cal, 1480.0) == pytest.approx(expected, rel=1e-12)
    assert geometry_log_prior(Calibration.nominal(3, 1495.0), 1480.0) == 0.0


def test_calibration_stages_fit_speed_before_offsets():
    everything = frozenset({"speed", "offsets", "drift", "sigma"})
    assert calibration_stages(everything) == (everything - {"offsets"}, everything - {"speed"})
    assert calibration_stages(frozenset({"speed", "drift"})) == ({"speed", "drift"},)
    assert calibration_stages(frozenset({"offsets"})) == ({"offsets"},)


def test_predicted_shift_and_putting_groups_back():
    cal = replace(
        Calibration.nominal(3, 1480.0),
        sound_speed=1490.0, clock_offset=2.0, clock_drift=0.1,
        source_offset_correction=np.array([1.0, -3.0, 0.5]),
        sound_speed_std=1.0, clock_offset_std=0.2, clock_drift_std=0.01,
        source_offset_correction_std=np.array([0.3, 0.3, 0.3]),
    )  # fmt: skip
    day, source = np.array([0.0, 10.0, 20.0]), np.array([2, 0, 1])
    np.testing.assert_allclose(cal.predicted_shift(day, source), [2.5, 4.0, 1.0], rtol=1e-14)
    speed = cal.without("speed", 1480.0)
    assert speed.sound_speed == 1480.0 and not speed.estimates("speed")
    assert speed.estimates("drift") and speed.estimates("offsets") and speed.clock_drift == 0.1
    drift = cal.without("drift", 1480.0)
    assert (drift.clock_offset, drift.clock_drift) == (0.0, 0.0) and not drift.estimates("drift")
    assert drift.sound_speed == 1490.0 and drift.estimates("offsets")
    offsets = cal.without("offsets", 1480.0)
    assert not offsets.source_offset_correction.any() and not offsets.estimates("offsets")
    assert offsets.estimates("speed") and offsets.estimates("drift")
    with pytest.raises(ValueError, match="group must be one of drift, speed, offsets"):
        cal.without("sigma", 1480.0)


def test_m_step_refuses_pairs_of_unequal_length(rng):
    dist, day, src, y = _design(rng, n=50)
    with pytest.raises(ValueError, match=r"must be \(K,\) alike"):
        m_step(dist, day[:-1], src, y, np.ones(50), n_sources=16, sound_speed=1480.0,
               sigma=5.0, offset_prior_std=2.0)  # fmt: skip
    with pytest.raises(ValueError, match=r"must be \(K,\) alike"):
        m_step(np.ones((2, 3, 50)), day, src, y, np.ones(50), n_sources=16,
               sound_speed=1480.0, sigma=5.0, offset_prior_std=2.0)  # fmt: skip


def test_m_step_holds_an_entry_the_record_does_not_determine(rng):
    """Four sources: the clock offset is confounded with the offset corrections, its
    posterior variance above half its prior's (the rule: held). It stays at the start's 3 s
    with no standard error, and the rest is the penalised mode with it fixed there."""
    s, nominal = 4, 1480.0
    dist, day, src, y = _design(rng, n=800, s=s)
    w = np.ones(y.size)
    kw = {"n_sources": s, "sound_speed": nominal, "sigma": 5.0}
    priors = {"speed_prior_std": SPEED_PRIOR_STD, "clock_prior_std": CLOCK_OFFSET_PRIOR_STD,
              "drift_prior_std": DRIFT_PRIOR_STD}  # fmt: skip
    start = replace(Calibration.nominal(s, nominal), clock_offset=3.0)
    cal = m_step(dist, day, src, y, w, offset_prior_std=OFFSET_PRIOR_STD, start=start,
                 **kw, **priors)  # fmt: skip
    _, _, std = _mode(dist, day, src, y, w, s, 5.0, nominal)
    prior_var = np.r_[(1000.0 / nominal) ** 4 * SPEED_PRIOR_STD**2 / 1e6,
                      CLOCK_OFFSET_PRIOR_STD**2, DRIFT_PRIOR_STD**2,
                      np.full(s, OFFSET_PRIOR_STD**2)]  # fmt: skip
    ratio = 2.0 * std**2 / prior_var  # (1 + MIN_DATA_TO_PRIOR) posterior / prior variance
    assert ratio[1] > 1.0 and np.all(np.delete(ratio, 1) < 1.0)
    assert cal.clock_offset == 3.0 and np.isnan(cal.clock_offset_std)
    # the others: the mode with c0 fixed at 3 (the residuals shifted, c0's column dropped)
    keep = [0, 2, *range(3, 3 + s)]
    a = np.zeros((y.size, 3 + s))
    a[:, 0], a[:, 1], a[:, 2] = dist, 1.0, day
    a[np.arange(y.size), 3 + src] = 1.0
    a = a[:, keep]
    m = np.r_[1000.0 / nominal, 0.0, np.zeros(s)]
    p2 = prior_var[keep]
    info = a.T @ a / 25.0 + np.diag(1.0 / p2)
    theta = np.linalg.solve(info, a.T @ (y - 3.0) / 25.0 + m / p2)
    got = np.r_[1000.0 / cal.sound_speed, cal.clock_drift, cal.source_offset_correction]
    np.testing.assert_allclose(got, theta, rtol=1e-8, atol=1e-9)


def test_m_step_refuses_a_parameter_nothing_informs():
    """The drift without a prior on a record of one day (``t = 0`` throughout): no
    information at all about it, refused as not identifiable."""
    rng = np.random.default_rng(2)
    dist, _, src, y = _design(rng, n=50, s=2)
    with pytest.raises(ValueError, match="not identifiable"):
        m_step(dist, np.zeros(50), src, y, np.ones(50), n_sources=2, sound_speed=1480.0,
               sigma=5.0, offset_prior_std=2.0, params=frozenset({"drift"}))  # fmt: skip


def test_float_m_step_feeds_the_pass_to_both_m_steps(record):
    """One real pass (few particles) with a calibration in use: the geometry's M-step is
    :func:`m_step` on the E-step pairs of the smoothed trajectories' distances at the pass's
    sigma with the stated priors; the statistical M-step is :func:`fit_statistics` on TOAs
    predicted along each trajectory with the calibration (``d / v + o_i + c_0 + c_1 t +
    delta_i``) and the trajectories' steps -- each input built here from its definition."""
    from rankmodels.tracking.geometry import great_circle_km, tangent_offsets
    from rankmodels.tracking.model_fit import FitInputs

    config = TrackConfig(particles=200, ensemble=20, seed=1, calibrate=True, sigma=4.0)
    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    cal = replace(
        Calibration.nominal(12, NOMINAL), sound_speed=1490.0, clock_offset=1.0,
        clock_drift=0.1, source_offset_correction=np.linspace(-1.0, 1.0, 12),
    )  # fmt: skip
    candidate = Parameters(cal, start.model)
    this = run_pass(prepared, candidate, config, keep_members=True)
    got = float_m_step(this, candidate, frozenset({"speed", "drift", "sigma"}), start)
    ens = this.ensembles  # (T, M, 2)
    dist = great_circle_km(
        ens[:, :, 0, None], ens[:, :, 1, None],
        record["source_lat"].values, record["source_lon"].values,
    ).transpose(1, 0, 2)  # fmt: skip
    dist[:, ~prepared.active] = np.nan
    toa = record["toa"].values
    day = (record["time"].values - record["launch_time"].values) / np.timedelta64(1, "D")
    pairs = m_step_pairs(toa, this.assoc.posterior, dist, day, prepared.offset,
                         this.assoc.predicted_toa, start.signal, this.assoc.members)  # fmt: skip
    assert pairs["weight"].shape == pairs["distance_km"].shape  # one weight per trajectory
    want = m_step(
        **pairs, n_sources=12, sound_speed=NOMINAL, sigma=4.0, offset_prior_std=OFFSET_PRIOR_STD,
        params=frozenset({"speed", "drift"}), start=cal, speed_prior_std=SPEED_PRIOR_STD,
        clock_prior_std=CLOCK_OFFSET_PRIOR_STD, drift_prior_std=DRIFT_PRIOR_STD,
        clock_readings=prepared.clock,
    )  # fmt: skip
    for name in ("sound_speed", "clock_offset", "clock_drift", "source_offset_correction",
                 "sound_speed_std", "clock_drift_std", "source_offset_correction_std"):  # fmt: skip
        np.testing.assert_allclose(getattr(got.calibration, name), getattr(want, name),
                                   rtol=1e-9, err_msg=name)  # fmt: skip
    assert got.calibration.sound_speed != cal.sound_speed  # the step moved it
    shift = 1.0 + 0.1 * day[:, None] + np.linspace(-1.0, 1.0, 12)[None, :]
    lat = np.vstack([np.full((1, ens.shape[1]), record["launch_lat"].item()), ens[:, :, 0]])
    lon = np.vstack([np.full((1, ens.shape[1]), record["launch_lon"].item()), ens[:, :, 1]])
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    inputs = FitInputs(
        toa=toa,
        posterior=this.assoc.posterior,
        predicted=dist * 1000.0 / 1490.0 + prepared.offset + shift,
        predicted_mean=this.assoc.predicted_toa,
        steps_km=np.stack([east.T, north.T], axis=2),
        dt=np.diff(day, prepend=0.0),
        members=this.assoc.members,
    )
    fitted = fit_statistics(inputs, start.model, start.model, {"sigma"})
    assert got.model.estimate("sigma").value == pytest.approx(
        fitted.estimate("sigma").value, rel=1e-9
    )
    assert got.model.signal.sigma != 4.0
    # without the priors' centres, or without a statistical parameter: the model stays
    assert float_m_step(this, candidate, frozenset({"speed", "sigma"})).model is start.model
    assert float_m_step(this, candidate, frozenset({"speed"}), start).model is start.model


def test_every_em_m_step_weighs_by_the_association_given_each_trajectory(
    monkeypatch, record, tmp_path
):
    """The EM's passes (annealing ones too) and an experiment's E-step keep the association
    given each trajectory and hand it to the geometry's pairs, one weight per trajectory."""
    from rankmodels.tracking import experiment

    seen = []

    def spy(*args, **kw):
        pairs = m_step_pairs(*args, **kw)
        seen.append(pairs["weight"].shape == pairs["distance_km"].shape)
        return pairs

    monkeypatch.setattr(experiment, "m_step_pairs", spy)
    config = TrackConfig(particles=200, calibration_particles=200, ensemble=20, seed=1,
                         calibrate=True, calibration_iterations=1)  # fmt: skip

    class Watched(FloatProblem):
        def evaluate(self, candidate, factor=1.0):
            scored = super().evaluate(candidate, factor)
            members = scored.evidence.assoc.members
            seen.append(members is not None and members.shape[1] == 20)
            return scored

    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    calibrate(prepared, config, start, problem=Watched(prepared, em_config(config), start))
    assert len(seen) >= len(em.ANNEALING) + 1 and all(seen)
    seen.clear()
    write_float(record, tmp_path / "a.nc")
    layout = JointLayout(n_sources=record.sizes["source"], n_floats=1)
    theta = JointParameters.nominal(layout, NOMINAL)
    sources = np.arange(layout.n_sources)
    experiment.float_e_step(tmp_path / "a.nc", config, theta, 0, sources, None, fit=False)
    assert seen == [True]


def test_louis_observed_information_in_one_dimension(rng):
    """The speed alone (no priors, the rest held exactly): with M trajectories the step is
    ``u0 + mean(S_m) / I_obs``, ``I_obs = I_c - var(S_m)`` (floored at 0.3 ``I_c``), and
    the standard error ``1 / sqrt(I_obs - L)`` (floored alike) with ``L = mean_m sum_k w_k
    (1 - w_k) (r_mk d_mk / sigma^2)^2`` the pair labels' variance -- the complete-data
    information less what the unknown positions and labels take away, by hand."""
    n, m = 300, 40
    base = rng.uniform(200.0, 1500.0, n)
    day, src = np.zeros(n), np.zeros(n, dtype=int)
    y = base * 1000.0 / 1490.0 + rng.normal(0.0, 5.0, n)
    w = rng.uniform(0.5, 1.0, n)
    u0 = 1000.0 / 1480.0
    for spread, floored in ((3.0, False), (60.0, True)):
        dist = base + rng.normal(0.0, spread, (m, n))
        cal = m_step(dist, day, src, y, w, n_sources=1, sound_speed=1480.0, sigma=5.0,
                     offset_prior_std=math.inf, params=frozenset({"speed"}))  # fmt: skip
        scores = (w * (y - dist * u0) * dist).sum(axis=1) / 25.0
        complete = (w * dist**2).sum(axis=1).mean() / 25.0
        observed = complete - np.var(scores, ddof=1)
        assert bool(observed < 0.3 * complete) is floored
        labels = (w * (1 - w) * ((y - dist * u0) * dist / 25.0) ** 2).sum(axis=1).mean()
        stated = max(observed - labels, 0.3 * complete)
        observed = max(observed, 0.3 * complete)
        u = u0 + scores.mean() / observed
        assert cal.sound_speed == pytest.approx(1000.0 / u, rel=1e-10)
        assert cal.sound_speed_std == pytest.approx(1000.0 / math.sqrt(stated) / u**2, rel=1e-8)


def test_held_parameters_add_their_uncertainty_to_the_estimated_ones(rng):
    """One track; the drift estimated, the speed held at a start with a standard error of
    2 m/s and the offset corrections held (prior tau): the drift's variance is the inverse
    information plus ``S C_phi S^T`` with ``S = I_ee^-1 I_eh`` (the consider covariance),
    ``C_phi`` the held slowness's variance (delta method) and ``tau^2`` per offset."""
    s, n = 3, 400
    dist = rng.uniform(200.0, 1500.0, n)
    day = rng.uniform(0.0, 300.0, n)
    src = rng.integers(0, s, n)
    y = dist * 1000.0 / 1480.0 + 0.05 * day + rng.normal(0.0, 5.0, n)
    w = np.ones(n)
    start = replace(Calibration.nominal(s, 1480.0), sound_speed_std=2.0)
    cal = m_step(dist, day, src, y, w, n_sources=s, sound_speed=1480.0, sigma=5.0,
                 offset_prior_std=2.0, params=frozenset({"drift"}), start=start)  # fmt: skip
    a = np.zeros((n, 3 + s))
    a[:, 0], a[:, 1], a[:, 2] = dist, 1.0, day
    a[np.arange(n), 3 + src] = 1.0
    info = a.T @ a / 25.0
    est, held = [1, 2], [0, 3, 4, 5]
    i_ee = info[np.ix_(est, est)]
    sens = np.linalg.solve(i_ee, info[np.ix_(est, held)])
    u = 1000.0 / 1480.0
    c_phi = np.diag([(u**2 * 2.0 / 1000.0) ** 2, 4.0, 4.0, 4.0])
    cov = np.linalg.inv(i_ee) + sens @ c_phi @ sens.T
    assert cal.clock_drift_std == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-9)
    assert cal.clock_offset_std == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-9)
    assert cal.sound_speed == 1480.0 and cal.sound_speed_std == 2.0  # held, as it was


def test_m_step_pairs_weights_offsets_and_single_track():
    """Pairs at exactly MIN_PAIR_WEIGHT are kept; residuals are the TOA less the file's
    offset of the pair's source; one trajectory (M = 1) and no model are accepted, and a
    model without multipath needs no predictions."""
    from rankmodels.tracking.calibration import MIN_PAIR_WEIGHT, m_step_pairs
    from rankmodels.tracking.signal_model import SignalModel

    toa = np.array([[100.0, 160.0], [130.0, np.nan]])
    posterior = np.array([
        [[MIN_PAIR_WEIGHT, 0.6, 0.4 - MIN_PAIR_WEIGHT], [0.0, 0.5, 0.5]],
        [[0.9, np.nextafter(MIN_PAIR_WEIGHT, 0.0), 0.1], [np.nan] * 3],
    ])  # fmt: skip
    dist = np.array([[[150.0, 300.0], [151.0, np.nan]]])  # M = 1; source 1 off in cycle 1
    offset = np.array([10.0, 20.0])
    for model in (None, SignalModel(multipath=0.0)):
        pairs = m_step_pairs(toa, posterior, dist, np.array([1.0, 2.0]), offset, None, model)
        assert pairs["source"].tolist() == [0, 1, 1, 0]
        np.testing.assert_array_equal(pairs["residual_toa"], [90.0, 80.0, 140.0, 120.0])
        np.testing.assert_array_equal(pairs["weight"], [MIN_PAIR_WEIGHT, 0.6, 0.5, 0.9])
        np.testing.assert_array_equal(pairs["distance_km"], [[150.0, 300.0, 300.0, 151.0]])
        np.testing.assert_array_equal(pairs["day"], [1.0, 1.0, 1.0, 2.0])


def test_ended_lost_is_the_recovery_check_on_the_filters_last_cycle(record):
    """A filter that ends where the float was recovered kept it; the same filter with its
    last cycle moved 300 km lost it; a record without a recovery fix cannot tell (False)."""
    from dataclasses import replace as with_fields

    from rankmodels.tracking.geometry import great_circle_km

    config = TrackConfig(particles=300, seed=2)
    run = prepare(record, config)
    params = start_parameters(run, config)
    filt = run_pass(run, params, config).filt
    last = run.cycle_steps[-1]
    assert not ended_lost(run, params, filt)
    mean = filt.mean.copy()
    mean[last, 0] -= 2.7  # about 300 km south
    moved = with_fields(filt, mean=mean)
    assert great_circle_km(*mean[last], *run.recovery) > 250.0
    assert ended_lost(run, params, moved)
    bare = prepare(record.drop_vars(["recovery_time", "recovery_lat", "recovery_lon"]), config)
    assert bare.recovery is None and not ended_lost(bare, params, moved)
