"""Position uncertainty of a track: covariance in km and 95 % confidence ellipses/band."""

from __future__ import annotations

import numpy as np
import xarray as xr

from rankmodels.plots._fields import values
from rankmodels.tracking.geometry import tangent_offsets, tangent_step

CONFIDENCE = 0.95
ELLIPSE_SCALE = float(np.sqrt(-2.0 * np.log(1.0 - CONFIDENCE)))
"""Mahalanobis radius of the 95 % region of a 2-D Gaussian: chi^2_2 quantile = -2 ln(1 - 0.95)."""


def position_covariance_km(track: xr.Dataset) -> np.ndarray | None:
    """``(cycle, 2, 2)`` east/north position covariance in km^2.

    From ``position_cov`` (cycle, enu, enu) when present, else the diagonal built from
    ``lat_std``/``lon_std`` (degrees) converted in the local tangent plane (north = R dlat,
    east = R cos(lat) dlon, :func:`rankmodels.tracking.geometry.tangent_offsets`).
    None when the track carries no uncertainty.
    """
    if "position_cov" in track:
        # the contract's dims are (cycle, enu, enu); repeated dims rule out xarray's transpose
        var = track["position_cov"]
        cov = np.moveaxis(np.asarray(var.values, dtype=float), var.dims.index("cycle"), 0)
        if cov.shape[1:] != (2, 2):
            raise ValueError(f"track 'position_cov' has shape {cov.shape}; expected (cycle, 2, 2)")
        return cov
    lat_std, lon_std = values(track, "lat_std"), values(track, "lon_std")
    if lat_std is None or lon_std is None:
        return None
    lat, lon = values(track, "lat"), values(track, "lon")
    sd_east, sd_north = tangent_offsets(lat, lon, lat + lat_std, lon + lon_std)
    cov = np.zeros((lat.size, 2, 2))
    cov[:, 0, 0] = sd_east**2
    cov[:, 1, 1] = sd_north**2
    return cov


def confidence_ellipses(
    lat: np.ndarray, lon: np.ndarray, cov_km: np.ndarray, n_points: int = 36
) -> tuple[np.ndarray, np.ndarray]:
    """Boundaries of the 95 % confidence ellipses, as ``(cycle, n_points)`` lat and lon arrays.

    For a Gaussian position error with east/north covariance C (km^2) the 95 % region is
    {d : d^T C^-1 d <= k^2}, k^2 = -2 ln 0.05 (chi^2 with 2 degrees of freedom). Its boundary is
    d(t) = k V diag(sqrt(lambda)) [cos t, sin t] (C = V diag(lambda) V^T), mapped to degrees with
    the local tangent plane (:func:`rankmodels.tracking.geometry.tangent_step`).
    """
    lam, vec = np.linalg.eigh(cov_km)  # (n, 2), (n, 2, 2)
    lam = np.clip(lam, 0.0, None)
    t = np.linspace(0.0, 2.0 * np.pi, n_points, endpoint=False)
    circle = np.stack([np.cos(t), np.sin(t)])  # (2, m)
    axes = vec * np.sqrt(lam)[:, None, :]  # columns scaled by the axis lengths
    d = ELLIPSE_SCALE * np.einsum("nij,jm->nim", axes, circle)  # (n, 2 [east, north], m)
    return tangent_step(lat[:, None], lon[:, None], d[:, 0], d[:, 1])


def uncertainty_band(project, lat: np.ndarray, lon: np.ndarray, cov: np.ndarray):
    """Union of the per-cycle 95 % ellipses as one shapely geometry in the coordinates of
    ``project(lon, lat) -> (n, 2)``; None when no cycle has a finite position and covariance."""
    import shapely

    ok = np.isfinite(lat) & np.isfinite(lon) & np.isfinite(cov).all(axis=(1, 2))
    if not ok.any():
        return None
    elat, elon = confidence_ellipses(lat[ok], lon[ok], cov[ok])
    xy = project(elon.ravel(), elat.ravel()).reshape(elat.shape + (2,))
    polygons = shapely.polygons(xy)
    polygons = polygons[shapely.is_valid(polygons) & (shapely.area(polygons) > 0)]
    if polygons.size == 0:
        return None
    return shapely.union_all(polygons)
