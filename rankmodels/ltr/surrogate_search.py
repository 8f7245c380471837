"""Best-surrogate estimation (dissertation section 3.5): the weights ``alpha in [0, 1]^d``
of the Bregman surrogate dictionary chosen on validation queries.

The training queries are split in two, ``S_1`` (fit) and ``S_2`` (validation). For
weights ``alpha``, ``h_alpha`` is the ranker trained on ``S_1`` with the surrogate of
``psi_alpha = sum_i alpha_i psi_i`` (eq. 3.26, ``h_alpha = argmin_h (1/n_1) sum_{i in S_1}
phi_{psi_alpha}(h(x_i), r_i)``; loss ``bregman_mix`` with the weights
``alpha`` and ``scale = sum_i alpha_i``, :func:`mixture_options`, so that the overall
scale of ``psi`` is searched too: ``alpha`` and ``2 alpha`` are different surrogates), and

    alpha^ = argmax_{alpha in [0, 1]^d}  (1/n_2) sum_{i in S_2} NDCG@k(h_alpha(x_i), r_i)   (3.25)

(the dissertation minimises the NDCG loss ``1 - NDCG``). The objective is piecewise
constant in ``alpha``, so the search is derivative-free (:func:`search_box`), by one of

* ``"grid"`` (section 3.5.1): the finite grid of every ``alpha != 0`` whose coordinates
  are multiples of ``1 / r`` (:func:`box_grid`), at the finest resolution ``r`` whose
  ``(r + 1)^d - 1`` points fit the budget of evaluations (``r = 1`` truncated when not even
  that grid fits), the single surrogates and all-ones first;
* ``"pattern"`` (section 3.6, MATLAB's ``patternsearch``): compass search
  (:func:`pattern_search`) from the five starts of section 3.6 -- a random perturbation of
  all zeros, all ones and each canonical basis vector (:func:`pattern_starts`). scipy has
  no pattern search (its derivative-free methods, Nelder-Mead, Powell and COBYLA, are not
  poll-based mesh methods), so it is written here.

Evaluations are memoised; for a given seed the result is deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from rankmodels.ltr.bregman import SURROGATES

__all__ = [
    "SEARCHES",
    "SurrogateSearch",
    "best_surrogate",
    "box_grid",
    "grid_resolution",
    "mixture_options",
    "pattern_search",
    "pattern_starts",
    "search_box",
]

R = TypeVar("R")

SEARCHES = ("grid", "pattern")
"""The search methods of :func:`search_box`."""


def box_grid(dim: int, resolution: int) -> np.ndarray:
    """``(G, dim)``: every ``alpha in [0, 1]^dim`` but 0 whose coordinates are multiples
    of ``1 / resolution`` (``G = (resolution + 1)^dim - 1``): the basis vectors ``e_i``,
    then all ones, then the others in decreasing lexicographic order."""
    if dim < 1 or resolution < 1:
        raise ValueError(f"dim and resolution must be >= 1, got {dim}, {resolution}")
    basis = [tuple(resolution * (i == j) for j in range(dim)) for i in range(dim)]
    rest = itertools.product(range(resolution, -1, -1), repeat=dim)
    ordered = dict.fromkeys([*basis, (resolution,) * dim, *(c for c in rest if any(c))])
    return np.array(list(ordered), dtype=float) / resolution


def grid_resolution(dim: int, max_evals: int) -> int:
    """The largest ``r >= 1`` with ``(r + 1)^dim - 1 <= max_evals`` (1 when none)."""
    r = 1
    while (r + 2) ** dim - 1 <= max_evals:
        r += 1
    return r


def pattern_starts(dim: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """``(dim + 2, dim)``: section 3.6's starts -- all zeros perturbed (uniform on
    ``[0, 0.05]^dim``, seeded), all ones, and the basis vectors ``e_1 .. e_dim``."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.uniform(0.0, 0.05, dim), np.ones(dim), np.eye(dim)])


class _OutOfBudget(Exception):
    """The search used up its evaluations."""


def pattern_search(
    evaluate: Callable[[np.ndarray], float],
    start: np.ndarray,
    *,
    step: float = 0.25,
    min_step: float = 1.0 / 64,
) -> tuple[np.ndarray, float]:
    """Compass (generalised pattern) search maximising ``evaluate`` over ``[0, 1]^d``
    without 0, from ``start``: poll ``x +- delta e_i`` in the order ``+e_1, -e_1, +e_2,
    ...`` (points outside the box or at 0 skipped), move to the first strictly better
    point and double ``delta`` (at most 1), else halve it; stop when ``delta < min_step``.
    Returns the last iterate and its value (``evaluate`` may end it early by raising)."""
    x = np.asarray(start, dtype=float)
    fx, delta = evaluate(x), step
    eye = np.eye(x.shape[0])
    directions = np.stack([eye, -eye], axis=1).reshape(-1, x.shape[0])  # +e_1, -e_1, ...
    while delta >= min_step:
        for direction in directions:
            y = x + delta * direction
            if np.all((y >= 0) & (y <= 1)) and np.any(y > 0):
                fy = evaluate(y)
                if fy > fx:
                    x, fx, delta = y, fy, min(2 * delta, 1.0)
                    break
        else:
            delta /= 2
    return x, fx


@dataclass(frozen=True)
class SurrogateSearch:
    """The outcome of :func:`search_box`: the best ``alpha`` ``(dim,)``, its objective
    value, and every evaluation ``(alpha, value)`` in the order made."""

    alpha: np.ndarray
    value: float
    trace: tuple[tuple[np.ndarray, float], ...]


def search_box(
    objective: Callable[[np.ndarray], float],
    dim: int,
    *,
    method: str = "grid",
    max_evals: int = 20,
    seed: int | np.random.Generator = 0,
    starts: Sequence[np.ndarray] | None = None,
) -> SurrogateSearch:
    """Maximise ``objective(alpha)`` over ``alpha in [0, 1]^dim``, ``alpha != 0`` (module
    docstring), within ``max_evals`` evaluations. ``"pattern"`` runs :func:`pattern_search`
    from each of ``starts`` (default :func:`pattern_starts` of ``seed``) in turn, each
    allowed an equal share of the evaluations left. Ties keep the earliest point."""
    if method not in SEARCHES:
        raise ValueError(f"method must be one of {SEARCHES}, got {method!r}")
    if max_evals < 1:
        raise ValueError(f"max_evals must be >= 1, got {max_evals}")
    seen: dict[bytes, float] = {}
    trace: list[tuple[np.ndarray, float]] = []
    limit = [max_evals]

    def evaluate(alpha: np.ndarray) -> float:
        key = np.round(alpha, 12).tobytes()
        if key not in seen:
            if len(trace) >= limit[0]:
                raise _OutOfBudget
            seen[key] = float(objective(alpha))
            trace.append((alpha, seen[key]))
        return seen[key]

    if method == "grid":
        for alpha in box_grid(dim, grid_resolution(dim, max_evals))[:max_evals]:
            evaluate(alpha)
    else:
        points = pattern_starts(dim, seed) if starts is None else np.asarray(starts, float)
        for i, start in enumerate(points):
            limit[0] = len(trace) + (max_evals - len(trace)) // (len(points) - i)
            try:
                pattern_search(evaluate, start)
            except _OutOfBudget:
                pass
    best = max(range(len(trace)), key=lambda i: (trace[i][1], -i))
    return SurrogateSearch(trace[best][0], trace[best][1], tuple(trace))


def mixture_options(alpha: np.ndarray) -> dict[str, float]:
    """The ``bregman_mix`` options of ``psi_alpha = sum_i alpha_i psi_i`` (``alpha``
    ``(3,)`` in ``SURROGATES`` order, not all 0): the weights and ``scale = sum alpha``."""
    weights = {name: float(a) for name, a in zip(SURROGATES, alpha, strict=True)}
    return weights | {"scale": float(np.sum(alpha))}


def best_surrogate(
    fit: Callable[[dict[str, float]], R],
    validation_ndcg: Callable[[R], float],
    *,
    method: str = "grid",
    max_evals: int = 20,
    seed: int | np.random.Generator = 0,
) -> tuple[R, SurrogateSearch]:
    """Eqs. 3.25-3.26: ``fit(options)`` trains ``h_alpha`` on ``S_1`` with the
    ``bregman_mix`` ``options`` (:func:`mixture_options`); ``validation_ndcg(ranker)`` is its
    mean NDCG@k on ``S_2``. Returns the ranker of the best ``alpha`` and the search."""
    rankers: dict[bytes, R] = {}

    def objective(alpha: np.ndarray) -> float:
        ranker = fit(mixture_options(alpha))
        rankers[np.round(alpha, 12).tobytes()] = ranker
        return validation_ndcg(ranker)

    search = search_box(objective, len(SURROGATES), method=method, max_evals=max_evals, seed=seed)
    return rankers[np.round(search.alpha, 12).tobytes()], search
