"""The shortcuts of fast boosting against the slow, literal computations they replace:
bins against ``np.searchsorted`` and ``np.unique(np.quantile(...))``, the leaf of every
sample left by growth against predicting it, the running training scores against the
ranker's own predictions, and LambdaRank's one-pass line-search trial against a double
loop over the pairs at two rankings."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.metrics import discounts, gains
from rankmodels.ltr.pairwise import lambdarank_trial, lambdarank_with_hessian
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.trees import (
    TreeShape,
    bin_features,
    grow_tree,
    grow_tree_with_leaves,
    quantile_edges,
)


def _columns(rng, n=400):
    """Continuous, rounded (many ties), constant and two-valued columns."""
    return np.column_stack(
        [
            rng.normal(size=n),
            np.round(rng.normal(size=n), 1),
            np.zeros(n),
            rng.integers(0, 2, size=n).astype(float),
            rng.exponential(size=n) * 1e6,
        ]
    )


@pytest.mark.parametrize("max_bins", [2, 5, 16, 256])
def test_edges_are_the_distinct_values_or_numpys_distinct_quantiles(rng, max_bins):
    X = _columns(rng)
    for column, edges in zip(X.T, quantile_edges(X, max_bins), strict=True):
        distinct = np.unique(column)
        if distinct.shape[0] > max_bins:
            inner = np.linspace(0, 1, max_bins + 1)[1:-1]
            expected = np.unique(np.quantile(column, inner))
        else:
            expected = distinct[:-1]
        np.testing.assert_array_equal(edges, expected)


def test_bins_count_the_thresholds_below_each_value(rng):
    """Codes equal ``np.searchsorted(edges, x, side="left")``, also for values beyond
    every threshold, +-inf and NaN (placed above them all, as numpy sorts NaN)."""
    X = _columns(rng)
    edges = quantile_edges(X, 16)
    Y = np.vstack([X, np.full(5, np.inf), np.full(5, -np.inf), np.full(5, np.nan), X[:3] + 1e-9])
    binned = bin_features(Y, edges)
    for f, e in enumerate(edges):
        np.testing.assert_array_equal(binned.codes[f], np.searchsorted(e, Y[:, f], side="left"))
        assert binned.n_edges[f] == e.shape[0]


@pytest.mark.parametrize("subsample", [None, 0.6])
def test_the_leaf_of_every_grown_sample_gives_its_prediction(rng, subsample):
    X = _columns(rng)
    g, h = rng.normal(size=X.shape[0]), rng.random(X.shape[0]) + 0.1
    binned = bin_features(X, quantile_edges(X, 32))
    shape = TreeShape(num_leaves=9, min_leaf=5)
    rows = None
    if subsample is not None:
        rows = np.sort(rng.choice(X.shape[0], int(subsample * X.shape[0]), replace=False))
    tree, leaf = grow_tree_with_leaves(binned, g, h, shape, rows)
    grown = np.arange(X.shape[0]) if rows is None else rows
    assert np.all(tree.feature[leaf[grown]] == -1)  # leaves, every one of them
    np.testing.assert_array_equal(tree.value[leaf[grown]], tree.predict(X[grown]))
    outside = np.setdiff1d(np.arange(X.shape[0]), grown)
    assert np.all(leaf[outside] == -1)
    assert len(np.unique(leaf[grown])) == int(np.sum(tree.feature == -1)) > 1
    np.testing.assert_array_equal(grow_tree(binned, g, h, shape, rows).value, tree.value)


@pytest.mark.parametrize(
    ("loss", "kw", "seed"),
    [
        ("bregman", {}, 5),
        ("lambdarank", {}, 5),
        ("lambdarank", {"subsample": 0.5, "colsample": 0.5}, 5),
        ("listnet", {"step": "gradient", "subsample": 0.7}, 5),
        ("bregman", {"weak_learner": "feature"}, 8),  # a seed where round 1 is not the best
        ("sinkprop", {"step": "gradient", "options": {"sigma": 0.1}}, 8),  # the gains start
    ],
)
def test_running_training_scores_are_the_rankers_predictions(loss, kw, seed):
    """The training risk recorded after the ranker's last round (the ranker is cut back to
    its best validation round), computed on the running scores (updated from the leaves,
    never re-predicted), is the risk of the ranker's scores."""
    data, _ = synthetic_letor(n_queries=30, n_features=4, docs=(5, 12), seed=seed)
    ranker = fit_boosted_ranker(data, loss, valid=data, n_trees=6, patience=6, min_leaf=3, **kw)
    rounds = len(ranker.trees) - int(ranker.gains_start)
    assert rounds >= 3 and ranker.gains_start == (loss == "sinkprop")
    options = kw.get("options", {})
    value = LOSSES[loss](ranker.scores(data), data.relevance, data.lengths, **options).value
    recorded = ranker.train_loss[rounds]
    assert float(np.mean(value)) == pytest.approx(recorded, rel=1e-12, abs=1e-15)


def _frozen_lambdarank(s, r, ranking):
    """LambdaRank's value on one query at scores ``s`` with the discounts of the
    positions in the ranking by ``ranking``: a literal double loop."""
    n = s.shape[0]
    d = discounts(n, "log2", None)
    position = np.empty(n, dtype=int)
    position[np.argsort(-ranking, kind="stable")] = np.arange(n)
    g = gains(r, "exp2m1")
    ideal = float(np.sort(g)[::-1] @ d)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if r[i] > r[j]:
                swap = abs(g[i] - g[j]) * abs(d[position[i]] - d[position[j]]) / ideal
                total += swap * np.log1p(np.exp(-(s[i] - s[j])))
    return total


def test_lambdarank_trial_is_the_frozen_value_and_the_loss_at_its_own_ranks(rng):
    data, _ = synthetic_letor(n_queries=7, n_features=2, docs=(3, 9), seed=6)
    old = np.where(data.mask, rng.normal(size=data.relevance.shape), 0.0)
    new = np.where(data.mask, old + rng.normal(size=old.shape), 0.0)
    frozen, result, hess = lambdarank_trial(new, data.relevance, data.lengths, frozen_at=old)
    own, own_hess = lambdarank_with_hessian(new, data.relevance, data.lengths)
    np.testing.assert_array_equal(result.value, own.value)
    np.testing.assert_array_equal(result.grad, own.grad)
    np.testing.assert_array_equal(hess, own_hess)
    for b, m in enumerate(data.lengths):
        r = data.relevance[b, :m]
        at_old = _frozen_lambdarank(new[b, :m], r, old[b, :m])
        assert frozen[b] == pytest.approx(at_old, rel=1e-12, abs=1e-15)
        assert own.value[b] == pytest.approx(_frozen_lambdarank(new[b, :m], r, new[b, :m]))
    assert not np.allclose(frozen, own.value)  # the two rankings differ somewhere


def test_each_lambdarank_trial_is_judged_at_the_ranks_before_the_step(monkeypatch):
    """Newton boosting of LambdaRank freezes each trial at the scores it steps from: the
    first at 0, every later one at the scores of the trial before it (accepted) or where
    that one was frozen (rejected, halved), never at its own scores."""
    from dataclasses import replace

    from rankmodels.ltr import boost

    calls = []

    def recording(scores, relevance, lengths, *, frozen_at, **options):
        calls.append((np.array(scores), np.array(frozen_at)))
        return lambdarank_trial(scores, relevance, lengths, frozen_at=frozen_at, **options)

    spec = replace(LOSSES["lambdarank"], frozen_trial=recording)
    monkeypatch.setattr(boost, "LOSSES", {"lambdarank": spec, "bregman": LOSSES["bregman"]})
    data, _ = synthetic_letor(n_queries=20, n_features=3, docs=(5, 10), seed=2)
    ranker = fit_boosted_ranker(data, "lambdarank", valid=data, n_trees=4, patience=4, min_leaf=3)
    assert len(calls) >= 4 and not ranker.gains_start
    assert np.all(calls[0][1] == 0.0) and np.any(calls[0][0] != 0.0)
    for (tried, before), (following, frozen_at) in zip(calls, calls[1:], strict=False):
        assert np.array_equal(frozen_at, tried) or np.array_equal(frozen_at, before)
        assert np.any(following != frozen_at)
