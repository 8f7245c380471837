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
in parallel chunks for large batches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit
from scipy.special import ndtri

from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "LOG_SQRT_2PI",
    "PARALLEL_MIN",
    "BipartiteCycle",
    "Cycle",
    "EngineOutput",
    "LikelihoodResult",
    "MessagePassing",
    "assoc_row",
    "bipartite_cycle",
    "check_predicted",
    "engine_output",
    "log_add",
    "multipath_constants",
    "log_erfcx",
    "log_gauss_tail",
    "log_path_scaled",
    "log_source_factors",
    "log_unmatched",
    "message_passing",
    "over_particles",
    "prepare_cycle",
    "unmatched_weights",
]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
LOG_SQRT_PI = 0.5 * math.log(math.pi)
INV_SQRT2 = 1.0 / math.sqrt(2.0)
#: P(Z > z) rounds to 1 below this z.
_Z_LO = -8.5
#: Batches at least this large use threads (below, launching them costs more than it saves).
PARALLEL_MIN = 512
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
        return math.log(0.5 * math.erfc(z * INV_SQRT2))
    x = 1.0 / (z * z)
    series = 1.0 - x * (
        1.0 - 3.0 * x * (1.0 - 5.0 * x * (1.0 - 7.0 * x * (1.0 - 9.0 * x * (1.0 - 11.0 * x))))
    )
    return -0.5 * z * z - math.log(z) - LOG_SQRT_2PI + math.log(series)


@njit(cache=True)
def log_erfcx(u: float) -> float:
    """``log erfcx(u) = log(exp(u^2) erfc(u))`` for any real ``u``, without overflow.

    ``erfc`` is used while it does not underflow (``u < 25``); beyond, the asymptotic series
    ``erfcx(u) = (1 - x + 3x^2 - 15x^3 + 105x^4 - 945x^5 + 10395x^6) / (u sqrt(pi))``,
    ``x = 1 / (2u^2)`` (relative error < 1e-16 there).
    """
    if u < 25.0:
        return math.log(math.erfc(u)) + u * u
    x = 0.5 / (u * u)
    series = 1.0 - x * (
        1.0 - 3.0 * x * (1.0 - 5.0 * x * (1.0 - 7.0 * x * (1.0 - 9.0 * x * (1.0 - 11.0 * x))))
    )
    return math.log(series) - math.log(u) - LOG_SQRT_PI


@njit(cache=True)
def log_path_scaled(z: float, path_a: float) -> float:
    """``log(exp(-z^2 / 2) erfcx((a - z) / sqrt 2))`` with ``a = sigma / mu_D``: the
    exponentially modified Gaussian at ``z = (T - pred) / sigma`` is ``1 / (2 mu_D)`` times its
    exponential, and ``mu_D EMG(tau)`` (the multipath part of the survival) half of it."""
    return log_erfcx((path_a - z) * INV_SQRT2) - 0.5 * z * z


@njit(cache=True)
def log_add(a: float, b: float) -> float:
    """``log(exp(a) + exp(b))`` without overflow (``-inf`` when both are)."""
    hi = max(a, b)
    if hi == -math.inf:
        return hi
    return hi + math.log1p(math.exp(min(a, b) - hi))


def multipath_constants(model: SignalModel) -> tuple[float, float, float]:
    """``(log(1 - P_M), log(P_M / (2 mu_D)), sigma / mu_D)``: ``log p_i(T)`` is
    ``log(1 - P_M) + log N(T; pred_i, sigma^2)`` log-added to ``log(P_M / (2 mu_D)) +``
    :func:`log_path_scaled` (the second ``-inf`` without multipath)."""
    pm, mu = float(model.multipath), float(model.multipath_delay)
    log_path0 = math.log(pm / (2.0 * mu)) if pm > 0 else -math.inf
    return math.log1p(-pm), log_path0, float(model.sigma) / mu


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
    With multipath (``log_path0 > -inf``) a match adds ``log_path0 + log_path_scaled(z,
    path_a)`` (``log_match0`` then holds ``log(1 - P_M)``) and the survival adds
    ``exp(log_path_tail0 + log_path_scaled(w, path_a))`` to ``P(Z > w)``.
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
    log_path0: float
    log_path_tail0: float
    path_a: float


def bipartite_cycle(cycle: Cycle, model: SignalModel, *, ranked: bool = True) -> BipartiteCycle:
    """The :class:`BipartiteCycle` of ``cycle`` under ``model`` (``ranked=False``: eq. 5.72).

    Beyond ``z_hi`` the tail term of ``u_i`` is below half an ulp of ``u_const`` and below
    ``z = -8.5`` the tail probability rounds to 1, so :func:`log_unmatched` skips ``erfc`` there
    with a result identical to rounding.
    """
    const, tail = unmatched_weights(model, ranked=ranked)
    log_direct, log_path0, path_a = multipath_constants(model)
    path_tail = log_path0 > -math.inf and tail > 0  # the late weight has a multipath part
    if path_tail:  # its tail is exponential, not Gaussian: no cut-off
        z_hi = math.inf
    elif const > 0 and tail > 0:
        z_hi = -float(ndtri(2.0**-55 * const / tail))
    elif const > 0:
        z_hi = -math.inf
    else:
        z_hi = math.inf
    sigma = float(model.sigma)
    return BipartiteCycle(
        toa=cycle.toa,
        log_clutter=cycle.log_clutter,
        tau=float(cycle.tau),
        log_poisson=float(cycle.log_poisson),
        log_match0=math.log(model.p_detect) + log_direct - math.log(sigma) - LOG_SQRT_2PI,
        inv_2var=0.5 / (sigma * sigma),
        inv_sigma=1.0 / sigma,
        u_const=const,
        u_tail=tail,
        log_u_const=math.log(const) if const > 0 else -math.inf,
        log_u_tail=math.log(tail) if tail > 0 else -math.inf,
        log_u_total=math.log(const + tail),
        z_hi=z_hi,
        log_path0=math.log(model.p_detect) + log_path0,
        log_path_tail0=math.log(0.5 * model.multipath) if path_tail else -math.inf,
        path_a=path_a,
    )


@njit(cache=True, inline="always")
def log_unmatched(z: float, c: BipartiteCycle) -> float:
    """``log u = log(u_const + u_tail * P(Z > z))`` (see :class:`BipartiteCycle`), safe in the
    tails.

    For the ranked model ``u_const = 1 - P_D`` (missing) and ``u_tail = P_D`` (late, eq. 5.66);
    with ``u_const = 0`` (``P_D = 1``) the far tail is evaluated by :func:`log_gauss_tail`.
    """
    if z >= c.z_hi:
        return c.log_u_const
    if z <= _Z_LO:
        return c.log_u_total
    if c.log_path_tail0 > -math.inf:  # survival P(Z > z) + P_M mu_D EMG(tau)
        log_tail = log_add(log_gauss_tail(z), c.log_path_tail0 + log_path_scaled(z, c.path_a))
        if c.u_const > 0.0:
            return math.log(c.u_const + c.u_tail * math.exp(log_tail))
        return c.log_u_tail + log_tail
    if c.u_const > 0.0:
        return math.log(c.u_const + c.u_tail * 0.5 * math.erfc(z * INV_SQRT2))
    return c.log_u_tail + log_gauss_tail(z)


@njit(cache=True, inline="always")
def log_source_factors(c: BipartiteCycle, pred: np.ndarray, log_match, log_u) -> None:
    """One particle's source factors: ``log_match[i, j] = log phi_i(j)`` (s, m) and
    ``log_u[i] = log u_i`` (s,) for the predicted arrival times ``pred`` (s,) (eq. 5.66, with
    the multipath mixture of :mod:`rankmodels.tracking.signal_model`)."""
    toa = c.toa
    for i in range(pred.shape[0]):
        log_u[i] = log_unmatched((c.tau - pred[i]) * c.inv_sigma, c)
        for j in range(toa.shape[0]):
            d = toa[j] - pred[i]
            log_match[i, j] = c.log_match0 - d * d * c.inv_2var
            if c.log_path0 > -math.inf:
                path = c.log_path0 + log_path_scaled(d * c.inv_sigma, c.path_a)
                log_match[i, j] = log_add(log_match[i, j], path)


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


def over_particles(serial: Callable, parallel: Callable, n: int, *args: object) -> None:
    """Run an engine's kernel over particles ``0 <= p < n``.

    ``serial(lo, hi, *args)`` handles particles ``lo <= p < hi``; ``parallel(bounds, *args)``
    calls it on every row ``(lo, hi)`` of ``bounds`` in a ``prange`` loop. Batches of at least
    ``PARALLEL_MIN`` particles are split into ``8`` chunks per thread.
    """
    if n >= PARALLEL_MIN:
        n_chunks = _CHUNKS_PER_THREAD * get_num_threads()
        edges = np.minimum(np.arange(n_chunks + 1) * -(-n // n_chunks), n)
        parallel(np.column_stack([edges[:-1], edges[1:]]), *args)
    elif n:
        serial(0, n, *args)
