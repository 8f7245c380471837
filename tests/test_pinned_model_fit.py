"""The statistical M-steps' standard errors, gates and clips on records of a handful of
arrivals, every expected number worked out by hand from the module's stated formulas: the
prior's share of a standard error, Louis' missing information of the clutter association,
the step's clip on both sides, the identifiability gate over several trajectories (where
Louis' information is smaller than the complete-data one), and the TOA noise's step with
multipath in the model (each pair weighed by its direct-path share, computed here from
scipy's exponentially modified normal)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rankmodels.tracking.dynamics import LagrangianMotion
from rankmodels.tracking.model_fit import FitInputs, StatisticalModel, fit_statistics
from rankmodels.tracking.signal_model import SignalModel

PRED = 1000.0
W_SIGMA = 0.5  # the TOA noise's prior width on log sigma (PRIORS["sigma"])


def _model(sigma=5.0, clutter_rate=1.0, multipath=0.0, delay=20.0):
    signal = SignalModel(sigma=sigma, p_detect=0.8, clutter_rate=clutter_rate, window=1800.0,
                         multipath=multipath, multipath_delay=delay)  # fmt: skip
    return StatisticalModel(signal, 5.0)


def _inputs(residuals, clutter=None, shifts=(0.0,), ranks=2):
    """One source predicted at ``PRED`` s along each trajectory shifted by ``shifts`` (s);
    cycle ``t`` records one arrival at ``PRED + residuals[t]`` (so fewer than ``ranks``: the
    whole window observed), its clutter posterior ``clutter[t]`` (default 0)."""
    e = np.asarray(residuals, dtype=float)
    n = e.size
    a_c = np.zeros(n) if clutter is None else np.asarray(clutter, dtype=float)
    toa = np.full((n, ranks), np.nan)
    toa[:, 0] = PRED + e
    post = np.full((n, ranks, 2), np.nan)
    post[:, 0, 0], post[:, 0, 1] = 1.0 - a_c, a_c
    pred = np.full((n, 1), PRED)
    predicted = np.stack([pred + s for s in shifts])
    steps = np.zeros((len(shifts), n, 2))
    return FitInputs(toa, post, predicted, pred, steps, np.ones(n))


def _sigma(inputs, current, start):
    fit = fit_statistics(inputs, _model(current), _model(start), {"sigma"})
    return fit.estimate("sigma")


def test_the_prior_takes_its_share_of_the_standard_error():
    """Residuals 3, -4, 5 s from sigma 6 with the prior at 5: ``I = 2 sum w = 6`` against
    the prior's ``1 / w^2 = 4``; ``std = sigma' / sqrt(I + 1 / w^2)``, ``sigma' = 6 exp(step)``,
    ``step = (sum (e^2 / 36 - 1) - 4 log(6 / 5)) / (6 + 4)``."""
    est = _sigma(_inputs([3.0, -4.0, 5.0]), 6.0, 5.0)
    score = 50.0 / 36.0 - 3.0
    step = (score - math.log(6.0 / 5.0) / W_SIGMA**2) / (6.0 + 1.0 / W_SIGMA**2)
    value = 6.0 * math.exp(step)
    assert est.estimated and est.value == pytest.approx(value, rel=1e-12)
    assert est.std == pytest.approx(value / math.sqrt(10.0), rel=1e-12)
    assert est.information == pytest.approx(6.0 * W_SIGMA**2, rel=1e-12)


def test_the_step_is_clipped_to_one_in_log_sigma_on_either_side():
    """From 5 e^3 s with the prior at 5 s and residuals of 1 s the Newton step is about
    -1.3 in log sigma, from 5 e^-3 s with residuals of 5 s about +1.8: each is cut at 1."""
    down = _sigma(_inputs([1.0] * 4), 5.0 * math.e**3, 5.0)
    assert (-4.0 - 12.0) / 12.0 < -1.0  # score ~ -4, prior -3 / w^2, information 8 + 4
    assert down.value == pytest.approx(5.0 * math.e**2, rel=1e-12)
    up = _sigma(_inputs([5.0] * 4), 5.0 * math.e**-3, 5.0)
    assert up.value == pytest.approx(5.0 * math.e**-2, rel=1e-12)


def test_sigma_stays_within_its_accepted_range():
    """From 1.2 ms at its prior's centre, residuals of 0: the step ``-4 / 12`` would give
    0.86 ms, below the accepted 1 ms."""
    assert 1.2e-3 * math.exp(-4.0 / 12.0) < 1e-3
    assert _sigma(_inputs([0.0] * 4), 1.2e-3, 1.2e-3).value == 1e-3


def test_louis_missing_information_of_the_clutter_association():
    """Four cycles (whole window observed each, lambda = 1 = the prior's centre), clutter
    posteriors 0.5, 0.5, 0.5, 1: complete information ``lambda sum e = 4``, missing
    ``sum a (1 - a) = 0.75``, so ``I = 3.25``; the step ``(2.5 - 4) / (4 + 1)`` in log
    lambda and ``std = lambda' / sqrt(3.25 + 1)``."""
    inputs = _inputs([0.0] * 4, clutter=[0.5, 0.5, 0.5, 1.0])
    est = fit_statistics(inputs, _model(), _model(), {"clutter"}).estimate("clutter_rate")
    value = math.exp((2.5 - 4.0) / 5.0)
    assert est.estimated and est.value == pytest.approx(value, rel=1e-12)
    assert est.information == pytest.approx(3.25, rel=1e-12)
    assert est.std == pytest.approx(value / math.sqrt(4.25), rel=1e-12)


def test_the_clutter_association_s_missing_information_can_leave_the_rate_undetermined():
    """Two cycles with every rank recorded, the last at 0.6 of the window: complete
    information ``1.2`` (more than the prior's 1) less the association's ``0.5`` is 0.7: the
    rate is kept at its start."""
    toa = np.array([[100.0, 1080.0], [500.0, 1080.0]])
    post = np.array([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [1.0, 0.0]]])
    pred = np.full((2, 1), 1080.0)
    inputs = FitInputs(toa, post, pred[None], pred, np.zeros((1, 2, 2)), np.ones(2))
    est = fit_statistics(inputs, _model(), _model(), {"clutter"}).estimate("clutter_rate")
    assert not est.estimated and est.value == 1.0 and math.isnan(est.std)
    assert est.information == pytest.approx(0.7, rel=1e-12)


def _two_trajectories(d):
    """Three unit-weight arrivals; along trajectory 0 every residual is 5 s (score 0 at
    sigma 5), along trajectory 1 each is ``e`` with ``3 (e^2 / 25 - 1) = d``."""
    e = 5.0 * math.sqrt(1.0 + d / 3.0)
    return _inputs([5.0] * 3, shifts=(0.0, 5.0 - e))


def test_the_gate_and_the_error_use_louis_information_over_several_trajectories():
    """Scores 0 and ``d = 1.2`` over two trajectories: complete information 6, missing
    ``var = d^2 / 2 = 0.72``, so ``I = 5.28`` (ratio ``I w^2 = 1.32``); the step is the mean
    score over the complete information and the prior, ``0.6 / 10``."""
    est = _sigma(_two_trajectories(1.2), 5.0, 5.0)
    value = 5.0 * math.exp(0.6 / 10.0)
    assert est.estimated and est.value == pytest.approx(value, rel=1e-12)
    assert est.information == pytest.approx(5.28 * W_SIGMA**2, rel=1e-12)
    assert est.std == pytest.approx(value / math.sqrt(5.28 + 4.0), rel=1e-12)


def test_trajectories_that_disagree_leave_sigma_undetermined():
    """Scores 0 and 2.4: ``I = 6 - 2.88 = 3.12``, ratio 0.78 < 1 (the complete-data ratio
    would be 1.5); scores 0 and 4: the missing 8 leaves the floor ``0.3 * 6``."""
    est = _sigma(_two_trajectories(2.4), 5.0, 5.0)
    assert not est.estimated and est.value == 5.0 and math.isnan(est.std)
    assert est.information == pytest.approx(3.12 * W_SIGMA**2, rel=1e-12)
    floor = _sigma(_two_trajectories(4.0), 5.0, 5.0)
    assert floor.information == pytest.approx(1.8 * W_SIGMA**2, rel=1e-12)


def _direct_share(e, sigma, share, delay):
    """``P(direct | e)`` of the mixture ``(1 - P_M) N(0, sigma^2) + P_M (N(0, sigma^2) +
    Exp(mean delay))`` (scipy's exponnorm: ``K = delay / sigma``)."""
    direct = (1.0 - share) * stats.norm.pdf(e, scale=sigma)
    delayed = share * stats.exponnorm.pdf(e, delay / sigma, scale=sigma)
    return direct / (direct + delayed)


def test_sigma_with_multipath_weighs_each_pair_by_its_direct_share_per_trajectory():
    """Multipath 0.2, mean delay 20 s; residuals with two delayed arrivals (30 and 45 s),
    two trajectories 2 s apart: each trajectory's score ``sum pi (e^2 / s^2 - 1)`` with its
    own ``pi = P(direct | e)``, complete information the mean of ``2 sum pi``, missing the
    scores' variance; from sigma 6 with the prior at 5."""
    e0 = np.array([1.0, -3.0, 4.0, 2.0, -6.0, 30.0, 45.0])
    inputs = _inputs(e0, shifts=(0.0, 2.0))
    current, start = _model(6.0, multipath=0.2), _model(5.0, multipath=0.2)
    est = fit_statistics(inputs, current, start, {"sigma"}).estimate("sigma")
    scores, infos = [], []
    for e in (e0, e0 - 2.0):
        pi = _direct_share(e, 6.0, 0.2, 20.0)
        assert pi[-1] < 0.01 < 0.5 < pi[0]
        scores.append(np.sum(pi * (e**2 / 36.0 - 1.0)))
        infos.append(2.0 * pi.sum())
    complete = np.mean(infos)
    info = complete - np.var(scores, ddof=1)
    prior = 1.0 / W_SIGMA**2
    step = (np.mean(scores) - prior * math.log(6.0 / 5.0)) / (complete + prior)
    assert abs(step) < 1.0
    value = 6.0 * math.exp(step)
    assert est.estimated and est.value == pytest.approx(value, rel=1e-9)
    assert est.std == pytest.approx(value / math.sqrt(info + prior), rel=1e-9)


def test_a_record_with_exactly_its_prior_s_information_is_estimated():
    """Two unit-weight arrivals: ``I w^2 = 2 * 2 * 0.25 = 1``, the gate's threshold."""
    est = _sigma(_inputs([5.0, 5.0]), 5.0, 5.0)
    assert est.information == 1.0 and est.estimated and est.std == pytest.approx(5.0 / 8**0.5)


def test_a_logit_parameter_s_error_by_the_delta_method():
    """The multipath share ``P`` from 0.2 at its prior's centre (logit width 1): eight
    residuals of 0 and two of 40 and 50 s, ``pi = P(direct | e)``; score ``sum (1 - pi) - P
    n``, information ``n P (1 - P)``, and ``std = P' (1 - P') / sqrt(I + 1)``."""
    e = np.array([0.0] * 8 + [40.0, 50.0])
    model = _model(5.0, multipath=0.2)
    fit = fit_statistics(_inputs(e), model, model, {"multipath"})
    est = fit.estimate("multipath")
    delayed = 1.0 - _direct_share(e, 5.0, 0.2, 20.0)
    info = 10 * 0.2 * 0.8
    phi = math.log(0.2 / 0.8) + (delayed.sum() - 0.2 * 10) / (info + 1.0)
    value = 1.0 / (1.0 + math.exp(-phi))
    assert est.value == pytest.approx(value, rel=1e-12)
    assert est.std == pytest.approx(value * (1 - value) / math.sqrt(info + 1.0), rel=1e-12)


def test_the_lagrangian_motion_s_values_by_name():
    """With the Lagrangian motion its parameters are read from it, the signal's from the
    signal."""
    motion = LagrangianMotion(mean_velocity=(1.5, -2.0), eddy_speed=4.0, time_scale=3.0)
    model = StatisticalModel(_model().signal, 5.0, motion=motion)
    assert model.value("mean_velocity_east") == 1.5
    assert model.value("mean_velocity_north") == -2.0
    assert (model.value("eddy_speed"), model.value("time_scale")) == (4.0, 3.0)
    assert model.value("sigma") == 5.0 and model.value("process_noise") == 5.0
    assert _model().value("sigma") == 5.0
