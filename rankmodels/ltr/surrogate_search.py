"""Best-surrogate estimation (dissertation section 3.5): the mixture weights ``alpha`` over
the Bregman surrogate dictionary chosen on validation queries.

The training queries are split in two, ``S_1`` (fit) and ``S_2`` (validation). For weights
``alpha`` on the simplex, ``h_alpha`` is the ranker trained on ``S_1`` with the mixture
surrogate ``phi_alpha = sum_i alpha_i phi_{psi_i}`` (eq. 3.26;
:func:`rankmodels.ltr.bregman.bregman_mixture_loss`, loss ``bregman_mix``), and

    alpha^ = argmax_alpha  (1/n_2) sum_{i in S_2} NDCG@k(h_alpha(x_i), r_i)     (eq. 3.25)

(the dissertation minimises the NDCG loss ``1 - NDCG``). The objective is piecewise
constant in ``alpha``, so the search is derivative-free (:func:`search_simplex`): first
the coarse simplex grid of section 3.5.1 (every ``alpha`` whose coordinates are multiples
of ``1 / resolution``: the vertices -- each surrogate alone --, edge points and inner
points), then Nelder-Mead from the best grid point on the softmax logits
``alpha = softmax(z)`` (so every step stays on the simplex), within ``max_evals``
evaluations in all. Evaluations are memoised; the result is deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy.optimize import minimize

from rankmodels.ltr.bregman import SURROGATES

__all__ = ["SurrogateSearch", "best_surrogate", "mixture_options", "search_simplex", "simplex_grid"]

R = TypeVar("R")


def simplex_grid(dim: int, resolution: int) -> np.ndarray:
    """``(G, dim)``: every ``alpha >= 0`` with ``sum alpha = 1`` and coordinates multiples
    of ``1 / resolution`` (``G = C(resolution + dim - 1, dim - 1)``), vertices first."""
    if dim < 1 or resolution < 1:
        raise ValueError(f"dim and resolution must be >= 1, got {dim}, {resolution}")
    points = [
        c for c in itertools.product(range(resolution + 1), repeat=dim) if sum(c) == resolution
    ]
    points.sort(key=lambda c: (-max(c), tuple(-x for x in c)))
    return np.array(points, dtype=float) / resolution


class _OutOfBudget(Exception):
    """The search used up its evaluations."""


def _nelder_mead(
    evaluate: Callable[[np.ndarray], float],
    exhausted: Callable[[], bool],
    start: np.ndarray,
    floor: float,
) -> None:
    """Nelder-Mead maximising ``evaluate(softmax([z, 0]))`` over ``z`` ``(dim - 1,)`` (the
    last logit fixed: softmax ignores shifts), from ``alpha = start`` (coordinates below
    ``floor`` raised to it) with unit steps, until ``exhausted()``."""
    logits = np.log(np.maximum(start, floor))
    z0 = logits[:-1] - logits[-1]

    def negative(z: np.ndarray) -> float:
        if exhausted():
            raise _OutOfBudget
        e = np.exp(np.append(z, 0.0) - max(z.max(), 0.0))
        return -evaluate(e / e.sum())

    simplex = np.vstack([z0, z0 + np.eye(z0.shape[0])])
    try:
        minimize(negative, z0, method="Nelder-Mead", options={"initial_simplex": simplex})
    except _OutOfBudget:
        pass


@dataclass(frozen=True)
class SurrogateSearch:
    """The outcome of :func:`search_simplex`: the best ``alpha`` ``(dim,)``, its objective
    value, and every evaluation ``(alpha, value)`` in the order made."""

    alpha: np.ndarray
    value: float
    trace: tuple[tuple[np.ndarray, float], ...]


def search_simplex(
    objective: Callable[[np.ndarray], float],
    dim: int,
    *,
    resolution: int = 2,
    max_evals: int = 20,
    floor: float = 1e-3,
) -> SurrogateSearch:
    """Maximise ``objective(alpha)`` over the simplex (module docstring): the grid of
    :func:`simplex_grid`, then Nelder-Mead on ``z`` with ``alpha = softmax(z)`` started at
    ``z = log(max(alpha_grid, floor))`` with unit steps, ``max_evals`` evaluations in all
    (at least the grid's). Ties keep the earliest point."""
    grid = simplex_grid(dim, resolution)
    if max_evals < 1:
        raise ValueError(f"max_evals must be >= 1, got {max_evals}")
    seen: dict[bytes, float] = {}
    trace: list[tuple[np.ndarray, float]] = []

    def evaluate(alpha: np.ndarray) -> float:
        key = np.round(alpha, 12).tobytes()
        if key not in seen:
            seen[key] = float(objective(alpha))
            trace.append((alpha, seen[key]))
        return seen[key]

    for alpha in grid[:max_evals]:
        evaluate(alpha)
    if dim > 1:
        start = max(trace, key=lambda t: t[1])[0]
        _nelder_mead(evaluate, lambda: len(trace) >= max_evals, start, floor)
    best = max(range(len(trace)), key=lambda i: (trace[i][1], -i))
    return SurrogateSearch(trace[best][0], trace[best][1], tuple(trace))


def mixture_options(alpha: np.ndarray) -> dict[str, float]:
    """The ``bregman_mix`` options of the weights ``alpha`` (``(3,)``, ``SURROGATES`` order)."""
    return {name: float(a) for name, a in zip(SURROGATES, alpha, strict=True)}


def best_surrogate(
    fit: Callable[[dict[str, float]], R],
    validation_ndcg: Callable[[R], float],
    *,
    resolution: int = 2,
    max_evals: int = 20,
) -> tuple[R, SurrogateSearch]:
    """Eqs. 3.25-3.26: ``fit(options)`` trains ``h_alpha`` on ``S_1`` with the
    ``bregman_mix`` ``options`` (:func:`mixture_options`); ``validation_ndcg(ranker)`` is its
    mean NDCG@k on ``S_2``. Returns the ranker of the best ``alpha`` and the search."""
    rankers: dict[bytes, R] = {}

    def objective(alpha: np.ndarray) -> float:
        ranker = fit(mixture_options(alpha))
        rankers[np.round(alpha, 12).tobytes()] = ranker
        return validation_ndcg(ranker)

    search = search_simplex(objective, len(SURROGATES), resolution=resolution, max_evals=max_evals)
    return rankers[np.round(search.alpha, 12).tobytes()], search
