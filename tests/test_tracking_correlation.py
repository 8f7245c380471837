"""Correlation heights: per-arrival clutter weights in every engine (against the enumeration
oracle), the log-normal model and its M-steps (closed forms, direct maximisation, Louis'
errors), the ``--min-correlation`` cut (its truncation point), the simulator's heights, and
the tracker end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import optimize, stats

from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.correlation import (
    TRUNCATION,
    CorrelationModel,
    apply_min_correlation,
)
from rankmodels.tracking.engines import ENGINE_REGISTRY, log_likelihood
from rankmodels.tracking.engines.oracle import enumerate_associations
from rankmodels.tracking.model_fit import (
    PRIORS,
    FitInputs,
    StatisticalModel,
    _correlation_steps,
    fit_statistics,
    off_the_model,
)
from rankmodels.tracking.passes import Predictor
from rankmodels.tracking.prepared import prepare, start_parameters
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.simulate import correlation_heights, dimes_float767
from rankmodels_app.track import track_float as track_float_cli

MODEL = SignalModel(sigma=4.0, p_detect=0.7, clutter_rate=1.5, window=100.0)
MULTIPATH = SignalModel(sigma=4.0, p_detect=0.8, clutter_rate=0.8, window=100.0, multipath=0.1)
ENGINES = [spec.name for spec in ENGINE_REGISTRY if spec.name != "labels"]
EXACT = [spec.name for spec in ENGINE_REGISTRY if spec.exact and not spec.needs_labels]


def _cycle(rng, m, r=3, s=3):
    """``toa`` (r,) with ``m`` arrivals, ``predicted`` (4, s) and unequal clutter weights."""
    predicted = np.sort(rng.uniform(10, 90, (4, s)), axis=1)
    toa = np.full(r, np.nan)
    toa[:m] = np.sort(predicted[0, :m] + rng.normal(0, 4.0, m))
    weight = np.full(r, np.nan)
    weight[:m] = rng.choice([0.0, 0.05, 0.7, 4.0, 30.0], m, replace=False)
    return toa, predicted, weight


def _run(engine, toa, predicted, model, **kwargs):
    return log_likelihood(toa, predicted, model, engine=engine, association=True, **kwargs)


@pytest.mark.parametrize("engine", ENGINES)
def test_unit_weights_are_bit_identical_to_no_weights(rng, engine):
    for m in (1, 2, 3):
        toa, predicted, _ = _cycle(rng, m)
        plain = _run(engine, toa, predicted, MODEL)
        ones = _run(engine, toa, predicted, MODEL, clutter_weight=np.where(np.isnan(toa), 7, 1.0))
        assert np.array_equal(plain.loglik, ones.loglik)
        assert np.array_equal(plain.association, ones.association)


@pytest.mark.parametrize("engine", EXACT)
@pytest.mark.parametrize("model", [MODEL, MULTIPATH], ids=["plain", "multipath"])
def test_exact_engines_with_unequal_weights_match_enumeration(rng, engine, model):
    ranked = ENGINE_REGISTRY[engine].ranked
    for m in (1, 2, 3):
        for _ in range(3):
            toa, predicted, weight = _cycle(rng, m)
            res = _run(engine, toa, predicted, model, clutter_weight=weight)
            for n in range(predicted.shape[0]):
                want, post = enumerate_associations(
                    toa, predicted[n], model, ranked=ranked, clutter_weight=weight
                )
                assert res.loglik[n] == pytest.approx(want, rel=1e-13)
                np.testing.assert_allclose(res.association[n], post, atol=1e-13)


@pytest.mark.parametrize("engine", EXACT)
def test_exact_engines_with_a_truncation_match_enumeration(rng, engine):
    """Arrivals cut after recording: fewer than ``r`` left but ``tau`` the last rank's time."""
    ranked = ENGINE_REGISTRY[engine].ranked
    for m in (0, 1, 2):
        toa, predicted, weight = _cycle(rng, m)
        tau = float(rng.uniform(toa[m - 1] if m else 0.0, 100.0))
        res = log_likelihood(toa, predicted, MODEL, engine=engine, association=m > 0,
                             clutter_weight=weight, truncation=tau)  # fmt: skip
        default = log_likelihood(toa, predicted, MODEL, engine=engine, clutter_weight=weight)
        assert not np.allclose(res.loglik, default.loglik)
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], MODEL, ranked=ranked,
                                                clutter_weight=weight, truncation=tau)  # fmt: skip
            assert res.loglik[n] == pytest.approx(want, rel=1e-13)
            if m:
                np.testing.assert_allclose(res.association[n], post, atol=1e-13)


@pytest.mark.parametrize("engine", ["bp", "minfactor"])
def test_message_passing_engines_are_exact_with_one_arrival(rng, engine):
    """One recorded arrival: both graphs are trees, so BP is exact with any weight."""
    for _ in range(5):
        toa, predicted, weight = _cycle(rng, 1)
        weight[0] = rng.uniform(0.01, 40.0)
        res = _run(engine, toa, predicted, MODEL, clutter_weight=weight)
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], MODEL, clutter_weight=weight)
            assert res.loglik[n] == pytest.approx(want, rel=1e-12)
            np.testing.assert_allclose(res.association[n], post, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_common_weight_is_the_clutter_rate_scaled(rng, engine):
    """``w_j = w`` for every arrival is the model with ``lambda w`` except for the Poisson
    count term ``-lambda (1 - q)`` (closed form), in every engine."""
    w = 2.5
    for m in (2, 3):
        toa, predicted, _ = _cycle(rng, m)
        weighted = _run(engine, toa, predicted, MODEL, clutter_weight=np.full(3, w))
        scaled = SignalModel(sigma=4.0, p_detect=0.7, clutter_rate=1.5 * w, window=100.0)
        plain = _run(engine, toa, predicted, scaled)
        q = 1.0 - toa[-1] / 100.0 if m == 3 else 0.0
        shift = -1.5 * (1 - q) + 1.5 * w * (1 - q)
        np.testing.assert_allclose(weighted.loglik, plain.loglik + shift, rtol=1e-12)
        np.testing.assert_allclose(weighted.association, plain.association, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_clutter_posteriors_follow_the_weights(rng, engine):
    """Raising one arrival's weight raises its clutter posterior; weight 0 makes it a
    source's for sure."""
    toa, predicted, _ = _cycle(rng, 3)
    clutter = []
    for w in (0.0, 0.3, 1.0, 3.0, 10.0):
        weight = np.array([1.0, w, 1.0])
        clutter.append(_run(engine, toa, predicted, MODEL, clutter_weight=weight).association)
    assert np.all(clutter[0][:, 1, -1] == 0.0)
    post = np.array([c[:, 1, -1] for c in clutter])  # (weights, N)
    assert np.all(np.diff(post, axis=0) >= -1e-12) and np.all(post[-1] > post[0])


def test_bad_weights_and_truncations_are_refused():
    toa = np.array([20.0, 40.0, np.nan])
    pred = np.array([[21.0, 41.0, 60.0]])
    for weight, match in (
        (np.ones(2), r"clutter_weight must have shape \(3,\)"),
        (np.array([1.0, -1.0, 1.0]), "finite values >= 0"),
        (np.array([1.0, np.nan, 1.0]), "finite values >= 0"),
    ):
        with pytest.raises(ValueError, match=match):
            log_likelihood(toa, pred, MODEL, clutter_weight=weight)
    for tau in (39.0, 100.5, -1.0):
        with pytest.raises(ValueError, match="truncation must lie between"):
            log_likelihood(toa, pred, MODEL, truncation=tau)


# --- the log-normal model


def test_densities_and_ratio_are_the_log_normals():
    model = CorrelationModel(4.4, 0.3, 3.5, 0.45)
    c = np.array([[12.0, 33.0, np.nan], [80.0, 0.0, -2.0]])
    f_s = stats.lognorm(0.3, scale=math.exp(4.4)).logpdf(c)
    f_c = stats.lognorm(0.45, scale=math.exp(3.5)).logpdf(c)
    usable = np.isfinite(c) & (c > 0)
    np.testing.assert_allclose(model.log_source_density(c)[usable], f_s[usable], rtol=1e-13)
    np.testing.assert_allclose(
        model.clutter_weight(c)[usable], np.exp(f_c - f_s)[usable], rtol=1e-12
    )
    assert np.all(model.clutter_weight(c)[~usable] == 1.0)
    assert np.all(model.log_source_density(c)[~usable] == 0.0)


def test_pooled_start_is_uninformative():
    c = np.array([[30.0, 60.0], [90.0, np.nan]])
    pooled = CorrelationModel.pooled(c)
    x = np.log([30.0, 60.0, 90.0])
    assert pooled == CorrelationModel(x.mean(), x.std(), x.mean(), x.std())
    assert np.all(pooled.clutter_weight(c) == 1.0)
    assert CorrelationModel.pooled(np.array([5.0, np.nan, 0.0])) is None
    with pytest.raises(ValueError, match="source_spread must be >= 0.01"):
        CorrelationModel(1.0, 0.0, 1.0, 1.0)


def _mixture_loglik(x, theta):
    """Mean log-likelihood of the log-normal two-component mixture (on ``log c``, up to the
    Jacobian) at ``theta = (mu_S, log s_S, mu_C, log s_C, logit share_S)``."""
    mu_s, log_s_s, mu_c, log_s_c, logit = theta
    share = 1.0 / (1.0 + math.exp(-logit))
    dens_s = share * stats.norm.pdf(x, mu_s, math.exp(log_s_s))
    dens_c = (1.0 - share) * stats.norm.pdf(x, mu_c, math.exp(log_s_c))
    return float(np.mean(np.log(dens_s + dens_c)))


def test_heights_mixture_is_the_maximum_likelihood_fit(rng):
    """The start from the heights alone is the mixture's maximum-likelihood fit (checked by
    direct maximisation), with the larger-mean component the sources'."""
    x = np.concatenate([rng.normal(4.4, 0.3, 3000), rng.normal(3.4, 0.4, 300)])
    c = np.exp(rng.permutation(x)).reshape(-1, 2)
    fitted = CorrelationModel.from_heights(c)
    best = optimize.minimize(
        lambda th: -_mixture_loglik(x, th), [4.0, math.log(0.5), 3.0, math.log(0.5), 1.0],
        method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 20000},
    )  # fmt: skip
    mu_s, log_s_s, mu_c, log_s_c, _ = best.x
    assert fitted.source_mean == pytest.approx(mu_s, abs=1e-3)
    assert fitted.source_spread == pytest.approx(math.exp(log_s_s), abs=1e-3)
    assert fitted.clutter_mean == pytest.approx(mu_c, abs=2e-3)
    assert fitted.clutter_spread == pytest.approx(math.exp(log_s_c), abs=2e-3)
    assert fitted.clutter_mean == pytest.approx(3.4, abs=0.2)


def test_heights_mixture_falls_back_to_the_pooled_start():
    """Heights with nothing to separate (all equal, or a component left with one height)
    start uninformative; too few, no model."""
    same = np.full((10, 3), 50.0)
    fitted = CorrelationModel.from_heights(same)
    assert np.all(fitted.clutter_weight(same) == pytest.approx(1.0, abs=1e-9))
    assert fitted.source_mean == pytest.approx(math.log(50.0), abs=1e-12)
    assert CorrelationModel.from_heights(np.array([5.0, np.nan])) is None
    lone = np.r_[np.exp(np.random.default_rng(0).normal(4.0, 0.3, 200)), 1.0]
    assert CorrelationModel.from_heights(lone) == CorrelationModel.pooled(lone)  # one outlier


# --- the M-steps


def _inputs(x, a_clutter):
    """FitInputs of one rank per cycle: heights ``exp(x)``, clutter posteriors ``a``."""
    t = x.size
    post = np.stack([1.0 - a_clutter, a_clutter], axis=1)[:, None, :]  # one source
    return FitInputs(
        toa=np.full((t, 1), 10.0), posterior=post, predicted=np.zeros((1, t, 1)),
        predicted_mean=np.zeros((t, 1)), steps_km=np.zeros((1, t, 2)), dt=np.ones(t),
        correlation=np.exp(x)[:, None],
    )  # fmt: skip


def _iterate(inputs, start, n=60):
    current = start
    for _ in range(n):
        est = _correlation_steps(inputs, current, start)
        current = CorrelationModel(*(est[f"correlation_{p}"].value for p in (
            "source_mean", "source_spread", "clutter_mean", "clutter_spread")))  # fmt: skip
    return current, est


def test_m_step_fixed_point_is_the_penalised_weighted_maximum(rng):
    """Iterated M-steps end where the penalised expected complete-data log-likelihood
    (weights ``1 - a`` for the source component, ``a`` for clutter) is largest."""
    x = np.r_[rng.normal(4.4, 0.3, 300), rng.normal(3.4, 0.4, 60)]
    a = np.r_[rng.uniform(0.0, 0.2, 300), rng.uniform(0.7, 1.0, 60)]
    inputs = _inputs(x, a)
    start = CorrelationModel.pooled(np.exp(x))
    fitted, _ = _iterate(inputs, start)
    for part, w in (("source", 1 - a), ("clutter", a)):
        mean_prior = PRIORS[f"correlation_{part}_mean"].width
        spread_prior = PRIORS[f"correlation_{part}_spread"].width

        def objective(phi, w=w, mean_prior=mean_prior, spread_prior=spread_prior):
            mu, log_s = phi
            ll = np.sum(w * (-log_s - 0.5 * (x - mu) ** 2 / math.exp(2 * log_s)))
            prior = -0.5 * ((mu - start.source_mean) / mean_prior) ** 2
            prior -= 0.5 * ((log_s - math.log(start.source_spread)) / spread_prior) ** 2
            return -(ll + prior)

        best = optimize.minimize(objective, [start.source_mean, math.log(start.source_spread)])
        got = (getattr(fitted, f"{part}_mean"), math.log(getattr(fitted, f"{part}_spread")))
        np.testing.assert_allclose(got, best.x, atol=1e-5)
    assert fitted.source_mean > 4.2 and fitted.clutter_mean < fitted.source_mean - 0.4


def test_hard_labels_give_the_closed_forms_and_their_errors(rng):
    """With posteriors 0 or 1 nothing is missing: a flat enough prior's fixed point is the
    weighted mean and standard deviation, the error ``1 / sqrt(n / s^2 + 1 / w^2)``."""
    x = np.r_[rng.normal(4.4, 0.3, 2000), rng.normal(3.4, 0.4, 500)]
    a = np.r_[np.zeros(2000), np.ones(500)]
    start = CorrelationModel.pooled(np.exp(x))
    fitted, est = _iterate(_inputs(x, a), start)
    src, clu = x[:2000], x[2000:]
    assert fitted.source_mean == pytest.approx(src.mean(), abs=2e-4)
    assert fitted.clutter_mean == pytest.approx(clu.mean(), abs=2e-3)
    assert fitted.source_spread == pytest.approx(src.std(), rel=2e-3)
    assert fitted.clutter_spread == pytest.approx(clu.std(), rel=5e-3)
    w = PRIORS["correlation_clutter_mean"].width
    want = 1.0 / math.sqrt(500 / fitted.clutter_spread**2 + 1 / w**2)
    assert est["correlation_clutter_mean"].std == pytest.approx(want, rel=1e-3)
    assert all(e.estimated for e in est.values())


def test_uncertain_labels_widen_the_errors(rng):
    """Louis: the Bernoulli labels' missing information ``sum a (1 - a) g^2`` comes off the
    complete-data information ``sum a / s^2``, so soft labels give larger errors than the
    same weights known; a handful of arrivals cannot determine a component."""
    x = np.r_[rng.normal(4.4, 0.3, 400), rng.normal(3.4, 0.4, 100)]
    start = CorrelationModel.pooled(np.exp(x))
    model = CorrelationModel(4.4, 0.3, 3.4, 0.4)
    a = np.r_[np.full(400, 0.1), np.full(100, 0.9)]
    est = _correlation_steps(_inputs(x, a), model, start)["correlation_clutter_mean"]
    w = PRIORS["correlation_clutter_mean"].width
    complete = a.sum() / 0.4**2
    missing = np.sum(a * (1 - a) * ((x - 3.4) / 0.4**2) ** 2)
    info = max(complete - missing, 0.3 * complete)
    assert est.std == pytest.approx(1.0 / math.sqrt(info + 1 / w**2), rel=1e-12)
    assert est.std > 1.0 / math.sqrt(complete + 1 / w**2)
    few = _correlation_steps(_inputs(x[:3], np.array([0.01, 0.01, 0.01])), model, start)
    assert not few["correlation_clutter_mean"].estimated  # the record cannot determine it
    assert few["correlation_clutter_mean"].value == start.clutter_mean


def test_fit_statistics_fits_correlation_only_with_heights(rng):
    x = np.r_[rng.normal(4.4, 0.3, 300), rng.normal(3.4, 0.4, 60)]
    a = np.r_[np.zeros(300), np.ones(60)]
    inputs = _inputs(x, a)
    signal = SignalModel()
    with_heights = StatisticalModel(signal, 8.0, correlation=CorrelationModel.pooled(np.exp(x)))
    out = fit_statistics(inputs, with_heights, with_heights, {"correlation"})
    assert {name for name, _ in out.estimates} == {
        "correlation_source_mean", "correlation_source_spread",
        "correlation_clutter_mean", "correlation_clutter_spread",
    }  # fmt: skip
    assert out.correlation.clutter_mean < out.correlation.source_mean
    assert out.signal == signal
    without = StatisticalModel(signal, 8.0)
    assert "correlation" in off_the_model(without)
    assert fit_statistics(inputs, without, without, {"correlation"}) == without


# --- the cut


def test_min_correlation_cut_keeps_the_truncation_point():
    rec, _ = dimes_float767(seed=3, days=6, correlations=True)
    toa = rec["toa"].values.astype(float)
    corr = rec["correlation"].values.copy()
    corr[0, :] = [10, 80, 10, 80]  # full cycle, two cut
    corr[1, 1] = np.nan  # no height: kept
    rec["correlation"] = (("cycle", "rank"), corr)
    cut = apply_min_correlation(rec, 50.0)
    assert np.array_equal(cut["toa"].values[0, :2], rec["toa"].values[0, [1, 3]])
    assert np.isnan(cut["toa"].values[0, 2:]).all()
    assert np.array_equal(cut["source_label"].values[0], [*rec["source_label"].values[0, [1, 3]],
                                                          NO_ARRIVAL, NO_ARRIVAL])  # fmt: skip
    full = ~np.isnan(toa).any(axis=1)
    assert np.array_equal(cut[TRUNCATION].values, np.where(full, toa[:, -1], 1800.0))
    kept = np.isfinite(cut["toa"].values)
    assert not np.any(cut["correlation"].values[kept] < 50.0)
    assert kept.sum() == np.sum(np.isfinite(toa) & ~(corr < 50.0))


def test_the_cut_record_is_tracked_with_its_truncation(rng):
    """The tracker's cycle likelihood of a cut record is the oracle's with ``tau = T_r`` of
    the cycle as recorded."""
    rec, _ = dimes_float767(seed=4, days=8, correlations=True)
    config = TrackConfig(particles=50, min_correlation=70.0)
    cut = apply_min_correlation(rec, 70.0)
    prepared = prepare(cut, config)
    params = start_parameters(prepared, config)
    predictor = Predictor(prepared, params)
    x = np.array([[-56.4, -104.5], [-56.0, -103.0]])
    for t in range(prepared.n_cycles):
        if not prepared.has_data[t]:
            continue
        got = predictor.evaluate(t, x, association=False).loglik
        pred = predictor.predicted(t, x)
        for n in range(2):
            want, _ = enumerate_associations(prepared.toa[t], pred[n], params.signal,
                                             truncation=prepared.truncation[t])  # fmt: skip
            assert got[n] == pytest.approx(want, rel=1e-12)


def test_min_correlation_needs_heights():
    rec, _ = dimes_float767(seed=3, days=4)
    with pytest.raises(ValueError, match="needed by --min-correlation"):
        apply_min_correlation(rec, 10.0)


# --- the pass


def test_pass_loglik_is_the_density_of_times_and_heights(rng):
    """With a correlation model each cycle's log-likelihood is the engine's with the ratio
    weights plus ``sum_j log f_S(c_j)``, and the clutter posteriors move the heights' way."""
    rec, _ = dimes_float767(seed=5, days=10, correlations=True)
    config = TrackConfig(particles=50, calibrate=True)
    prepared = prepare(rec, config)
    params = start_parameters(prepared, config)
    assert params.model.correlation == CorrelationModel.from_heights(
        np.where(np.isnan(prepared.toa), np.nan, prepared.correlation)
    )  # the heights' own start
    model = CorrelationModel(4.4, 0.3, 3.4, 0.4)
    fitted = type(params)(params.calibration, type(params.model)(
        params.signal, params.model.process_noise, correlation=model))  # fmt: skip
    x = np.array([[-56.3, -104.9], [-56.5, -104.0]])
    t = int(np.flatnonzero(prepared.has_data)[0])
    c = prepared.correlation[t]
    res = Predictor(prepared, fitted).evaluate(t, x, association=True)
    plain = Predictor(prepared, type(params)(params.calibration, type(params.model)(
        params.signal, params.model.process_noise))).evaluate(t, x, association=True)  # fmt: skip
    direct = log_likelihood(
        prepared.toa[t], Predictor(prepared, fitted).predicted(t, x), params.signal,
        association=True, clutter_weight=model.clutter_weight(c),
    )  # fmt: skip
    recorded = np.isfinite(prepared.toa[t])
    f_s = stats.lognorm(0.3, scale=math.exp(4.4)).logpdf(c[recorded]).sum()
    np.testing.assert_allclose(res.loglik, direct.loglik + f_s, rtol=1e-13)
    low = np.argmin(np.where(recorded, c, np.inf))
    ratio = model.clutter_weight(c)[low]
    shift = res.association[:, low, -1] - plain.association[:, low, -1]
    assert np.all(np.sign(shift) == np.sign(ratio - 1.0))
    pooled = type(params)(params.calibration, type(params.model)(
        params.signal, params.model.process_noise,
        correlation=CorrelationModel.pooled(prepared.correlation)))  # fmt: skip
    uninformative = Predictor(prepared, pooled).evaluate(t, x, association=True)
    np.testing.assert_array_equal(uninformative.association, plain.association)


def test_uncalibrated_runs_and_records_without_heights_have_no_model():
    rec, _ = dimes_float767(seed=5, days=10, correlations=True)
    prepared = prepare(rec, TrackConfig())
    assert start_parameters(prepared, TrackConfig()).model.correlation is None
    plain, _ = dimes_float767(seed=5, days=10)
    calibrated = TrackConfig(calibrate=True)
    assert start_parameters(prepare(plain, calibrated), calibrated).model.correlation is None


# --- the simulator


def test_simulated_heights_have_their_own_stream():
    with_heights, truth = dimes_float767(seed=9, days=200, correlations=True)
    without, truth0 = dimes_float767(seed=9, days=200)
    assert with_heights.drop_vars("correlation").identical(without)
    assert truth.identical(truth0)
    c, label = with_heights["correlation"].values, truth["true_label"].values
    assert np.array_equal(np.isnan(c), np.isnan(with_heights["toa"].values))
    assert np.all(c[np.isfinite(c)] >= 1) and np.all(
        c[np.isfinite(c)] == np.round(c[np.isfinite(c)])
    )
    assert np.nanmean(c[label >= 0]) > 70 > 40 > np.nanmean(c[label == CLUTTER])


def test_simulated_heights_fall_with_range_and_multipath(rng):
    label = np.zeros((20000, 1), dtype=int)
    near = correlation_heights(label, np.zeros((20000, 1)), None, np.random.default_rng(1))
    far = correlation_heights(label, np.full((20000, 1), 3000.0), None, np.random.default_rng(1))
    delayed = correlation_heights(
        label, np.zeros((20000, 1)), np.full((20000, 1), 20.0), np.random.default_rng(1)
    )
    assert near.mean() == pytest.approx(90.0, rel=0.01)
    assert far.mean() == pytest.approx(60.0, rel=0.01)
    assert delayed.mean() == pytest.approx(63.0, rel=0.01)
    clutter = correlation_heights(
        np.full((20000, 1), CLUTTER), np.zeros((20000, 1)), None, np.random.default_rng(2)
    )
    assert clutter.mean() == pytest.approx(35.0, rel=0.02) and clutter.min() >= 15


# --- the command line


@pytest.fixture(scope="module")
def small_record(tmp_path_factory):
    from rankmodels.tracking.records import write_float

    folder = tmp_path_factory.mktemp("corr")
    rec, _ = dimes_float767(seed=6, days=12, correlations=True)
    write_float(rec, folder / "f.nc")
    plain, _ = dimes_float767(seed=6, days=12)
    write_float(plain, folder / "plain.nc")
    return folder


@pytest.mark.parametrize("value", ["-1", "nan", "2e6", "x"])
def test_bad_min_correlation_exits_2_with_one_line(small_record, tmp_path, value):
    done = CliRunner().invoke(
        track_float_cli,
        [str(small_record / "f.nc"), "-o", str(tmp_path / "o"), "--min-correlation", value],
    )
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--min-correlation" in lines[0], done.output


def test_min_correlation_without_heights_exits_2_naming_the_file(small_record, tmp_path):
    done = CliRunner().invoke(
        track_float_cli,
        [str(small_record / "plain.nc"), "-o", str(tmp_path / "o"), "--min-correlation", "40"],
    )
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "plain.nc" in lines[0] and "correlation" in lines[0]


def test_track_float_cuts_and_fits_heights_end_to_end(small_record, tmp_path):
    import xarray as xr

    args = [str(small_record / "f.nc"), "--particles", "300", "--calibration-particles", "200",
            "--calibration-iterations", "1", "--no-plots", "-q"]  # fmt: skip
    done = CliRunner().invoke(track_float_cli, [*args, "-o", str(tmp_path / "a")])
    assert done.exit_code == 0, done.output
    done = CliRunner().invoke(
        track_float_cli, [*args, "-o", str(tmp_path / "b"), "--min-correlation", "60"]
    )
    assert done.exit_code == 0, done.output
    with (
        xr.open_dataset(tmp_path / "a" / "track.nc") as a,
        xr.open_dataset(tmp_path / "b" / "track.nc") as b,
    ):
        assert "min_correlation" not in a.attrs and b.attrs["min_correlation"] == 60.0
        assert np.isfinite(b["toa"].values).sum() < np.isfinite(a["toa"].values).sum()
        for name in ("source_mean", "clutter_mean"):
            var = a[f"correlation_{name}"]
            assert var.attrs["status"] in ("estimated", "kept") and "start" in var.attrs
            assert f"correlation_{name}_std" in a


def test_annealing_passes_run_without_the_heights():
    """An inflated pass (annealing) drops the correlation model; the configured noise keeps it."""
    rec, _ = dimes_float767(seed=5, days=10, correlations=True)
    config = TrackConfig(particles=50, calibrate=True)
    params = start_parameters(prepare(rec, config), config)
    assert params.model.correlation is not None
    assert params.inflated(4.0).model.correlation is None
    assert params.inflated(1.0).model.correlation is params.model.correlation
