"""Listwise functional gradient boosting (dissertation chapter 3, Algorithm 1) with
regression-tree or single-feature weak learners, shrinkage, backtracking line search and
early stopping.

The ranking function is additive, ``f = sum_t alpha_t h_t``, started at ``f = 0``. With the
empirical risk over the ``B`` training queries

    J(s) = (1/B) sum_b loss_b(s_b),        d_t = -B grad_s J(f_{t-1})              (3.16)

(each document's pseudo-residual: minus the gradient of its own query's loss, as in
Friedman's gradient boosting, so that the step sizes do not shrink with ``B``; for a
Bregman surrogate ``grad_s loss_b = grad psi*(s_b) - r~_b``, so ``d_1`` is
``r~ - grad psi*(0)`` per document, Algorithm 1's initialisation up to its sign), round
``t`` fits a weak learner ``h_t`` to ``d_t``: with ``weak_learner="tree"`` a regression
tree by least squares -- the tree whose predictions best align with ``d_t``, a greedy
version of eq. 3.18's maximal ``<d_t, h> / ||h||`` (section 3.6.4) --, with ``"feature"``
the single feature ``+-x_k`` of eq. 3.18's exhaustive argmax (section 3.6;
:mod:`rankmodels.ltr.weak_learners`) -- and steps along the **negative** gradient (the
dissertation prints the step along ``+grad``, which ascends the risk):

    alpha_t = eta <d_t, h_t> / ||h_t||^2     (eta = ``shrinkage``; = eta for mean leaves),

halved while the Armijo condition ``J(f + alpha h) <= J(f) - c alpha <d_t, h_t> / B``
(``c = 1e-4``) fails, at most ``max_halvings`` times; the training risk therefore
decreases monotonically, and boosting stops when no step decreases it. Losses whose
gradient gives no descent from the tied scores ``f = 0`` (SinkProp and PiRank, whose
gradients vanish there by symmetry; LambdaRank's rank-frozen value jumps) start instead
from ``f_0 = eta h_0``, ``h_0`` the tree fitted to the gains ``r~`` (the square
surrogate's first direction, a pointwise ordering), and boost from there. Any loss of
:data:`rankmodels.ltr.losses.LOSSES` can be boosted (its training options, e.g. PiRank's
relaxed value). After every round the validation NDCG@k is measured; the ensemble is cut
back to the best round, stopping after ``patience`` rounds without improvement (without
validation data a random ``valid_fraction`` of the training queries is held out).

Trees split raw features (monotone transforms do not change them) and single-feature
learners use them as they are (eq. 3.18 divides by ``||h||``): no standardisation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from rankmodels.ltr.early_stopping import EarlyStopping
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.models import mean_ndcg
from rankmodels.ltr.splits import holdout_split
from rankmodels.ltr.train import TrainingError, check_learnable
from rankmodels.ltr.trees import Tree, fit_tree, quantile_edges
from rankmodels.ltr.weak_learners import WEAK_LEARNERS, FeatureLearner, fit_feature_learner

__all__ = ["ARMIJO", "BoostedRanker", "fit_boosted_ranker"]

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


def fit_boosted_ranker(
    data: LetorData,
    loss: str = "bregman",
    *,
    valid: LetorData | None = None,
    options: Mapping[str, object] | None = None,
    n_trees: int = 300,
    shrinkage: float = 0.1,
    max_depth: int = 4,
    min_leaf: int = 10,
    max_bins: int = 64,
    max_halvings: int = 30,
    patience: int = 30,
    valid_fraction: float = 0.2,
    k: int = 10,
    weak_learner: str = "tree",
    seed: int | np.random.Generator = 0,
    progress: Callable[[int], None] | None = None,
) -> BoostedRanker:
    """Boost ``loss`` (module docstring) with ``weak_learner`` ``"tree"`` (``max_depth``,
    ``min_leaf``, ``max_bins``) or ``"feature"``; ``progress`` gets 1 per round and the
    rest when stopping early, ``n_trees`` (rounds) in all."""
    if n_trees < 1 or patience < 1 or max_halvings < 0:
        raise ValueError("n_trees and patience must be >= 1, max_halvings >= 0")
    if weak_learner not in WEAK_LEARNERS:
        raise ValueError(f"weak_learner must be one of {WEAK_LEARNERS}, got {weak_learner!r}")
    if not 0 < shrinkage <= 1:
        raise ValueError(f"shrinkage must be in (0, 1], got {shrinkage}")
    if valid is None and data.lengths.shape[0] > 1 and valid_fraction > 0:
        fit_idx, valid_idx = holdout_split(data.lengths.shape[0], valid_fraction, seed)
        data, valid = data.subset(fit_idx), data.subset(valid_idx)
    check_learnable(data)
    spec = LOSSES[loss]
    opts = spec.validate({**spec.fit_options, **(options or {})})
    n_queries = data.lengths.shape[0]

    def risk(s: np.ndarray) -> tuple[float, np.ndarray]:
        with np.errstate(over="ignore", invalid="ignore"):
            res = spec.function(s, data.relevance, data.lengths, **opts)
        return float(np.mean(res.value)), res.grad

    mask = data.mask
    docs = data.features[mask]
    fit_learner: Callable[[np.ndarray], Tree | FeatureLearner] = (
        partial(fit_feature_learner, docs)
        if weak_learner == "feature"
        else partial(
            fit_tree,
            docs,
            edges=quantile_edges(docs, max_bins),
            max_depth=max_depth,
            min_leaf=min_leaf,
        )
    )
    monitor = valid if valid is not None and valid.lengths.shape[0] else data
    s = np.zeros(data.relevance.shape)
    value, grad = risk(s)
    if not np.isfinite(value):
        raise TrainingError(f"the {loss} objective is not finite at zero scores ({opts})")

    def boosting_round() -> tuple[Tree | FeatureLearner, np.ndarray, float, np.ndarray] | None:
        """Learner fitted to the pseudo-residuals, Armijo-backtracked; None: no descent."""
        direction = -grad[mask]
        tree = fit_learner(direction)
        h = np.zeros_like(s)
        h[mask] = tree.predict(docs)
        along = float(direction @ h[mask])  # <d, h> = ||h||^2 for mean leaves
        if not along > 0:
            return None
        step = shrinkage * along / float(h[mask] @ h[mask])
        for _ in range(max_halvings + 1):
            new_value, new_grad = risk(s + step * h)
            if new_value <= value - ARMIJO * step * along / n_queries:
                return tree.scaled(step), step * h, new_value, new_grad
            step /= 2
        return None

    trees: list[Tree | FeatureLearner] = []
    first = boosting_round()
    if first is None:  # no descent from tied scores: start by ordering on the gains
        gains = -LOSSES["bregman"].function(s, data.relevance, data.lengths).grad
        trees.append(fit_learner(gains[mask]).scaled(shrinkage))
        s[mask] = trees[0].predict(docs)
        value, grad = risk(s)
        if progress is not None:
            progress(1)
    s_valid = sum((t.predict(monitor.features) for t in trees), np.zeros(monitor.relevance.shape))
    losses, ndcgs = [value], []
    stopper = EarlyStopping(patience, len(trees))  # candidates: ensemble sizes
    for _ in range(n_trees - len(trees)):
        found = first if first is not None and not ndcgs else boosting_round()
        if found is None:
            break  # no step decreases the risk: converged
        tree, delta, value, grad = found
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
