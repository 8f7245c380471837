"""Listwise likelihood losses: ListNet and ListMLE (Plackett-Luce on the scores).

**ListNet** (Cao et al. 2007), top-one version: cross-entropy between the top-one
probabilities of the labels and of the scores::

    L = -sum_j softmax(r)_j log softmax(s)_j,     dL/ds = softmax(s) - softmax(r)

**ListMLE** (Xia et al. 2008): negative Plackett-Luce log-likelihood of the ground-truth
order ``pi`` (documents by decreasing label; ties by index, or at random with ``rng``)::

    L = sum_k [log sum_{q >= k} exp(s_{pi(q)}) - s_{pi(k)}]
    dL/ds_{pi(k)} = -1 + sum_{q <= k} exp(s_{pi(k)} - lse_q),  lse_q = log sum_{l >= q} e^{s_pi(l)}
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

from rankmodels.ltr.batching import LossResult, ragged_batch

__all__ = ["listmle_loss", "listnet_loss"]


def listnet_loss(scores: object, relevance: object, lengths: object | None = None) -> LossResult:
    """ListNet top-one cross-entropy ``-sum_j softmax(r)_j log softmax(s)_j``."""
    batch = ragged_batch(scores, relevance, lengths)
    empty = batch.lengths == 0
    mask = batch.mask | empty[:, None]  # an empty list gets a dummy row, zeroed below
    s = np.where(mask, batch.scores, -np.inf)
    r = np.where(mask, batch.relevance, -np.inf)
    target = softmax(r, axis=1)
    logp = np.where(mask, log_softmax(s, axis=1), 0.0)
    value = -(np.where(mask, target, 0.0) * logp).sum(axis=1)
    grad = np.where(mask, softmax(s, axis=1) - target, 0.0)
    return batch.result(np.where(empty, 0.0, value), np.where(empty[:, None], 0.0, grad))


def listmle_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> LossResult:
    """ListMLE negative Plackett-Luce log-likelihood of the label order (see module doc)."""
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
    # w_k = sum_{q<=k} exp(lse_k - lse_q), each factor <= 1 since lse is non-increasing
    w = np.zeros((B, n))
    acc = np.zeros(B)
    for q in range(n):
        step = np.exp(lse[:, q] - lse[:, q - 1]) if q else np.ones(B)
        acc = np.where(mask[:, q], acc * step + 1.0, 0.0)
        w[:, q] = acc
    grad_sorted = np.where(mask, -1.0 + np.exp(t - lse) * w, 0.0)
    grad = np.zeros((B, n))
    np.put_along_axis(grad, order, grad_sorted, axis=1)
    return batch.result(value, grad)
