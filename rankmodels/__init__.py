"""rankmodels: probabilistic inference over rankings.

Three jobs share one core (:mod:`rankmodels.permutations`, :mod:`rankmodels.dsm`):

* :mod:`rankmodels.tracking` -- RAFOS float tracking with ranked signals;
* :mod:`rankmodels.aggregation` -- distributional rank aggregation and axiom margins;
* :mod:`rankmodels.ltr` -- learning-to-rank metrics and losses on doubly-stochastic matrices.

Citations in brackets, e.g. ``[Pareek2017] eq. 5.26`` (the dissertation whose equation,
section and figure numbers the docstrings use) or ``[Taylor+2008]``, are listed in full in
the repository's ``docs/references.md``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rankmodels")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
