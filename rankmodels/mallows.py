"""Mallows models and mixtures of Mallows models (Kendall distance).

The Mallows model with centre ``W`` (an order, best first) and dispersion ``phi in (0, 1]``:

    P(sigma | W, phi) = phi ** d_K(sigma, W) / Z_n(phi),
    Z_n(phi) = prod_{j=1}^{n} (1 - phi**j) / (1 - phi)     (= n! at phi = 1),

``phi = 1`` is uniform and smaller ``phi`` concentrates the mass around ``W`` (dissertation
section 4.6 writes ``P(. | W) ~ phi ** l_KT(., W)``). Orders follow
:mod:`rankmodels.permutations` (position 0 best).

* Sampling by the repeated insertion model: insert ``W[0], W[1], ...`` one at a time; item
  ``W[i]`` goes to slot ``j in {0..i}`` of the current list with probability
  ``phi ** (i - j) / (1 + phi + ... + phi**i)`` -- it creates ``i - j`` inversions with
  respect to ``W``, independently across ``i``.
* Fitting (maximum likelihood): the centre is the Kemeny consensus of the sample
  (:func:`rankmodels.aggregation.distance.kemeny`), then ``phi`` solves
  ``E_phi[d_K] = mean distance``, where
  ``E_phi[d_K] = sum_{j=1}^{n} [phi/(1-phi) - j phi^j/(1-phi^j)]``.
* Mixtures: EM with weighted Kemeny centres and the same moment equation per component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from rankmodels.aggregation.distance import kemeny
from rankmodels.aggregation.profile import Profile
from rankmodels.permutations import as_permutation, inverse, kendall_distance

__all__ = [
    "Mallows",
    "MallowsMixture",
    "expected_distance",
    "fit_mallows",
    "fit_mallows_mixture",
    "log_normaliser",
]


def log_normaliser(n: int, phi: float) -> float:
    """``log Z_n(phi)``, ``Z_n(phi) = prod_{j=1}^{n} (1 - phi^j) / (1 - phi)``."""
    _check_phi(phi)
    j = np.arange(1, n + 1)
    if phi == 1.0:
        return float(np.sum(np.log(j)))
    return float(np.sum(np.log1p(-(phi**j)) - np.log1p(-phi)))


def expected_distance(n: int, phi: float) -> float:
    """``E_phi[d_K(sigma, W)]`` under a Mallows model on ``n`` items."""
    _check_phi(phi)
    j = np.arange(1, n + 1)
    if phi == 1.0:
        return n * (n - 1) / 4
    return float(np.sum(phi / (1 - phi) - j * phi**j / (1 - phi**j)))


def _check_phi(phi: float) -> None:
    if not 0 < phi <= 1:
        raise ValueError(f"phi must be in (0, 1], got {phi}")


@numba.njit(cache=True)
def _insert(centre: np.ndarray, slots: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    m, n = slots.shape
    out = np.empty((m, n), dtype=np.int64)
    for s in range(m):
        for i in range(n):
            j = slots[s, i]
            for k in range(i, j, -1):
                out[s, k] = out[s, k - 1]
            out[s, j] = centre[i]
    return out


@dataclass(frozen=True)
class Mallows:
    """Mallows model: ``centre`` ``(n,)`` order, best first; dispersion ``phi in (0, 1]``."""

    centre: np.ndarray
    phi: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "centre", as_permutation(self.centre, "centre"))
        if self.centre.ndim != 1:
            raise ValueError("centre must be one order of shape (n,)")
        _check_phi(float(self.phi))

    @property
    def n(self) -> int:
        return self.centre.size

    def log_pmf(self, orders: np.ndarray) -> np.ndarray:
        """``log P(sigma)`` for orders of shape ``(..., n)``."""
        orders = as_permutation(orders, "orders")
        d = kendall_distance(inverse(orders), inverse(self.centre))
        return d * np.log(self.phi) - log_normaliser(self.n, self.phi)

    def pmf(self, orders: np.ndarray) -> np.ndarray:
        return np.exp(self.log_pmf(orders))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``(size, n)`` orders drawn by repeated insertion."""
        if size < 0:
            raise ValueError(f"size must be non-negative, got {size}")
        n = self.n
        slots = np.empty((size, n), dtype=np.int64)
        for i in range(n):
            w = self.phi ** (i - np.arange(i + 1, dtype=float))  # slot j makes i - j inversions
            cdf = np.cumsum(w / w.sum())
            slots[:, i] = np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), i)
        return _insert(self.centre, slots)


@dataclass(frozen=True)
class MallowsMixture:
    """Mixture ``sum_c weights[c] Mallows(centres[c], phis[c])``."""

    weights: np.ndarray
    components: tuple[Mallows, ...]

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=float)
        if w.shape != (len(self.components),) or np.any(w < 0) or not np.isclose(w.sum(), 1):
            raise ValueError("weights must be non-negative, one per component, summing to 1")
        if len({c.n for c in self.components}) != 1:
            raise ValueError("all components must rank the same number of items")
        object.__setattr__(self, "weights", w)

    def log_pmf(self, orders: np.ndarray) -> np.ndarray:
        parts = np.stack([c.log_pmf(orders) for c in self.components], axis=-1)
        return logsumexp(parts, axis=-1, b=self.weights)

    def pmf(self, orders: np.ndarray) -> np.ndarray:
        return np.exp(self.log_pmf(orders))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``(size, n)`` orders; component labels drawn from ``weights``."""
        labels = rng.choice(len(self.components), size=size, p=self.weights)
        out = np.empty((size, self.components[0].n), dtype=np.int64)
        for c, comp in enumerate(self.components):
            idx = np.flatnonzero(labels == c)
            out[idx] = comp.sample(idx.size, rng)
        return out


def _phi_from_mean(n: int, mean: float) -> float:
    """Solve ``expected_distance(n, phi) = mean`` for ``phi`` (clipped to (1e-12, 1])."""
    if mean >= expected_distance(n, 1.0):
        return 1.0
    if mean <= 0:
        return 1e-12
    return float(brentq(lambda p: expected_distance(n, p) - mean, 1e-12, 1 - 1e-12))


def _weighted_fit(orders: np.ndarray, weights: np.ndarray) -> Mallows:
    profile = Profile.from_orders(orders, weights)
    centre = kemeny(profile, max_ties=1).ranking
    d = kendall_distance(inverse(profile.orders), inverse(centre))
    mean = float(np.sum(profile.probabilities * d))
    return Mallows(centre, _phi_from_mean(orders.shape[1], mean))


def fit_mallows(orders: np.ndarray, weights: np.ndarray | None = None) -> Mallows:
    """Maximum-likelihood Mallows model of ``(m, n)`` orders (optional ``(m,)`` weights)."""
    orders = as_permutation(np.atleast_2d(orders), "orders")
    w = np.ones(orders.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    return _weighted_fit(orders, w)


def fit_mallows_mixture(
    orders: np.ndarray,
    n_components: int,
    rng: np.random.Generator,
    n_iter: int = 50,
    tol: float = 1e-8,
) -> tuple[MallowsMixture, float]:
    """EM for a mixture of Mallows models; returns the model and the mean log-likelihood.

    Initialised from ``n_components`` distinct sample orders as centres (``phi = 0.5``).
    """
    orders = as_permutation(np.atleast_2d(orders), "orders")
    m = orders.shape[0]
    if not 1 <= n_components <= m:
        raise ValueError(f"n_components must be in 1..{m}, got {n_components}")
    start = rng.choice(m, size=n_components, replace=False)
    model = MallowsMixture(
        np.full(n_components, 1 / n_components),
        tuple(Mallows(orders[i], 0.5) for i in start),
    )
    previous = -np.inf
    for _ in range(n_iter):
        parts = np.stack([c.log_pmf(orders) for c in model.components], axis=1)
        parts += np.log(np.maximum(model.weights, 1e-300))
        loglik = logsumexp(parts, axis=1)
        resp = np.exp(parts - loglik[:, None])
        mean_ll = float(loglik.mean())
        if mean_ll - previous < tol:
            break
        previous = mean_ll
        comps = tuple(
            _weighted_fit(orders[resp[:, c] > 0], resp[resp[:, c] > 0, c])
            if resp[:, c].sum() > 0
            else model.components[c]
            for c in range(n_components)
        )
        model = MallowsMixture(resp.mean(axis=0), comps)
    return model, mean_ll
