"""Small least-squares regression trees (numba), the weak learners of listwise boosting.

:func:`fit_tree` regresses a target ``y`` ``(N,)`` on features ``X`` ``(N, F)``. Each
feature is cut at up to ``max_bins - 1`` candidate thresholds (the distinct quantiles of
its values, as histogram gradient boosting does); a split ``x_f <= t`` is chosen at every
node to maximise the reduction of the squared error,

    gain = S_L^2 / n_L + S_R^2 / n_R - S^2 / n        (S = sum of y, n = count),

with at least ``min_leaf`` samples on each side; trees grow level by level to
``max_depth``. A leaf predicts the mean of its targets, so the fitted ``h`` is the
least-squares projection of ``y`` onto the tree's partition and ``<y, h> = ||h||^2``.

Why our own: scikit-learn is not a dependency of the package (and its exact-split trees
are slower on many samples); one histogram tree is ~80 lines of numba here, and
:class:`Tree` is plain arrays that serialise to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

__all__ = ["Tree", "fit_tree", "quantile_edges"]


@dataclass(frozen=True)
class Tree:
    """Node arrays ``(n_nodes,)``: a node ``i`` with ``feature[i] >= 0`` sends ``x`` to
    ``left[i]`` when ``x[feature[i]] <= threshold[i]``, else to ``right[i]``; a leaf
    (``feature[i] = -1``) predicts ``value[i]``. Node 0 is the root."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions for the rows of ``X`` ``(..., F)``, shape ``X.shape[:-1]``."""
        flat = np.ascontiguousarray(X.reshape(-1, X.shape[-1]), dtype=np.float64)
        out = _predict(flat, self.feature, self.threshold, self.left, self.right, self.value)
        return out.reshape(X.shape[:-1])

    def scaled(self, factor: float) -> Tree:
        """The same tree predicting ``factor`` times the values."""
        return Tree(self.feature, self.threshold, self.left, self.right, factor * self.value)


def quantile_edges(X: np.ndarray, max_bins: int = 64) -> list[np.ndarray]:
    """Per feature the sorted distinct candidate thresholds: all distinct values but the
    largest when there are at most ``max_bins``, else ``max_bins - 1`` inner quantiles."""
    if not 2 <= max_bins <= 256:
        raise ValueError(f"max_bins must be in 2 .. 256, got {max_bins}")
    edges = []
    for column in X.T:
        distinct = np.unique(column)
        if distinct.shape[0] > max_bins:
            distinct = np.unique(np.quantile(column, np.linspace(0, 1, max_bins + 1)[1:-1]))
            edges.append(distinct)
        else:
            edges.append(distinct[:-1])
    return edges


def fit_tree(
    X: np.ndarray,
    y: np.ndarray,
    edges: list[np.ndarray],
    max_depth: int = 4,
    min_leaf: int = 10,
) -> Tree:
    """Least-squares tree of ``y`` ``(N,)`` on ``X`` ``(N, F)`` with candidate thresholds
    ``edges`` (from :func:`quantile_edges`, usually of the training data); module
    docstring."""
    if max_depth < 0 or min_leaf < 1:
        raise ValueError("max_depth must be >= 0 and min_leaf >= 1")
    if X.ndim != 2 or y.shape != (X.shape[0],) or len(edges) != X.shape[1]:
        raise ValueError(f"X (N, F) with y (N,) and F edge arrays; got {X.shape}, {y.shape}")
    n_edges = np.array([e.shape[0] for e in edges], dtype=np.int64)
    table = np.full((X.shape[1], max(1, int(n_edges.max(initial=0)))), np.inf)
    for f, e in enumerate(edges):
        table[f, : e.shape[0]] = e
    binned = np.empty(X.shape, dtype=np.int64)
    for f, e in enumerate(edges):
        binned[:, f] = np.searchsorted(e, X[:, f], side="left")  # x <= e[t]  <=>  bin <= t
    feature, split, left, right, value = _grow(
        binned, np.ascontiguousarray(y, dtype=np.float64), n_edges, max_depth, min_leaf
    )
    threshold = np.where(feature >= 0, table[np.maximum(feature, 0), split], np.nan)
    return Tree(feature, threshold, left, right, value)


@nb.njit(cache=True)
def _grow(binned, y, n_edges, max_depth, min_leaf):
    N, F = binned.shape
    n_bins = int(n_edges.max()) + 1
    max_nodes = 2 ** (max_depth + 1) - 1
    feature = np.full(max_nodes, -1, np.int64)
    split = np.zeros(max_nodes, np.int64)
    left = np.full(max_nodes, -1, np.int64)
    right = np.full(max_nodes, -1, np.int64)
    value = np.zeros(max_nodes)
    node_of = np.zeros(N, np.int64)
    n_nodes, start, end = 1, 0, 1
    for depth in range(max_depth + 1):
        width = end - start
        sums = np.zeros((width, F, n_bins))
        counts = np.zeros((width, F, n_bins))
        total = np.zeros(width)
        count = np.zeros(width)
        for i in range(N):
            k = node_of[i] - start
            if k < 0 or k >= width:
                continue
            total[k] += y[i]
            count[k] += 1.0
            if depth < max_depth:
                for f in range(F):
                    sums[k, f, binned[i, f]] += y[i]
                    counts[k, f, binned[i, f]] += 1.0
        for k in range(width):
            node = start + k
            value[node] = total[k] / count[k] if count[k] > 0 else 0.0
            if depth == max_depth or count[k] < 2 * min_leaf:
                continue
            parent = total[k] * total[k] / count[k]
            best, best_f, best_t = 1e-12 * (1.0 + abs(parent)), -1, 0
            for f in range(F):
                s_left, n_left = 0.0, 0.0
                for t in range(n_edges[f]):
                    s_left += sums[k, f, t]
                    n_left += counts[k, f, t]
                    n_right = count[k] - n_left
                    if n_left < min_leaf or n_right < min_leaf:
                        continue
                    s_right = total[k] - s_left
                    gain = s_left * s_left / n_left + s_right * s_right / n_right - parent
                    if gain > best:
                        best, best_f, best_t = gain, f, t
            if best_f >= 0:
                feature[node], split[node] = best_f, best_t
                left[node], right[node] = n_nodes, n_nodes + 1
                n_nodes += 2
        for i in range(N):
            node = node_of[i]
            if start <= node < end and feature[node] >= 0:
                node_of[i] = left[node] if binned[i, feature[node]] <= split[node] else right[node]
        start, end = end, n_nodes
        if start == end:
            break
    return feature[:n_nodes], split[:n_nodes], left[:n_nodes], right[:n_nodes], value[:n_nodes]


@nb.njit(cache=True)
def _predict(X, feature, threshold, left, right, value):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        node = 0
        while feature[node] >= 0:
            node = left[node] if X[i, feature[node]] <= threshold[node] else right[node]
        out[i] = value[node]
    return out
