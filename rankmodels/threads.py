"""How the compiled kernels use threads: the wait policy of numba's threading layer, and how many
threads a process (or a Dask worker) runs.

Nothing here runs at import. Two calls change process state, and only when made:

* :func:`prepare_environment` sets ``OMP_WAIT_POLICY=passive`` in ``os.environ`` unless the
  variable is already set (the user's value wins). OpenMP runtimes read it once, when numba's
  ``omp`` threading layer starts (the first parallel kernel, or ``numba.get_num_threads()``),
  so it must come before that; later it has no effect. Under the default (unset) policy an
  idle GNU OpenMP thread spins for some 300,000 iterations at every barrier before it sleeps:
  each parallel kernel that waits for a thread the OS has descheduled burns the core that
  thread needs, and a short engine call costs tens of times its serial CPU time on a loaded
  machine. Passive threads sleep at once; on a quiet machine they cost one wake-up per kernel
  (tens of microseconds), which the engines' serial/parallel choice accounts for
  (:func:`rankmodels.tracking.engines._common.parallel_pays`). The ``tbb`` and ``workqueue``
  layers do not read it.
* :func:`numba_threads` sets the calling thread's numba thread count
  (``numba.set_num_threads``, which is per thread) for a block and restores it.

:func:`threads_per_worker` is the default split of the cores among Dask workers: each worker's
kernels get ``cores // workers`` threads (at least 1), so workers x threads <= cores.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = [
    "ENVIRONMENT",
    "available_cores",
    "numba_threads",
    "prepare_environment",
    "threads_per_worker",
]

#: Environment defaults set by :func:`prepare_environment` (a variable already set is kept).
ENVIRONMENT: dict[str, str] = {"OMP_WAIT_POLICY": "passive"}


def prepare_environment() -> dict[str, str]:
    """Set the variables of :data:`ENVIRONMENT` that are not set yet; returns those it set.

    Call it before the first parallel kernel of the process (see the module docstring)."""
    added = {key: value for key, value in ENVIRONMENT.items() if key not in os.environ}
    os.environ.update(added)
    return added


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """numba threads for each of ``workers`` processes sharing ``cores`` (default: this
    process's :func:`available_cores`): ``max(1, cores // workers)``. ValueError unless
    ``workers >= 1``."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    cores = available_cores() if cores is None else cores
    return max(1, cores // workers)


@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[int]:
    """Run the block with the calling thread's numba thread count at ``n`` (at most
    ``NUMBA_NUM_THREADS``, the size of numba's pool); yields the count used and restores the
    previous one after. ValueError unless ``n >= 1``."""
    if n < 1:
        raise ValueError(f"numba threads must be >= 1, got {n}")
    import numba

    before = numba.get_num_threads()
    used = min(n, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(used)
    try:
        yield used
    finally:
        numba.set_num_threads(before)
