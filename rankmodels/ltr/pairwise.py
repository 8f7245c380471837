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

import numba as nb
import numpy as np

from rankmodels.ltr.batching import LossResult, RaggedBatch, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights
from rankmodels.permutations import inverse

__all__ = ["lambdarank_loss", "lambdarank_with_hessian", "ranknet_loss", "ranknet_with_hessian"]


@nb.njit(cache=True, parallel=True)
def _pair_terms(s, r, lengths, u, dr, weighted):
    """Per query the weighted RankNet value, its gradient and its diagonal second
    derivative ``sum_j w_ij rho_ij (1 - rho_ij)``, ``rho_ij = sigmoid(-(s_i - s_j))``;
    ``w_ij = |u_i - u_j| |dr_i - dr_j|`` when ``weighted``, else 1."""
    B, n = s.shape
    value = np.zeros(B)
    grad = np.zeros((B, n))
    hess = np.zeros((B, n))
    for b in nb.prange(B):
        for i in range(lengths[b]):
            for j in range(lengths[b]):
                if r[b, i] <= r[b, j]:
                    continue
                w = abs(u[b, i] - u[b, j]) * abs(dr[b, i] - dr[b, j]) if weighted else 1.0
                if w == 0.0:
                    continue
                diff = s[b, i] - s[b, j]
                e = np.exp(-abs(diff))
                value[b] += w * (max(-diff, 0.0) + np.log1p(e))
                rho = e / (1.0 + e) if diff >= 0 else 1.0 / (1.0 + e)  # sigmoid(-diff)
                grad[b, i] -= w * rho
                grad[b, j] += w * rho
                curvature = w * rho * (1.0 - rho)
                hess[b, i] += curvature
                hess[b, j] += curvature
    return value, grad, hess


def _weighted_ranknet(
    batch: RaggedBatch, u: np.ndarray | None = None, dr: np.ndarray | None = None
) -> tuple[LossResult, np.ndarray]:
    """RankNet over the pairs ``r_i > r_j`` (weighted by ``|u_i - u_j| |dr_i - dr_j|``
    when ``u``, ``dr`` are given) and the diagonal of its Hessian."""
    s = np.ascontiguousarray(np.where(batch.mask, batch.scores, 0.0), dtype=np.float64)
    r = np.ascontiguousarray(batch.relevance, dtype=np.float64)
    weighted = u is not None
    zeros = np.zeros_like(s)
    value, grad, hess = _pair_terms(
        s,
        r,
        batch.lengths.astype(np.int64),
        np.ascontiguousarray(u, dtype=np.float64) if weighted else zeros,
        np.ascontiguousarray(dr, dtype=np.float64) if weighted else zeros,
        weighted,
    )
    return batch.result(value, grad), batch.per_item(np.where(batch.mask, hess, 0.0))


def ranknet_with_hessian(
    scores: object, relevance: object, lengths: object | None = None
) -> tuple[LossResult, np.ndarray]:
    """:func:`ranknet_loss` and the diagonal of its Hessian,
    ``d^2 C / ds_i^2 = sum_{j paired with i} rho_ij (1 - rho_ij)``."""
    return _weighted_ranknet(ragged_batch(scores, relevance, lengths))


def ranknet_loss(scores: object, relevance: object, lengths: object | None = None) -> LossResult:
    """RankNet cost (SoftRank eq. 5) summed over the pairs ``r_i > r_j`` of each query."""
    return ranknet_with_hessian(scores, relevance, lengths)[0]


def lambdarank_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
    ranked_by: np.ndarray | None = None,
) -> LossResult:
    """LambdaRank: RankNet pairs weighted by ``|Delta NDCG@k|`` of swapping them in the
    current ranking (or in the ranking by the scores ``ranked_by``: the rank-frozen
    objective at other scores); the gradient is the lambda vector (module docstring)."""
    return lambdarank_with_hessian(
        scores, relevance, lengths, k=k, gain=gain, discount=discount, ranked_by=ranked_by
    )[0]


def lambdarank_with_hessian(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
    ranked_by: np.ndarray | None = None,
) -> tuple[LossResult, np.ndarray]:
    """:func:`lambdarank_loss` and the diagonal of the rank-frozen objective's Hessian,
    LambdaMART's ``sum_j |Delta NDCG_ij| rho_ij (1 - rho_ij)``."""
    batch = ragged_batch(scores, relevance, lengths)
    u, d, _ = ndcg_weights(batch, k, gain, discount)  # u = G / IDCG (0 when IDCG = 0)
    ranking = batch.scores if ranked_by is None else np.reshape(ranked_by, batch.scores.shape)
    rank = inverse(hard_orders(ranking, batch.lengths))
    return _weighted_ranknet(batch, u, d[rank])  # d[rank]: discount at each current position
