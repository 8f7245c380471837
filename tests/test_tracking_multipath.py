"""Multipath in the signal model (issue 8): a source's arrival is direct (Gaussian) or, with
probability P_M, delayed by an exponential delay (exponentially modified Gaussian). Checked
against scipy's erfcx, norm and exponnorm (the tabulated terms everywhere on dense grids),
brute-force enumeration, normalisation and a simulation of the generative model."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import special, stats

from rankmodels.errors import InputError
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.engines import log_likelihood
from rankmodels.tracking.engines._common import (
    bipartite_cycle,
    log_match_weight,
    prepare_cycle,
)
from rankmodels.tracking.engines.multipath import (
    TOLERANCE,
    chebyshev_table,
    erfcx_series,
    multipath_tables,
)
from rankmodels.tracking.engines.oracle import enumerate_associations
from rankmodels.tracking.signal_model import SignalModel
from rankmodels_app.track import track_float
from tests.test_tracking_engines import gauss_legendre, random_case


@pytest.mark.parametrize("u", [25.0, 25.1, 80.0, 1e5])
def test_erfcx_series_matches_scipy(u):
    assert erfcx_series(u) == pytest.approx(special.erfcx(u), rel=2e-16)


#: (P_M, sigma, mu_D): the likely default, small and large P_M, delays shorter than sigma.
SHAPES = [(0.02, 5.0, 30.0), (0.05, 5.0, 30.0), (1e-6, 5.0, 30.0), (0.6, 2.0, 6.0), (0.3, 4.0, 1.0)]


def _mixture_logpdf(d: np.ndarray, pm: float, sigma: float, mu: float) -> np.ndarray:
    """``log((1 - P_M) N(d; 0, sigma^2) + P_M EMG(d))`` from scipy's norm and exponnorm."""
    direct = math.log1p(-pm) + stats.norm.logpdf(d, scale=sigma)
    return np.logaddexp(direct, math.log(pm) + stats.exponnorm.logpdf(d, mu / sigma, scale=sigma))


def _relative_log_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest ``|got - want| / max(1, |want|)``: the relative error of a weight whose log is
    ``want`` (or, for weights far below 1, of the log itself)."""
    return float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))


@pytest.mark.parametrize(("pm", "sigma", "mu"), SHAPES)
def test_match_weight_is_the_mixture_density_everywhere(pm, sigma, mu):
    """The tabulated match term, its series (early) and exponential (late) tails against scipy
    at 40,001 residuals from 60 sigma early to 400 s late, through the labels engine (one
    arrival: ``log p(T)``): within the tables' tolerance, 1e-12 relative."""
    model = SignalModel(
        sigma=sigma, p_detect=0.9, clutter_rate=1.0, multipath=pm, multipath_delay=mu, window=9000.0
    )
    d = np.linspace(-60.0 * sigma, 400.0, 40_001)
    toa = np.array([4000.0])
    res = log_likelihood(toa, (toa - d)[:, None], model, engine="labels", labels=np.array([0]))
    want = _mixture_logpdf(d, pm, sigma, mu)
    assert _relative_log_error(res.loglik, want) <= 1.5 * TOLERANCE


@pytest.mark.parametrize("p_detect", [0.9, 0.5, 1.0])
@pytest.mark.parametrize(("pm", "sigma", "mu"), SHAPES)
def test_unmatched_weight_is_the_mixture_survival_everywhere(pm, sigma, mu, p_detect):
    """``log(1 - P_D + P_D P(t > tau))`` from the kernels (table, exponential tail and its
    table, cut-off) against the survival written with scipy's log_ndtr (exponnorm.logsf
    loses the delayed tail far out): one source, nothing recorded, no clutter, tau = W, at
    40,001 predictions from 20 sigma after tau to 1,500 s before it."""
    model = SignalModel(
        sigma=sigma,
        p_detect=p_detect,
        clutter_rate=0.0,
        multipath=pm,
        multipath_delay=mu,
        window=9000.0,
    )
    w = np.linspace(-20.0 * sigma, 1500.0, 40_001)
    res = log_likelihood(np.array([np.nan]), (model.window - w)[:, None], model)
    z, a = w / sigma, sigma / mu  # EMG survival: Q(z) + exp(a^2/2 - a z) Phi(z - a)
    delayed = np.logaddexp(special.log_ndtr(-z), a * a / 2 - a * z + special.log_ndtr(z - a))
    survival = np.logaddexp(math.log1p(-pm) + special.log_ndtr(-z), math.log(pm) + delayed)
    missing = math.log1p(-p_detect) if p_detect < 1 else -math.inf
    want = np.logaddexp(missing, math.log(p_detect) + survival)
    assert _relative_log_error(res.loglik, want) <= 1.5 * TOLERANCE


@pytest.mark.parametrize(("pm", "sigma", "mu"), [*SHAPES, (1e-300, 5.0, 30.0), (0.999, 5.0, 0.005)])
def test_tables_are_checked_to_their_tolerance(pm, sigma, mu):
    """Every table is built (from P_M = 1e-300, whose late transition sits at u = -27 where
    erfcx overflows, to the widest survival table allowed) within its tolerance."""
    a, const, tail = sigma / mu, 0.1, 0.9
    tables = multipath_tables(pm, a, const, tail, 8.7)
    for table in (tables.match, tables.core, tables.tail):
        if table is not None:
            assert 0 <= table.error <= TOLERANCE


def test_a_table_that_cannot_meet_its_tolerance_is_refused():
    with pytest.raises(ValueError, match="needs more than"):
        chebyshev_table(np.sign, -1.0, 1.0, 0.5)


@pytest.mark.parametrize(("pm", "sigma", "mu"), SHAPES)
def test_match_weight_skips_only_pairs_below_the_floor(pm, sigma, mu):
    """The exact engine leaves pairs certainly below a floor unevaluated (-inf): that happens
    (for at least 100 of these residuals), and only where the weight is below it."""
    model = SignalModel(sigma=sigma, multipath=pm, multipath_delay=mu, window=9000.0)
    c = bipartite_cycle(prepare_cycle(np.array([1.0]), model), model)
    d = np.linspace(-80.0 * sigma, 2000.0, 4001)
    weight = np.array([log_match_weight(x, c, -math.inf) for x in d])
    for floor in (-50.0, -20.0, -5.0):
        above = np.array([log_match_weight(x, c, floor) for x in d])
        skipped = above == -math.inf
        assert 100 < skipped.sum() < d.size - 100
        assert np.all(weight[skipped] < floor)
        np.testing.assert_array_equal(above[~skipped], weight[~skipped])


def test_exact_equals_enumeration_on_a_float_like_cycle_with_multipath():
    """Six sources spread over a 1,800 s window, particles around the truth, P_M = 0.02: the
    delayed tails reach across the window, so the exact engine's bound skips pairs here
    (checked), and the result is still the enumerated sum."""
    rng = np.random.default_rng(11)
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, multipath=0.02)
    truth = np.sort(rng.uniform(100.0, 1500.0, 6))
    heard = np.sort(truth[:3] + rng.normal(0.0, 5.0, 3))
    toa = np.append(heard, [truth[4] + 40.0])  # the fifth source delayed by 40 s
    predicted = truth + rng.normal(0.0, 10.0, (20, 6))
    res = log_likelihood(toa, predicted, model, association=True)
    c = bipartite_cycle(prepare_cycle(toa, model), model)
    floor = math.log(model.clutter_rate / model.window) - 60.0 * math.log(2.0)  # and u_i <= 1
    skipped = [
        log_match_weight(t - p, c, floor) == -math.inf for t in toa for p in predicted.ravel()
    ]
    assert sum(skipped) > len(skipped) // 4
    for n in range(predicted.shape[0]):
        want, post = enumerate_associations(toa, predicted[n], model)
        assert res.loglik[n] == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(res.association[n], post, atol=1e-12)


def _with_multipath(model: SignalModel, rng: np.random.Generator) -> SignalModel:
    return dataclasses.replace(
        model, multipath=float(rng.uniform(0.01, 0.6)), multipath_delay=float(rng.uniform(2, 40))
    )


@pytest.mark.parametrize("engine", ["exact", "baseline"])
@pytest.mark.parametrize("seed", range(3))
def test_exact_engines_equal_enumeration_with_multipath(engine, seed):
    rng = np.random.default_rng(800 + seed)
    checked = 0
    for _ in range(25):
        base, toa, predicted = random_case(rng)
        model = _with_multipath(base, rng)
        if engine == "baseline" and model.p_detect == 1.0:
            continue
        res = log_likelihood(toa, predicted, model, engine=engine, association=True)
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], model, ranked=engine == "exact")
            if want == -math.inf:
                assert res.loglik[n] == -math.inf
                continue
            assert res.loglik[n] == pytest.approx(want, rel=1e-12, abs=1e-11)
            np.testing.assert_allclose(res.association[n], post, atol=1e-12)
            checked += 1
    assert checked >= 40


def test_multipath_changes_the_likelihood_as_the_mixture_says():
    """One source, one arrival 40 s after its prediction, P_D = 1, no clutter, r = 1: the
    likelihood is the mixture density itself (scipy's norm and exponnorm)."""
    model = SignalModel(sigma=5.0, p_detect=1.0, clutter_rate=0.0, multipath=0.1)
    res = log_likelihood(np.array([540.0]), np.array([[500.0]]), model)
    want = 0.9 * stats.norm.pdf(540.0, 500.0, 5.0) + 0.1 * stats.exponnorm.pdf(
        540.0, 30.0 / 5.0, 500.0, 5.0
    )
    assert res.loglik[0] == pytest.approx(math.log(want), rel=1e-12)
    plain = log_likelihood(
        np.array([540.0]), np.array([[500.0]]), SignalModel(p_detect=1.0, clutter_rate=0.0)
    )
    assert res.loglik[0] > plain.loglik[0] + 10  # a 8-sigma delay is no longer absurd


def test_far_tails_stay_finite_and_ordered():
    """Arrivals thousands of seconds from the prediction: logs finite, the late side (delay)
    decays linearly in log, the early side quadratically."""
    model = SignalModel(sigma=2.0, p_detect=0.9, clutter_rate=0.0, multipath=0.05, window=9000.0)
    pred = np.array([[4000.0]])
    early = log_likelihood(np.array([1000.0]), pred, model).loglik[0]
    late = log_likelihood(np.array([7000.0]), pred, model).loglik[0]
    assert np.isfinite(late) and late == pytest.approx(
        math.log(0.9 * 0.05 / 30.0) - 3000.0 / 30.0 + 2.0**2 / (2 * 30.0**2), rel=1e-9
    )
    assert early < late  # -(3000/2)^2/2 with no multipath help
    nothing = log_likelihood(np.array([np.nan]), np.array([[-5000.0]]), model).loglik[0]
    assert np.isfinite(nothing)


@pytest.mark.parametrize("r", [1, 2])
def test_exact_density_with_multipath_integrates_to_one(r):
    """P(nothing recorded) + integrals over all ordered records in [0, W] = 1 (delayed arrivals
    beyond W are the model's late ones)."""
    model = SignalModel(
        sigma=2.0, p_detect=0.8, clutter_rate=1.5, window=40.0, multipath=0.3, multipath_delay=6.0
    )
    pred = np.array([[12.0, 21.0]])

    def density(*times):
        toa = np.full(r, np.nan)
        toa[: len(times)] = times
        return math.exp(log_likelihood(toa, pred, model).loglik[0])

    total = density()
    nodes, weights = gauss_legendre(0.0, model.window, panel=1.0)
    total += sum(wt * density(t) for t, wt in zip(nodes, weights, strict=True))
    if r == 2:
        for t1, w1 in zip(nodes, weights, strict=True):
            inner, w2 = gauss_legendre(t1, model.window, panel=1.0)
            total += w1 * sum(wt * density(t1, t2) for t2, wt in zip(inner, w2, strict=True))
    assert total == pytest.approx(1.0, abs=1e-8)


def test_labels_engine_uses_the_mixture():
    model = SignalModel(sigma=3.0, p_detect=0.9, clutter_rate=1.0, multipath=0.2)
    toa = np.array([100.0, 150.0, 170.0, np.nan])
    predicted = np.array([[95.0, 120.0, 168.0], [101.0, 149.0, 150.0]])
    labels = np.array([0, 1, -1, -2])
    res = log_likelihood(toa, predicted, model, engine="labels", labels=labels)

    def mix(t, p):
        return 0.8 * stats.norm.pdf(t, p, 3.0) + 0.2 * stats.exponnorm.pdf(t, 10.0, p, 3.0)

    want = [math.log(mix(100.0, row[0]) * mix(150.0, row[1])) for row in predicted]
    np.testing.assert_allclose(res.loglik, want, rtol=1e-12)


def test_bp_with_multipath_is_close_to_exact():
    """BP's Bethe estimate on small cycles with multipath stays near the exact sum (it is
    exact on trees: one arrival)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        base, toa, predicted = random_case(rng, far=False)
        model = _with_multipath(dataclasses.replace(base, p_detect=min(base.p_detect, 0.95)), rng)
        exact = log_likelihood(toa, predicted, model).loglik
        bp = log_likelihood(toa, predicted, model, engine="bp").loglik
        if not np.isfinite(exact).all():  # impossible records (more arrivals than sources)
            continue
        if np.sum(~np.isnan(toa)) <= 1:
            np.testing.assert_allclose(bp, exact, rtol=1e-9, atol=1e-9)
        else:
            assert np.all(np.abs(bp - exact) < 0.5)


def test_multipath_settings_are_checked():
    with pytest.raises(ValueError, match="multipath must be finite and in"):
        SignalModel(multipath=1.0)
    with pytest.raises(ValueError, match="multipath_delay"):
        SignalModel(multipath_delay=0.0)
    with pytest.raises(ValueError, match=r"multipath_delay must be >= sigma / 1000 = 0.005 s"):
        SignalModel(sigma=5.0, multipath=0.1, multipath_delay=0.004)
    assert SignalModel(sigma=5.0, multipath=0.0, multipath_delay=0.004).multipath_delay == 0.004
    widest = SignalModel(
        sigma=5.0, p_detect=1.0, clutter_rate=0.0, multipath=0.1, multipath_delay=0.005
    )  # the widest tables allowed; scipy's exponnorm cancels ~6 digits at this shape, so the
    # mixture is written with erfcx: (1 - P_M) N (1 + K erfcx((a - z) / sqrt 2))
    res = log_likelihood(np.array([10.0]), np.array([[3.0]]), widest)
    a, z = 1000.0, 7.0 / 5.0
    k = 0.1 / 0.9 * a * math.sqrt(math.pi / 2)
    want = math.log(0.9) + stats.norm.logpdf(7.0, scale=5.0)
    want += math.log1p(k * special.erfcx((a - z) / math.sqrt(2)))
    assert res.loglik[0] == pytest.approx(want, rel=1e-14)
    with pytest.raises(InputError) as err:
        TrackConfig(multipath=0.6)
    assert err.value.field == "multipath"


@pytest.mark.parametrize("value", ["1.5", "nan", "-0.1"])
def test_track_float_multipath_out_of_range_is_one_line(tmp_path, repo_data, value):
    res = CliRunner().invoke(
        track_float,
        [str(repo_data / "float767.nc"), "--out", str(tmp_path / "o"), "--multipath", value],
    )
    assert res.exit_code == 2 and res.output.startswith("Error: --multipath: expected")
    assert res.output.count("\n") == 1
