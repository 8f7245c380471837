"""Track quality checks computed from the data alone (no truth).

A track can be confidently wrong: after losing the float the filter may lock onto a position
that explains a few arrivals, call the rest clutter and report tight uncertainty bands. These
checks compare what the tracker saw with what its own (fitted) model predicts. Each check's
threshold is derived for the record at hand from that model and the amount of data: the
``1 - alpha`` quantile of the statistic's sampling law under the model (``alpha`` the check's
stated false-alarm probability, :attr:`CheckSpec.false_alarm`), with the model's expected
spread widened by a stated allowance for model error (:attr:`CheckSpec.allowance`). A check
passes when ``value <= threshold`` (reasoning in ``docs/tracking.md``, "Track quality checks";
measurements in ``docs/validation.md``):

``recovery_distance``
    Mahalanobis distance ``d = sqrt(D^T S^-1 D)`` between the recovery fix and the forward
    filter's prediction of it: ``D`` the (east, north) offset (km) of the fix from the filtered
    mean at the last cycle, ``S = C_T + (q^2 dt + s_r^2) I_2`` the filtered covariance ``C_T``
    grown by the random walk over the ``dt`` days to the surfacing (eq. 5.1) and the fix's own
    error. Under the model ``d^2 ~ chi^2_2``, ``P(d > x) = exp(-x^2 / 2)``: threshold
    ``sqrt(-2 ln alpha)``. The filter never saw the fix, so this is an honest out-of-sample
    test of the whole forward track. Mid-record position fixes are different: the filter
    conditions on each, so none of them is a test; a record whose last fix is mid-record
    (a float lost under ice) has no recovery fix and the check is not computed.
``launch_distance``
    The same distance for the launch fix, predicted from the first cycles alone: ``D`` the
    offset of the launch fix from the mean ``m_0`` of the first cycle's position given the
    cycles within :data:`~rankmodels.tracking.launch.WINDOW_DAYS` of the launch, filtered
    backwards in time from a diffuse start (:func:`~rankmodels.tracking.launch.first_position`:
    the tracker's own filter starts at the launch fix and so cannot test it), ``S = C_0 + (q^2
    dt_0 + s^2 + a^2) I_2`` with ``C_0`` that posterior's covariance, the random walk over the
    ``dt_0`` days from the launch to the first cycle, the fix's error ``s`` and an allowance
    ``a`` km for the float's first days departing from the random walk; threshold ``sqrt(-2 ln
    alpha)``. The backward filter uses the arrivals only (not the mid-record fixes), so the
    launch fix stays tested against the arrivals alone. Not computed with fewer than
    :data:`MIN_LAUNCH_CYCLES` cycles with arrivals in that window.
``clutter_excess``
    Posterior share of the arrivals that are clutter (``sum_j P(R_j = C | data) / n``) over the
    share the model expects of recorded arrivals at the predicted positions, ``e = sum_t E[C_t]
    / sum_t E[min(N_t, r)]`` over cycles with arrivals (:func:`expected_recorded`). Threshold
    (:func:`count_ratio_threshold`): the ``1 - alpha`` quantile of ``Poisson((1 + a) mu) /
    mu``, ``mu = n e`` the expected clutter count, ``a`` the allowance. (The posterior clutter
    mass is the conditional mean of the true count, so its upper tail is no heavier than the
    count's; the recorded count is bounded by the ranks, so no heavier than Poisson.)
``clutter_window``
    The same comparison over every stretch of consecutive cycles with arrivals (lengths 1, 2,
    4, 8, ...; all starts): the value is ``-log10`` of the smallest upper tail probability
    ``P(Poisson((1 + a) mu_W) >= c_W)`` of a stretch's posterior clutter mass ``c_W`` given its
    expected count ``mu_W = sum_{t in W} E[C_t]`` (continuous in ``c_W``: the regularised
    incomplete gamma function), the threshold ``-log10(alpha / m)`` for ``m`` stretches scanned
    (Bonferroni). A record-wide share can be absorbed by a fitted clutter rate; a stretch where
    every arrival is called clutter (the float not yet found after a wrong launch position,
    or lost mid-record) cannot.
``innovation_rms``
    Root mean square of the normalised innovations ``z = (T_j - mu_i) / sqrt(sigma^2 + v_i)``
    of the arrivals, each (arrival, source) pair weighted by ``w_ji = P(R_j = i | data) P(direct
    | T_j - pred_i)``: the association posterior times the direct path's share of the arrival
    density (:func:`~rankmodels.tracking.arrival_density.direct_path_share`, at the TOA
    ``pred_i`` predicted from the posterior mean position). ``mu_i``, ``v_i`` are the mean and
    variance of source ``i``'s noiseless TOA predicted from the data before the arrival's cycle.
    For direct arrivals ``z ~ N(0, 1)`` and a posterior-weighted sum has the expectation of
    the sum over the true direct arrivals, so the model expects ``E[RMS^2] = 1``; a multipath
    arrival (delayed by tens of seconds) is not Gaussian about ``mu_i`` and is left out, as is
    clutter. Threshold (:func:`rms_threshold`): ``sqrt((1 + a) chi^2_{n_eff}(1 - alpha) /
    n_eff)``, ``n_eff = (sum w)^2 / sum_t sum_{i,k} W_ti W_tk rho_tik^2`` (``W_ti`` source
    ``i``'s weight in cycle ``t``, ``rho_tik`` the predictive correlation of sources ``i`` and
    ``k``'s TOAs, which share the position error), the number of independent ``chi^2_1``
    variates whose mean has the same variance.
``unassociated_run``
    Longest run of consecutive cycles without an arrival attributed to a source with posterior
    probability ``>= CONFIDENT`` (cycles without arrivals count): over such a run the position
    rests on the random walk alone. A physical limit, not a sampling one: at most
    :data:`MAX_RUN` cycles.

Checks that need data the record lacks (no recovery fix; too few arrivals) are *not computed*
(``passed is None``) and say why, rather than passing silently.

Shapes: ``T`` cycles, ``r`` ranks, ``s`` sources; ``toa (T, r)``, ``association_posterior
(T, r, s + 1)`` (column ``s`` = clutter, NaN rows where no arrival), ``predicted_mean (T, s)``
and ``predicted_cov (T, s, s)``: the sources' noiseless TOAs predicted from the earlier cycles
(NaN for inactive sources), ``smoothed_toa (T, s)``: the TOAs predicted at the posterior mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import gammainc, ndtr

from rankmodels.tracking.arrival_density import direct_path_share
from rankmodels.tracking.distributions import chi2_ppf, poisson_cdf, poisson_ppf
from rankmodels.tracking.geometry import tangent_offsets
from rankmodels.tracking.launch import WINDOW_DAYS
from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "CHECKS",
    "CONFIDENT",
    "MAX_RUN",
    "CheckSpec",
    "EndPoint",
    "MIN_LAUNCH_CYCLES",
    "QualityCheck",
    "QualityInputs",
    "StartPoint",
    "count_ratio_threshold",
    "chi2_2_threshold",
    "expected_recorded",
    "quality_checks",
    "quality_from_track",
    "quality_variables",
    "rms_threshold",
    "scan_threshold",
    "window_surprise",
]

#: Posterior probability from which an arrival counts as confidently associated.
CONFIDENT = 0.9
#: Longest run of cycles without a confident association ``unassociated_run`` accepts: over
#: 30 days the random walk alone spreads the position by ``q sqrt(30)`` per axis (22-44 km at
#: ``q = 4-8`` km/day), several times the tracking accuracy, and a filter picking the float
#: up again can lock onto a wrong position that fits the same TOAs.
MAX_RUN = 30
#: Fewest cycles with arrivals within :data:`~rankmodels.tracking.launch.WINDOW_DAYS` of the
#: launch for ``launch_distance`` (fewer cannot place the float without the launch fix).
MIN_LAUNCH_CYCLES = 5
#: ``launch_distance``'s allowance ``a`` (km per axis) for where the float starts departing
#: from the random walk from the fix: a float drifts while it sinks, eddies carry it for days
#: (not a white walk), one cycle's mis-associated arrivals move the edge of a filter, and the
#: simulator's spiral floats start 20 km from their launch fix. Without it 4 of 100 intact
#: simulated floats failed (up to 5.75), with it none (up to 3.72) while all 40 with the
#: launch 100 km off still fail (from 4.39; ``docs/validation.md``, "Quality checks on varied
#: worlds").
LAUNCH_ALLOWANCE_KM = 10.0
#: Fewest model-expected clutter arrivals in the record for ``clutter_excess`` and
#: ``clutter_window`` (below, a count has no power: ``P(Poisson(1) >= 5) = 0.4 %``).
MIN_EXPECTED_CLUTTER = 1.0
#: Fewest (weighted) direct-path source arrivals for ``innovation_rms``.
MIN_MATCHED = 10.0
#: Grid points per listening window in :func:`expected_recorded` (9 s apart in 1800 s: the
#: midpoint rule's error on a Gaussian arrival's CDF is then well under 0.1 s of the window).
GRID = 200
#: Largest ``-log10`` tail probability ``clutter_window`` reports (below ``1e-300`` the
#: probability underflows).
MAX_SURPRISE = 300.0


@dataclass(frozen=True)
class CheckSpec:
    """A check's name, stated false-alarm probability ``false_alarm`` on an intact record
    under the model (None: a physical limit, :data:`MAX_RUN`), model-error ``allowance``
    (relative widening of the model's expected spread or count; for ``launch_distance`` a
    standard deviation in km per axis added to the prediction's; 0 for none) and meaning."""

    name: str
    false_alarm: float | None
    allowance: float
    doc: str


CHECKS: dict[str, CheckSpec] = {
    spec.name: spec
    for spec in (
        CheckSpec(
            "recovery_distance",
            1e-4,
            0.0,
            "distance of the recovery fix from the forward filter's prediction of it, in "
            "predicted standard deviations (Mahalanobis); the threshold 4.29 is exceeded "
            "with probability 1e-4 under the model",
        ),
        CheckSpec(
            "launch_distance",
            1e-4,
            LAUNCH_ALLOWANCE_KM,
            f"distance of the launch fix from where the first {WINDOW_DAYS:g} days' arrivals "
            f"alone (filtered backwards from a diffuse start) put the float at the launch, in "
            f"predicted standard deviations (Mahalanobis, with a {LAUNCH_ALLOWANCE_KM:g} km "
            f"allowance per axis); the threshold 4.29 is exceeded with probability 1e-4 "
            f"under the model",
        ),
        CheckSpec(
            "clutter_excess",
            1e-3,
            0.25,
            "share of the arrivals the posterior calls clutter, over the share the fitted "
            "signal model expects (sigma, P_D, clutter rate, first r recorded); the threshold "
            "is the 99.9 % quantile of the clutter count under the model with a 25 % "
            "allowance on its mean, lower for longer records",
        ),
        CheckSpec(
            "clutter_window",
            1e-3,
            0.25,
            "the most improbable stretch of consecutive cycles: -log10 of the probability "
            "under the model (25 % allowance on the expected count) of at least the clutter "
            "the posterior sees there; the threshold -log10(0.001 / stretches scanned) "
            "corrects for scanning every stretch",
        ),
        CheckSpec(
            "innovation_rms",
            1e-3,
            0.5,
            "RMS of the direct-path arrivals' TOA innovations (recorded minus predicted from "
            "the earlier cycles) in predictive standard deviations; the model expects 1, the "
            "threshold is the 99.9 % quantile of the RMS of that many chi^2_1 variates with "
            "a 50 % allowance on the predictive variance: above, the TOAs scatter or are "
            "biased beyond what sigma and the position allow",
        ),
        CheckSpec(
            "unassociated_run",
            None,
            0.0,
            f"longest run of consecutive cycles without an arrival associated to a source "
            f"with probability >= {CONFIDENT:g} (cycles without arrivals count), at most "
            f"{MAX_RUN}: there the position rests on the random walk alone",
        ),
    )
}
"""The checks, in the order :func:`quality_checks` returns them."""


@dataclass(frozen=True)
class QualityCheck:
    """Outcome of one check: ``value`` (NaN when not computed) against this record's
    ``threshold`` (NaN when not computed); ``passed`` is True, False, or None (not computed);
    ``message`` one line; ``doc`` what the check means."""

    name: str
    value: float
    threshold: float
    passed: bool | None
    message: str
    doc: str

    @property
    def status(self) -> str:
        """``"passed"``, ``"FAILED"`` or ``"not computed"``."""
        return {True: "passed", False: "FAILED", None: "not computed"}[self.passed]


def _result(name: str, value: float, threshold: float, message: str) -> QualityCheck:
    passed = bool(value <= threshold)
    return QualityCheck(name, float(value), float(threshold), passed, message, CHECKS[name].doc)


def _not_computed(name: str, reason: str) -> QualityCheck:
    return QualityCheck(name, math.nan, math.nan, None, f"not computed: {reason}", CHECKS[name].doc)


def count_ratio_threshold(mu: float, alpha: float, allowance: float) -> float:
    """Largest accepted ``count / mu`` for a count expected to be ``mu > 0``: the ``1 -
    alpha`` quantile of ``Poisson((1 + allowance) mu)``, over ``mu``."""
    return poisson_ppf(1.0 - alpha, (1.0 + allowance) * mu) / mu


def rms_threshold(n_eff: float, alpha: float, allowance: float) -> float:
    """Largest accepted RMS of ``n_eff`` standard normal variates whose variance may be
    ``1 + allowance``: ``sqrt((1 + allowance) chi^2_{n_eff}(1 - alpha) / n_eff)``."""
    return math.sqrt((1.0 + allowance) * chi2_ppf(1.0 - alpha, n_eff) / n_eff)


def scan_threshold(alpha: float, scanned: int) -> float:
    """Largest accepted ``-log10`` tail probability of the most improbable of ``scanned``
    stretches: ``-log10(alpha / scanned)`` (Bonferroni: under the model some stretch exceeds
    it with probability at most ``alpha``)."""
    return -math.log10(alpha / scanned)


def window_surprise(count: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``-log10 P(Poisson(mu) >= count)`` (continuous in ``count``: ``P(count, mu)``, the
    regularised lower incomplete gamma function), 0 for ``count <= 0``, at most
    :data:`MAX_SURPRISE`."""
    count, mu = np.broadcast_arrays(np.asarray(count, float), np.asarray(mu, float))
    p = np.ones(count.shape)
    pos = count > 0
    p[pos] = gammainc(count[pos], mu[pos])
    return np.minimum(-np.log10(np.maximum(p, 10.0**-MAX_SURPRISE)), MAX_SURPRISE)


@dataclass(frozen=True)
class EndPoint:
    """A filtered position and the fix it should predict: for ``recovery_distance`` the
    forward filter at the last cycle and the recovery fix, for ``launch_distance`` the
    backward filter at the first cycle and the launch fix.

    ``mean`` (lat, lon), ``cov (2, 2)`` km^2 (east, north) of the filtered posterior;
    ``fix`` (lat, lon); ``extra_var`` km^2 per axis added by the random walk between the
    cycle and the fix and the fix's own error (``q^2 dt + s^2``)."""

    mean: np.ndarray
    cov: np.ndarray
    fix: tuple[float, float]
    extra_var: float


@dataclass(frozen=True)
class StartPoint:
    """What ``launch_distance`` needs: ``cycles`` leading cycles lie within
    :data:`~rankmodels.tracking.launch.WINDOW_DAYS` of the launch, ``with_arrivals`` of them
    have arrivals; ``point`` the backward filter's first cycle and the launch fix (None when
    no cycle was filtered)."""

    cycles: int
    with_arrivals: int
    point: EndPoint | None


@dataclass(frozen=True)
class QualityInputs:
    """What the checks need (shapes in the module docstring); ``model`` the fitted signal
    model; ``times (T,)`` datetime64 for messages; ``end`` None when the record has no
    recovery fix; ``start`` the early cycles' estimate for ``launch_distance``;
    ``fixes_used`` the mid-record position fixes the filter used (none is a test)."""

    toa: np.ndarray
    association_posterior: np.ndarray
    predicted_mean: np.ndarray
    predicted_cov: np.ndarray
    smoothed_toa: np.ndarray
    model: SignalModel
    times: np.ndarray
    end: EndPoint | None
    start: StartPoint
    fixes_used: int = 0

    @property
    def predicted_var(self) -> np.ndarray:
        """``(T, s)`` predictive variance of each source's noiseless TOA (the diagonal)."""
        return np.diagonal(self.predicted_cov, axis1=1, axis2=2)


def _fix_distance(point: EndPoint, allowance_km: float) -> tuple[float, float, float]:
    """Mahalanobis distance ``d = sqrt(D^T S^-1 D)`` of ``point``'s fix from its mean, ``S =
    cov + (extra_var + allowance_km^2) I_2``; also ``|D|`` km and the largest standard
    deviation of ``S`` (km)."""
    east, north = tangent_offsets(point.mean[0], point.mean[1], point.fix[0], point.fix[1])
    offset = np.array([float(east), float(north)])
    extra = point.extra_var + allowance_km**2
    cov = np.asarray(point.cov, dtype=float) + extra * np.eye(2)
    d = math.sqrt(float(offset @ np.linalg.solve(cov, offset)))
    return d, math.hypot(*offset), math.sqrt(float(np.linalg.eigvalsh(cov).max()))


def chi2_2_threshold(alpha: float) -> float:
    """The ``1 - alpha`` quantile of ``d`` with ``d^2 ~ chi^2_2``: ``sqrt(-2 ln alpha)``."""
    return math.sqrt(-2.0 * math.log(alpha))


def recovery_check(end: EndPoint | None, fixes_used: int = 0) -> QualityCheck:
    """``recovery_distance`` (module docstring). Without a recovery fix it is not computed,
    also when the record has mid-record fixes (``fixes_used``): the filter used them, so
    none can test it out of sample."""
    name = "recovery_distance"
    if end is None:
        used = (
            f" (its {fixes_used} position fix{'es' if fixes_used > 1 else ''} "
            "went into the filter, so none can test it)"
            if fixes_used
            else ""
        )
        return _not_computed(name, f"no recovery fix in the record{used}")
    d, km, spread = _fix_distance(end, CHECKS[name].allowance)
    return _result(
        name,
        d,
        chi2_2_threshold(CHECKS[name].false_alarm),
        f"the recovery fix is {km:.1f} km from the filtered end point, {d:.2f} predicted "
        f"standard deviations (largest {spread:.1f} km)",
    )


def launch_check(start: StartPoint, spec: CheckSpec | None = None) -> QualityCheck:
    """``launch_distance`` (module docstring); ``spec`` overrides the false-alarm probability
    and allowance of :data:`CHECKS` (for measuring them)."""
    name = "launch_distance"
    spec = spec or CHECKS[name]
    if start.point is None or start.with_arrivals < MIN_LAUNCH_CYCLES:
        return _not_computed(
            name,
            f"{start.with_arrivals} of the {start.cycles} cycles within {WINDOW_DAYS:g} days "
            f"of the launch have arrivals (needs at least {MIN_LAUNCH_CYCLES})",
        )
    d, km, spread = _fix_distance(start.point, spec.allowance)
    return _result(
        name,
        d,
        chi2_2_threshold(spec.false_alarm),
        f"the launch fix is {km:.1f} km from where the arrivals of the first {start.cycles} "
        f"cycles put the float at the launch, {d:.2f} predicted standard deviations "
        f"(largest {spread:.1f} km)",
    )


def _source_prob_before(
    u: np.ndarray, mean: np.ndarray, sd: np.ndarray, p_detect: float
) -> np.ndarray:
    """``(..., G, s)``: P(source detected and arrived in ``[0, u]``) for grid ``u (G,)`` and
    per-source ``mean``, ``sd (..., s)`` (NaN mean = inactive: probability 0)."""
    active = np.isfinite(mean)
    mu = np.where(active, mean, 0.0)[..., None, :]
    sd = np.where(active, sd, 1.0)[..., None, :]
    p = ndtr((u[:, None] - mu) / sd) - ndtr(-mu / sd)
    return np.where(active[..., None, :], p_detect * p, 0.0)


def _count_below(p: np.ndarray, r: int) -> np.ndarray:
    """``(..., r)``: ``P(K = k)``, ``k < r``, of ``K`` = number of successes of independent
    Bernoullis with probabilities ``p (..., s)`` (Poisson-binomial, truncated)."""
    dist = np.zeros((r, *p.shape[:-1]))
    dist[0] = 1.0
    for i in range(p.shape[-1]):
        q = p[..., i]
        for k in range(r - 1, 0, -1):  # P(K = k) after source i, from the highest k down
            dist[k] += q * (dist[k - 1] - dist[k])
        dist[0] *= 1.0 - q
    return np.moveaxis(dist, 0, -1)


def _fewer_than(sources: np.ndarray, clutter_mean: np.ndarray | float, n: int) -> np.ndarray:
    """``P(K + C < n)`` with ``K ~ sources (..., r)`` (count distribution truncated to
    ``r >= n`` values) and independent ``C ~ Poisson(clutter_mean)`` (broadcast against
    ``sources[..., 0]``)."""
    k = np.arange(n)
    c_cdf = poisson_cdf(n - 1 - k, np.asarray(clutter_mean)[..., None])
    return np.sum(sources[..., :n] * c_cdf, axis=-1)


def expected_recorded(
    predicted_mean: np.ndarray, predicted_sd: np.ndarray, model: SignalModel, r: int
) -> tuple[np.ndarray, np.ndarray]:
    """Expected recorded clutter ``E[C_t]`` and recorded arrivals ``E[min(N_t, r)]`` ``(T,)``.

    Under the signal model (module :mod:`~rankmodels.tracking.signal_model`) source ``i``
    arrives in ``[0, u]`` with probability ``p_i(u) = P_D (Phi((u - mu_i) / sd_i) -
    Phi(-mu_i / sd_i))`` and clutter is Poisson with rate ``lambda / W`` on ``[0, W]``. A clutter
    arrival at ``u`` is recorded when fewer than ``r`` others came before it; by the Poisson
    (Palm) property the other clutter before ``u`` is ``Poisson(lambda u / W)``, so

        E[C] = (lambda / W) int_0^W P(K(u) + Poisson(lambda u / W) < r) du,
        E[min(N, r)] = sum_{k < r} P(K(W) + Poisson(lambda) > k),

    with ``K(u)`` the Poisson-binomial count of sources arrived by ``u``; the integral is a
    midpoint rule on :data:`GRID` points. ``predicted_mean``, ``predicted_sd (T, s)`` (NaN =
    inactive source).
    """
    window, lam = model.window, model.clutter_rate
    u = (np.arange(GRID) + 0.5) * (window / GRID)
    below = _count_below(_source_prob_before(u, predicted_mean, predicted_sd, model.p_detect), r)
    clutter = lam * _fewer_than(below, lam * u / window, r).mean(axis=-1)
    at_end = _count_below(
        _source_prob_before(np.array([window]), predicted_mean, predicted_sd, model.p_detect), r
    )[..., 0, :]
    total = sum(1.0 - _fewer_than(at_end, lam, k + 1) for k in range(r))
    return clutter, np.asarray(total)


def _expected_clutter(
    inputs: QualityInputs, with_data: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`expected_recorded` at the one-step predictions of the cycles ``with_data``."""
    sd = np.sqrt(inputs.model.sigma**2 + inputs.predicted_var[with_data])
    return expected_recorded(
        inputs.predicted_mean[with_data], sd, inputs.model, inputs.toa.shape[1]
    )


def clutter_check(inputs: QualityInputs, spec: CheckSpec | None = None) -> QualityCheck:
    """``clutter_excess`` (module docstring); ``spec`` overrides the false-alarm probability and
    allowance of :data:`CHECKS` (for measuring them)."""
    name = "clutter_excess"
    spec = spec or CHECKS[name]
    if inputs.model.clutter_rate == 0:
        return _not_computed(name, "the model has no clutter (clutter rate 0)")
    recorded = ~np.isnan(inputs.toa)
    n = int(recorded.sum())
    clutter, total = _expected_clutter(inputs, recorded.any(axis=1))
    expected_share = float(clutter.sum() / total.sum()) if total.sum() > 0 else math.nan
    mu = n * expected_share
    if not mu >= MIN_EXPECTED_CLUTTER:
        return _not_computed(
            name,
            f"{n} arrival{'' if n == 1 else 's'}, the model expects {mu:.1f} of them to be "
            f"clutter (needs at least {MIN_EXPECTED_CLUTTER:g})",
        )
    observed = float(np.sum(inputs.association_posterior[..., -1][recorded])) / n
    ratio = observed / expected_share
    threshold = count_ratio_threshold(mu, spec.false_alarm, spec.allowance)
    return _result(
        name,
        ratio,
        threshold,
        f"the posterior calls {100 * observed:.1f} % of the {n} arrivals clutter, "
        f"{ratio:.2f} times the {100 * expected_share:.1f} % the model expects "
        f"({mu:.1f} arrivals; up to {threshold:.2f} times is accepted)",
    )


def _window_lengths(n: int) -> np.ndarray:
    """Stretch lengths scanned by ``clutter_window``: 1, 2, 4, ... up to ``n``."""
    return 2 ** np.arange(int(math.log2(n)) + 1)


def window_check(inputs: QualityInputs, spec: CheckSpec | None = None) -> QualityCheck:
    """``clutter_window`` (module docstring); ``spec`` overrides the false-alarm probability and
    allowance of :data:`CHECKS` (for measuring them)."""
    name = "clutter_window"
    spec = spec or CHECKS[name]
    if inputs.model.clutter_rate == 0:
        return _not_computed(name, "the model has no clutter (clutter rate 0)")
    recorded = ~np.isnan(inputs.toa)
    with_data = recorded.any(axis=1)
    cycles = np.flatnonzero(with_data)
    if cycles.size == 0:
        return _not_computed(name, "no arrivals")
    clutter, _ = _expected_clutter(inputs, with_data)
    if not clutter.sum() >= MIN_EXPECTED_CLUTTER:
        return _not_computed(
            name,
            f"the model expects {clutter.sum():.1f} clutter arrivals in the record "
            f"(needs at least {MIN_EXPECTED_CLUTTER:g})",
        )
    mu = (1.0 + spec.allowance) * clutter
    seen = np.nansum(inputs.association_posterior[with_data, :, -1], axis=1)
    arrivals = recorded[with_data].sum(axis=1)
    cum = [np.concatenate([[0.0], np.cumsum(x)]) for x in (seen, mu, arrivals)]
    best = (-1.0, 0, 0)  # surprise, start, length
    scanned = 0
    for length in _window_lengths(cycles.size):
        c_w, mu_w = (x[length:] - x[:-length] for x in cum[:2])
        surprise = window_surprise(c_w, mu_w)
        k = int(np.argmax(surprise))
        scanned += surprise.size
        if surprise[k] > best[0]:
            best = (float(surprise[k]), k, int(length))
    value, k, length = best
    threshold = scan_threshold(spec.false_alarm, scanned)
    first, last = cycles[k], cycles[k + length - 1]
    c_w, mu_w, n_w = (x[k + length] - x[k] for x in cum)
    day = np.datetime_as_string(inputs.times[[first, last]], unit="D")
    return _result(
        name,
        value,
        threshold,
        f"cycles {first} .. {last} ({day[0]} .. {day[1]}): the posterior calls {c_w:.1f} of "
        f"{n_w:.0f} arrivals clutter where the model expects at most {mu_w:.1f}, probability "
        f"10^-{value:.1f} ({scanned} stretches scanned: up to 10^-{threshold:.1f} is accepted)",
    )


def innovation_weights(inputs: QualityInputs) -> np.ndarray:
    """``(T, r, s)`` weights ``P(R_j = i | data) P(direct | T_j - pred_i)`` of
    ``innovation_rms`` (0 where no arrival or inactive source)."""
    post = np.nan_to_num(inputs.association_posterior[..., :-1])
    if inputs.model.multipath == 0:
        return post
    resid = inputs.toa[..., None] - inputs.smoothed_toa[:, None, :]
    return post * direct_path_share(resid, inputs.model)


def innovation_check(inputs: QualityInputs, spec: CheckSpec | None = None) -> QualityCheck:
    """``innovation_rms`` (module docstring); ``spec`` overrides the false-alarm probability and
    allowance of :data:`CHECKS` (for measuring them)."""
    name = "innovation_rms"
    spec = spec or CHECKS[name]
    weight = innovation_weights(inputs)  # (T, r, s)
    total = float(weight.sum())
    if not total >= MIN_MATCHED:
        return _not_computed(
            name,
            f"{total:.1f} direct-path arrivals matched to sources (needs at least {MIN_MATCHED:g})",
        )
    active = np.isfinite(inputs.predicted_mean)
    mu = np.where(active, inputs.predicted_mean, 0.0)
    cov = np.nan_to_num(inputs.predicted_cov)
    s2 = inputs.model.sigma**2
    var = s2 + np.diagonal(cov, axis1=1, axis2=2)  # (T, s)
    z2 = np.nan_to_num((inputs.toa[..., None] - mu[:, None, :]) ** 2 / var[:, None, :])
    rms = math.sqrt(float(np.sum(weight * z2)) / total)
    # variance of sum w z^2: 2 sum_t W_t^T (rho_t o rho_t) W_t, rho_t the TOAs' correlations
    rho = (cov + s2 * np.eye(cov.shape[1])) / np.sqrt(var[:, :, None] * var[:, None, :])
    per_source = weight.sum(axis=1)  # (T, s)
    n_eff = total**2 / float(np.einsum("ti,tik,tk->", per_source, rho**2, per_source))
    threshold = rms_threshold(n_eff, spec.false_alarm, spec.allowance)
    return _result(
        name,
        rms,
        threshold,
        f"the {total:.0f} direct-path arrivals matched to sources miss their predicted TOAs "
        f"by {rms:.2f} predictive standard deviations (RMS; the model expects 1; "
        f"{n_eff:.0f} independent-equivalent: up to {threshold:.2f} is accepted)",
    )


def _longest_run(mask: np.ndarray) -> tuple[int, int]:
    """Length and start of the longest run of True in ``mask`` (0, 0 when none)."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if starts.size == 0:
        return 0, 0
    k = int(np.argmax(stops - starts))
    return int(stops[k] - starts[k]), int(starts[k])


def run_check(inputs: QualityInputs) -> QualityCheck:
    """``unassociated_run`` (module docstring)."""
    name = "unassociated_run"
    source_prob = np.nan_to_num(inputs.association_posterior[..., :-1], nan=0.0)
    confident = (source_prob >= CONFIDENT).any(axis=(1, 2))
    length, start = _longest_run(~confident)
    if length == 0:
        return _result(name, 0, MAX_RUN, "every cycle has a confidently associated arrival")
    day = np.datetime_as_string(inputs.times[[start, start + length - 1]], unit="D")
    return _result(
        name,
        length,
        MAX_RUN,
        f"{length} consecutive cycles ({start} .. {start + length - 1}, {day[0]} .. {day[1]}) "
        f"without an arrival associated to a source with probability >= {CONFIDENT:g}",
    )


def quality_checks(inputs: QualityInputs) -> tuple[QualityCheck, ...]:
    """All checks of :data:`CHECKS`, in that order."""
    return (
        recovery_check(inputs.end, inputs.fixes_used),
        launch_check(inputs.start),
        clutter_check(inputs),
        window_check(inputs),
        innovation_check(inputs),
        run_check(inputs),
    )


_PASSED_CODE = {True: 1, False: 0, None: -1}


def quality_variables(checks: tuple[QualityCheck, ...]) -> xr.Dataset:
    """The checks as ``track.nc`` variables on dim ``quality_check`` (coordinate: the names):
    ``quality_value``, ``quality_threshold``, ``quality_passed`` (1 passed, 0 failed, -1 not
    computed), ``quality_message``, ``quality_description``."""
    dim = "quality_check"
    return xr.Dataset(
        {
            "quality_value": (
                dim,
                np.array([c.value for c in checks], dtype=float),
                {"long_name": "value of the check's statistic"},
            ),
            "quality_threshold": (
                dim,
                np.array([c.threshold for c in checks], dtype=float),
                {"long_name": "threshold the statistic is compared with"},
            ),
            "quality_passed": (
                dim,
                np.array([_PASSED_CODE[c.passed] for c in checks], dtype=np.int8),
                {"long_name": "1 passed, 0 failed, -1 not computed"},
            ),
            "quality_message": (dim, np.array([c.message for c in checks], dtype=object)),
            "quality_description": (dim, np.array([c.doc for c in checks], dtype=object)),
        },
        coords={dim: (dim, np.array([c.name for c in checks], dtype=object))},
    )


def quality_from_track(track: xr.Dataset) -> tuple[QualityCheck, ...]:
    """The checks stored in a track (:func:`quality_variables`); empty when it has none."""
    if "quality_passed" not in track:
        return ()
    passed = {code: flag for flag, code in _PASSED_CODE.items()}
    return tuple(
        QualityCheck(
            name=str(name),
            value=float(value),
            threshold=float(threshold),
            passed=passed[int(code)],
            message=str(message),
            doc=str(doc),
        )
        for name, value, threshold, code, message, doc in zip(
            track["quality_check"].values,
            track["quality_value"].values,
            track["quality_threshold"].values,
            track["quality_passed"].values,
            track["quality_message"].values,
            track["quality_description"].values,
            strict=True,
        )
    )
