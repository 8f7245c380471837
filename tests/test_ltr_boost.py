"""Regression trees against brute force, and listwise boosting: Algorithm 1's first step
by its definition, monotone training risk under the line search, every loss learning,
early stopping, progress."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr import metrics
from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.trees import fit_tree, quantile_edges


def _brute_force_stump(X, y, min_leaf):
    """Best single split over every feature and every threshold between distinct values."""
    best = (0.0, None)
    for f in range(X.shape[1]):
        for t in np.unique(X[:, f])[:-1]:
            go = X[:, f] <= t
            if go.sum() < min_leaf or (~go).sum() < min_leaf:
                continue
            sse = ((y[go] - y[go].mean()) ** 2).sum() + ((y[~go] - y[~go].mean()) ** 2).sum()
            gain = ((y - y.mean()) ** 2).sum() - sse
            if gain > best[0] + 1e-12:
                best = (gain, (f, t, y[go].mean(), y[~go].mean()))
    return best[1]


@pytest.mark.parametrize("min_leaf", [1, 3, 7])
def test_a_depth_one_tree_is_the_brute_force_best_stump(rng, min_leaf):
    X = rng.integers(0, 6, size=(40, 3)).astype(float) + rng.normal(size=(40, 3)) * 0.01
    y = X[:, 1] ** 2 - X[:, 2] + rng.normal(size=40)
    tree = fit_tree(X, y, quantile_edges(X, 256), max_depth=1, min_leaf=min_leaf)
    f, t, left, right = _brute_force_stump(X, y, min_leaf)
    assert tree.feature[0] == f and tree.threshold[0] == t
    np.testing.assert_allclose(tree.value[[tree.left[0], tree.right[0]]], [left, right])
    np.testing.assert_allclose(tree.predict(X), np.where(X[:, f] <= t, left, right))


def test_tree_leaves_are_means_and_project_the_target(rng):
    X = rng.normal(size=(200, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=200)
    tree = fit_tree(X, y, quantile_edges(X, 32), max_depth=4, min_leaf=5)
    h = tree.predict(X)
    for leaf in np.unique(h):
        assert h[h == leaf].size >= 5
        assert leaf == pytest.approx(y[h == leaf].mean())
    assert y @ h == pytest.approx(h @ h)  # least-squares projection onto the partition
    deeper = fit_tree(X, y, quantile_edges(X, 32), max_depth=6, min_leaf=5).predict(X)
    assert ((y - deeper) ** 2).sum() < ((y - h) ** 2).sum() < ((y - y.mean()) ** 2).sum()
    assert np.all(fit_tree(X, y, quantile_edges(X), max_depth=0).predict(X) == y.mean())


def test_quantile_edges():
    X = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    edges = quantile_edges(X, 8)
    np.testing.assert_array_equal(edges[0], [1.0, 2.0])  # distinct values but the largest
    assert edges[1].size == 0  # a constant feature cannot split
    many = quantile_edges(np.arange(1000.0)[:, None], 16)[0]
    assert many.size == 15 and np.all(np.diff(many) > 0)
    with pytest.raises(ValueError, match="max_bins must be in 2 .. 256"):
        quantile_edges(X, 1)


def _ideal_weights(rel: np.ndarray) -> np.ndarray:
    """r~ = (2^r - 1) / IDCG of the whole list (log2 discount), by hand."""
    gains = 2.0**rel - 1
    idcg = np.sum(np.sort(gains)[::-1] / np.log2(np.arange(rel.size) + 2))
    return gains / idcg if idcg > 0 else np.zeros_like(gains)


def test_first_round_is_algorithm_one_initial_direction(rng):
    """Square surrogate: grad psi*(0) = 0, so d_1 = r~ per document. A tree that can
    isolate every document fits it exactly and the first step is eta d_1 (the projection
    length <d, h>/|h|^2 = 1, accepted by the line search at once)."""
    data, _ = synthetic_letor(n_queries=4, n_features=3, docs=(3, 5), seed=rng)
    eta = 0.3
    model = fit_boosted_ranker(
        data, "bregman", valid=data, step="gradient", n_trees=1, shrinkage=eta, min_leaf=1
    )
    expected = np.zeros(data.relevance.shape)
    for b, n in enumerate(data.lengths):
        expected[b, :n] = eta * _ideal_weights(data.relevance[b, :n])
    np.testing.assert_allclose(model.scores(data), expected, atol=1e-12)
    # Newton: the square surrogate's Hessian is 1/2, so one leaf per document steps eta of
    # the way to the exact minimiser grad psi(r~) = 2 r~
    newton = fit_boosted_ranker(data, "bregman", valid=data, n_trees=1, shrinkage=eta, min_leaf=1)
    np.testing.assert_allclose(newton.scores(data), 2 * expected, atol=1e-12)


@pytest.mark.parametrize(
    ("loss", "options"),
    [
        ("bregman", {}),
        ("bregman", {"surrogate": "cross_entropy"}),
        ("listnet", {}),
        ("softrank", {"sigma": 0.5}),
        ("lambdarank", {}),
        ("listmle", {}),
    ],
)
@pytest.mark.parametrize("step", ["newton", "gradient"])
def test_training_risk_decreases_monotonically_with_sufficient_decrease(rng, loss, options, step):
    """Every accepted step satisfies J_t <= J_{t-1} - c alpha <d, h> < J_{t-1} (stepping
    along +grad, the dissertation's printed sign, would raise J and fail; a line search
    that accepted any step would too at shrinkage 1)."""
    data, _ = synthetic_letor(n_queries=30, n_features=4, docs=(4, 9), noise=1.0, seed=rng)
    model = fit_boosted_ranker(
        data, loss, valid=data, options=options, step=step, n_trees=25, shrinkage=1.0, patience=100
    )
    J = np.array(model.train_loss)
    assert len(J) > 10
    assert np.all(np.diff(J) < 0)
    spec = LOSSES[loss]
    opts = {**spec.fit_options, **options}
    value = spec(model.scores(data), data.relevance, data.lengths, **opts).value.mean()
    rounds = len(model.trees) - model.gains_start  # J[0] is after the start f_0
    assert value == pytest.approx(J[rounds])  # the recorded risk is the ranker's


@pytest.mark.parametrize("loss", LOSSES.names)
def test_boosting_every_loss_raises_validation_ndcg_well_above_random(rng, loss):
    every, w_true = synthetic_letor(n_queries=90, n_features=4, docs=(6, 10), seed=5)
    data, valid = every.subset(np.arange(60)), every.subset(np.arange(60, 90))
    model = fit_boosted_ranker(data, loss, valid=valid, n_trees=40, min_leaf=5)
    chance = np.mean(
        [
            metrics.ndcg(
                valid.relevance, rng.normal(size=valid.relevance.shape), lengths=valid.lengths
            )
            for _ in range(20)
        ]
    )
    truth = float(
        np.mean(metrics.ndcg(valid.relevance, valid.features @ w_true, lengths=valid.lengths))
    )
    assert model.ndcg(valid) > chance + 0.4 * (truth - chance)


def test_early_stopping_cuts_back_to_the_best_validation_round(rng):
    every, _ = synthetic_letor(n_queries=50, n_features=4, docs=(4, 8), noise=1.5, seed=rng)
    data, valid = every.subset(np.arange(30)), every.subset(np.arange(30, 50))
    steps: list[int] = []
    model = fit_boosted_ranker(
        data, "listnet", valid=valid, n_trees=200, patience=5, shrinkage=1.0, progress=steps.append
    )
    ran = len(model.valid_ndcg)
    assert ran < 200 and sum(steps) == 200
    best = int(np.argmax(model.valid_ndcg))
    assert len(model.trees) == best + 1 and ran == best + 1 + 5
    assert model.ndcg(valid) == pytest.approx(model.valid_ndcg[best])


def test_bad_arguments(rng):
    data, _ = synthetic_letor(n_queries=4, n_features=2, seed=rng)
    with pytest.raises(ValueError, match="shrinkage must be in"):
        fit_boosted_ranker(data, shrinkage=0.0)
    with pytest.raises(ValueError, match="unknown loss"):
        fit_boosted_ranker(data, "hinge")
    with pytest.raises(ValueError, match="X \\(N, F\\) with y"):
        fit_tree(np.zeros((3, 2)), np.zeros(2), [np.zeros(0)] * 2)
