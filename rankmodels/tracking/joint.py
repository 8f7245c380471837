"""The pooled geometry M-step of an experiment: floats that hear the same sources, each with
its own clock, calibrated together.

Float ``f`` records source ``i``'s arrival at cycle ``t`` (days since its launch), at
distance ``d`` km, once the files' values are corrected, at

    T = d u + o_i(t) + delta_i + eta_i tau_ti + c0_f + c1_f t + noise,   noise ~ N(0, sigma_f^2)

with the *shared* slowness ``u = 1000 / v`` (s/km), offset corrections ``delta_i`` (s) and
clock-drift corrections ``eta_i`` (s/day) of the sources (``o_i(t)`` the written offset with
the record's ``source_drift``, ``tau_ti`` the days since the source's clock reference,
:func:`~rankmodels.tracking.records.source_days`), and *per float* the clock offset ``c0_f``
(s) and drift ``c1_f`` (s/day). The pooled parameter vector (:class:`JointLayout`) is

    theta = (u, delta_1..delta_S, eta_1..eta_S, c0_1, c1_1, ..., c0_F, c1_F)

over the ``S`` sources of the whole experiment (by name) and the ``F`` floats.

Given the smoother's output each float's expected complete-data log-likelihood is quadratic
in its columns ``(u, c0, c1, delta_local, eta_local)``: its E-step gives
:class:`~rankmodels.tracking.calibration.ResidualStatistics` (score, Louis' missing
information, complete-data information) over them, which :func:`float_design` builds. The
floats are independent given ``theta``, so the pooled statistics are the sum of the floats'
scattered into ``theta`` (:func:`pool`): the shared block adds up over the floats that hear a
source, each float's clock block stays its own. :func:`joint_m_step` then takes the same
penalised Newton step as one float's M-step
(:func:`~rankmodels.tracking.calibration.solve_newton`: priors, entries the data do not
determine held, consider covariance of the held ones) on the pooled statistics.

Identifiability: a source's ``delta_i`` is shared, while the distances at which different
floats hear it differ, so the common delay ``d_fi du`` that one float's ``c0 + delta_i``
absorbs cannot be absorbed for every float at once: pooled floats separate the speed from
the offsets. What stays confounded is what no record can tell apart: the mean of the
``delta_i`` against the mean of the ``c0_f``, and the mean of the ``eta_i`` against the mean
of the ``c1_f``; the priors split those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    Calibration,
    ResidualStatistics,
    clock_statistics,
    penalised_information,
    residual_statistics,
    solve_newton,
)
from rankmodels.tracking.clock_readings import ClockReadings

__all__ = [
    "MIN_POOLED_DATA_TO_PRIOR",
    "MIN_POOLED_SHARE",
    "SOURCE_DRIFT_PRIOR_STD",
    "JointLayout",
    "JointParameters",
    "float_design",
    "joint_log_prior",
    "joint_prior",
    "joint_m_step",
    "monte_carlo_covariance",
    "replicated_score",
    "pool",
    "with_clock_readings",
]

#: Floor of Louis' observed information of the pooled statistics, as a share of the
#: complete-data information in any direction (one float's M-step floors it at
#: :data:`~rankmodels.tracking.calibration.MIN_OBSERVED_SHARE`). Along the directions that
#: trade the sound speed against the source offsets and clocks the smoothed tracks absorb
#: most of a change (pooled Monte Carlo shares on a 20-float, 300-day replay: -0.08, -0.02,
#: 0.01, 0.03, 0.06, 0.12, ...), so a floor of 0.3 shortens the Newton step there up to ten
#: times -- the EM stops, its gain lost in the Monte Carlo noise, short of the maximum on
#: the side it came from -- and states the speed about twice too precisely. On two such
#: replays of the tracker's own model the speed went from 1489.4 and 1491.0 m/s (true 1485)
#: to 1485.2 and 1490.5 m/s, its standard error from 0.8-0.9 to 1.2-1.8 m/s. The pooled missing
#: information adds the floats' independent estimates, and the EM's acceptance rule (the
#: penalised log-likelihood must rise) guards each step.
MIN_POOLED_SHARE = 0.02

#: Information the pooled floats must carry about an entry, relative to its prior's, for it to
#: be estimated (one float's :data:`~rankmodels.tracking.calibration.MIN_DATA_TO_PRIOR` is
#: 1): held below it, i.e. while its posterior variance exceeds 0.8 of the prior's. At 1, a
#: source offset whose data match its prior flips between estimated and held from one EM path
#: to another: on a 300-day 20-float DIMES replay (seed 12) one of four seeds held source
#: US1-6's offset at its written value (true error -2.4 s; the other seeds estimated -2.6 to
#: -4.2 s with standard errors of 1.3-1.4 s) and its sound speed ended 4 m/s from theirs.
MIN_POOLED_DATA_TO_PRIOR = 0.25

#: Prior std (s/day) of each source's clock-drift correction: moored source clocks are set
#: and read at deployment and recovery; 0.01 s/day is 7 s over the two years of DIMES.
SOURCE_DRIFT_PRIOR_STD = 0.01


@dataclass(frozen=True)
class JointLayout:
    """Where each parameter sits in the pooled ``theta`` (module docstring): ``n_sources``
    ``S`` of the experiment, ``n_floats`` ``F``."""

    n_sources: int
    n_floats: int

    @property
    def size(self) -> int:
        return 1 + 2 * self.n_sources + 2 * self.n_floats

    def offsets(self, sources: np.ndarray) -> np.ndarray:
        """Indices of the offset corrections ``delta`` of the (global) ``sources``."""
        return 1 + np.asarray(sources, dtype=int)

    def drifts(self, sources: np.ndarray) -> np.ndarray:
        """Indices of the clock-drift corrections ``eta`` of the (global) ``sources``."""
        return 1 + self.n_sources + np.asarray(sources, dtype=int)

    def clock(self, f: int) -> np.ndarray:
        """Indices of float ``f``'s clock offset and drift."""
        first = 1 + 2 * self.n_sources + 2 * f
        return np.array([first, first + 1])

    def group(self, name: str) -> np.ndarray:
        """Indices of the geometry group ``name``: ``"speed"`` (the slowness), ``"offsets"``
        (every source's offset and clock-drift correction) or ``"drift"`` (every float's
        clock offset and drift)."""
        s = self.n_sources
        spans = {"speed": (0, 1), "offsets": (1, 1 + 2 * s), "drift": (1 + 2 * s, self.size)}
        if name not in spans:
            raise ValueError(f"group must be one of {', '.join(spans)}, got {name!r}")
        return np.arange(*spans[name])

    def float_columns(self, f: int, sources: np.ndarray) -> np.ndarray:
        """Indices of float ``f``'s local columns ``(u, c0, c1, delta_local, eta_local)``
        (:func:`float_design`), its local sources being the global ``sources``."""
        return np.r_[0, self.clock(f), self.offsets(sources), self.drifts(sources)]


@dataclass(frozen=True)
class JointParameters:
    """The experiment's parameters with their standard errors (NaN where not estimated):
    the shared ``sound_speed`` (m/s), ``offset_correction`` and ``drift_correction``
    ``(S,)`` (s, s/day), and per float ``clock_offset`` and ``clock_drift`` ``(F,)``."""

    sound_speed: float
    offset_correction: np.ndarray
    drift_correction: np.ndarray
    clock_offset: np.ndarray
    clock_drift: np.ndarray
    sound_speed_std: float
    offset_correction_std: np.ndarray
    drift_correction_std: np.ndarray
    clock_offset_std: np.ndarray
    clock_drift_std: np.ndarray

    @classmethod
    def nominal(
        cls,
        layout: JointLayout,
        sound_speed: float,
        clocks: Sequence[ClockReadings] | None = None,
    ) -> JointParameters:
        """The files' values: ``sound_speed``, no corrections, each float's file clock (the
        line through its measured ``clocks[f]``; no clock error without), std NaN."""
        s, f = np.zeros(layout.n_sources), np.zeros(layout.n_floats)
        clock = np.array([c.file_clock() for c in _clocks(clocks, layout)]).reshape(-1, 2)
        return cls(
            float(sound_speed), s, s, clock[:, 0], clock[:, 1], math.nan, s + math.nan,
            s + math.nan, f + math.nan, f + math.nan,
        )  # fmt: skip

    def vector(self) -> tuple[np.ndarray, np.ndarray]:
        """``theta`` and its standard errors (the slowness's by the delta method)."""
        u = 1000.0 / self.sound_speed
        clock = np.column_stack([self.clock_offset, self.clock_drift]).ravel()
        clock_std = np.column_stack([self.clock_offset_std, self.clock_drift_std]).ravel()
        theta = np.r_[u, self.offset_correction, self.drift_correction, clock]
        std = np.r_[
            u * u * self.sound_speed_std / 1000.0,
            self.offset_correction_std,
            self.drift_correction_std,
            clock_std,
        ]
        return theta, std

    @classmethod
    def from_vector(cls, layout: JointLayout, theta: np.ndarray, std: np.ndarray):
        """The parameters of ``theta`` with standard errors ``std`` (:meth:`vector`)."""
        s = layout.n_sources
        u = theta[0]
        clock, clock_std = theta[1 + 2 * s :].reshape(-1, 2), std[1 + 2 * s :].reshape(-1, 2)
        return cls(
            sound_speed=1000.0 / u,
            offset_correction=theta[1 : 1 + s],
            drift_correction=theta[1 + s : 1 + 2 * s],
            clock_offset=clock[:, 0],
            clock_drift=clock[:, 1],
            sound_speed_std=1000.0 * std[0] / u**2,
            offset_correction_std=std[1 : 1 + s],
            drift_correction_std=std[1 + s : 1 + 2 * s],
            clock_offset_std=clock_std[:, 0],
            clock_drift_std=clock_std[:, 1],
        )

    @property
    def layout(self) -> JointLayout:
        return JointLayout(self.offset_correction.size, self.clock_offset.size)

    def estimates(self, group: str) -> bool:
        """Whether ``group`` (:meth:`JointLayout.group`) holds an estimate (a finite standard
        error)."""
        return bool(np.isfinite(self.vector()[1][self.layout.group(group)]).any())

    def largest_z(self, group: str, files: JointParameters) -> float:
        """The largest ``|estimate - file value| / standard error`` among the estimated
        entries of ``group`` (in ``theta``, the speed as its slowness), the file values being
        ``files`` (:meth:`nominal`); 0 when the group holds no estimate."""
        index = self.layout.group(group)
        values, std = self.vector()
        change = (values - files.vector()[0])[index]
        known = np.isfinite(std[index])
        return float(np.max(np.abs(change[known]) / std[index][known], initial=0.0))

    def without(self, group: str, files: JointParameters) -> JointParameters:
        """These parameters with ``group`` back at the file values ``files`` (:meth:`nominal`),
        its standard errors NaN."""
        index = self.layout.group(group)
        values, std = self.vector()
        values[index] = files.vector()[0][index]
        std[index] = math.nan
        return JointParameters.from_vector(self.layout, values, std)

    def for_float(self, f: int, sources: np.ndarray) -> Calibration:
        """Float ``f``'s :class:`~rankmodels.tracking.calibration.Calibration` (its clock, the
        shared speed and the offset corrections of its sources, global indices
        ``sources``); the drift corrections go into its record (``source_drift``)."""
        src = np.asarray(sources, dtype=int)
        return Calibration(
            sound_speed=self.sound_speed,
            clock_offset=float(self.clock_offset[f]),
            clock_drift=float(self.clock_drift[f]),
            source_offset_correction=self.offset_correction[src],
            sound_speed_std=self.sound_speed_std,
            clock_offset_std=float(self.clock_offset_std[f]),
            clock_drift_std=float(self.clock_drift_std[f]),
            source_offset_correction_std=self.offset_correction_std[src],
        )


def float_design(
    distance_km: np.ndarray,
    day: np.ndarray,
    source: np.ndarray,
    source_day: np.ndarray,
    residual: np.ndarray,
    weight: np.ndarray,
    *,
    n_sources: int,
    sigma: float,
) -> ResidualStatistics:
    """One float's E-step statistics over its columns ``(u, c0, c1, delta_1..delta_s,
    eta_1..eta_s)`` (``s`` its sources): ``distance_km (M, K)`` along ``M`` trajectories (or
    ``(K,)``), ``day``, ``source`` (local index), ``source_day`` (days since the source's
    clock reference), ``weight`` (association probability) ``(K,)`` per (arrival, source)
    pair, and ``residual`` ``(M, K)`` or ``(K,)``: the arrival minus its prediction with the
    current parameters (each trajectory's own distance); ``sigma`` the float's TOA noise."""
    dist = np.atleast_2d(np.asarray(distance_km, dtype=float))
    resid = np.broadcast_to(np.asarray(residual, dtype=float), dist.shape)
    t = np.asarray(day, dtype=float)
    src = np.asarray(source, dtype=int)
    fixed = np.zeros((t.size, 2 + 2 * n_sources))
    rows = np.arange(t.size)
    fixed[:, 0] = 1.0
    fixed[:, 1] = t
    fixed[rows, 2 + src] = 1.0
    fixed[rows, 2 + n_sources + src] = np.asarray(source_day, dtype=float)
    return residual_statistics(dist, fixed, resid, np.asarray(weight, dtype=float), sigma)


def pool(
    stats: Sequence[ResidualStatistics], sources: Sequence[np.ndarray], layout: JointLayout
) -> ResidualStatistics:
    """The experiment's statistics: float ``f``'s ``stats[f]`` (:func:`float_design`, its
    local sources being the global ``sources[f]``) scattered into ``theta`` and summed."""
    total = ResidualStatistics(
        np.zeros(layout.size), np.zeros((layout.size,) * 2), np.zeros((layout.size,) * 2), 1
    )
    for f, (one, src) in enumerate(zip(stats, sources, strict=True)):
        total = total + one.scattered(layout.float_columns(f, src), layout.size)
    return total


def _clocks(clocks: Sequence[ClockReadings] | None, layout: JointLayout) -> Sequence[ClockReadings]:
    """Each float's measured clock offsets (none for every float when ``clocks`` is None)."""
    if clocks is None:
        return [ClockReadings.none()] * layout.n_floats
    if len(clocks) != layout.n_floats:
        raise ValueError(f"expected clock readings of {layout.n_floats} floats, got {len(clocks)}")
    return clocks


def joint_prior(
    layout: JointLayout, nominal_speed: float, clocks: Sequence[ClockReadings] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The priors' centres and standard deviations over ``theta`` (:func:`joint_m_step`); a
    float clock entry its readings measure has none (width inf)."""
    s = layout.n_sources
    u_file = 1000.0 / nominal_speed
    clock_width = np.tile([CLOCK_OFFSET_PRIOR_STD, DRIFT_PRIOR_STD], layout.n_floats)
    measured = np.array([c.measures for c in _clocks(clocks, layout)], dtype=bool).ravel()
    clock_width[measured] = math.inf
    width = np.r_[
        u_file**2 * SPEED_PRIOR_STD / 1000.0,
        np.full(s, OFFSET_PRIOR_STD),
        np.full(s, SOURCE_DRIFT_PRIOR_STD),
        clock_width,
    ]
    centre = np.zeros(layout.size)
    centre[0] = u_file
    return centre, width


def joint_log_prior(
    theta: JointParameters,
    nominal_speed: float,
    clocks: Sequence[ClockReadings] | None = None,
) -> float:
    """``log p(theta)`` (up to a constant) of the priors of :func:`joint_m_step` over what
    ``theta`` estimated (finite standard errors), plus the log-likelihood of the floats'
    measured ``clocks`` at their clocks (data, estimated or not)."""
    layout = JointLayout(theta.offset_correction.size, theta.clock_offset.size)
    values, std = theta.vector()
    centre, width = joint_prior(layout, nominal_speed, clocks)
    z = ((values - centre) / width)[np.isfinite(std)]
    readings = sum(
        c.log_likelihood(float(c0), float(c1))
        for c, c0, c1 in zip(
            _clocks(clocks, layout), theta.clock_offset, theta.clock_drift, strict=True
        )
    )
    return float(-0.5 * np.sum(z * z) + readings)


def with_clock_readings(
    pooled: ResidualStatistics,
    theta: np.ndarray,
    layout: JointLayout,
    clocks: Sequence[ClockReadings] | None,
) -> ResidualStatistics:
    """``pooled`` (:func:`pool`) with the floats' measured clock offsets added as data at
    ``theta`` (:func:`~rankmodels.tracking.calibration.clock_statistics` on each float's
    clock columns)."""
    for f, readings in enumerate(_clocks(clocks, layout)):
        if len(readings):
            pooled = pooled + clock_statistics(
                readings, theta, layout.clock(f), pooled.trajectories
            )
    return pooled


def joint_m_step(
    pooled: ResidualStatistics,
    current: JointParameters,
    layout: JointLayout,
    nominal_speed: float,
    estimate: frozenset[str] = frozenset({"speed", "offsets", "drift"}),
    clocks: Sequence[ClockReadings] | None = None,
) -> JointParameters:
    """The penalised Newton step on ``pooled`` (:func:`pool`) from ``current``: ``estimate``
    names the groups (``speed``; ``offsets``: the sources' offset and clock-drift
    corrections; ``drift``: the floats' clock offsets and drifts), the rest are held at
    ``current``. Priors: the speed about ``nominal_speed``
    (:data:`~rankmodels.tracking.calibration.SPEED_PRIOR_STD`), the offset corrections
    (:data:`~rankmodels.tracking.calibration.OFFSET_PRIOR_STD`), the drift corrections
    (:data:`SOURCE_DRIFT_PRIOR_STD`) and the clocks
    (:data:`~rankmodels.tracking.calibration.CLOCK_OFFSET_PRIOR_STD`,
    :data:`~rankmodels.tracking.calibration.DRIFT_PRIOR_STD`) about 0; a float's measured
    ``clocks`` (:class:`~rankmodels.tracking.clock_readings.ClockReadings`) are data added to
    ``pooled`` that replace the priors of what they measure. An entry the pooled
    data do not determine is held (its standard error NaN unless ``current`` had one), the
    source drifts before the rest.

    With one trajectory per float (positions known) the result is the closed-form weighted
    least squares with these priors, ``(A^T W A + P)^-1 (A^T W y + P mu)`` over the stacked
    design of every float. Raises ValueError when the normal equations cannot be solved."""
    theta, std = current.vector()
    s = layout.n_sources
    prior_mean, prior_std = joint_prior(layout, nominal_speed, clocks)
    pooled = with_clock_readings(pooled, theta, layout, clocks)
    held_var = np.nan_to_num(std**2, nan=0.0)
    held_var[1 : 1 + 2 * s] = prior_std[1 : 1 + 2 * s] ** 2  # held source corrections
    mask = np.zeros(layout.size, dtype=bool)
    mask[0] = "speed" in estimate
    mask[1 : 1 + 2 * s] = "offsets" in estimate
    mask[1 + 2 * s :] = "drift" in estimate
    # undetermined source drifts are held first: over a short record a drift since the
    # deployment is a constant delay, which the offset correction takes when the drift is held
    hold_first = np.zeros(layout.size, dtype=int)
    hold_first[1 + s : 1 + 2 * s] = 1
    values, cov, estimated = solve_newton(
        theta, mask, pooled, 1.0 / prior_std**2, prior_mean, held_var, hold_first,
        MIN_POOLED_SHARE, MIN_POOLED_DATA_TO_PRIOR,
    )  # fmt: skip
    std = std.copy()
    std[estimated] = np.sqrt(np.diag(cov))
    return JointParameters.from_vector(layout, values, std)


def replicated_score(
    first: Sequence[ResidualStatistics],
    second: Sequence[ResidualStatistics],
    sources: Sequence[np.ndarray],
    current: JointParameters,
    nominal_speed: float,
    clocks: Sequence[ClockReadings] | None = None,
) -> tuple[ResidualStatistics, np.ndarray, np.ndarray]:
    """The experiment's score at ``current`` from two E-step passes that differ only by their
    random numbers: float ``f``'s statistics ``first[f]`` and ``second[f]``
    (:func:`float_design`, its local sources the global ``sources[f]``).

    Returns the pooled statistics averaged over the two passes (:func:`pool`), the gradient
    ``(p,)`` of the penalised log-likelihood from them with the measured ``clocks`` added
    (Fisher's identity: the averaged score less the priors' gradient; zero for the entries
    ``current`` did not estimate), and the covariance
    ``(p, p)`` of *one* pass's pooled score: the floats' particles are independent, so the
    score's Monte Carlo error is the sum of the floats' and each float's difference between
    the passes ``d_f = S_f^(1) - S_f^(2)`` (scattered into ``theta``) has covariance twice
    its own, ``Cov(e) ~ (1/2) sum_f d_f d_f^T`` (the priors and the clock readings, the same
    in both passes, cancel from ``d_f``). Raises ValueError when the lists differ in length.
    """
    if not len(first) == len(second) == len(sources):
        raise ValueError(
            f"expected the statistics of both passes and the sources of every float, got "
            f"{len(first)}, {len(second)} and {len(sources)}"
        )
    theta, std = current.vector()
    layout = current.layout
    noise = np.zeros((layout.size, layout.size))
    for f, (one, two, src) in enumerate(zip(first, second, sources, strict=True)):
        d = np.zeros(layout.size)
        d[layout.float_columns(f, src)] = one.score - two.score
        noise += 0.5 * np.outer(d, d)
    mean = [ResidualStatistics.mean(pair) for pair in zip(first, second, strict=True)]
    pooled = pool(mean, sources, layout)
    score = with_clock_readings(pooled, theta, layout, clocks).score
    centre, width = joint_prior(layout, nominal_speed, clocks)
    gradient = np.where(np.isfinite(std), score - (theta - centre) / width**2, 0.0)
    return pooled, gradient, noise


def monte_carlo_covariance(
    pooled: ResidualStatistics,
    noise: np.ndarray,
    current: JointParameters,
    nominal_speed: float,
    clocks: Sequence[ClockReadings] | None = None,
) -> np.ndarray:
    """Monte Carlo covariance ``(p, p)`` of an end point ``current`` that sets to zero a
    pooled score whose Monte Carlo error has covariance ``noise`` (:func:`replicated_score`;
    half of it for the average of two passes): an error ``e`` in the score moves the root by
    ``H^-1 e``, ``H`` the penalised observed information of ``pooled`` (:func:`pool`, the
    measured ``clocks`` added) that the M-step inverts
    (:func:`~rankmodels.tracking.calibration.penalised_information` over the entries
    ``current`` estimated, with the pooled floor :data:`MIN_POOLED_SHARE`), so the
    covariance is ``H^-1 noise H^-1`` (zero for the entries not estimated)."""
    theta, std = current.vector()
    layout = current.layout
    estimated = np.isfinite(std)
    cov = np.zeros((layout.size, layout.size))
    if not estimated.any():
        return cov
    pooled = with_clock_readings(pooled, theta, layout, clocks)
    _, width = joint_prior(layout, nominal_speed, clocks)
    information = penalised_information(pooled, estimated, 1.0 / width**2, MIN_POOLED_SHARE)
    inverse = np.linalg.inv(information)
    index = np.ix_(estimated, estimated)
    cov[index] = inverse @ noise[index] @ inverse
    return cov
