"""Correlation heights of the recorded arrivals: a two-component model, and the hard cut.

A RAFOS decoder records, beside each arrival time ``T_j``, the height ``c_j > 0`` of the
correlation peak that detected it. Source signals (direct or multipath) and clutter have
different height distributions, ``f_S`` and ``f_C``; the heights are independent of the times
given the association. :class:`CorrelationModel` takes both log-normal,

    log c | source  ~ N(mu_S, s_S^2),        log c | clutter ~ N(mu_C, s_C^2),
    f(c) = exp(-(log c - mu)^2 / (2 s^2)) / (c s sqrt(2 pi)),

on whatever scale the decoder writes (the model is unchanged by a rescaling of ``c``, which
only shifts both means). With the heights the likelihood of a cycle (eq. 5.26) becomes

    P(T, c | X) = prod_j f_S(c_j) * e^{-lambda (1 - q)} sum_{associations} prod_i phi_i(S_i)
                  prod_{j: R_j = C} (lambda / W) f_C(c_j) / f_S(c_j):

each clutter arrival's weight ``k_j = lambda / W`` is multiplied by the likelihood ratio
``w_j = f_C(c_j) / f_S(c_j)`` (:meth:`CorrelationModel.clutter_weight`, which the engines take
as ``clutter_weight``), and the position-independent ``prod_j f_S(c_j)``
(:meth:`CorrelationModel.log_source_density`) is *kept*, added to each cycle's ``loglik`` by
the pass, so that ``loglik`` stays a density (of the times and the heights) and the EM's
comparisons of log-likelihoods between correlation models stay valid. Arrivals without a
usable height (NaN, or ``<= 0``) have ``w_j = 1`` and no density factor.

The model starts from the heights alone: the two-component log-normal mixture fitted to all
the record's heights (:meth:`CorrelationModel.from_heights`; the larger mean the sources'),
and the EM refines both from the association posteriors (``a_tjC`` weighs an arrival's
height as clutter, ``1 - a_tjC`` as a source's; :mod:`~rankmodels.tracking.model_fit`). The
times then decide which arrivals are clutter, not the mixture: the start only saves the EM
the iterations of separating the two from ``f_S = f_C`` (:meth:`CorrelationModel.pooled`,
``w_j = 1``: the track of a record without heights), which reaches the same estimates.

``track-float --min-correlation C`` instead removes the arrivals whose height is below ``C``
before tracking (:func:`apply_min_correlation`), keeping the time after which the float
recorded nothing: ``T_r`` of the cycle *as recorded* when all ``r`` ranks were filled
(arrivals after it went unrecorded whatever their height), ``W`` otherwise. The arrivals kept
are then exactly those of a thinned world: sources heard with ``P_D P(c >= C | source)``,
clutter at the rate ``lambda P(c >= C | clutter)``, both fully observed up to that time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.schema import NO_ARRIVAL

__all__ = [
    "CORRELATION_FIELDS",
    "MIN_SPREAD",
    "MIXTURE_ITERATIONS",
    "TRUNCATION",
    "CorrelationModel",
    "apply_min_correlation",
    "log_heights",
]

#: Smallest spread ``s`` (of ``log c``) of either component: heights written as a handful of
#: whole numbers would otherwise let a component collapse on one value.
MIN_SPREAD = 0.01
#: Most EM steps of :meth:`CorrelationModel.from_heights`.
MIXTURE_ITERATIONS = 500
#: The record variable :func:`apply_min_correlation` adds: per cycle the time (s) after which
#: the float recorded nothing.
TRUNCATION = "toa_truncation"
#: The statistical model's parameter names (``StatisticalModel.value``) of each field.
CORRELATION_FIELDS = {
    "correlation_source_mean": "source_mean",
    "correlation_source_spread": "source_spread",
    "correlation_clutter_mean": "clutter_mean",
    "correlation_clutter_spread": "clutter_spread",
}
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def log_heights(correlation: np.ndarray) -> np.ndarray:
    """``log c`` of the usable heights (finite and ``> 0``), NaN elsewhere (same shape)."""
    c = np.asarray(correlation, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(c) & (c > 0), np.log(np.where(c > 0, c, 1.0)), np.nan)


@dataclass(frozen=True)
class CorrelationModel:
    """The log-normal heights of source and clutter arrivals (module docstring): ``log c ~
    N(source_mean, source_spread^2)`` for a source's arrival, ``N(clutter_mean,
    clutter_spread^2)`` for clutter; spreads at least :data:`MIN_SPREAD`."""

    source_mean: float
    source_spread: float
    clutter_mean: float
    clutter_spread: float

    def __post_init__(self) -> None:
        for name in ("source_mean", "source_spread", "clutter_mean", "clutter_spread"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError(f"CorrelationModel.{name} must be a real number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"CorrelationModel.{name} must be finite, got {value!r}")
        for name in ("source_spread", "clutter_spread"):
            if getattr(self, name) < MIN_SPREAD:
                raise ValueError(
                    f"CorrelationModel.{name} must be >= {MIN_SPREAD}, got {getattr(self, name)!r}"
                )

    @classmethod
    def pooled(cls, correlation: np.ndarray) -> CorrelationModel | None:
        """Both components the log-normal fitted to every usable height of ``correlation``
        (any shape): mean and standard deviation of ``log c`` (at least :data:`MIN_SPREAD`);
        None with fewer than two usable heights."""
        x = log_heights(correlation)
        x = x[np.isfinite(x)]
        if x.size < 2:
            return None
        mean, spread = float(x.mean()), max(float(x.std()), MIN_SPREAD)
        return cls(mean, spread, mean, spread)

    @classmethod
    def from_heights(cls, correlation: np.ndarray) -> CorrelationModel | None:
        """The two-component log-normal mixture fitted to the usable heights of
        ``correlation`` (any shape) alone, by EM over the heights: the component of the
        larger mean is the sources', the other the clutter's. It starts from the quantiles
        of ``log c`` (sources at the 60 %, clutter at the 10 %, shares 0.9 and 0.1, both
        spreads the pooled one) and runs :data:`MIXTURE_ITERATIONS` steps or until the
        mixture's log-likelihood gains less than 1e-9 per height. :meth:`pooled` when a
        component ends with fewer than two heights' weight (nothing to separate); None with
        fewer than two usable heights."""
        pooled = cls.pooled(correlation)
        if pooled is None:
            return None
        x = log_heights(correlation)
        x = x[np.isfinite(x)][:, None]
        mean = np.quantile(x, [0.6, 0.1])
        spread = np.full(2, pooled.source_spread)
        share = np.array([0.9, 0.1])
        previous = -np.inf
        for _ in range(MIXTURE_ITERATIONS):
            log_joint = np.log(share) - np.log(spread) - 0.5 * ((x - mean) / spread) ** 2
            top = log_joint.max(axis=1, keepdims=True)
            total = top + np.log(np.exp(log_joint - top).sum(axis=1, keepdims=True))
            resp = np.exp(log_joint - total)
            weight = resp.sum(axis=0)
            if weight.min() < 2.0:
                return pooled
            share = weight / weight.sum()
            mean = (resp * x).sum(axis=0) / weight
            spread = np.maximum(np.sqrt((resp * (x - mean) ** 2).sum(axis=0) / weight), MIN_SPREAD)
            gain, previous = float(total.mean()) - previous, float(total.mean())
            if gain < 1e-9:
                break
        source, clutter = (0, 1) if mean[0] >= mean[1] else (1, 0)
        return cls(
            float(mean[source]), float(spread[source]), float(mean[clutter]), float(spread[clutter])
        )

    def _log_density(self, x: np.ndarray, mean: float, spread: float) -> np.ndarray:
        z = (x - mean) / spread
        return -x - math.log(spread) - _LOG_SQRT_2PI - 0.5 * z * z

    def log_source_density(self, correlation: np.ndarray) -> np.ndarray:
        """``log f_S(c)`` of each height (same shape), 0 where it is not usable."""
        x = log_heights(correlation)
        out = self._log_density(x, self.source_mean, self.source_spread)
        return np.where(np.isfinite(x), out, 0.0)

    def clutter_weight(self, correlation: np.ndarray) -> np.ndarray:
        """``f_C(c) / f_S(c)`` of each height (same shape), 1 where it is not usable."""
        x = log_heights(correlation)
        log_ratio = self._log_density(x, self.clutter_mean, self.clutter_spread) - (
            self._log_density(x, self.source_mean, self.source_spread)
        )
        return np.where(np.isfinite(x), np.exp(log_ratio), 1.0)


def apply_min_correlation(record: xr.Dataset, minimum: float) -> xr.Dataset:
    """``record`` without the arrivals whose ``correlation`` is below ``minimum`` (those
    without a height are kept): in each cycle the kept arrivals move up the ranks in order,
    with their heights and hand labels, NaN (labels: no arrival) after them, and
    :data:`TRUNCATION` (cycle) holds the time after which the float recorded nothing (module
    docstring). Raises :class:`InputError` (field ``correlation``) when the record has no
    ``correlation``."""
    if "correlation" not in record:
        raise InputError("needed by --min-correlation but absent", field="correlation")
    toa = np.asarray(record["toa"].values, dtype=np.float64)
    corr = np.asarray(record["correlation"].values, dtype=np.float64)
    window = float(record["window_length"])
    recorded = ~np.isnan(toa)
    full = recorded.all(axis=1)
    truncation = np.where(full, toa[:, -1], window)
    keep = recorded & ~(corr < minimum)
    order = np.argsort(~keep, axis=1, kind="stable")  # kept first, in rank order
    kept = np.take_along_axis(keep, order, axis=1)
    out = record.copy()
    for name in ("toa", "correlation", "source_label"):
        if name not in record:
            continue
        values = np.take_along_axis(np.asarray(record[name].values), order, axis=1)
        fill = NO_ARRIVAL if name == "source_label" else np.nan
        out[name] = record[name].copy(data=np.where(kept, values, fill).astype(values.dtype))
    out[TRUNCATION] = (
        "cycle",
        truncation,
        {"long_name": "time after which the float recorded nothing", "units": "s"},
    )
    return out
