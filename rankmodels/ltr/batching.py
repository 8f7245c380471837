"""Ragged batches of queries: padded scores and relevance plus list lengths.

A batch of ``B`` queries whose lists have lengths ``n_1 .. n_B`` is stored as

* ``scores`` -- ``(B, n_max)`` float array, entries past ``lengths[b]`` are padding (0);
* ``relevance`` -- ``(B, n_max)`` float array of graded labels, padding 0;
* ``lengths`` -- ``(B,)`` int array; ``mask[b, j] = j < lengths[b]``.

Every loss and metric in :mod:`rankmodels.ltr` accepts one list (1-d arrays), a padded
batch with optional ``lengths``, or Python lists of per-query arrays, and goes through
:func:`ragged_batch`. Per-query outputs come back with the shape of the input
(a scalar / ``(n,)`` for one list, ``(B,)`` / ``(B, n_max)`` for a batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LossResult", "RaggedBatch", "hard_orders", "pad_lists", "ragged_batch"]


def pad_lists(lists: Sequence[np.ndarray], fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Stack 1-d arrays of different lengths into ``(B, n_max)`` with ``fill`` as padding.

    Returns the padded array and the ``(B,)`` lengths.
    """
    arrays = [np.asarray(a, dtype=float) for a in lists]
    for i, a in enumerate(arrays):
        if a.ndim != 1:
            raise ValueError(f"list {i} must be 1-d, got shape {a.shape}")
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    n_max = int(lengths.max()) if len(arrays) else 0
    out = np.full((len(arrays), n_max), fill, dtype=float)
    for i, a in enumerate(arrays):
        out[i, : a.shape[0]] = a
    return out, lengths


@dataclass(frozen=True)
class RaggedBatch:
    """A validated ragged batch (see the module docstring for the layout)."""

    scores: np.ndarray
    relevance: np.ndarray
    lengths: np.ndarray
    single: bool

    @property
    def mask(self) -> np.ndarray:
        """``(B, n_max)`` boolean mask of the real (non-padding) entries."""
        return np.arange(self.scores.shape[1])[None, :] < self.lengths[:, None]

    def per_query(self, values: np.ndarray) -> np.ndarray | float:
        """Return ``(B,)`` values as given, or a float for a single-list input."""
        return float(values[0]) if self.single else values

    def per_item(self, values: np.ndarray) -> np.ndarray:
        """Return ``(B, n_max)`` values as given, or ``(n,)`` for a single-list input."""
        return values[0] if self.single else values

    def result(self, value: np.ndarray, grad: np.ndarray) -> LossResult:
        """Package ``(B,)`` values and ``(B, n_max)`` gradients (zeroed on padding)."""
        return LossResult(self.per_query(value), self.per_item(np.where(self.mask, grad, 0.0)))


@dataclass(frozen=True)
class LossResult:
    """A loss for each query and its exact gradient with respect to the scores.

    ``value`` is ``(B,)`` (a float for one list) and ``grad`` ``(B, n_max)`` (``(n,)``),
    ``grad[b, j] = d value[b] / d scores[b, j]``, zero on padding. Losses are minimised.
    """

    value: np.ndarray | float
    grad: np.ndarray


def _as_2d(x: object, name: str) -> tuple[np.ndarray, np.ndarray | None, bool]:
    if isinstance(x, (list, tuple)) and len(x) and np.ndim(x[0]) == 1:
        padded, lengths = pad_lists(x)
        return padded, lengths, False
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        return arr[None, :], None, True
    if arr.ndim == 2:
        return arr, None, False
    raise ValueError(f"{name} must be 1-d (one list) or 2-d (B, n_max), got shape {arr.shape}")


def ragged_batch(
    scores: object,
    relevance: object | None = None,
    lengths: object | None = None,
) -> RaggedBatch:
    """Validate and pad ``scores`` (and ``relevance``) into a :class:`RaggedBatch`.

    Parameters
    ----------
    scores:
        ``(n,)``, ``(B, n_max)`` or a sequence of 1-d arrays.
    relevance:
        Same layout as ``scores``; zeros when omitted. Must be finite and non-negative.
    lengths:
        ``(B,)`` list lengths for padded 2-d input; all ``n_max`` when omitted.
    """
    s, s_len, single = _as_2d(scores, "scores")
    if relevance is None:
        r = np.zeros_like(s)
        r_len = s_len
    else:
        r, r_len, _ = _as_2d(relevance, "relevance")
    if r.shape != s.shape:
        raise ValueError(f"relevance shape {r.shape} does not match scores shape {s.shape}")
    if s_len is not None and r_len is not None and not np.array_equal(s_len, r_len):
        raise ValueError("scores and relevance lists have different lengths")
    inferred = s_len if s_len is not None else r_len
    if lengths is None:
        lens = inferred if inferred is not None else np.full(s.shape[0], s.shape[1], np.int64)
    else:
        lens = np.asarray(lengths)
        if not np.issubdtype(lens.dtype, np.integer):
            raise TypeError(f"lengths must be integers, got dtype {lens.dtype}")
        lens = lens.astype(np.int64).reshape(-1)
        if lens.shape != (s.shape[0],):
            raise ValueError(f"lengths must have shape ({s.shape[0]},), got {lens.shape}")
        if inferred is not None and not np.array_equal(lens, inferred):
            raise ValueError("lengths disagree with the lengths of the given lists")
    if np.any(lens < 0) or np.any(lens > s.shape[1]):
        raise ValueError(f"lengths must lie in 0..{s.shape[1]}, got {lens.min()}..{lens.max()}")
    mask = np.arange(s.shape[1])[None, :] < lens[:, None]
    if not np.all(np.isfinite(s[mask])):
        raise ValueError("scores must be finite")
    if not np.all(np.isfinite(r[mask])) or np.any(r[mask] < 0):
        raise ValueError("relevance must be finite and non-negative")
    s = np.where(mask, s, 0.0)
    r = np.where(mask, r, 0.0)
    return RaggedBatch(s, r, lens, single)


def hard_orders(scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Orders (items best first) that sort each list by decreasing score.

    ``scores`` is ``(B, n_max)``; ties are broken by item index (stable sort). Padding
    items ``j >= lengths[b]`` fill the positions ``lengths[b] ..`` in index order, so each
    row is a permutation of ``0..n_max-1``.
    """
    mask = np.arange(scores.shape[1])[None, :] < lengths[:, None]
    key = np.where(mask, -scores, np.inf)
    return np.argsort(key, axis=1, kind="stable")
