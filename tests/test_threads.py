"""Thread policy: the wait-policy default, the split of cores among Dask workers, the engines'
serial/parallel choice, and that threads never change an engine's output."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import rankmodels.tracking.batch as batch
import rankmodels.tracking.engines._common as common
from rankmodels.studies.runner import dask_client
from rankmodels.threads import (
    ENVIRONMENT,
    available_cores,
    numba_threads,
    prepare_environment,
    threads_per_worker,
)
from rankmodels.tracking.engines import log_likelihood
from rankmodels.tracking.engines._common import (
    PARALLEL_MIN_SECONDS,
    PARALLEL_MIN_SECONDS_BUSY,
    machine_busy,
    parallel_pays,
    particle_seconds,
)
from rankmodels.tracking.signal_model import SignalModel

two_threads = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2, reason="numba's pool has one thread here"
)


def test_prepare_environment_sets_only_what_is_unset(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "")  # restored after the test, even if unset before
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert prepare_environment() == {"OMP_WAIT_POLICY": "passive"}
    assert ENVIRONMENT["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")  # the user's choice wins
    assert prepare_environment() == {}
    assert os.environ["OMP_WAIT_POLICY"] == "active"


@pytest.mark.parametrize(
    ("workers", "cores", "expected"),
    [(2, 2, 1), (1, 2, 2), (3, 2, 1), (2, 8, 4), (3, 8, 2), (1, 1, 1)],
)
def test_threads_per_worker_never_oversubscribes(workers, cores, expected):
    got = threads_per_worker(workers, cores)
    assert got == expected
    assert got * workers <= max(cores, workers)  # one thread each when workers > cores


def test_threads_per_worker_refuses_no_workers():
    with pytest.raises(ValueError, match="workers must be >= 1"):
        threads_per_worker(0, 2)


@two_threads
def test_numba_threads_sets_and_restores_the_callers_count():
    before = numba.get_num_threads()
    with numba_threads(1) as used:
        assert used == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with pytest.raises(RuntimeError), numba_threads(2):
        assert numba.get_num_threads() == 2
        raise RuntimeError
    assert numba.get_num_threads() == before
    with numba_threads(10_000) as used:  # capped at numba's pool
        assert used == numba.config.NUMBA_NUM_THREADS
    with pytest.raises(ValueError, match=">= 1"), numba_threads(0):
        pass


def test_parallel_pays_only_for_enough_work_and_threads():
    spp = 1e-6
    at = math.ceil(PARALLEL_MIN_SECONDS / spp * (1 - 1e-12))  # the crossover, up to rounding
    assert parallel_pays(at, spp, 2)
    assert not parallel_pays(at - 1, spp, 2)  # just below the crossover
    assert not parallel_pays(10 * at, spp, 1)  # one thread: nothing to split
    assert not parallel_pays(3, 1.0, 2)  # fewer than two particles per thread
    assert parallel_pays(4, 1.0, 2)


def test_parallel_pays_asks_for_more_work_on_a_busy_machine():
    spp = 1e-6
    quiet = math.ceil(PARALLEL_MIN_SECONDS / spp * (1 - 1e-12))
    busy = math.ceil(PARALLEL_MIN_SECONDS_BUSY / spp * (1 - 1e-12))
    assert busy > quiet
    assert parallel_pays(quiet, spp, 2, busy=False)
    assert not parallel_pays(quiet, spp, 2, busy=True)
    assert not parallel_pays(busy - 1, spp, 2, busy=True)
    assert parallel_pays(busy, spp, 2, busy=True)


@pytest.fixture
def load(monkeypatch):
    """Set the machine's load average and cores as :func:`machine_busy` sees them (``load``
    None: the OS reports none); its cached reading is forgotten before and after."""
    state = {"load": 0.0, "reads": 0}

    def getloadavg():
        state["reads"] += 1
        if state["load"] is None:
            raise OSError("no load average")
        return (state["load"], 0.0, 0.0)

    monkeypatch.setattr(common.os, "getloadavg", getloadavg)
    monkeypatch.setattr(common.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(common, "_load_seen", [-math.inf, 0.0])
    return state


@pytest.mark.parametrize(
    ("load_average", "busy"), [(0.3, False), (2.0, False), (2.49, False), (2.51, True), (7, True)]
)
def test_machine_busy_when_the_load_exceeds_the_cores(load, load_average, busy):
    load["load"] = load_average
    assert machine_busy() is busy


def test_machine_busy_reads_the_load_at_most_once_a_second(load, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(common.time, "monotonic", lambda: clock[0])
    load["load"] = 5.0
    assert machine_busy() and load["reads"] == 1
    load["load"] = 0.1
    clock[0] += 0.5
    assert machine_busy() and load["reads"] == 1  # the cached reading
    clock[0] += 0.6
    assert not machine_busy() and load["reads"] == 2


def test_machine_busy_is_false_without_a_load_average(load):
    load["load"] = None
    assert machine_busy() is False


@two_threads
def test_a_busy_machine_runs_a_mid_size_batch_serially(load, monkeypatch):
    """601 particles (well above the quiet threshold, below the busy one) run threaded on a
    quiet machine and serially on a busy one, with the same results."""
    chosen: list[bool] = []

    def spy(*args):
        chosen.append(parallel_pays(*args))
        return chosen[-1]

    monkeypatch.setattr(common, "parallel_pays", spy)
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, multipath=0.02)
    toa = np.array([300.0, 420.0, 800.0, np.nan])
    predicted = np.random.default_rng(5).uniform(200, 1500, (601, 7))
    results = []
    for load_average in (0.5, 6.0):
        load["load"] = load_average
        common._load_seen[0] = -math.inf
        with numba_threads(2):
            results.append(log_likelihood(toa, predicted, model, association=True))
    assert chosen == [True, False]
    np.testing.assert_array_equal(results[0].loglik, results[1].loglik)
    np.testing.assert_array_equal(results[0].association, results[1].association)


def test_association_marginals_raise_the_exact_estimate_only():
    assert particle_seconds("exact", 12, 4, association=True) > 1.5 * particle_seconds(
        "exact", 12, 4
    )
    assert particle_seconds("bp", 12, 4, association=True) == particle_seconds("bp", 12, 4)


def test_particle_cost_grows_with_sources_and_arrivals():
    for engine in common.PARTICLE_COST:
        assert 0 < particle_seconds(engine, 3, 1) < particle_seconds(engine, 12, 4)
    # the message-passing engines cost more per particle than the exact sum at s=12, r=4
    assert particle_seconds("exact", 12, 4) < particle_seconds("bp", 12, 4)
    assert particle_seconds("bp", 12, 4) < particle_seconds("minfactor", 12, 4)


@two_threads
@pytest.mark.parametrize("engine", ["exact", "bp", "minfactor"])
def test_serial_and_threaded_batches_are_identical(rng, monkeypatch, engine):
    """The same batch on one thread (serial kernel) and on two (parallel kernel, chosen by
    :func:`parallel_pays`) gives bit-identical likelihoods and association posteriors."""
    chosen: list[bool] = []

    def spy(*args):
        chosen.append(parallel_pays(*args))
        return chosen[-1]

    monkeypatch.setattr(common, "parallel_pays", spy)
    monkeypatch.setattr(common, "machine_busy", lambda: False)  # threaded however loaded
    model = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, multipath=0.02)
    toa = np.array([300.0, 420.0, 800.0, np.nan])
    predicted = rng.uniform(200, 1500, (601, 7))
    predicted[5] += 5000.0  # a particle with zero likelihood among the others
    results = []
    for threads in (1, 2):
        with numba_threads(threads):
            results.append(log_likelihood(toa, predicted, model, engine=engine, association=True))
    assert chosen == [False, True]
    serial, threaded = results
    np.testing.assert_array_equal(serial.loglik, threaded.loglik)
    np.testing.assert_array_equal(serial.association, threaded.association)


def _reports_threads(file, out, config, figures, name, calibration=None):
    """Stand-in for :func:`batch.track_one`: the row's reason is the numba thread count the
    task ran with."""
    row = batch._empty_row(file, name)
    row["reason"] = str(numba.get_num_threads())
    return row


@pytest.fixture(scope="module")
def two_workers():
    with dask_client(workers=2, processes=False) as client:
        yield client


def test_batch_tasks_run_one_share_of_the_cores_each(two_workers, monkeypatch, tmp_path):
    """By default a task's kernels get the host's cores divided among the Dask threads
    (here two workers of one thread, on this host); --worker-threads overrides it."""
    monkeypatch.setattr(batch, "track_one", _reports_threads)
    files = [f"f{i}.nc" for i in range(4)]
    assert batch.worker_threads(two_workers) == threads_per_worker(2, available_cores())
    table = batch.track_many(files, tmp_path, client=two_workers)
    assert set(table["reason"]) == {str(threads_per_worker(2))}
    table = batch.track_many(files, tmp_path, client=two_workers, threads=2)
    assert set(table["reason"]) == {str(min(2, numba.config.NUMBA_NUM_THREADS))}


def test_importing_the_app_starts_no_threads():
    """The entry points set the wait policy after their modules are imported: the threading
    layer (which reads it once) must not start while they import."""
    code = (
        "import rankmodels_app.cli, rankmodels_app.track, rankmodels_app.aggregate\n"
        "import rankmodels.tracking.batch\n"
        "from numba.np.ufunc import parallel\n"
        "print(parallel._is_initialized)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"
