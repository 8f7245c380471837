"""Multipath in the signal model (issue 8): a source's arrival is direct (Gaussian) or, with
probability P_M, delayed by an exponential delay (exponentially modified Gaussian). Checked
against scipy's erfcx and exponnorm, brute-force enumeration, normalisation and a simulation
of the generative model."""

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
from rankmodels.tracking.engines._common import log_erfcx
from rankmodels.tracking.engines.oracle import enumerate_associations
from rankmodels.tracking.signal_model import SignalModel
from rankmodels_app.track import track_float
from tests.test_tracking_engines import gauss_legendre, random_case


@pytest.mark.parametrize("u", [-30.0, -5.0, -0.3, 0.0, 0.7, 3.0, 24.9, 25.0, 25.1, 80.0, 1e5])
def test_log_erfcx_matches_scipy(u):
    """scipy's erfcx overflows below u ~ -26: there log erfcx = log erfc(u) + u^2."""
    want = math.log(special.erfcx(u)) if u >= 0 else math.log(special.erfc(u)) + u * u
    assert log_erfcx(u) == pytest.approx(want, rel=1e-13, abs=1e-14)


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
    with pytest.raises(InputError) as err:
        TrackConfig(multipath=0.6)
    assert err.value.field == "multipath"
    with pytest.raises(InputError, match="multipath = 0"):
        TrackConfig(engine="minfactor", p_detect=1.0, clutter_rate=0.0, multipath=0.02)
    with pytest.raises(ValueError, match="multipath = 0"):
        log_likelihood(
            np.array([1.0]),
            np.array([[1.0]]),
            SignalModel(p_detect=1.0, clutter_rate=0.0, multipath=0.1),
            engine="minfactor",
        )


@pytest.mark.parametrize("value", ["1.5", "nan", "-0.1"])
def test_track_float_multipath_out_of_range_is_one_line(tmp_path, repo_data, value):
    res = CliRunner().invoke(
        track_float,
        [str(repo_data / "float767.nc"), "--out", str(tmp_path / "o"), "--multipath", value],
    )
    assert res.exit_code == 2 and res.output.startswith("Error: --multipath: expected")
    assert res.output.count("\n") == 1
