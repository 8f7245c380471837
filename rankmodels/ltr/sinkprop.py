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

``measure="logit_logistic"`` builds the pre-Sinkhorn matrix instead from *partitioned
probability measures* (section 4.1, eq. 6): row ``j`` is the mass of a density
``pi(u | theta_j)`` on ``(0, 1)`` in ``n`` equal bins, mass near 0 meaning "ranked high"::

    A[j, k] = int_{(k-1)/n}^{k/n} pi(u | theta_j) du = F_j(k/n) - F_j((k-1)/n),

with the logit-logistic law (LL) ``theta_j = (mu_j, sigma)``, ``mu_j = -s_j``:
``pi_LL(u) = sech^2((logit u - mu) / (2 sigma)) (1/u + 1/(1-u)) / (4 sigma)``, whose CDF is
``F(u) = expit((logit u - mu) / sigma)``. The score is the location, the scale ``sigma``
is the loss's ``sigma``; the documents interact only through the Sinkhorn iterations.
``d log A[j, k] / d s_j = (f(b_jk) - f(a_jk)) / (sigma A[j, k])`` with
``a, b = (logit of the bin edges + s_j) / sigma`` and ``f = expit (1 - expit)``.
"""

from __future__ import annotations

import numpy as np

from rankmodels.dsm import sinkhorn, sinkhorn_vjp
from rankmodels.ltr.batching import LossResult, hard_orders, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = [
    "MAX_ITERATIONS",
    "MEASURES",
    "annealing_schedule",
    "partitioned_measure",
    "sinkprop_loss",
]

MEASURES = ("indicator", "logit_logistic")
"""Pre-Sinkhorn matrices: smoothed indicators (eq. 7), partitioned LL measures (eq. 6)."""

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
    measure: str = "indicator",
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
    measure:
        ``"indicator"`` (eq. 7) or ``"logit_logistic"`` (partitioned measures, eq. 6,
        scale ``sigma``; module docstring).

    Queries without a relevant document have loss 0 and zero gradient.
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    if eps < 0:
        raise ValueError(f"eps must be non-negative, got {eps}")
    if not 0 <= n_iter <= MAX_ITERATIONS:
        raise ValueError(f"n_iter must lie in 0..{MAX_ITERATIONS}, got {n_iter}")
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    batch = ragged_batch(scores, relevance, lengths)
    s = batch.scores
    if measure == "indicator":
        order = hard_orders(s, batch.lengths)
        t = np.take_along_axis(s, order, axis=1)  # score at position k
        diff = s[:, :, None] - t[:, None, :]
        log_a = -0.5 * (diff / sigma) ** 2  # (not diff^2 / sigma^2: sigma^2 may underflow)
    else:
        log_a, dlog_a = partitioned_measure(s, batch.lengths, sigma)
    if eps > 0:
        weight = 1.0 / (1.0 + eps * np.exp(-log_a))  # d log(A + eps) / d log A
        log_a = np.logaddexp(log_a, np.log(eps))
    res = sinkhorn(log_a, batch.lengths, n_iter=n_iter)
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    value = np.where(defined, 1.0 - np.einsum("bj,bjk,k->b", u, res.p, d), 0.0)
    g_log_a = sinkhorn_vjp(res, -u[:, :, None] * d[None, None, :])
    if eps > 0:
        g_log_a = g_log_a * weight
    if measure == "logit_logistic":
        return batch.result(value, (g_log_a * dlog_a).sum(axis=2))
    # d log_a[j, k] / d s_j = -diff / sigma^2 ; d log_a[j, k] / d t_k = +diff / sigma^2
    w = g_log_a * (-(diff / sigma) / sigma)
    grad = w.sum(axis=2)
    np.add.at(grad, (np.arange(s.shape[0])[:, None], order), -w.sum(axis=1))
    return batch.result(value, grad)


def _log_expit(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def partitioned_measure(
    scores: np.ndarray, lengths: np.ndarray, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """``log A`` ``(B, n, n)`` of eq. 6 with the logit-logistic law (module docstring) and
    ``d log A[b, j, k] / d s_bj``; the bins of query ``b`` are ``lengths[b]`` equal parts
    of ``(0, 1)`` (padding: ``log A = 0``, derivative 0)."""
    B, n = scores.shape
    m = np.maximum(lengths, 1)[:, None, None].astype(float)
    k = np.arange(n)[None, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):  # padding bins lie beyond 1
        edges = np.log(k / m) - np.log1p(-k / m), np.log((k + 1) / m) - np.log1p(-(k + 1) / m)
        lo, hi = ((e + scores[:, :, None]) / sigma for e in edges)  # F = expit(lo), expit(hi)
        upper = lo + hi > 0  # both CDF values near 1: use 1 - F for accuracy
        a, b = np.where(upper, -hi, lo), np.where(upper, -lo, hi)
        la, lb = _log_expit(a), _log_expit(b)
        log_a = lb + np.log1p(-np.exp(la - lb))  # log(expit(b) - expit(a)), a < b
        log_f = _log_expit(lo) + _log_expit(-lo), _log_expit(hi) + _log_expit(-hi)
        dlog = (np.exp(log_f[1] - log_a) - np.exp(log_f[0] - log_a)) / sigma
    inside = (np.arange(n)[None, :, None] < lengths[:, None, None]) & (k < lengths[:, None, None])
    return np.where(inside, log_a, 0.0), np.where(inside & np.isfinite(dlog), dlog, 0.0)


def annealing_schedule(start: float, stop: float, n_stages: int) -> np.ndarray:
    """Geometric schedule ``start -> stop`` of smoothing widths (SinkProp section 5 anneals
    ``sigma`` "as in" Chapelle & Wu's SmoothRank)."""
    if not (start > 0 and stop > 0) or n_stages < 1:
        raise ValueError("start and stop must be positive and n_stages >= 1")
    return np.geomspace(start, stop, n_stages)
