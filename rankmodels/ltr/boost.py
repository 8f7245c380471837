"""Listwise functional gradient boosting (dissertation chapter 3, Algorithm 1) with
regression-tree or single-feature weak learners, Newton or gradient steps, shrinkage, a
backtracking line search and early stopping.

The ranking function is additive, ``f = sum_t alpha_t h_t``, started at ``f = 0``. With the
empirical risk over the ``B`` training queries

    J(s) = (1/B) sum_b loss_b(s_b),        d_t = -B grad_s J(f_{t-1})              (3.16)

(each document's pseudo-residual: minus the gradient of its own query's loss, as in
Friedman's gradient boosting, so that the step sizes do not shrink with ``B``; for a
Bregman surrogate ``grad_s loss_b = grad psi*(s_b) - r~_b``, so ``d_1`` is
``r~ - grad psi*(0)`` per document, Algorithm 1's initialisation up to its sign), round
``t`` fits a weak learner ``h_t`` and steps along it. Two weak learners
(``weak_learner``): ``"tree"``, regression trees, and ``"feature"``, the single feature
``+-x_k`` of eq. 3.18's exhaustive argmax ``h_t = argmax_h <d_t, h> / ||h||`` (section 3.6;
:mod:`rankmodels.ltr.weak_learners`). Two steps (``step``; default ``"newton"`` for trees and
``"gradient"`` for single features, as section 3.6 runs them):

* ``"newton"`` (default, LambdaMART's): with ``H_t`` the diagonal of each query's Hessian
  (``LossSpec.with_hessian``; negative curvature of non-convex losses clipped to 0), the
  tree's leaves minimise the second-order expansion of the loss, ``v_L = sum_L d /
  (sum_L H + l2)``, and the tree is grown leaf-wise on the same expansion's gains
  (:func:`rankmodels.ltr.trees.grow_tree`); the step is ``alpha_t = eta``;
* ``"gradient"`` (Algorithm 1 as written): ``h_t`` is the least-squares tree of ``d_t``
  (``H = 1``, ``l2 = 0``: mean leaves; a greedy version of eq. 3.18's maximal ``<d_t, h> /
  ||h||``) and ``alpha_t = eta <d_t, h_t> / ||h_t||^2`` (``= eta`` for mean leaves), along
  the **negative** gradient (the dissertation prints the step along ``+grad``, which
  ascends the risk). A single feature takes this step as it is.

A single feature under ``"newton"`` steps by the Newton step along it, ``alpha_t = eta
<d_t, h_t> / sum H_t h_t^2`` (the gradient step's where the curvature along it is 0).

Either step is halved while the Armijo condition ``J(f + alpha h) <= J(f) - c alpha <d_t,
h_t> / B`` (``c = 1e-4``) fails, at most ``max_halvings`` times; the training risk therefore
decreases strictly (a step whose decrease is lost to rounding counts as none), and boosting
stops when no step decreases it. With Newton steps, LambdaRank's ``J(f + alpha h)`` keeps
the ranks of ``f`` (the rank-frozen objective whose gradient and Hessian the step used; at
the new ranks it is another function, and comparing with that stalls the boosting), so
its recorded risk need not decrease. Each round may fit its tree to a random
``subsample`` of the training documents and a random ``colsample`` of the features
(seeded; dissertation section 3.6.4). Losses whose gradient gives no descent from the tied
scores ``f = 0`` (SinkProp and PiRank, whose gradients vanish there by symmetry;
LambdaRank's value at new ranks jumps under gradient steps) start instead from ``f_0 = eta h_0``,
``h_0`` the least-squares tree of the gains ``r~`` (the square surrogate's first
direction, a pointwise ordering), and boost from there. Any loss of
:data:`rankmodels.ltr.losses.LOSSES` can be boosted (its training options, e.g. PiRank's
relaxed value). After every round the validation NDCG@k is measured; the ensemble is cut
back to the best round, stopping after ``patience`` rounds without improvement (without
validation data a random ``valid_fraction`` of the training queries is held out).

The weak learner is the seam :data:`WeakLearner`: a function fitting one learner to the
documents' ``(gradient, hessian)`` on given rows and features.

Trees split raw features (monotone transforms do not change them) and single-feature
learners use them as they are (eq. 3.18 divides by ``||h||``): no standardisation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from rankmodels.ltr.early_stopping import EarlyStopping
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.models import mean_ndcg
from rankmodels.ltr.splits import holdout_split
from rankmodels.ltr.train import TrainingError, check_learnable
from rankmodels.ltr.trees import (
    Tree,
    TreeShape,
    bin_features,
    grow_tree_with_leaves,
    quantile_edges,
)
from rankmodels.ltr.weak_learners import WEAK_LEARNERS, FeatureLearner, fit_feature_learner

__all__ = ["ARMIJO", "STEPS", "BoostedRanker", "WeakLearner", "fit_boosted_ranker"]

STEPS = ("newton", "gradient")
"""The boosting steps (module docstring); the first is the default."""

WeakLearner = Callable[
    [np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None],
    tuple[Tree | FeatureLearner, np.ndarray],
]
"""``fit(grad, hess, rows, features)``: a weak learner fitted to the training documents'
gradient and (diagonal) Hessian ``(N,)``, on the documents ``rows`` (None: all) and the
features where ``features`` ``(F,)`` is True (None: all), predicting the step to add; with
its ``(N,)`` predictions on the training documents (the running scores are updated with
these, not by predicting every document again)."""

ARMIJO = 1e-4
"""Sufficient-decrease constant ``c`` of the backtracking line search."""


@dataclass(frozen=True)
class BoostedRanker:
    """``score(x) = sum_t tree_t(x)`` (each weak learner already times its step).

    ``train_loss``: the training risk ``J`` at the start (after ``f_0`` when there is
    one) and after each boosting round run (including those cut back by early
    stopping); ``valid_ndcg``: validation NDCG@k after each of those rounds;
    ``gains_start``: the first tree is the start ``f_0`` (module docstring).
    """

    trees: tuple[Tree | FeatureLearner, ...]
    train_loss: tuple[float, ...] = ()
    valid_ndcg: tuple[float, ...] = ()
    gains_start: bool = False

    def scores(self, data: LetorData) -> np.ndarray:
        """``(B, n_max)`` scores of the documents of ``data`` (0 on padding)."""
        total = np.zeros(data.relevance.shape)
        for tree in self.trees:
            total += tree.predict(data.features)
        return np.where(data.mask, total, 0.0)

    def ndcg(self, data: LetorData, k: int = 10) -> float:
        """Mean NDCG@k (a query without relevant documents counts 1, as LightGBM)."""
        return mean_ndcg(data, self.scores(data), k)


def tree_learner(
    docs: np.ndarray, shape: TreeShape, max_bins: int
) -> tuple[WeakLearner, WeakLearner]:
    """Histogram trees on ``docs`` ``(N, F)`` binned once: the second-order learner of
    ``shape`` and its least-squares twin (``H = 1``, ``l2 = 0``, no ``min_hessian``)."""
    binned = bin_features(docs, quantile_edges(docs, max_bins))
    squares = replace(shape, l2=0.0, min_hessian=0.0)

    def fitted(tree: Tree, leaf: np.ndarray) -> tuple[Tree, np.ndarray]:
        """The tree and its predictions: its leaves' values where growth placed the
        documents, predicted for the others (left out by ``rows``)."""
        out = tree.value[leaf]
        missing = leaf < 0
        if missing.any():
            out[missing] = tree.predict(docs[missing])
        return tree, out

    def newton(grad, hess, rows, features):
        return fitted(*grow_tree_with_leaves(binned, grad, hess, shape, rows, features))

    def least_squares(grad, hess, rows, features):
        ones = np.ones_like(grad)
        return fitted(*grow_tree_with_leaves(binned, grad, ones, squares, rows, features))

    return newton, least_squares


def feature_learner(docs: np.ndarray) -> WeakLearner:
    """Eq. 3.18's single-feature learner on ``docs`` ``(N, F)``, fitted to the
    pseudo-residuals ``-grad`` of the given rows among the given features."""

    def fit(grad, hess, rows, features):
        X, g = (docs, grad) if rows is None else (docs[rows], grad[rows])
        learner = fit_feature_learner(X, -g, features)
        return learner, learner.predict(docs)

    return fit


def fit_boosted_ranker(
    data: LetorData,
    loss: str = "bregman",
    *,
    valid: LetorData | None = None,
    options: Mapping[str, object] | None = None,
    step: str | None = None,
    weak_learner: str = "tree",
    n_trees: int = 300,
    shrinkage: float = 0.1,
    num_leaves: int = 7,
    max_depth: int | None = None,
    min_leaf: int = 20,
    min_hessian: float = 1e-3,
    l2: float = 0.0,
    min_gain: float = 0.0,
    subsample: float = 1.0,
    colsample: float = 1.0,
    max_bins: int = 64,
    max_halvings: int = 30,
    patience: int = 30,
    valid_fraction: float = 0.2,
    k: int = 10,
    seed: int | np.random.Generator = 0,
    progress: Callable[[int], None] | None = None,
) -> BoostedRanker:
    """Boost ``loss`` (module docstring) with ``weak_learner`` ``"tree"`` (trees of at most
    ``num_leaves`` leaves and ``max_depth``, ``min_leaf``, ``min_hessian``, ``l2``,
    ``min_gain``: see :class:`rankmodels.ltr.trees.TreeShape`; ``max_bins``) or
    ``"feature"``; ``step`` None: ``"newton"`` for trees, ``"gradient"`` for features.
    ``progress`` gets 1 per round and the rest when stopping early, ``n_trees`` in all."""
    if weak_learner not in WEAK_LEARNERS:
        raise ValueError(f"weak_learner must be one of {WEAK_LEARNERS}, got {weak_learner!r}")
    if step is None:
        step = "newton" if weak_learner == "tree" else "gradient"
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}")
    if n_trees < 1 or patience < 1 or max_halvings < 0:
        raise ValueError("n_trees and patience must be >= 1, max_halvings >= 0")
    if not 0 < shrinkage <= 1:
        raise ValueError(f"shrinkage must be in (0, 1], got {shrinkage}")
    if not (0 < subsample <= 1 and 0 < colsample <= 1):
        raise ValueError(f"subsample and colsample must be in (0, 1], got {subsample}, {colsample}")
    shape = TreeShape(num_leaves, max_depth, min_leaf, min_hessian, l2, min_gain)
    rng = np.random.default_rng(seed)
    if valid is None and data.lengths.shape[0] > 1 and valid_fraction > 0:
        fit_idx, valid_idx = holdout_split(data.lengths.shape[0], valid_fraction, rng)
        data, valid = data.subset(fit_idx), data.subset(valid_idx)
    check_learnable(data)
    spec = LOSSES[loss]
    opts = spec.validate({**spec.fit_options, **(options or {})})
    n_queries = data.lengths.shape[0]
    newton = step == "newton"
    rank_frozen = newton and spec.frozen_trial is not None
    State = tuple[float, np.ndarray, np.ndarray | None]

    def risk(s: np.ndarray) -> State:
        """``J(s)``, the loss gradient and (Newton) the clipped Hessian diagonal."""
        with np.errstate(over="ignore", invalid="ignore"):
            if not newton:
                res = spec.function(s, data.relevance, data.lengths, **opts)
                return float(np.mean(res.value)), res.grad, None
            res, hess = spec.with_hessian(s, data.relevance, data.lengths, **opts)
        return float(np.mean(res.value)), res.grad, np.maximum(hess, 0.0)

    def trial(s_new: np.ndarray, s_old: np.ndarray) -> tuple[float, State]:
        """The risk that judges the step from ``s_old`` to ``s_new`` (a rank-frozen loss
        keeps the ranks of ``s_old``) and the state at ``s_new``, in one evaluation."""
        if not rank_frozen:
            new = risk(s_new)
            return new[0], new
        with np.errstate(over="ignore", invalid="ignore"):
            frozen, res, hess = spec.frozen_trial(
                s_new, data.relevance, data.lengths, frozen_at=s_old, **opts
            )
        return float(np.mean(frozen)), (float(np.mean(res.value)), res.grad, np.maximum(hess, 0))

    mask = data.mask
    docs = data.features[mask]
    second_order, least_squares = tree_learner(docs, shape, max_bins)
    learner = second_order if newton else least_squares
    if weak_learner == "feature":
        learner = feature_learner(docs)
    monitor = valid if valid is not None and valid.lengths.shape[0] else data
    s = np.zeros(data.relevance.shape)
    value, grad, hess = risk(s)
    if not np.isfinite(value):
        raise TrainingError(f"the {loss} objective is not finite at zero scores ({opts})")
    n_docs, n_features = docs.shape

    def sample() -> tuple[np.ndarray | None, np.ndarray | None]:
        """This round's rows and features (None: all)."""
        rows = features = None
        if subsample < 1:
            rows = np.sort(rng.choice(n_docs, max(1, round(subsample * n_docs)), replace=False))
        if colsample < 1:
            chosen = rng.choice(n_features, max(1, round(colsample * n_features)), replace=False)
            features = np.zeros(n_features, dtype=bool)
            features[chosen] = True
        return rows, features

    def boosting_round():
        """Weak learner along the pseudo-residuals, Armijo-backtracked; None: no descent."""
        g = grad[mask]
        tree, fitted = learner(g, hess[mask] if newton else None, *sample())
        h = np.zeros_like(s)
        h[mask] = fitted
        along = -float(g @ h[mask])  # <d, h>
        if not along > 0:
            return None
        curvature = float(hess[mask] @ h[mask] ** 2) if newton and weak_learner == "feature" else 0
        if newton and weak_learner == "tree":
            alpha = shrinkage
        else:  # along h: the Newton step where there is curvature, else the gradient step
            alpha = shrinkage * along / (curvature or float(h[mask] @ h[mask]))
        for _ in range(max_halvings + 1):
            judged, new = trial(s + alpha * h, s)
            if judged < value and judged <= value - ARMIJO * alpha * along / n_queries:
                return tree.scaled(alpha), alpha * h, new
            alpha /= 2
        return None

    trees: list[Tree | FeatureLearner] = []
    first = boosting_round()
    if first is None:  # no descent from tied scores: start by ordering on the gains
        gains = -LOSSES["bregman"].function(s, data.relevance, data.lengths).grad
        start = least_squares if weak_learner == "tree" else learner
        tree, fitted = start(-gains[mask], None, None, None)
        trees.append(tree.scaled(shrinkage))
        s[mask] = shrinkage * fitted
        value, grad, hess = risk(s)
        if progress is not None:
            progress(1)
    s_valid = sum((t.predict(monitor.features) for t in trees), np.zeros(monitor.relevance.shape))
    losses, ndcgs = [value], []
    stopper = EarlyStopping(patience, len(trees))  # candidates: ensemble sizes
    for _ in range(n_trees - len(trees)):
        found = first if first is not None and not ndcgs else boosting_round()
        if found is None:
            break  # no step decreases the risk: converged
        tree, delta, (value, grad, hess) = found
        s = s + delta
        trees.append(tree)
        losses.append(value)
        s_valid += tree.predict(monitor.features)
        ndcgs.append(mean_ndcg(monitor, np.where(monitor.mask, s_valid, 0.0), k))
        if progress is not None:
            progress(1)
        if stopper.offer(len(trees), ndcgs[-1]):
            break
    if progress is not None:
        progress(n_trees - len(trees))
    return BoostedRanker(tuple(trees[: stopper.best]), tuple(losses), tuple(ndcgs), first is None)
