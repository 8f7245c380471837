"""Brute-force reference: enumerate every association of the bipartite model (for tests).

Each source takes a state ``S_i`` in ``{0, ..., m-1, L, M}`` (L and M enumerated separately, as
in eq. 5.65); assignments that give one arrival two sources are skipped; arrivals no source
took are clutter. The weight of an association is eq. 5.26 with its normalisation (see
:mod:`._common`). Plain Python, ``O((m + 2)^s)``: only for small cases.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import log_ndtr

from rankmodels.tracking.engines._common import Cycle
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["brute_force"]

_LATE, _MISSING = -1, -2


def brute_force(
    cycle: Cycle, pred: np.ndarray, model: SignalModel, *, ranked: bool = True
) -> tuple[float, np.ndarray]:
    """``log P(T | X)`` and the association marginals (m, s + 1) for one position.

    ``pred`` (s,) are the predicted arrival times at that position; ``ranked=False`` scores
    late sources ``1 - P_D`` as the baseline of eq. 5.72 does.
    """
    pred = np.asarray(pred, dtype=float)
    s, m = pred.shape[0], cycle.m
    sigma, pd = float(model.sigma), float(model.p_detect)
    log_miss = math.log(1.0 - pd) if pd < 1.0 else -math.inf
    log_pd = math.log(pd)

    def log_factor(i: int, state: int) -> float:
        if state == _MISSING:
            return log_miss
        if state == _LATE:
            if not ranked:
                return log_miss
            return log_pd + float(log_ndtr(-(cycle.tau - pred[i]) / sigma))
        d = (cycle.toa[state] - pred[i]) / sigma
        return log_pd - 0.5 * d * d - math.log(sigma) - 0.5 * math.log(2 * math.pi)

    terms: list[float] = []
    owners: list[tuple[int, ...]] = []
    for states in itertools.product([*range(m), _LATE, _MISSING], repeat=s):
        taken = [st for st in states if st >= 0]
        if len(set(taken)) != len(taken):
            continue
        owner = [s] * m
        for i, st in enumerate(states):
            if st >= 0:
                owner[st] = i
        logw = sum(log_factor(i, st) for i, st in enumerate(states))
        logw += sum(cycle.log_clutter[j] for j in range(m) if owner[j] == s)
        terms.append(logw)
        owners.append(tuple(owner))
    logw = np.array(terms)
    log_z = float(np.logaddexp.reduce(logw))
    post = np.zeros((m, s + 1))
    if log_z > -math.inf:
        w = np.exp(logw - log_z)
        for weight, owner in zip(w, owners, strict=True):
            post[np.arange(m), list(owner)] += weight
    else:
        post[:] = np.nan
    return log_z + cycle.log_poisson, post
