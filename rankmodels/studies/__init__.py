"""Simulation studies that reproduce the papers' experiments, serially or on a Dask cluster.

A study is a grid of parameters x replicate seeds, one pure task per (grid point, seed)
(:mod:`.study`); :func:`run_study` executes it in this process or on a ``distributed.Client``
(:mod:`.runner`) and returns a tidy :class:`StudyResult` with per-grid-point means and
standard errors (:mod:`.results`). Studies: :mod:`.tracking_clutter` ([Pareek2017] Fig. 5.8),
:mod:`.aggregation_study` ([Pareek2017] Fig. 4.1).
Dask is imported only when a client is used (extra ``studies``).
"""

from rankmodels.studies.results import StudyResult
from rankmodels.studies.runner import dask_client, run_study
from rankmodels.studies.study import Study, Task, integer_seed

__all__ = ["Study", "StudyResult", "Task", "dask_client", "integer_seed", "run_study"]
