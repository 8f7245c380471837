"""The float's position at its first cycle from the early cycles alone, without the launch fix.

The tracker starts every particle at the launch position, so a wrong launch fix is absorbed
within a few cycles and leaves no trace in the track. To test the fix out of sample (as the
recovery fix tests the forward filter), the first ``K`` cycles are filtered *backwards in
time* from a diffuse start: the random walk ``X_t+1 = X_t + w_t``, ``w_t ~ N(0, q^2 dt_t
I_2)`` (eq. 5.1) read backwards is the same walk, so a bootstrap filter over cycles ``K - 1,
K - 2, ..., 0`` whose particles start spread ``N(c, (R^2 + q^2 day_K-1) I_2)`` about a
centre ``c`` (the launch fix; ``R`` :data:`PRIOR_KM`, wide enough that a launch error of a
few hundred km lies well inside) ends with the posterior of the first cycle's position
``p(X_0 | y_0..K-1)``: the data's own estimate of where the float started, to which the
centre contributes only a pull of order ``C_0 / R^2`` (``C_0`` the posterior covariance,
tens of km^2 against ``R^2 = 9 10^4`` km^2).
"""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.filter import LogLikelihood, particle_filter

__all__ = ["PARTICLES", "PRIOR_KM", "WINDOW_DAYS", "first_position", "window_cycles"]

#: Standard deviation (km per axis) of the diffuse start about the launch fix.
PRIOR_KM = 300.0
#: Particles of the backward filter (independent of the run's ``particles``: the check's
#: false-alarm and detection rates are measured at this count).
PARTICLES = 10_000
#: The cycles within this many days of the launch are filtered.
WINDOW_DAYS = 20.0


def window_cycles(day: np.ndarray) -> int:
    """How many leading cycles lie within :data:`WINDOW_DAYS` of the launch; ``day (T,)``
    days since launch, increasing."""
    return int(np.searchsorted(day, WINDOW_DAYS, side="right"))


def first_position(
    centre: np.ndarray,
    dt: np.ndarray,
    loglik: LogLikelihood,
    dynamics: RandomWalk,
    rng: np.random.Generator,
    *,
    n_particles: int = PARTICLES,
    prior_km: float = PRIOR_KM,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(lat, lon)`` and covariance ``(2, 2)`` km^2 (east, north) of the first cycle's
    position given cycles ``0 .. K-1`` (``K = len(dt)``), by the backward filter of the
    module docstring.

    ``centre (2,)`` (lat, lon) of the diffuse start; ``dt (K,)`` days from the previous
    cycle (from the launch for ``dt[0]``, which is not used); ``loglik(t, x)`` cycle ``t``'s
    ``(N,)`` log-likelihood at positions ``x (N, 2)``, ``None`` without data; ``dynamics``
    the random walk (its ``q``)."""
    dt = np.asarray(dt, dtype=float)
    k = dt.size
    q2 = dynamics.process_noise**2
    # step j of the reversed filter reaches cycle k - 1 - j; its first step is the diffuse
    # start: the walk from the centre over (R^2 / q^2 + days from the launch to cycle k - 1)
    steps = np.concatenate([[prior_km**2 / q2 + dt.sum()], dt[1:][::-1]])
    res = particle_filter(
        np.asarray(centre, dtype=float),
        steps,
        lambda j, x: loglik(k - 1 - j, x),
        dynamics,
        n_particles,
        rng,
        n_ensemble=0,
    )
    return res.mean[-1], res.cov[-1]
