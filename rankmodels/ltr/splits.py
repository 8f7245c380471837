"""Query-level splits: hold-out and k-fold cross-validation by query.

Documents of one query never straddle a split (they are not independent: a ranker is
judged on whole lists). Every split is a random permutation of the query indices from a
seed or :class:`numpy.random.Generator`; folds are its consecutive slices, so their sizes
differ by at most one and every query is tested exactly once.
"""

from __future__ import annotations

import numpy as np

from rankmodels.ltr.letor import LetorData

__all__ = ["holdout_split", "kfold_indices", "kfold_splits", "split_queries"]


def holdout_split(
    n_queries: int, test_fraction: float, seed: int | np.random.Generator = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` query indices: ``round(test_fraction * n_queries)`` random queries
    are held out; at least one query stays for training."""
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    n_test = int(round(test_fraction * n_queries))
    if n_test >= n_queries:
        raise ValueError(
            f"test_fraction {test_fraction} leaves no training query of the {n_queries}"
        )
    perm = np.random.default_rng(seed).permutation(n_queries)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def kfold_indices(
    n_queries: int, folds: int, seed: int | np.random.Generator = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``folds`` pairs ``(train, test)`` of sorted query indices; the test parts partition
    ``0 .. n_queries - 1`` into random parts of sizes ``floor`` or ``ceil(n_queries / folds)``."""
    if not 2 <= folds <= n_queries:
        raise ValueError(f"folds must be in 2 .. {n_queries} (the number of queries), got {folds}")
    parts = np.array_split(np.random.default_rng(seed).permutation(n_queries), folds)
    everything = np.arange(n_queries)
    return [(np.setdiff1d(everything, part), np.sort(part)) for part in parts]


def split_queries(
    data: LetorData, train: np.ndarray, test: np.ndarray
) -> tuple[LetorData, LetorData]:
    """The two :class:`LetorData` of query index arrays ``train`` and ``test``."""
    return data.subset(train), data.subset(test)


def kfold_splits(
    data: LetorData, folds: int, seed: int | np.random.Generator = 0
) -> list[tuple[LetorData, LetorData]]:
    """:func:`kfold_indices` applied to ``data``: ``folds`` pairs ``(train, test)``."""
    return [
        split_queries(data, tr, te) for tr, te in kfold_indices(data.lengths.shape[0], folds, seed)
    ]
