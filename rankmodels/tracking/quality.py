"""Track quality checks computed from the data alone (no truth).

A track can be confidently wrong: after losing the float the filter may lock onto a position
that explains a few arrivals, call the rest clutter and report tight uncertainty bands. These
checks compare what the tracker saw with what its own model predicts; each has a threshold
chosen from the model (reasoning in ``docs/tracking.md``, "Track quality checks"):

``recovery_distance``
    Mahalanobis distance ``d = sqrt(D^T S^-1 D)`` between the recovery fix and the forward
    filter's prediction of it: ``D`` the (east, north) offset (km) of the fix from the filtered
    mean at the last cycle, ``S = C_T + (q^2 dt + s_r^2) I_2`` the filtered covariance ``C_T``
    grown by the random walk over the ``dt`` days to the surfacing (eq. 5.1) and the fix's own
    error. Under the model ``d^2 ~ chi^2_2``, ``P(d > x) = exp(-x^2 / 2)``. The filter never
    saw the fix, so this is an honest out-of-sample test of the whole forward track.
``clutter_excess``
    Posterior share of the arrivals that are clutter (``sum_j P(R_j = C | data) / n``) over the
    share the model expects of recorded arrivals at the predicted positions, ``sum_t E[C_t] /
    sum_t E[min(N_t, r)]`` over cycles with arrivals (:func:`expected_recorded`).
``innovation_rms``
    Root mean square of the normalised innovations ``z = (T_j - mu_i) / sqrt(sigma^2 + v_i)``
    of the arrivals, each source ``i`` weighted by ``P(R_j = i | data)``; ``mu_i``, ``v_i`` are
    the mean and variance of source ``i``'s noiseless TOA (eq. 5.66) predicted from the data
    before the arrival's cycle. For correctly associated arrivals ``z ~ N(0, 1)``; the clutter
    alternative absorbs the far tails, so the model expects an RMS of at most 1.
``unassociated_run``
    Longest run of consecutive cycles without an arrival attributed to a source with posterior
    probability ``>= CONFIDENT`` (cycles without arrivals count): over such a run the position
    rests on the random walk alone.

Checks that need data the record lacks (no recovery fix; too few arrivals) are *not computed*
(``passed is None``) and say why, rather than passing silently.

Shapes: ``T`` cycles, ``r`` ranks, ``s`` sources; ``toa (T, r)``, ``association_posterior
(T, r, s + 1)`` (column ``s`` = clutter, NaN rows where no arrival), ``predicted_mean`` and
``predicted_var (T, s)``: each source's noiseless TOA predicted from the earlier cycles (NaN
for inactive sources).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import ndtr
from scipy.stats import poisson

from rankmodels.tracking.geometry import tangent_offsets
from rankmodels.tracking.signal_model import SignalModel

__all__ = [
    "CHECKS",
    "CONFIDENT",
    "EndPoint",
    "QualityCheck",
    "QualityInputs",
    "expected_recorded",
    "quality_checks",
    "quality_from_track",
    "quality_variables",
]

#: Posterior probability from which an arrival counts as confidently associated.
CONFIDENT = 0.9
#: Fewest model-expected clutter arrivals for ``clutter_excess`` (Poisson noise of the count
#: is then at most a third of it, so a doubling is significant).
MIN_EXPECTED_CLUTTER = 10.0
#: Fewest (posterior-weighted) source arrivals for ``innovation_rms``.
MIN_MATCHED = 50.0
#: Grid points per listening window in :func:`expected_recorded` (9 s apart in 1800 s: the
#: midpoint rule's error on a Gaussian arrival's CDF is then well under 0.1 s of the window).
GRID = 200


@dataclass(frozen=True)
class CheckSpec:
    """A check's name, threshold (the check passes when ``value <= threshold``) and meaning."""

    name: str
    threshold: float
    doc: str


CHECKS: dict[str, CheckSpec] = {
    spec.name: spec
    for spec in (
        CheckSpec(
            "recovery_distance",
            math.sqrt(-2.0 * math.log(1e-4)),
            "distance of the recovery fix from the forward filter's prediction of it, in "
            "predicted standard deviations (Mahalanobis); above 4.29 has probability 1e-4 "
            "under the model",
        ),
        CheckSpec(
            "clutter_excess",
            2.0,
            "share of the arrivals the posterior calls clutter, over the share the signal "
            "model expects (sigma, P_D, clutter rate, first r recorded); above 2 the model "
            "explains far fewer arrivals than it should",
        ),
        CheckSpec(
            "innovation_rms",
            1.1,
            "RMS of the arrivals' TOA innovations (recorded minus predicted from the earlier "
            "cycles) in predictive standard deviations; the model expects at most 1: above, "
            "the TOAs scatter or are biased beyond what sigma and the position allow",
        ),
        CheckSpec(
            "unassociated_run",
            30.0,
            f"longest run of consecutive cycles without an arrival associated to a source "
            f"with probability >= {CONFIDENT:g} (cycles without arrivals count); there the "
            "position rests on the random walk alone",
        ),
    )
}
"""The checks, in the order :func:`quality_checks` returns them."""


@dataclass(frozen=True)
class QualityCheck:
    """Outcome of one check: ``value`` (NaN when not computed) against ``threshold``;
    ``passed`` is True, False, or None (not computed); ``message`` one line; ``doc`` what the
    check means."""

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


def _result(name: str, value: float, message: str) -> QualityCheck:
    spec = CHECKS[name]
    passed = bool(value <= spec.threshold)
    return QualityCheck(name, float(value), spec.threshold, passed, message, spec.doc)


def _not_computed(name: str, reason: str) -> QualityCheck:
    spec = CHECKS[name]
    return QualityCheck(name, math.nan, spec.threshold, None, f"not computed: {reason}", spec.doc)


@dataclass(frozen=True)
class EndPoint:
    """The forward filter at the last cycle and the recovery fix it should predict.

    ``mean`` (lat, lon), ``cov (2, 2)`` km^2 (east, north) of the filtered posterior at the
    last cycle; ``fix`` (lat, lon) of the recovery; ``extra_var`` km^2 per axis added by the
    random walk to the surfacing time and the fix's own error (``q^2 dt + s_r^2``)."""

    mean: np.ndarray
    cov: np.ndarray
    fix: tuple[float, float]
    extra_var: float


@dataclass(frozen=True)
class QualityInputs:
    """What the checks need (shapes in the module docstring); ``times (T,)`` datetime64 for
    messages; ``end`` None when the record has no recovery fix."""

    toa: np.ndarray
    association_posterior: np.ndarray
    predicted_mean: np.ndarray
    predicted_var: np.ndarray
    model: SignalModel
    times: np.ndarray
    end: EndPoint | None


def recovery_check(end: EndPoint | None) -> QualityCheck:
    """``recovery_distance`` (module docstring)."""
    name = "recovery_distance"
    if end is None:
        return _not_computed(name, "no recovery fix in the record")
    east, north = tangent_offsets(end.mean[0], end.mean[1], end.fix[0], end.fix[1])
    offset = np.array([float(east), float(north)])
    cov = np.asarray(end.cov, dtype=float) + end.extra_var * np.eye(2)
    d = math.sqrt(float(offset @ np.linalg.solve(cov, offset)))
    km = math.hypot(*offset)
    spread = math.sqrt(float(np.linalg.eigvalsh(cov).max()))
    return _result(
        name,
        d,
        f"the recovery fix is {km:.1f} km from the filtered end point, {d:.2f} predicted "
        f"standard deviations (largest {spread:.1f} km)",
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
    c_cdf = poisson.cdf(n - 1 - k, np.asarray(clutter_mean)[..., None])
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


def clutter_check(inputs: QualityInputs) -> QualityCheck:
    """``clutter_excess`` (module docstring)."""
    name = "clutter_excess"
    if inputs.model.clutter_rate == 0:
        return _not_computed(name, "the model has no clutter (clutter rate 0)")
    recorded = ~np.isnan(inputs.toa)
    n = int(recorded.sum())
    with_data = recorded.any(axis=1)
    sd = np.sqrt(inputs.model.sigma**2 + inputs.predicted_var[with_data])
    clutter, total = expected_recorded(
        inputs.predicted_mean[with_data], sd, inputs.model, inputs.toa.shape[1]
    )
    expected_share = float(clutter.sum() / total.sum()) if total.sum() > 0 else math.nan
    if not n * expected_share >= MIN_EXPECTED_CLUTTER:
        return _not_computed(
            name,
            f"{n} arrival{'' if n == 1 else 's'}, the model expects {n * expected_share:.1f} "
            "of them to be clutter "
            f"(needs at least {MIN_EXPECTED_CLUTTER:g})",
        )
    observed = float(np.sum(inputs.association_posterior[..., -1][recorded])) / n
    ratio = observed / expected_share
    return _result(
        name,
        ratio,
        f"the posterior calls {100 * observed:.1f} % of the {n} arrivals clutter, "
        f"{ratio:.1f} times the {100 * expected_share:.1f} % the model expects",
    )


def innovation_check(inputs: QualityInputs) -> QualityCheck:
    """``innovation_rms`` (module docstring)."""
    name = "innovation_rms"
    post = np.nan_to_num(inputs.association_posterior[..., :-1])  # (T, r, s)
    active = np.isfinite(inputs.predicted_mean)
    mu = np.where(active, inputs.predicted_mean, 0.0)[:, None, :]
    var = inputs.model.sigma**2 + np.where(active, inputs.predicted_var, 0.0)[:, None, :]
    z2 = np.nan_to_num((inputs.toa[..., None] - mu) ** 2 / var)
    weight = float(post.sum())
    if not weight >= MIN_MATCHED:
        return _not_computed(
            name, f"{weight:.1f} arrivals matched to sources (needs at least {MIN_MATCHED:g})"
        )
    rms = math.sqrt(float(np.sum(post * z2)) / weight)
    return _result(
        name,
        rms,
        f"the {weight:.0f} arrivals matched to sources miss their predicted TOAs by {rms:.2f} "
        "predictive standard deviations (RMS; the model expects at most 1)",
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
        return _result(name, 0, "every cycle has a confidently associated arrival")
    day = np.datetime_as_string(inputs.times[[start, start + length - 1]], unit="D")
    return _result(
        name,
        length,
        f"{length} consecutive cycles ({start} .. {start + length - 1}, {day[0]} .. {day[1]}) "
        f"without an arrival associated to a source with probability >= {CONFIDENT:g}",
    )


def quality_checks(inputs: QualityInputs) -> tuple[QualityCheck, ...]:
    """All checks of :data:`CHECKS`, in that order."""
    return (
        recovery_check(inputs.end),
        clutter_check(inputs),
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
            "quality_value": (dim, np.array([c.value for c in checks], dtype=float)),
            "quality_threshold": (dim, np.array([c.threshold for c in checks], dtype=float)),
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
