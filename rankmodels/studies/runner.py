"""Execute a :class:`~rankmodels.studies.study.Study`: serially, or on a Dask cluster.

Both paths run the same tasks with the same seeds (:meth:`Study.tasks`) and put the results
back in task order, so the result table does not depend on the scheduler, the number of
workers or the order in which tasks finish.

Dask (``dask.distributed``) is imported only when a client is used: it is in the ``studies``
and ``dev`` extras, not in the core install. :func:`dask_client` makes one for the usual
cases -- a ``LocalCluster`` of ``workers`` single-threaded processes on this machine, or a
connection to a running scheduler (``dask scheduler`` / ``dask worker ADDRESS``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from rankmodels.studies.results import StudyResult
from rankmodels.studies.study import Study, Task

__all__ = ["dask_client", "run_study"]

Progress = Callable[[int], None]


def _run_task(task: Task, function: Any) -> tuple[dict[str, float], float]:
    """Run one task; returns its metrics (as floats) and its wall time (s)."""
    started = time.perf_counter()
    metrics = function(dict(task.params), task.seed)
    elapsed = time.perf_counter() - started
    try:
        values = {str(k): float(v) for k, v in metrics.items()}
    except (AttributeError, TypeError, ValueError) as err:
        raise TypeError(
            f"task {task.point}/{task.replicate} must return a mapping of metric -> number, "
            f"got {metrics!r}"
        ) from err
    return values, elapsed


def _serial(study: Study, tasks: list[Task], progress: Progress | None) -> list[Any]:
    out = []
    for task in tasks:
        out.append(_run_task(task, study.task))
        if progress is not None:
            progress(1)
    return out


def _on_dask(study: Study, tasks: list[Task], client: Any, progress: Progress | None) -> list[Any]:
    from distributed import as_completed

    futures = client.map(_run_task, tasks, function=study.task, pure=False)
    index = {future.key: i for i, future in enumerate(futures)}
    out: list[Any] = [None] * len(tasks)
    try:
        for future, value in as_completed(futures, loop=client.loop, with_results=True):
            out[index[future.key]] = value
            if progress is not None:
                progress(1)
    finally:
        client.cancel([f for f in futures if not f.done()])
    return out


def run_study(
    study: Study, *, client: Any | None = None, progress: Progress | None = None
) -> StudyResult:
    """Run every task of ``study``; ``client``: a ``distributed.Client`` (None = serially in
    this process). ``progress(1)`` is called as each task finishes. A task's exception
    propagates (remaining Dask tasks are cancelled); ValueError when a metric is named like a
    swept parameter, ``replicate`` or ``task_time_s``."""
    tasks = study.tasks()
    started = time.perf_counter()
    if client is None:
        outputs = _serial(study, tasks, progress)
    else:
        outputs = _on_dask(study, tasks, client, progress)
    reserved = {*study.dims, "replicate", "task_time_s"}
    for metrics, _ in outputs:
        clash = reserved & set(metrics)
        if clash:
            raise ValueError(f"task metrics may not be named {sorted(clash)} (table columns)")
    rows = [
        {
            **{key: task.params[key] for key in study.dims},
            "replicate": task.replicate,
            **metrics,
            "task_time_s": elapsed,
        }
        for task, (metrics, elapsed) in zip(tasks, outputs, strict=True)
    ]
    return StudyResult.from_rows(
        study, rows, wall_time_s=time.perf_counter() - started, scheduler=_describe(client)
    )


def _describe(client: Any | None) -> str:
    if client is None:
        return "serial"
    workers = client.scheduler_info().get("workers", {})
    threads = sum(int(w.get("nthreads", 0)) for w in workers.values())
    return f"dask {client.scheduler.address} ({len(workers)} workers, {threads} threads)"


@contextlib.contextmanager
def dask_client(
    *, workers: int | None = None, scheduler: str | None = None, processes: bool = True
) -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler`` (e.g. ``"tcp://host:8786"``), or
    on a new ``LocalCluster`` of ``workers`` single-threaded workers (processes unless
    ``processes=False``), closed on exit. Exactly one of ``workers``/``scheduler``.

    Raises ValueError for a bad combination, ImportError (with the install hint) without Dask.
    """
    if (workers is None) == (scheduler is None):
        raise ValueError("give exactly one of workers (a local cluster) or scheduler (an address)")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:  # pragma: no cover - dask is in the dev extra
        raise ImportError(
            "running a study on Dask needs dask.distributed: pip install 'rankmodels[studies]'"
        ) from err
    # The client is used explicitly (client.map), never as dask's default: a default Client
    # sets dask's global scheduler and registers itself as the process's client as it starts,
    # and one that fails to connect (a malformed address) stays registered, so every later
    # dask-aware call in the process (xarray's to_netcdf takes a distributed lock) fails.
    if scheduler is not None:
        with Client(scheduler, set_as_default=False) as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=":0",
            # distributed's own warnings (e.g. a worker process killed while the cluster
            # closes) are not the user's business: errors only
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client
