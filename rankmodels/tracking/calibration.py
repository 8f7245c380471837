"""Calibration of the float clock, the sound speed and the source offsets (issue 8).

Predicted arrival of source ``i`` at cycle ``t`` (days since launch), float at distance
``d_ti`` km, once the file's values are corrected:

    T_ti = d_ti u + o_i + c_0 + c_1 t + delta_i + noise,     noise ~ N(0, sigma^2)

with ``u = 1000 / v`` the slowness (s/km, ``v`` the effective sound speed in m/s), ``o_i`` the
file's ``source_offset``, ``c_0`` (s) and ``c_1`` (s/day) the float clock's offset and drift,
and ``delta_i`` (s) the correction of source ``i``'s written offset. Given (expected) arrival
residuals this is *linear* in ``theta = (u, c_0, c_1, delta_1..delta_s)``, so one M-step of a
Monte Carlo EM around the smoother is the weighted least-squares solve of :func:`m_step`
(weights: the posterior probability that arrival ``j`` came from source ``i``, averaged over
the smoothed particles).

Identifiability: ``c_0`` and the mean of the ``delta_i`` shift every arrival alike and are
confounded; ``u`` is separated from them only by the spread of distances, ``c_1`` from them by
the record's length. The prior ``delta_i ~ N(0, tau^2)`` (shrinking towards the file's
offsets) makes the solve unique: without it (``tau = inf``) and with ``c_0`` estimated, the
normal equations are singular and :func:`m_step` refuses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CALIBRATION_PARAMS",
    "Calibration",
    "m_step",
    "parse_calibrate_params",
]

#: What ``--calibrate-params`` may name: ``drift`` (clock offset and drift), ``speed`` (the
#: effective sound speed), ``offsets`` (per-source offset corrections).
CALIBRATION_PARAMS = ("drift", "speed", "offsets")


def parse_calibrate_params(text: str | Iterable[str]) -> frozenset[str]:
    """The set named by ``"drift,speed,offsets"`` (any non-empty subset, any order).

    Raises ValueError naming the unknown names and the accepted ones.
    """
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    unknown = [n for n in names if n not in CALIBRATION_PARAMS]
    if unknown or not names:
        raise ValueError(
            f"expected a comma-separated list of {', '.join(CALIBRATION_PARAMS)}, got "
            f"{', '.join(repr(n) for n in unknown) or 'nothing'}"
        )
    return frozenset(names)


@dataclass(frozen=True)
class Calibration:
    """Estimated corrections and their standard errors (NaN where not estimated).

    ``sound_speed`` (m/s), ``clock_offset`` (s), ``clock_drift`` (s/day),
    ``source_offset_correction`` (s,) added to the file's ``source_offset``.
    """

    sound_speed: float
    clock_offset: float
    clock_drift: float
    source_offset_correction: np.ndarray
    sound_speed_std: float
    clock_offset_std: float
    clock_drift_std: float
    source_offset_correction_std: np.ndarray

    def predicted_shift(self, day: np.ndarray, source: np.ndarray) -> np.ndarray:
        """``c_0 + c_1 t + delta_i`` (s) for cycles ``day`` and sources ``source`` (broadcast)."""
        return (
            self.clock_offset
            + self.clock_drift * np.asarray(day)
            + self.source_offset_correction[np.asarray(source)]
        )


def m_step(
    distance_km: np.ndarray,
    day: np.ndarray,
    source: np.ndarray,
    residual_toa: np.ndarray,
    weight: np.ndarray,
    *,
    n_sources: int,
    sound_speed: float,
    sigma: float,
    offset_prior_std: float,
    params: frozenset[str] = frozenset(CALIBRATION_PARAMS),
) -> Calibration:
    """Weighted least squares for ``theta`` given K (arrival, source) pairs.

    Parameters
    ----------
    distance_km, day, source, residual_toa, weight: (K,) each: the float-to-source distance
        (km), days since launch, the source index, the recorded TOA minus the file's
        ``source_offset`` (s), and the pair's weight in ``[0, 1]`` (its association
        probability; a weight of 0 drops the pair).
    n_sources: ``s``.
    sound_speed: the file's (nominal) sound speed, used when ``"speed"`` is not estimated.
    sigma: TOA noise std (s): the likelihood ``sum_k w_k (y_k - a_k theta)^2 / (2 sigma^2)``.
    offset_prior_std: ``tau`` (s) of the prior ``delta_i ~ N(0, tau^2)``.
    params: which of :data:`CALIBRATION_PARAMS` to estimate; the rest stay at the file's
        values (``v`` nominal, ``c_0 = c_1 = 0``, ``delta = 0``).

    Returns the posterior mode and the standard errors from the inverse of the normal
    matrix ``A^T W A / sigma^2 + prior precision`` (the sound speed's by the delta method,
    ``std_v = 1000 std_u / u^2``). Raises ValueError for mismatched shapes, weights outside
    ``[0, 1]``, a source index out of range, or normal equations that cannot be solved (too
    few weighted pairs, or the clock offset without an offset prior).
    """
    arrays = [np.asarray(a, dtype=float) for a in (distance_km, day, residual_toa, weight)]
    dist, t, y, w = arrays
    src = np.asarray(source)
    if any(a.shape != dist.shape or a.ndim != 1 for a in (*arrays, src)):
        raise ValueError("distance_km, day, source, residual_toa and weight must be (K,) alike")
    if not np.all((w >= 0) & (w <= 1)):
        raise ValueError("weight must lie in [0, 1]")
    if src.size and (src.min() < 0 or src.max() >= n_sources):
        raise ValueError(f"source must index 0 .. {n_sources - 1}")
    if not all(np.isfinite(a).all() for a in arrays):
        raise ValueError("distance_km, day, residual_toa and weight must be finite")
    params = parse_calibrate_params(params)
    slowness = 1000.0 / sound_speed
    columns: list[np.ndarray] = []
    names: list[str] = []
    if "speed" in params:
        columns.append(dist)
        names.append("u")
    else:
        y = y - dist * slowness
    if "drift" in params:
        columns += [np.ones_like(t), t]
        names += ["c0", "c1"]
    if "offsets" in params:
        onehot = np.zeros((dist.size, n_sources))
        onehot[np.arange(dist.size), src] = 1.0
        columns += list(onehot.T)
        names += [f"delta{i}" for i in range(n_sources)]
    design = np.column_stack(columns)
    prior = np.zeros(len(names))
    if "offsets" in params:
        prior[-n_sources:] = 1.0 / offset_prior_std**2
    normal = design.T @ (design * (w / sigma**2)[:, None]) + np.diag(prior)
    rhs = design.T @ (w * y) / sigma**2
    scale = np.sqrt(np.diag(normal))  # condition judged in correlation form (units aside)
    if not np.all(scale > 0) or np.linalg.cond(normal / np.outer(scale, scale)) > 1e12:
        raise ValueError(
            "calibration is not identifiable from these arrivals (too few, too alike in "
            "distance and time, or the clock offset without a prior on the source offsets)"
        )
    cov = np.linalg.inv(normal)
    theta = cov @ rhs
    std = np.sqrt(np.diag(cov))
    values = dict(zip(names, theta, strict=True))
    stds = dict(zip(names, std, strict=True))
    u = values.get("u", slowness)
    nan = math.nan
    return Calibration(
        sound_speed=1000.0 / u,
        clock_offset=values.get("c0", 0.0),
        clock_drift=values.get("c1", 0.0),
        source_offset_correction=np.array([values.get(f"delta{i}", 0.0) for i in range(n_sources)]),
        sound_speed_std=1000.0 * stds["u"] / u**2 if "u" in stds else nan,
        clock_offset_std=stds.get("c0", nan),
        clock_drift_std=stds.get("c1", nan),
        source_offset_correction_std=np.array(
            [stds.get(f"delta{i}", nan) for i in range(n_sources)]
        ),
    )
