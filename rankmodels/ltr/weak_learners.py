"""Single-feature weak learners of listwise boosting (dissertation section 3.6).

The class is ``H = {h(x) = sigma x_k : k = 1 .. F, sigma = +-1}``: each document feature
alone, either way round (the boosted ``f = sum_t alpha_t h_t`` is linear in the features,
``f(x) = w^T x``, and a negated feature lets a round descend whatever the sign of the
correlation). Round ``t`` takes the exhaustive argmax of eq. 3.18 over ``H``,

    h_t = argmax_{h in H} <d_t, h> / ||h||,     i.e.  k = argmax_k |<d_t, x_k>| / ||x_k||,
    sigma = sign <d_t, x_k>,

with ``<d, h> = sum_ij d_ij h(x_ij)`` over the training documents ``x_ij`` and their
pseudo-residuals ``d_ij`` (one matrix-vector product, ``O(N F)``). Features that are 0 on
every document are never chosen; ties keep the smallest ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WEAK_LEARNERS", "FeatureLearner", "fit_feature_learner"]

WEAK_LEARNERS = ("tree", "feature")
"""The weak learners of :func:`rankmodels.ltr.boost.fit_boosted_ranker`."""


@dataclass(frozen=True)
class FeatureLearner:
    """``h(x) = weight * x[feature]``."""

    feature: int
    weight: float = 1.0

    def predict(self, X: np.ndarray) -> np.ndarray:
        """``weight * X[..., feature]``, shape ``X.shape[:-1]``."""
        return self.weight * X[..., self.feature]

    def scaled(self, factor: float) -> FeatureLearner:
        """The learner predicting ``factor`` times as much."""
        return FeatureLearner(self.feature, factor * self.weight)


def fit_feature_learner(
    X: np.ndarray, d: np.ndarray, features: np.ndarray | None = None
) -> FeatureLearner:
    """Eq. 3.18 over single features: the ``sigma x_k`` maximising ``<d, h> / ||h||`` for
    documents ``X`` ``(N, F)`` and pseudo-residuals ``d`` ``(N,)`` (module docstring), among
    the features where ``features`` ``(F,)`` is True (None: all); ``weight = sigma``."""
    if X.ndim != 2 or d.shape != (X.shape[0],):
        raise ValueError(f"need X (N, F) and d (N,), got {X.shape} and {d.shape}")
    norms = np.sqrt(np.einsum("nf,nf->f", X, X))
    along = d @ X
    usable = norms > 0 if features is None else (norms > 0) & features
    margin = np.where(usable, np.abs(along) / np.where(norms > 0, norms, 1.0), -np.inf)
    k = int(np.argmax(margin))
    if not np.isfinite(margin[k]):
        raise ValueError("every feature is 0 on every document: no weak learner")
    return FeatureLearner(k, 1.0 if along[k] >= 0 else -1.0)
