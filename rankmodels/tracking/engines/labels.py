"""Likelihood with hand-labelled associations ([Pareek2017] eq. 5.73).

With the source ``R_j`` of every recorded arrival known, a particle's weight is

    w(X) = prod_{j: R_j is a source} p_{R_j}(T_j | X),   p_i(T | X) = N(T; pred_i(X), sigma^2),

the paper's "simple particle filter" for hand-labelled data (with multipath, ``p_i`` is the
direct-or-delayed mixture of :mod:`rankmodels.tracking.signal_model`). Arrivals labelled clutter are
dropped: their density ``lambda / W`` does not depend on ``X``. The association posterior is the
labels themselves (one-hot).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rankmodels.tracking.engines._common import (
    LOG_SQRT_2PI,
    BipartiteCycle,
    Cycle,
    LikelihoodResult,
    bipartite_cycle,
    log_match_weight,
)
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["check_labels", "labels_engine"]


def check_labels(labels: np.ndarray | None, cycle: Cycle, n_sources: int) -> np.ndarray:
    """Validate ``labels`` (r,) against the cycle; return the labels of the recorded arrivals.

    A label is a column index of ``predicted`` (``0 <= label < s``), ``-1`` for clutter, or
    ``-2`` exactly where ``toa`` is NaN. Raises ValueError otherwise.
    """
    if labels is None:
        raise ValueError("the labels engine needs labels (the record's source_label)")
    raw = np.asarray(labels)
    if raw.shape != (cycle.r,):
        raise ValueError(f"labels must have shape ({cycle.r},) like toa, got {raw.shape}")
    if not np.issubdtype(raw.dtype, np.integer):
        if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise ValueError("labels must be integers (source index, -1 clutter, -2 no arrival)")
    lab = raw.astype(np.int64)
    m = cycle.m
    if np.any(lab[m:] != NO_ARRIVAL):
        raise ValueError("labels must be -2 (no arrival) exactly where toa is NaN")
    recorded = lab[:m]
    bad = (recorded < CLUTTER) | (recorded >= n_sources)
    if np.any(bad):
        raise ValueError(
            f"labels of recorded arrivals must be -1 (clutter) or a source index in "
            f"[0, {n_sources}), got {recorded[bad].tolist()}"
        )
    sources = recorded[recorded >= 0]
    if np.unique(sources).size != sources.size:
        raise ValueError("labels: a source can explain at most one arrival per cycle")
    return recorded


@njit(cache=True)
def _sum_log_match(d: np.ndarray, c: BipartiteCycle) -> np.ndarray:
    """``sum_k log phi(d[p, k])`` (:func:`log_match_weight`) over each row of ``d`` (N, k)."""
    out = np.zeros(d.shape[0])
    for p in range(d.shape[0]):
        for k in range(d.shape[1]):
            out[p] += log_match_weight(d[p, k], c, -math.inf)
    return out


def labels_engine(
    cycle: Cycle,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    labels: np.ndarray | None,
    association: bool = False,
) -> LikelihoodResult:
    """Eq. 5.73: ``loglik`` (N,) and the one-hot association (N, m, s + 1) if asked."""
    n, s = predicted.shape
    recorded = check_labels(labels, cycle, s)
    src = np.flatnonzero(recorded >= 0)
    d = cycle.toa[src][None, :] - predicted[:, recorded[src]]
    sigma = float(model.sigma)
    if model.multipath == 0:
        loglik = -(0.5 / sigma**2) * np.sum(d * d, axis=1) - src.size * (
            math.log(sigma) + LOG_SQRT_2PI
        )
    else:  # log phi includes log P_D
        c = bipartite_cycle(cycle, model)
        loglik = _sum_log_match(d, c) - src.size * math.log(model.p_detect)
    if not association:
        return LikelihoodResult(loglik, None)
    onehot = np.zeros((cycle.m, s + 1))
    onehot[np.arange(cycle.m), np.where(recorded >= 0, recorded, s)] = 1.0
    return LikelihoodResult(loglik, np.broadcast_to(onehot, (n, cycle.m, s + 1)).copy())
