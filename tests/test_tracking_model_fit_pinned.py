"""The statistical M-steps pinned by their gradients: for each parameter, one step from a
current value away from its prior's centre moves ``phi`` by ``L'(phi) / (I_c + 1 / w^2)``,
with ``L`` the penalised complete-data log-likelihood written out from the module docstring
(prior included) and differentiated numerically, and ``I_c`` the stated information."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from rankmodels.tracking.arrival_density import direct_path_share
from rankmodels.tracking.model_fit import PRIORS, FitInputs, StatisticalModel, fit_statistics
from rankmodels.tracking.signal_model import SignalModel

T, R = 40, 3


def _inputs(rng, delay: float = 0.0) -> FitInputs:
    """Cycles with two sources (predicted at 400 and 1100 s) and up to three ranks; some
    cycles with every rank recorded, some with fewer; source 1 delayed by ``delay`` s in
    every fourth cycle; one trajectory."""
    pred = np.tile([400.0, 1100.0], (T, 1))
    toa = np.full((T, R), np.nan)
    post = np.full((T, R, 3), np.nan)
    for t in range(T):
        times = [400.0 + rng.normal(0, 6.0), 1100.0 + delay * (t % 4 == 0) + rng.normal(0, 6.0)]
        times += [rng.uniform(0, 1800.0)] if t % 3 else []
        times = np.sort(times)[: R - (t % 5 == 0)]
        toa[t, : times.size] = times
        for j, x in enumerate(times):
            p = rng.uniform(0.6, 1.0)
            post[t, j] = (
                [p, 0.0, 1 - p] if abs(x - 400) < 30
                else [0.0, p, 1 - p] if abs(x - 1110) < 50
                else [0.0, 0.0, 1.0]
            )  # fmt: skip
    steps = rng.normal(0.0, 7.0, (1, T, 2))
    return FitInputs(toa, post, pred[None], pred, steps, np.full(T, 1.0 + 0.5 * (np.arange(T) % 2)))


def _newton_check(name, l_of_phi, info, current, start, estimate):
    """``estimate`` moved ``phi`` from ``current`` by ``L'(phi) / (info + 1 / w^2)``."""
    prior = PRIORS[name]
    phi0, phi = prior.to_phi(start), prior.to_phi(current)

    def penalised(x):
        return l_of_phi(x) - 0.5 * (x - phi0) ** 2 / prior.width**2

    h = 1e-5
    slope = (penalised(phi + h) - penalised(phi - h)) / (2 * h)
    step = prior.to_phi(estimate.value) - phi
    assert abs(step) < 1.0  # not clipped at MAX_STEP
    assert step * (info + 1.0 / prior.width**2) == pytest.approx(slope, rel=1e-6, abs=1e-6)


@pytest.fixture
def case(rng):
    start = SignalModel(sigma=5.0, p_detect=0.8, clutter_rate=1.0, window=1800.0, multipath=0.0)
    current = replace(start, sigma=6.0, p_detect=0.7, clutter_rate=1.4)
    return _inputs(rng), current, start


def test_sigma_step_follows_the_penalised_gradient(case):
    inputs, model, start = case
    est = fit_statistics(inputs, StatisticalModel(model, 6.0), StatisticalModel(start, 6.0),
                         {"sigma"}).estimate("sigma")  # fmt: skip
    a = np.nan_to_num(inputs.posterior[:, :, :2])
    t, j, i = np.nonzero(a >= 1e-3)
    w, e = a[t, j, i], inputs.toa[t, j] - inputs.predicted[0, t, i]

    def loglik(phi):
        s = math.exp(phi)
        return float(np.sum(w * (-math.log(s) - e**2 / (2 * s * s))))

    _newton_check("sigma", loglik, 2.0 * w.sum(), 6.0, 5.0, est)


def test_detection_step_follows_the_penalised_gradient(case):
    """``l = sum rho log P_D + (1 - rho) log(1 - P_D (1 - S))`` over the active sources of
    cycles with arrivals; ``S`` the chance of arriving after the last recorded arrival when
    every rank was recorded, else after the window. Information: ``-l''(p)`` times
    ``(dp/dphi)^2``."""
    inputs, model, start = case
    est = fit_statistics(inputs, StatisticalModel(model, 6.0), StatisticalModel(start, 6.0),
                         {"pd"}).estimate("p_detect")  # fmt: skip
    full = ~np.isnan(inputs.toa).any(axis=1)
    censor = np.where(full, np.nan_to_num(inputs.toa[:, -1]), 1800.0)
    late = stats.norm.sf((censor[:, None] - inputs.predicted_mean) / model.sigma)
    rho = np.clip(np.nansum(inputs.posterior[:, :, :2], axis=1), 0, 1)

    def loglik_p(p):
        return float(np.sum(rho * np.log(p) + (1 - rho) * np.log(1 - p * (1 - late))))

    def loglik(phi):
        return loglik_p(1.0 / (1.0 + math.exp(-phi)))

    p, h = 0.7, 1e-5
    curvature = (loglik_p(p + h) - 2 * loglik_p(p) + loglik_p(p - h)) / h**2
    _newton_check("p_detect", loglik, -curvature * (p * (1 - p)) ** 2, 0.7, 0.8, est)


def test_clutter_step_follows_the_penalised_gradient(case):
    """``l = c log lambda - lambda sum e``: ``c`` the posterior clutter count, ``e`` the
    share of each cycle's window observed (up to the last arrival when all ranks were
    recorded, the whole window otherwise); information ``lambda sum e``."""
    inputs, model, start = case
    est = fit_statistics(inputs, StatisticalModel(model, 6.0), StatisticalModel(start, 6.0),
                         {"clutter"}).estimate("clutter_rate")  # fmt: skip
    full = ~np.isnan(inputs.toa).any(axis=1)
    exposure = np.where(full, np.nan_to_num(inputs.toa[:, -1]) / 1800.0, 1.0).sum()
    count = np.nansum(inputs.posterior[:, :, 2])

    def loglik(phi):
        return count * phi - math.exp(phi) * exposure

    _newton_check("clutter_rate", loglik, 1.4 * exposure, 1.4, 1.0, est)


def test_process_noise_step_follows_the_penalised_gradient(case):
    """``l = sum_t (-2 log q - |dX_t|^2 / (2 q^2 dt_t))``; information ``4 n``."""
    inputs, model, start = case
    est = fit_statistics(inputs, StatisticalModel(model, 6.0), StatisticalModel(start, 8.0),
                         {"process-noise"}).estimate("process_noise")  # fmt: skip
    sq = np.sum(inputs.steps_km[0] ** 2, axis=1) / inputs.dt

    def loglik(phi):
        return float(np.sum(-2.0 * phi - 0.5 * sq * math.exp(-2.0 * phi)))

    _newton_check("process_noise", loglik, 4.0 * T, 6.0, 8.0, est)


def test_multipath_steps_follow_the_penalised_gradients(rng):
    """Share: ``l = sum a ((1 - pi) log P_M + pi log(1 - P_M))`` with ``pi = P(direct | e)``
    at the current model, information ``P_M (1 - P_M) sum a``. Delay: ``l = sum a (1 - pi)
    (-log mu_D - E[D | e] / mu_D)``, ``E[D | e]`` the mean of ``N(e - sigma^2 / mu_D,
    sigma^2)`` truncated to ``D >= 0``, information ``sum a (1 - pi)``."""
    start = SignalModel(sigma=5.0, p_detect=0.8, clutter_rate=1.0, window=1800.0,
                        multipath=0.05, multipath_delay=30.0)  # fmt: skip
    model = replace(start, multipath=0.15, multipath_delay=24.0)
    inputs = _inputs(rng, delay=25.0)
    fit = fit_statistics(inputs, StatisticalModel(model, 6.0), StatisticalModel(start, 6.0),
                         {"multipath"})  # fmt: skip
    a = np.nan_to_num(inputs.posterior[:, :, :2])
    t, j, i = np.nonzero(a >= 1e-3)
    w, e = a[t, j, i], inputs.toa[t, j] - inputs.predicted_mean[t, i]
    delayed = w * (1.0 - direct_path_share(e, model))

    def share_loglik(phi):
        p = 1.0 / (1.0 + math.exp(-phi))
        return float(np.sum(delayed * math.log(p) + (w - delayed) * math.log(1 - p)))

    info = 0.15 * 0.85 * w.sum()
    _newton_check("multipath", share_loglik, info, 0.15, 0.05, fit.estimate("multipath"))
    s, mu = 5.0, 24.0
    mean = e - s * s / mu
    expected = mean + s * stats.norm.pdf(mean / s) / stats.norm.cdf(mean / s)

    def delay_loglik(phi):
        return float(np.sum(delayed * (-phi - expected / math.exp(phi))))

    _newton_check("multipath_delay", delay_loglik, delayed.sum(), 24.0, 30.0,
                  fit.estimate("multipath_delay"))  # fmt: skip
