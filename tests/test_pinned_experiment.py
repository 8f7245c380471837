"""The experiment's EM on hand-made inputs: the score of a pass (every float's particle
log-likelihood, every float's statistical priors and the shared priors, each by hand), and
the pooled M-step's order of holding what the floats do not determine (the source drifts
first), on statistics of two trajectories whose Louis information leaves the drift weak."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rankmodels.tracking.calibration import SPEED_PRIOR_STD, ResidualStatistics
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.experiment import ExperimentProblem, FloatPass
from rankmodels.tracking.joint import (
    SOURCE_DRIFT_PRIOR_STD,
    JointLayout,
    JointParameters,
    joint_m_step,
)
from rankmodels.tracking.model_fit import Estimate, StatisticalModel
from rankmodels.tracking.signal_model import SignalModel

NOMINAL = 1480.0
SIGNAL = SignalModel(sigma=5.0, p_detect=0.8, clutter_rate=1.0, window=1800.0)


def _float_pass(loglik, estimates, lost=False):
    """A float's pass whose model carries ``estimates`` (name -> (value, estimated)) about
    the configured model ``SIGNAL``."""
    values = {name: value for name, (value, _) in estimates.items()}
    model = StatisticalModel(
        replace(SIGNAL, **values), 5.0,
        tuple((n, Estimate(v, 0.1, getattr(SIGNAL, n), e, 3.0)) for n, (v, e) in estimates.items()),
    )  # fmt: skip
    start = StatisticalModel(SIGNAL, 5.0)
    return FloatPass(None, loglik, model, model, start, np.zeros(1), lost)


def test_a_pass_scores_every_float_s_statistical_priors_and_the_shared_ones():
    """Float 0 estimated sigma 6 s (prior log sigma ~ N(log 5, 0.5^2)), float 1 the clutter
    rate 1.5 (log lambda ~ N(0, 1)) and kept P_D (no prior term); the speed 1490 m/s
    against the files' 1480 (slowness prior width ``u^2 * 10 / 1000``)."""
    layout = JointLayout(n_sources=1, n_floats=2)
    files = JointParameters.nominal(layout, NOMINAL)
    theta = replace(files, sound_speed=1490.0, sound_speed_std=1.0)
    passes = [
        _float_pass(-100.0, {"sigma": (6.0, True)}),
        _float_pass(-50.0, {"clutter_rate": (1.5, True), "p_detect": (0.9, False)}, lost=True),
    ]
    calls = []

    def e_steps(theta, models, factor, fit):
        calls.append((factor, fit))
        return passes

    problem = ExperimentProblem(e_steps, None, frozenset({"speed"}), files, NOMINAL,
                                [ClockReadings.none()] * 2)  # fmt: skip
    scored = problem.evaluate((theta, [None, None]))
    u, u_file = 1000.0 / 1490.0, 1000.0 / NOMINAL
    speed = -0.5 * ((u - u_file) / (u_file**2 * SPEED_PRIOR_STD / 1000.0)) ** 2
    sigma = -0.5 * math.log(6.0 / 5.0) ** 2 / 0.5**2
    clutter = -0.5 * math.log(1.5) ** 2
    assert scored.loglik == -150.0 and scored.lost
    assert scored.score == pytest.approx(-150.0 + sigma + clutter + speed, rel=1e-12)
    assert problem.evaluate((theta, [None, None]), 2.0).score == scored.score
    assert calls == [(1.0, True), (2.0, False)]  # annealing passes fit no model


def test_the_pooled_m_step_holds_a_weak_source_drift_before_the_offset():
    """One source heard 50 days after its clock reference, so a drift ``eta`` is a delay of
    ``50 eta``: complete information ``a v v^T`` with ``v = (delta, eta) = (1, 50)``, ``a =
    10``, and the trajectories' scores spreading along ``eta`` (missing information half its
    complete one). Estimated together neither is determined; with the drift held first
    the offset is: its step ``g / (a + 1 / 4)`` (prior 2 s) and its variance ``1 / (a + 1/4)``
    plus the held drift's consider part ``(50 a / (a + 1/4))^2 * 0.01^2``."""
    layout = JointLayout(n_sources=1, n_floats=1)  # theta = (u, delta, eta, c0, c1)
    a, tau, g = 10.0, 50.0, 1.0
    v = np.array([0.0, 1.0, tau, 0.0, 0.0])
    info = a * np.outer(v, v) + np.diag([1.0, 0.0, 0.0, 1.0, 1.0])
    missing = np.zeros((5, 5))
    missing[2, 2] = 0.5 * info[2, 2]
    pooled = ResidualStatistics(np.array([0.0, g, 0.0, 0.0, 0.0]), missing, info, 2)
    files = JointParameters.nominal(layout, NOMINAL)
    got = joint_m_step(pooled, files, layout, NOMINAL, frozenset({"offsets"}))
    precision = a + 1.0 / 2.0**2
    consider = (a * tau / precision) ** 2 * SOURCE_DRIFT_PRIOR_STD**2
    assert got.offset_correction[0] == pytest.approx(g / precision, rel=1e-9)
    assert got.offset_correction_std[0] == pytest.approx(math.sqrt(1 / precision + consider),
                                                         rel=1e-9)  # fmt: skip
    assert got.drift_correction[0] == 0.0 and np.isnan(got.drift_correction_std[0])
    assert got.sound_speed == NOMINAL and np.isnan(got.sound_speed_std)
