"""Differentiable scoring models ``s = f(X; theta)`` and fitted rankers built on them.

A :class:`ScoreModel` maps standardised features ``X`` ``(B, n_max, F)`` and a flat
parameter vector ``theta`` ``(P,)`` to scores ``(B, n_max)``, and back-propagates a score
gradient ``g = dL/ds`` ``(B, n_max)`` to ``dL/dtheta = sum_bj g_bj ds_bj/dtheta`` ``(P,)``.
Any loss of :data:`rankmodels.ltr.losses.LOSSES` trains any model through
:class:`rankmodels.ltr.train.TrainingObjective`.

* :class:`Linear`: ``s = X w``, ``theta = w`` ``(F,)``.
* :class:`MLP`: hidden layers ``h_0 = x``, ``h_l = tanh(h_{l-1} W_l + b_l)``
  (``W_l`` ``(d_{l-1}, d_l)``), score ``s = h_L . v``; ``theta`` is
  ``W_1, b_1, ..., W_L, b_L, v`` flattened (C order). No output bias: every ranking
  loss but the Bregman surrogates is shift-invariant, and those fit their own scale.
  Back-propagation: ``dv = h_L^T g``, ``dz_l = (dL/dh_l) (1 - h_l^2)``,
  ``dW_l = h_{l-1}^T dz_l``, ``db_l = sum dz_l``, ``dL/dh_{l-1} = dz_l W_l^T``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from rankmodels.ltr import metrics
from rankmodels.ltr.letor import LetorData

__all__ = [
    "LINEAR",
    "MLP",
    "Linear",
    "LinearRanker",
    "Ranker",
    "ScoreModel",
    "ScoringRanker",
    "mean_ndcg",
]


class ScoringRanker(Protocol):
    """A fitted ranker: ``(B, n_max)`` scores of a batch of queries."""

    def scores(self, data: LetorData) -> np.ndarray: ...


class ScoreModel(Protocol):
    """Scores and their parameter gradient (module docstring)."""

    name: str

    def n_params(self, n_features: int) -> int: ...

    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray: ...

    def backward(self, theta: np.ndarray, X: np.ndarray, grad: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Linear:
    """``s = X w``."""

    name: str = "linear"

    def n_params(self, n_features: int) -> int:
        return n_features

    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        return X @ theta

    def backward(self, theta: np.ndarray, X: np.ndarray, grad: np.ndarray) -> np.ndarray:
        return np.einsum("bnf,bn->f", X, grad)


LINEAR = Linear()


@dataclass(frozen=True)
class MLP:
    """``tanh`` hidden layers of widths ``hidden`` and a linear score (module docstring)."""

    hidden: tuple[int, ...] = (32,)
    name: str = field(default="mlp", init=False)

    def __post_init__(self) -> None:
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"hidden layer widths must be >= 1, got {self.hidden}")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    def shapes(self, n_features: int) -> list[tuple[int, ...]]:
        """Shapes of ``W_1, b_1, ..., W_L, b_L, v``."""
        widths = (n_features, *self.hidden)
        out: list[tuple[int, ...]] = []
        for d_in, d_out in zip(widths[:-1], widths[1:], strict=True):
            out += [(d_in, d_out), (d_out,)]
        return [*out, (widths[-1],)]

    def n_params(self, n_features: int) -> int:
        return sum(int(np.prod(s)) for s in self.shapes(n_features))

    def unpack(self, theta: np.ndarray, n_features: int) -> list[np.ndarray]:
        """Views of ``theta`` with the :meth:`shapes`."""
        if theta.shape != (self.n_params(n_features),):
            raise ValueError(
                f"an MLP {self.hidden} on {n_features} features has "
                f"{self.n_params(n_features)} parameters, got shape {theta.shape}"
            )
        parts, start = [], 0
        for shape in self.shapes(n_features):
            size = int(np.prod(shape))
            parts.append(theta[start : start + size].reshape(shape))
            start += size
        return parts

    def init(self, n_features: int, rng: np.random.Generator) -> np.ndarray:
        """Glorot-uniform weights, zero biases, output weights ``U(-1/sqrt(d_L), ..)``."""
        parts = []
        for shape in self.shapes(n_features):
            if len(shape) == 2:
                bound = np.sqrt(6.0 / (shape[0] + shape[1]))
                parts.append(rng.uniform(-bound, bound, size=shape).ravel())
            elif len(parts) == 2 * len(self.hidden):  # the output weights v
                parts.append(rng.uniform(-1, 1, size=shape) / np.sqrt(shape[0]))
            else:
                parts.append(np.zeros(shape))
        return np.concatenate(parts)

    def _forward(self, theta: np.ndarray, X: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        parts = self.unpack(theta, X.shape[-1])
        acts = [X.reshape(-1, X.shape[-1])]
        for W, b in zip(parts[:-1:2], parts[1:-1:2], strict=True):
            acts.append(np.tanh(acts[-1] @ W + b))
        return acts, parts[-1]

    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        acts, v = self._forward(theta, X)
        return (acts[-1] @ v).reshape(X.shape[:-1])

    def backward(self, theta: np.ndarray, X: np.ndarray, grad: np.ndarray) -> np.ndarray:
        acts, v = self._forward(theta, X)
        parts = self.unpack(theta, X.shape[-1])
        g = grad.reshape(-1)
        out = [acts[-1].T @ g]
        d_act = np.outer(g, v)
        for layer in range(len(self.hidden), 0, -1):
            dz = d_act * (1.0 - acts[layer] ** 2)
            out += [dz.sum(axis=0), acts[layer - 1].T @ dz]
            d_act = dz @ parts[2 * (layer - 1)].T
        return np.concatenate([p.ravel() for p in reversed(out)])


@dataclass(frozen=True)
class Ranker:
    """A fitted model: ``score = f((x - mean) / scale; params)``; ``mean``, ``scale``
    ``(F,)`` standardise the features as on the training documents."""

    model: ScoreModel
    params: np.ndarray
    mean: np.ndarray
    scale: np.ndarray

    def design(self, data: LetorData) -> np.ndarray:
        """``(B, n_max, F)`` standardised features of ``data``, zero on padding."""
        return np.where(data.mask[:, :, None], (data.features - self.mean) / self.scale, 0.0)

    def scores(self, data: LetorData) -> np.ndarray:
        """``(B, n_max)`` scores of the documents of ``data`` (0 on padding)."""
        return np.where(data.mask, self.model.scores(self.params, self.design(data)), 0.0)

    def ndcg(self, data: LetorData, k: int = 10) -> float:
        """Mean NDCG@k over the queries (a query without relevant documents counts 1, as
        in LightGBM: every order of it is ideal)."""
        return mean_ndcg(data, self.scores(data), k)


class LinearRanker(Ranker):
    """``score = ((x - mean) / scale) . weights``; all three are ``(F,)``."""

    def __init__(self, weights: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> None:
        super().__init__(LINEAR, weights, mean, scale)

    @property
    def weights(self) -> np.ndarray:
        return self.params


def mean_ndcg(data: LetorData, scores: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k of ``scores`` ``(B, n_max)`` on ``data`` (no relevant document: 1)."""
    return float(np.mean(metrics.ndcg(data.relevance, scores, lengths=data.lengths, k=k)))
