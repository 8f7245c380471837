"""Doubly-stochastic matrices: marginals of distributions over permutations.

The marginal matrix of a distribution ``P`` over permutations of ``n`` items is

    M[x, k] = P(item x is at position k),

with position 0 the best (see :mod:`rankmodels.permutations` for the conventions).
Every row and column of ``M`` sums to one (Birkhoff polytope). Positional scoring in rank
aggregation is ``f = M @ h`` (dissertation eq. 4.4); an expected rank-linear metric in
learning to rank is ``g @ M @ d`` (SinkProp eq. 3); Sinkhorn normalisation projects a
positive matrix onto the polytope.
"""

from __future__ import annotations

import numpy as np

from rankmodels.permutations import as_permutation

__all__ = [
    "is_doubly_stochastic",
    "marginal_matrix",
    "permutation_matrix",
]


def permutation_matrix(order: np.ndarray) -> np.ndarray:
    """0/1 marginal matrix of one or more orders: ``P[..., x, k] = 1`` iff ``order[k] == x``.

    Shape ``(..., n)`` in, ``(..., n, n)`` out.
    """
    order = as_permutation(order, "order")
    n = order.shape[-1]
    eye = np.eye(n)
    # Row x of P is the indicator of x's position; P[..., order[k], k] = 1.
    return np.swapaxes(eye[order], -1, -2)


def marginal_matrix(orders: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Marginal matrix ``M[x, k] = sum_j w_j 1(orders[j, k] == x) / sum_j w_j``.

    Parameters
    ----------
    orders:
        ``(m, n)`` integer array, each row an order (items best first).
    weights:
        ``(m,)`` non-negative weights (counts or probabilities); uniform if omitted.
        They are normalised to sum to one.

    Returns
    -------
    ``(n, n)`` doubly-stochastic matrix.
    """
    orders = as_permutation(np.atleast_2d(orders), "orders")
    if orders.ndim != 2:
        raise ValueError(f"orders must be a 2-d (m, n) array, got shape {orders.shape}")
    m, n = orders.shape
    if weights is None:
        w = np.full(m, 1.0 / max(m, 1))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (m,):
            raise ValueError(f"weights must have shape ({m},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and non-negative")
        total = w.sum()
        if total <= 0:
            raise ValueError("weights must not all be zero")
        w = w / total
    M = np.zeros((n, n))
    positions = np.broadcast_to(np.arange(n), (m, n))
    np.add.at(M, (orders, positions), np.broadcast_to(w[:, None], (m, n)))
    return M


def is_doubly_stochastic(M: np.ndarray, atol: float = 1e-8) -> bool:
    """True when ``M`` (or each matrix of a ``(..., n, n)`` stack) is non-negative with unit
    row and column sums, up to ``atol``."""
    M = np.asarray(M, dtype=float)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        return False
    return bool(
        np.all(M >= -atol)
        and np.allclose(M.sum(axis=-1), 1.0, atol=atol)
        and np.allclose(M.sum(axis=-2), 1.0, atol=atol)
    )
