"""Mallows models and mixtures: exact marginals, sampling, fitting (Kendall distance).

* :mod:`.model` -- :class:`Mallows` (centre, ``phi in (0, 1]`` or ``theta = -log phi``) and
  :class:`MallowsMixture`: normaliser, pmf, expected distance;
* :mod:`.marginals` -- exact positional, pairwise and two-item joint position marginals in
  ``O(n^3)``, and :class:`DistributionMarginals`, which the aggregation rules accept like a
  profile;
* :mod:`.sampling` -- repeated-insertion sampling in numba, batched and seeded;
* :mod:`.io` -- the JSON form of a mixture over named candidates;
* :mod:`.fitting` -- maximum likelihood on complete and top-k ballots: Kemeny centre plus the
  moment equation for one model, EM with restarts and BIC for mixtures.

This package sits under :mod:`rankmodels.aggregation` because fitting uses its Kemeny solver.
"""

from rankmodels.aggregation.mallows.fitting import (
    MixtureFit,
    TopKBallots,
    fit_mallows,
    fit_mixture,
    select_components,
)
from rankmodels.aggregation.mallows.marginals import (
    DistributionMarginals,
    pair_positions,
    pairwise_marginals,
    positional_marginals,
)
from rankmodels.aggregation.mallows.model import (
    Mallows,
    MallowsMixture,
    expected_distance,
    log_normaliser,
    theta_from_phi,
)
from rankmodels.aggregation.mallows.sampling import sample_orders

__all__ = [
    "DistributionMarginals",
    "Mallows",
    "MallowsMixture",
    "MixtureFit",
    "TopKBallots",
    "expected_distance",
    "fit_mallows",
    "fit_mixture",
    "log_normaliser",
    "pair_positions",
    "pairwise_marginals",
    "positional_marginals",
    "sample_orders",
    "select_components",
    "theta_from_phi",
]
