"""Linear rankers trained with any loss of :data:`rankmodels.ltr.losses.LOSSES` by L-BFGS.

The score of document ``j`` of query ``b`` is ``s_bj = x_bj . w`` on standardised features
(zero mean, unit variance over the training documents). Training minimises

    F(w) = mean_b loss_b(X_b w) + l2 ||w||^2,     grad F = mean_b X_b^T g_b + 2 l2 w

with :func:`scipy.optimize.minimize` (L-BFGS-B), starting from the ridge regression of the
labels on the features (SinkProp section 5 initialises with the regression weights). A list
of ``stages`` (option overrides, e.g. decreasing ``sigma``) warm-starts each stage from the
previous one: the smoothing annealing of SinkProp / SmoothRank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from rankmodels.ltr import metrics
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES

__all__ = ["SMOOTHING", "LinearRanker", "fit_linear_ranker", "ridge_ranker"]

SMOOTHING = {"sinkprop": "sigma", "softrank": "sigma", "pirank": "tau"}
"""The smoothing option that annealing lowers, per loss."""


@dataclass(frozen=True)
class LinearRanker:
    """``score = ((x - mean) / scale) . weights``."""

    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray

    def scores(self, data: LetorData) -> np.ndarray:
        """``(B, n_max)`` scores of the documents of ``data`` (0 on padding)."""
        mask = np.arange(data.features.shape[1])[None, :] < data.lengths[:, None]
        z = (data.features - self.mean) / self.scale
        return np.where(mask, z @ self.weights, 0.0)

    def ndcg(self, data: LetorData, k: int = 10) -> float:
        """Mean NDCG@k over the queries (queries without relevant documents count 0)."""
        return float(
            np.mean(metrics.ndcg(data.relevance, self.scores(data), lengths=data.lengths, k=k))
        )


def _standardise(data: LetorData) -> tuple[np.ndarray, np.ndarray]:
    mask = np.arange(data.features.shape[1])[None, :] < data.lengths[:, None]
    docs = data.features[mask]
    mean = docs.mean(axis=0)
    scale = docs.std(axis=0)
    return mean, np.where(scale > 0, scale, 1.0)


def _design(data: LetorData, mean: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mask = np.arange(data.features.shape[1])[None, :] < data.lengths[:, None]
    return np.where(mask[:, :, None], (data.features - mean) / scale, 0.0), mask


def ridge_ranker(data: LetorData, l2: float = 1.0) -> LinearRanker:
    """Ridge regression of the labels on the standardised features (pointwise baseline)."""
    mean, scale = _standardise(data)
    X, mask = _design(data, mean, scale)
    flat = X[mask]
    w = np.linalg.solve(flat.T @ flat + l2 * np.eye(X.shape[2]), flat.T @ data.relevance[mask])
    return LinearRanker(w, mean, scale)


def fit_linear_ranker(
    data: LetorData,
    loss: str,
    *,
    options: dict | None = None,
    stages: Sequence[dict] | None = None,
    l2: float = 1e-3,
    max_iter: int = 100,
) -> LinearRanker:
    """Fit ``w`` by L-BFGS on ``loss`` (a key of ``LOSSES``) with ``options`` and optional
    annealing ``stages``. PiRank is trained on its relaxed value (``straight_through``
    off), since L-BFGS needs a value consistent with the gradient."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    if l2 < 0 or max_iter < 1:
        raise ValueError("l2 must be >= 0 and max_iter >= 1")
    base = {"straight_through": False} if loss == "pirank" else {}
    base.update(options or {})
    fn = LOSSES[loss]
    start = ridge_ranker(data)
    X, _ = _design(data, start.mean, start.scale)
    B = X.shape[0]
    w = start.weights

    for stage in stages or [{}]:
        opts = {**base, **stage}

        def objective(w: np.ndarray, opts: dict = opts) -> tuple[float, np.ndarray]:
            res = fn(X @ w, data.relevance, data.lengths, **opts)
            value = float(np.mean(res.value)) + l2 * float(w @ w)
            grad = np.einsum("bnf,bn->f", X, res.grad) / B + 2.0 * l2 * w
            return value, grad

        w = minimize(objective, w, jac=True, method="L-BFGS-B", options={"maxiter": max_iter}).x
    return LinearRanker(w, start.mean, start.scale)
