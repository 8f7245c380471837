"""The sound speed a float's own sensors imply: TEOS-10 (``gsw``) from in-situ temperature,
pressure and practical salinity.

RAFOS travel times are distance over an *effective* sound speed, which calibration estimates; its
starting value is better taken from the water the float drifts in than from a nominal 1500 m/s.
With practical salinity ``S_P`` (the record's ``salinity``, else :data:`DEFAULT_SALINITY`),
in-situ temperature ``t`` (degC, ITS-90), sea pressure ``p`` (dbar) and the launch position:

    S_A = SA_from_SP(S_P, p, lon, lat),   Theta = CT_from_t(S_A, t, p),
    c = sound_speed(S_A, Theta, p)                               (IOC et al. 2010, eq. 2.17.1)

per cycle; the starting value is the median of ``c`` over the cycles where ``t`` and ``p`` are
finite (robust to a few bad sensor readings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import gsw
import numpy as np
import xarray as xr

from rankmodels.tracking.schema import DEFAULT_SALINITY

__all__ = ["SoundSpeedStart", "sensor_sound_speed", "starting_sound_speed"]


def sensor_sound_speed(
    temperature: np.ndarray,
    pressure: np.ndarray,
    salinity: np.ndarray,
    lat: float,
    lon: float,
) -> np.ndarray:
    """TEOS-10 sound speed (m/s) of in-situ ``temperature`` (degC), ``pressure`` (dbar) and
    practical ``salinity`` (arrays of one shape, broadcast together) at (``lat``, ``lon``)
    degrees; NaN where an input is NaN."""
    t, p, sp = np.broadcast_arrays(
        np.asarray(temperature, dtype=float),
        np.asarray(pressure, dtype=float),
        np.asarray(salinity, dtype=float),
    )
    if not (-90.0 <= lat <= 90.0 and np.isfinite(lon)):
        raise ValueError(f"position: expected lat in [-90, 90] and a finite lon, got {lat}, {lon}")
    sa = gsw.SA_from_SP(sp, p, lon, lat)
    return np.asarray(gsw.sound_speed(sa, gsw.CT_from_t(sa, t, p), p), dtype=float)


@dataclass(frozen=True)
class SoundSpeedStart:
    """Where the starting sound speed comes from: ``origin`` ``"sensors"`` (the median TEOS-10
    speed of ``cycles`` cycles' temperature and pressure) or ``"file"`` (the record's
    ``sound_speed``; ``cycles`` 0)."""

    value: float
    origin: Literal["sensors", "file"]
    cycles: int


def starting_sound_speed(record: xr.Dataset) -> SoundSpeedStart:
    """The starting sound speed of a validated float ``record``: from its ``temperature`` and
    ``pressure`` (and ``salinity``, NaN or absent: :data:`DEFAULT_SALINITY`) at the launch
    position when some cycle has both, else its ``sound_speed``."""
    if "temperature" in record and "pressure" in record:
        t = np.asarray(record["temperature"].values, dtype=float)
        p = np.asarray(record["pressure"].values, dtype=float)
        sp = (
            np.asarray(record["salinity"].values, dtype=float)
            if "salinity" in record
            else np.full(t.shape, np.nan)
        )
        sp = np.where(np.isfinite(sp), sp, DEFAULT_SALINITY)
        ok = np.isfinite(t) & np.isfinite(p)
        if ok.any():
            lat, lon = float(record["launch_lat"]), float(record["launch_lon"])
            c = sensor_sound_speed(t[ok], p[ok], sp[ok], lat, lon)
            return SoundSpeedStart(float(np.median(c)), "sensors", int(ok.sum()))
    return SoundSpeedStart(float(record["sound_speed"]), "file", 0)
