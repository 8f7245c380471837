"""The study framework: grid x seeds, seeds independent of the scheduler, tidy summaries."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.stats import wilcoxon

from rankmodels.studies import Study, dask_client, integer_seed, run_study


def noisy_task(params, seed):
    """metric y = shift + N(0, 1) from the seed; sleeps so that tasks finish out of order."""
    rng = np.random.default_rng(seed)
    time.sleep(0.02 * params.get("sleep", 0.0) * rng.random())
    return {"y": params["shift"] + rng.normal(), "z": float(params["shift"] ** 2)}


def _noisy_y(shift, seed):
    """noisy_task's y, recomputed: the sleep draw comes first."""
    rng = np.random.default_rng(seed)
    rng.random()
    return shift + rng.normal()


def paired_task(params, seed):
    """With paired seeds, metric(a) - metric(b) = 1 exactly, replicate by replicate."""
    base = np.random.default_rng(seed).normal()
    return {"y": base + (1.0 if params["which"] == "a" else 0.0)}


def failing_task(params, seed):
    if params["shift"] > 0:
        raise RuntimeError("task failed on purpose")
    return {"y": 0.0}


def _study(**kw):
    args = {
        "name": "toy",
        "task": noisy_task,
        "grid": {"shift": [0.0, 1.0, 3.0]},
        "replicates": 5,
        "seed": 11,
    }
    return Study(**{**args, **kw})


def test_tasks_cover_the_grid_with_spawned_seeds():
    study = _study(grid={"shift": [0.0, 1.0], "w": ["p", "q", "r"]}, fixed={"sleep": 1.0})
    tasks = study.tasks()
    assert len(tasks) == 2 * 3 * 5
    assert [t.params for t in tasks[::5]] == [
        {"sleep": 1.0, "shift": s, "w": w} for s in (0.0, 1.0) for w in "pqr"
    ]
    children = np.random.SeedSequence(11).spawn(5)
    for task in tasks:
        expected = children[task.replicate].generate_state(4)
        assert np.array_equal(task.seed.generate_state(4), expected)


def test_unpaired_seeds_differ_across_grid_points():
    tasks = _study(paired=False).tasks()
    states = {tuple(t.seed.generate_state(2)) for t in tasks}
    assert len(states) == len(tasks)
    nested = np.random.SeedSequence(11).spawn(3)[2].spawn(5)[4]
    assert np.array_equal(tasks[-1].seed.generate_state(4), nested.generate_state(4))


def test_a_task_spawning_from_its_seed_does_not_change_other_tasks():
    study = _study()
    tasks = study.tasks()
    tasks[0].seed.spawn(3)  # replicate 0 at grid point 0 spawns: replicate 0 at point 1 is intact
    fresh = study.tasks()[5]
    assert integer_seed(tasks[5].seed.spawn(1)[0]) == integer_seed(fresh.seed.spawn(1)[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"replicates": 0}, "replicates"),
        ({"seed": -1}, "seed"),
        ({"grid": {}}, "grid"),
        ({"grid": {"shift": []}}, "non-empty"),
        ({"grid": {"shift": [1.0, 1.0]}}, "repeated"),
        ({"fixed": {"shift": 2.0}}, "both swept and fixed"),
        ({"grid": {"replicate": [1]}}, "reserved"),
    ],
)
def test_bad_studies_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _study(**kwargs)


def test_summary_is_mean_and_standard_error_per_grid_point():
    study = _study()
    result = run_study(study)
    assert len(result.records) == 15
    summary = result.summary(["y"]).set_index("shift")
    children = np.random.SeedSequence(11).spawn(5)
    for shift in (0.0, 1.0, 3.0):
        y = np.array([_noisy_y(shift, child) for child in children])
        row = summary.loc[shift]
        assert row["n"] == 5
        assert row["mean"] == pytest.approx(y.mean())
        assert row["se"] == pytest.approx(y.std(ddof=1) / np.sqrt(5))
        assert row["median"] == pytest.approx(np.median(y))
    with pytest.raises(ValueError, match="unknown metrics"):
        result.summary(["nope"])


def test_serial_and_dask_give_the_same_table():
    study = _study(fixed={"sleep": 1.0}, grid={"shift": [0.0, 1.0, 3.0], "k": [1, 2]})
    serial = run_study(study)
    calls = []
    with dask_client(workers=2, processes=False) as client:
        parallel = run_study(study, client=client, progress=calls.append)
    assert sum(calls) == len(study.tasks())
    assert parallel.attrs["scheduler"].startswith("dask")
    columns = ["shift", "k", "replicate", "y", "z"]
    pd.testing.assert_frame_equal(serial.records[columns], parallel.records[columns])


def test_task_errors_propagate_serially_and_on_dask():
    study = _study(task=failing_task)
    with pytest.raises(RuntimeError, match="on purpose"):
        run_study(study)
    with dask_client(workers=1, processes=False) as client:
        with pytest.raises(RuntimeError, match="on purpose"):
            run_study(study, client=client)


def test_a_task_must_return_numbers():
    study = _study(task=lambda params, seed: ["not", "a", "mapping"])
    with pytest.raises(TypeError, match="mapping of metric"):
        run_study(study)


def test_metric_names_may_not_shadow_table_columns():
    study = _study(task=lambda params, seed: {"shift": 1.0})
    with pytest.raises(ValueError, match="shift"):
        run_study(study)


def test_dask_client_needs_exactly_one_target():
    with pytest.raises(ValueError, match="exactly one"):
        with dask_client():
            pass
    with pytest.raises(ValueError, match="exactly one"):
        with dask_client(workers=1, scheduler="tcp://127.0.0.1:1"):
            pass


def test_paired_comparison_sees_the_exact_difference():
    study = Study("pair", paired_task, {"which": ["a", "b"]}, replicates=8, seed=3)
    result = run_study(study)
    diff = result.paired_differences("y", "which", "a", "b")
    assert np.allclose(diff["difference"], 1.0)
    cmp = result.compare("y", "which", "b", "a").iloc[0]
    assert cmp["n"] == 8 and cmp["a_wins"] == 1.0
    assert cmp["mean_difference"] == pytest.approx(-1.0)
    # unpaired seeds: the differences are noisy, compared with scipy on the same pairs
    result = run_study(Study("pair", paired_task, {"which": ["a", "b"]}, 8, 3, paired=False))
    d = result.paired_differences("y", "which", "a", "b")["difference"].to_numpy()
    assert not np.allclose(d, 1.0)
    cmp = result.compare("y", "which", "a", "b").iloc[0]
    assert cmp["p_value"] == pytest.approx(wilcoxon(d).pvalue)
    assert cmp["a_wins"] == pytest.approx(np.mean(d < 0))
    with pytest.raises(ValueError, match="not in the study"):
        result.compare("y", "which", "a", "c")


def test_dataset_round_trips_through_netcdf(tmp_path):
    result = run_study(_study(grid={"shift": [0.0, 1.0], "name": ["u", "v"]}))
    ds = result.to_dataset()
    assert dict(ds.sizes) == {"shift": 2, "name": 2, "replicate": 5}
    path = tmp_path / "toy.nc"
    ds.to_netcdf(path, engine="netcdf4")
    back = xr.load_dataset(path)
    table = result.records.set_index(["shift", "name", "replicate"])
    for (shift, name, rep), y in table["y"].items():
        assert back["y"].sel(shift=shift, name=name, replicate=rep).item() == pytest.approx(y)
    assert back.attrs["study"] == "toy" and back.attrs["seed"] == 11


@pytest.mark.parametrize("address", ["xyz://host:1", "127.0.0.1:port"])
def test_a_client_that_cannot_start_leaves_dask_s_scheduler_alone(address):
    """A malformed address fails inside ``Client``; a default client would by then have set
    dask's global scheduler and registered itself, and every later xarray write in the process
    would fail ("no Client active", or a distributed lock on the dead address)."""
    import dask
    import distributed

    before = dask.config.get("scheduler", None)
    with pytest.raises((ValueError, KeyError, OSError)), dask_client(scheduler=address):
        pass
    assert dask.config.get("scheduler", None) == before
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()  # the failed client is not the process's client
