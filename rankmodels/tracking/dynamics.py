"""Float dynamics: a Gaussian random walk in the local tangent plane (dissertation eq. 5.1).

Between two cycles ``dt`` days apart the float moves by ``Delta = (east, north)`` km,

    Delta ~ N(0, q^2 dt I_2),        i.e.  f(X_t, X_t+1) of eq. 5.1 with Sigma = q^2 dt I_2,

where ``q`` (``process_noise``, km per day) is the per-axis standard deviation of a one-day
step. The step is taken in the tangent plane of the current position
(:func:`rankmodels.tracking.geometry.tangent_step`). Particle arrays are ``(N, 2)`` with
columns ``(lat, lon)`` in degrees.

The filter and smoother only use the four methods of :class:`RandomWalk` (``propagate``,
``log_density``, ``log_density_bound``, ``moments``): any object with the same methods (e.g. a
planar walk in tests) can stand in for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rankmodels.tracking.geometry import (
    KM_PER_DEGREE,
    tangent_offsets,
    tangent_step,
    wrap_longitude,
)

__all__ = ["RandomWalk"]

# d(east) d(north) = R^2 cos(lat) (pi/180)^2 d(lat) d(lon)
_AREA_PER_DEG2 = KM_PER_DEGREE**2


@dataclass(frozen=True)
class RandomWalk:
    """Tangent-plane Gaussian random walk with per-axis one-day standard deviation
    ``process_noise`` km."""

    process_noise: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.process_noise) and self.process_noise > 0):
            raise ValueError(f"process_noise must be > 0 km/day, got {self.process_noise}")

    def _var(self, dt: float) -> float:
        if not dt > 0:
            raise ValueError(f"time step must be > 0 days, got {dt}")
        return self.process_noise**2 * dt

    def propagate(self, x: np.ndarray, dt: float, rng: np.random.Generator) -> np.ndarray:
        """Sample ``X_t+1 ~ f(X_t, .)`` for every particle: ``(N, 2)`` -> ``(N, 2)``."""
        step = rng.normal(0.0, math.sqrt(self._var(dt)), size=x.shape)
        lat, lon = tangent_step(x[:, 0], x[:, 1], step[:, 0], step[:, 1])
        return np.column_stack([lat, lon])

    def log_density(self, x_from: np.ndarray, x_to: np.ndarray, dt: float) -> np.ndarray:
        """``log f(x_from, x_to)`` with respect to ``d lat d lon`` (degrees), broadcasting
        ``(..., 2)`` arrays; the Jacobian ``R^2 cos(lat_from) (pi/180)^2`` is included."""
        var = self._var(dt)
        east, north = tangent_offsets(x_from[..., 0], x_from[..., 1], x_to[..., 0], x_to[..., 1])
        return (
            -0.5 * (east**2 + north**2) / var
            - math.log(2.0 * math.pi * var)
            + np.log(_AREA_PER_DEG2 * np.cos(np.radians(x_from[..., 0])))
        )

    def log_density_bound(self, x_from: np.ndarray, dt: float) -> float:
        """An upper bound of ``log f(x, y)`` over ``x`` in ``x_from`` (N, 2) and all ``y``."""
        var = self._var(dt)
        cos_max = float(np.max(np.cos(np.radians(x_from[:, 0]))))
        return -math.log(2.0 * math.pi * var) + math.log(_AREA_PER_DEG2 * cos_max)

    def moments(
        self, x: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Weighted mean ``(lat, lon)`` and the ``(2, 2)`` covariance in km^2 of the (east,
        north) offsets in the tangent plane at the mean.

        Longitudes are unwrapped about the first particle, so clouds across the date line are
        fine; for clouds of a few hundred km this equirectangular mean differs from the
        spherical mean by well under a metre."""
        w = np.full(x.shape[0], 1.0 / x.shape[0]) if weights is None else weights / np.sum(weights)
        lat = x[:, 0]
        dlon = wrap_longitude(x[:, 1] - x[0, 1])
        mean_lat = float(w @ lat)
        mean_dlon = float(w @ dlon)
        d = np.column_stack(
            [
                (dlon - mean_dlon) * (KM_PER_DEGREE * math.cos(math.radians(mean_lat))),
                (lat - mean_lat) * KM_PER_DEGREE,
            ]
        )
        mean = np.array([mean_lat, float(wrap_longitude(x[0, 1] + mean_dlon))])
        return mean, (d * w[:, None]).T @ d
