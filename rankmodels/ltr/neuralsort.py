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
``b_1`` items, relax-sort each block and keep its top ``min(k_1, block)`` rows, concatenate
the relaxed top values ``y = P_c s_c`` and relax-sort them again -- in blocks of ``b_2``
keeping ``k_2`` rows, and so on --, the last sort keeping ``k``, so that
``P_hat = Q [blockdiag(P_c)]`` costs ``O(k n + b_1 n)`` instead of ``O(n^2)`` (PiRank
section 3.2, appendix B, eqs. 19-23). The block size ``b_j`` and rows kept ``k_j`` of height
``j`` are per level (``block_size`` and ``level_k``: one integer for every level, or a
sequence whose last entry repeats for the levels beyond it; ``k_j`` defaults to ``k``);
each needs ``k <= k_j < b_j``, so that every level shrinks the list and the top ``k``
survive in the ``tau -> 0`` limit. The sorts at height ``j = 1 .. d`` (``1``:
the blocks of the scores, ``d``: the last sort) have temperatures increasing with height,
``tau_1 <= ... <= tau_d = tau`` (appendix B, eq. 19; its limit ``tau -> 0`` lowers
``tau_1`` first, then ``tau_2``, ...): here ``tau_j = tau * level_ratio^(d - j)`` with
``0 < level_ratio <= 1`` (1: one temperature at every level). Gradients are exact
(hand-written reverse mode) for both.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
from scipy.special import softmax

from rankmodels.ltr.batching import LossResult, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = ["neuralsort", "pirank_loss", "relaxed_levels", "relaxed_topk"]

Backward = Callable[[np.ndarray], np.ndarray]


def _check_tau(tau: float) -> None:
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")


def neuralsort(s: np.ndarray, tau: float, k: int | None = None) -> np.ndarray:
    """The first ``k`` rows (all if omitted) of ``P_hat`` for a list ``s`` (``(n,)``), or for
    each of a stack of lists of one length (``(..., n)`` -> ``(..., k, n)``)."""
    _check_tau(tau)
    s = np.asarray(s, dtype=float)
    n = s.shape[-1]
    kk = n if k is None else min(k, n)
    coef = n - 1 - 2 * np.arange(kk)  # (n + 1 - 2i) for 1-based i
    b = np.abs(s[..., :, None] - s[..., None, :]).sum(axis=-1)
    return softmax((coef[:, None] * s[..., None, :] - b[..., None, :]) / tau, axis=-1)


def _neuralsort_vjp(s: np.ndarray, tau: float, P: np.ndarray, gP: np.ndarray) -> np.ndarray:
    """``dU/ds`` from ``dU/dP_hat`` (rows ``:k``), per list of a stack as :func:`neuralsort`.
    Through the row softmax ``gZ = P (gP - rowsum(gP P))``; ``Z[i, j] = (c_i s_j - B_j) /
    tau`` with ``B_j = sum_l |s_j - s_l|`` and ``dB_j/ds_m = sign(s_m - s_j)`` (``m != j``)."""
    n = s.shape[-1]
    coef = n - 1 - 2 * np.arange(P.shape[-2])
    gZ = P * (gP - (gP * P).sum(axis=-1, keepdims=True))
    cz = gZ.sum(axis=-2)
    sg = np.sign(s[..., :, None] - s[..., None, :])
    return (coef @ gZ - (cz * sg.sum(axis=-1) + (sg @ cz[..., None])[..., 0])) / tau


PerLevel = int | tuple[int, ...]
"""One integer for every level, or one per level (the last repeating)."""


def _per_level(value: PerLevel | None, name: str) -> tuple[int, ...] | None:
    """``value`` as a tuple of positive integers, one per level (None stays None)."""
    if value is None:
        return None
    levels = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if not levels or not all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 for v in levels
    ):
        raise ValueError(f"{name} must be a positive integer or a list of them, got {value!r}")
    return tuple(int(v) for v in levels)


def _levels(
    k: int | None, block_size: PerLevel | None, level_k: PerLevel | None
) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """Per-level block sizes and rows kept, checked: ``k <= k_j < b_j`` at every level
    (module docstring)."""
    sizes = _per_level(block_size, "block_size")
    keeps = _per_level(level_k, "level_k")
    if sizes is None:
        if keeps is not None:
            raise ValueError("level_k needs block_size (the multi-level relaxation)")
        return None, (1,)
    keeps = keeps or (k or 0,)
    pairs = [(_at(sizes, j), _at(keeps, j)) for j in range(max(len(sizes), len(keeps)))]
    if k is None or not all(k <= kj < b for b, kj in pairs):
        raise ValueError(
            "block_size needs a cut-off k below it, with k <= level_k < block_size at every "
            f"level; got k={k}, block_size={block_size}, level_k={level_k}"
        )
    return sizes, keeps


def _at(values: tuple[int, ...], j: int) -> int:
    """The entry of level ``j`` (0-based), the last one repeating."""
    return values[min(j, len(values) - 1)]


def relaxed_levels(
    n: int, k: int, block_size: PerLevel | None, level_k: PerLevel | None = None
) -> int:
    """The height ``d`` of the multi-level relaxation of ``n`` items (1: one NeuralSort)."""
    sizes, keeps = _levels(k, block_size, level_k)
    d = 1
    while sizes is not None and n > _at(sizes, d - 1):
        b, kj = _at(sizes, d - 1), _at(keeps, d - 1)
        n = sum(min(kj, n - i, b) for i in range(0, n, b))
        d += 1
    return d


def relaxed_topk(
    s: np.ndarray,
    tau: float,
    k: int,
    block_size: PerLevel | None = None,
    level_ratio: float = 1.0,
    level_k: PerLevel | None = None,
) -> tuple[np.ndarray, Backward]:
    """Relaxed top-``k`` rows ``(min(k, n), n)`` of the sorting matrix and its VJP.

    With ``block_size`` the multi-level construction of the module docstring is used
    (block sizes ``b_j`` and rows kept ``k_j``, from ``level_k``, per level, with
    ``k <= k_j < b_j``), the sort at height ``j`` of ``d`` with temperature
    ``tau * level_ratio^(d - j)``.
    """
    _check_tau(tau)
    if not 0 < level_ratio <= 1:
        raise ValueError(f"level_ratio must be in (0, 1], got {level_ratio}")
    s = np.asarray(s, dtype=float)
    sizes, keeps = _levels(k, block_size, level_k)
    d = relaxed_levels(s.shape[0], k, block_size, level_k)
    taus = [tau * level_ratio ** (d - j) for j in range(1, d + 1)]
    if not all(t > 0 for t in taus):
        raise ValueError(f"level_ratio {level_ratio} makes the lowest temperature 0")
    return _relaxed_topk(s, taus, k, sizes, keeps)


def _relaxed_topk(
    s: np.ndarray,
    taus: list[float],
    k: int,
    sizes: tuple[int, ...] | None,
    keeps: tuple[int, ...],
) -> tuple[np.ndarray, Backward]:
    """:func:`relaxed_topk` with the temperatures ``taus``, block sizes ``sizes`` and rows
    kept ``keeps`` of the heights ``1 .. d`` (checked)."""
    n = s.shape[0]
    if sizes is None or n <= sizes[0]:
        P = neuralsort(s, taus[0], k)
        return P, lambda gP: _neuralsort_vjp(s, taus[0], P, gP)
    # blocks of exactly b_1 (> k_1) items, the last one shorter: each level shrinks
    b = sizes[0]
    chunks = [np.arange(i, min(i + b, n)) for i in range(0, n, b)]
    children = [neuralsort(s[idx], taus[0], keeps[0]) for idx in chunks]
    tops = [Pc @ s[idx] for Pc, idx in zip(children, chunks, strict=True)]
    cols = np.split(np.arange(sum(len(t) for t in tops)), np.cumsum([len(t) for t in tops])[:-1])
    Q, back_q = _relaxed_topk(
        np.concatenate(tops), taus[1:], k, sizes[1:] or sizes, keeps[1:] or keeps
    )
    P = np.zeros((Q.shape[0], n))
    for Pc, idx, col in zip(children, chunks, cols, strict=True):
        P[:, idx] = Q[:, col] @ Pc

    def backward(gP: np.ndarray) -> np.ndarray:
        gQ = np.zeros_like(Q)
        for Pc, idx, col in zip(children, chunks, cols, strict=True):
            gQ[:, col] = gP[:, idx] @ Pc.T
        gy = back_q(gQ)
        gs = np.zeros(n)
        for Pc, idx, col in zip(children, chunks, cols, strict=True):
            gPc = Q[:, col].T @ gP[:, idx] + np.outer(gy[col], s[idx])
            gs[idx] = _neuralsort_vjp(s[idx], taus[0], Pc, gPc) + Pc.T @ gy[col]
        return gs

    return P, backward


def pirank_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    tau: float = 5.0,
    k: int | None = 10,
    block_size: int | tuple[int, ...] | None = None,
    level_k: int | tuple[int, ...] | None = None,
    level_ratio: float = 1.0,
    straight_through: bool = True,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> LossResult:
    """PiRank ``1 - NDCG_hat@k`` with the NeuralSort relaxation and its gradient. The
    defaults are PiRank's (appendix, Table 2): ``k = 10``, straight-through estimation,
    depth 1, and the temperature of its ablations, ``tau = 5`` (its benchmark column's
    ``tau = 1000`` suits unnormalised network outputs; on scores of order 1 it leaves the
    relaxation nearly flat and the MLP of the appendix-E test does not learn).

    Parameters
    ----------
    tau:
        Temperature; ``tau -> 0`` recovers the hard NDCG@k (PiRank proposition 1).
    k:
        NDCG cut-off; the whole list when None.
    block_size:
        Enables the multi-level relaxation for lists longer than the first block size:
        one block size for every level or one per level (the last repeating); needs a
        cut-off ``k``.
    level_k:
        Rows each block keeps, per level like ``block_size`` (default ``k``), with
        ``k <= k_j < b_j``.
    level_ratio:
        Per-level temperatures of the multi-level relaxation, ``tau_j = tau *
        level_ratio^(d - j)`` at height ``j`` of ``d`` (PiRank appendix B, eq. 19:
        ``tau_1 <= ... <= tau_d = tau``); in ``(0, 1]``, 1 = one temperature everywhere.
    straight_through:
        Report the hard loss ``1 - NDCG@k`` as the value, keep the relaxed gradient.
    """
    _check_tau(tau)
    if not 0 < level_ratio <= 1:
        raise ValueError(f"level_ratio must be in (0, 1], got {level_ratio}")
    _levels(k, block_size, level_k)
    batch = ragged_batch(scores, relevance, lengths)
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    B = batch.scores.shape[0]
    value = np.zeros(B)
    grad = np.zeros_like(batch.scores)
    orders = hard_orders(batch.scores, batch.lengths)
    lengths = batch.lengths.astype(int)
    single = defined & (lengths > 0)
    if block_size is not None:  # one NeuralSort where the list fits in the first block
        single &= lengths <= _at(_per_level(block_size, "block_size"), 0)
    for m in np.unique(lengths[single]):
        kk = m if k is None else min(k, m)
        rows = np.flatnonzero(single & (lengths == m))
        for chunk in np.array_split(rows, -(-rows.size * m * m // _BATCH_ELEMENTS)):
            value[chunk], grad[chunk, :m] = _pirank_same_length(
                batch.scores[chunk, :m], u[chunk, :m], d[:kk], orders[chunk, :kk], tau,
                straight_through,
            )  # fmt: skip
    for b in np.flatnonzero(defined & (lengths > 0) & ~single):
        m = int(batch.lengths[b])
        kk = m if k is None else min(k, m)
        P, backward = relaxed_topk(batch.scores[b, :m], tau, kk, block_size, level_ratio, level_k)
        ub, db = u[b, :m], d[:kk]
        if straight_through:
            value[b] = 1.0 - ub[orders[b, :kk]] @ db
        else:
            value[b] = 1.0 - db @ P @ ub
        grad[b, :m] = backward(-np.outer(db, ub))
    return batch.result(value, grad)


#: Most elements of the ``(G, m, m)`` work arrays of one call of :func:`_pirank_same_length`
#: (32 MB of float64): the queries of one length are taken in chunks that fit.
_BATCH_ELEMENTS = 4_000_000


def _pirank_same_length(
    s: np.ndarray,
    u: np.ndarray,
    d: np.ndarray,
    top: np.ndarray,
    tau: float,
    straight_through: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pirank_loss`'s value ``(G,)`` and gradient ``(G, m)`` for ``G`` lists of the same
    length ``m`` with one NeuralSort each, as one stack: scores ``s (G, m)``, item weights
    ``u (G, m)``, position weights ``d (k,)``, ``top (G, k)`` the hard top ``k``
    (straight-through value); ``dU/dP_hat = -d u^T``."""
    P = neuralsort(s, tau, d.shape[0])
    if straight_through:
        value = 1.0 - np.take_along_axis(u, top, axis=1) @ d
    else:
        value = 1.0 - np.einsum("k,gkm,gm->g", d, P, u)
    return value, _neuralsort_vjp(s, tau, P, -d[None, :, None] * u[:, None, :])
