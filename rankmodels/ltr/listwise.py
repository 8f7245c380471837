"""Listwise likelihood losses: ListNet and ListMLE (Plackett-Luce on the scores).

**ListNet** (Cao et al. 2007), top-one version: cross-entropy between the top-one
probabilities of the labels and of the scores::

    L = -sum_j softmax(r)_j log softmax(s)_j,     dL/ds = softmax(s) - softmax(r)

**ListMLE** (Xia et al. 2008): negative Plackett-Luce log-likelihood of the ground-truth
order ``pi`` (documents by decreasing label; ties by index, or at random with ``rng``)::

    L = sum_k [log sum_{q >= k} exp(s_{pi(q)}) - s_{pi(k)}]
    dL/ds_{pi(k)} = -1 + sum_{q <= k} exp(s_{pi(k)} - lse_q),  lse_q = log sum_{l >= q} e^{s_pi(l)}

Diagonal second derivatives (for Newton boosting): ListNet ``p_j (1 - p_j)`` with
``p = softmax(s)``; ListMLE ``sum_{q <= k} a_kq (1 - a_kq)`` at ``pi(k)``, ``a_kq =
exp(s_{pi(k)} - lse_q)`` (each log-sum-exp term contributes its softmax's variance).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

from rankmodels.ltr.batching import LossResult, ragged_batch

__all__ = ["listmle_loss", "listmle_with_hessian", "listnet_loss", "listnet_with_hessian"]


def listnet_loss(scores: object, relevance: object, lengths: object | None = None) -> LossResult:
    """ListNet top-one cross-entropy ``-sum_j softmax(r)_j log softmax(s)_j``."""
    return listnet_with_hessian(scores, relevance, lengths)[0]


def listnet_with_hessian(
    scores: object, relevance: object, lengths: object | None = None
) -> tuple[LossResult, np.ndarray]:
    """:func:`listnet_loss` and its diagonal second derivative ``p (1 - p)``."""
    batch = ragged_batch(scores, relevance, lengths)
    empty = batch.lengths == 0
    mask = batch.mask | empty[:, None]  # an empty list gets a dummy row, zeroed below
    s = np.where(mask, batch.scores, -np.inf)
    r = np.where(mask, batch.relevance, -np.inf)
    target = softmax(r, axis=1)
    logp = np.where(mask, log_softmax(s, axis=1), 0.0)
    value = -(np.where(mask, target, 0.0) * logp).sum(axis=1)
    p = np.where(mask & ~empty[:, None], softmax(s, axis=1), 0.0)
    grad = np.where(mask, p - target, 0.0)
    result = batch.result(np.where(empty, 0.0, value), np.where(empty[:, None], 0.0, grad))
    return result, batch.per_item(p * (1.0 - p))


def listmle_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> LossResult:
    """ListMLE negative Plackett-Luce log-likelihood of the label order (see module doc)."""
    return listmle_with_hessian(scores, relevance, lengths, rng=rng)[0]


def listmle_with_hessian(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> tuple[LossResult, np.ndarray]:
    """:func:`listmle_loss` and its diagonal second derivative (module docstring)."""
    batch = ragged_batch(scores, relevance, lengths)
    B, n = batch.scores.shape
    # decreasing label, ties by index (or at random), padding last
    primary = np.where(batch.mask, -batch.relevance, np.inf)
    secondary = rng.random((B, n)) if rng is not None else np.broadcast_to(np.arange(n), (B, n))
    order = np.lexsort((secondary, primary), axis=-1)
    mask = batch.mask  # positions < length hold real documents
    t = np.where(mask, np.take_along_axis(batch.scores, order, axis=1), -np.inf)
    lse = np.logaddexp.accumulate(t[:, ::-1], axis=1)[:, ::-1]  # lse_q over the suffix q..
    lse = np.where(mask, lse, 0.0)
    t = np.where(mask, t, 0.0)
    value = np.where(mask, lse - t, 0.0).sum(axis=1)
    # w_k = sum_{q<=k} exp(lse_k - lse_q), each factor <= 1 since lse is non-increasing;
    # w2_k the same sum of squares
    w = np.zeros((B, n))
    w2 = np.zeros((B, n))
    acc = np.zeros(B)
    acc2 = np.zeros(B)
    for q in range(n):
        step = np.exp(lse[:, q] - lse[:, q - 1]) if q else np.ones(B)
        acc = np.where(mask[:, q], acc * step + 1.0, 0.0)
        acc2 = np.where(mask[:, q], acc2 * step**2 + 1.0, 0.0)
        w[:, q] = acc
        w2[:, q] = acc2
    e = np.exp(t - lse)  # a_kk
    grad_sorted = np.where(mask, -1.0 + e * w, 0.0)
    hess_sorted = np.where(mask, e * w - e**2 * w2, 0.0)  # sum_q a_kq - a_kq^2
    grad = np.zeros((B, n))
    hess = np.zeros((B, n))
    np.put_along_axis(grad, order, grad_sorted, axis=1)
    np.put_along_axis(hess, order, hess_sorted, axis=1)
    return batch.result(value, grad), batch.per_item(hess)
