"""Position fixes (GPS at a surfacing, the recovery) as steps of the particle filter.

A fix ``k`` is a position ``z_k`` (lat, lon) measured at time ``tau_k`` with error ``s_k`` km
per axis. Its likelihood at a particle position ``X`` is Gaussian in the tangent plane at the
fix:

    log p(z_k | X) = -|D|^2 / (2 s_k^2) - log(2 pi s_k^2),    D = (east, north) of X from z_k (km).

**Where the filter uses a fix: at its own time.** Each fix is a filter step of its own: the
particles are carried by the random walk from the previous step to ``tau_k``, weighted by the
fix's likelihood, and carried on to the next cycle. For the random-walk dynamics this is
exact (the fix step is an observation of ``X(tau_k)`` in the same hidden Markov chain), and the
smoother, which draws trajectories backwards through every filter step, conditions on every fix
at its time with nothing added. The alternative, weighting the nearest cycle with the fix's
error inflated by ``q^2 |tau_k - t|``, is an approximation: it treats the fix as an
observation of that cycle's position, so the walk between the cycle and the fix never learns
from it, and the smoother would see the fix at the wrong time. A fix at a cycle's time is the
step just before that cycle (:data:`MIN_STEP_DAYS` apart, as a first cycle at the launch time
is), so the cycle's filtered position includes it.

The recovery fix is the same kind of step, appended after the last cycle, but only when
smoothing: the forward filter never sees it, which keeps it an out-of-sample test of the
forward track (the ``recovery_distance`` quality check). The fixes before it are data the
filter uses, so no check may test the track against them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.tracking.geometry import tangent_offsets

__all__ = ["MIN_STEP_DAYS", "Fixes", "Steps", "fix_loglik", "filter_steps"]

#: Shortest filter step (days): a cycle at the launch time or at a fix's time follows it by
#: this much (the random walk moves the particles by ``q 1e-3`` km: metres).
MIN_STEP_DAYS = 1e-6

_DAY = np.timedelta64(86_400_000_000_000, "ns")


@dataclass(frozen=True)
class Fixes:
    """``K`` position fixes: ``time (K,)`` datetime64[ns], ``lat``, ``lon`` (degrees) and
    ``error`` (km, standard deviation per axis), each ``(K,)``."""

    time: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    error: np.ndarray

    @classmethod
    def from_record(cls, record: xr.Dataset) -> Fixes:
        """The fixes of a validated float record (none when it has no ``fix_time``)."""
        if "fix_time" not in record:
            return cls(np.array([], dtype="datetime64[ns]"), *(np.empty(0) for _ in range(3)))
        return cls(
            np.asarray(record["fix_time"].values).astype("datetime64[ns]"),
            *(np.asarray(record[f"fix_{n}"].values, dtype=float) for n in ("lat", "lon", "error")),
        )

    def __len__(self) -> int:
        return int(self.time.size)

    def days_since(self, start: np.datetime64) -> np.ndarray:
        """``(K,)`` days from ``start`` to each fix."""
        return (self.time - np.datetime64(start, "ns")) / _DAY


def fix_loglik(lat: float, lon: float, error_km: float, x: np.ndarray) -> np.ndarray:
    """``(N,)`` ``log N(fix; X, error_km^2 I_2)`` (km, tangent plane at the fix) at particles
    ``x (N, 2)`` (lat, lon)."""
    east, north = tangent_offsets(lat, lon, x[:, 0], x[:, 1])
    var = error_km**2
    return -0.5 * (east**2 + north**2) / var - np.log(2.0 * np.pi * var)


@dataclass(frozen=True)
class Steps:
    """The filter's steps in time order: ``dt (S,)`` days from the previous step (the launch for
    the first), and for each step the ``cycle (S,)`` it weighs by the arrivals or the ``fix
    (S,)`` it weighs by a fix (-1 where not); ``cycle_steps (T,)`` the step of each cycle."""

    dt: np.ndarray
    cycle: np.ndarray
    fix: np.ndarray

    @property
    def cycle_steps(self) -> np.ndarray:
        return np.flatnonzero(self.cycle >= 0)

    def append_fix(self, fix: int, dt: float) -> Steps:
        """These steps and one more, fix ``fix`` ``dt`` days after the last (at least
        :data:`MIN_STEP_DAYS`)."""
        return Steps(
            np.append(self.dt, max(dt, MIN_STEP_DAYS)),
            np.append(self.cycle, -1),
            np.append(self.fix, fix),
        )


def filter_steps(cycle_day: np.ndarray, fix_day: np.ndarray) -> Steps:
    """The steps of ``T`` cycles and ``K`` fixes at ``cycle_day (T,)`` and ``fix_day (K,)``
    days since the launch (each increasing), merged in time order, a fix before a cycle at
    the same time; steps at most :data:`MIN_STEP_DAYS` apart are that far apart. Without
    fixes, the steps are the cycles."""
    cycle_day, fix_day = np.asarray(cycle_day, float), np.asarray(fix_day, float)
    day = np.concatenate([fix_day, cycle_day])
    is_cycle = np.r_[np.zeros(fix_day.size, bool), np.ones(cycle_day.size, bool)]
    index = np.r_[np.arange(fix_day.size), np.arange(cycle_day.size)]
    order = np.lexsort((is_cycle, day))
    dt = np.maximum(np.diff(day[order], prepend=0.0), MIN_STEP_DAYS)
    cycle = np.where(is_cycle[order], index[order], -1)
    fix = np.where(is_cycle[order], -1, index[order])
    return Steps(dt, cycle, fix)
