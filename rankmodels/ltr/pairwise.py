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

__all__ = [
    "lambdarank_loss",
    "lambdarank_trial",
    "lambdarank_with_hessian",
    "ranknet_loss",
    "ranknet_with_hessian",
]


@nb.njit(cache=True, parallel=True)
def _pair_terms(s, r, lengths, u, dr, dr_frozen, weighted):
    """Per query the weighted RankNet value, its gradient, its diagonal second derivative
    ``sum_j w_ij rho_ij (1 - rho_ij)``, ``rho_ij = sigmoid(-(s_i - s_j))``, and the value
    with the weights ``w'_ij`` of ``dr_frozen`` in place of ``dr``; ``w_ij = |u_i - u_j|
    |dr_i - dr_j|`` when ``weighted``, else 1 (``w' = w``): the value at two rankings
    for the price of one (the exponentials are the cost)."""
    B, n = s.shape
    value = np.zeros(B)
    frozen = np.zeros(B)
    grad = np.zeros((B, n))
    hess = np.zeros((B, n))
    for b in nb.prange(B):
        for i in range(lengths[b]):
            for j in range(lengths[b]):
                if r[b, i] <= r[b, j]:
                    continue
                w = w_frozen = 1.0
                if weighted:
                    du = abs(u[b, i] - u[b, j])
                    w = du * abs(dr[b, i] - dr[b, j])
                    w_frozen = du * abs(dr_frozen[b, i] - dr_frozen[b, j])
                if w == 0.0 and w_frozen == 0.0:
                    continue
                diff = s[b, i] - s[b, j]
                e = np.exp(-abs(diff))
                pair = max(-diff, 0.0) + np.log1p(e)
                value[b] += w * pair
                frozen[b] += w_frozen * pair
                rho = e / (1.0 + e) if diff >= 0 else 1.0 / (1.0 + e)  # sigmoid(-diff)
                grad[b, i] -= w * rho
                grad[b, j] += w * rho
                curvature = w * rho * (1.0 - rho)
                hess[b, i] += curvature
                hess[b, j] += curvature
    return value, grad, hess, frozen


def _weighted_ranknet(
    batch: RaggedBatch,
    u: np.ndarray | None = None,
    dr: np.ndarray | None = None,
    dr_frozen: np.ndarray | None = None,
) -> tuple[LossResult, np.ndarray, np.ndarray]:
    """RankNet over the pairs ``r_i > r_j`` (weighted by ``|u_i - u_j| |dr_i - dr_j|``
    when ``u``, ``dr`` are given), the diagonal of its Hessian, and the ``(B,)`` value
    weighted with ``dr_frozen`` instead of ``dr`` (None: ``dr``)."""
    s = np.ascontiguousarray(np.where(batch.mask, batch.scores, 0.0), dtype=np.float64)
    r = np.ascontiguousarray(batch.relevance, dtype=np.float64)
    weighted = u is not None
    zeros = np.zeros_like(s)
    u, dr = (u, dr) if weighted else (zeros, zeros)
    dr_frozen = dr if dr_frozen is None else dr_frozen
    value, grad, hess, frozen = _pair_terms(
        s,
        r,
        batch.lengths.astype(np.int64),
        *(np.ascontiguousarray(x, dtype=np.float64) for x in (u, dr, dr_frozen)),
        weighted,
    )
    hess = batch.per_item(np.where(batch.mask, hess, 0.0))
    return batch.result(value, grad), hess, batch.per_query(frozen)


def ranknet_with_hessian(
    scores: object, relevance: object, lengths: object | None = None
) -> tuple[LossResult, np.ndarray]:
    """:func:`ranknet_loss` and the diagonal of its Hessian,
    ``d^2 C / ds_i^2 = sum_{j paired with i} rho_ij (1 - rho_ij)``."""
    return _weighted_ranknet(ragged_batch(scores, relevance, lengths))[:2]


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
    return _weighted_ranknet(batch, u, _discount_at_ranks(d, ranking, batch))[:2]


def lambdarank_trial(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    frozen_at: np.ndarray,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> tuple[np.ndarray | float, LossResult, np.ndarray]:
    """A line-search trial of LambdaRank at ``scores`` in one pass over the pairs: the
    value of the objective frozen at the ranks of the scores ``frozen_at`` (what the trial
    is judged by), and :func:`lambdarank_with_hessian` at ``scores``' own ranks (the next
    step's lambdas and Hessian if the trial is accepted)."""
    batch = ragged_batch(scores, relevance, lengths)
    u, d, _ = ndcg_weights(batch, k, gain, discount)
    frozen_ranking = np.reshape(frozen_at, batch.scores.shape)
    own = _discount_at_ranks(d, batch.scores, batch)
    frozen = _discount_at_ranks(d, frozen_ranking, batch)
    result, hess, frozen_value = _weighted_ranknet(batch, u, own, frozen)
    return frozen_value, result, hess


def _discount_at_ranks(d: np.ndarray, ranking: np.ndarray, batch: RaggedBatch) -> np.ndarray:
    """``(B, n)``: the discount ``d`` at each document's position in the ranking by
    ``ranking`` (decreasing, ties by index)."""
    return d[inverse(hard_orders(ranking, batch.lengths))]
