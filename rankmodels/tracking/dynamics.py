"""Float dynamics in the local tangent plane: a Gaussian random walk ([Pareek2017] eq. 5.1)
and the first-order Lagrangian stochastic model (an integrated Ornstein-Uhlenbeck velocity).

:class:`RandomWalk`. Between two cycles ``dt`` days apart the float moves by ``Delta =
(east, north)`` km,

    Delta ~ N(0, q^2 dt I_2),        i.e.  f(X_t, X_t+1) of eq. 5.1 with Sigma = q^2 dt I_2,

where ``q`` (``process_noise``, km per day) is the per-axis standard deviation of a one-day
step. The state is the position, ``(N, 2)`` arrays with columns ``(lat, lon)`` in degrees.

:class:`LagrangianMotion`. The float's velocity ``u`` (km/day, per axis east and north) is a
mean velocity ``mu`` plus an eddy velocity that is Ornstein-Uhlenbeck with stationary standard
deviation ``s`` (``eddy_speed``) and Lagrangian time scale ``tau`` (``time_scale``, days); the
position integrates it, plus an optional white diffusion ``q_0`` (``position_noise``, km per
day and axis). Over ``dt`` days, with ``phi = exp(-dt / tau)``, per axis (Gardiner 2009,
sec. 3.8.4; Griffa 1996, "Applications of stochastic particle models to oceanographic
problems")

    u'    = mu + phi (u - mu) + e_u,
    Delta = mu dt + tau (1 - phi) (u - mu) + e_x,
    Var e_u = s^2 (1 - phi^2),   Cov(e_x, e_u) = s^2 tau (1 - phi)^2,
    Var e_x = s^2 tau^2 (2 dt / tau - 3 + 4 phi - phi^2) + q_0^2 dt,

independent between the axes. The state is ``(N, 4)``: ``(lat, lon, u_east, u_north)``. The
single-particle diffusivity is ``K = s^2 tau`` (km^2/day) per axis; as ``tau -> 0`` with ``K``
fixed the position is the random walk of ``q^2 = 2 K + q_0^2``
(:meth:`LagrangianMotion.diffusive`).

Steps are taken in the tangent plane of the current position
(:func:`rankmodels.tracking.geometry.tangent_step`). The filter and smoother use ``start``,
``propagate``, ``log_density``, ``log_density_bound`` and ``moments``; the quality checks
``predicted_step``. Any object with the same methods can stand in for these classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numba
import numpy as np

from rankmodels.tracking.geometry import (
    EARTH_RADIUS_KM,
    KM_PER_DEGREE,
    tangent_offsets,
    wrap_longitude,
)

__all__ = [
    "M_PER_S",
    "LagrangianMotion",
    "RandomWalk",
    "Velocity",
    "position_moments",
    "velocity_moments",
]

#: m/s in one km/day: the motion works in km/day, the files and the report in m/s and cm/s.
M_PER_S = 1000.0 / 86_400.0


class Velocity(NamedTuple):
    """A particle cloud's velocity: ``mean (2,)`` and ``cov (2, 2)`` (east, north km/day) and
    the ``cross (2, 2)`` covariance of the position offsets (rows, km) with it (columns)."""

    mean: np.ndarray
    cov: np.ndarray
    cross: np.ndarray


# d(east) d(north) = R^2 cos(lat) (pi/180)^2 d(lat) d(lon)
_AREA_PER_DEG2 = KM_PER_DEGREE**2


@dataclass(frozen=True)
class RandomWalk:
    """Tangent-plane Gaussian random walk with per-axis one-day standard deviation
    ``process_noise`` km."""

    process_noise: float

    #: Columns of the state: (lat, lon).
    state_dim = 2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.process_noise) and self.process_noise > 0):
            raise ValueError(f"process_noise must be > 0 km/day, got {self.process_noise}")

    def start(self, x0: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` particles at the launch position ``x0`` (lat, lon): ``(n, 2)``."""
        return np.tile(np.asarray(x0, dtype=float).reshape(1, 2), (n, 1))

    def predicted_step(self, velocity: Velocity | None, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``(2,)`` (east, north) km of the step over ``dt`` days and what it adds to the
        position's covariance ``(2, 2)`` km^2: ``0`` and ``q^2 dt I_2`` (``velocity`` is not
        used)."""
        return np.zeros(2), self._var(dt) * np.eye(2)

    def diffusive(self) -> RandomWalk:
        return self

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
        """:func:`position_moments` of the particles ``x`` (N, 2)."""
        return position_moments(x, weights)


@dataclass(frozen=True)
class LagrangianMotion:
    """The integrated Ornstein-Uhlenbeck velocity of the module docstring: ``mean_velocity``
    ``mu`` (east, north km/day), ``eddy_speed`` ``s`` (km/day per axis), ``time_scale``
    ``tau`` (days) and ``position_noise`` ``q_0`` (km per day and axis, >= 0)."""

    mean_velocity: tuple[float, float]
    eddy_speed: float
    time_scale: float
    position_noise: float = 0.0

    #: Columns of the state: (lat, lon, u_east, u_north).
    state_dim = 4

    def __post_init__(self) -> None:
        mu = self.mean_velocity
        if len(mu) != 2 or not all(math.isfinite(v) for v in mu):
            raise ValueError(f"mean_velocity must be two finite km/day values, got {mu!r}")
        for name, low in (("eddy_speed", 0.0), ("time_scale", 0.0)):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > low):
                raise ValueError(f"{name} must be > 0, got {value}")
        if not (math.isfinite(self.position_noise) and self.position_noise >= 0):
            raise ValueError(f"position_noise must be >= 0 km/day, got {self.position_noise}")

    @property
    def diffusivity(self) -> float:
        """``K = s^2 tau`` (km^2/day per axis)."""
        return self.eddy_speed**2 * self.time_scale

    def diffusive(self) -> RandomWalk:
        """The random walk this motion tends to as ``tau -> 0`` at fixed ``K``:
        ``q^2 = 2 K + q_0^2``."""
        return RandomWalk(math.sqrt(2.0 * self.diffusivity + self.position_noise**2))

    def transition(self, dt: float | np.ndarray) -> tuple[Any, Any, Any, Any, Any]:
        """Per axis over ``dt`` days (a number or an array of them): ``(phi, a, Vxx, Vxu,
        Vuu)`` with ``phi = exp(-dt / tau)``, ``a = tau (1 - phi)`` the gain of the eddy
        velocity into the step, and the noise covariance of the module docstring
        (cancellation-free for small ``dt / tau``)."""
        if not np.all(np.asarray(dt) > 0):
            raise ValueError(f"time step must be > 0 days, got {dt}")
        tau, s2 = self.time_scale, self.eddy_speed**2
        r = np.asarray(dt, dtype=float) / tau
        em1 = np.expm1(-r)  # phi - 1
        # 2 r - 3 + 4 phi - phi^2 = 2 (r + em1) - em1^2
        vxx = s2 * tau * tau * (2.0 * (r + em1) - em1 * em1) + self.position_noise**2 * dt
        return 1.0 + em1, -tau * em1, vxx, s2 * tau * em1 * em1, -s2 * np.expm1(-2.0 * r)

    def step_loglik(
        self, steps: np.ndarray, u_from: np.ndarray, u_to: np.ndarray, dt: np.ndarray
    ) -> np.ndarray:
        """``(..., K)`` log density of each step's (east, north) displacement ``steps (..., K,
        2)`` km and velocity ``u_to (..., K, 2)`` given the velocity ``u_from (..., K, 2)``
        (km/day) over ``dt (K,)`` days, in the tangent plane (no Jacobian): the Gaussian of
        the module docstring, both axes."""
        phi, a, vxx, vxu, vuu = self.transition(dt)
        mu = np.asarray(self.mean_velocity, dtype=float)
        dev = u_from - mu
        rx = steps - mu * dt[:, None] - a[:, None] * dev
        ru = u_to - mu - phi[:, None] * dev
        det = vxx * vuu - vxu * vxu
        quad = vuu[:, None] * rx * rx - 2.0 * vxu[:, None] * rx * ru + vxx[:, None] * ru * ru
        return -0.5 * quad.sum(axis=-1) / det - 2.0 * math.log(2.0 * math.pi) - np.log(det)

    def start(self, x0: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` particles at the launch position ``x0`` with velocities from the stationary
        law ``N(mu, s^2 I_2)`` (the launch's velocity prior): ``(n, 4)``."""
        out = np.empty((n, 4))
        out[:, :2] = np.asarray(x0, dtype=float).reshape(1, 2)
        out[:, 2:] = np.asarray(self.mean_velocity) + self.eddy_speed * rng.standard_normal((n, 2))
        return out

    def propagate(self, x: np.ndarray, dt: float, rng: np.random.Generator) -> np.ndarray:
        """Sample the next states of ``x`` (N, 4) over ``dt`` days (module docstring)."""
        phi, a, vxx, vxu, vuu = self.transition(dt)
        z = rng.standard_normal((x.shape[0], 4))
        out = np.empty_like(z)
        mu = np.asarray(self.mean_velocity, dtype=float)
        _lagrangian_step(np.ascontiguousarray(x, dtype=np.float64), z, mu, dt, phi, a,
                         vxx, vxu, vuu, out)  # fmt: skip
        return out

    def log_density(self, x_from: np.ndarray, x_to: np.ndarray, dt: float) -> np.ndarray:
        """``log f(x_from, x_to)`` with respect to ``d lat d lon du_e du_n`` (degrees, km/day),
        broadcasting ``(..., 4)`` arrays; the Jacobian ``R^2 cos(lat_from) (pi/180)^2`` is
        included (the step in the tangent plane at ``x_from``, as
        :func:`~rankmodels.tracking.geometry.tangent_offsets` takes it)."""
        phi, a, vxx, vxu, vuu = self.transition(dt)
        x_from, x_to = np.broadcast_arrays(np.asarray(x_from, float), np.asarray(x_to, float))
        shape = x_from.shape[:-1]
        out = np.empty(int(np.prod(shape)))
        mu = np.asarray(self.mean_velocity, dtype=float)
        _lagrangian_log_density(np.ascontiguousarray(x_from.reshape(-1, 4)),
                                np.ascontiguousarray(x_to.reshape(-1, 4)), mu, float(dt),
                                float(phi), float(a), float(vxx), float(vxu), float(vuu),
                                _AREA_PER_DEG2, out)  # fmt: skip
        return out.reshape(shape)

    def log_density_bound(self, x_from: np.ndarray, dt: float) -> float:
        """An upper bound of ``log f(x, y)`` over ``x`` in ``x_from`` (N, 4) and all ``y``."""
        _, _, vxx, vxu, vuu = self.transition(dt)
        cos_max = float(np.max(np.cos(np.radians(x_from[:, 0]))))
        det = vxx * vuu - vxu * vxu
        return -2.0 * math.log(2.0 * math.pi) - math.log(det) + math.log(_AREA_PER_DEG2 * cos_max)

    def moments(
        self, x: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`position_moments` of the states ``x`` (N, 4)."""
        return position_moments(x, weights)

    def predicted_step(self, velocity: Velocity | None, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``(2,)`` (east, north) km of the step over ``dt`` days from a position whose
        velocity is ``velocity`` (None: the launch, velocity from the stationary law, no
        position error) and what the step adds to the position's covariance ``(2, 2)``
        km^2: ``mu dt + a (v - mu)`` and ``Vxx I_2 + a^2 P_v + a (C_xv + C_xv^T)``."""
        _, a, vxx, _, _ = self.transition(dt)
        mu = np.asarray(self.mean_velocity, dtype=float)
        if velocity is None:
            velocity = Velocity(mu, self.eddy_speed**2 * np.eye(2), np.zeros((2, 2)))
        cross = velocity.cross + velocity.cross.T
        added = vxx * np.eye(2) + a * a * velocity.cov + a * cross
        return mu * dt + a * (velocity.mean - mu), added


def position_moments(
    x: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted mean ``(lat, lon)`` and the ``(2, 2)`` covariance in km^2 of the (east, north)
    offsets in the tangent plane at the mean, of the positions (the first two columns) of the
    states ``x`` (N, d).

    Longitudes are unwrapped about the first particle, so clouds across the date line are
    fine; for clouds of a few hundred km this equirectangular mean differs from the spherical
    mean by well under a metre."""
    w = np.full(x.shape[0], 1.0 / x.shape[0]) if weights is None else weights / np.sum(weights)
    mean, cov = np.empty(2), np.empty((2, 2))
    _moments(np.ascontiguousarray(x, dtype=np.float64), w, KM_PER_DEGREE, mean, cov)
    mean[1] = wrap_longitude(mean[1])
    return mean, cov


def velocity_moments(
    x: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted mean ``(2,)`` and covariance ``(2, 2)`` of the velocities (columns 2, 3: east,
    north km/day) of the states ``x`` (N, 4), and the cross-covariance ``(2, 2)`` (km^2/day)
    of the (east, north) position offsets (rows; equirectangular about the mean position, as
    :func:`position_moments`) with the velocities (columns)."""
    w = np.full(x.shape[0], 1.0 / x.shape[0]) if weights is None else weights / np.sum(weights)
    mean, cov, cross = np.empty(2), np.empty((2, 2)), np.empty((2, 2))
    _velocity_moments(np.ascontiguousarray(x, dtype=np.float64), w, KM_PER_DEGREE, mean, cov,
                      cross)  # fmt: skip
    return mean, cov, cross


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


@numba.njit(cache=True)
def _lagrangian_step(x, z, mu, dt, phi, a, vxx, vxu, vuu, out):  # pragma: no cover - numba
    """``out[i]``: the next state of ``x[i]`` (lat, lon, u_e, u_n) from standard normals
    ``z[i]`` (4,), per axis through the Cholesky factor of ``[[Vxx, Vxu], [Vxu, Vuu]]``."""
    to_deg = 180.0 / (math.pi * EARTH_RADIUS_KM)
    l11 = math.sqrt(vxx)
    l21 = vxu / l11
    l22 = math.sqrt(max(vuu - l21 * l21, 0.0))
    for i in range(x.shape[0]):
        dev_e = x[i, 2] - mu[0]
        dev_n = x[i, 3] - mu[1]
        east = mu[0] * dt + a * dev_e + l11 * z[i, 0]
        north = mu[1] * dt + a * dev_n + l11 * z[i, 1]
        out[i, 2] = mu[0] + phi * dev_e + l21 * z[i, 0] + l22 * z[i, 2]
        out[i, 3] = mu[1] + phi * dev_n + l21 * z[i, 1] + l22 * z[i, 3]
        lat = x[i, 0]
        new_lat = lat + north * to_deg
        lon = x[i, 1] + east * to_deg / math.cos(math.radians(lat))
        out[i, 0] = min(max(new_lat, -89.999), 89.999)
        out[i, 1] = (lon + 180.0) % 360.0 - 180.0


@numba.njit(cache=True)
def _velocity_moments(x, w, km_per_deg, mean, cov, cross):  # pragma: no cover - numba
    """Weighted velocity mean and covariance, and the position-velocity cross-covariance
    (longitudes unwrapped about ``x[0]``), two passes."""
    ref = x[0, 1]
    m_lat = 0.0
    m_dlon = 0.0
    m_u = 0.0
    m_v = 0.0
    for i in range(x.shape[0]):
        m_lat += w[i] * x[i, 0]
        m_dlon += w[i] * ((x[i, 1] - ref + 180.0) % 360.0 - 180.0)
        m_u += w[i] * x[i, 2]
        m_v += w[i] * x[i, 3]
    kx = km_per_deg * math.cos(math.radians(m_lat))
    cov[:, :] = 0.0
    cross[:, :] = 0.0
    for i in range(x.shape[0]):
        e = (((x[i, 1] - ref + 180.0) % 360.0 - 180.0) - m_dlon) * kx
        n = (x[i, 0] - m_lat) * km_per_deg
        du = x[i, 2] - m_u
        dv = x[i, 3] - m_v
        cov[0, 0] += w[i] * du * du
        cov[0, 1] += w[i] * du * dv
        cov[1, 1] += w[i] * dv * dv
        cross[0, 0] += w[i] * e * du
        cross[0, 1] += w[i] * e * dv
        cross[1, 0] += w[i] * n * du
        cross[1, 1] += w[i] * n * dv
    cov[1, 0] = cov[0, 1]
    mean[0] = m_u
    mean[1] = m_v


@numba.njit(cache=True)
def _lagrangian_log_density(x0, x1, mu, dt, phi, a, vxx, vxu, vuu, area, out):  # pragma: no cover
    """``out[i] = log f(x0[i], x1[i])`` of :meth:`LagrangianMotion.log_density`."""
    det = vxx * vuu - vxu * vxu
    const = -2.0 * math.log(2.0 * math.pi) - math.log(det)
    km_per_rad = EARTH_RADIUS_KM
    for i in range(x0.shape[0]):
        cos0 = math.cos(math.radians(x0[i, 0]))
        dlon = (x1[i, 1] - x0[i, 1] + 180.0) % 360.0 - 180.0
        east = math.radians(dlon) * km_per_rad * cos0
        north = math.radians(x1[i, 0] - x0[i, 0]) * km_per_rad
        quad = 0.0
        for axis in range(2):
            dev = x0[i, 2 + axis] - mu[axis]
            step = east if axis == 0 else north
            px = step - mu[axis] * dt - a * dev
            pu = x1[i, 2 + axis] - mu[axis] - phi * dev
            quad += (vuu * px * px - 2.0 * vxu * px * pu + vxx * pu * pu) / det
        out[i] = -0.5 * quad + const + math.log(area * cos0)
