"""Baseline likelihood with the arrival order ignored ([Pareek2017] eq. 5.72).

The paper's comparison model has the bipartite structure of Fig. 5.5 but the source factor

    f(X, S_i) = P_D p_i(T_{S_i} | X)   if S_i is an arrival,
              = 1 - P_D                 if S_i = L or S_i = M,

so an unrecorded source costs ``2 (1 - P_D)`` whatever its predicted arrival time: nothing says
that a source predicted early must have been recorded. The sum over associations is computed
exactly by the kernel of :mod:`.exact`; clutter factors and the Poisson term are those of the
ranked model. Because ``2 (1 - P_D)`` is not the probability of an event, this ``loglik`` is a
score, not a normalised density; its particle-independent part does not affect filtering.
"""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.engines._common import Cycle, LikelihoodResult
from rankmodels.tracking.engines.exact import sum_over_associations
from rankmodels.tracking.signal_model import SignalModel

__all__ = ["baseline_engine"]


def baseline_engine(
    cycle: Cycle, predicted: np.ndarray, model: SignalModel, *, association: bool = False
) -> LikelihoodResult:
    """Eq. 5.72 summed over all associations (``model.p_detect < 1``: see the engine registry)."""
    return sum_over_associations(cycle, predicted, model, ranked=False, association=association)
