"""M-steps for the statistical model of a float record: TOA noise, detection, clutter,
multipath and the float's random walk.

The Monte Carlo EM of :func:`rankmodels.tracking.float_calibration.calibrate` gives, for each pass,
the association posterior ``a_tji = P(R_tj = i | data)`` of every recorded arrival (sources
``i``, then clutter ``C``), ``M`` smoothed trajectories ``X_m`` and the predicted TOAs at the
posterior mean. Each parameter ``theta`` of :class:`~rankmodels.tracking.signal_model.
SignalModel` and of the random walk is updated from them by one Newton step on its
*penalised* expected complete-data log-likelihood, on a scale where it is unbounded
(``phi = log theta`` or ``logit theta``):

``sigma`` (``phi = log sigma``)
    ``l = sum_k w_k (-log sigma - e_k^2 / (2 sigma^2))`` over (arrival, source) pairs ``k``
    with ``w_k = a_k P(direct | e_k)`` (multipath arrivals are not Gaussian about the
    prediction) and ``e_k`` the residual against trajectory ``m`` (eq. 5.66); score
    ``sum w (e^2 / sigma^2 - 1)``, information ``2 sum w``. Closed form: ``sigma^2 =
    sum w e^2 / sum w``.
``p_detect`` (``phi = logit P_D``)
    for every active source ``i`` of a cycle with arrivals, ``rho_ti = sum_j a_tji`` is the
    probability that it was recorded; if it was not, it was missing (``1 - P_D``) or late
    (``P_D S_ti``, ``S_ti`` its probability of arriving after the last recorded arrival, or
    after the window when fewer than ``r`` were recorded): ``l = sum rho log P_D + (1 - rho)
    log(1 - P_D (1 - S))``, a one-dimensional concave maximisation.
``clutter_rate`` (``phi = log lambda``)
    clutter is a Poisson process on the window, observed up to the last recorded arrival
    ``T_r`` when all ``r`` were recorded and on the whole window otherwise; with ``c_t =
    sum_j a_tjC`` the expected recorded clutter and ``e_t = T_r / W`` (or 1) the share of the
    window observed, ``l = sum c log lambda - lambda sum e``: ``lambda = sum c / sum e``.
    Louis' missing information of the association is ``sum a_C (1 - a_C)``.
``multipath`` (``logit P_M``) and ``multipath_delay`` (``log mu_D``)
    each source arrival is direct or delayed by ``D ~ Exp(mu_D)``: ``P_M = sum a (1 - pi) /
    sum a`` with ``pi = P(direct | e)``; given a delay the residual is ``e = eps + D``, so
    ``D | e`` is ``N(e - sigma^2 / mu_D, sigma^2)`` truncated to ``D >= 0`` and ``mu_D =
    sum a (1 - pi) E[D | e] / sum a (1 - pi)``.
``process_noise`` (``log q``)
    the increments of each trajectory are ``N(0, q^2 dt I_2)`` (eq. 5.1): ``q^2 = sum |dX|^2
    / (2 sum dt)``, information ``4 n`` for ``n`` steps. With the Lagrangian motion the same
    name (``process-noise``) fits its mean velocity, eddy speed and time scale instead
    (:mod:`~rankmodels.tracking.motion_fit`).
``correlation`` (the heights' log-normal components, :mod:`~rankmodels.tracking.correlation`)
    with ``x_tj = log c_tj`` of the arrivals with a usable height and ``a_tj = a_tjC``, the
    clutter component is fitted to the ``x`` weighed ``a``, the source component to them
    weighed ``1 - a``: for the mean (``phi = mu``) ``l = sum w (-(x - mu)^2 / (2 s^2))``,
    score ``sum w (x - mu) / s^2``, information ``sum w / s^2``; for the spread (``phi =
    log s``) ``l = sum w (-log s - (x - mu)^2 / (2 s^2))``, score ``sum w ((x - mu)^2 / s^2 -
    1)``, information ``2 sum w`` (closed forms: the weighted mean and variance). Louis'
    missing information is that of the Bernoulli labels, ``sum a (1 - a) g^2`` with ``g`` the
    arrival's term of the score. Only records with heights have the model (``None``
    otherwise, and the name is then off the model).

Every parameter has a prior ``phi ~ N(phi_0, w^2)`` centred on its starting value (the
file's or the command line's; widths :data:`PRIORS`), so a record that says little leaves
it near its start, and the step is the EM step ``phi + (g - (phi - phi_0) / w^2) / (I_c +
1 / w^2)`` with ``g`` the mean score over the trajectories and ``I_c`` the mean complete-data
information (its fixed point is the penalised maximum), at most :data:`MAX_STEP` in ``phi``.
The standard error is ``1 / sqrt(I +
1 / w^2)`` with ``I`` Louis' observed information: ``I_c`` less the variance of the
per-trajectory scores (what the unknown positions take away), floored at
:data:`MIN_OBSERVED_SHARE` of it. A parameter is *determined by the record* when the data
carry at least as much information as its prior (``I w^2 >=`` :data:`MIN_DATA_TO_PRIOR`,
i.e. the posterior standard deviation is at most ``w / sqrt 2``); otherwise it is kept at
its starting value, and reported so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from rankmodels.tracking.arrival_density import direct_path_share, survival
from rankmodels.tracking.correlation import (
    CORRELATION_FIELDS,
    CorrelationModel,
    log_heights,
)
from rankmodels.tracking.correlation import MIN_SPREAD as MIN_CORRELATION_SPREAD
from rankmodels.tracking.dynamics import LagrangianMotion
from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "MAX_STEP",
    "MIN_DATA_TO_PRIOR",
    "MIN_OBSERVED_SHARE",
    "PRIORS",
    "STATISTICAL_PARAMS",
    "Estimate",
    "FitInputs",
    "Prior",
    "StatisticalModel",
    "fit_statistics",
    "off_the_model",
    "pair_members",
]

#: What ``--calibrate-params`` may name of the statistical model, and the parameters each
#: name covers: ``sigma`` (TOA noise), ``pd`` (detection probability), ``clutter`` (clutter
#: rate), ``multipath`` (share and mean delay), ``process-noise`` (the random walk's step),
#: ``correlation`` (the correlation heights' source and clutter components).
STATISTICAL_PARAMS: dict[str, tuple[str, ...]] = {
    "sigma": ("sigma",),
    "pd": ("p_detect",),
    "clutter": ("clutter_rate",),
    "multipath": ("multipath", "multipath_delay"),
    "process-noise": ("process_noise",),
    "correlation": tuple(CORRELATION_FIELDS),
}
#: Smallest share of the complete-data information Louis' observed information keeps.
MIN_OBSERVED_SHARE = 0.3
#: Largest change of ``phi`` in one M-step (a factor ``e`` on a log scale): the step is
#: linear in ``phi``, so far from the optimum (a start many times off) it is taken in parts.
MAX_STEP = 1.0
#: Information the record must carry, relative to the prior's, for a parameter to be
#: estimated (1: at least as much as the prior; the posterior std is then ``<= w / sqrt 2``).
MIN_DATA_TO_PRIOR = 1.0


@dataclass(frozen=True)
class Prior:
    """``phi ~ N(phi_0, width^2)`` on ``phi = log theta`` (``scale="log"``), ``logit theta``
    (``"logit"``) or ``theta`` itself (``"linear"``), ``phi_0`` the starting value's; ``unit``
    and ``label`` for text."""

    scale: str
    width: float
    label: str
    unit: str

    def to_phi(self, value: float) -> float:
        if self.scale == "linear":
            return value
        return math.log(value) if self.scale == "log" else math.log(value / (1.0 - value))

    def from_phi(self, phi: float) -> float:
        if self.scale == "linear":
            return phi
        return math.exp(phi) if self.scale == "log" else 1.0 / (1.0 + math.exp(-phi))

    def derivative(self, value: float) -> float:
        """``d theta / d phi`` at ``value`` (for standard errors by the delta method)."""
        if self.scale == "linear":
            return 1.0
        return value if self.scale == "log" else value * (1.0 - value)


#: The priors. Widths: the TOA noise and the random walk's step are known to a factor of
#: about 1.6 (one ``w``) before the record is read; detection and clutter vary by more
#: (``P_D`` 0.6-0.97, ``lambda`` 0.3-3 per window across floats and sources); the multipath
#: share is a few per cent, its delay tens of seconds. The Lagrangian motion: the mean
#: velocity to 5 km/day about the launch-to-recovery drift (a float's mean flow is a few
#: km/day), the eddy speed and time scale to a factor of 2 (floats' eddy speeds are 2-10
#: km/day, their time scales 1-10 days). The correlation heights' components: their means (of
#: ``log c``) to a factor of ``e`` about the record's own two-component fit, their spreads to
#: a factor of 2 about its spreads (the heights' scale is the decoder's, so the record's own
#: is the only start).
PRIORS: dict[str, Prior] = {
    "sigma": Prior("log", 0.5, "TOA noise sigma", "s"),
    "p_detect": Prior("logit", 1.0, "detection probability P_D", ""),
    "clutter_rate": Prior("log", 1.0, "clutter rate lambda", "per window"),
    "multipath": Prior("logit", 1.0, "multipath share P_M", ""),
    "multipath_delay": Prior("log", 0.5, "mean multipath delay mu_D", "s"),
    "process_noise": Prior("log", 0.5, "process noise q", "km/day"),
    "mean_velocity_east": Prior("linear", 5.0, "mean velocity east", "km/day"),
    "mean_velocity_north": Prior("linear", 5.0, "mean velocity north", "km/day"),
    "eddy_speed": Prior("log", 0.7, "eddy speed s", "km/day"),
    "time_scale": Prior("log", 0.7, "Lagrangian time scale tau", "days"),
    "correlation_source_mean": Prior("linear", 1.0, "source log correlation mean", ""),
    "correlation_source_spread": Prior("log", 0.7, "source log correlation spread", ""),
    "correlation_clutter_mean": Prior("linear", 1.0, "clutter log correlation mean", ""),
    "correlation_clutter_spread": Prior("log", 0.7, "clutter log correlation spread", ""),
}


@dataclass(frozen=True)
class Estimate:
    """One parameter after an M-step: ``value`` (the start when not estimated), ``std`` (NaN
    when not estimated), ``start`` and ``estimated``; ``information``: the record's
    information about ``phi`` over the prior's (``I w^2``)."""

    value: float
    std: float
    start: float
    estimated: bool
    information: float


#: The Lagrangian motion's parameters by name (:mod:`~rankmodels.tracking.motion_fit`).
MOTION_VALUES = {
    "mean_velocity_east": lambda m: m.mean_velocity[0],
    "mean_velocity_north": lambda m: m.mean_velocity[1],
    "eddy_speed": lambda m: m.eddy_speed,
    "time_scale": lambda m: m.time_scale,
}


@dataclass(frozen=True)
class StatisticalModel:
    """The signal model and the random walk's step ``process_noise`` (km per axis, 1 day)
    or, when ``motion`` is given, the Lagrangian motion instead of the walk, with one
    :class:`Estimate` per fitted parameter (``estimates``; empty for the starting values);
    ``correlation`` the correlation heights' model (None: heights not used)."""

    signal: SignalModel
    process_noise: float
    estimates: tuple[tuple[str, Estimate], ...] = ()
    motion: LagrangianMotion | None = None
    motion_cov: tuple[tuple[float, ...], ...] | None = None
    correlation: CorrelationModel | None = None

    def value(self, name: str) -> float:
        if name == "process_noise":
            return self.process_noise
        if self.motion is not None and name in MOTION_VALUES:
            return MOTION_VALUES[name](self.motion)
        if name in CORRELATION_FIELDS:
            if self.correlation is None:
                raise ValueError(f"{name}: the model has no correlation heights")
            return getattr(self.correlation, CORRELATION_FIELDS[name])
        return getattr(self.signal, name)

    def estimate(self, name: str) -> Estimate | None:
        return dict(self.estimates).get(name)

    def log_prior(self, start: StatisticalModel) -> float:
        """``sum log N(phi; phi_0, w^2)`` (up to constants) over the estimated parameters."""
        total = 0.0
        for name, est in self.estimates:
            if est.estimated:
                prior = PRIORS[name]
                d = prior.to_phi(est.value) - prior.to_phi(start.value(name))
                total -= 0.5 * d * d / prior.width**2
        return total


@dataclass(frozen=True)
class FitInputs:
    """What one EM pass gives the M-steps.

    ``toa (T, r)`` recorded TOAs (NaN: none); ``posterior (T, r, s + 1)`` association
    posteriors (NaN rows where nothing was recorded); ``predicted (M, T, s)`` each source's
    predicted TOA along each of ``M`` smoothed trajectories and ``predicted_mean (T, s)`` at
    the posterior mean (NaN for inactive sources); ``steps_km (M, n, 2)`` the trajectories'
    (east, north) increments over ``dt (n,)`` days (from the launch to the last cycle);
    ``members (T, M, r, s + 1)`` the association posterior given each trajectory (None: the
    marginal ``posterior`` for every trajectory); ``correlation (T, r)`` the arrivals'
    correlation heights (None: none); ``truncation (T,)`` the time after which nothing was
    recorded (None: the last rank's TOA when all ``r`` are filled, else the window)."""

    toa: np.ndarray
    posterior: np.ndarray
    predicted: np.ndarray
    predicted_mean: np.ndarray
    steps_km: np.ndarray
    dt: np.ndarray
    members: np.ndarray | None = None
    correlation: np.ndarray | None = None
    truncation: np.ndarray | None = None

    def censor(self, window: float) -> np.ndarray:
        """``(T,)`` the time after which nothing was recorded (``truncation``, or its
        default)."""
        if self.truncation is not None:
            return np.asarray(self.truncation, dtype=float)
        toa = np.asarray(self.toa, dtype=float)
        return np.where(~np.isnan(toa).any(axis=1), np.nan_to_num(toa[:, -1]), window)


def _newton(
    name: str,
    current: float,
    start: float,
    score: np.ndarray,
    complete_info: float,
    bounds: tuple[float, float],
    missing: float | None = None,
) -> Estimate:
    """One penalised EM step on ``phi`` (module docstring) from ``current``; ``score (M,)``
    the complete-data score of each trajectory (or one value), ``complete_info`` the mean
    complete-data information, ``bounds`` the accepted range of the value, ``missing`` the
    missing information (default: the variance of ``score`` over the trajectories)."""
    prior = PRIORS[name]
    score = np.atleast_1d(np.asarray(score, dtype=float))
    if missing is None:
        missing = float(np.var(score, ddof=1)) if score.size > 1 else 0.0
    info = max(complete_info - missing, MIN_OBSERVED_SHARE * complete_info)
    ratio = info * prior.width**2
    if not (math.isfinite(ratio) and ratio >= MIN_DATA_TO_PRIOR):
        return Estimate(start, math.nan, start, False, ratio if math.isfinite(ratio) else 0.0)
    phi, phi0 = prior.to_phi(current), prior.to_phi(start)
    step = (float(score.mean()) - (phi - phi0) / prior.width**2) / (
        complete_info + 1.0 / prior.width**2
    )
    phi += min(max(step, -MAX_STEP), MAX_STEP)
    lo, hi = bounds
    value = min(max(prior.from_phi(phi), lo), hi)
    std = prior.derivative(value) / math.sqrt(info + 1.0 / prior.width**2)
    return Estimate(value, std, start, True, ratio)


def pair_members(members: np.ndarray, t: np.ndarray, j: np.ndarray, i: np.ndarray) -> np.ndarray:
    """``(M, K)`` association of the (arrival, source) pairs ``(t_k, j_k, i_k)`` (cycle,
    rank, source) given each trajectory, from ``members (T, M, r, s + 1)`` (the association
    given each of ``M`` smoothed trajectories); the pairs must be recorded arrivals."""
    return np.asarray(members)[t, :, j, i].T.astype(float)


def _pairs(inputs: FitInputs, model: SignalModel, min_weight: float = 1e-3):
    """Source-associated pairs ``k``: their weight ``a_k (K,)``, its value given each
    trajectory ``(M, K)`` (the association given that trajectory, or ``a_k`` without
    ``inputs.members``), residuals ``(M, K)`` against each trajectory and ``(K,)`` against
    the posterior mean."""
    post = np.nan_to_num(np.asarray(inputs.posterior, dtype=float)[:, :, :-1], nan=0.0)
    keep = (post >= min_weight) & np.isfinite(inputs.predicted_mean)[:, None, :]
    t, j, i = np.nonzero(keep)
    toa = np.asarray(inputs.toa, dtype=float)[t, j]
    resid = toa[None, :] - np.asarray(inputs.predicted, dtype=float)[:, t, i]
    if inputs.members is None:
        member = np.broadcast_to(post[t, j, i], resid.shape)
    else:
        member = pair_members(inputs.members, t, j, i)
    return post[t, j, i], member, resid, toa - inputs.predicted_mean[t, i]


def _sigma_step(inputs, model, start, weight, resid, direct) -> Estimate:
    w = weight * direct  # (M, K)
    s2 = model.sigma**2
    ok = np.isfinite(resid)
    score = np.sum(np.where(ok, w * (resid**2 / s2 - 1.0), 0.0), axis=1)
    return _newton("sigma", model.sigma, start.sigma, score, 2.0 * w.sum(axis=1).mean(),
                   (1e-3, 600.0))  # fmt: skip


def _detection_step(inputs: FitInputs, model: SignalModel, start: SignalModel) -> Estimate:
    toa = np.asarray(inputs.toa, dtype=float)
    with_data = (~np.isnan(toa)).any(axis=1)
    censor = inputs.censor(model.window)  # (T,)
    pred = inputs.predicted_mean[with_data]
    active = np.isfinite(pred)
    rho = np.nansum(np.asarray(inputs.posterior, dtype=float)[with_data, :, :-1], axis=1)
    rho = np.clip(rho[active], 0.0, 1.0)
    late = survival(censor[with_data, None] - np.where(active, pred, 0.0), model)[active]
    p = model.p_detect
    # one Newton step on l(p) = sum rho log p + (1 - rho) log(1 - p (1 - S)) in logit p
    gone = 1.0 - late
    miss = 1.0 - p * gone
    score_p = np.sum(rho / p - (1.0 - rho) * gone / miss)
    info_p = np.sum(rho / p**2 + (1.0 - rho) * gone**2 / miss**2)
    jac = p * (1.0 - p)
    return _newton("p_detect", p, start.p_detect, score_p * jac, info_p * jac**2,
                   (1e-3, 1.0 - 1e-6))  # fmt: skip


def _clutter_step(inputs: FitInputs, model: SignalModel, start: SignalModel) -> Estimate:
    toa = np.asarray(inputs.toa, dtype=float)
    with_data = (~np.isnan(toa)).any(axis=1)
    exposure = (inputs.censor(model.window) / model.window)[with_data]
    a_c = np.nan_to_num(np.asarray(inputs.posterior, dtype=float)[with_data, :, -1], nan=0.0)
    lam = max(model.clutter_rate, 1e-6)
    count = float(a_c.sum())
    score = count - lam * float(exposure.sum())
    complete = lam * float(exposure.sum())
    # the association's missing information: the variance of the clutter count
    missing = float(np.sum(a_c * (1.0 - a_c)))
    return _newton("clutter_rate", lam, max(start.clutter_rate, 1e-6), np.array([score]),
                   complete, (1e-6, 100.0), missing)  # fmt: skip


def _multipath_steps(
    model: SignalModel, start: SignalModel, weight: np.ndarray, resid_mean: np.ndarray
) -> tuple[Estimate, Estimate]:
    share = np.clip(model.multipath, 1e-4, 0.5)
    probe = replace(model, multipath=share)
    delayed = weight * (1.0 - direct_path_share(resid_mean, probe))
    total = float(weight.sum())
    score = float(delayed.sum()) - share * total
    share_est = _newton("multipath", share, max(start.multipath, 1e-4), np.array([score]),
                        total * share * (1.0 - share), (1e-4, 0.5))  # fmt: skip
    mu, s = probe.multipath_delay, probe.sigma
    mean = resid_mean - s * s / mu
    expected_delay = mean + s * _mills(mean / s)
    n_delayed = float(delayed.sum())
    delay_score = float(np.sum(delayed * (expected_delay / mu - 1.0)))
    delay_est = _newton("multipath_delay", mu, start.multipath_delay, np.array([delay_score]),
                        n_delayed, (s / 1000.0, 600.0))  # fmt: skip
    return share_est, delay_est


def _correlation_steps(
    inputs: FitInputs, current: CorrelationModel, start: CorrelationModel
) -> dict[str, Estimate]:
    """The four components' M-steps (module docstring) from the heights of the recorded
    arrivals, weighed by the clutter posterior ``a`` and ``1 - a``."""
    x = log_heights(inputs.correlation)
    a_c = np.asarray(inputs.posterior, dtype=float)[:, :, -1]
    use = np.isfinite(x) & np.isfinite(a_c)
    x, a_c = x[use], np.clip(a_c[use], 0.0, 1.0)
    bernoulli = a_c * (1.0 - a_c)
    out = {}
    for part, weight in (("source", 1.0 - a_c), ("clutter", a_c)):
        mean_name, spread_name = f"correlation_{part}_mean", f"correlation_{part}_spread"
        mu = getattr(current, f"{part}_mean")
        s = getattr(current, f"{part}_spread")
        g_mean = (x - mu) / s**2
        out[mean_name] = _newton(
            mean_name, mu, getattr(start, f"{part}_mean"),
            np.array([float(np.sum(weight * g_mean))]), float(weight.sum()) / s**2,
            (-1e3, 1e3), float(np.sum(bernoulli * g_mean**2)),
        )  # fmt: skip
        g_spread = (x - mu) ** 2 / s**2 - 1.0
        out[spread_name] = _newton(
            spread_name, s, getattr(start, f"{part}_spread"),
            np.array([float(np.sum(weight * g_spread))]), 2.0 * float(weight.sum()),
            (MIN_CORRELATION_SPREAD, 10.0), float(np.sum(bernoulli * g_spread**2)),
        )  # fmt: skip
    return out


def _mills(x: np.ndarray) -> np.ndarray:
    """``phi(x) / Phi(x)`` computed without overflow (``E[Z | Z > -x] = x + phi/Phi`` gives the
    mean of a normal truncated at zero)."""
    return np.exp(-0.5 * x * x - special.log_ndtr(x)) / math.sqrt(2.0 * math.pi)


def _process_noise_step(inputs: FitInputs, q: float, start: float) -> Estimate:
    steps = np.asarray(inputs.steps_km, dtype=float)  # (M, n, 2)
    dt = np.asarray(inputs.dt, dtype=float)
    sq = np.sum(steps**2, axis=2) / dt  # (M, n)
    score = np.sum(sq / q**2 - 2.0, axis=1)
    return _newton("process_noise", q, start, score, 4.0 * dt.size, (0.01, 200.0))


def off_the_model(start: StatisticalModel) -> set[str]:
    """The :data:`STATISTICAL_PARAMS` names whose starting value leaves them out of the model
    and which are therefore never estimated: ``pd`` at ``P_D = 1`` (nothing is lost),
    ``clutter`` at ``lambda = 0``, ``multipath`` at ``P_M = 0`` (the model of eq. 5.66
    without them, chosen by the settings), ``correlation`` without heights (a record
    without usable ``correlation``)."""
    signal = start.signal
    return {
        name
        for name, off in (
            ("pd", signal.p_detect >= 1.0),
            ("clutter", signal.clutter_rate <= 0.0),
            ("multipath", signal.multipath <= 0.0),
            ("correlation", start.correlation is None),
        )
        if off
    }


def fit_statistics(
    inputs: FitInputs,
    current: StatisticalModel,
    start: StatisticalModel,
    params: Iterable[str],
) -> StatisticalModel:
    """One M-step of the statistical parameters named by ``params`` (keys of
    :data:`STATISTICAL_PARAMS`) from ``current``, with priors centred on ``start``'s values;
    the others keep ``current``'s values, and so do those :func:`off_the_model` leaves out.
    Returns the new model with an :class:`Estimate` per parameter fitted (``estimated``
    False and the start value where the record cannot determine it). With the Lagrangian
    motion (``current.motion``) ``process-noise`` names its parameters, which
    :func:`~rankmodels.tracking.motion_fit.fit_model_motion` fits."""
    params = set(params)
    unknown = params - set(STATISTICAL_PARAMS)
    if unknown:
        raise ValueError(f"unknown statistical parameters {sorted(unknown)}")
    params -= off_the_model(start)
    model = current.signal
    weight, member, resid, resid_mean = _pairs(inputs, model)
    direct = direct_path_share(resid, model)
    out: dict[str, Estimate] = {}
    if "sigma" in params:
        out["sigma"] = _sigma_step(inputs, model, start.signal, member, resid, direct)
    if "pd" in params:
        out["p_detect"] = _detection_step(inputs, model, start.signal)
    if "clutter" in params:
        out["clutter_rate"] = _clutter_step(inputs, model, start.signal)
    if "multipath" in params:
        out["multipath"], out["multipath_delay"] = _multipath_steps(
            model, start.signal, weight, resid_mean
        )
    if "process-noise" in params and current.motion is None:
        out["process_noise"] = _process_noise_step(
            inputs, current.process_noise, start.process_noise
        )
    correlation = current.correlation
    if "correlation" in params and correlation is not None and inputs.correlation is not None:
        fitted = _correlation_steps(inputs, correlation, start.correlation)
        out.update(fitted)
        correlation = CorrelationModel(
            **{CORRELATION_FIELDS[name]: est.value for name, est in fitted.items()}
        )
    values = {name: est.value for name, est in out.items() if name not in CORRELATION_FIELDS}
    q = values.pop("process_noise", current.process_noise)
    return replace(current, signal=replace(model, **values), process_noise=q,
                   estimates=tuple(out.items()), correlation=correlation)  # fmt: skip
