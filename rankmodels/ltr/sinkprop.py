"""SinkProp: expected NDCG under an incompletely Sinkhorn-normalised smoothed indicator matrix.

Adams & Zemel, "Ranking via Sinkhorn Propagation". For one query with scores ``s`` (``n``
items) and ``s_hat`` the order sorting ``s`` decreasingly:

1. smoothed indicator matrix (eq. 7)::

       A[j, k] = exp(-(s_j - s_{s_hat[k]})^2 / (2 sigma^2))     (+ eps, section 5)

   row ``j`` = item, column ``k`` = position; ``sigma -> 0`` gives the permutation matrix
   of ``s_hat``, ``sigma -> inf`` the all-ones matrix;
2. ``Pi = Z^T(A)``, ``T`` iterations of column-then-row normalisation (the paper uses 5),
   :func:`rankmodels.dsm.sinkhorn` in the log domain;
3. expected NDCG@K (eq. 4) ``sum_{j,k<K} Pi[j,k] G(r_j) D(k) / IDCG@K``.

The loss is ``1 - E_Pi[NDCG@K]``; its gradient goes back through the Sinkhorn iterations
(:func:`rankmodels.dsm.sinkhorn_vjp`) and eq. 7, with the sort ``s_hat`` held fixed (the
matrix is continuous, and differentiable except at ties, section 4.2).
"""

from __future__ import annotations

import numpy as np

from rankmodels.dsm import sinkhorn, sinkhorn_vjp
from rankmodels.ltr.batching import LossResult, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = ["MAX_ITERATIONS", "annealing_schedule", "sinkprop_loss"]

MAX_ITERATIONS = 10_000
"""Largest ``n_iter`` (the paper uses 5; the backward pass keeps ``O(B n n_iter)`` numbers)."""


def sinkprop_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    sigma: float = 1.0,
    n_iter: int = 5,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "sinkprop",
    eps: float = 0.0,
) -> LossResult:
    """``1 - E_Pi[NDCG@k]`` of SinkProp (eqs. 4 and 7) and its gradient w.r.t. the scores.

    Parameters
    ----------
    scores, relevance, lengths:
        A ragged batch (:func:`rankmodels.ltr.batching.ragged_batch`).
    sigma:
        Width of the smoothed indicators; anneal it towards 0 during training
        (:func:`annealing_schedule`).
    n_iter:
        Sinkhorn iterations (column then row), at most :data:`MAX_ITERATIONS`; 5 in the
        paper.
    k:
        NDCG cut-off; the whole list when omitted (as in the paper's experiments).
    eps:
        Constant added to every entry of ``A`` before normalising (the paper uses ~1e-6).

    Queries without a relevant document have loss 0 and zero gradient.
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    if eps < 0:
        raise ValueError(f"eps must be non-negative, got {eps}")
    if not 0 <= n_iter <= MAX_ITERATIONS:
        raise ValueError(f"n_iter must lie in 0..{MAX_ITERATIONS}, got {n_iter}")
    batch = ragged_batch(scores, relevance, lengths)
    s = batch.scores
    order = hard_orders(s, batch.lengths)
    t = np.take_along_axis(s, order, axis=1)  # score at position k
    diff = s[:, :, None] - t[:, None, :]
    log_a = -0.5 * (diff / sigma) ** 2  # (not diff^2 / sigma^2: sigma^2 may underflow)
    if eps > 0:
        weight = 1.0 / (1.0 + eps * np.exp(-log_a))  # d log(A + eps) / d log A
        log_a = np.logaddexp(log_a, np.log(eps))
    res = sinkhorn(log_a, batch.lengths, n_iter=n_iter)
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    value = np.where(defined, 1.0 - np.einsum("bj,bjk,k->b", u, res.p, d), 0.0)
    g_log_a = sinkhorn_vjp(res, -u[:, :, None] * d[None, None, :])
    if eps > 0:
        g_log_a = g_log_a * weight
    # d log_a[j, k] / d s_j = -diff / sigma^2 ; d log_a[j, k] / d t_k = +diff / sigma^2
    w = g_log_a * (-(diff / sigma) / sigma)
    grad = w.sum(axis=2)
    np.add.at(grad, (np.arange(s.shape[0])[:, None], order), -w.sum(axis=1))
    return batch.result(value, grad)


def annealing_schedule(start: float, stop: float, n_stages: int) -> np.ndarray:
    """Geometric schedule ``start -> stop`` of smoothing widths (SinkProp section 5 anneals
    ``sigma`` "as in" Chapelle & Wu's SmoothRank)."""
    if not (start > 0 and stop > 0) or n_stages < 1:
        raise ValueError("start and stop must be positive and n_stages >= 1")
    return np.geomspace(start, stop, n_stages)
