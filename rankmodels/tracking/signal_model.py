"""The generative model of one listening cycle of a RAFOS float ([Pareek2017] ch. 5).

Given the float position ``X`` the float hears, in one listening window ``[0, W]``:

* from every active source ``i`` a signal with probability ``P_D`` ("detectable"), arriving at
  ``t_i ~ N(pred_i(X), sigma^2)`` (eqs. 5.2, 5.66); with probability ``1 - P_D`` nothing
  ("missing", ``M``);
* multipath: a source's arrival is direct with probability ``1 - P_M`` and otherwise delayed by
  ``D ~ Exponential(mean mu_D)`` on top of the Gaussian noise, so its density is the mixture
  ``p_i(T) = (1 - P_M) N(T; pred_i, sigma^2) + P_M EMG(T; pred_i, sigma, mu_D)`` with the
  exponentially modified Gaussian ``EMG(T) = (1 / (2 mu_D)) exp(sigma^2 / (2 mu_D^2) -
  (T - pred_i) / mu_D) erfc((sigma / mu_D - z) / sqrt 2)``, ``z = (T - pred_i) / sigma``, and
  its survival ``P(t_i > tau) = Q(w) + P_M mu_D EMG(tau)``, ``w = (tau - pred_i) / sigma``,
  ``Q`` the standard normal tail (integrate the Gaussian against ``P(D > tau - x)``). With
  ``P_M = 0`` (no multipath) this is the paper's model. The engines read both multipath
  terms from tables built once per model (:mod:`rankmodels.tracking.engines.multipath`);
* ``N ~ Poisson(lambda)`` clutter arrivals, independent and uniform on ``[0, W]``
  (``p_N(T) = 1 / W``; eqs. 5.25-5.27, ``P_C = lambda / (1 + lambda)``);

and records the earliest ``r`` of all arrivals that reach it no later than ``W``,
``T_1 <= ... <= T_m`` with ``m <= r`` (``m < r`` when fewer arrived in the window). A detected
signal that is not recorded is "late" (``L``): it arrived after ``T_r`` when ``m = r`` and after
``W`` when ``m < r`` (then every arrival inside the window was recorded, so no clutter went
unrecorded either). Source arrivals are Gaussian on the whole real line, as in the paper; the
window end only truncates.

:class:`SignalModel` holds the parameters; the likelihood engines
(:mod:`rankmodels.tracking.engines`) compute ``P(T_1, ..., T_m | X)`` under this model.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

__all__ = ["DEFAULT_MULTIPATH_DELAY", "DEFAULT_WINDOW", "SignalModel"]

#: Default listening-window length (s). Long enough for sources ~2,500 km away at 1.5 km/s.
DEFAULT_WINDOW = 1800.0
#: Default mean multipath delay (s): delayed arrivals of RAFOS signals trail the direct path
#: by tens of seconds.
DEFAULT_MULTIPATH_DELAY = 30.0


@dataclass(frozen=True)
class SignalModel:
    """Parameters of the per-cycle signal model.

    Attributes
    ----------
    sigma:
        TOA noise standard deviation (s): ``p_i(T | X) = N(T; pred_i(X), sigma^2)`` (eq. 5.66).
    p_detect:
        ``P_D``, probability that a source's signal is detectable at the float (eqs. 5.65-5.66).
    clutter_rate:
        ``lambda``, Poisson mean number of clutter arrivals per listening window; the paper's
        ``P_C = lambda / (1 + lambda)`` (eq. 5.27), so its ``P_C = 0.5`` is ``lambda = 1``.
    window:
        Listening-window length ``W`` (s); clutter is uniform on ``[0, W]`` and recorded
        arrival times must not exceed ``W``.
    multipath:
        ``P_M``, probability that a source's arrival is delayed by multipath (``0 <= P_M < 1``).
    multipath_delay:
        ``mu_D``, mean of the exponential multipath delay (s); with ``P_M > 0`` at least
        ``sigma / 1000`` (the tabulated survival spans ``sigma / mu_D`` standard deviations).
    """

    sigma: float = 5.0
    p_detect: float = 0.9
    clutter_rate: float = 1.0
    window: float = DEFAULT_WINDOW
    multipath: float = 0.0
    multipath_delay: float = DEFAULT_MULTIPATH_DELAY

    def __post_init__(self) -> None:
        checks = (
            ("sigma", self.sigma, lambda v: v > 0, "> 0"),
            ("p_detect", self.p_detect, lambda v: 0 < v <= 1, "in (0, 1]"),
            ("clutter_rate", self.clutter_rate, lambda v: v >= 0, ">= 0"),
            ("window", self.window, lambda v: v > 0, "> 0"),
            ("multipath", self.multipath, lambda v: 0 <= v < 1, "in [0, 1)"),
            ("multipath_delay", self.multipath_delay, lambda v: v > 0, "> 0"),
        )
        for name, value, ok, expected in checks:
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise TypeError(f"SignalModel.{name} must be a real number, got {value!r}")
            if not math.isfinite(value) or not ok(value):
                raise ValueError(f"SignalModel.{name} must be finite and {expected}, got {value!r}")
        if self.multipath > 0 and self.multipath_delay < self.sigma / 1000.0:
            raise ValueError(
                f"SignalModel.multipath_delay must be >= sigma / 1000 = {self.sigma / 1000.0:g} s "
                f"when multipath > 0, got {self.multipath_delay!r}"
            )

    @property
    def p_clutter(self) -> float:
        """``P_C = lambda / (1 + lambda)`` (eq. 5.27)."""
        return self.clutter_rate / (1.0 + self.clutter_rate)
