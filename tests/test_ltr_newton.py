"""Second-order trees and Newton boosting: leaf values against the closed-form minimiser
of the second-order expansion, splits and leaf-wise growth against brute force, seeded
subsampling, and the gradient step pinned to the results of Algorithm 1 before Newton
steps existed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.trees import TreeShape, bin_features, grow_tree, quantile_edges


def _expansion(g, h, l2, v):
    """Second-order expansion of the loss in a leaf's value ``v``."""
    return g.sum() * v + 0.5 * (h.sum() + l2) * v * v


def _leaf_optimum(g, h, l2):
    """Minimiser of :func:`_expansion`, numerically (no closed form used)."""
    return minimize_scalar(
        lambda v: _expansion(g, h, l2, v),
        bounds=(-1e3, 1e3),
        method="bounded",
        options={"xatol": 1e-10},
    ).x


def _small(rng, n=24, F=3):
    X = rng.integers(0, 5, size=(n, F)).astype(float)
    g = rng.normal(size=n) + X[:, 0] - 2 * (X[:, 1] > 2)
    h = rng.uniform(0.1, 2.0, size=n)
    return X, g, h


def _best_split_brute(X, g, h, idx, l2, min_leaf):
    """Over every feature and threshold of the samples ``idx``: the split whose two
    optimised expansions are lowest; returns (decrease, left idx, right idx), or None when
    no split lowers it (with l2 > 0 a split can raise it: each leaf pays l2)."""
    base = _expansion(g[idx], h[idx], l2, _leaf_optimum(g[idx], h[idx], l2))
    best = None
    for f in range(X.shape[1]):
        for t in np.unique(X[idx, f])[:-1]:
            go = X[idx, f] <= t
            left, right = idx[go], idx[~go]
            if left.size < min_leaf or right.size < min_leaf:
                continue
            value = sum(
                _expansion(g[p], h[p], l2, _leaf_optimum(g[p], h[p], l2)) for p in (left, right)
            )
            if base - value > (best[0] if best else 0.0) + 1e-7:
                best = (base - value, left, right)
    return best


def _partition(tree, X):
    leaf_of = tree.predict(X)
    return sorted(tuple(np.flatnonzero(leaf_of == v)) for v in np.unique(leaf_of))


@pytest.mark.parametrize("l2", [0.0, 1.5])
def test_newton_leaves_minimise_the_second_order_expansion(rng, l2):
    X, g, h = _small(rng)
    binned = bin_features(X, quantile_edges(X, 256))
    tree = grow_tree(binned, g, h, TreeShape(num_leaves=4, min_leaf=2, l2=l2))
    pred = tree.predict(X)
    leaves = np.unique(pred)
    assert leaves.size == 4
    for v in leaves:
        members = pred == v
        assert v == pytest.approx(_leaf_optimum(g[members], h[members], l2), abs=1e-6)
        assert v == pytest.approx(-g[members].sum() / (h[members].sum() + l2), rel=1e-12)


@pytest.mark.parametrize(("k", "min_leaf"), [(2, 1), (3, 2), (5, 2), (7, 3)])
def test_leaf_wise_growth_splits_the_best_gain_leaf_first(rng, k, min_leaf):
    """Brute force: start from one leaf; repeatedly split the leaf whose best split lowers
    the optimised expansion most, until k leaves or no split lowers it. The tree has the
    same partition (k leaves but in the last case, where l2 stops the growth at 5)."""
    X, g, h = _small(rng, n=30)
    l2 = 0.5
    leaves = [np.arange(X.shape[0])]
    while len(leaves) < k:
        found = [_best_split_brute(X, g, h, idx, l2, min_leaf) for idx in leaves]
        i = max(range(len(leaves)), key=lambda j: -np.inf if found[j] is None else found[j][0])
        if found[i] is None:
            break
        leaves[i : i + 1] = [found[i][1], found[i][2]]
    assert len(leaves) == (k if k < 7 else 5)
    binned = bin_features(X, quantile_edges(X, 256))
    tree = grow_tree(binned, g, h, TreeShape(num_leaves=k, min_leaf=min_leaf, l2=l2))
    assert int((tree.feature < 0).sum()) == len(leaves)
    assert _partition(tree, X) == sorted(tuple(p) for p in leaves)


def test_min_gain_depth_rows_and_features_restrict_the_tree(rng):
    X, g, h = _small(rng, n=40)
    binned = bin_features(X, quantile_edges(X, 256))
    free = grow_tree(binned, g, h, TreeShape(num_leaves=8, min_leaf=2))
    assert int((free.feature < 0).sum()) == 8
    shallow = grow_tree(binned, g, h, TreeShape(num_leaves=8, max_depth=1, min_leaf=2))
    assert int((shallow.feature < 0).sum()) == 2
    best = _best_split_brute(X, g, h, np.arange(40), 0.0, 2)[0]
    # gain (decrease x 2) just above / below the root's best split: no split / one split
    assert (
        grow_tree(binned, g, h, TreeShape(8, min_leaf=2, min_gain=2 * best * 1.001)).feature[0]
        == -1
    )
    assert (
        grow_tree(binned, g, h, TreeShape(8, min_leaf=2, min_gain=2 * best * 0.999)).feature[0] >= 0
    )
    only = np.array([False, False, True])
    assert set(grow_tree(binned, g, h, TreeShape(8, min_leaf=2), features=only).feature) <= {-1, 2}
    rows = np.arange(0, 40, 2)
    stump = grow_tree(binned, g, h, TreeShape(1, min_leaf=2), rows=rows)
    assert stump.value[0] == pytest.approx(-g[rows].sum() / h[rows].sum())


def _data():
    return synthetic_letor(n_queries=30, n_features=4, docs=(4, 12), seed=5)[0]


def test_subsampling_is_reproducible_with_a_seed():
    data = _data()
    kw = dict(n_trees=8, min_leaf=3, subsample=0.6, colsample=0.5, patience=100)
    a = fit_boosted_ranker(data, "listnet", seed=3, **kw)
    b = fit_boosted_ranker(data, "listnet", seed=3, **kw)
    c = fit_boosted_ranker(data, "listnet", seed=4, **kw)
    np.testing.assert_array_equal(a.scores(data), b.scores(data))
    assert a.train_loss == b.train_loss
    assert not np.allclose(a.scores(data), c.scores(data))
    full = fit_boosted_ranker(data, "listnet", seed=3, **{**kw, "subsample": 1.0, "colsample": 1.0})
    assert not np.allclose(a.scores(data), full.scores(data))
    used = {int(f) for t in a.trees for f in t.feature if f >= 0}
    assert all(sum(1 for f in set(t.feature) if f >= 0) <= 2 for t in a.trees) and used


# Algorithm 1 (step "gradient", depth-3 trees of every split) before Newton steps existed:
# risk after the last round, last validation NDCG@10, trees kept, sum of the scores
# weighted by their flat index, gains start.
PINNED = {
    ("bregman", ()): (0.340995469607, 0.93897548209, 3, 1968.326071686, False),
    ("lambdarank", ()): (1.046570076839, 0.931705712957, 2, 578.979627887, True),
    ("listnet", ()): (1.933785408302, 0.970191932877, 1, 3.861651913, False),
    ("bregman", (("surrogate", "qnorm"),)): (
        0.25207036594,
        0.936963887549,
        2,
        1263.45919783,
        False,
    ),
}


@pytest.mark.parametrize(("loss", "options"), list(PINNED))
def test_gradient_step_reproduces_algorithm_one_as_before(loss, options):
    data = _data()
    model = fit_boosted_ranker(
        data,
        loss,
        options=dict(options),
        step="gradient",
        n_trees=12,
        num_leaves=8,
        max_depth=3,
        min_leaf=3,
        patience=100,
        seed=1,
    )
    risk, ndcg, n, weighted, start = PINNED[(loss, options)]
    s = model.scores(data)
    assert len(model.train_loss) == 13 - start
    assert model.train_loss[-1] == pytest.approx(risk, abs=1e-11)
    assert model.valid_ndcg[-1] == pytest.approx(ndcg, abs=1e-11)
    assert len(model.trees) == n and model.gains_start == start
    assert (s * np.arange(s.size).reshape(s.shape)).sum() == pytest.approx(weighted, abs=1e-8)


def test_newton_descends_faster_than_the_gradient_step_on_convex_losses():
    """Same trees and shrinkage: the second-order leaves lower the training risk more per
    round (square surrogate: Hessian 1/2, so Newton leaves are twice the mean leaves)."""
    data = _data()
    for loss in ("bregman", "listnet", "ranknet"):
        kw = dict(n_trees=10, min_leaf=3, patience=100, valid=data)
        newton = fit_boosted_ranker(data, loss, **kw).train_loss
        gradient = fit_boosted_ranker(data, loss, step="gradient", **kw).train_loss
        assert newton[-1] < gradient[-1]


def test_bad_step_and_fractions():
    data = _data()
    with pytest.raises(ValueError, match="step must be one of"):
        fit_boosted_ranker(data, step="adam")
    with pytest.raises(ValueError, match="subsample and colsample"):
        fit_boosted_ranker(data, colsample=0.0)
    with pytest.raises(ValueError, match="num_leaves and min_leaf"):
        fit_boosted_ranker(data, num_leaves=0)
