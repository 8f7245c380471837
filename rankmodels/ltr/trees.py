"""Second-order histogram regression trees (numba), the weak learners of listwise boosting.

:func:`grow_tree` fits a tree to per-sample first and second derivatives ``g``, ``h``
``(N,)`` of a loss in the sample's score, on features binned once by
:func:`bin_features`: each feature is cut at up to ``max_bins - 1`` candidate thresholds
(:func:`quantile_edges`: the distinct quantiles of its values). A leaf ``L`` predicts the
minimiser of the second-order expansion ``sum_{i in L} (g_i v + h_i v^2 / 2) + lambda v^2
/ 2`` of the loss, the Newton step

    v_L = -G_L / (H_L + lambda)        (G, H: sums of g, h over the leaf),

and splitting a leaf into ``L``, ``R`` lowers that expansion's minimum by half of

    gain = G_L^2 / (H_L + lambda) + G_R^2 / (H_R + lambda) - G^2 / (H + lambda).

Growth is leaf-wise, as LightGBM's: every leaf knows its best split (over the features in
use and every threshold, with at least ``min_leaf`` samples and ``min_hessian`` of ``H`` on
each side, and a gain above ``min_gain``); the leaf with the largest gain is split next,
until there are ``num_leaves`` leaves or no leaf can be split (``max_depth`` bounds the
depth). The ``(g, h, count)`` histograms per feature and bin are built for the smaller
child only, the larger one's is the parent's minus it. The caller may subsample the rows
(``rows``) and the features (``features``) of each tree.

Least squares is the case ``g = -y``, ``h = 1``, ``lambda = 0``: leaves are means and gains
``S_L^2/n_L + S_R^2/n_R - S^2/n``; :func:`fit_tree` grows such a tree with every split up
to ``max_depth`` (``num_leaves = 2^max_depth``), so the fitted ``h`` is the least-squares
projection of ``y`` onto the tree's partition and ``<y, h> = ||h||^2``.

Why our own: scikit-learn is not a dependency of the package (and its exact-split trees
are slower on many samples); LightGBM's trees cannot be driven leaf by leaf from here;
:class:`Tree` is plain arrays that serialise to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

__all__ = [
    "BinnedFeatures",
    "Tree",
    "TreeShape",
    "bin_features",
    "fit_tree",
    "grow_tree",
    "grow_tree_with_leaves",
    "quantile_edges",
]


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
    largest when there are at most ``max_bins``, else ``max_bins - 1`` inner quantiles
    (``np.quantile``'s linear interpolation). Each column is sorted once, contiguously."""
    if not 2 <= max_bins <= 256:
        raise ValueError(f"max_bins must be in 2 .. 256, got {max_bins}")
    inner = np.linspace(0, 1, max_bins + 1)[1:-1]
    edges = []
    for column in np.sort(np.ascontiguousarray(np.asarray(X, dtype=np.float64).T), axis=1):
        distinct = column[np.concatenate(([True], column[1:] != column[:-1]))]
        if distinct.shape[0] > max_bins:
            edges.append(np.unique(np.quantile(column, inner)))
        else:
            edges.append(distinct[:-1])
    return edges


@dataclass(frozen=True)
class BinnedFeatures:
    """``codes`` ``(F, N)`` uint8: the bin of every sample's every feature, ``x_f <=
    table[f, t]  <=>  code <= t``; ``n_edges`` ``(F,)`` thresholds per feature."""

    codes: np.ndarray
    table: np.ndarray
    n_edges: np.ndarray


def bin_features(X: np.ndarray, edges: list[np.ndarray]) -> BinnedFeatures:
    """The bins of ``X`` ``(N, F)`` under ``edges`` (from :func:`quantile_edges`): the
    number of a feature's thresholds below the value (NaN: above them all)."""
    if X.ndim != 2 or len(edges) != X.shape[1]:
        raise ValueError(f"X (N, F) and F edge arrays; got {X.shape} and {len(edges)}")
    n_edges = np.array([e.shape[0] for e in edges], dtype=np.int64)
    if n_edges.max(initial=0) > 255:
        raise ValueError("at most 255 thresholds per feature")
    table = np.full((X.shape[1], max(1, int(n_edges.max(initial=0)))), np.inf)
    for f, e in enumerate(edges):
        table[f, : e.shape[0]] = e
    codes = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    _bin_codes(np.ascontiguousarray(X, dtype=np.float64), table, n_edges, codes)
    return BinnedFeatures(codes, table, n_edges)


@dataclass(frozen=True)
class TreeShape:
    """How a tree grows (module docstring); ``max_depth`` None: unbounded."""

    num_leaves: int = 31
    max_depth: int | None = None
    min_leaf: int = 20
    min_hessian: float = 1e-3
    l2: float = 0.0
    min_gain: float = 0.0

    def __post_init__(self) -> None:
        if self.num_leaves < 1 or self.min_leaf < 1 or (self.max_depth or 0) < 0:
            raise ValueError("num_leaves and min_leaf must be >= 1, max_depth >= 0")
        if not (self.min_hessian >= 0 and self.l2 >= 0 and self.min_gain >= 0):
            raise ValueError("min_hessian, l2 and min_gain must be >= 0")


@dataclass
class _Leaf:
    """A leaf being grown: its node, its samples ``order[begin:end]``, its histogram
    ``(F, n_bins, 3)`` of ``(g, h, count)``, and its best split (``feature`` -1: none)."""

    node: int
    begin: int
    end: int
    depth: int
    hist: np.ndarray
    gain: float = -np.inf
    feature: int = -1
    bin: int = 0


class _Grower:
    """The state of one leaf-wise growth (:func:`grow_tree`)."""

    def __init__(self, binned, g, h, shape, order, use):
        self.binned, self.g, self.h, self.shape = binned, g, h, shape
        self.order, self.use = order, use
        self.n_bins = int(binned.n_edges.max(initial=0)) + 1
        self.total_of = int(np.argmax(use))  # totals are read off a feature in use
        self.nodes: dict[str, list] = {k: [] for k in ("feature", "bin", "left", "right", "value")}

    def histogram(self, begin: int, end: int) -> np.ndarray:
        out = np.zeros((self.binned.codes.shape[0], self.n_bins, 3))
        _histogram(self.binned.codes, self.g, self.h, self.order, begin, end, self.use, out)
        return out

    def leaf(self, begin: int, end: int, depth: int, hist: np.ndarray) -> _Leaf:
        """A new node for ``order[begin:end]`` with its Newton value and best split."""
        shape = self.shape
        G, H, _ = hist[self.total_of].sum(axis=0)
        node = len(self.nodes["value"])
        for key, default in (("feature", -1), ("bin", 0), ("left", -1), ("right", -1)):
            self.nodes[key].append(default)
        self.nodes["value"].append(-G / (H + shape.l2) if H + shape.l2 > 0 else 0.0)
        out = _Leaf(node, begin, end, depth, hist)
        deep = shape.max_depth is not None and depth >= shape.max_depth
        if not deep and end - begin >= 2 * shape.min_leaf:
            out.gain, out.feature, out.bin = _best_split(
                hist,
                self.binned.n_edges,
                self.use,
                G,
                H,
                shape.min_leaf,
                shape.min_hessian,
                shape.l2,
                shape.min_gain,
            )
        return out

    def split(self, parent: _Leaf) -> tuple[_Leaf, _Leaf]:
        """Partition ``parent``'s samples, histogram the smaller child, subtract."""
        codes = self.binned.codes[parent.feature]
        middle = _partition(codes, self.order, parent.begin, parent.end, parent.bin)
        left_smaller = middle - parent.begin <= parent.end - middle
        small = self.histogram(*((parent.begin, middle) if left_smaller else (middle, parent.end)))
        large = parent.hist - small
        depth = parent.depth + 1
        left = self.leaf(parent.begin, middle, depth, small if left_smaller else large)
        right = self.leaf(middle, parent.end, depth, large if left_smaller else small)
        nodes = self.nodes
        nodes["feature"][parent.node], nodes["bin"][parent.node] = parent.feature, parent.bin
        nodes["left"][parent.node], nodes["right"][parent.node] = left.node, right.node
        return left, right

    def tree(self) -> Tree:
        feature = np.array(self.nodes["feature"], dtype=np.int64)
        split = np.array(self.nodes["bin"], dtype=np.int64)
        table = self.binned.table
        threshold = np.where(feature >= 0, table[np.maximum(feature, 0), split], np.nan)
        left = np.array(self.nodes["left"], dtype=np.int64)
        right = np.array(self.nodes["right"], dtype=np.int64)
        return Tree(feature, threshold, left, right, np.array(self.nodes["value"]))


def grow_tree(
    binned: BinnedFeatures,
    grad: np.ndarray,
    hess: np.ndarray,
    shape: TreeShape,
    rows: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> Tree:
    """Leaf-wise second-order tree of ``grad``, ``hess`` ``(N,)`` on ``binned`` (module
    docstring), fitted to the samples ``rows`` (all by default) with the features whose
    ``features`` ``(F,)`` entry is True (all by default; at least one)."""
    return grow_tree_with_leaves(binned, grad, hess, shape, rows, features)[0]


def grow_tree_with_leaves(
    binned: BinnedFeatures,
    grad: np.ndarray,
    hess: np.ndarray,
    shape: TreeShape,
    rows: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> tuple[Tree, np.ndarray]:
    """:func:`grow_tree` and the ``(N,)`` node index of the leaf that holds each sample of
    ``rows`` (-1 for the others), as the splits left them: ``tree.value[leaf]`` is the
    tree's prediction for those samples without predicting them again."""
    F, N = binned.codes.shape
    if grad.shape != (N,) or hess.shape != (N,):
        raise ValueError(f"grad and hess must have shape ({N},), got {grad.shape}, {hess.shape}")
    use = np.ones(F, dtype=np.bool_) if features is None else np.asarray(features, np.bool_)
    if use.shape != (F,) or not use.any():
        raise ValueError(f"features must be ({F},) booleans, at least one True")
    order = np.arange(N, dtype=np.int64) if rows is None else np.array(rows, dtype=np.int64)
    grower = _Grower(
        binned,
        np.ascontiguousarray(grad, dtype=np.float64),
        np.ascontiguousarray(hess, dtype=np.float64),
        shape,
        order,
        use,
    )
    leaves = [grower.leaf(0, order.shape[0], 0, grower.histogram(0, order.shape[0]))]
    while len(leaves) < shape.num_leaves:
        best = max(range(len(leaves)), key=lambda i: leaves[i].gain)
        if leaves[best].feature < 0:
            break
        leaves[best], right = grower.split(leaves[best])
        leaves.append(right)
    leaf_of = np.full(N, -1, dtype=np.int64)
    for leaf in leaves:
        leaf_of[order[leaf.begin : leaf.end]] = leaf.node
    return grower.tree(), leaf_of


def fit_tree(
    X: np.ndarray,
    y: np.ndarray,
    edges: list[np.ndarray],
    max_depth: int = 4,
    min_leaf: int = 10,
) -> Tree:
    """Least-squares tree of ``y`` ``(N,)`` on ``X`` ``(N, F)`` with candidate thresholds
    ``edges`` (from :func:`quantile_edges`, usually of the training data), every split up
    to ``max_depth``; module docstring."""
    if max_depth < 0 or min_leaf < 1:
        raise ValueError("max_depth must be >= 0 and min_leaf >= 1")
    if X.ndim != 2 or y.shape != (X.shape[0],) or len(edges) != X.shape[1]:
        raise ValueError(f"X (N, F) with y (N,) and F edge arrays; got {X.shape}, {y.shape}")
    shape = TreeShape(2**max_depth, max_depth, min_leaf, min_hessian=0.0)
    binned = bin_features(X, edges)
    return grow_tree(binned, -np.asarray(y, dtype=np.float64), np.ones(y.shape[0]), shape)


@nb.njit(cache=True, parallel=True)
def _histogram(codes, g, h, order, begin, end, use, out):
    """Add ``(g, h, 1)`` of the samples ``order[begin:end]`` into ``out[f, bin]``; the
    samples' ``g``, ``h`` are gathered once into contiguous arrays (not per feature), and
    every ``out[f, bin]`` sums in sample order whatever the threads."""
    rows = order[begin:end]
    g_rows = np.empty(rows.shape[0])
    h_rows = np.empty(rows.shape[0])
    for k in range(rows.shape[0]):
        g_rows[k] = g[rows[k]]
        h_rows[k] = h[rows[k]]
    for f in nb.prange(codes.shape[0]):
        if not use[f]:
            continue
        codes_f = codes[f]
        out_f = out[f]
        for k in range(rows.shape[0]):
            b = codes_f[rows[k]]
            out_f[b, 0] += g_rows[k]
            out_f[b, 1] += h_rows[k]
            out_f[b, 2] += 1.0


@nb.njit(cache=True, parallel=True)
def _bin_codes(X, table, n_edges, codes):
    """``codes[f, i]``: how many of ``table[f]`` (sorted, padded with inf) are below
    ``X[i, f]`` (``np.searchsorted(..., side="left")``), ``n_edges[f]`` for NaN; counted
    by comparing with every threshold (no branches, over the rows of ``X`` as they lie in
    memory), faster than a binary search for at most 255 thresholds."""
    N, F = X.shape
    for i in nb.prange(N):
        for f in range(F):
            x = X[i, f]
            below = 0
            for t in range(table.shape[1]):
                below += table[f, t] < x
            codes[f, i] = n_edges[f] if x != x else below


@nb.njit(cache=True)
def _best_split(hist, n_edges, use, G, H, min_leaf, min_hessian, l2, min_gain):
    """``(gain, feature, bin)`` of the best split of one leaf (feature -1: none with a
    gain above ``min_gain``)."""
    parent = G * G / (H + l2) if H + l2 > 0 else 0.0
    best, best_f, best_t = max(min_gain, 1e-12 * (1.0 + abs(parent))), -1, 0
    for f in range(hist.shape[0]):
        if not use[f]:
            continue
        n = 0.0
        for t in range(hist.shape[1]):
            n += hist[f, t, 2]
        g_left, h_left, n_left = 0.0, 0.0, 0.0
        for t in range(n_edges[f]):
            g_left += hist[f, t, 0]
            h_left += hist[f, t, 1]
            n_left += hist[f, t, 2]
            n_right = n - n_left
            h_right = H - h_left
            if n_left < min_leaf or n_right < min_leaf:
                continue
            if h_left < min_hessian or h_right < min_hessian:
                continue
            if h_left + l2 <= 0 or h_right + l2 <= 0:
                continue
            g_right = G - g_left
            gain = g_left * g_left / (h_left + l2) + g_right * g_right / (h_right + l2) - parent
            if gain > best:
                best, best_f, best_t = gain, f, t
    if best_f < 0:
        best = -np.inf
    return best, best_f, best_t


@nb.njit(cache=True)
def _partition(codes_f, order, begin, end, split):
    """Stable partition of ``order[begin:end]``: samples with ``code <= split`` first;
    returns where the others begin."""
    buffer = np.empty(end - begin, np.int64)
    n_left = 0
    n_right = 0
    for k in range(begin, end):
        if codes_f[order[k]] <= split:
            order[begin + n_left] = order[k]
            n_left += 1
        else:
            buffer[n_right] = order[k]
            n_right += 1
    for k in range(n_right):
        order[begin + n_left + k] = buffer[k]
    return begin + n_left


@nb.njit(cache=True)
def _predict(X, feature, threshold, left, right, value):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        node = 0
        while feature[node] >= 0:
            node = left[node] if X[i, feature[node]] <= threshold[node] else right[node]
        out[i] = value[node]
    return out
