"""Simulation studies that reproduce the papers' experiments, serially or on a Dask cluster.

A study is a grid of parameters x replicate seeds, one pure task per (grid point, seed)
(:mod:`.study`); :func:`run_study` executes it in this process or on a ``distributed.Client``
(:mod:`.runner`) and returns a tidy :class:`StudyResult` with per-grid-point means and
standard errors (:mod:`.results`). Studies: :mod:`.tracking_clutter` ([Pareek2017] Fig. 5.8),
:mod:`.aggregation_study` ([Pareek2017] Fig. 4.1).
Dask is imported only when a client is used (extra ``studies``).
"""

from rankmodels._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "Study": ".study",
        "StudyResult": ".results",
        "Task": ".study",
        "dask_client": ".runner",
        "integer_seed": ".study",
        "run_study": ".runner",
    },
)
