"""Float dynamics: a Gaussian random walk in the local tangent plane ([Pareek2017] eq. 5.1).

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

import numba
import numpy as np

from rankmodels.tracking.geometry import (
    EARTH_RADIUS_KM,
    KM_PER_DEGREE,
    tangent_offsets,
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
        """Sample ``X_t+1 ~ f(X_t, .)`` for every particle: ``(N, 2)`` -> ``(N, 2)``
        (the same step as :func:`~rankmodels.tracking.geometry.tangent_step`, in numba)."""
        step = rng.normal(0.0, math.sqrt(self._var(dt)), size=x.shape)
        out = np.empty_like(step)
        _walk(np.ascontiguousarray(x, dtype=np.float64), step, out)
        return out

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
        mean, cov = np.empty(2), np.empty((2, 2))
        _moments(np.ascontiguousarray(x, dtype=np.float64), w, KM_PER_DEGREE, mean, cov)
        mean[1] = wrap_longitude(mean[1])
        return mean, cov


@numba.njit(cache=True)
def _walk(x, step, out):  # pragma: no cover - numba
    """``out[i] = tangent_step(x[i], east = step[i, 0], north = step[i, 1])``."""
    to_deg = 180.0 / (math.pi * EARTH_RADIUS_KM)
    for i in range(x.shape[0]):
        lat = x[i, 0]
        new_lat = lat + step[i, 1] * to_deg
        lon = x[i, 1] + step[i, 0] * to_deg / math.cos(math.radians(lat))
        out[i, 0] = min(max(new_lat, -89.999), 89.999)
        out[i, 1] = (lon + 180.0) % 360.0 - 180.0


@numba.njit(cache=True)
def _moments(x, w, km_per_deg, mean, cov):  # pragma: no cover - numba
    """Weighted mean (longitude unwrapped about ``x[0]``) and km^2 covariance, two passes."""
    ref = x[0, 1]
    m_lat = 0.0
    m_dlon = 0.0
    for i in range(x.shape[0]):
        m_lat += w[i] * x[i, 0]
        m_dlon += w[i] * ((x[i, 1] - ref + 180.0) % 360.0 - 180.0)
    kx = km_per_deg * math.cos(math.radians(m_lat))
    cee = 0.0
    cen = 0.0
    cnn = 0.0
    for i in range(x.shape[0]):
        e = (((x[i, 1] - ref + 180.0) % 360.0 - 180.0) - m_dlon) * kx
        n = (x[i, 0] - m_lat) * km_per_deg
        cee += w[i] * e * e
        cen += w[i] * e * n
        cnn += w[i] * n * n
    mean[0] = m_lat
    mean[1] = ref + m_dlon
    cov[0, 0] = cee
    cov[0, 1] = cen
    cov[1, 0] = cen
    cov[1, 1] = cnn
