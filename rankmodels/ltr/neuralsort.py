"""NeuralSort relaxed sorting and the PiRank relaxed NDCG@k loss.

NeuralSort (Grover et al.; PiRank appendix B) relaxes the permutation matrix that sorts
``s`` (``n`` scores) decreasingly, row ``i`` = position ``i`` (1-based), column = item::

    P_hat[i, :] = softmax(((n + 1 - 2i) s - A_s 1) / tau),     A_s[j, l] = |s_j - s_l|

(the transpose of the ``M[item, position]`` convention of :mod:`rankmodels.dsm`). Each row
is a distribution over items; as ``tau -> 0`` ``P_hat`` tends to the sorting permutation
matrix (PiRank proposition 1). The relaxed DCG@k (PiRank eq. 8) is
``sum_{i<=k} (P_hat g)_i D(i)`` with gains ``g`` and discount ``D(i) = 1/log2(1+i)``;
the loss is ``1 - DCG_hat@k / IDCG@k``.

*Straight-through estimation* (PiRank appendix C): the loss value is the hard
``1 - NDCG@k`` of the sorted scores while the gradient is the relaxed one.

*Multi-level (divide and conquer)*: for long lists, split the items into blocks of at most
``block_size``, relax-sort each block and keep its top ``min(k, block)`` rows, concatenate
the relaxed top values ``y = P_c s_c`` and relax-sort them again (recursively), so that
``P_hat = Q [blockdiag(P_c)]`` costs ``O(k n + block * n)`` instead of ``O(n^2)``
(PiRank section 3.2, appendix B, eqs. 19-23). Gradients are exact (hand-written reverse
mode) for both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import softmax

from rankmodels.ltr.batching import LossResult, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = ["neuralsort", "pirank_loss", "relaxed_topk"]

Backward = Callable[[np.ndarray], np.ndarray]


def _check_tau(tau: float) -> None:
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")


def neuralsort(s: np.ndarray, tau: float, k: int | None = None) -> np.ndarray:
    """The first ``k`` rows (all if omitted) of ``P_hat`` for one list ``s`` (``(n,)``)."""
    _check_tau(tau)
    s = np.asarray(s, dtype=float)
    n = s.shape[0]
    kk = n if k is None else min(k, n)
    coef = n - 1 - 2 * np.arange(kk)  # (n + 1 - 2i) for 1-based i
    b = np.abs(s[:, None] - s[None, :]).sum(axis=1)
    return softmax((coef[:, None] * s[None, :] - b[None, :]) / tau, axis=1)


def _neuralsort_vjp(s: np.ndarray, tau: float, P: np.ndarray, gP: np.ndarray) -> np.ndarray:
    """``dU/ds`` from ``dU/dP_hat`` (rows ``:k``). Through the row softmax
    ``gZ = P (gP - rowsum(gP P))``; ``Z[i, j] = (c_i s_j - B_j) / tau`` with
    ``B_j = sum_l |s_j - s_l|`` and ``dB_j/ds_m = sign(s_m - s_j)`` (``m != j``)."""
    n = s.shape[0]
    coef = n - 1 - 2 * np.arange(P.shape[0])
    gZ = P * (gP - (gP * P).sum(axis=1, keepdims=True))
    cz = gZ.sum(axis=0)
    sg = np.sign(s[:, None] - s[None, :])
    return (coef @ gZ - (cz * sg.sum(axis=1) + sg @ cz)) / tau


def relaxed_topk(
    s: np.ndarray, tau: float, k: int, block_size: int | None = None
) -> tuple[np.ndarray, Backward]:
    """Relaxed top-``k`` rows ``(min(k, n), n)`` of the sorting matrix and its VJP.

    With ``block_size`` the multi-level construction of the module docstring is used
    (``block_size`` must exceed ``k`` so that every level shrinks the list).
    """
    _check_tau(tau)
    s = np.asarray(s, dtype=float)
    n = s.shape[0]
    if block_size is not None and block_size <= k:
        raise ValueError(f"block_size must exceed k={k}, got {block_size}")
    if block_size is None or n <= block_size:
        P = neuralsort(s, tau, k)
        return P, lambda gP: _neuralsort_vjp(s, tau, P, gP)
    # blocks of exactly block_size (> k) items, the last one shorter: each level shrinks
    chunks = [np.arange(i, min(i + block_size, n)) for i in range(0, n, block_size)]
    children = [relaxed_topk(s[idx], tau, k, block_size) for idx in chunks]
    tops = [Pc @ s[idx] for (Pc, _), idx in zip(children, chunks, strict=True)]
    cols = np.split(np.arange(sum(len(t) for t in tops)), np.cumsum([len(t) for t in tops])[:-1])
    Q, back_q = relaxed_topk(np.concatenate(tops), tau, k, block_size)
    P = np.zeros((Q.shape[0], n))
    for (Pc, _), idx, col in zip(children, chunks, cols, strict=True):
        P[:, idx] = Q[:, col] @ Pc

    def backward(gP: np.ndarray) -> np.ndarray:
        gQ = np.zeros_like(Q)
        for (Pc, _), idx, col in zip(children, chunks, cols, strict=True):
            gQ[:, col] = gP[:, idx] @ Pc.T
        gy = back_q(gQ)
        gs = np.zeros(n)
        for (Pc, back_c), idx, col in zip(children, chunks, cols, strict=True):
            gPc = Q[:, col].T @ gP[:, idx] + np.outer(gy[col], s[idx])
            gs[idx] = back_c(gPc) + Pc.T @ gy[col]
        return gs

    return P, backward


def pirank_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    tau: float = 1.0,
    k: int | None = None,
    block_size: int | None = None,
    straight_through: bool = True,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> LossResult:
    """PiRank ``1 - NDCG_hat@k`` with the NeuralSort relaxation and its gradient.

    Parameters
    ----------
    tau:
        Temperature; ``tau -> 0`` recovers the hard NDCG@k (PiRank proposition 1).
    k:
        NDCG cut-off (PiRank uses 10); the whole list when omitted.
    block_size:
        Enables the multi-level relaxation for lists longer than ``block_size``; needs a
        cut-off ``k < block_size`` (each block keeps its top ``k``).
    straight_through:
        Report the hard loss ``1 - NDCG@k`` as the value, keep the relaxed gradient.
    """
    _check_tau(tau)
    if block_size is not None and (k is None or block_size <= k):
        raise ValueError(
            f"block_size needs a cut-off k below it, got k={k}, block_size={block_size}"
        )
    batch = ragged_batch(scores, relevance, lengths)
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    B = batch.scores.shape[0]
    value = np.zeros(B)
    grad = np.zeros_like(batch.scores)
    orders = hard_orders(batch.scores, batch.lengths)
    for b in range(B):
        m = int(batch.lengths[b])
        if not defined[b] or m == 0:
            continue
        kk = m if k is None else min(k, m)
        P, backward = relaxed_topk(batch.scores[b, :m], tau, kk, block_size)
        ub, db = u[b, :m], d[:kk]
        if straight_through:
            value[b] = 1.0 - ub[orders[b, :kk]] @ db
        else:
            value[b] = 1.0 - db @ P @ ub
        grad[b, :m] = backward(-np.outer(db, ub))
    return batch.result(value, grad)
