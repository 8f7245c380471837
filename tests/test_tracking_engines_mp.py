"""Message-passing engines (bp, minfactor) against the exact sum over associations."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.tracking.engines import log_likelihood
from rankmodels.tracking.engines._common import prepare_cycle
from rankmodels.tracking.engines.brute import brute_force
from rankmodels.tracking.signal_model import SignalModel


def small_case(rng: np.random.Generator, *, s_max: int = 5, r_max: int = 4):
    s = int(rng.integers(1, s_max + 1))
    r = int(rng.integers(1, r_max + 1))
    model = SignalModel(
        sigma=float(rng.uniform(1, 10)),
        p_detect=float(rng.uniform(0.3, 0.99)),
        clutter_rate=float(rng.uniform(0.1, 3.0)),
        window=100.0,
    )
    m = int(rng.integers(0, r + 1))
    toa = np.full(r, np.nan)
    toa[:m] = np.sort(rng.uniform(0, 100, m))
    return model, toa, rng.uniform(-10, 110, (6, s))


def tracking_cycle(rng: np.random.Generator, n: int = 300):
    """s = 12, r = 4 like a DIMES float: a simulated record and particles around the truth."""
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=1800.0)
    truth = rng.uniform(100, 1500, 12)
    heard = truth + rng.normal(0, model.sigma, 12)
    heard = heard[(rng.random(12) < model.p_detect) & (heard <= model.window)]
    clutter = rng.uniform(0, model.window, rng.poisson(model.clutter_rate))
    arrivals = np.sort(np.concatenate([heard, clutter]))[:4]
    toa = np.full(4, np.nan)
    toa[: arrivals.size] = arrivals
    return model, toa, truth + rng.normal(0, 30, (n, 12))


# --- bp ----------------------------------------------------------------------------------------


def test_bp_is_exact_on_trees(rng):
    """One source or at most one arrival: the bipartite graph is a tree and Bethe is exact."""
    checked = 0
    while checked < 40:
        model, toa, predicted = small_case(rng)
        cycle = prepare_cycle(toa, model)
        if predicted.shape[1] > 1 and cycle.m > 1:
            continue
        checked += 1
        res = log_likelihood(toa, predicted, model, engine="bp", association=True)
        assert res.converged
        for n in range(predicted.shape[0]):
            want, post = brute_force(cycle, predicted[n], model)
            assert res.loglik[n] == pytest.approx(want, abs=1e-9)
            np.testing.assert_allclose(res.association[n], post, atol=1e-9)


def test_bp_is_close_to_exact_on_loopy_graphs(rng):
    """Observed here: |log Z_Bethe - log Z| median 0, 90% 4e-4, max 0.27 nats (90 particles)."""
    errors, post_errors = [], []
    for _ in range(60):
        model, toa, predicted = small_case(rng)
        cycle = prepare_cycle(toa, model)
        if predicted.shape[1] < 2 or cycle.m < 2:
            continue
        res = log_likelihood(toa, predicted, model, engine="bp", association=True)
        exact = log_likelihood(toa, predicted, model, association=True)
        assert res.converged and res.iterations >= 2
        errors.append(np.abs(res.loglik - exact.loglik))
        post_errors.append(np.abs(res.association - exact.association).max(axis=(1, 2)))
    errors = np.concatenate(errors)
    post_errors = np.concatenate(post_errors)
    assert errors.size > 50
    assert np.median(errors) < 1e-3
    assert errors.max() < 1.0
    assert np.median(post_errors) < 1e-3
    assert post_errors.max() < 0.5


def test_bp_on_a_tracking_cycle(rng):
    """s = 12, r = 4: observed |error| max 0.58 nats, median < 3e-6; same most probable sources."""
    for _ in range(5):
        model, toa, predicted = tracking_cycle(rng)
        res = log_likelihood(toa, predicted, model, engine="bp", association=True)
        exact = log_likelihood(toa, predicted, model, association=True)
        assert np.abs(res.loglik - exact.loglik).max() < 1.5
        assert np.median(np.abs(res.loglik - exact.loglik)) < 0.1
        agree = res.association.argmax(axis=2) == exact.association.argmax(axis=2)
        assert agree.mean() > 0.95


def test_bp_damping_reaches_the_same_fixed_point(rng):
    model, toa, predicted = tracking_cycle(rng, n=50)
    plain = log_likelihood(toa, predicted, model, engine="bp")
    damped = log_likelihood(toa, predicted, model, engine="bp", damping=0.5, max_iter=2000)
    assert plain.converged and damped.converged
    assert damped.iterations > plain.iterations
    np.testing.assert_allclose(damped.loglik, plain.loglik, atol=1e-6)


def test_bp_reports_non_convergence(rng):
    model, toa, predicted = tracking_cycle(rng, n=20)
    res = log_likelihood(toa, predicted, model, engine="bp", max_iter=1, tol=1e-15)
    if prepare_cycle(toa, model).m:
        assert res.converged is False and res.iterations == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"damping": 1.0}, "damping"), ({"tol": 0.0}, "tol"), ({"max_iter": 0}, "max_iter")],
)
def test_bp_controls_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        log_likelihood(np.array([1.0]), np.ones((1, 2)), SignalModel(), engine="bp", **kwargs)


def test_bp_needs_missing_probability():
    with pytest.raises(ValueError, match="p_detect < 1"):
        log_likelihood(np.array([1.0]), np.ones((1, 2)), SignalModel(p_detect=1.0), engine="bp")


# --- minfactor ---------------------------------------------------------------------------------


def no_loss_case(rng: np.random.Generator, *, s_max: int = 5, r_max: int = 4):
    """A record of the section 5.2 model (every source heard, no clutter) and particles."""
    s = int(rng.integers(1, s_max + 1))
    r = int(rng.integers(1, r_max + 1))
    model = SignalModel(
        sigma=float(rng.uniform(3, 10)), p_detect=1.0, clutter_rate=0.0, window=100.0
    )
    predicted = rng.uniform(10, 90, (5, s))
    heard = np.sort(predicted[0] + rng.normal(0, model.sigma, s))
    heard = heard[heard <= model.window][:r]
    toa = np.full(r, np.nan)
    toa[: heard.size] = heard
    return model, toa, predicted


def test_minfactor_is_exact_on_trees(rng):
    """One min factor (m = r = 1) or only the window factor (m = 0): a tree, so exact."""
    checked = 0
    while checked < 30:
        model, toa, predicted = no_loss_case(rng)
        cycle = prepare_cycle(toa, model)
        if not (cycle.m == 0 or cycle.m == cycle.r == 1):
            continue
        checked += 1
        res = log_likelihood(toa, predicted, model, engine="minfactor", association=True)
        assert res.converged
        for n in range(predicted.shape[0]):
            want, post = brute_force(cycle, predicted[n], model)
            assert res.loglik[n] == pytest.approx(want, abs=1e-9)
            np.testing.assert_allclose(res.association[n], post, atol=1e-9)


def test_minfactor_approximates_exact_on_loopy_graphs(rng):
    """Loopy min-factor BP is an approximation: observed on these 197 converged particles
    |error| quartiles 1e-14, 0.008, 0.23 nats, max 0.97; most probable sources agree 99.8%."""
    errors, agree = [], []
    for _ in range(60):
        model, toa, predicted = no_loss_case(rng)
        cycle = prepare_cycle(toa, model)
        if cycle.m < 2 and cycle.m == cycle.r:
            continue
        exact = log_likelihood(toa, predicted, model, association=True)
        for n in range(predicted.shape[0]):
            res = log_likelihood(
                toa, predicted[n : n + 1], model, engine="minfactor", association=True
            )
            if not (res.converged and np.isfinite(res.loglik[0])):
                continue
            errors.append(abs(res.loglik[0] - exact.loglik[n]))
            if cycle.m:
                agree.append(
                    np.mean(res.association[0].argmax(1) == exact.association[n].argmax(1))
                )
    errors = np.array(errors)
    assert errors.size > 150
    assert np.quantile(errors, 0.25) < 1e-9
    assert np.median(errors) < 0.05
    assert errors.max() < 1.5
    assert np.mean(agree) > 0.98


def test_minfactor_needs_its_special_case():
    with pytest.raises(ValueError, match="p_detect = 1 and clutter_rate = 0"):
        log_likelihood(np.array([1.0]), np.ones((1, 2)), SignalModel(), engine="minfactor")
