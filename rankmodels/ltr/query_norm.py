"""Per-query feature normalisation of a :class:`~rankmodels.ltr.letor.LetorData` batch.

For each query ``b`` and feature ``f`` over its real documents ``j``:

* ``"none"`` (the default): unchanged. LETOR 4.0 files ship already query-level
  normalised (``QueryLevelNorm``), LightGBM reads features as they are, and every model
  here standardises features over the training documents anyway;
* ``"zscore"``: ``(x_bjf - mean_j x_bjf) / std_j x_bjf`` (population std);
* ``"minmax"``: ``(x_bjf - min_j x_bjf) / (max_j x_bjf - min_j x_bjf)``, into ``[0, 1]``
  (LETOR's QueryLevelNorm).

A feature constant within a query carries no ranking information there and becomes 0
under ``zscore`` and ``minmax``. Padding stays 0. A ranker trained on normalised queries
must see every later query normalised the same way: :class:`NormalisedRanker` does that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.models import ScoringRanker, mean_ndcg

__all__ = ["NORMALISATIONS", "NormalisedRanker", "normalise_queries"]

NORMALISATIONS = ("none", "zscore", "minmax")


def normalise_queries(data: LetorData, method: str = "none") -> LetorData:
    """``data`` with each query's features normalised by ``method`` (module docstring)."""
    if method not in NORMALISATIONS:
        raise ValueError(
            f"unknown normalisation {method!r}; expected one of: {', '.join(NORMALISATIONS)}"
        )
    if method == "none":
        return data
    mask = data.mask[:, :, None]
    x = data.features
    count = np.maximum(data.lengths, 1)[:, None, None]
    if method == "zscore":
        centre = np.where(mask, x, 0.0).sum(axis=1, keepdims=True) / count
        spread = np.sqrt(np.where(mask, (x - centre) ** 2, 0.0).sum(axis=1, keepdims=True) / count)
    else:
        centre = np.where(mask, x, np.inf).min(axis=1, keepdims=True)
        spread = np.where(mask, x, -np.inf).max(axis=1, keepdims=True) - centre
    constant = ~(spread > 0)  # also nan/inf of empty queries
    scaled = (x - np.where(constant, 0.0, centre)) / np.where(constant, 1.0, spread)
    features = np.where(mask & ~constant, scaled, 0.0)
    return LetorData(features, data.relevance, data.lengths, data.qids)


@dataclass(frozen=True)
class NormalisedRanker:
    """``ranker`` applied to the queries after :func:`normalise_queries` with ``method``."""

    ranker: ScoringRanker
    method: str

    def scores(self, data: LetorData) -> np.ndarray:
        """``(B, n_max)`` scores of the normalised queries of ``data`` (0 on padding)."""
        return self.ranker.scores(normalise_queries(data, self.method))

    def ndcg(self, data: LetorData, k: int = 10) -> float:
        """Mean NDCG@k (a query without relevant documents counts 1, as LightGBM)."""
        return mean_ndcg(data, self.scores(data), k)
