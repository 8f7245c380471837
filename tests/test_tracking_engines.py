"""Likelihood engines of the RAFOS tracker: exact sums, normalisation, simulation, validation."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import rankmodels.tracking.engines._common as common
from rankmodels.tracking.engines import ENGINES, LikelihoodResult, log_likelihood
from rankmodels.tracking.engines._common import parallel_pays, particle_seconds
from rankmodels.tracking.engines.exact import MAX_ARRIVALS
from rankmodels.tracking.engines.oracle import enumerate_associations
from rankmodels.tracking.signal_model import SignalModel


def random_case(rng: np.random.Generator, *, far: bool = True):
    """A small random cycle: model, toa (r,) with trailing NaN, predicted (5, s).

    Arrival times start 15 s before the window so that some cannot be clutter (its density is
    0 outside ``[0, W]``) and some cycles end before it (``tau < 0``).
    """
    s = int(rng.integers(1, 5))
    r = int(rng.integers(1, 4))
    window = 100.0
    model = SignalModel(
        sigma=float(rng.uniform(1, 10)),
        p_detect=float(rng.choice([1.0, rng.uniform(0.3, 1.0)])),
        clutter_rate=float(rng.choice([0.0, rng.uniform(0.1, 3.0)])),
        window=window,
    )
    m = int(rng.integers(0, r + 1))
    toa = np.full(r, np.nan)
    toa[:m] = np.sort(rng.uniform(-15, window, m))
    predicted = rng.uniform(-10, 110, (5, s))
    if far:
        predicted[0] += 3000.0  # a particle far away: Gaussian densities underflow
    return model, toa, predicted


def simulate_records(pred, model, r, n, rng):
    """The generative model: detected sources N(pred, sigma^2), Poisson clutter on [0, W].

    Returns toa (n, r) and true labels (n, r): source index, -1 clutter, -2 no arrival.
    """
    s = pred.shape[0]
    times = rng.normal(pred, model.sigma, (n, s))
    times[rng.random((n, s)) >= model.p_detect] = np.inf
    n_clutter = rng.poisson(model.clutter_rate, n)
    width = s + max(int(n_clutter.max()), 1)
    all_times = np.full((n, width), np.inf)
    all_labels = np.full((n, width), -2)
    all_times[:, :s] = times
    all_labels[:, :s] = np.arange(s)
    for k in range(width - s):
        has = n_clutter > k
        all_times[has, s + k] = rng.uniform(0, model.window, has.sum())
        all_labels[has, s + k] = -1
    all_times[all_times > model.window] = np.inf
    order = np.argsort(all_times, axis=1)[:, :r]
    toa = np.take_along_axis(all_times, order, axis=1)
    labels = np.take_along_axis(all_labels, order, axis=1)
    labels[~np.isfinite(toa)] = -2
    toa[~np.isfinite(toa)] = np.nan
    return toa, labels


# --- the signal model -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma": 0.0},
        {"p_detect": 0.0},
        {"p_detect": 1.5},
        {"clutter_rate": -1.0},
        {"window": -5.0},
        {"sigma": math.nan},
    ],
)
def test_signal_model_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SignalModel(**kwargs)


def test_signal_model_rejects_non_numbers():
    with pytest.raises(TypeError, match="sigma"):
        SignalModel(sigma="5")


def test_p_clutter_is_eq_5_27():
    assert SignalModel(clutter_rate=1.0).p_clutter == 0.5
    assert SignalModel(clutter_rate=4.0).p_clutter == pytest.approx(0.8)


# --- exact engine against enumeration -----------------------------------------------------


def test_exact_matches_closed_form_for_one_source_one_rank():
    """s = r = 1: P(T) = e^{-lam T/W} [P_D N(T) + (1 - P_D + P_D P(t > T)) lam / W]."""
    model = SignalModel(sigma=3.0, p_detect=0.7, clutter_rate=2.0, window=50.0)
    mu, t = 20.0, 24.0
    want = math.exp(-2.0 * t / 50.0) * (
        0.7 * stats.norm.pdf(t, mu, 3.0) + (0.3 + 0.7 * stats.norm.sf(t, mu, 3.0)) * 2.0 / 50.0
    )
    res = log_likelihood(np.array([t]), np.array([[mu]]), model, association=True)
    assert res.loglik[0] == pytest.approx(math.log(want), rel=1e-13)
    p_source = 0.7 * stats.norm.pdf(t, mu, 3.0) * math.exp(-2.0 * t / 50.0) / want
    np.testing.assert_allclose(res.association[0], [[p_source, 1 - p_source]], rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_exact_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        model, toa, predicted = random_case(rng)
        res = log_likelihood(toa, predicted, model, association=True)
        m = int(np.sum(~np.isnan(toa)))
        assert res.association.shape == (5, m, predicted.shape[1] + 1)
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], model)
            if want == -math.inf:
                assert res.loglik[n] == -math.inf
                continue
            assert res.loglik[n] == pytest.approx(want, rel=1e-13, abs=1e-12)
            # posteriors of far particles come out of exp(x - log Z) with |log Z| ~ 1e5
            np.testing.assert_allclose(res.association[n], post, atol=1e-15 * abs(want) + 1e-13)


def test_association_rows_are_distributions(rng):
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=1800.0)
    toa = np.array([300.0, 420.0, 800.0, 1010.0])
    predicted = rng.uniform(200, 1500, (2000, 12))
    res = log_likelihood(toa, predicted, model, association=True)
    assert np.all(res.association >= 0)
    np.testing.assert_allclose(res.association.sum(axis=2), 1.0, atol=1e-12)
    # each source explains at most one arrival: its column sums to at most 1
    assert np.all(res.association[:, :, :12].sum(axis=1) <= 1 + 1e-12)


@pytest.mark.parametrize(
    ("engine", "p_detect", "clutter_rate"),
    [("exact", 0.9, 1.0), ("bp", 0.9, 1.0), ("minfactor", 0.9, 1.0)],
)
def test_batch_equals_particle_by_particle(rng, monkeypatch, engine, p_detect, clutter_rate):
    """The parallel chunking does not mix particles: every particle of a threaded batch gets
    exactly what a one-particle call gives it."""
    monkeypatch.setattr(common, "machine_busy", lambda: False)  # threaded however loaded
    model = SignalModel(sigma=5.0, p_detect=p_detect, clutter_rate=clutter_rate, window=1800.0)
    toa = np.array([300.0, 420.0, 800.0, np.nan])
    n = 601  # chunks of unequal size; threaded where numba has two threads
    threads = numba.get_num_threads()
    assert parallel_pays(n, particle_seconds(engine, 7, 3), threads) == (threads > 1)
    predicted = rng.uniform(200, 1500, (n, 7))
    predicted[5] += 5000.0  # a particle with zero likelihood among the others
    res = log_likelihood(toa, predicted, model, engine=engine, association=True)
    for p in range(n):
        one = log_likelihood(toa, predicted[p : p + 1], model, engine=engine, association=True)
        assert one.loglik[0] == res.loglik[p]
        np.testing.assert_array_equal(one.association[0], res.association[p])


def test_exact_handles_up_to_max_arrivals():
    """2^20 masks: the largest cycle still matches enumeration; one more arrival is refused."""
    model = SignalModel(sigma=2.0, p_detect=0.8, clutter_rate=3.0, window=100.0)
    toa = np.linspace(3.0, 97.0, MAX_ARRIVALS)
    predicted = np.array([[40.5], [41.0]])
    res = log_likelihood(toa, predicted, model)
    for n in range(2):
        want, _ = enumerate_associations(toa, predicted[n], model)
        assert res.loglik[n] == pytest.approx(want, rel=1e-12)
    more = np.linspace(3.0, 97.0, MAX_ARRIVALS + 1)
    with pytest.raises(ValueError, match=f"at most {MAX_ARRIVALS} recorded arrivals.*got 21"):
        log_likelihood(more, predicted, model)


def test_arrival_before_the_window_start_is_not_clutter():
    """Clutter is uniform on [0, W]: an arrival at T < 0 must be the source, and every other
    arrival came later, so P(T) = P_D N(T; mu, sigma^2) (s = r = 1)."""
    model = SignalModel(sigma=3.0, p_detect=0.7, clutter_rate=2.0, window=50.0)
    res = log_likelihood(np.array([-2.0]), np.array([[1.0]]), model, association=True)
    assert res.loglik[0] == pytest.approx(math.log(0.7 * stats.norm.pdf(-2.0, 1.0, 3.0)), 1e-13)
    np.testing.assert_array_equal(res.association[0], [[1.0, 0.0]])


def test_empty_cycle_is_probability_of_recording_nothing():
    """m = 0: no clutter (e^-lam) and every source missing or after the window."""
    model = SignalModel(sigma=4.0, p_detect=0.8, clutter_rate=0.7, window=60.0)
    pred = np.array([[30.0, 58.0, 75.0]])
    want = math.exp(-0.7) * np.prod(0.2 + 0.8 * stats.norm.sf(60.0, pred[0], 4.0))
    res = log_likelihood(np.array([np.nan, np.nan]), pred, model, association=True)
    assert res.loglik[0] == pytest.approx(math.log(want), rel=1e-13)
    assert res.association.shape == (1, 0, 4)


def test_no_sources_means_all_clutter():
    model = SignalModel(clutter_rate=2.0, window=100.0)
    res = log_likelihood(np.array([10.0, 40.0]), np.empty((3, 0)), model, association=True)
    np.testing.assert_allclose(res.loglik, 2 * math.log(2.0 / 100.0) - 2.0 * 40.0 / 100.0)
    np.testing.assert_array_equal(res.association, 1.0)
    nothing = log_likelihood(np.array([10.0]), np.empty((2, 0)), SignalModel(clutter_rate=0.0))
    np.testing.assert_array_equal(nothing.loglik, -np.inf)


# --- the exact likelihood is a normalised distribution of the records ------------------------


def gauss_legendre(a: float, b: float, panel: float = 2.0, order: int = 12):
    """Composite Gauss-Legendre nodes and weights on [a, b] (panels of about ``panel``)."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(a, b, max(1, math.ceil((b - a) / panel)) + 1)
    half = np.diff(edges)[:, None] / 2
    mid = (edges[:-1] + edges[1:])[:, None] / 2
    return (mid + half * x).ravel(), (half * w).ravel()


@pytest.mark.parametrize("s", [1, 2])
@pytest.mark.parametrize("r", [1, 2])
def test_exact_density_integrates_to_one(s, r):
    """P(nothing recorded) + integrals of the density over all ordered records in [0, W] = 1.

    Sources arrive at least 6 sigma after the window start (mass before 0 below 1e-9).
    """
    model = SignalModel(sigma=2.0, p_detect=0.8, clutter_rate=1.5, window=30.0)
    pred = np.array([[12.0, 21.0][:s]])
    w = model.window

    def density(*times):
        toa = np.full(r, np.nan)
        toa[: len(times)] = times
        return math.exp(log_likelihood(toa, pred, model).loglik[0])

    total = density()
    nodes, weights = gauss_legendre(0.0, w)
    total += sum(wt * density(t) for t, wt in zip(nodes, weights, strict=True))
    if r == 2:
        for t1, w1 in zip(nodes, weights, strict=True):
            inner, w2 = gauss_legendre(t1, w)
            total += w1 * sum(wt * density(t1, t2) for t2, wt in zip(inner, w2, strict=True))
    assert total == pytest.approx(1.0, abs=2e-9)


def test_exact_agrees_with_simulation(rng):
    """Monte Carlo of the generative model: P(m = k) and E[posterior] = label frequencies."""
    model = SignalModel(sigma=1.5, p_detect=0.8, clutter_rate=1.0, window=30.0)
    pred = np.array([8.0, 11.0, 24.0])
    r, n = 2, 12000
    toa, labels = simulate_records(pred, model, r, n, rng)
    m = (~np.isnan(toa)).sum(axis=1)

    def density(*times):
        t = np.full(r, np.nan)
        t[: len(times)] = times
        return math.exp(log_likelihood(t, pred[None], model).loglik[0])

    p_m = np.empty(r + 1)
    p_m[0] = density()
    p_m[1] = integrate.quad(density, 0, model.window, points=pred, limit=200)[0]
    p_m[2] = 1.0 - p_m[0] - p_m[1]
    freq = np.bincount(m, minlength=r + 1) / n
    assert np.all(np.abs(freq - p_m) <= 4.5 * np.sqrt(p_m * (1 - p_m) / n) + 1e-4)

    # tower property: the average posterior of a candidate equals its frequency as true label
    post = np.zeros((n, r, pred.size + 1))
    for k in range(n):
        res = log_likelihood(toa[k], pred[None], model, association=True)
        post[k, : m[k]] = res.association[0]
    for j in range(r):
        rows = m > j
        truth = np.where(labels[rows, j] == -1, pred.size, labels[rows, j])
        freq = np.bincount(truth, minlength=pred.size + 1) / rows.sum()
        mean = post[rows, j].mean(axis=0)
        se = np.sqrt(freq * (1 - freq) / rows.sum())
        assert np.all(np.abs(mean - freq) <= 4.5 * se + 1e-3), (j, mean, freq)


# --- baseline and labels --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_baseline_equals_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(20):
        model, toa, predicted = random_case(rng)
        if model.p_detect == 1.0:
            continue
        res = log_likelihood(toa, predicted, model, engine="baseline", association=True)
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], model, ranked=False)
            assert res.loglik[n] == pytest.approx(want, rel=1e-13, abs=1e-12)
            np.testing.assert_allclose(res.association[n], post, atol=1e-15 * abs(want) + 1e-13)


def test_baseline_ignores_the_ranking():
    """A source predicted early but not recorded costs the exact engine, not the baseline."""
    model = SignalModel(sigma=2.0, p_detect=0.9, clutter_rate=0.5, window=100.0)
    toa = np.array([50.0])
    early_silent = np.array([[50.0, 10.0]])  # source 1 should have arrived first
    late_silent = np.array([[50.0, 90.0]])
    exact = [log_likelihood(toa, p, model).loglik[0] for p in (early_silent, late_silent)]
    base = [
        log_likelihood(toa, p, model, engine="baseline").loglik[0]
        for p in (early_silent, late_silent)
    ]
    assert exact[1] - exact[0] > 2.0
    assert base[1] == pytest.approx(base[0], rel=1e-14)


def test_baseline_needs_missing_probability():
    with pytest.raises(ValueError, match="p_detect < 1"):
        log_likelihood(
            np.array([1.0]), np.ones((1, 2)), SignalModel(p_detect=1.0), engine="baseline"
        )


def test_labels_is_eq_5_73(rng):
    model = SignalModel(sigma=4.0, window=1800.0)
    toa = np.array([300.0, 410.0, 700.0, np.nan])
    labels = np.array([2, -1, 0, -2])
    predicted = rng.uniform(250, 800, (50, 3))
    res = log_likelihood(toa, predicted, model, engine="labels", labels=labels, association=True)
    want = stats.norm.logpdf(300.0, predicted[:, 2], 4.0) + stats.norm.logpdf(
        700.0, predicted[:, 0], 4.0
    )
    np.testing.assert_allclose(res.loglik, want, rtol=1e-13)
    np.testing.assert_array_equal(res.association[:, 0], [[0, 0, 1, 0]] * 50)
    np.testing.assert_array_equal(res.association[:, 1], [[0, 0, 0, 1]] * 50)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (None, "needs labels"),
        (np.array([0, 1]), "shape"),
        (np.array([0, 1, 2]), "-2"),
        (np.array([0, 5, -2]), "source index"),
        (np.array([1, 1, -2]), "at most one"),
        (np.array([0.5, 1, -2]), "integers"),
    ],
)
def test_labels_are_validated(labels, match):
    with pytest.raises(ValueError, match=match):
        log_likelihood(
            np.array([1.0, 2.0, np.nan]),
            np.ones((1, 3)),
            SignalModel(),
            engine="labels",
            labels=labels,
        )


# --- input checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toa", "match"),
    [
        (np.array([np.nan, 3.0]), "trail"),
        (np.array([5.0, 3.0]), "ascending"),
        (np.array([5.0, 3000.0]), "window"),
        (np.array([5.0, np.inf]), "finite"),
        (np.empty(0), "non-empty"),
        (np.ones((2, 2)), "1-D"),
    ],
)
def test_bad_toa_is_rejected(toa, match):
    with pytest.raises(ValueError, match=match):
        log_likelihood(toa, np.ones((1, 3)), SignalModel())


def test_bad_predicted_engine_and_model_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        log_likelihood(np.array([1.0]), np.ones(3), SignalModel())
    with pytest.raises(ValueError, match="finite"):
        log_likelihood(np.array([1.0]), np.array([[np.nan]]), SignalModel())
    with pytest.raises(ValueError, match="unknown engine"):
        log_likelihood(np.array([1.0]), np.ones((1, 3)), SignalModel(), engine="magic")
    with pytest.raises(TypeError, match="SignalModel"):
        log_likelihood(np.array([1.0]), np.ones((1, 3)), {"sigma": 5})


def test_result_type_and_engine_list():
    assert ENGINES == ("exact", "bp", "minfactor", "baseline", "labels")
    res = log_likelihood(np.array([1.0]), np.ones((2, 3)), SignalModel())
    assert isinstance(res, LikelihoodResult)
    assert res.association is None and res.loglik.shape == (2,)


@settings(max_examples=150, deadline=None)
@given(
    toa=st.lists(
        st.one_of(st.floats(-50, 250, allow_nan=False), st.just(math.nan), st.just(math.inf)),
        min_size=1,
        max_size=5,
    ),
    pred=st.lists(st.floats(-100, 300), min_size=0, max_size=4),
)
def test_fuzzed_cycles_either_raise_or_give_distributions(toa, pred):
    """Any toa: a ValueError naming toa, or a log-likelihood and association rows summing to 1."""
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=200.0)
    predicted = np.array([pred], dtype=float).reshape(1, len(pred))
    try:
        res = log_likelihood(np.array(toa), predicted, model, association=True)
    except ValueError as err:
        assert "toa" in str(err)
        return
    assert res.loglik.shape == (1,) and not np.isnan(res.loglik[0])
    if np.isfinite(res.loglik[0]) and res.association.shape[1]:
        np.testing.assert_allclose(res.association[0].sum(axis=1), 1.0, atol=1e-12)


def test_exact_equals_enumeration_with_many_arrivals(rng):
    """m = 6 recorded arrivals (64 masks) and 4 sources, clutter and losses."""
    model = SignalModel(sigma=4.0, p_detect=0.8, clutter_rate=2.5, window=100.0)
    toa = np.sort(rng.uniform(0, 100, 6))
    predicted = np.vstack([toa[[0, 2, 3, 5]] + rng.normal(0, 4, 4), rng.uniform(0, 100, (2, 4))])
    res = log_likelihood(toa, predicted, model, association=True)
    for n in range(predicted.shape[0]):
        want, post = enumerate_associations(toa, predicted[n], model)
        assert res.loglik[n] == pytest.approx(want, rel=1e-13)
        np.testing.assert_allclose(res.association[n], post, atol=1e-13)


def test_log_space_path_equals_the_scaled_path(rng):
    """The slow path (run by ``exact`` only for particles whose scaled Z underflows) gives the
    fast path's log-likelihood and posteriors on ordinary particles, the Poisson term included
    (clutter rate > 0, so it is not 0)."""
    from rankmodels.tracking.engines._common import bipartite_cycle, engine_output, prepare_cycle
    from rankmodels.tracking.engines.exact import _exact_log_space

    checked = 0
    while checked < 20:
        model, toa, predicted = random_case(rng, far=False)
        model = SignalModel(sigma=model.sigma, p_detect=model.p_detect, clutter_rate=1.5,
                            window=model.window)  # fmt: skip
        fast = log_likelihood(toa, predicted, model, association=True)
        cycle = prepare_cycle(toa, model)
        out = engine_output(predicted.shape[0], cycle.m, predicted.shape[1], True)
        c = bipartite_cycle(cycle, model)
        if c.log_poisson == 0:  # the first arrival is before the window: nothing is late
            continue
        checked += 1
        _exact_log_space(np.arange(predicted.shape[0]), c, predicted, out)
        np.testing.assert_allclose(out.loglik, fast.loglik, rtol=1e-12)
        np.testing.assert_allclose(out.assoc, fast.association, atol=1e-12)
