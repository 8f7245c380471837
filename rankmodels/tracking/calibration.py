"""Calibration of the float clock, the sound speed and the source offsets.

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

The E-step (:func:`m_step_pairs`) turns what the smoother gives -- M smoothed trajectories
``X^m``, the distances along them and the association each implies, ``P(R_tj = i | X^m,
data)`` -- into the pairs the M-step weighs: the expected complete-data log-likelihood
``(1/M) sum_m sum_tji P(R_tj = i | X^m) (T_tj - d_ti(X^m) u - o_i - c_0 - c_1 t -
delta_i)^2`` under the joint posterior of positions and labels (the marginal association
alone would pair each trajectory with arrivals it does not explain). :func:`m_step` then
takes a Newton step with Louis' observed information rather than the plain EM step, which
the positions slow down.
:class:`CalibrationResult` holds the EM iterations
(:func:`rankmodels.tracking.float_calibration.calibrate` runs the loop).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rankmodels.tracking.arrival_density import direct_path_share
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.model_fit import STATISTICAL_PARAMS, StatisticalModel, pair_members
from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "CALIBRATION_PARAMS",
    "ResidualStatistics",
    "CLOCK_OFFSET_PRIOR_STD",
    "DRIFT_PRIOR_STD",
    "GEOMETRY_PARAMS",
    "SPEED_PRIOR_STD",
    "MIN_PAIR_WEIGHT",
    "OFFSET_PRIOR_STD",
    "Calibration",
    "CalibrationResult",
    "calibration_stages",
    "m_step",
    "m_step_pairs",
    "clock_statistics",
    "geometry_log_prior",
    "parse_calibrate_params",
    "penalised_information",
    "residual_statistics",
    "solve_newton",
]

#: The geometry ``--calibrate-params`` may name: ``drift`` (clock offset and drift),
#: ``speed`` (the effective sound speed), ``offsets`` (per-source offset corrections).
GEOMETRY_PARAMS = ("drift", "speed", "offsets")
#: Everything ``--calibrate-params`` may name: the geometry, then the statistical model
#: (:data:`~rankmodels.tracking.model_fit.STATISTICAL_PARAMS`).
CALIBRATION_PARAMS = GEOMETRY_PARAMS + tuple(STATISTICAL_PARAMS)
#: ``tau`` (s): prior std of each source-offset correction. Source clocks are set and checked
#: at deployment and recovery; written offsets are trusted to a couple of seconds.
OFFSET_PRIOR_STD = 2.0
#: Priors of the float clock and the sound speed, centred on the file's values (none of the
#: clock error, the file's speed): the clock is set and read at launch (the 140 DIMES floats'
#: launch offsets lie within -2..3 s, standard deviation 0.64 s: ``CLOCK_OFFSET_PRIOR_STD``
#: s), float clocks drift by seconds a year (the same floats: median -3 s over two years,
#: a few by a minute; ``DRIFT_PRIOR_STD`` s/day is 18 s a year), and the effective sound
#: speed of the Southern Ocean's sound channel lies within about 1470-1500 m/s
#: (``SPEED_PRIOR_STD`` m/s).
CLOCK_OFFSET_PRIOR_STD = 1.0
DRIFT_PRIOR_STD = 0.05
SPEED_PRIOR_STD = 10.0
#: Information the record must carry about a parameter, relative to its prior's, for the
#: parameter to be estimated (as :data:`rankmodels.tracking.model_fit.MIN_DATA_TO_PRIOR`):
#: below it the posterior variance exceeds half the prior's and the parameter is held.
MIN_DATA_TO_PRIOR = 1.0
#: Association probability below which an (arrival, source) pair is left out of the M-step.
MIN_PAIR_WEIGHT = 1e-3


def parse_calibrate_params(text: str | Iterable[str]) -> frozenset[str]:
    """The set named by e.g. ``"drift,speed,offsets,sigma"`` (any non-empty subset of
    :data:`CALIBRATION_PARAMS`, any order).

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

    @classmethod
    def nominal(
        cls, n_sources: int, sound_speed: float, clock: ClockReadings | None = None
    ) -> Calibration:
        """The file's values: ``sound_speed``, the file's clock (the line through the measured
        ``clock`` offsets, :meth:`ClockReadings.file_clock`; no clock error without them), no
        corrections (std NaN)."""
        nan = math.nan
        c0, c1 = (clock or ClockReadings.none()).file_clock()
        return cls(
            sound_speed=float(sound_speed),
            clock_offset=c0,
            clock_drift=c1,
            source_offset_correction=np.zeros(n_sources),
            sound_speed_std=nan,
            clock_offset_std=nan,
            clock_drift_std=nan,
            source_offset_correction_std=np.full(n_sources, nan),
        )

    def without(
        self, group: str, nominal_speed: float, clock: ClockReadings | None = None
    ) -> Calibration:
        """These parameters with the geometry ``group`` (``"speed"``, ``"drift"``: clock
        offset and drift, ``"offsets"``) back at the file's values (the clock's from the
        measured ``clock`` offsets, as :meth:`nominal`), standard errors NaN."""
        nan = math.nan
        if group == "speed":
            return replace(self, sound_speed=float(nominal_speed), sound_speed_std=nan)
        if group == "drift":
            c0, c1 = (clock or ClockReadings.none()).file_clock()
            return replace(
                self, clock_offset=c0, clock_drift=c1, clock_offset_std=nan, clock_drift_std=nan
            )
        if group == "offsets":
            n = self.source_offset_correction.size
            return replace(
                self,
                source_offset_correction=np.zeros(n),
                source_offset_correction_std=np.full(n, nan),
            )
        raise ValueError(f"group must be one of {', '.join(GEOMETRY_PARAMS)}, got {group!r}")

    def estimates(self, group: str) -> bool:
        """Whether ``group`` (as in :meth:`without`) holds an estimate (a finite standard
        error)."""
        stds = {
            "speed": [self.sound_speed_std],
            "drift": [self.clock_offset_std, self.clock_drift_std],
            "offsets": self.source_offset_correction_std,
        }[group]
        return bool(np.isfinite(stds).any())

    def largest_z(
        self, group: str, nominal_speed: float, clock: ClockReadings | None = None
    ) -> float:
        """The largest ``|estimate - file value| / standard error`` among the estimated
        parameters of ``group`` (as in :meth:`without`; file values: ``nominal_speed``, the
        file's clock from the measured ``clock`` offsets, no corrections); 0 when the group
        holds no estimate."""
        c0, c1 = (clock or ClockReadings.none()).file_clock()
        values, stds = {
            "speed": ([self.sound_speed - nominal_speed], [self.sound_speed_std]),
            "drift": ([self.clock_offset - c0, self.clock_drift - c1],
                      [self.clock_offset_std, self.clock_drift_std]),
            "offsets": (self.source_offset_correction, self.source_offset_correction_std),
        }[group]  # fmt: skip
        values, stds = np.asarray(values, dtype=float), np.asarray(stds, dtype=float)
        known = np.isfinite(stds) & (stds > 0)
        return float(np.max(np.abs(values[known]) / stds[known], initial=0.0))

    def predicted_shift(self, day: np.ndarray, source: np.ndarray) -> np.ndarray:
        """``c_0 + c_1 t + delta_i`` (s) for cycles ``day`` and sources ``source`` (broadcast)."""
        return (
            self.clock_offset
            + self.clock_drift * np.asarray(day)
            + self.source_offset_correction[np.asarray(source)]
        )


#: Smallest share of the complete-data information an observed-information step keeps in any
#: direction (:func:`m_step`): the step is at most ``1 / MIN_OBSERVED_SHARE`` times the EM step.
MIN_OBSERVED_SHARE = 0.3


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
    start: Calibration | None = None,
    speed_prior_std: float = math.inf,
    clock_prior_std: float = math.inf,
    drift_prior_std: float = math.inf,
    clock_readings: ClockReadings | None = None,
) -> Calibration:
    """Weighted least squares for ``theta`` given K (arrival, source) pairs, with the float's
    positions known (``distance_km`` (K,)) or drawn from their posterior (``distance_km``
    (M, K): M trajectories of the smoother).

    Parameters
    ----------
    distance_km: (K,) or (M, K): the float-to-source distance (km) of each pair, for one
        track or for each of M posterior trajectories.
    day, source, residual_toa, weight: (K,) each: days since launch, the source index, the
        recorded TOA minus the file's written source offset at that time (s), and the
        pair's weight in ``[0, 1]`` (its association probability; a weight of 0 drops the
        pair), or per trajectory ``(M, K)`` (the association given each trajectory).
    n_sources: ``s``.
    sound_speed: the file's (nominal) sound speed: ``start``'s without a ``start``.
    sigma: TOA noise std (s): the likelihood ``sum_k w_k (y_k - a_k theta)^2 / (2 sigma^2)``.
    offset_prior_std: ``tau`` (s) of the prior ``delta_i ~ N(0, tau^2)``.
    params: which of :data:`CALIBRATION_PARAMS` to estimate; the rest are held at
        ``start``'s values, standard errors included.
    start: the current parameters ``theta_0`` (default: the file's -- ``v`` nominal,
        ``c_0 = c_1 = 0``, ``delta = 0``, no standard errors), where the step starts.
    speed_prior_std, clock_prior_std, drift_prior_std: priors ``v ~ N(v_file, .^2)`` (m/s;
        on the slowness by the delta method), ``c_0 ~ N(0, .^2)`` (s), ``c_1 ~ N(0, .^2)``
        (s/day); ``inf`` (the default) for none.
    clock_readings: the float clock offsets measured at launch and recovery
        (:class:`~rankmodels.tracking.clock_readings.ClockReadings`): data on ``c_0, c_1``
        whose score and information add to the arrivals' and which replace the priors of what
        they measure (``c_0`` with a launch reading, ``c_1`` with both).

    The step, which entries the record determines, and the standard errors (positions'
    and held parameters' uncertainty included): :func:`solve_newton`.

    Raises ValueError for mismatched shapes, weights outside ``[0, 1]``, a source index out
    of range, or normal equations that cannot be solved (too few weighted pairs, or the
    clock offset without an offset prior).
    """
    dist, t, src, y, w = _checked_pairs(distance_km, day, source, residual_toa, weight, n_sources)
    params = parse_calibrate_params(params)
    theta0 = start or Calibration.nominal(n_sources, sound_speed)
    theta, held_var = _vector(theta0, offset_prior_std)
    fixed = _fixed_columns(t, src, n_sources)
    u_file = 1000.0 / sound_speed
    prior_mean = np.r_[u_file, np.zeros(theta.size - 1)]
    prior_std = np.r_[
        u_file**2 * speed_prior_std / 1000.0,
        clock_prior_std,
        drift_prior_std,
        np.full(n_sources, offset_prior_std),
    ]
    resid = y - dist * theta[0] - fixed @ theta[1:]  # (M, K) at theta_0
    stats = residual_statistics(dist, fixed, resid, w, sigma)
    if clock_readings is not None and len(clock_readings):
        stats = stats + clock_statistics(clock_readings, theta, np.r_[1, 2], stats.trajectories)
        prior_std[1:3][list(clock_readings.measures)] = math.inf
    prior = 1.0 / prior_std**2
    values, cov, estimated = solve_newton(
        theta, _parameter_mask(params, n_sources), stats, prior, prior_mean, held_var
    )
    if not estimated.any():
        return replace(theta0)
    stds = _vector_std(theta0)
    stds[estimated] = np.sqrt(np.diag(cov))
    return _calibration(values, stds)


def _fixed_columns(day: np.ndarray, source: np.ndarray, n_sources: int) -> np.ndarray:
    """``(K, 2 + s)`` the design's columns that do not depend on the position: ``c_0``
    (1), ``c_1`` (the day) and the pair's source's ``delta_i`` (1)."""
    fixed = np.zeros((day.size, 2 + n_sources))
    fixed[:, 0] = 1.0
    fixed[:, 1] = day
    fixed[np.arange(day.size), 2 + source] = 1.0
    return fixed


def _checked_pairs(
    distance_km: np.ndarray,
    day: np.ndarray,
    source: np.ndarray,
    residual_toa: np.ndarray,
    weight: np.ndarray,
    n_sources: int,
) -> tuple[np.ndarray, ...]:
    """:func:`m_step`'s pairs as arrays, ``distance_km`` as ``(M, K)``; ValueError for
    mismatched shapes, weights outside ``[0, 1]``, a source out of range or non-finite
    values."""
    arrays = [np.asarray(a, dtype=float) for a in (day, residual_toa, weight)]
    t, y, w = arrays
    dist = np.asarray(distance_km, dtype=float)
    dist = dist[None, :] if dist.ndim == 1 else dist
    src = np.asarray(source)
    if dist.ndim != 2 or any(a.shape != dist.shape[1:] for a in (t, y, src)):
        raise ValueError("distance_km, day, source, residual_toa and weight must be (K,) alike")
    if w.shape not in (dist.shape[1:], dist.shape):
        raise ValueError("weight must be (K,) or, per trajectory, (M, K) like distance_km")
    if not np.all((w >= 0) & (w <= 1)):
        raise ValueError("weight must lie in [0, 1]")
    if src.size and (src.min() < 0 or src.max() >= n_sources):
        raise ValueError(f"source must index 0 .. {n_sources - 1}")
    if not all(np.isfinite(a).all() for a in (dist, *arrays)):
        raise ValueError("distance_km, day, residual_toa and weight must be finite")
    return dist, t, src, y, w


def _calibration(values: np.ndarray, stds: np.ndarray) -> Calibration:
    """The :class:`Calibration` of ``theta = (u, c_0, c_1, delta)`` and its standard errors
    (the sound speed's by the delta method, ``std_v = 1000 std_u / u^2``)."""
    u = values[0]
    return Calibration(
        sound_speed=1000.0 / u,
        clock_offset=values[1],
        clock_drift=values[2],
        source_offset_correction=values[3:],
        sound_speed_std=1000.0 * stds[0] / u**2,
        clock_offset_std=stds[1],
        clock_drift_std=stds[2],
        source_offset_correction_std=stds[3:],
    )


@dataclass(frozen=True)
class ResidualStatistics:
    """Sufficient statistics of one record's weighted arrival residuals for the geometry's
    Newton step, over the columns of a design ``A_m`` (trajectory ``m``):

    ``score (p,)`` the mean over the ``M`` trajectories of the complete-data score
    ``S_m = A_m^T W r_m`` (``r_m`` the residuals at the current parameters, ``W`` the
    weights over ``sigma^2``), ``score_cov (p, p)`` their covariance over the trajectories
    (Louis' missing information from the positions; zeros for one trajectory),
    ``information (p, p)`` the mean complete-data information ``A_m^T W A_m``,
    ``trajectories`` ``M``, and ``label_cov (p, p)`` the missing information from the pairs'
    latent labels (association and direct path; :func:`residual_statistics`; zeros when not
    given). The M-step's Newton step uses the first part, its stated covariance both
    (:func:`solve_newton`).

    Records that are independent given the parameters add: the pooled log-likelihood's
    score, information and missing information are the sums of the records', each scattered
    to the pooled parameters its columns stand for (:meth:`scattered`).
    """

    score: np.ndarray
    score_cov: np.ndarray
    information: np.ndarray
    trajectories: int
    label_cov: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.label_cov is None:
            object.__setattr__(self, "label_cov", np.zeros_like(self.score_cov))

    def scattered(self, index: np.ndarray, size: int) -> ResidualStatistics:
        """These statistics with column ``j`` moved to ``index[j]`` of ``size`` columns (the
        others zero)."""
        idx = np.asarray(index)
        score = np.zeros(size)
        cov, info, labels = (np.zeros((size, size)) for _ in range(3))
        score[idx] = self.score
        cov[np.ix_(idx, idx)] = self.score_cov
        info[np.ix_(idx, idx)] = self.information
        labels[np.ix_(idx, idx)] = self.label_cov
        return ResidualStatistics(score, cov, info, self.trajectories, labels)

    def __add__(self, other: ResidualStatistics) -> ResidualStatistics:
        return ResidualStatistics(
            self.score + other.score,
            self.score_cov + other.score_cov,
            self.information + other.information,
            max(self.trajectories, other.trajectories),
            self.label_cov + other.label_cov,
        )

    @staticmethod
    def mean(replicates: Sequence[ResidualStatistics]) -> ResidualStatistics:
        """The average of the statistics of one record over ``replicates`` (E-step passes
        at the same parameters that differ only by their random numbers)."""
        total = replicates[0]
        for other in replicates[1:]:
            total = total + other
        n = len(replicates)
        return ResidualStatistics(
            total.score / n,
            total.score_cov / n,
            total.information / n,
            total.trajectories,
            total.label_cov / n,
        )


def clock_statistics(
    readings: ClockReadings, theta: np.ndarray, columns: np.ndarray, trajectories: int = 1
) -> ResidualStatistics:
    """The measured clock offsets' :class:`ResidualStatistics` over ``theta`` (``(p,)``, the
    float's clock offset and drift at ``columns`` (2,)): score and information in those two
    columns, zero elsewhere, no missing information (the readings do not depend on the
    positions). They add to the arrivals' statistics of the same ``theta``."""
    c0, c1 = theta[np.asarray(columns)]
    one = ResidualStatistics(
        readings.score(c0, c1), np.zeros((2, 2)), readings.information(), trajectories
    )
    return one.scattered(np.asarray(columns), theta.size)


def residual_statistics(
    dist: np.ndarray, fixed: np.ndarray, resid: np.ndarray, weight: np.ndarray, sigma: float
) -> ResidualStatistics:
    """:class:`ResidualStatistics` of the design ``A_m = [d_m, fixed]``: ``dist (M, K)`` the
    distance column along each trajectory, ``fixed (K, q)`` the columns that do not depend on
    the position, ``resid (M, K)`` the residuals at the current parameters, ``weight (K,)``
    (or per trajectory ``(M, K)``) each pair's probability in ``[0, 1]`` of being a direct
    arrival from its source (given the trajectory), ``sigma`` the TOA noise (s).

    The complete data are the trajectory and each pair's label ``z_k`` (direct arrival from
    the source or not), so the missing information (Louis) is the variance of the
    complete-data score ``sum_k z_k g_mk``, ``g_mk = a_mk r_mk / sigma^2``, over both: the
    spread over the trajectories of the labels' expected score ``S_m = sum_k w_mk g_mk``
    (``score_cov``) plus the labels' own variance given the trajectory, ``mean_m sum_k w_mk
    (1 - w_mk) g_mk g_mk^T`` (``label_cov``; labels taken as independent: the negative
    covariance of two labels that exclude each other, the same arrival's sources or one
    source's arrivals in a cycle, is left out). With one trajectory (positions known) the
    weights are taken as given and nothing is missing."""
    w = weight / sigma**2
    wr = resid * w
    scores = np.column_stack([(wr * dist).sum(axis=1), wr @ fixed])  # (M, 1 + q)
    n = scores.shape[0]
    spread, labels = np.zeros((2, scores.shape[1], scores.shape[1]))
    if n > 1:
        spread = np.cov(scores, rowvar=False).reshape(spread.shape)
        labels = _complete_information(
            dist, fixed, weight * (1.0 - weight) * (resid / sigma**2) ** 2
        )
    return ResidualStatistics(
        score=scores.mean(axis=0),
        score_cov=spread,
        information=_complete_information(dist, fixed, w),
        trajectories=n,
        label_cov=labels,
    )


def solve_newton(
    theta: np.ndarray,
    estimated: np.ndarray,
    stats: ResidualStatistics,
    prior: np.ndarray,
    prior_mean: np.ndarray,
    held_var: np.ndarray,
    hold_first: np.ndarray | None = None,
    min_observed_share: float = MIN_OBSERVED_SHARE,
    min_data_to_prior: float = MIN_DATA_TO_PRIOR,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The geometry's M-step from ``stats`` at ``theta``: the Newton step of :func:`m_step`
    for the ``estimated`` entries (a boolean mask), each entry with a finite prior dropped
    (held) while its posterior variance exceeds ``1 / (1 + min_data_to_prior)`` of the
    prior's. ``prior`` the prior precisions (0: none), ``prior_mean`` their centres,
    ``held_var`` each entry's variance when held (the consider covariance); ``hold_first``
    (integer per entry, default all equal): of the undetermined entries only those of the
    highest rank are held before solving again (an entry confounded with another may be
    determined once the other is held); ``min_observed_share`` the floor of Louis' observed
    information as a share of the complete-data information in any direction
    (:func:`_observed_information`). Whether an entry is determined is judged on the step's
    information (:func:`_newton_step`). Returns the new ``theta``, the stated covariance of
    the entries still estimated and that mask (all False: nothing determined, ``theta``
    unchanged).

    With one track the log posterior is quadratic in ``theta`` and the result is its mode,
    ``(A^T W A / sigma^2 + P)^-1 A^T W y / sigma^2`` (``P`` the prior precision). With M
    trajectories (Monte Carlo EM) it is the Newton step ``theta_0 + I_obs^-1 g`` on the
    observed-data log posterior, with Louis' identity: ``g`` the mean over trajectories of
    the complete-data score ``S_m = A_m^T W (y - A_m theta_0) / sigma^2 - P theta_0``, and
    ``I_obs = I_c - Cov_m(S_m)`` (``I_c`` the mean complete-data information
    ``A_m^T W A_m / sigma^2 + P``). The plain EM step ``theta_0 + I_c^-1 g`` is slow here
    because the positions absorb part of every error (the fraction of missing information
    is large); the Newton step removes that, its share of ``I_c`` in any direction floored
    at :data:`MIN_OBSERVED_SHARE`. Standard errors come from the inverse of ``I_obs`` (the
    sound speed's by the delta method, ``std_v = 1000 std_u / u^2``), so they include the
    uncertainty of the positions, plus what the held parameters' own uncertainty adds (the
    *consider covariance* of orbit determination, [Tapley2004] ch. 6): with
    ``S = I_ee^-1 I_eh`` the complete-data sensitivity of the estimated ``theta_e`` to the
    held ``phi``, ``Cov(theta_e) += S C_phi S^T``, where ``C_phi`` is ``tau^2`` for held
    offset corrections (the prior says written offsets are off by that much) and ``start``'s
    squared standard errors for the rest (zero without: then taken as exact). Without this,
    a speed fitted with the written offsets held would claim a precision the unknown offset
    errors do not allow.

    Raises ValueError when the normal equations cannot be solved."""
    estimated = np.asarray(estimated, dtype=bool).copy()
    rank = np.zeros(theta.size, dtype=int) if hold_first is None else np.asarray(hold_first)
    values, cov = theta.copy(), np.zeros((0, 0))
    while estimated.any():
        values, step_cov, cov = _newton_step(
            theta, estimated, stats, prior, prior_mean, held_var, min_observed_share
        )
        undetermined = np.diag(step_cov) * prior[estimated] * (1.0 + min_data_to_prior) > 1.0
        if not undetermined.any():
            break
        index = np.flatnonzero(estimated)[undetermined]
        estimated[index[rank[index] == rank[index].max()]] = False
    if not estimated.any():
        return theta.copy(), np.zeros((0, 0)), estimated
    return values, cov, estimated


def _newton_step(
    theta: np.ndarray,
    estimated: np.ndarray,
    stats: ResidualStatistics,
    prior: np.ndarray,
    prior_mean: np.ndarray,
    held_var: np.ndarray,
    min_observed_share: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`solve_newton`'s step for the ``estimated`` entries of ``theta`` (the rest
    held): the new values, the inverse of the matrix the step used and the estimated
    entries' stated covariance (both with the consider covariance). With ``stats`` from
    several trajectories the step uses Louis' observed information with the positions'
    missing information, the stated covariance also the pair labels'
    (:class:`ResidualStatistics`): taking the step with the smaller information would move
    the EM further in the weakly determined directions, where its path was tuned."""
    full = stats.information
    info = full[np.ix_(estimated, estimated)] + np.diag(prior[estimated])
    scale = np.sqrt(np.diag(info))  # condition judged in correlation form (units aside)
    if not np.all(scale > 0) or np.linalg.cond(info / np.outer(scale, scale)) > 1e12:
        raise ValueError(
            "calibration is not identifiable from these arrivals (too few, too alike in "
            "distance and time, or the clock offset without a prior on the source offsets)"
        )
    grad = stats.score[estimated] - prior[estimated] * (theta - prior_mean)[estimated]
    # what the held parameters' own uncertainty adds (consider covariance): theta_e moves by
    # S (phi - phi_0) when the held phi are off, S = I_ee^-1 I_eh (complete data)
    held = ~estimated & (held_var > 0)
    sensitivity = np.linalg.solve(info, full[np.ix_(estimated, held)])
    consider = (sensitivity * held_var[held]) @ sensitivity.T
    step_info = _with_missing_information(info, stats, estimated, min_observed_share)
    step_cov = np.linalg.inv(step_info) + consider
    stated_cov = step_cov
    if stats.label_cov[np.ix_(estimated, estimated)].any():
        stated = _with_missing_information(info, stats, estimated, min_observed_share, True)
        stated_cov = np.linalg.inv(stated) + consider
    values = theta.copy()
    values[estimated] += np.linalg.solve(step_info, grad)
    return values, step_cov, stated_cov


def calibration_stages(params: frozenset[str]) -> tuple[frozenset[str], ...]:
    """The EM's stages for ``params``: the speed before the offsets when both are asked for.

    Along a long record a change of sound speed moves source ``i``'s arrivals by about
    ``d_i du``, which its offset correction absorbs up to the spread of ``d_i``, and the track
    absorbs the rest by moving a few km: estimated together, speed and offsets lie on a
    ridge of the likelihood a few nats high over 15 m/s, where whatever the model gets
    slightly wrong (multipath delays, detection, dynamics) decides where the fit ends
    (``docs/tracking.md``, "Identifiability"). So the speed (with the drift) is fitted first
    with the written offsets held -- their prior uncertainty goes into the speed's standard
    error -- and then the offsets (with the drift) with that speed held. Any other ``params``
    is one stage.
    """
    params = parse_calibrate_params(params)
    if {"speed", "offsets"} <= params:
        return (params - {"offsets"}, params - {"speed"})
    return (params,)


def _parameter_mask(params: frozenset[str], n_sources: int) -> np.ndarray:
    """Which entries of ``theta = (u, c_0, c_1, delta_1..delta_s)`` ``params`` estimates."""
    return np.array(
        ["speed" in params] + ["drift" in params] * 2 + ["offsets" in params] * n_sources
    )


def _vector(cal: Calibration, offset_prior_std: float) -> tuple[np.ndarray, np.ndarray]:
    """``theta`` of ``cal`` and the variance of each entry as a held (not estimated) value:
    the offsets' prior ``tau^2``, the others their standard error squared (0 where unknown:
    the file's values are then taken as exact)."""
    u = 1000.0 / cal.sound_speed
    theta = np.r_[u, cal.clock_offset, cal.clock_drift, cal.source_offset_correction]
    std = _vector_std(cal)
    var = np.nan_to_num(std**2, nan=0.0)
    var[3:] = offset_prior_std**2 if math.isfinite(offset_prior_std) else 0.0
    return theta, var


def _vector_std(cal: Calibration) -> np.ndarray:
    """Standard errors of ``theta = (u, c_0, c_1, delta)`` (the slowness's by the delta
    method, ``std_u = u^2 std_v / 1000``); NaN where not estimated."""
    u = 1000.0 / cal.sound_speed
    return np.r_[
        u**2 * cal.sound_speed_std / 1000.0,
        cal.clock_offset_std,
        cal.clock_drift_std,
        cal.source_offset_correction_std,
    ]


def _complete_information(dist: np.ndarray, fixed: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Mean over the M trajectories of ``A_m^T diag(w_m) A_m`` for the design ``A_m = [d_m,
    fixed]`` (``dist (M, K)``, ``fixed (K, q)``, ``w (K,)`` or per trajectory ``(M, K)``):
    ``(1 + q, 1 + q)``."""
    wd = dist * w
    cross = (wd @ fixed).mean(axis=0)
    w_fixed = w if w.ndim == 1 else w.mean(axis=0)
    return np.block(
        [
            [np.array([[(wd * dist).sum(axis=1).mean()]]), cross[None, :]],
            [cross[:, None], fixed.T @ (fixed * w_fixed[:, None])],
        ]
    )


def penalised_information(
    stats: ResidualStatistics,
    estimated: np.ndarray,
    prior: np.ndarray,
    min_observed_share: float = MIN_OBSERVED_SHARE,
) -> np.ndarray:
    """The information about the ``estimated`` entries (boolean mask) that the M-step
    (:func:`solve_newton`) inverts for their covariance, without the held entries' part:
    complete-data information plus the ``prior`` precisions, Louis' observed information
    (:func:`_observed_information`) when ``stats`` come from several trajectories."""
    estimated = np.asarray(estimated, dtype=bool)
    info = stats.information[np.ix_(estimated, estimated)] + np.diag(prior[estimated])
    return _with_missing_information(info, stats, estimated, min_observed_share)


def _with_missing_information(
    info: np.ndarray,
    stats: ResidualStatistics,
    estimated: np.ndarray,
    min_share: float,
    labels: bool = False,
) -> np.ndarray:
    """``info`` (complete data and priors over the ``estimated`` entries) less Louis' missing
    information of ``stats`` when they come from several trajectories: the positions' part,
    and with ``labels`` the pair labels' part too."""
    if stats.trajectories <= 1:
        return info
    missing = stats.score_cov + stats.label_cov if labels else stats.score_cov
    return _observed_information(info, missing[np.ix_(estimated, estimated)], min_share)


def _observed_information(
    complete: np.ndarray, missing: np.ndarray, min_share: float = MIN_OBSERVED_SHARE
) -> np.ndarray:
    """Louis' ``I_obs = I_c - I_miss``, its share of ``I_c`` clipped to ``[min_share, 1]``
    in every direction: with ``I_c = L L^T`` the eigenvalues of ``L^-1 I_obs L^-T`` are
    clipped (a Monte Carlo ``I_miss`` can exceed ``I_c``)."""
    chol = np.linalg.cholesky(complete)
    inv = np.linalg.inv(chol)
    share, vectors = np.linalg.eigh(inv @ (complete - missing) @ inv.T)
    share = np.clip(share, min_share, 1.0)
    return chol @ (vectors * share) @ vectors.T @ chol.T


def m_step_pairs(
    toa: np.ndarray,
    posterior: np.ndarray,
    distance_km: np.ndarray,
    day: np.ndarray,
    offset: np.ndarray,
    predicted_toa: np.ndarray | None = None,
    model: SignalModel | None = None,
    members: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The E-step: :func:`m_step`'s (arrival, source) pairs from the smoother's output.

    ``toa (T, r)`` recorded TOAs (NaN: none), ``posterior (T, r, s + 1)`` association
    posteriors (sources then clutter; NaN rows where nothing was recorded),
    ``distance_km (M, T, s)`` the distance to each source along each of M posterior
    trajectories (NaN where inactive), ``day (T,)`` days since launch, ``offset`` the file's
    written source offsets, ``(s,)`` or ``(T, s)`` at each cycle (with the sources' clock
    drift, :func:`~rankmodels.tracking.records.written_offsets`). Returns ``distance_km``
    (M, K) and ``day``, ``source``, ``residual_toa`` (``T_tj - o_i``) and ``weight``
    (``P(R_tj = i)``, pairs below :data:`MIN_PAIR_WEIGHT` left out), each (K,).

    ``members (T, M, r, s + 1)``, the association posterior given each trajectory (whose
    mean over ``M`` is ``posterior``), makes ``weight`` ``(M, K)``: ``P(R_tj = i | X_m)``,
    so that the expected complete-data log-likelihood weighs each trajectory's residual by
    the association that trajectory implies (eq. 5.66 under the joint posterior of positions
    and labels). With the marginal weight instead, a trajectory far from where an arrival
    places the float counts that arrival as fully as one that explains it, which inflates
    the spread of the distances against the arrivals and biases the slowness low.

    With multipath in the ``model`` (``P_M > 0``) an associated arrival may be a delayed one,
    which the Gaussian M-step must not see: the weight is then ``P(R_tj = i)`` times the
    probability that the arrival came by the direct path, :func:`direct_path_share` of its
    residual against ``predicted_toa (T, s)`` (the current parameters' prediction at the
    posterior mean).
    """
    weight = np.nan_to_num(np.asarray(posterior, dtype=float)[:, :, :-1], nan=0.0)
    direct = np.ones_like(weight)
    if model is not None and model.multipath > 0:
        if predicted_toa is None:
            raise ValueError("multipath in the model needs predicted_toa")
        resid = np.asarray(toa, dtype=float)[:, :, None] - np.asarray(predicted_toa)[:, None, :]
        direct = direct_path_share(resid, model)
    dist = np.asarray(distance_km, dtype=float)
    keep = (weight * direct >= MIN_PAIR_WEIGHT) & np.isfinite(dist[0])[:, None, :]
    t, j, i = np.nonzero(keep)
    if members is None:
        pair_weight = weight[t, j, i] * direct[t, j, i]
    else:
        pair_weight = pair_members(members, t, j, i) * direct[t, j, i]
    return {
        "distance_km": dist[:, t, i],
        "day": np.asarray(day, dtype=float)[t],
        "source": i,
        "residual_toa": np.asarray(toa, dtype=float)[t, j]
        - np.broadcast_to(np.asarray(offset, dtype=float), weight.shape[::2])[t, i],
        "weight": np.clip(pair_weight, 0.0, 1.0),
    }


@dataclass(frozen=True)
class CalibrationResult:
    """The Monte Carlo EM iterations of a calibrated run.

    ``trace[k]``: the parameters of pass ``k`` (``trace[0]`` the file's), ``loglik[k]`` the
    particle estimate of ``log p(data | parameters)`` from the filter run with them at
    ``particles`` particles and the same seed (common random numbers), assuming the TOA
    noise ``sigma[k]`` (larger than the configured one in the first, annealing passes;
    their log-likelihoods are of that noisier model). ``start``: the first pass at the
    configured noise, run with the file's values; ``best``: the pass kept (largest
    ``loglik`` from ``start`` on); ``params``: what was estimated; ``stop``: why the loop
    ended (``"no longer rising"``, ``"iteration limit"`` or the M-step's reason, e.g. not
    identifiable).
    """

    params: frozenset[str]
    trace: tuple[Calibration, ...]
    loglik: tuple[float, ...]
    sigma: tuple[float, ...]
    start: int
    best: int
    stop: str
    particles: int
    models: tuple[StatisticalModel, ...] = ()

    @property
    def kept_file_values(self) -> bool:
        """Whether no estimate beat the file's values (the track is then the uncalibrated
        one)."""
        return self.best == self.start

    @property
    def calibration(self) -> Calibration:
        """The parameters kept (iteration :attr:`best`)."""
        return self.trace[self.best]

    @property
    def statistical_model(self) -> StatisticalModel | None:
        """The statistical model kept (iteration :attr:`best`; None without a record of
        them)."""
        return self.models[self.best] if self.models else None


def geometry_log_prior(
    cal: Calibration, nominal_speed: float, clock: ClockReadings | None = None
) -> float:
    """``log p(theta)`` (up to a constant) of the priors on what ``cal`` estimated (finite
    standard errors): the speed about ``nominal_speed`` (:data:`SPEED_PRIOR_STD`), the clock
    offset and drift about 0, each offset correction about 0 (:data:`OFFSET_PRIOR_STD`).
    With measured ``clock`` offsets their log-likelihood at ``cal``'s clock is added (data,
    estimated or not) and replaces the priors of what they measure (as :func:`m_step`)."""
    clock = clock or ClockReadings.none()
    measured = clock.measures
    terms = (
        (cal.sound_speed - nominal_speed, cal.sound_speed_std, SPEED_PRIOR_STD),
        (cal.clock_offset, math.nan if measured[0] else cal.clock_offset_std,
         CLOCK_OFFSET_PRIOR_STD),
        (cal.clock_drift, math.nan if measured[1] else cal.clock_drift_std, DRIFT_PRIOR_STD),
    )  # fmt: skip
    total = sum(-0.5 * (d / w) ** 2 for d, sd, w in terms if math.isfinite(sd))
    total += clock.log_likelihood(cal.clock_offset, cal.clock_drift)
    corr = cal.source_offset_correction[np.isfinite(cal.source_offset_correction_std)]
    return float(total - 0.5 * np.sum((corr / OFFSET_PRIOR_STD) ** 2))
