"""Reference likelihood by enumeration (a test oracle for the engines, not an engine).

Written from the generative model of :mod:`rankmodels.tracking.signal_model` and eq. 5.25 with
nothing shared with the engines (not even their per-cycle constants): every association gives
each source a state ``S_i`` in ``{0, ..., m-1, L, M}`` (L and M enumerated separately, as in
eq. 5.65; assignments that give one arrival two sources are skipped) and makes the arrivals no
source took clutter. With ``c`` clutter arrivals its weight is

    prod_i f(S_i) * prod_{R_j = C} p_N(T_j) * sum_{N >= c} Pois(N; lambda) N!/(N - c)! q^(N - c)

with ``f(M) = 1 - P_D``, ``f(L) = P_D P(t_i > tau)``, ``f(j) = P_D p_i(T_j)`` (eq. 5.66),
``p_i`` the mixture ``(1 - P_M) N(pred_i, sigma^2) + P_M`` (the same plus an exponential
delay of mean ``mu_D``: scipy's ``exponnorm`` with shape ``mu_D / sigma``), ``p_N`` the
uniform density on ``[0, W]``, ``q = P(clutter arrival > tau)``, and ``tau`` the time after
which an arrival goes unrecorded: ``T_r`` when all ``r`` ranks are filled, else the window end
``W``. The Poisson sum (eq. 5.25 marginalised over the number ``N`` of clutter signals) is
summed term by term. Plain Python, ``O((m + 2)^s)``: small cases only.

With correlation heights ``c_j`` (:mod:`rankmodels.tracking.correlation`) an arrival's
density gains the factor ``f_S(c_j)`` when a source sent it and ``f_C(c_j)`` when it is
clutter; given the per-arrival ``clutter_weight = f_C(c_j) / f_S(c_j)`` the oracle multiplies
each clutter arrival's ``p_N(T_j)`` by it (the common ``prod_j f_S(c_j)`` left out). With
``truncation`` (arrivals removed after recording) ``tau`` is that time instead.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from rankmodels.tracking.signal_model import SignalModel

__all__ = ["clutter_count_weight", "enumerate_associations"]


def clutter_count_weight(c: int, rate: float, q: float) -> float:
    """``sum_{N >= c} Pois(N; rate) N!/(N - c)! q^(N - c)``, summed until the terms vanish.

    ``N!/(N - c)!`` counts the ways ``c`` of the ``N`` clutter signals are the recorded ones;
    the other ``N - c`` each arrive unrecorded with probability ``q``.
    """
    total = 0.0
    extra = 0
    while True:
        n = c + extra
        term = float(stats.poisson.pmf(n, rate)) * math.perm(n, c) * q**extra
        total += term
        if rate == 0.0 or (n > rate and term <= 1e-18 * total):
            return total
        extra += 1


def enumerate_associations(
    toa: np.ndarray,
    pred: np.ndarray,
    model: SignalModel,
    *,
    ranked: bool = True,
    clutter_weight: np.ndarray | None = None,
    truncation: float | None = None,
) -> tuple[float, np.ndarray]:
    """``log P(T | X)`` and the association marginals (m, s + 1) for one position.

    ``toa`` (r,) is the cycle as recorded (trailing NaN = rank not filled), ``pred`` (s,) the
    predicted arrival times at that position; ``ranked=False`` scores late sources
    ``1 - P_D`` as the baseline of eq. 5.72 does. Column ``s`` of the marginals is clutter.
    ``clutter_weight`` (r,) and ``truncation``: module docstring.
    """
    toa = np.asarray(toa, dtype=float)
    pred = np.asarray(pred, dtype=float)
    recorded = toa[~np.isnan(toa)]
    r, m, s = toa.shape[0], recorded.shape[0], pred.shape[0]
    window = float(model.window)
    tau = recorded[-1] if m == r else window
    if truncation is not None:
        tau = float(truncation)
    clutter = stats.uniform(loc=0.0, scale=window)
    log_p_clutter = clutter.logpdf(recorded)  # (m,)
    if clutter_weight is not None:
        with np.errstate(divide="ignore"):
            log_p_clutter = log_p_clutter + np.log(np.asarray(clutter_weight, float)[:m])
    q = float(clutter.sf(tau))

    sigma = float(model.sigma)
    direct = stats.norm(loc=pred[:, None], scale=sigma)
    delayed = stats.exponnorm(float(model.multipath_delay) / sigma, loc=pred[:, None], scale=sigma)
    pm = float(model.multipath)
    pd = float(model.p_detect)
    with np.errstate(divide="ignore"):

        def log_mix(direct_term: np.ndarray, delayed_term: np.ndarray) -> np.ndarray:
            log_pm = math.log(pm) if pm > 0 else -math.inf
            return np.logaddexp(math.log1p(-pm) + direct_term, log_pm + delayed_term)

        log_miss = math.log(1.0 - pd) if pd < 1.0 else -math.inf
        log_f = np.empty((s, m + 2))  # columns: arrival j, late, missing
        at = recorded[None, :]
        log_f[:, :m] = math.log(pd) + log_mix(direct.logpdf(at), delayed.logpdf(at))
        late = log_mix(direct.logsf(tau), delayed.logsf(tau))[:, 0]
        log_f[:, m] = math.log(pd) + late if ranked else log_miss
        log_f[:, m + 1] = log_miss
        rate = float(model.clutter_rate)
        log_count = np.log([clutter_count_weight(c, rate, q) for c in range(m + 1)])

    terms: list[float] = []
    owners: list[list[int]] = []
    for states in itertools.product(range(m + 2), repeat=s):
        taken = [st for st in states if st < m]
        if len(set(taken)) != len(taken):
            continue
        owner = [s] * m
        for i, st in enumerate(states):
            if st < m:
                owner[st] = i
        is_clutter = [j for j in range(m) if owner[j] == s]
        logw = sum(log_f[i, st] for i, st in enumerate(states))
        logw += sum(log_p_clutter[j] for j in is_clutter) + log_count[len(is_clutter)]
        terms.append(logw)
        owners.append(owner)
    logw = np.array(terms)
    log_z = float(np.logaddexp.reduce(logw))
    post = np.zeros((m, s + 1))
    if log_z == -math.inf:
        return log_z, np.full((m, s + 1), np.nan)
    for weight, owner in zip(np.exp(logw - log_z), owners, strict=True):
        post[np.arange(m), owner] += weight
    return log_z, post
