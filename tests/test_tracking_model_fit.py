"""The statistical model's M-steps (rankmodels.tracking.model_fit) against a direct
maximisation of the same penalised log-likelihood on data simulated with known values, their
identifiability decisions, and the wording of what a run kept."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import optimize, stats

from rankmodels.tracking.arrival_density import survival
from rankmodels.tracking.calibration import Calibration, CalibrationResult
from rankmodels.tracking.estimates import (
    CANNOT_DETERMINE,
    NO_GAIN,
    OFF_THE_MODEL,
    parameter_reports,
)
from rankmodels.tracking.model_fit import (
    PRIORS,
    FitInputs,
    StatisticalModel,
    fit_statistics,
)
from rankmodels.tracking.signal_model import SignalModel

W = 1800.0


def _converge(inputs, model, params, start=None, steps=200):
    """Iterate the M-step to its fixed point (the penalised maximum)."""
    start = start or model
    for _ in range(steps):
        new = fit_statistics(inputs, model, start, params)
        if all(
            math.isclose(new.value(n), model.value(n), rel_tol=1e-12, abs_tol=1e-14)
            for n, _ in new.estimates
        ):
            return new
        model = new
    raise AssertionError("the M-step did not converge")


def _penalised_max(loglik, name, start_value, lo, hi):
    """Direct maximisation of ``loglik(value) + log prior`` over ``phi`` (scipy)."""
    prior = PRIORS[name]
    phi0 = prior.to_phi(start_value)

    def objective(phi):
        return -(loglik(prior.from_phi(phi)) - 0.5 * (phi - phi0) ** 2 / prior.width**2)

    res = optimize.minimize_scalar(
        objective, bounds=(prior.to_phi(lo), prior.to_phi(hi)), method="bounded",
        options={"xatol": 1e-12},
    )  # fmt: skip
    return prior.from_phi(res.x)


def _one_source_inputs(residual, pred=900.0, trajectories=None):
    """Cycles with one source and one arrival ``pred + residual`` surely from it."""
    n = residual.size
    toa = (pred + residual)[:, None]
    posterior = np.zeros((n, 1, 2))
    posterior[:, 0, 0] = 1.0
    predicted = np.full((1, n, 1), pred) if trajectories is None else trajectories
    return FitInputs(
        toa=toa,
        posterior=posterior,
        predicted=predicted,
        predicted_mean=np.full((n, 1), pred),
        steps_km=np.zeros((1, n, 2)),
        dt=np.ones(n),
    )


def _model(**kw):
    return StatisticalModel(SignalModel(**{"multipath": 0.0, **kw}), 8.0)


def test_sigma_step_reaches_the_penalised_maximum_and_the_truth(rng):
    e = rng.normal(0.0, 3.0, 400)
    inputs = _one_source_inputs(e)
    start = _model(sigma=5.0)
    fit = _converge(inputs, start, {"sigma"})
    est = fit.estimate("sigma")

    def loglik(s):
        return float(np.sum(stats.norm.logpdf(e, scale=s)))

    assert est.estimated
    assert est.value == pytest.approx(_penalised_max(loglik, "sigma", 5.0, 0.1, 50), rel=1e-7)
    assert est.value == pytest.approx(3.0, rel=0.1)
    # the prior pulls towards the start by less than a per cent with 400 arrivals
    assert est.value == pytest.approx(np.sqrt(np.mean(e**2)), rel=0.01)
    assert est.std == pytest.approx(est.value / np.sqrt(2 * 400 + 1 / 0.25), rel=0.05)


def test_sigma_over_position_draws_counts_their_spread(rng):
    """Each trajectory's residuals carry its own position error: the M-step averages e^2
    over the draws (so sigma^2 + position variance), and Louis' information shrinks by the
    spread of the per-trajectory scores (a larger standard error than with one track)."""
    e = rng.normal(0.0, 3.0, 300)
    draws = 900.0 + rng.normal(0.0, 2.0, (50, 300, 1))
    spread = _one_source_inputs(e, trajectories=draws)
    fit = _converge(spread, _model(sigma=5.0), {"sigma"})
    expected = np.sqrt(np.mean((900.0 + e - draws[..., 0]) ** 2))
    assert fit.value("sigma") == pytest.approx(expected, rel=0.01)
    single = _converge(_one_source_inputs(e), _model(sigma=5.0), {"sigma"})
    assert fit.estimate("sigma").std > single.estimate("sigma").std


def test_sigma_weighs_each_draw_by_the_association_it_implies(rng):
    """With the association given each trajectory (``members``), the closed form is
    ``sigma^2 = sum_m sum_k w_mk e_mk^2 / sum_m sum_k w_mk``: a draw that makes an arrival
    clutter leaves that arrival's residual out, where the marginal weight would count it."""
    e = rng.normal(0.0, 3.0, 300)
    draws = 900.0 + rng.normal(0.0, 2.0, (40, 300, 1))
    draws[:20, :150] += 40.0  # half the draws put the float far off for half the cycles
    member_weight = np.ones((300, 40))
    member_weight[:150, :20] = 0.01  # ... where those draws call the arrival clutter
    members = np.zeros((300, 40, 1, 2))
    members[:, :, 0, 0] = member_weight
    members[:, :, 0, 1] = 1.0 - member_weight
    base = _one_source_inputs(e, trajectories=draws)
    joint = replace(base, posterior=members.mean(axis=1), members=members)
    fit = _converge(joint, _model(sigma=5.0), {"sigma"})
    resid = 900.0 + e[None, :] - draws[..., 0]  # (M, K)
    w = member_weight.T
    expected = np.sqrt(np.sum(w * resid**2) / np.sum(w))
    assert fit.value("sigma") == pytest.approx(expected, rel=0.01)
    assert fit.value("sigma") < 5.0  # the marginal weights would count the 40 s residuals
    marginal = _converge(replace(joint, members=None), _model(sigma=5.0), {"sigma"})
    assert marginal.value("sigma") > 2 * fit.value("sigma")


def _detection_inputs(rng, p_detect, n_cycles=600, n_src=6, sigma=5.0):
    """Cycles with fewer arrivals than ranks (censoring at the window's end): source ``i``'s
    prediction lies near the window end, so its survival ``S`` past it is known; it was
    recorded with probability ``P_D (1 - S)``."""
    pred = W - rng.uniform(-8.0, 15.0, (n_cycles, n_src))
    late = stats.norm.sf((W - pred) / sigma)
    recorded = rng.random((n_cycles, n_src)) < p_detect * (1.0 - late)
    r = n_src + 1  # never full: the censoring point is the window's end
    toa = np.full((n_cycles, r), np.nan)
    posterior = np.full((n_cycles, r, n_src + 1), np.nan)
    for t in range(n_cycles):
        srcs = np.flatnonzero(recorded[t])
        toa[t, : srcs.size] = np.sort(rng.uniform(0, W, srcs.size))
        posterior[t, : srcs.size] = 0.0
        posterior[t, np.arange(srcs.size), srcs] = 1.0
    keep = recorded.any(axis=1)
    inputs = FitInputs(
        toa=toa[keep],
        posterior=posterior[keep],
        predicted=pred[None, keep],
        predicted_mean=pred[keep],
        steps_km=np.zeros((1, int(keep.sum()), 2)),
        dt=np.ones(int(keep.sum())),
    )
    return inputs, recorded[keep].astype(float), late[keep]


def test_detection_step_reaches_the_penalised_maximum(rng):
    inputs, rho, late = _detection_inputs(rng, 0.7)
    fit = _converge(inputs, _model(p_detect=0.9), {"pd"})

    def loglik(p):
        return float(np.sum(rho * np.log(p) + (1 - rho) * np.log1p(-p * (1 - late))))

    direct = _penalised_max(loglik, "p_detect", 0.9, 1e-3, 1 - 1e-6)
    assert fit.value("p_detect") == pytest.approx(direct, rel=1e-6)
    assert fit.value("p_detect") == pytest.approx(0.7, abs=0.03)


def test_clutter_step_is_the_count_over_the_observed_window(rng):
    """Full cycles see clutter only up to their last arrival: lambda = counts / exposure."""
    lam, n = 2.0, 800
    last = rng.uniform(300.0, W, n)  # T_r of each (full) cycle
    counts = rng.poisson(lam * last / W)
    r = int(counts.max()) + 1
    toa = np.full((n, r), np.nan)
    posterior = np.full((n, r, 2), np.nan)
    for t in range(n):
        c = counts[t]
        # c clutter arrivals before T_r and the source's arrival closing the record at T_r
        toa[t, :r] = np.r_[np.sort(rng.uniform(0, last[t], c)), np.full(r - c, last[t])]
        posterior[t] = 0.0
        posterior[t, :c, 1] = 1.0
        posterior[t, c:, 0] = 1.0 / (r - c)
    inputs = FitInputs(toa, posterior, np.full((1, n, 1), 900.0), np.full((n, 1), 900.0),
                       np.zeros((1, n, 2)), np.ones(n))  # fmt: skip
    fit = _converge(inputs, _model(clutter_rate=1.0), {"clutter"})
    exposure = last / W

    def loglik(x):
        return float(np.sum(counts * np.log(x) - x * exposure))

    assert fit.value("clutter_rate") == pytest.approx(
        _penalised_max(loglik, "clutter_rate", 1.0, 1e-3, 50), rel=1e-7
    )
    assert fit.value("clutter_rate") == pytest.approx(counts.sum() / exposure.sum(), rel=0.01)
    assert fit.value("clutter_rate") == pytest.approx(lam, rel=0.08)


def test_multipath_steps_reach_the_mixture_maximum(rng):
    sigma, share, delay, n = 4.0, 0.1, 25.0, 4000
    e = rng.normal(0, sigma, n) + (rng.random(n) < share) * rng.exponential(delay, n)
    inputs = _one_source_inputs(e)
    start = StatisticalModel(SignalModel(sigma=sigma, multipath=0.02), 8.0)
    fit = _converge(inputs, start, {"multipath"}, steps=2000)
    prior_s, prior_d = PRIORS["multipath"], PRIORS["multipath_delay"]

    def negative(x):
        p, mu = prior_s.from_phi(x[0]), prior_d.from_phi(x[1])
        mix = np.logaddexp(
            np.log1p(-p) + stats.norm.logpdf(e, scale=sigma),
            np.log(p) + stats.exponnorm.logpdf(e, mu / sigma, scale=sigma),
        )
        pen = (x[0] - prior_s.to_phi(0.02)) ** 2 / prior_s.width**2
        pen += (x[1] - prior_d.to_phi(30.0)) ** 2 / prior_d.width**2
        return -(mix.sum() - 0.5 * pen)

    x0 = [prior_s.to_phi(0.05), prior_d.to_phi(20.0)]
    opts = {"xatol": 1e-9, "fatol": 1e-10}
    res = optimize.minimize(negative, x0, method="Nelder-Mead", options=opts)
    assert fit.value("multipath") == pytest.approx(prior_s.from_phi(res.x[0]), rel=1e-4)
    assert fit.value("multipath_delay") == pytest.approx(prior_d.from_phi(res.x[1]), rel=1e-4)
    assert fit.value("multipath") == pytest.approx(share, abs=0.02)


def test_process_noise_step_is_the_random_walk_variance(rng):
    q, n, m = 5.0, 300, 20
    dt = rng.uniform(0.5, 3.0, n)
    steps = rng.normal(0.0, 1.0, (m, n, 2)) * (q * np.sqrt(dt))[None, :, None]
    inputs = FitInputs(np.full((n, 1), np.nan), np.full((n, 1, 2), np.nan),
                       np.full((m, n, 1), 900.0), np.full((n, 1), 900.0), steps, dt)  # fmt: skip
    fit = _converge(inputs, _model(), {"process-noise"})

    def loglik(x):
        return float(np.mean(np.sum(-2 * np.log(x) - np.sum(steps**2, 2) / (2 * x * x * dt), 1)))

    assert fit.process_noise == pytest.approx(
        _penalised_max(loglik, "process_noise", 8.0, 0.1, 100), rel=1e-7
    )
    assert fit.process_noise == pytest.approx(q, rel=0.05)


def test_survival_is_the_mixture_tail():
    model = SignalModel(sigma=4.0, multipath=0.1, multipath_delay=25.0)
    x = np.array([-10.0, 0.0, 5.0, 40.0])
    expected = 0.9 * stats.norm.sf(x, scale=4.0) + 0.1 * stats.exponnorm.sf(
        x, 25.0 / 4.0, scale=4.0
    )
    np.testing.assert_allclose(survival(x, model), expected, rtol=1e-10)


def test_a_record_too_short_keeps_the_start_and_a_long_one_estimates(rng):
    """Two arrivals say less about sigma than its prior: kept at the start exactly, no
    standard error; four hundred determine it."""
    start = _model(sigma=5.0)
    short = fit_statistics(_one_source_inputs(rng.normal(0, 3, 1)), start, start, {"sigma"})
    est = short.estimate("sigma")
    assert not est.estimated and est.value == 5.0 and math.isnan(est.std)
    assert est.information < 1.0
    long = fit_statistics(_one_source_inputs(rng.normal(0, 3, 400)), start, start, {"sigma"})
    assert long.estimate("sigma").estimated and long.estimate("sigma").information > 100


def _result(best, start=0, params=frozenset({"speed", "sigma"}), models=()):
    nominal = Calibration.nominal(3, 1480.0)
    return CalibrationResult(params, (nominal,) * 3, (0.0,) * 3, (5.0,) * 3, start, best,
                             "no longer rising", 1000, models)  # fmt: skip


def test_kept_values_are_worded_with_their_reason():
    start = _model(sigma=5.0)
    nominal = Calibration.nominal(3, 1480.0)
    reports = {r.name: r for r in parameter_reports(nominal, start, start, _result(1), 1480.0)}
    speed = reports["sound_speed"]
    assert speed.status == "kept" and math.isnan(speed.std)
    assert speed.text() == f"sound speed: kept at the file's 1480.0 m/s — {CANNOT_DETERMINE}"
    assert reports["p_detect"].reason.startswith("not asked for")
    assert reports["sigma"].text() == f"TOA noise sigma: kept at 5.00 s — {CANNOT_DETERMINE}"
    # the EM kept the starting pass: nothing was estimated, and it says so
    no_gain = parameter_reports(nominal, start, start, _result(0), 1480.0)
    assert {r.reason for r in no_gain if r.name in ("sound_speed", "sigma")} == {NO_GAIN}
    # not calibrated at all
    plain = parameter_reports(nominal, start, start, None, 1480.0)
    assert plain[0].text() == "sound speed 1480.0 m/s (not calibrated)"


def test_parameters_the_settings_leave_out_of_the_model_are_never_fitted(rng):
    """P_D = 1, no clutter, no multipath: the model without them, chosen by the settings,
    even where the data would move them; the report names that reason."""
    inputs, _, _ = _detection_inputs(rng, 0.7)
    start = _model(p_detect=1.0, clutter_rate=0.0)
    fit = fit_statistics(inputs, start, start, {"pd", "clutter", "multipath", "sigma"})
    assert {name for name, _ in fit.estimates} == {"sigma"}
    assert (fit.signal.p_detect, fit.signal.clutter_rate, fit.signal.multipath) == (1, 0, 0)
    nominal = Calibration.nominal(3, 1480.0)
    result = _result(1, params=frozenset({"pd", "clutter", "sigma"}))
    reports = {r.name: r for r in parameter_reports(nominal, fit, start, result, 1480.0)}
    assert reports["p_detect"].reason == reports["clutter_rate"].reason == OFF_THE_MODEL
