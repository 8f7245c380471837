"""Likelihood engines: ``P(T_1 <= ... <= T_m | X)`` for a batch of particle positions.

One cycle's recorded arrival times ``toa`` (r,) (trailing NaN = not recorded) and the predicted
arrival times ``predicted`` (N, s) of the active sources at N particle positions go in; the log
likelihood of every particle (and, where the engine can, the posterior of every arrival's
source) comes out. All engines share the normalisation of eq. 5.26 described in
:mod:`._common`, including the particle-independent Poisson clutter term, so ``exact``
``loglik`` is a true density of the recorded arrivals under :class:`SignalModel`.

Engines (``ENGINES``; each described by an :class:`EngineSpec` in ``ENGINE_REGISTRY``, see
:mod:`.registry`):

``exact``
    Sum over all associations by a DP over sources with a bitmask of matched arrivals,
    ``O(s m 2^m)`` per particle (eqs. 5.25-5.26, 5.64-5.67).
``bp``
    The paper's loopy belief propagation on the bipartite S_i/R_j graph with the Bethe
    estimate of the partition function (eqs. 5.28-5.63).
``minfactor``
    Message passing on the min-factor graph of section 5.2 with lost signals and clutter
    (eqs. 5.68-5.71), Bethe estimate of the partition function.
``baseline``
    The arrival order ignored (eq. 5.72).
``labels``
    Hand-labelled associations (eq. 5.73).

:mod:`.oracle` enumerates every association (a reference for tests, not an engine).
"""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.engines._common import (
    LikelihoodResult,
    check_predicted,
    message_passing,
    prepare_cycle,
)
from rankmodels.tracking.engines.registry import (
    DEFAULT_ENGINE,
    ENGINE_REGISTRY,
    ENGINES,
    EngineSpec,
)
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["ENGINES", "ENGINE_REGISTRY", "EngineSpec", "LikelihoodResult", "log_likelihood"]


def log_likelihood(
    toa: np.ndarray,
    predicted: np.ndarray,
    model: SignalModel,
    *,
    engine: str = DEFAULT_ENGINE,
    labels: np.ndarray | None = None,
    association: bool = False,
    damping: float = 0.0,
    tol: float = 1e-6,
    max_iter: int = 200,
    clutter_weight: np.ndarray | None = None,
    truncation: float | None = None,
) -> LikelihoodResult:
    """Log likelihood of one cycle's recorded arrivals at each of N particle positions.

    Parameters
    ----------
    toa: (r,) ascending arrival times (s after the window start), trailing NaN = not recorded.
    predicted: (N, s) predicted arrival time of each active source at each particle.
    model: the signal model; it must meet the engine's constraints (``EngineSpec.constraints``).
    engine: one of ``ENGINES``.
    labels: (r,) int, for engines that need labels (``labels``): column of ``predicted``,
        -1 clutter, -2 no arrival.
    association: also return the association posteriors.
    damping, tol, max_iter: controls of the message-passing engines (``bp``, ``minfactor``):
        new message = ``damping * old + (1 - damping) * update``; stop when no message changes
        by more than ``tol`` relative to its size.
    clutter_weight: (r,) factors ``w_j >= 0`` on each recorded arrival's clutter weight
        ``lambda / W`` (every engine; None: all 1, the model of eq. 5.26).
    truncation: the time after which nothing was recorded when arrivals were removed after
        recording (None: ``T_r`` when all ``r`` ranks are filled, else ``W``).

    Raises ValueError for malformed inputs, an unknown engine or a model the engine cannot use,
    TypeError if ``model`` is not a SignalModel.
    """
    spec = ENGINE_REGISTRY[engine]
    if not isinstance(model, SignalModel):
        raise TypeError(f"model must be a SignalModel, got {type(model).__name__}")
    spec.check_model(model)
    options: dict[str, object] = {}
    if spec.message_passing:
        options["controls"] = message_passing(damping, tol, max_iter)
    cycle = prepare_cycle(toa, model, clutter_weight, truncation)
    pred = check_predicted(predicted)
    if spec.needs_labels:
        options["labels"] = labels
    return spec.run(cycle, pred, model, association=association, **options)
