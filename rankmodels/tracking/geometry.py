"""Geometry on a spherical Earth: great-circle distances and local tangent-plane steps.

Positions are ``(lat, lon)`` in degrees; distances and displacements are in km on a sphere
of radius :data:`EARTH_RADIUS_KM`. RAFOS travel times are ``distance / sound_speed`` (the
[Pareek2017]'s ``||X_t - b_i|| / v_s`` in eq. 5.2 and 5.66, with the Euclidean norm replaced
by the great-circle distance).

A *tangent-plane step* moves a point by ``(east, north)`` km in the local plane at that
point: ``lat' = lat + north / R``, ``lon' = lon + east / (R cos lat)`` (radians). The exact
inverse (:func:`tangent_offsets`) measures a displacement in the plane at the *origin*, so
that the random-walk density of :mod:`rankmodels.tracking.dynamics` is the density of the
step that was actually drawn.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "EARTH_RADIUS_KM",
    "KM_PER_DEGREE",
    "great_circle_km",
    "pairwise_distance_km",
    "tangent_offsets",
    "tangent_step",
    "unit_vectors",
    "wrap_longitude",
]

EARTH_RADIUS_KM = 6371.0
#: km per degree of latitude (and of longitude at the equator)
KM_PER_DEGREE = EARTH_RADIUS_KM * math.pi / 180.0


def wrap_longitude(lon: np.ndarray) -> np.ndarray:
    """Longitudes wrapped into ``[-180, 180)`` degrees."""
    return (np.asarray(lon, dtype=float) + 180.0) % 360.0 - 180.0


def great_circle_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    """Great-circle (haversine) distance in km between broadcastable arrays of points."""
    p1 = np.radians(np.asarray(lat1, dtype=float))
    p2 = np.radians(np.asarray(lat2, dtype=float))
    dphi = p2 - p1
    dlmb = np.radians(np.asarray(lon2, dtype=float) - np.asarray(lon1, dtype=float))
    h = np.sin(dphi / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlmb / 2) ** 2
    return 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


@numba.njit(cache=True)
def _pairwise_chord(lat, lon, sx, sy, sz, out):  # pragma: no cover - numba
    deg = math.pi / 180.0
    for i in range(lat.shape[0]):
        phi = lat[i] * deg
        lmb = lon[i] * deg
        cp = math.cos(phi)
        x = cp * math.cos(lmb)
        y = cp * math.sin(lmb)
        z = math.sin(phi)
        for k in range(sx.shape[0]):
            dx = x - sx[k]
            dy = y - sy[k]
            dz = z - sz[k]
            half_chord = 0.5 * math.sqrt(dx * dx + dy * dy + dz * dz)
            out[i, k] = 2.0 * EARTH_RADIUS_KM * math.asin(min(half_chord, 1.0))


def unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """``(n, 3)`` Cartesian unit vectors of points given in degrees."""
    phi, lmb = np.radians(np.asarray(lat, dtype=float)), np.radians(np.asarray(lon, dtype=float))
    return np.column_stack([np.cos(phi) * np.cos(lmb), np.cos(phi) * np.sin(lmb), np.sin(phi)])


def pairwise_distance_km(
    lat: np.ndarray,
    lon: np.ndarray,
    src_lat: np.ndarray | None = None,
    src_lon: np.ndarray | None = None,
    *,
    src_xyz: np.ndarray | None = None,
) -> np.ndarray:
    """Great-circle distances ``D[i, k]`` (km) from points ``i`` (shape ``(N,)``) to
    sources ``k``; returns ``(N, s)``. Sources as ``src_lat``, ``src_lon`` (s,) or, to skip
    recomputing them in a loop, as unit vectors ``src_xyz`` (s, 3) (:func:`unit_vectors`).

    Numba kernel using the chord form ``d = 2 R asin(|u_i - v_k| / 2)`` of unit vectors
    (identical to the haversine, and accurate for all distances up to antipodal)."""
    lat = np.ascontiguousarray(lat, dtype=np.float64)
    lon = np.ascontiguousarray(lon, dtype=np.float64)
    if lat.shape != lon.shape or lat.ndim != 1:
        raise ValueError(f"lat and lon must be 1-d of equal length, got {lat.shape}, {lon.shape}")
    if src_xyz is None:
        if src_lat is None or src_lon is None or np.shape(src_lat) != np.shape(src_lon):
            raise ValueError("give src_lat and src_lon of equal length, or src_xyz")
        src_xyz = unit_vectors(np.ravel(src_lat), np.ravel(src_lon))
    xyz = np.asfortranarray(src_xyz, dtype=np.float64)
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ValueError(f"src_xyz must be (s, 3), got {xyz.shape}")
    out = np.empty((lat.shape[0], xyz.shape[0]))
    _pairwise_chord(lat, lon, xyz[:, 0], xyz[:, 1], xyz[:, 2], out)
    return out


def tangent_step(
    lat: np.ndarray, lon: np.ndarray, east_km: np.ndarray, north_km: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move points by ``(east_km, north_km)`` in their local tangent planes.

    Returns the new ``(lat, lon)`` in degrees (longitude wrapped to ``[-180, 180)``).
    Latitude is clipped just short of the poles, where the step is undefined.
    """
    lat = np.asarray(lat, dtype=float)
    new_lat = lat + np.degrees(np.asarray(north_km) / EARTH_RADIUS_KM)
    new_lon = np.asarray(lon, dtype=float) + np.degrees(
        np.asarray(east_km) / (EARTH_RADIUS_KM * np.cos(np.radians(lat)))
    )
    return np.clip(new_lat, -89.999, 89.999), wrap_longitude(new_lon)


def tangent_offsets(
    lat0: np.ndarray, lon0: np.ndarray, lat: np.ndarray, lon: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`tangent_step`: the ``(east, north)`` km step from ``(lat0, lon0)``
    to ``(lat, lon)`` measured in the tangent plane at ``(lat0, lon0)`` (broadcasting)."""
    lat0 = np.asarray(lat0, dtype=float)
    dlon = wrap_longitude(np.asarray(lon, dtype=float) - np.asarray(lon0, dtype=float))
    east = np.radians(dlon) * EARTH_RADIUS_KM * np.cos(np.radians(lat0))
    north = np.radians(np.asarray(lat, dtype=float) - lat0) * EARTH_RADIUS_KM
    return east, north
