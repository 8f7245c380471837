"""Linear rankers trained with any loss of :data:`rankmodels.ltr.losses.LOSSES` by L-BFGS.

The score of document ``j`` of query ``b`` is ``s_bj = x_bj . w`` on standardised features
(zero mean, unit variance over the training documents; ``X`` is the ``(B, n_max, F)``
design, zero on padding). Training minimises over ``w`` (``(F,)``)

    F(w) = (1/B) sum_b loss_b(X_b w) + l2 ||w||^2,
    grad F(w) = (1/B) sum_b X_b^T g_b + 2 l2 w,     g_b = d loss_b / d s_b

(:class:`TrainingObjective`, the very function handed to :func:`scipy.optimize.minimize`,
L-BFGS-B), starting from the ridge regression of the labels on the features (SinkProp
section 5 initialises with the regression weights). A list of ``stages`` (option
overrides, e.g. decreasing ``sigma``) warm-starts each stage from the previous one: the
smoothing annealing of SinkProp / SmoothRank. With validation queries the fit stops early
on their NDCG@k, like the MLP and boosting (:func:`fit_linear_ranker`).

A query whose documents all have the same label contributes a constant (0 for every
loss), so training needs at least one query with two different labels
(:func:`check_learnable`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from rankmodels.errors import InputError
from rankmodels.ltr.early_stopping import EarlyStopping
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES, LossSpec
from rankmodels.ltr.models import LINEAR, LinearRanker, Ranker, ScoreModel

__all__ = [
    "LinearRanker",
    "TrainingError",
    "TrainingObjective",
    "check_learnable",
    "fit_linear_ranker",
    "ridge_ranker",
    "standardisation",
    "training_objective",
]


class TrainingError(ValueError):
    """The objective became non-finite (e.g. a tiny smoothing or ``c`` overflowing the
    loss), so the options cannot be trained as given."""


def standardisation(data: LetorData) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, scale)`` ``(F,)`` of the features over the real documents of ``data``
    (population std; a constant feature gets scale 1)."""
    docs = data.features[data.mask]
    scale = docs.std(axis=0)
    return docs.mean(axis=0), np.where(scale > 0, scale, 1.0)


def ridge_ranker(data: LetorData, l2: float = 1.0) -> LinearRanker:
    """Ridge regression of the labels on the standardised features (pointwise baseline):
    ``w = (Z^T Z + l2 I)^{-1} Z^T r`` over the documents ``Z`` ``(N, F)``."""
    mean, scale = standardisation(data)
    unit = LinearRanker(np.zeros(mean.shape[0]), mean, scale)
    flat = unit.design(data)[data.mask]
    w = np.linalg.solve(
        flat.T @ flat + l2 * np.eye(flat.shape[1]), flat.T @ data.relevance[data.mask]
    )
    return LinearRanker(w, unit.mean, unit.scale)


@dataclass(frozen=True)
class TrainingObjective:
    """``w -> (F(w), grad F(w))`` of the module docstring for one loss and its options.

    ``design`` ``(B, n_max, F)`` standardised features (zero on padding), ``relevance``
    ``(B, n_max)``, ``lengths`` ``(B,)``. With a ``model`` other than linear the scores are
    ``s_b = f(X_b; w)`` and ``grad F(w) = (1/B) sum_b (ds_b/dw)^T g_b + 2 l2 w`` (the
    model's back-propagation, :mod:`rankmodels.ltr.models`), ``w`` all its parameters.
    """

    design: np.ndarray
    relevance: np.ndarray
    lengths: np.ndarray
    loss: LossSpec
    options: Mapping[str, object]
    l2: float
    model: ScoreModel = LINEAR

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """``(F(w), grad F(w))``; ``(inf, 0)`` where the scores overflow (a line search
        backs off from there)."""
        with np.errstate(over="ignore", invalid="ignore"):
            scores = self.model.scores(w, self.design)
        if not np.all(np.isfinite(scores)):
            return np.inf, np.zeros_like(w)
        res = self.loss.function(scores, self.relevance, self.lengths, **self.options)
        n_queries = self.design.shape[0]
        value = float(np.mean(res.value)) + self.l2 * float(w @ w)
        grad = self.model.backward(w, self.design, res.grad) / n_queries + 2.0 * self.l2 * w
        return value, grad


def training_objective(
    data: LetorData,
    loss: str,
    *,
    options: Mapping[str, object] | None = None,
    l2: float = 1e-3,
    standardisation: Ranker | None = None,
    model: ScoreModel = LINEAR,
) -> TrainingObjective:
    """The objective :func:`fit_linear_ranker` (and, with an MLP ``model``,
    :func:`rankmodels.ltr.mlp.fit_mlp_ranker`) minimises: ``loss`` (a name in ``LOSSES``)
    with its training options (PiRank: relaxed value, ``straight_through`` off, so that
    the optimiser sees a value consistent with the gradient) overridden by ``options``, on
    the features standardised as ``standardisation`` does (the ridge start's when omitted)."""
    spec = LOSSES[loss]
    if not 0 <= l2 < np.inf:
        raise ValueError(f"l2 must be finite and >= 0, got {l2}")
    opts = spec.validate({**spec.fit_options, **(options or {})})
    unit = ridge_ranker(data) if standardisation is None else standardisation
    return TrainingObjective(unit.design(data), data.relevance, data.lengths, spec, opts, l2, model)


def check_learnable(data: LetorData, path: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`~rankmodels.errors.InputError` (naming ``path``) when no query has two
    documents with different labels: every loss is then constant and there is nothing to
    learn."""
    rel = np.where(data.mask, data.relevance, np.inf)
    low = rel.min(axis=1, initial=np.inf)
    high = np.where(data.mask, data.relevance, -np.inf).max(axis=1, initial=-np.inf)
    if not np.any(high > low):
        raise InputError(
            f"nothing to learn: none of the {data.lengths.shape[0]} training queries has two "
            "documents with different labels",
            path=path,
        )


def fit_linear_ranker(
    data: LetorData,
    loss: str,
    *,
    valid: LetorData | None = None,
    options: Mapping[str, object] | None = None,
    stages: Sequence[Mapping[str, object]] | None = None,
    l2: float = 1e-3,
    max_iter: int = 100,
    patience: int = 10,
    k: int = 10,
    progress: Callable[[int], None] | None = None,
) -> LinearRanker:
    """Fit ``w`` by L-BFGS on the :func:`training_objective` of ``loss`` with ``options``
    and optional annealing ``stages`` (each warm-started from the previous one).

    With ``valid`` queries, training stops early as the other models do
    (:class:`~rankmodels.ltr.early_stopping.EarlyStopping`): the ridge start and every
    L-BFGS iterate are scored by their mean NDCG@k on ``valid``; a stage ends after
    ``patience`` iterations without a new best, the next stage starts from the best
    weights so far, and the best weights of all (the start included) are returned.
    Without ``valid`` every stage runs to convergence or ``max_iter`` and its last iterate
    is kept.

    ``progress(n)`` is called with the number of L-BFGS iterations done (in all
    ``max_iter * max(1, len(stages))`` steps, a stage that stops early reporting the rest).
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    check_learnable(data)
    start = ridge_ranker(data)
    w = start.weights
    stopper = None
    if valid is not None and valid.lengths.shape[0]:
        stopper = EarlyStopping(patience, w)
        stopper.offer(w, start.ndcg(valid, k))
    for number, stage in enumerate(stages or [{}], start=1):
        objective = training_objective(
            data, loss, options={**(options or {}), **stage}, l2=l2, standardisation=start
        )
        done = 0

        def step(xk: np.ndarray) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(1)
            if stopper is not None:
                iterate = LinearRanker(xk.copy(), start.mean, start.scale)
                if stopper.offer(iterate.weights, iterate.ndcg(valid, k)):
                    raise StopIteration

        if stopper is not None:
            w, stopper.waited = stopper.best, 0
        with np.errstate(over="ignore", invalid="ignore"):
            result = minimize(
                objective,
                w,
                jac=True,
                method="L-BFGS-B",
                callback=step,
                options={"maxiter": max_iter},
            )
        if not (np.isfinite(result.fun) and np.all(np.isfinite(result.x))):
            raise TrainingError(
                f"the {loss} objective is not finite (stage {number}, options "
                f"{objective.options}); try a larger smoothing, c or l2"
            )
        w = result.x
        if progress is not None:
            progress(max_iter - min(done, max_iter))
    return LinearRanker(w if stopper is None else stopper.best, start.mean, start.scale)
