"""Mallows models and mixtures of Mallows models (Kendall distance).

The Mallows model with centre ``W`` (an order, best first) and dispersion ``phi in (0, 1]``
([Pareek2017] section 4.6, ``P(. | W) ~ phi ** l_KT(., W)``) is

    P(sigma | W, phi) = phi ** d_K(sigma, W) / Z_n(phi),
    Z_n(phi) = prod_{m=1}^{n} S_m(phi),   S_m(phi) = 1 + phi + ... + phi**(m-1)
             = prod_{m=1}^{n} (1 - phi**m) / (1 - phi)        (= n! at phi = 1).

``phi = 1`` is uniform and *smaller* ``phi`` concentrates the mass around ``W``. The same model
in exponential form is ``P ~ exp(-theta d_K)`` with ``theta = -log(phi) >= 0``; every
function here works on ``theta`` internally so that ``phi`` close to 1 loses no precision.

Stagewise representation (Fligner and Verducci 1986): build ``sigma`` from the top; at stage
``r`` (``r = 0..n-1``) the next item is the one of the ``m = n - r`` remaining items that ``W``
ranks ``V_r``-th among them, which makes ``V_r`` discordant pairs with the items left. The
``V_r`` are independent truncated geometrics,

    P(V_r = v) = phi**v / S_m(phi),  v = 0..m-1,
    E[V_r] = 1/(e^theta - 1) - m/(e^(m theta) - 1),                                  (1)

and ``d_K(sigma, W) = sum_r V_r``; so ``E[d_K] = sum_{m=1}^{n} E[V | m]``. Orders follow
:mod:`rankmodels.permutations` (position 0 best).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankmodels.aggregation.mallows.histogram import sample_histogram
from rankmodels.aggregation.mallows.marginals import (
    DistributionMarginals,
    pair_positions,
    pairwise_marginals,
    positional_marginals,
)
from rankmodels.aggregation.mallows.sampling import sample_orders
from rankmodels.aggregation.profile import Profile
from rankmodels.permutations import as_permutation, inverse, kendall_distance

__all__ = [
    "MAX_THETA",
    "Mallows",
    "MallowsMixture",
    "expected_distance",
    "log_normaliser",
    "log_stage_normalisers",
    "stage_mean",
    "theta_from_phi",
]

MAX_THETA = 30.0
"""Largest dispersion ``theta`` (``phi ~ 1e-13``): maximum likelihood puts ``theta = inf`` on
data that all equal the centre, and fitting clips it here."""

# Below this argument the closed forms of (1) lose digits to cancellation; Taylor series instead.
_SERIES_BELOW = 1e-2


def theta_from_phi(phi: float) -> float:
    """``theta = -log(phi)`` for ``phi in (0, 1]`` (ValueError otherwise)."""
    phi = float(phi)
    if not 0.0 < phi <= 1.0:
        raise ValueError(f"phi must be in (0, 1], got {phi}")
    return -float(np.log(phi))


def _check_theta(theta: float) -> float:
    theta = float(theta)
    if not 0.0 <= theta < np.inf:
        raise ValueError(f"theta must be finite and >= 0, got {theta}")
    return theta


def log_stage_normalisers(n: int, theta: float) -> np.ndarray:
    """``(n + 1,)`` array ``L[k] = sum_{r<k} log S_{n-r}(phi)``: the log normaliser of the first
    ``k`` stages (``L[n] = log Z_n``; a top-``k`` ballot has probability
    ``exp(-theta D - L[k])``, :mod:`.fitting`)."""
    theta = _check_theta(theta)
    m = np.arange(n, 0, -1, dtype=float)  # stage r has m = n - r items left
    if theta == 0.0:
        log_s = np.log(m)
    else:  # S_m = (1 - e^{-m theta}) / (1 - e^{-theta})
        log_s = np.log(-np.expm1(-m * theta)) - np.log(-np.expm1(-theta))
    return np.concatenate([[0.0], np.cumsum(log_s)])


def log_normaliser(n: int, phi: float) -> float:
    """``log Z_n(phi)``, ``Z_n(phi) = prod_{m=1}^{n} (1 - phi^m) / (1 - phi)``."""
    return float(log_stage_normalisers(n, theta_from_phi(phi))[-1])


def stage_mean(m: np.ndarray | int, theta: float) -> np.ndarray:
    """``E[V]`` of eq. (1) for stages with ``m`` items left (broadcast over ``m``)."""
    theta = _check_theta(theta)
    m = np.asarray(m, dtype=float)
    if theta * np.max(m, initial=1.0) < _SERIES_BELOW:
        # 1/(e^x - 1) = 1/x - 1/2 + x/12 - x^3/720 + O(x^5)
        return (m - 1) / 2 - (m**2 - 1) * theta / 12 + (m**4 - 1) * theta**3 / 720
    return 1.0 / np.expm1(theta) - m / np.expm1(m * theta)


def expected_distance(n: int, phi: float) -> float:
    """``E_phi[d_K(sigma, W)] = sum_{m=1}^{n} E[V | m]`` under a Mallows model on ``n`` items."""
    return float(np.sum(stage_mean(np.arange(1, n + 1), theta_from_phi(phi))))


@dataclass(frozen=True)
class Mallows:
    """Mallows model: ``centre`` ``(n,)`` order, best first; dispersion ``phi in (0, 1]``.

    :meth:`from_theta` builds one from ``theta = -log(phi)``.
    """

    centre: np.ndarray
    phi: float

    def __post_init__(self) -> None:
        centre = as_permutation(self.centre, "centre")
        if centre.ndim != 1:
            raise ValueError("centre must be one order of shape (n,)")
        theta_from_phi(self.phi)
        object.__setattr__(self, "centre", centre)
        object.__setattr__(self, "phi", float(self.phi))

    @classmethod
    def from_theta(cls, centre: np.ndarray, theta: float) -> Mallows:
        """The model with ``phi = exp(-theta)``, ``theta >= 0``."""
        return cls(centre, float(np.exp(-_check_theta(theta))))

    @property
    def n(self) -> int:
        return self.centre.size

    @property
    def theta(self) -> float:
        """``theta = -log(phi)``."""
        return theta_from_phi(self.phi)

    def log_normaliser(self) -> float:
        return log_normaliser(self.n, self.phi)

    def expected_distance(self) -> float:
        return expected_distance(self.n, self.phi)

    def distance(self, orders: np.ndarray) -> np.ndarray:
        """Kendall distance ``d_K(sigma, W)`` of orders ``(..., n)`` to the centre."""
        orders = as_permutation(orders, "orders")
        return kendall_distance(inverse(orders), inverse(self.centre))

    def log_pmf(self, orders: np.ndarray) -> np.ndarray:
        """``log P(sigma)`` for orders of shape ``(..., n)``."""
        return -self.theta * self.distance(orders) - self.log_normaliser()

    def pmf(self, orders: np.ndarray) -> np.ndarray:
        return np.exp(self.log_pmf(orders))

    def as_mixture(self) -> MallowsMixture:
        """This model as a one-component mixture."""
        return MallowsMixture(np.ones(1), (self,))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``(size, n)`` orders drawn by repeated insertion (:mod:`.sampling`)."""
        return self.as_mixture().sample(size, rng)

    @property
    def positional_matrix(self) -> np.ndarray:
        """``(n, n)`` exact ``M[x, k] = P(x at position k)`` (:mod:`.marginals`)."""
        return self.as_mixture().positional_matrix

    @property
    def pairwise(self) -> np.ndarray:
        """``(n, n)`` exact ``P[x, y] = P(x above y)`` (:mod:`.marginals`)."""
        return self.as_mixture().pairwise


@dataclass(frozen=True)
class MallowsMixture:
    """Mixture ``sum_c weights[c] Mallows(centres[c], phis[c])`` of models on the same items."""

    weights: np.ndarray
    components: tuple[Mallows, ...]

    def __post_init__(self) -> None:
        components = tuple(self.components)
        if not components or not all(isinstance(c, Mallows) for c in components):
            raise TypeError("components must be a non-empty sequence of Mallows models")
        w = np.asarray(self.weights, dtype=float)
        if (
            w.shape != (len(components),)
            or not np.all(np.isfinite(w))
            or np.any(w < 0)
            or not np.isclose(w.sum(), 1)
        ):
            raise ValueError("weights must be non-negative, one per component, summing to 1")
        if len({c.n for c in components}) != 1:
            raise ValueError("all components must rank the same number of items")
        object.__setattr__(self, "weights", w / w.sum())
        object.__setattr__(self, "components", components)

    @property
    def n(self) -> int:
        return self.components[0].n

    @property
    def centres(self) -> np.ndarray:
        """``(C, n)`` component centres."""
        return np.stack([c.centre for c in self.components])

    @property
    def phis(self) -> np.ndarray:
        """``(C,)`` component dispersions ``phi``."""
        return np.array([c.phi for c in self.components])

    @property
    def thetas(self) -> np.ndarray:
        """``(C,)`` component dispersions ``theta``."""
        return np.array([c.theta for c in self.components])

    def log_pmf(self, orders: np.ndarray) -> np.ndarray:
        from scipy.special import logsumexp  # here: scipy is slow to import

        parts = np.stack([c.log_pmf(orders) for c in self.components], axis=-1)
        return logsumexp(parts, axis=-1, b=self.weights)

    def pmf(self, orders: np.ndarray) -> np.ndarray:
        return np.exp(self.log_pmf(orders))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``(size, n)`` orders by repeated insertion (:func:`.sampling.sample_orders`)."""
        return sample_orders(self.centres, self.phis, self.weights, size, rng)

    def sample_histogram(
        self,
        size: int,
        rng: np.random.Generator,
        candidates: Sequence[str],
        top: int | None = None,
    ) -> Profile:
        """The profile of ``size`` draws (the draws of :meth:`sample` for the same ``rng``),
        cut after the ``top`` best candidates, merged as they are drawn
        (:func:`.histogram.sample_histogram`)."""
        return sample_histogram(self.centres, self.phis, self.weights, size, rng, candidates, top)

    @property
    def positional_matrix(self) -> np.ndarray:
        """``(n, n)`` exact ``M = sum_c weights[c] M_c`` (.marginals.positional_marginals)."""
        return sum(
            w * positional_marginals(c.centre, c.theta)
            for w, c in zip(self.weights, self.components, strict=True)
        )

    @property
    def pairwise(self) -> np.ndarray:
        """``(n, n)`` exact ``P = sum_c weights[c] P_c`` (.marginals.pairwise_marginals)."""
        return sum(
            w * pairwise_marginals(c.centre, c.theta)
            for w, c in zip(self.weights, self.components, strict=True)
        )

    def pair_positions(self, x: int, y: int) -> np.ndarray:
        """``(n, n)`` exact ``J[a, b] = P(x at a, y at b)`` (.marginals.pair_positions)."""
        return sum(
            w * pair_positions(c.centre, c.theta, x, y)
            for w, c in zip(self.weights, self.components, strict=True)
        )

    def marginals(self, candidates: Sequence[str] | None = None) -> DistributionMarginals:
        """The mixture as a distribution the aggregation rules accept (exact marginals):
        ``aggregate(mixture.marginals(names), "borda")`` is the rule's limit for infinitely
        many votes. ``candidates`` names the items (default ``"0" .. "n-1"``)."""
        names = tuple(str(i) for i in range(self.n)) if candidates is None else candidates
        return DistributionMarginals(tuple(names), self.positional_matrix, self.pairwise)
