"""The listwise re-ranking function of the dissertation (chapter 2, eqs. 2.20-2.21).

A base ranker's score ``b(x_i) > 0`` of document ``i`` is multiplied by the exchangeable
pairwise factors of the other documents of its query:

    f_i(x) = b(x_i) prod_{j != i} exp(sum_k w_k S_k(x_i, x_j))
           = b(x_i) prod_k exp(w_k sum_{j != i} S_k(x_i, x_j))              (2.20, 2.21)

with kernels ``S_k`` and weights ``w`` ``(K,)`` (``w = 0``: the base ranker). The sums
``C_ik = sum_{j != i} S_k(x_i, x_j)`` do not depend on ``w`` and are computed once per
query (:func:`similarity_sums`). Any real-valued base ranker ``g`` (linear, MLP, boosted
trees) gives the positive ``b = exp(g)``; the losses see ``log f_i``, which orders the
documents as ``f_i`` does:

    s_i = log f_i = g(x_i) + sum_k w_k C_ik,        ds_i / dw_k = C_ik.

The kernels (:data:`KERNELS`) are cosine similarities ``S(x_i, x_j) = <z_i, z_j> /
(||z_i|| ||z_j||)`` (0 when either vector is 0) of the documents' features ``z`` after a
per-query normalisation (:func:`rankmodels.ltr.query_norm.normalise_queries`): ``"zscore"``
(``z`` centred within the query: near-duplicates score ~1, dissimilar documents < 0) and
``"minmax"`` (``z`` in ``[0, 1]``: LETOR's query-level normalisation, as the dissertation
builds its cosine kernel). A document with many near-duplicates has a large ``C_ik``;
``w_k < 0`` then demotes redundant documents (diversity).

Training (:func:`fit_reranker`) minimises ``(1/B) sum_b loss_b(s_b) + l2 ||w||^2`` over
``w`` by L-BFGS from ``w = 0`` (the base ranker) through
:class:`~rankmodels.ltr.train.TrainingObjective`, for each ``l2`` of a grid; the ``l2``
whose ranker has the best validation NDCG@k is kept (ties: the larger ``l2``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.models import ScoringRanker, mean_ndcg
from rankmodels.ltr.query_norm import normalise_queries
from rankmodels.ltr.train import TrainingError, TrainingObjective, check_learnable

__all__ = [
    "KERNELS",
    "L2_GRID",
    "RerankModel",
    "RerankedRanker",
    "ScoringRanker",
    "fit_reranker",
    "similarity_sums",
]

KERNELS = ("zscore", "minmax")
"""Cosine-similarity kernels, by the per-query normalisation of the features."""

L2_GRID = (1e3, 1e2, 10.0, 1.0, 0.1, 1e-2, 1e-5, 0.0)
"""The ``l2`` penalties tried by :func:`fit_reranker`, largest first: the dissertation's
``C in {0, 1e-5, 1e-2, 1e-1, 1, 10, 1e2, 1e3}`` (section 2.4.3)."""


def similarity_sums(data: LetorData, kernels: Sequence[str] = KERNELS) -> np.ndarray:
    """``C`` ``(B, n_max, K)``: ``C[b, i, k] = sum_{j != i} S_k(x_bi, x_bj)`` over the real
    documents of query ``b`` (module docstring; 0 on padding)."""
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown or not kernels:
        raise ValueError(f"kernels must be a non-empty selection of {KERNELS}, got {kernels}")
    out = np.zeros((*data.relevance.shape, len(kernels)))
    mask = data.mask
    for k, kernel in enumerate(kernels):
        z = normalise_queries(data, kernel).features
        norm = np.linalg.norm(z, axis=2, keepdims=True)
        unit = np.where(norm > 0, z / np.where(norm > 0, norm, 1.0), 0.0)
        cos = np.einsum("bif,bjf->bij", unit, unit)
        self_sim = np.einsum("bif,bif->bi", unit, unit)
        out[:, :, k] = np.where(mask, cos.sum(axis=2) - self_sim, 0.0)
    return out


@dataclass(frozen=True)
class RerankModel:
    """The score model of the re-ranker on the design ``X = [g, C]`` ``(B, n_max, 1 + K)``:
    ``s = X[..., 0] + X[..., 1:] w``, ``theta = w`` ``(K,)``."""

    name: str = "rerank"

    def n_params(self, n_features: int) -> int:
        return n_features - 1

    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        return X[..., 0] + X[..., 1:] @ theta

    def backward(self, theta: np.ndarray, X: np.ndarray, grad: np.ndarray) -> np.ndarray:
        return np.einsum("bnk,bn->k", X[..., 1:], grad)


RERANK = RerankModel()


@dataclass(frozen=True)
class RerankedRanker:
    """``s_i = base(x_i) + sum_k weights_k C_ik`` (module docstring); ``l2`` the chosen
    penalty, ``valid_ndcg`` the validation NDCG@k of every ``l2`` tried."""

    base: ScoringRanker
    weights: np.ndarray
    kernels: tuple[str, ...] = KERNELS
    l2: float = 0.0
    valid_ndcg: Mapping[float, float] = field(default_factory=dict, hash=False)

    def design(self, data: LetorData) -> np.ndarray:
        """``[g, C]`` ``(B, n_max, 1 + K)`` of the :class:`RerankModel`."""
        base = np.where(data.mask, self.base.scores(data), 0.0)
        return np.concatenate([base[:, :, None], similarity_sums(data, self.kernels)], axis=2)

    def scores(self, data: LetorData) -> np.ndarray:
        """``(B, n_max)`` re-ranked scores ``log f`` (0 on padding)."""
        return np.where(data.mask, RERANK.scores(self.weights, self.design(data)), 0.0)

    def ndcg(self, data: LetorData, k: int = 10) -> float:
        """Mean NDCG@k (a query without relevant documents counts 1, as LightGBM)."""
        return mean_ndcg(data, self.scores(data), k)


def fit_reranker(
    data: LetorData,
    base: ScoringRanker,
    loss: str,
    valid: LetorData,
    *,
    options: Mapping[str, object] | None = None,
    kernels: Sequence[str] = KERNELS,
    l2_grid: Sequence[float] = L2_GRID,
    max_iter: int = 100,
    k: int = 10,
    progress: Callable[[int], None] | None = None,
) -> RerankedRanker:
    """Fit the weights ``w`` on ``data`` for each ``l2`` of ``l2_grid`` and keep the one
    with the best NDCG@k on ``valid`` (module docstring). ``progress(1)`` per L-BFGS
    iteration, the rest of ``max_iter`` when a fit stops early (``max_iter * len(l2_grid)``
    in all)."""
    if max_iter < 1 or not l2_grid or not all(0 <= g < np.inf for g in l2_grid):
        raise ValueError("need max_iter >= 1 and a non-empty grid of finite l2 >= 0")
    check_learnable(data)
    spec = LOSSES[loss]
    opts = spec.validate({**spec.fit_options, **(options or {})})
    unfitted = RerankedRanker(base, np.zeros(len(kernels)), tuple(kernels))
    design = unfitted.design(data)
    rankers = []
    for l2 in sorted(l2_grid, reverse=True):
        objective = TrainingObjective(design, data.relevance, data.lengths, spec, opts, l2, RERANK)
        step = (lambda _w: progress(1)) if progress is not None else None
        with np.errstate(over="ignore", invalid="ignore"):
            result = minimize(
                objective,
                np.zeros(len(kernels)),
                jac=True,
                method="L-BFGS-B",
                callback=step,
                options={"maxiter": max_iter},
            )
        if not (np.isfinite(result.fun) and np.all(np.isfinite(result.x))):
            raise TrainingError(f"the {loss} re-ranking objective is not finite (l2 {l2})")
        if progress is not None:
            progress(max_iter - min(int(result.nit), max_iter))
        rankers.append(RerankedRanker(base, result.x, tuple(kernels), l2))
    tried = {r.l2: r.ndcg(valid, k) for r in rankers}
    best = max(rankers, key=lambda r: tried[r.l2])  # the first, largest l2 on ties
    return RerankedRanker(base, best.weights, best.kernels, best.l2, tried)
