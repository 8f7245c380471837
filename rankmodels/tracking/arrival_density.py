"""The arrival model's densities in one place: the share of the direct path and the survival
function of a source arrival's residual (:mod:`~rankmodels.tracking.signal_model`).

A source arrival is direct with probability ``1 - P_M``, its residual ``e = T - pred``
``~ N(0, sigma^2)``, or delayed by multipath, ``e = eps + D`` with ``D ~ Exp(mu_D)`` (an
exponentially modified Gaussian, EMG). With ``z = e / sigma`` and ``a = sigma / mu_D``, the
EMG density in units of the Gaussian's is ``a sqrt(pi / 2) exp(a^2 / 2 - a z) erfc((a - z) /
sqrt 2)``, written with ``erfcx`` so that it neither overflows nor underflows far out.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from rankmodels.tracking.signal_model import SignalModel

__all__ = ["direct_path_share", "survival"]


def direct_path_share(residual: np.ndarray, model: SignalModel) -> np.ndarray:
    """``P(direct | residual)``: the direct path's share of the arrival density at
    ``residual = T - pred`` (s), ``(1 - P_M) N(e; 0, sigma^2) / p(e)`` with ``p`` the
    multipath mixture; 1 without multipath, 0 where both densities vanish and for NaN."""
    resid = np.asarray(residual, dtype=float)
    if model.multipath == 0:
        return np.where(np.isnan(resid), 0.0, 1.0)
    a = model.sigma / model.multipath_delay
    z = resid / model.sigma
    log_direct = math.log1p(-model.multipath) - 0.5 * z * z
    log_delayed = (
        math.log(model.multipath * a * math.sqrt(0.5 * math.pi))
        - 0.5 * z * z
        + np.log(special.erfcx((a - z) / math.sqrt(2.0)))
    )
    with np.errstate(invalid="ignore"):
        share = np.exp(log_direct - np.logaddexp(log_direct, log_delayed))
    return np.nan_to_num(share, nan=0.0)


def survival(excess: np.ndarray, model: SignalModel) -> np.ndarray:
    """``P(T - pred > excess)``: ``(1 - P_M) Q(x / sigma) + P_M (Q(x / sigma) + exp(a^2 / 2 -
    x / mu_D) Phi(x / sigma - a))``, ``a = sigma / mu_D`` (the EMG's survival)."""
    z = np.asarray(excess, dtype=float) / model.sigma
    direct = special.ndtr(-z)
    if model.multipath == 0:
        return direct
    a = model.sigma / model.multipath_delay
    delayed = np.exp(0.5 * a * a - a * z + special.log_ndtr(z - a))
    return direct + model.multipath * delayed
