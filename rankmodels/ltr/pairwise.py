"""Pairwise losses: RankNet and LambdaRank.

**RankNet** (Burges et al. 2005; SoftRank eq. 5): for every pair with ``r_i > r_j`` the
cross-entropy of ``P_ij = 1 / (1 + exp(-(s_i - s_j)))`` against a certain preference::

    C = sum_{r_i > r_j} log(1 + exp(-(s_i - s_j)))

**LambdaRank** (Burges, Ragno & Le 2006; SoftRank eq. 7) scales each pair's RankNet
gradient by the change ``|Delta NDCG_ij| = |G_i - G_j| |D(rank_i) - D(rank_j)| / IDCG`` that
swapping the two documents in the current ranking would cause. With the ranks frozen at the
current sort this is the exact gradient of

    C_lambda = sum_{r_i > r_j} |Delta NDCG_ij| log(1 + exp(-(s_i - s_j))),

which is what :func:`lambdarank_loss` returns as its value (locally, away from score ties,
the ranks do not move, so finite differences of the value reproduce the lambdas).
SoftRank's eq. 7 writes the pair weight as the signed product ``(g_i - g_j)(D_i - D_j)``,
which agrees with ``|Delta NDCG|`` only for pairs already in the right order and would push
both documents of a misordered pair the same way; the absolute value is Burges' definition.
"""

from __future__ import annotations

import numpy as np

from rankmodels.ltr.batching import LossResult, RaggedBatch, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights
from rankmodels.permutations import inverse

__all__ = ["lambdarank_loss", "ranknet_loss"]


def _pairs(batch: RaggedBatch) -> tuple[np.ndarray, np.ndarray]:
    """``(B, n, n)`` mask of pairs ``r_i > r_j`` and the score differences ``s_i - s_j``."""
    m = batch.mask
    r = batch.relevance
    pairs = (r[:, :, None] > r[:, None, :]) & m[:, :, None] & m[:, None, :]
    return pairs, batch.scores[:, :, None] - batch.scores[:, None, :]


def _weighted_ranknet(batch: RaggedBatch, weight: np.ndarray) -> LossResult:
    pairs, diff = _pairs(batch)
    w = np.where(pairs, weight, 0.0)
    value = (w * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))
    # d/ds_i log(1 + e^{-(s_i - s_j)}) = -sigmoid(-(s_i - s_j)); opposite for s_j
    lam = w * np.exp(-np.logaddexp(0.0, diff))  # sigmoid(-diff), stable
    grad = -lam.sum(axis=2) + lam.sum(axis=1)
    return batch.result(value, grad)


def ranknet_loss(scores: object, relevance: object, lengths: object | None = None) -> LossResult:
    """RankNet cost (SoftRank eq. 5) summed over the pairs ``r_i > r_j`` of each query."""
    return _weighted_ranknet(ragged_batch(scores, relevance, lengths), np.ones(()))


def lambdarank_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> LossResult:
    """LambdaRank: RankNet pairs weighted by ``|Delta NDCG@k|`` of swapping them in the
    current ranking; the gradient is the lambda vector (see the module docstring)."""
    batch = ragged_batch(scores, relevance, lengths)
    u, d, _ = ndcg_weights(batch, k, gain, discount)  # u = G / IDCG (0 when IDCG = 0)
    rank = inverse(hard_orders(batch.scores, batch.lengths))
    dr = d[rank]  # discount at each document's current position
    delta = np.abs(u[:, :, None] - u[:, None, :]) * np.abs(dr[:, :, None] - dr[:, None, :])
    return _weighted_ranknet(batch, delta)
