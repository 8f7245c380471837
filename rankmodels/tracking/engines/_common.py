"""Shared pieces of the likelihood engines: input checks, per-cycle constants, numba helpers.

Every engine writes the likelihood of a cycle as (eq. 5.26 with its normalisation kept)

    P(T_1..T_m | X) = exp(log_poisson) * sum_{associations} prod_i phi_i(S_i) prod_{R_j = C} kappa_j

with the source factors (eq. 5.66) ``phi_i(M) = 1 - P_D``, ``phi_i(L) = P_D P(t_i > tau)``,
``phi_i(j) = P_D N(T_j; pred_i, sigma^2)``, the clutter factor ``kappa_j = lambda / W`` for
``0 <= T_j <= W`` (eq. 5.67 divided by ``1 - P_C``), the "late" threshold ``tau = T_r`` when all
``r`` arrivals were recorded and ``tau = W`` otherwise, and the particle-independent Poisson term
``log_poisson = -lambda (1 - q)``, ``q = P(clutter > tau) = 1 - tau / W`` (``q = 0`` when
``m < r``): summing eq. 5.25 over ``N`` gives ``sum_N Pois(N) N!/(N-c)! q^(N-c) = lambda^c
e^{-lambda (1 - q)}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import ndtri

from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "LOG_SQRT_2PI",
    "Cycle",
    "check_predicted",
    "log_gauss_tail",
    "log_unmatched",
    "prepare_cycle",
    "unmatched_params",
]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
#: P(Z > z) rounds to 1 below this z.
_Z_LO = -8.5


@dataclass(frozen=True)
class Cycle:
    """One listening cycle, prepared for the engines.

    Attributes
    ----------
    toa: (m,) the recorded arrival times ``T_1 <= ... <= T_m``.
    r: how many arrivals the float records at most.
    tau: "late" threshold: ``T_r`` if ``m == r`` else the window length ``W``.
    log_clutter: (m,) ``log kappa_j = log(lambda / W)`` for ``0 <= T_j <= W``, ``-inf`` otherwise
        or when ``lambda = 0``.
    log_poisson: ``-lambda (1 - q)``, the clutter count term (particle independent).
    """

    toa: np.ndarray
    r: int
    tau: float
    log_clutter: np.ndarray
    log_poisson: float

    @property
    def m(self) -> int:
        """Number of recorded arrivals."""
        return int(self.toa.shape[0])


def prepare_cycle(toa: np.ndarray, model: SignalModel) -> Cycle:
    """Validate one cycle's ``toa`` (shape ``(r,)``, trailing NaN = not recorded) and prepare it.

    Raises ValueError if ``toa`` is not 1-D and non-empty, if a NaN precedes a recorded value,
    if recorded values are infinite, descending, or later than ``model.window``.
    """
    toa = np.asarray(toa, dtype=np.float64)
    if toa.ndim != 1 or toa.shape[0] == 0:
        raise ValueError(f"toa must be a non-empty 1-D array of shape (r,), got shape {toa.shape}")
    values = toa.tolist()  # r is small: plain Python is faster than numpy here
    r = len(values)
    m = next((j for j, v in enumerate(values) if math.isnan(v)), r)
    recorded = values[:m]
    if any(not math.isnan(v) for v in values[m:]):
        raise ValueError("toa: NaN (no arrival) may only trail the recorded arrival times")
    if any(math.isinf(v) for v in recorded):
        raise ValueError("toa: recorded arrival times must be finite")
    if any(b < a for a, b in zip(recorded[:-1], recorded[1:], strict=True)):
        raise ValueError("toa: recorded arrival times must be ascending")
    window = float(model.window)
    if m and recorded[-1] > window:
        raise ValueError(
            f"toa: arrival time {recorded[-1]:g} s is later than the listening window "
            f"({window:g} s); increase SignalModel.window"
        )
    lam = float(model.clutter_rate)
    log_kappa = math.log(lam / window) if lam > 0 else -math.inf
    log_clutter = [log_kappa if 0.0 <= v <= window else -math.inf for v in recorded]
    if m == r:
        tau = recorded[-1]
        q = 1.0 - min(max(tau / window, 0.0), 1.0)
    else:
        tau = window
        q = 0.0
    return Cycle(
        toa=np.array(recorded, dtype=np.float64),
        r=r,
        tau=tau,
        log_clutter=np.array(log_clutter, dtype=np.float64),
        log_poisson=-lam * (1.0 - q),
    )


def check_predicted(predicted: np.ndarray) -> np.ndarray:
    """Return ``predicted`` as a C-contiguous float64 ``(N, s)`` array of finite values."""
    predicted = np.ascontiguousarray(predicted, dtype=np.float64)
    if predicted.ndim != 2:
        raise ValueError(f"predicted must have shape (N, s), got shape {predicted.shape}")
    if not np.isfinite(predicted).all():
        raise ValueError("predicted: predicted arrival times must be finite")
    return predicted


@njit(cache=True)
def log_gauss_tail(z: float) -> float:
    """``log P(Z > z)`` for a standard normal ``Z``, accurate in the far tail.

    ``erfc`` is used while it does not underflow; beyond ``z = 35`` the asymptotic series
    ``phi(z)/z (1 - 1/z^2 + 3/z^4 - ... - 10395/z^12)`` (relative error < 1e-16 there).
    """
    if z < 35.0:
        return math.log(0.5 * math.erfc(z * _INV_SQRT2))
    x = 1.0 / (z * z)
    series = 1.0 - x * (
        1.0 - 3.0 * x * (1.0 - 5.0 * x * (1.0 - 7.0 * x * (1.0 - 9.0 * x * (1.0 - 11.0 * x))))
    )
    return -0.5 * z * z - math.log(z) - LOG_SQRT_2PI + math.log(series)


def unmatched_params(const: float, tail_coef: float) -> tuple[float, ...]:
    """Constants for :func:`log_unmatched` with ``u = const + tail_coef * P(Z > z)``.

    Returns ``(const, tail_coef, log_const, log_tail_coef, log_const_plus_tail, z_hi)``:
    beyond ``z_hi`` the tail term is below half an ulp of ``const`` and below ``z = -8.5`` the
    tail probability rounds to 1, so :func:`log_unmatched` skips ``erfc`` there with a result
    identical to rounding.
    """
    log_const = math.log(const) if const > 0 else -math.inf
    log_tail = math.log(tail_coef) if tail_coef > 0 else -math.inf
    total = const + tail_coef
    if const > 0 and tail_coef > 0:
        z_hi = -float(ndtri(2.0**-55 * const / tail_coef))
    elif const > 0:
        z_hi = -math.inf
    else:
        z_hi = math.inf
    return (const, tail_coef, log_const, log_tail, math.log(total), z_hi)


@njit(cache=True)
def log_unmatched(z: float, params: tuple) -> float:
    """``log(const + tail_coef * P(Z > z))`` (see :func:`unmatched_params`), safe in the tails.

    For the ranked model ``const = 1 - P_D`` (missing) and ``tail_coef = P_D`` (late, eq. 5.66);
    with ``const = 0`` (``P_D = 1``) the far tail is evaluated by :func:`log_gauss_tail`.
    """
    const, tail_coef, log_const, log_tail_coef, log_total, z_hi = params
    if z >= z_hi:
        return log_const
    if z <= _Z_LO:
        return log_total
    if const > 0.0:
        return math.log(const + tail_coef * 0.5 * math.erfc(z * _INV_SQRT2))
    return log_tail_coef + log_gauss_tail(z)
