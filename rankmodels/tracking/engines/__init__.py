"""Likelihood engines: ``P(T_1 <= ... <= T_m | X)`` for a batch of particle positions.

One cycle's recorded arrival times ``toa`` (r,) (trailing NaN = not recorded) and the predicted
arrival times ``predicted`` (N, s) of the active sources at N particle positions go in; the log
likelihood of every particle (and, where the engine can, the posterior of every arrival's
source) comes out. All engines share the normalisation of eq. 5.26 described in
:mod:`._common`, including the particle-independent Poisson clutter term, so ``exact``
``loglik`` is a true density of the recorded arrivals under :class:`SignalModel`.

Engines (``ENGINES``):

``exact``
    Sum over all associations by a DP over sources with a bitmask of matched arrivals,
    ``O(s m 2^m)`` per particle (eqs. 5.25-5.26, 5.64-5.67).
``bp``
    The paper's loopy belief propagation on the bipartite S_i/R_j graph with the Bethe
    estimate of the partition function (eqs. 5.28-5.63).
``minfactor``
    Message passing on the min-factor graph of section 5.2 (no loss, no clutter).
``baseline``
    The arrival order ignored (eq. 5.72).
``labels``
    Hand-labelled associations (eq. 5.73).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankmodels.tracking.engines._common import check_predicted, prepare_cycle
from rankmodels.tracking.engines.baseline import baseline_engine
from rankmodels.tracking.engines.bp import bp_engine
from rankmodels.tracking.engines.exact import exact_engine
from rankmodels.tracking.engines.labels import labels_engine
from rankmodels.tracking.engines.minfactor import minfactor_engine
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["ENGINES", "LikelihoodResult", "log_likelihood"]

ENGINES: tuple[str, ...] = ("exact", "bp", "minfactor", "baseline", "labels")


@dataclass
class LikelihoodResult:
    """Output of :func:`log_likelihood`.

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


def log_likelihood(
    toa: np.ndarray,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    engine: str = "exact",
    labels: np.ndarray | None = None,
    association: bool = False,
    damping: float = 0.0,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> LikelihoodResult:
    """Log likelihood of one cycle's recorded arrivals at each of N particle positions.

    Parameters
    ----------
    toa: (r,) ascending arrival times (s after the window start), trailing NaN = not recorded.
    predicted: (N, s) predicted arrival time of each active source at each particle.
    model: the signal model.
    engine: one of ``ENGINES``.
    labels: (r,) int, for ``engine="labels"``: column of ``predicted``, -1 clutter,
        -2 no arrival.
    association: also return the association posteriors.
    damping, tol, max_iter: message-passing controls of ``bp`` and ``minfactor`` (new message =
        ``damping * old + (1 - damping) * update``; stop when no message changes by more than
        ``tol`` relative to its size).

    Raises ValueError for malformed inputs or an unknown engine.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if not isinstance(model, SignalModel):
        raise TypeError(f"model must be a SignalModel, got {type(model).__name__}")
    cycle = prepare_cycle(toa, model)
    pred = check_predicted(predicted)
    if engine == "exact":
        return LikelihoodResult(*exact_engine(cycle, pred, model, association=association))
    if engine == "baseline":
        return LikelihoodResult(*baseline_engine(cycle, pred, model, association=association))
    if engine == "labels":
        return LikelihoodResult(*labels_engine(cycle, pred, model, labels, association=association))
    runner = bp_engine if engine == "bp" else minfactor_engine
    loglik, assoc, sweeps, converged = runner(
        cycle, pred, model, association=association, damping=damping, tol=tol, max_iter=max_iter
    )
    return LikelihoodResult(loglik, assoc, sweeps, converged)
