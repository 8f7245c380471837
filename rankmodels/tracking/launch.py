"""The float's position at its first cycle from the early cycles alone, without the launch fix.

The tracker starts every particle at the launch position, so a wrong launch fix is absorbed
within a few cycles and leaves no trace in the track. To test the fix out of sample (as the
recovery fix tests the forward filter), the first ``K`` cycles are filtered *backwards in
time* from a diffuse start: the random walk ``X_t+1 = X_t + w_t``, ``w_t ~ N(0, q^2 dt_t
I_2)`` (eq. 5.1) read backwards is the same walk, so a bootstrap filter over cycles ``K - 1,
K - 2, ..., 0`` whose particles start spread ``N(c, (R^2 + q^2 day_K-1) I_2)`` about a
centre ``c`` (the launch fix; ``R`` :data:`PRIOR_KM`, so that a launch error of 100 km lies
within one standard deviation) ends with the posterior of the first cycle's position
``p(X_0 | y_0..K-1)``: the data's own estimate of where the float started, to which the
centre contributes only a pull of order ``C_0 / R^2`` (``C_0`` the posterior covariance,
tens of km^2 against ``R^2 = 2.25 10^4`` km^2: well under 1 km).

From a diffuse start a single filter can lock onto a far position that explains the first
weeks' arrivals (as clutter and misses) a hundred nats worse than the float's: its first
weights pick a few particles among many spread over ``10^5`` km^2. The particles are
therefore split among :data:`ISLANDS` independent filters whose posteriors are pooled by
their evidence ``p_b(y_0..K-1)`` (:func:`pool`): it takes one island that found the float.
"""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.filter import LogLikelihood, particle_filter
from rankmodels.tracking.geometry import tangent_offsets, tangent_step

__all__ = [
    "ISLANDS",
    "PARTICLES",
    "PRIOR_KM",
    "WINDOW_DAYS",
    "first_position",
    "pool",
    "window_cycles",
]

#: Standard deviation (km per axis) of the diffuse start about the launch fix.
PRIOR_KM = 150.0
#: Particles of the backward filter (independent of the run's ``particles``: the check's
#: false-alarm and detection rates are measured at this count).
PARTICLES = 10_000
#: Independent filters the particles are split among (module docstring).
ISLANDS = 4
#: The cycles within this many days of the launch are filtered (over 20 days a far position
#: could still explain the arrivals of a float heard by few sources through much clutter).
WINDOW_DAYS = 30.0


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
    islands: int = ISLANDS,
    prior_km: float = PRIOR_KM,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(lat, lon)`` and covariance ``(2, 2)`` km^2 (east, north) of the first cycle's
    position given cycles ``0 .. K-1`` (``K = len(dt)``), by the backward filter of the
    module docstring run as ``islands`` independent filters of ``n_particles // islands``
    particles pooled by their evidence.

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
    runs = [
        particle_filter(
            np.asarray(centre, dtype=float),
            steps,
            lambda j, x: loglik(k - 1 - j, x),
            dynamics,
            n_particles // islands,
            rng,
            n_ensemble=0,
        )
        for _ in range(islands)
    ]
    return pool(
        np.array([r.mean[-1] for r in runs]),
        np.array([r.cov[-1] for r in runs]),
        np.array([r.loglik.sum() for r in runs]),
    )


def pool(
    means: np.ndarray, covs: np.ndarray, log_evidence: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(lat, lon)`` and covariance ``(2, 2)`` km^2 of the mixture of ``B`` filters'
    posteriors ``N(means[b], covs[b])`` (``(B, 2)`` lat, lon and ``(B, 2, 2)`` km^2) weighted
    by their evidence ``p_b(y) = exp(log_evidence[b])``: an island that locked onto a
    position explaining the data worse weighs ``exp(-(difference in nats))``. Moments in the
    tangent plane at the best island's mean; equal weights when every evidence is zero."""
    log_evidence = np.asarray(log_evidence, dtype=float)
    best = int(np.argmax(log_evidence))
    if np.isfinite(log_evidence[best]):
        w = np.exp(log_evidence - log_evidence[best])
    else:
        w = np.ones(log_evidence.size)
    w /= w.sum()
    ref = means[best]
    east, north = tangent_offsets(ref[0], ref[1], means[:, 0], means[:, 1])
    offsets = np.column_stack([east, north])
    centre = w @ offsets
    spread = offsets - centre
    cov = np.einsum("b,bij->ij", w, covs) + np.einsum("b,bi,bj->ij", w, spread, spread)
    lat, lon = tangent_step(ref[0], ref[1], centre[0], centre[1])
    return np.array([float(lat), float(lon)]), cov
