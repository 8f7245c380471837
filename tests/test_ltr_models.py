"""Scoring models and the MLP ranker: back-propagation against finite differences, the
trainer's objective through an MLP, Adam against its definition, training on PiRank's
synthetic recipe well above random, early stopping, seeds and progress."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr import metrics
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.mlp import adam_step, fit_mlp_ranker
from rankmodels.ltr.models import LINEAR, MLP, Ranker
from rankmodels.ltr.synthetic import pirank_synthetic, synthetic_letor
from rankmodels.ltr.train import fit_linear_ranker, standardisation, training_objective


def _central(f, w: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(w.shape[0])])


@pytest.mark.parametrize("model", [LINEAR, MLP((4,)), MLP((3, 2))])
def test_backward_is_the_transposed_jacobian(rng, model):
    """<g, s(theta)> differentiated numerically equals backward(theta, X, g)."""
    X = rng.normal(size=(3, 4, 5))
    g = rng.normal(size=(3, 4))
    theta = rng.normal(size=model.n_params(5))
    numeric = _central(lambda t: float(np.sum(g * model.scores(t, X))), theta)
    np.testing.assert_allclose(model.backward(theta, X, g), numeric, rtol=1e-6, atol=1e-8)


def test_mlp_forward_by_hand(rng):
    """Two hidden layers written out: s = tanh(tanh(x W1 + b1) W2 + b2) . v."""
    model = MLP((3, 2))
    theta = rng.normal(size=model.n_params(4))
    W1, b1, W2, b2, v = model.unpack(theta, 4)
    assert [p.shape for p in (W1, b1, W2, b2, v)] == [(4, 3), (3,), (3, 2), (2,), (2,)]
    X = rng.normal(size=(2, 5, 4))
    expected = np.tanh(np.tanh(X @ W1 + b1) @ W2 + b2) @ v
    np.testing.assert_allclose(model.scores(theta, X), expected, rtol=1e-13)
    with pytest.raises(ValueError, match="has 25 parameters, got shape \\(24,\\)"):
        model.unpack(theta[:-1], 4)
    with pytest.raises(ValueError, match="widths must be >= 1"):
        MLP((3, 0))


@pytest.mark.parametrize(
    ("loss", "options"), [("softrank", {"sigma": 0.7}), ("listnet", {}), ("bregman", {})]
)
def test_trainer_objective_through_an_mlp(rng, loss, options):
    """F(theta) = mean_b loss_b(f(X_b; theta)) + l2 |theta|^2 and its gradient by finite
    differences of the trainer's own function."""
    data, _ = synthetic_letor(n_queries=5, n_features=3, docs=(2, 6), seed=rng)
    model = MLP((4,))
    mean, scale = standardisation(data)
    unit = Ranker(model, np.empty(0), mean, scale)
    l2 = 0.2
    objective = training_objective(
        data, loss, options=options, l2=l2, standardisation=unit, model=model
    )
    theta = model.init(3, rng)
    value, grad = objective(theta)
    scores = model.scores(theta, unit.design(data))
    per_query = LOSSES[loss](scores, data.relevance, data.lengths, **options).value
    assert value == pytest.approx(np.mean(per_query) + l2 * theta @ theta, rel=1e-12)
    numeric = _central(lambda t: objective(t)[0], theta)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_adam_step_against_its_definition(rng):
    theta, state = rng.normal(size=3), {}
    g1, g2 = rng.normal(size=3), rng.normal(size=3)
    t1 = adam_step(theta, g1, state, lr=0.1)
    # first step: bias-corrected m / sqrt(v) = g / |g|, a step of lr against the sign
    np.testing.assert_allclose(t1, theta - 0.1 * g1 / (np.abs(g1) + 1e-8), rtol=1e-12)
    t2 = adam_step(t1, g2, state, lr=0.1)
    m = (0.9 * 0.1 * g1 + 0.1 * g2) / (1 - 0.9**2)
    v = (0.999 * 0.001 * g1**2 + 0.001 * g2**2) / (1 - 0.999**2)
    np.testing.assert_allclose(t2, t1 - 0.1 * m / (np.sqrt(v) + 1e-8), rtol=1e-12)


def _random_ndcg(data, rng, draws=20) -> float:
    return float(
        np.mean(
            [
                np.mean(
                    metrics.ndcg(
                        data.relevance,
                        rng.normal(size=data.relevance.shape),
                        lengths=data.lengths,
                        k=10,
                    )
                )
                for _ in range(draws)
            ]
        )
    )


@pytest.mark.parametrize("loss", LOSSES.names)
def test_mlp_with_every_loss_raises_validation_ndcg_well_above_random(rng, loss):
    every, w_true = synthetic_letor(n_queries=90, n_features=4, docs=(6, 10), seed=5)
    data, valid = every.subset(np.arange(60)), every.subset(np.arange(60, 90))
    model = fit_mlp_ranker(data, loss, valid=valid, hidden=(8,), epochs=15, lr=1e-2, seed=1)
    chance = _random_ndcg(valid, rng)
    truth = float(
        np.mean(metrics.ndcg(valid.relevance, valid.features @ w_true, lengths=valid.lengths))
    )
    assert model.ndcg(valid) > chance + 0.4 * (truth - chance)


def test_mlp_beats_linear_on_pirank_synthetic_data():
    """PiRank appendix E's labels mix document and query features multiplicatively: the
    MLP must do clearly better than a linear ranker with the same loss."""
    data = pirank_synthetic(n_queries=300, docs=(8, 12), seed=1)
    valid = pirank_synthetic(n_queries=60, docs=(8, 12), seed=2)
    mlp = fit_mlp_ranker(data, "listnet", valid=valid, hidden=(32,), epochs=30, lr=1e-2, seed=1)
    linear = fit_linear_ranker(data, "listnet")
    assert mlp.ndcg(valid) > linear.ndcg(valid) + 0.04


def test_mlp_is_seeded_and_reports_progress(rng):
    data, _ = synthetic_letor(n_queries=20, n_features=3, docs=(3, 6), seed=rng)
    steps: list[int] = []
    a = fit_mlp_ranker(data, "listnet", epochs=12, patience=2, seed=3, progress=steps.append)
    b = fit_mlp_ranker(data, "listnet", epochs=12, patience=2, seed=3)
    c = fit_mlp_ranker(data, "listnet", epochs=12, patience=2, seed=4)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.params, c.params)
    assert sum(steps) == 12


def test_early_stopping_keeps_the_best_validation_epoch(rng):
    """The returned parameters score the best validation NDCG seen at any epoch: running
    every epoch count up to the one returned never beats it."""
    every, _ = synthetic_letor(n_queries=45, n_features=4, docs=(4, 8), noise=1.0, seed=rng)
    data, valid = every.subset(np.arange(30)), every.subset(np.arange(30, 45))
    kw = dict(valid=valid, hidden=(8,), lr=3e-3, seed=0, patience=1000)
    returned = [fit_mlp_ranker(data, "listnet", epochs=e, **kw).ndcg(valid) for e in range(1, 16)]
    assert returned[-1] == pytest.approx(max(returned))
    assert np.all(np.diff(returned) >= -1e-12)  # never worse with more epochs
    assert len(set(returned)) > 1  # the run did improve along the way
