"""The multipath terms of the source factors, tabulated once per signal model.

With multipath (:mod:`rankmodels.tracking.signal_model`, ``P_M > 0``) a source's arrival density
is the mixture of the Gaussian and the exponentially modified Gaussian (EMG) of mean delay
``mu_D``. Evaluated directly it costs an ``erfc``, an ``exp`` and two logarithms per source and
arrival, 3.6 times the rest of the ``exact`` engine. Both multipath terms depend on the
particle only through one standardised number, with shape constants fixed by the model, so
they are tabulated here once per model and read by the kernels (:mod:`._common`) with one
polynomial each:

* **match weight.** With ``z = (T - pred) / sigma``, ``a = sigma / mu_D`` and
  ``u = (a - z) / sqrt 2`` the mixture is ``(1 - P_M) N(T; pred, sigma^2) (1 + K erfcx(u))``,
  ``K = P_M / (1 - P_M) a sqrt(pi / 2)`` (``EMG / N = a sqrt(pi / 2) erfcx(u)``), so the
  multipath term of ``log phi_i(j)`` is ``l(u) = log1p(K erfcx(u))``, tabulated for
  ``u_late <= u < 25``. Beyond 25, ``erfcx`` is its asymptotic series (:func:`erfcx_series`);
  below ``u_late`` (arrivals about 9 sigma late or more) the EMG's exponential tail
  ``log phi = log(P_D P_M / mu_D) + a^2 / 2 - a z`` is exact to double precision (the Gaussian
  and ``erfc(|u|)`` corrections are below ``2^-53`` relative: see :func:`late_match_limit`).
* **unmatched weight.** With ``w = (tau - pred) / sigma`` the survival is
  ``S(w) = Q(w) + (P_M / 2) exp(-w^2 / 2) erfcx((a - w) / sqrt 2)`` and
  ``log u(w) = log(u_const + u_tail S(w))`` (:func:`._common.unmatched_weights`), tabulated for
  ``-8.5 < w < w_late`` ("core"). Beyond ``w_late`` (:func:`late_survival_limit`)
  ``S(w) = P_M exp(a^2 / 2 - a w)`` to double precision, so ``log u`` is
  ``log(u_const + u_tail P_M exp(a^2 / 2 - a w))``: tabulated on a grid of spacing ``~1 / a``
  up to the cut-off where it rounds to ``log u_const`` ("tail"), or linear when
  ``u_const = 0``.

A table is a piecewise polynomial of degree :data:`DEGREE` on a uniform grid, each piece
interpolating the exact function (scipy's ``erfcx``, ``erfc`` and ``log_ndtr``) at the
Chebyshev nodes of its interval. When it is built the table is compared with the exact
function at 17 points of every interval and the grid is halved until its error is at most
``TOLERANCE * max(1, |value|)``: the values are logs of weights, so this bounds the relative
error of a weight by ``1e-12`` (where ``|log| > 1``, the relative error of its log).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.polynomial import chebyshev
from scipy import special

__all__ = [
    "DEGREE",
    "ERFCX_SERIES_FROM",
    "TOLERANCE",
    "MultipathTables",
    "chebyshev_table",
    "erfcx_series",
    "late_match_limit",
    "late_survival_limit",
    "log_survival_weight",
    "multipath_tables",
    "table_value",
]

#: Degree of each table piece (the kernels' Horner step is written for it).
DEGREE = 7
#: Largest allowed table error, relative to ``max(1, |value|)`` (values are logs).
TOLERANCE = 1e-12
#: ``erfcx(u)`` is its asymptotic series from here on (relative error < 1e-16).
ERFCX_SERIES_FROM = 25.0
#: Below this ``w`` the survival ``S(w)`` rounds to 1 (as without multipath).
SURVIVAL_ONE_BELOW = -8.5
#: ``log(2^53)``: terms below ``2^-53`` relative are dropped by the exact asymptotes.
_LOG_INV_EPS = 53.0 * math.log(2.0)
#: Cut-off of the unmatched weight: a term below ``2^-55 u_const`` rounds away.
_LOG_HALF_ULP = -55.0 * math.log(2.0)
#: A table may not have more pieces than this (memory; reached only for absurd settings).
_MAX_PIECES = 1 << 16

_NODES = np.cos((2.0 * np.arange(DEGREE + 1) + 1.0) * np.pi / (2.0 * DEGREE + 2.0))
_CHECK = np.linspace(-1.0, 1.0, 17)


def _values_to_monomial() -> np.ndarray:
    """``(DEGREE + 1, DEGREE + 1)`` matrix taking the values at ``_NODES`` to the monomial
    coefficients (in ``t`` on ``[-1, 1]``) of the interpolating polynomial."""
    to_chebyshev = np.linalg.inv(chebyshev.chebvander(_NODES, DEGREE))
    basis = np.zeros((DEGREE + 1, DEGREE + 1))
    for k in range(DEGREE + 1):
        mono = chebyshev.cheb2poly(np.eye(DEGREE + 1)[k])
        basis[k, : mono.size] = mono
    return to_chebyshev.T @ basis


_TO_MONOMIAL = _values_to_monomial()


class Table(NamedTuple):
    """Piece ``k = int((x - x0) * inv_h)`` holds the monomial coefficients ``coef[k]`` (in
    ``t = 2 frac - 1``) of the polynomial on ``[x0 + k h, x0 + (k + 1) h]``; ``error`` is the
    largest error found when it was checked, relative to ``max(1, |value|)``."""

    x0: float
    inv_h: float
    coef: np.ndarray
    error: float


def chebyshev_table(
    f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, spacing: float
) -> Table:
    """Tabulate ``f`` (vectorised, exact) on ``[lo, hi]``, starting from grid ``spacing`` and
    halving it until the error is at most :data:`TOLERANCE` (see the module docstring).

    Raises ValueError if that would take more than ``2^16`` pieces.
    """
    h = float(spacing)
    while True:
        n = max(1, math.ceil((hi - lo) / h))
        if n > _MAX_PIECES:
            raise ValueError(f"tabulating on [{lo:g}, {hi:g}] needs more than {_MAX_PIECES} pieces")
        left = lo + h * np.arange(n)[:, None]
        coef = f(left + 0.5 * h * (_NODES + 1.0)) @ _TO_MONOMIAL
        exact = f(left + 0.5 * h * (_CHECK + 1.0))
        approx = np.polynomial.polynomial.polyval(_CHECK, coef.T)
        error = float(np.max(np.abs(approx - exact) / np.maximum(1.0, np.abs(exact))))
        if error <= TOLERANCE:
            return Table(float(lo), 1.0 / h, np.ascontiguousarray(coef), error)
        h *= 0.5


@njit(cache=True, inline="always")
def table_value(x: float, x0: float, inv_h: float, coef: np.ndarray) -> float:
    """The tabulated function at ``x`` (a piece of degree 7 by Horner's rule); outside the
    table's range the first or last piece is extrapolated (callers stay inside)."""
    t = (x - x0) * inv_h
    k = min(max(int(t), 0), coef.shape[0] - 1)
    t = 2.0 * (t - k) - 1.0
    v = coef[k, 7]
    v = coef[k, 6] + t * v
    v = coef[k, 5] + t * v
    v = coef[k, 4] + t * v
    v = coef[k, 3] + t * v
    v = coef[k, 2] + t * v
    v = coef[k, 1] + t * v
    return coef[k, 0] + t * v


@njit(cache=True)
def erfcx_series(u: float) -> float:
    """``erfcx(u) = exp(u^2) erfc(u)`` for ``u >= 25`` by its asymptotic series
    ``(1 - x + 3x^2 - 15x^3 + 105x^4 - 945x^5 + 10395x^6) / (u sqrt(pi))``, ``x = 1 / (2u^2)``
    (relative error < 1e-16 there)."""
    x = 0.5 / (u * u)
    series = 1.0 - x * (
        1.0 - 3.0 * x * (1.0 - 5.0 * x * (1.0 - 7.0 * x * (1.0 - 9.0 * x * (1.0 - 11.0 * x))))
    )
    return series / (u * math.sqrt(math.pi))


def late_match_limit(k: float) -> float:
    """``u_late``: for ``u <= u_late`` the match term ``log1p(K erfcx(u))`` equals
    ``log(2K) + u^2`` to ``2^-52``. Exactly ``log1p(K erfcx(u)) = log(2K) + u^2 +
    log1p(e^{-u^2} / (2K) - erfc(|u|) / 2)`` for ``u < 0``; both terms are below ``2^-53``
    once ``u^2 >= 53 log 2 + max(0, -log 2K)`` (``erfc(x) <= e^{-x^2}``)."""
    return -math.sqrt(_LOG_INV_EPS + max(0.0, -math.log(2.0 * k)))


def late_survival_limit(p_multipath: float, path_a: float) -> float:
    """``w_late``: for ``w >= w_late`` the survival ``S(w)`` equals ``P_M exp(a^2 / 2 - a w)``
    to ``2^-52``: ``S(w) = Q(w) + P_M e^{a^2/2 - a w} (1 - erfc(|u|) / 2)`` with
    ``u = (a - w) / sqrt 2``, and ``Q(w) <= phi(w) / w`` is below ``2^-53`` of the second term
    once ``(w - a)^2 / 2 >= 53 log 2 - log P_M`` (which also makes ``erfc(|u|) / 2`` small)."""
    return path_a + math.sqrt(2.0 * (_LOG_INV_EPS - math.log(p_multipath)))


def log1p_k_erfcx(u: np.ndarray, k: float) -> np.ndarray:
    """Exact ``log1p(K erfcx(u))`` (scipy); for ``u < 0`` as ``log(1 + exp(log K + u^2 +
    log erfc(u)))``, which does not overflow where ``erfcx`` does (``u < -26``)."""
    with np.errstate(over="ignore"):
        direct = np.log1p(k * special.erfcx(np.maximum(u, 0.0)))
    late = np.logaddexp(0.0, math.log(k) + u * u + np.log(special.erfc(np.minimum(u, 0.0))))
    return np.where(u < 0.0, late, direct)


def log_survival_weight(
    w: np.ndarray, p_multipath: float, path_a: float, u_const: float, u_tail: float
) -> np.ndarray:
    """Exact ``log(u_const + u_tail S(w))`` with the multipath survival ``S`` (scipy, in logs),
    for ``w <= a + 36`` (``erfcx`` overflows further out)."""
    u = (path_a - w) / math.sqrt(2.0)
    log_delayed = math.log(0.5 * p_multipath) - 0.5 * w * w + np.log(special.erfcx(u))
    log_s = np.logaddexp(special.log_ndtr(-w), log_delayed)
    log_c = math.log(u_const) if u_const > 0.0 else -math.inf
    return np.logaddexp(log_c, math.log(u_tail) + log_s)


class MultipathTables(NamedTuple):
    """The tabulated multipath terms of one signal model (see the module docstring).

    ``match``: ``l(u)`` on ``[u_late, 25)``; ``core``: ``log u(w)`` on
    ``[-8.5, core_end)``; ``tail``: ``log u(w)`` on ``[core_end, w_cut)`` (``u_const > 0``;
    None otherwise, or when ``w_cut <= w_late``). ``w_cut``: beyond it ``log u`` rounds to
    ``log u_const`` (``inf`` when ``u_const = 0``). ``core`` and ``tail`` are None without a
    late weight (``u_tail = 0``).
    """

    k: float
    u_late: float
    match: Table
    core: Table | None
    tail: Table | None
    core_end: float
    w_cut: float


@functools.lru_cache(maxsize=32)
def multipath_tables(
    p_multipath: float, path_a: float, u_const: float, u_tail: float, w_cut_direct: float
) -> MultipathTables:
    """The tables for ``P_M > 0``, ``a = sigma / mu_D`` and the unmatched weight
    ``u_const + u_tail S(w)``; ``w_cut_direct`` is the cut-off of the direct part
    (``P(Z > w) u_tail < 2^-55 u_const`` beyond it)."""
    k = p_multipath / (1.0 - p_multipath) * path_a * math.sqrt(0.5 * math.pi)
    u_late = late_match_limit(k)
    match = chebyshev_table(lambda u: log1p_k_erfcx(u, k), u_late, ERFCX_SERIES_FROM, 0.5)
    if u_tail == 0.0:
        return MultipathTables(k, u_late, match, None, None, -math.inf, -math.inf)
    w_late = late_survival_limit(p_multipath, path_a)
    w_cut = math.inf
    if u_const > 0.0:  # beyond, u_tail (Q(w) + P_M e^{a^2/2 - a w}) < 2^-54 u_const
        log_ratio = math.log(u_tail * p_multipath / u_const) + 0.5 * path_a * path_a
        w_cut = max(w_cut_direct, (log_ratio - _LOG_HALF_ULP) / path_a)
    core_end = min(w_late, w_cut)

    def core_f(w: np.ndarray) -> np.ndarray:
        return log_survival_weight(w, p_multipath, path_a, u_const, u_tail)

    core = chebyshev_table(core_f, SURVIVAL_ONE_BELOW, core_end, 0.25)
    tail = None
    if u_const > 0.0 and w_cut > core_end:
        log_c = math.log(u_const)
        log_late = math.log(u_tail * p_multipath) + 0.5 * path_a * path_a

        def tail_f(w: np.ndarray) -> np.ndarray:
            return np.logaddexp(log_c, log_late - path_a * w)

        tail = chebyshev_table(tail_f, core_end, w_cut, 1.0 / path_a)
    return MultipathTables(k, u_late, match, core, tail, core_end, w_cut)
