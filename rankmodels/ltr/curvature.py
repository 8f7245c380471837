"""Diagonal second derivatives of a loss by central differences of its gradient.

For the losses without a closed-form diagonal (SinkProp, SoftRank, PiRank) Newton boosting
uses

    H_jj ~ (g_j(s + eps e_j) - g_j(s - eps e_j)) / (2 eps)

per position ``j`` of every query at once (``2 n`` loss evaluations for lists of up to ``n``
documents; a query's loss depends only on its own scores, so perturbing position ``j`` of
every query together leaves the other queries' derivatives apart).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rankmodels.ltr.batching import LossResult

__all__ = ["EPS", "diagonal_by_differences"]

EPS = 1e-4
"""Step of the central differences (relative to ``1 + |s_j|``)."""


def diagonal_by_differences(
    function: Callable[..., LossResult],
    scores: np.ndarray,
    relevance: np.ndarray,
    lengths: np.ndarray,
    **options: object,
) -> np.ndarray:
    """``(B, n)`` diagonal of the Hessian of ``function`` at ``scores`` ``(B, n)``."""
    s = np.asarray(scores, dtype=np.float64)
    hess = np.zeros(s.shape)
    for j in range(s.shape[1]):
        step = EPS * (1.0 + np.abs(s[:, j]))
        up, down = s.copy(), s.copy()
        up[:, j] += step
        down[:, j] -= step
        g_up = function(up, relevance, lengths, **options).grad[:, j]
        g_down = function(down, relevance, lengths, **options).grad[:, j]
        hess[:, j] = (g_up - g_down) / (2.0 * step)
    return np.where(np.arange(s.shape[1])[None, :] < np.asarray(lengths)[:, None], hess, 0.0)
