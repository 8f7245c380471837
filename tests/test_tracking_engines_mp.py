"""Message-passing engines (bp, minfactor) against the exact sum over associations.

Derived checks (true by construction): on a tree both engines are exact, settle within the
tree's diameter in sweeps, and damping only slows them down; where the exact posterior is
decisive they pick the same source. Regression bands (observed here, with margin): bp's errors
on loopy graphs (minfactor's are in ``test_tracking_minfactor.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.tracking.engines import log_likelihood
from rankmodels.tracking.engines._common import prepare_cycle
from rankmodels.tracking.engines.oracle import enumerate_associations
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


def is_tree(engine: str, toa: np.ndarray, predicted: np.ndarray) -> bool:
    """bp's S/R graph is a tree with one source or at most one arrival; minfactor's factor
    graph with one min factor (m = r = 1) or only the window factor (m = 0)."""
    m, r = int(np.sum(~np.isnan(toa))), toa.shape[0]
    if engine == "bp":
        return predicted.shape[1] == 1 or m <= 1
    return m == 0 or m == r == 1


def tree_case(engine: str, rng: np.random.Generator, *, min_arrivals: int = 0):
    """A random case of ``engine``'s model whose graph is a tree, with ``min_arrivals``."""
    make = small_case if engine == "bp" else no_loss_case
    while True:
        model, toa, predicted = make(rng)
        m = int(np.sum(~np.isnan(toa)))
        if is_tree(engine, toa, predicted) and m >= min_arrivals:
            return model, toa, predicted


# --- both engines: derived checks ------------------------------------------------------------

#: Sweeps to settle on a tree: messages are exact once information has crossed the tree (two
#: sweeps for bp's stars, one for minfactor's single factor) and one more sweep sees no change.
TREE_SWEEPS = {"bp": 3, "minfactor": 2}


@pytest.mark.parametrize("engine", ["bp", "minfactor"])
def test_exact_on_trees(rng, engine):
    """On a tree the Bethe estimate is log Z and the beliefs are the exact marginals."""
    for _ in range(30):
        model, toa, predicted = tree_case(engine, rng)
        res = log_likelihood(toa, predicted, model, engine=engine, association=True)
        assert res.converged and res.iterations <= TREE_SWEEPS[engine]
        for n in range(predicted.shape[0]):
            want, post = enumerate_associations(toa, predicted[n], model)
            assert res.loglik[n] == pytest.approx(want, abs=1e-9)
            np.testing.assert_allclose(res.association[n], post, atol=1e-9)


@pytest.mark.parametrize("engine", ["bp", "minfactor"])
def test_damping_on_trees_only_slows_convergence(rng, engine):
    """Damping keeps the fixed points, which on a tree is unique: the same likelihood for every
    damping ``d``; once the undamped messages are exact the damped error shrinks by ``d`` per
    sweep, so the number of sweeps does not decrease as ``d`` grows (with at least one arrival,
    so that there are messages to damp)."""
    dampings = (0.0, 0.3, 0.6, 0.9)
    for _ in range(15):
        model, toa, predicted = tree_case(engine, rng, min_arrivals=1)
        runs = [
            log_likelihood(
                toa, predicted, model, engine=engine, damping=d, tol=1e-11, max_iter=5000
            )
            for d in dampings
        ]
        assert all(run.converged for run in runs)
        sweeps = [run.iterations for run in runs]
        assert sweeps == sorted(sweeps) and sweeps[-1] > sweeps[0]
        for run in runs[1:]:
            np.testing.assert_allclose(run.loglik, runs[0].loglik, rtol=1e-8, atol=1e-8)


def decisive_agreement(engine, model, toa, predicted):
    """Where the exact posterior gives an arrival's most probable source more than 0.9, does
    ``engine`` pick the same one? Returns the boolean array over those arrivals."""
    exact = log_likelihood(toa, predicted, model, association=True)
    res = log_likelihood(toa, predicted, model, engine=engine, association=True)
    ok = np.isfinite(exact.loglik) & np.isfinite(res.loglik)
    post, approx = exact.association[ok], res.association[ok]
    decisive = post.max(axis=2) > 0.9
    return (post.argmax(axis=2) == approx.argmax(axis=2))[decisive]


@pytest.mark.parametrize(
    ("engine", "make"), [("bp", small_case), ("bp", tracking_cycle), ("minfactor", no_loss_case)]
)
def test_decisive_associations_agree_with_exact(rng, engine, make):
    """An arrival whose exact posterior puts more than 0.9 on one source: the approximate
    engine's most probable source is that one, every time (observed: every time already above
    0.5)."""
    agree = np.concatenate(
        [decisive_agreement(engine, *make(rng)) for _ in range(5 if make is tracking_cycle else 30)]
    )
    assert agree.size > 100
    assert agree.all()


@pytest.mark.parametrize(
    ("engine", "model"),
    [
        ("bp", SignalModel(sigma=5.0)),
        ("minfactor", SignalModel(sigma=20.0, p_detect=1.0, clutter_rate=0.0)),
    ],
)
def test_non_convergence_is_reported(engine, model):
    """Sweeps of a loopy graph (4 arrivals, 3 sources near each other): one sweep at an
    unreachable tolerance does not converge; enough sweeps at the default do."""
    toa = np.array([300.0, 312.0, 320.0, 333.0])
    predicted = np.array([[305.0, 315.0, 325.0, 330.0], [301.0, 318.0, 322.0, 340.0]])
    stuck = log_likelihood(toa, predicted, model, engine=engine, max_iter=1, tol=1e-15)
    assert stuck.converged is False and stuck.iterations == 1
    done = log_likelihood(toa, predicted, model, engine=engine, max_iter=5000)
    assert done.converged is True and 1 < done.iterations < 5000


@pytest.mark.parametrize("engine", ["bp", "minfactor"])
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"damping": 1.0}, "damping"), ({"tol": 0.0}, "tol"), ({"max_iter": 0}, "max_iter")],
)
def test_controls_are_validated(engine, kwargs, match):
    model = SignalModel(p_detect=1.0, clutter_rate=0.0) if engine == "minfactor" else SignalModel()
    with pytest.raises(ValueError, match=match):
        log_likelihood(np.array([1.0]), np.ones((1, 2)), model, engine=engine, **kwargs)


# --- bp: regression bands --------------------------------------------------------------------


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
    """Loopy graphs: a damped run's fixed point is one of undamped BP's, and here (observed on
    small cases for damping up to 0.9 as well: spread 3e-10 nats) the same one."""
    model, toa, predicted = tracking_cycle(rng, n=50)
    plain = log_likelihood(toa, predicted, model, engine="bp")
    damped = log_likelihood(toa, predicted, model, engine="bp", damping=0.5, max_iter=2000)
    assert plain.converged and damped.converged
    assert damped.iterations > plain.iterations
    np.testing.assert_allclose(damped.loglik, plain.loglik, atol=1e-6)
