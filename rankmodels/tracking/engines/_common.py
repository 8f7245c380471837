"""Shared pieces of the likelihood engines: input checks, per-cycle constants, the particle
loop and its parallel dispatch, message-passing controls, numba helpers.

Every engine writes the likelihood of a cycle as (eq. 5.26 with its normalisation kept)

    P(T_1..T_m | X) = exp(log_poisson) * sum_{associations} prod_i phi_i(S_i) prod_{R_j = C} kappa_j

with the source factors (eq. 5.66) ``phi_i(M) = 1 - P_D``, ``phi_i(L) = P_D P(t_i > tau)``,
``phi_i(j) = P_D p_i(T_j)`` with ``p_i`` the direct-or-multipath arrival density of
:mod:`rankmodels.tracking.signal_model` (``N(T_j; pred_i, sigma^2)`` without multipath), and
``P(t_i > tau)`` its survival, the clutter factor ``kappa_j = lambda / W`` for
``0 <= T_j <= W`` (eq. 5.67 divided by ``1 - P_C``), the "late" threshold ``tau = T_r`` when all
``r`` arrivals were recorded and ``tau = W`` otherwise, and the particle-independent Poisson term
``log_poisson = -lambda (1 - q)``, ``q = P(clutter > tau) = 1 - tau / W`` (``q = 0`` when
``m < r``): summing eq. 5.25 over ``N`` gives ``sum_N Pois(N) N!/(N-c)! q^(N-c) = lambda^c
e^{-lambda (1 - q)}``.

The numba kernels take their inputs as flat namedtuples (numba's parallel loops refuse tuples
nested in tuples): :class:`BipartiteCycle` (the per-cycle constants of the bipartite model),
:class:`MessagePassing` (damping, tolerance, sweep limit) and :class:`EngineOutput` (the arrays
the kernels fill). :func:`over_particles` runs an engine's per-chunk kernel over the particles,
in parallel chunks when the batch's estimated serial time pays for starting the threads
(:func:`parallel_pays`), a threshold that rises while other work competes for the cores
(:func:`machine_busy`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit
from scipy.special import ndtri

from rankmodels.tracking.engines.multipath import (
    ERFCX_SERIES_FROM,
    SURVIVAL_ONE_BELOW,
    erfcx_series,
    multipath_tables,
    table_value,
)
from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "ASSOCIATION_COST",
    "BUSY_LOAD_MARGIN",
    "LOG_SQRT_2PI",
    "PARALLEL_MIN_SECONDS",
    "PARALLEL_MIN_SECONDS_BUSY",
    "PARTICLE_COST",
    "BipartiteCycle",
    "Cycle",
    "EngineOutput",
    "LikelihoodResult",
    "MessagePassing",
    "assoc_row",
    "bipartite_cycle",
    "check_predicted",
    "engine_output",
    "log_gauss_tail",
    "log_match_weight",
    "log_source_factors",
    "log_source_factors_above",
    "log_unmatched",
    "machine_busy",
    "message_passing",
    "over_particles",
    "parallel_pays",
    "particle_seconds",
    "prepare_cycle",
    "unmatched_weights",
]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
INV_SQRT2 = 1.0 / math.sqrt(2.0)
LOG_2 = math.log(2.0)
#: P(Z > z) rounds to 1 below this z (with or without multipath).
_Z_LO = SURVIVAL_ONE_BELOW
#: A batch whose estimated serial time (s) is below this runs on the calling thread: waking the
#: other threads and waiting for the slowest costs about as much (measured crossover of one
#: engine call, one thread against two, ``benchmarks/contention.py``'s notes in
#: docs/benchmarks.md).
PARALLEL_MIN_SECONDS = 250e-6
#: The same threshold while the machine is busy (:func:`machine_busy`): a parallel region
#: then waits for whichever of its threads the OS has descheduled, so a batch of a few
#: milliseconds takes longer threaded than on the calling thread alone (``exact``, 6 sources,
#: 4 arrivals, beside two busy processes on 2 cores, load 4.7, median of 80 calls: 2,000
#: particles 1.5 ms serial against 3.5 ms threaded, 4,000 3.1 against 7.9 ms; 7,000 13 against
#: 12 ms, 10,000 24 against 16 ms).
PARALLEL_MIN_SECONDS_BUSY = 5e-3
#: The machine is busy when its 1-minute load average exceeds its cores by more than this
#: (the load average counts this process's own running threads, up to one per core).
BUSY_LOAD_MARGIN = 0.5
#: Seconds a reading of the load average is reused by :func:`machine_busy`.
_LOAD_TTL = 1.0
_load_seen: list[float] = [-math.inf, 0.0]  # when read (monotonic s), busy (1.0) or not
#: Serial time per particle of each engine's kernel, ``a + b * s * m`` seconds (s sources,
#: m recorded arrivals): ``(a, b)`` fitted to one-thread timings on cycles of the sample float
#: (multipath 0.02; bp and minfactor depend on their sweeps, so theirs are typical values).
PARTICLE_COST: dict[str, tuple[float, float]] = {
    "exact": (0.55e-6, 0.022e-6),
    "bp": (1.0e-6, 0.5e-6),
    "minfactor": (5.0e-6, 2.5e-6),
}
#: Serial time of the association marginals' kernel relative to the likelihood alone, per
#: engine (``exact``'s backward pass; one-thread timings of 500 and 1,000 particles: 1.6-1.9x).
ASSOCIATION_COST: dict[str, float] = {"exact": 1.7}
#: Chunks per thread of a parallel batch (uneven particles then even out across threads).
_CHUNKS_PER_THREAD = 8


@dataclass(frozen=True)
class Cycle:
    """One listening cycle, prepared for the engines.

    Attributes
    ----------
    toa: (m,) the recorded arrival times ``T_1 <= ... <= T_m``.
    r: how many arrivals the float records at most.
    tau: "late" threshold: ``T_r`` if ``m == r`` else the window length ``W``.
    log_clutter: (m,) ``log kappa_j = log(lambda / W) + log w_j`` for ``0 <= T_j <= W``,
        ``-inf`` otherwise or when ``lambda = 0``; ``w_j`` the arrival's clutter weight (1
        unless given, :func:`prepare_cycle`).
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


def prepare_cycle(
    toa: np.ndarray,
    model: SignalModel,
    clutter_weight: np.ndarray | None = None,
    truncation: float | None = None,
) -> Cycle:
    """Validate one cycle's ``toa`` (shape ``(r,)``, trailing NaN = not recorded) and prepare it.

    ``clutter_weight`` (r,): a factor ``w_j >= 0`` on each recorded arrival's clutter weight,
    ``kappa_j = w_j lambda / W`` (the correlation heights' likelihood ratio ``f_C(c_j) /
    f_S(c_j)``, :mod:`~rankmodels.tracking.correlation`; entries past the recorded arrivals
    are ignored); None: ``w_j = 1``, the model of eq. 5.26. ``truncation``: the time after
    which the float recorded nothing (``tau``), when arrivals were removed after recording
    (``track-float --min-correlation``): at least the last recorded arrival and at most ``W``;
    None: ``T_r`` if all ``r`` ranks are filled, else ``W``.

    Raises ValueError if ``toa`` is not 1-D and non-empty, if a NaN precedes a recorded value,
    if recorded values are infinite, descending, or later than ``model.window``, if
    ``clutter_weight`` is not of shape ``(r,)`` with finite values ``>= 0`` at the recorded
    arrivals, or ``truncation`` lies outside ``[T_m, W]``.
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
    if clutter_weight is not None:
        log_clutter = _weighted(log_clutter, clutter_weight, r)
    if truncation is not None:
        tau = float(truncation)
        if not (m == 0 or tau >= recorded[-1]) or not 0.0 <= tau <= window:
            last = f"the last arrival {recorded[-1]:g} s" if m else "0"
            raise ValueError(
                f"truncation must lie between {last} and the window ({window:g} s), got {tau!r}"
            )
        q = 1.0 - tau / window
    elif m == r:
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


def _weighted(log_clutter: list[float], weight: np.ndarray, r: int) -> list[float]:
    """``log kappa_j + log w_j`` for the recorded arrivals (:func:`prepare_cycle`)."""
    weight = np.asarray(weight, dtype=np.float64)
    if weight.shape != (r,):
        raise ValueError(f"clutter_weight must have shape ({r},) like toa, got {weight.shape}")
    w = weight[: len(log_clutter)].tolist()
    if any(not (math.isfinite(v) and v >= 0.0) for v in w):
        raise ValueError("clutter_weight: expected finite values >= 0 at the recorded arrivals")
    return [lk + math.log(v) if v > 0 else -math.inf for lk, v in zip(log_clutter, w, strict=True)]


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
        return math.log(0.5 * math.erfc(z * INV_SQRT2))
    x = 1.0 / (z * z)
    series = 1.0 - x * (
        1.0 - 3.0 * x * (1.0 - 5.0 * x * (1.0 - 7.0 * x * (1.0 - 9.0 * x * (1.0 - 11.0 * x))))
    )
    return -0.5 * z * z - math.log(z) - LOG_SQRT_2PI + math.log(series)


def unmatched_weights(model: SignalModel, *, ranked: bool = True) -> tuple[float, float]:
    """``(const, tail_coef)`` with the unmatched weight ``u_i = const + tail_coef * P(t_i > tau)``.

    Ranked model (eq. 5.66): missing ``1 - P_D`` plus late ``P_D P(t_i > tau)``.
    Baseline (eq. 5.72): late and missing each ``1 - P_D``, the arrival order ignored.
    """
    pd = float(model.p_detect)
    if ranked:
        return 1.0 - pd, pd
    return 2.0 * (1.0 - pd), 0.0


class BipartiteCycle(NamedTuple):
    """Per-cycle constants of the bipartite model (engines ``exact``, ``baseline``, ``bp``).

    ``toa`` (m,), ``log_clutter`` (m,), ``tau`` and ``log_poisson`` are those of :class:`Cycle`;
    a match weighs ``log phi_i(j) = log_match0 - (T_j - pred_i)^2 inv_2var``; the unmatched
    weight ``u_i = u_const + u_tail P(Z > (tau - pred_i) inv_sigma)`` comes with the logs of
    ``u_const``, ``u_tail``, their sum and the cut-off ``z_hi`` used by :func:`log_unmatched`.

    With multipath (``multipath`` true; :mod:`.multipath` for the maths) ``log_match0`` holds
    ``log(1 - P_M)`` too and a match adds ``l(u)``, ``u = (path_a - z) / sqrt 2``, read from
    the table ``match_*`` for ``path_u_late < u < 25``, ``log1p(path_k erfcx(u))`` beyond 25,
    and is ``log_path_late - path_a z`` for ``u <= path_u_late``; ``log1p_k = log(1 + K)``
    bounds ``l`` for ``z <= a`` (:func:`log_match_weight`). The unmatched weight ``log u(w)`` is
    read from the table ``core_*`` for ``-8.5 < w < core_end``, then ``tail_*`` (``u_const >
    0``) or ``log_late_linear - path_a w`` (``u_const = 0``). Without multipath these are
    unused (tables of one row of zeros).
    """

    toa: np.ndarray
    log_clutter: np.ndarray
    tau: float
    log_poisson: float
    log_match0: float
    inv_2var: float
    inv_sigma: float
    u_const: float
    u_tail: float
    log_u_const: float
    log_u_tail: float
    log_u_total: float
    z_hi: float
    multipath: bool
    path_a: float
    path_k: float
    log1p_k: float
    path_u_late: float
    log_path_late: float
    match_x0: float
    match_inv_h: float
    match_coef: np.ndarray
    core_end: float
    core_x0: float
    core_inv_h: float
    core_coef: np.ndarray
    tail_x0: float
    tail_inv_h: float
    tail_coef: np.ndarray
    log_late_linear: float


#: Stand-in for a table a model does not need.
_NO_TABLE = (0.0, 0.0, np.zeros((1, 8)))


def _table_fields(table) -> tuple[float, float, np.ndarray]:
    return _NO_TABLE if table is None else (table.x0, table.inv_h, table.coef)


def bipartite_cycle(cycle: Cycle, model: SignalModel, *, ranked: bool = True) -> BipartiteCycle:
    """The :class:`BipartiteCycle` of ``cycle`` under ``model`` (``ranked=False``: eq. 5.72).

    Beyond ``z_hi`` the tail term of ``u_i`` is below half an ulp of ``u_const`` and below
    ``z = -8.5`` the tail probability rounds to 1, so :func:`log_unmatched` skips ``erfc`` there
    with a result identical to rounding.
    """
    const, tail = unmatched_weights(model, ranked=ranked)
    if const > 0 and tail > 0:
        z_hi = -float(ndtri(2.0**-55 * const / tail))
    elif const > 0:
        z_hi = -math.inf
    else:
        z_hi = math.inf
    sigma, pm, pd = float(model.sigma), float(model.multipath), float(model.p_detect)
    log_late_linear = path_k = log1p_k = u_late = log_path_late = core_end = 0.0
    path_a = sigma / float(model.multipath_delay)
    match = core = tail_table = None
    if pm > 0:
        tables = multipath_tables(pm, path_a, const, tail, z_hi)
        path_k, u_late, match, core, tail_table = tables[:5]
        log1p_k = math.log1p(path_k)
        log_path_late = math.log(pd * pm / float(model.multipath_delay)) + 0.5 * path_a**2
        if tail > 0:
            core_end, z_hi = tables.core_end, tables.w_cut
            log_late_linear = math.log(tail * pm) + 0.5 * path_a**2
    return BipartiteCycle(
        cycle.toa,
        cycle.log_clutter,
        float(cycle.tau),
        float(cycle.log_poisson),
        math.log(pd) + math.log1p(-pm) - math.log(sigma) - LOG_SQRT_2PI,
        0.5 / (sigma * sigma),
        1.0 / sigma,
        const,
        tail,
        math.log(const) if const > 0 else -math.inf,
        math.log(tail) if tail > 0 else -math.inf,
        math.log(const + tail),
        z_hi,
        pm > 0,
        path_a,
        path_k,
        log1p_k,
        u_late,
        log_path_late,
        *_table_fields(match),
        core_end,
        *_table_fields(core),
        *_table_fields(tail_table),
        log_late_linear,
    )


@njit(cache=True, inline="always")
def log_unmatched(z: float, c: BipartiteCycle) -> float:
    """``log u = log(u_const + u_tail * P(t_i > tau))`` at ``z = (tau - pred_i) / sigma`` (see
    :class:`BipartiteCycle`), safe in the tails.

    For the ranked model ``u_const = 1 - P_D`` (missing) and ``u_tail = P_D`` (late, eq. 5.66);
    with ``u_const = 0`` (``P_D = 1``) the far tail is evaluated by :func:`log_gauss_tail`.
    With multipath the survival is ``P(Z > z) + P_M mu_D EMG(tau)``, tabulated (:mod:`.multipath`).
    """
    if z >= c.z_hi:
        return c.log_u_const
    if z <= _Z_LO:
        return c.log_u_total
    if c.multipath:
        if z < c.core_end:
            return table_value(z, c.core_x0, c.core_inv_h, c.core_coef)
        if c.u_const > 0.0:
            return table_value(z, c.tail_x0, c.tail_inv_h, c.tail_coef)
        return c.log_late_linear - c.path_a * z
    if c.u_const > 0.0:
        return math.log(c.u_const + c.u_tail * 0.5 * math.erfc(z * INV_SQRT2))
    return c.log_u_tail + log_gauss_tail(z)


@njit(cache=True, inline="always")
def log_match_weight(d: float, c: BipartiteCycle, log_floor: float) -> float:
    """``log phi_i(j) = log(P_D p_i(T_j))`` at the residual ``d = T_j - pred_i`` (eq. 5.66;
    with multipath ``p_i`` is the mixture of :mod:`rankmodels.tracking.signal_model`,
    evaluated as :mod:`.multipath` describes).

    With multipath, ``-inf`` instead where a bound without transcendental functions puts it
    below ``log_floor`` (``-inf``: never): ``(1 - P_M) N (1 + K erfcx(u))`` is at most
    ``(1 + K) (1 - P_M) N`` for ``z <= a`` (``erfcx(u) <= 1`` for ``u >= 0``) and, as
    ``erfcx(u) <= 2 exp(u^2)``, at most twice the larger of ``(1 - P_M) N`` and
    ``P_D P_M / mu_D exp(a^2 / 2 - a z)`` beyond.
    """
    direct = c.log_match0 - d * d * c.inv_2var
    if not c.multipath:
        return direct
    z = d * c.inv_sigma
    late = c.log_path_late - c.path_a * z
    u = (c.path_a - z) * INV_SQRT2
    if u <= c.path_u_late:
        return late
    if u >= 0.0:
        if direct + c.log1p_k < log_floor:
            return -math.inf
    elif max(direct, late) + LOG_2 < log_floor:
        return -math.inf
    if u < ERFCX_SERIES_FROM:
        return direct + table_value(u, c.match_x0, c.match_inv_h, c.match_coef)
    return direct + math.log1p(c.path_k * erfcx_series(u))


@njit(cache=True, inline="always")
def log_source_factors_above(
    c: BipartiteCycle, pred: np.ndarray, log_match, log_u, log_floor: float
) -> None:
    """One particle's source factors: ``log_match[i, j] = log phi_i(j)`` (s, m) and
    ``log_u[i] = log u_i`` (s,) for the predicted arrival times ``pred`` (s,) (eq. 5.66, with
    the multipath mixture of :mod:`rankmodels.tracking.signal_model`).

    With multipath, a pair that :func:`log_match_weight` shows to be below ``log u_i +
    log kappa_j + log_floor`` (``kappa_j``: the clutter weight, ``exp(log_clutter[j])``) may
    be set to ``-inf`` (``log_floor = -inf``: every pair is evaluated).
    """
    toa, log_clutter = c.toa, c.log_clutter
    for i in range(pred.shape[0]):
        lu = log_unmatched((c.tau - pred[i]) * c.inv_sigma, c)
        log_u[i] = lu
        for j in range(toa.shape[0]):
            log_match[i, j] = log_match_weight(toa[j] - pred[i], c, lu + log_clutter[j] + log_floor)


@njit(cache=True, inline="always")
def log_source_factors(c: BipartiteCycle, pred: np.ndarray, log_match, log_u) -> None:
    """Every source factor of one particle (:func:`log_source_factors_above`, nothing
    skipped)."""
    log_source_factors_above(c, pred, log_match, log_u, -math.inf)


class MessagePassing(NamedTuple):
    """Controls of the message-passing engines: new message = ``damping * old + (1 - damping)
    * update``; stop when no message changes by more than ``tol``, after ``max_iter`` sweeps."""

    damping: float
    tol: float
    max_iter: int


def message_passing(damping: float, tol: float, max_iter: int) -> MessagePassing:
    """Validated :class:`MessagePassing`; ValueError unless ``0 <= damping < 1``, ``tol > 0``
    and ``max_iter >= 1``."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if not tol > 0.0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    return MessagePassing(float(damping), float(tol), int(max_iter))


@dataclass
class LikelihoodResult:
    """Output of :func:`rankmodels.tracking.engines.log_likelihood`.

    Attributes
    ----------
    loglik: (N,) natural-log likelihood of the cycle at each particle.
    association: (N, m, s + 1) ``P(arrival j came from source i | T, X)``, column ``s`` =
        clutter; None unless asked for.
    iterations: message-passing sweeps until every particle converged (bp, minfactor).
    converged: whether every particle converged within ``max_iter`` (bp, minfactor).
    """

    loglik: np.ndarray
    association: np.ndarray | None
    iterations: int | None = None
    converged: bool | None = None


class EngineOutput(NamedTuple):
    """What an engine's kernel fills for N particles.

    ``loglik`` (N,); ``assoc`` (N, m, s + 1) when ``want`` (association posteriors asked for),
    else (1, m, s + 1) scratch; ``sweeps`` (N,) message-passing sweeps per particle (-1: not
    converged).
    """

    loglik: np.ndarray
    assoc: np.ndarray
    sweeps: np.ndarray
    want: bool

    def result(self, controls: MessagePassing | None = None) -> LikelihoodResult:
        """The :class:`LikelihoodResult`; with ``controls``, the largest number of sweeps any
        particle needed (``max_iter`` if one did not converge) and whether all converged."""
        assoc = self.assoc if self.want else None
        if controls is None:
            return LikelihoodResult(self.loglik, assoc)
        converged = bool(np.all(self.sweeps >= 0))
        sweeps = int(self.sweeps.max(initial=0)) if converged else controls.max_iter
        return LikelihoodResult(self.loglik, assoc, sweeps, converged)


def engine_output(n: int, m: int, s: int, association: bool) -> EngineOutput:
    """Fresh :class:`EngineOutput` for ``n`` particles, ``m`` arrivals and ``s`` sources."""
    return EngineOutput(
        loglik=np.empty(n),
        assoc=np.empty((n if association else 1, m, s + 1)),
        sweeps=np.zeros(n, dtype=np.int64),
        want=bool(association),
    )


@njit(cache=True)
def assoc_row(out: EngineOutput, p: int) -> np.ndarray:
    """Particle ``p``'s association posterior (m, s + 1), or the scratch row if not wanted."""
    return out.assoc[p] if out.want else out.assoc[0]


def particle_seconds(engine: str, s: int, m: int, association: bool = False) -> float:
    """Estimated serial time (s) of ``engine``'s kernel on one particle with ``s`` sources and
    ``m`` recorded arrivals (:data:`PARTICLE_COST`), times :data:`ASSOCIATION_COST` when it
    also computes the association marginals."""
    a, b = PARTICLE_COST[engine]
    return (a + b * s * m) * (ASSOCIATION_COST.get(engine, 1.0) if association else 1.0)


def machine_busy() -> bool:
    """Whether other work competes for the cores: the 1-minute load average (``os.getloadavg``,
    the whole machine's runnable threads, this process's included) above ``os.cpu_count()
    + BUSY_LOAD_MARGIN``. Read at most once a second; False where the OS reports no load
    average."""
    now = time.monotonic()
    if now - _load_seen[0] >= _LOAD_TTL:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average on this OS
            load = 0.0
        _load_seen[:] = [now, float(load > (os.cpu_count() or 1) + BUSY_LOAD_MARGIN)]
    return bool(_load_seen[1])


def parallel_pays(n: int, seconds_per_particle: float, threads: int, busy: bool = False) -> bool:
    """Whether ``n`` particles of ``seconds_per_particle`` each are worth splitting over
    ``threads`` threads: more than one thread, at least two particles per thread, and an
    estimated serial time ``n * seconds_per_particle`` of at least :data:`PARALLEL_MIN_SECONDS`
    (:data:`PARALLEL_MIN_SECONDS_BUSY` when the machine is ``busy``)."""
    least = PARALLEL_MIN_SECONDS_BUSY if busy else PARALLEL_MIN_SECONDS
    return threads > 1 and n >= 2 * threads and n * seconds_per_particle >= least


def over_particles(
    serial: Callable, parallel: Callable, n: int, *args: object, seconds_per_particle: float
) -> None:
    """Run an engine's kernel over particles ``0 <= p < n``.

    ``serial(lo, hi, *args)`` handles particles ``lo <= p < hi``; ``parallel(bounds, *args)``
    calls it on every row ``(lo, hi)`` of ``bounds`` in a ``prange`` loop. A batch that
    :func:`parallel_pays` for (given the calling thread's numba thread count and
    :func:`machine_busy`) is split into ``8`` chunks per thread; any other runs serially. Both
    give identical results: every particle is computed alone.
    """
    threads = get_num_threads()
    if parallel_pays(n, seconds_per_particle, threads, threads > 1 and machine_busy()):
        n_chunks = _CHUNKS_PER_THREAD * threads
        edges = np.minimum(np.arange(n_chunks + 1) * -(-n // n_chunks), n)
        parallel(np.column_stack([edges[:-1], edges[1:]]), *args)
    elif n:
        serial(0, n, *args)
