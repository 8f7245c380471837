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

from rankmodels._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "DistributionMarginals": ".marginals",
        "Mallows": ".model",
        "MallowsMixture": ".model",
        "MixtureFit": ".fitting",
        "TopKBallots": ".fitting",
        "expected_distance": ".model",
        "fit_mallows": ".fitting",
        "fit_mixture": ".fitting",
        "log_normaliser": ".model",
        "pair_positions": ".marginals",
        "pairwise_marginals": ".marginals",
        "positional_marginals": ".marginals",
        "sample_orders": ".sampling",
        "select_components": ".fitting",
        "theta_from_phi": ".model",
    },
)
