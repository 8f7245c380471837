"""Maximum-likelihood fitting of Mallows models and mixtures, on complete and top-k ballots.

Top-k likelihood (exact, not an approximation). A top-``k`` ballot ``tau`` (the voter ranks
``k`` candidates and leaves the rest unranked) is the event "the first ``k`` stages of the
stagewise construction (:mod:`.model`, eq. 1) chose ``tau``", so

    P(tau | W, theta) = exp(-theta D(tau, W) - L_k(theta)),
    D(tau, W) = sum_{r<k} #{y after tau[r] in the ballot (ranked later or unranked):
                           W ranks y above tau[r]},                                   (1)
    L_k(theta) = sum_{r<k} log S_{n-r}(phi)

(:func:`.model.log_stage_normalisers`); a complete ballot is ``k = n`` and (1) is the Kendall
distance. Pairs of unranked candidates do not enter ``D``.

Single model (``fit_mallows``). For any ``theta > 0`` the likelihood is maximised over ``W`` by
minimising ``sum_b w_b D(tau_b, W)``: that is the Kemeny problem on the weighted profile with
unranked candidates tied at the bottom, because the tie convention adds ``1/2`` per tied pair
to *every* ranking's Kemeny cost (a constant). So the centre is
:func:`rankmodels.aggregation.distance.kemeny` -- exact by subset DP on majority components of
up to ``max_exact`` (default 20) candidates, a local-search heuristic above that (then the fit
reports ``exact_centres = False``). Given ``W``, the log-likelihood is concave in ``theta`` and
its maximum solves the moment equation

    (1/N) sum_b w_b D_b = (1/N) sum_b w_b sum_{r<k_b} E_theta[V | n - r]                 (2)

(``E[V | m]`` of :func:`.model.stage_mean`), solved by Brent's method on
``[0, MAX_THETA]``.

Mixtures (``fit_mixture``): EM. E-step responsibilities
``r_bc ~ pi_c P(tau_b | W_c, theta_c)``; M-step ``pi_c = sum_b w_b r_bc / N`` and, per
component, the weighted single-model fit above (centre, then ``theta`` given it; a heuristic
centre is kept only when it lowers the weighted ``D``), so the log-likelihood never decreases.
Each restart starts from k-means++-style centres (ballots drawn with probability proportional
to their count times their distance to the centres already chosen) and hard assignments; the
best of ``restarts`` restarts is returned with its log-likelihood trace. ``BIC = -2 loglik +
p log N`` with ``p = (K - 1) + K + K (n - 1)``: weights, dispersions, and each centre counted as
``n - 1`` free ranks. :func:`select_components` fits ``K = 1..max_components`` and keeps the
smallest BIC.

Ballots with ties among ranked candidates (``A > B = C > D``) have no such likelihood and are
rejected (:class:`rankmodels.errors.InputError` naming the ballot).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from rankmodels.aggregation.distance import kemeny
from rankmodels.aggregation.mallows.model import (
    MAX_THETA,
    Mallows,
    MallowsMixture,
    log_stage_normalisers,
    stage_mean,
)
from rankmodels.aggregation.profile import Profile
from rankmodels.errors import InputError
from rankmodels.permutations import as_permutation

__all__ = [
    "MixtureFit",
    "TopKBallots",
    "fit_mallows",
    "fit_mixture",
    "select_components",
]


@dataclass(frozen=True, eq=False)
class TopKBallots:
    """Unique top-k ballots with counts (build with :meth:`from_profile`).

    ``orders`` ``(m, n)``: each ballot's ranked candidates first, then its unranked ones;
    ``lengths`` ``(m,)``: how many candidates it ranks (``n`` when complete); ``counts`` ``(m,)``.
    """

    candidates: tuple[str, ...]
    orders: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_profile(cls, profile: Profile) -> TopKBallots:
        """The ballots of ``profile``; InputError when one has ties among ranked candidates."""
        n = profile.n
        last = profile.levels[:, -1]
        bottom = np.sum(profile.levels == last[:, None], axis=1)  # size of the last group
        lengths = np.where(bottom > 1, n - bottom, n)
        ranked = np.arange(n)[None, :] < lengths[:, None]
        bad = np.flatnonzero(np.any(ranked & (profile.levels != np.arange(n)), axis=1))
        if bad.size:
            groups = profile.weak_orders()[bad[0]]
            text = ">".join("=".join(profile.candidates[x] for x in g) for g in groups)
            raise InputError(
                "Mallows fitting needs complete or top-k ballots (ties only among the unranked "
                "candidates at the bottom)",
                field=f"ballot {text!r}",
            )
        return cls(profile.candidates, profile.orders, lengths.astype(np.int64), profile.weights)

    @classmethod
    def from_orders(cls, orders: np.ndarray, weights: np.ndarray | None = None) -> TopKBallots:
        """Complete ballots ``(N, n)`` (best first), optional ``(N,)`` weights."""
        return cls.from_profile(Profile.from_orders(orders, weights))

    @property
    def n(self) -> int:
        return len(self.candidates)

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def discordance(self, centre: np.ndarray) -> np.ndarray:
        """``(m,)`` ``D(tau_b, W)`` of eq. (1) for centre ``W``."""
        rank = np.empty(self.n, dtype=np.int64)
        rank[as_permutation(centre, "centre")] = np.arange(self.n)
        return _discordance(self.orders, self.lengths, rank)

    def log_likelihoods(self, model: Mallows) -> np.ndarray:
        """``(m,)`` ``log P(tau_b | model)`` of eq. (1)."""
        L = log_stage_normalisers(self.n, model.theta)
        return -model.theta * self.discordance(model.centre) - L[self.lengths]

    def kemeny_centre(self, weights: np.ndarray) -> tuple[np.ndarray, bool]:
        """Kemeny ranking of the ballots weighted by ``(m,)`` ``weights`` (unranked candidates
        tied at the bottom) and whether it is exact."""
        P = _pairwise(self.orders, self.lengths, weights) / weights.sum()
        result = kemeny(_PairwiseMarginals(self.candidates, P), max_ties=1)
        return result.ranking, result.exact


@dataclass(frozen=True)
class _PairwiseMarginals:
    """What :func:`~rankmodels.aggregation.distance.kemeny` reads of a profile: ``n`` and the
    ``(n, n)`` pairwise marginals (built here without a histogram, for speed inside EM)."""

    candidates: tuple[str, ...]
    pairwise: np.ndarray

    @property
    def n(self) -> int:
        return len(self.candidates)


@numba.njit(cache=True)
def _pairwise(
    orders: np.ndarray, lengths: np.ndarray, weights: np.ndarray
) -> np.ndarray:  # pragma: no cover - numba
    """``W[x, y]`` = weight of ballots ranking ``x`` above ``y``, tied pairs half each way."""
    m, n = orders.shape
    W = np.zeros((n, n))
    for b in range(m):
        w = weights[b]
        if w == 0.0:
            continue
        k = lengths[b]
        for r in range(k):
            x = orders[b, r]
            for s in range(r + 1, n):
                W[x, orders[b, s]] += w
        for r in range(k, n):
            for s in range(r + 1, n):
                x, y = orders[b, r], orders[b, s]
                W[x, y] += 0.5 * w
                W[y, x] += 0.5 * w
    return W


@numba.njit(cache=True)
def _discordance(
    orders: np.ndarray, lengths: np.ndarray, rank: np.ndarray
) -> np.ndarray:  # pragma: no cover - numba
    m, n = orders.shape
    D = np.zeros(m)
    for b in range(m):
        total = 0
        for r in range(lengths[b]):
            x = rank[orders[b, r]]
            for s in range(r + 1, n):
                if rank[orders[b, s]] < x:
                    total += 1
        D[b] = total
    return D


def _expected_discordance(length_freq: np.ndarray, n: int, theta: float) -> float:
    """Right-hand side of eq. (2): ``sum_k f_k sum_{r<k} E[V | n - r]``."""
    cumulative = np.concatenate([[0.0], np.cumsum(stage_mean(np.arange(n, 0, -1), theta))])
    return float(length_freq @ cumulative)


def _fit_theta(mean_discordance: float, length_freq: np.ndarray, n: int) -> float:
    """Solve eq. (2) for ``theta`` in ``[0, MAX_THETA]`` (clipped at the ends)."""

    def excess(theta: float) -> float:
        return _expected_discordance(length_freq, n, theta) - mean_discordance

    if excess(0.0) <= 0:
        return 0.0
    if excess(MAX_THETA) >= 0:
        return MAX_THETA
    from scipy.optimize import brentq  # here: scipy is slow to import, `mallows sample` skips it

    return float(brentq(excess, 0.0, MAX_THETA, xtol=1e-13, rtol=1e-13))


@dataclass
class _Component:
    centre: np.ndarray
    theta: float
    discordance: np.ndarray
    exact: bool


def _fit_component(
    data: TopKBallots, weights: np.ndarray, previous: _Component | None = None
) -> _Component:
    """Weighted single-model MLE: Kemeny centre, then ``theta`` by eq. (2)."""
    centre, exact = data.kemeny_centre(weights)
    if previous is not None and np.array_equal(centre, previous.centre):
        D = previous.discordance  # the usual case after the first iterations
    else:
        D = data.discordance(centre)
        if previous is not None and not exact and weights @ previous.discordance < weights @ D:
            centre, D = previous.centre, previous.discordance
    return _Component(centre, _fit_theta_weighted(data, weights, D), D, exact)


def _fit_theta_weighted(data: TopKBallots, weights: np.ndarray, D: np.ndarray) -> float:
    """``theta`` of eq. (2) for ballots weighted by ``weights`` with discordances ``D``."""
    total = weights.sum()
    length_freq = np.bincount(data.lengths, weights=weights, minlength=data.n + 1) / total
    return _fit_theta(float(weights @ D) / total, length_freq, data.n)


def _as_ballots(data: TopKBallots | Profile | np.ndarray) -> TopKBallots:
    if isinstance(data, TopKBallots):
        return data
    if isinstance(data, Profile):
        return TopKBallots.from_profile(data)
    return TopKBallots.from_orders(np.atleast_2d(data))


def fit_mallows(
    data: TopKBallots | Profile | np.ndarray, weights: np.ndarray | None = None
) -> Mallows:
    """Maximum-likelihood Mallows model of complete ``(N, n)`` orders (optional ``(N,)``
    weights), a :class:`Profile` of top-k ballots, or :class:`TopKBallots`."""
    if weights is not None:
        data = Profile.from_orders(np.atleast_2d(data), weights)
    ballots = _as_ballots(data)
    comp = _fit_component(ballots, ballots.counts)
    return Mallows.from_theta(comp.centre, comp.theta)


@dataclass(frozen=True, eq=False)
class MixtureFit:
    """A fitted mixture (components by decreasing weight) and how it was obtained.

    ``loglik``: total log-likelihood (sum over ballots, counts included); ``n_ballots``: ``N``;
    ``n_parameters``: ``p`` of the BIC; ``trace``: log-likelihood after each EM iteration of the
    best restart; ``restarts``: final log-likelihood of every restart; ``converged``: the best
    restart met ``tol`` before ``max_iter``; ``exact_centres``: every centre of the best restart
    came from the exact Kemeny DP.
    """

    model: MallowsMixture
    loglik: float
    n_ballots: float
    n_parameters: int
    trace: np.ndarray
    restarts: np.ndarray
    converged: bool
    exact_centres: bool

    @property
    def bic(self) -> float:
        """``-2 loglik + p log N``."""
        return -2.0 * self.loglik + self.n_parameters * float(np.log(self.n_ballots))


def _seed_centres(data: TopKBallots, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """k-means++-style starting centres: ballots drawn with probability ~ count x distance."""
    orders, counts = data.orders, data.counts
    first = int(rng.choice(counts.size, p=counts / counts.sum()))
    centres = [orders[first]]
    nearest = data.discordance(centres[0])
    for _ in range(1, k):
        score = counts * nearest
        p = score / score.sum() if score.sum() > 0 else counts / counts.sum()
        pick = int(rng.choice(counts.size, p=p))
        centres.append(orders[pick])
        nearest = np.minimum(nearest, data.discordance(orders[pick]))
    return centres


def _em(
    data: TopKBallots, k: int, rng: np.random.Generator, max_iter: int, tol: float
) -> tuple[list[_Component], np.ndarray, list[float], bool]:
    """One EM run from seeded centres and hard assignments: components, weights, the
    log-likelihood after each iteration, and whether the relative gain fell below ``tol``."""
    counts = data.counts
    start = _seed_centres(data, k, rng)
    D0 = np.stack([data.discordance(c) for c in start], axis=1)
    resp = np.zeros((counts.size, k))
    resp[np.arange(counts.size), np.argmin(D0, axis=1)] = 1.0
    comps: list[_Component | None] = [None] * k
    trace: list[float] = []
    converged = False
    for _ in range(max_iter):
        mass = counts @ resp
        pi = mass / mass.sum()
        for c in range(k):
            if mass[c] > 0:
                comps[c] = _fit_component(data, counts * resp[:, c], comps[c])
            elif comps[c] is None:  # empty from the start: a seed ballot as its centre
                comps[c] = _Component(start[c], 1.0, D0[:, c], True)
        log_p = np.log(np.maximum(pi, 1e-300))[None, :] + np.stack(
            [
                -cp.theta * cp.discordance - log_stage_normalisers(data.n, cp.theta)[data.lengths]
                for cp in comps
            ],
            axis=1,
        )
        top = log_p.max(axis=1)
        per_ballot = top + np.log(np.exp(log_p - top[:, None]).sum(axis=1))
        trace.append(float(counts @ per_ballot))
        resp = np.exp(log_p - per_ballot[:, None])
        if len(trace) > 1 and trace[-1] - trace[-2] <= tol * abs(trace[-1]):
            converged = True
            break
    return comps, pi, trace, converged


def fit_mixture(
    data: TopKBallots | Profile | np.ndarray,
    n_components: int,
    rng: np.random.Generator,
    *,
    restarts: int = 5,
    max_iter: int = 200,
    tol: float = 1e-10,
    progress: Callable[[int], None] | None = None,
) -> MixtureFit:
    """EM for a ``n_components``-component Mallows mixture; best of ``restarts`` restarts.

    ``data``: complete ``(N, n)`` orders, a :class:`Profile` of top-k ballots, or
    :class:`TopKBallots`. Stops when the relative log-likelihood gain is at most ``tol``.
    ``progress(1)`` is called after each restart (one restart when ``n_components == 1``: EM
    then converges to the same single-model MLE from any start).
    """
    ballots = _as_ballots(data)
    m = ballots.counts.size
    if isinstance(n_components, bool) or not 1 <= int(n_components) <= m:
        raise ValueError(f"n_components must be in 1..{m} (unique ballots), got {n_components}")
    if restarts < 1 or max_iter < 1:
        raise ValueError(f"restarts and max_iter must be >= 1, got {restarts}, {max_iter}")
    k = int(n_components)
    runs = []
    for _ in range(1 if k == 1 else restarts):
        runs.append(_em(ballots, k, rng, max_iter, tol))
        if progress is not None:
            progress(1)
    finals = np.array([run[2][-1] for run in runs])
    comps, pi, trace, converged = runs[int(np.argmax(finals))]
    order = np.argsort(-pi, kind="stable")
    model = MallowsMixture(
        pi[order], tuple(Mallows.from_theta(comps[c].centre, comps[c].theta) for c in order)
    )
    n = ballots.n
    return MixtureFit(
        model=model,
        loglik=float(finals.max()),
        n_ballots=ballots.total,
        n_parameters=(k - 1) + k + k * (n - 1),
        trace=np.array(trace),
        restarts=finals,
        converged=converged,
        exact_centres=all(c.exact for c in comps),
    )


def select_components(
    data: TopKBallots | Profile | np.ndarray,
    max_components: int,
    rng: np.random.Generator,
    **options: Any,
) -> tuple[MixtureFit, dict[int, MixtureFit]]:
    """Fit ``K = 1..max_components`` (fewer when there are fewer unique ballots) and return
    the fit with the smallest BIC and all fits by ``K``; ``options`` go to :func:`fit_mixture`."""
    ballots = _as_ballots(data)
    if max_components < 1:
        raise ValueError(f"max_components must be >= 1, got {max_components}")
    top = min(int(max_components), ballots.counts.size)
    fits = {k: fit_mixture(ballots, k, rng, **options) for k in range(1, top + 1)}
    best = min(fits.values(), key=lambda f: f.bic)
    return best, fits
