"""An experiment's EM checkpoint (:mod:`rankmodels.tracking.checkpoint`): a joint calibration
interrupted part-way and resumed ends with exactly the estimates of an uninterrupted run with
the same seed, running only the E-steps it had not finished; keys do not depend on string
hashing; ``track-float FOLDER/ --calibrate-mode experiment --resume`` says what it read back."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.tracking import experiment
from rankmodels.tracking.checkpoint import CHECKPOINT_FOLDER, PassStore
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.experiment import calibrate_experiment
from rankmodels_app.track import track_float
from tests._experiment_data import write_experiment

CONFIG = TrackConfig(
    calibrate=True, particles=150, calibration_particles=150, ensemble=20,
    calibration_iterations=2, seed=3,
)  # fmt: skip


@pytest.fixture(scope="module")
def floats(tmp_path_factory):
    return write_experiment(tmp_path_factory.mktemp("cp"), days=12, n_floats=2)


@pytest.fixture(scope="module")
def uninterrupted(floats):
    return calibrate_experiment(floats, CONFIG)


def _same(a, b):
    va, sa = a.parameters.vector()
    vb, sb = b.parameters.vector()
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(sa, sb)
    assert a.loglik == b.loglik and a.best == b.best and a.stop == b.stop
    for fa, fb in zip(a.floats, b.floats, strict=True):
        assert pickle.dumps(fa.result.trace) == pickle.dumps(fb.result.trace)


class Killed(BaseException):
    """What a kill looks like to the search: nothing after it runs."""


def test_an_interrupted_calibration_resumes_to_the_same_estimates(
    floats, uninterrupted, tmp_path, monkeypatch
):
    original = experiment.float_e_step
    calls = []

    def dies_after(limit):
        def e_step(*args, **kwargs):
            if len(calls) == limit:
                raise Killed
            calls.append(1)
            return original(*args, **kwargs)

        return e_step

    monkeypatch.setattr(experiment, "float_e_step", dies_after(7))
    with pytest.raises(Killed):
        calibrate_experiment(floats, CONFIG, checkpoint=PassStore(tmp_path, resume=False))
    assert len(list(tmp_path.glob("*.pickle"))) == 7
    monkeypatch.setattr(experiment, "float_e_step", original)
    store = PassStore(tmp_path, resume=True)
    resumed = calibrate_experiment(floats, CONFIG, checkpoint=store)
    _same(resumed, uninterrupted)
    assert store.hits >= 7 and store.misses > 0  # (a pass the search repeats is a hit too)
    again = PassStore(tmp_path, resume=True)
    _same(calibrate_experiment(floats, CONFIG, checkpoint=again), uninterrupted)
    assert again.misses == 0 and again.hits == store.hits + store.misses


def test_another_seed_or_a_fresh_start_runs_every_pass(floats, tmp_path):
    """Entries of another seed are never read back (the only hits are the passes a search
    repeats within its own run), and a run that does not resume starts afresh."""
    from dataclasses import replace

    seed3 = PassStore(tmp_path / "a", resume=False)
    calibrate_experiment(floats, CONFIG, checkpoint=seed3)
    alone = PassStore(tmp_path / "b", resume=False)
    calibrate_experiment(floats, replace(CONFIG, seed=4), checkpoint=alone)
    beside = PassStore(tmp_path / "a", resume=True)
    calibrate_experiment(floats, replace(CONFIG, seed=4), checkpoint=beside)
    assert (beside.hits, beside.misses) == (alone.hits, alone.misses)
    fresh = PassStore(tmp_path / "a", resume=False)
    assert list((tmp_path / "a").glob("*.pickle")) == []  # the old checkpoint removed
    calibrate_experiment(floats, CONFIG, checkpoint=fresh)
    assert (fresh.hits, fresh.misses) == (seed3.hits, seed3.misses)


def test_keys_do_not_depend_on_string_hashing():
    code = (
        "from rankmodels.tracking.checkpoint import PassStore;"
        "from rankmodels.tracking.config import TrackConfig;"
        "print(PassStore.key('abc', TrackConfig(calibrate=True), {'x': frozenset('pqrs')}))"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
        for seed in (1, 2, 3)
    }
    assert len(keys) == 1
    config = TrackConfig(calibrate=True)
    assert PassStore.key("abc", config, 1.0) != PassStore.key("abd", config, 1.0)
    assert PassStore.key("abc", config, 1.0) != PassStore.key("abc", config, 2.0)


def test_cli_experiment_resume_reads_the_passes_back(floats, tmp_path):
    args = [
        str(floats[0].parent), "-o", str(tmp_path / "out"), "--workers", "1", "--no-plots",
        "--calibrate-mode", "experiment", "--particles", "150", "--calibration-particles",
        "150", "--calibration-iterations", "1", "--seed", "3",
    ]  # fmt: skip
    first = CliRunner().invoke(track_float, args)
    assert first.exit_code == 0, first.output
    sources = (tmp_path / "out" / "sources.csv").read_text()
    entries = len(list((tmp_path / "out" / CHECKPOINT_FOLDER).glob("*.pickle")))
    assert entries > 0
    again = CliRunner().invoke(track_float, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    assert (
        f"resume: the joint calibration read {entries} float passes back from "
        f"{tmp_path / 'out' / CHECKPOINT_FOLDER} and ran 0\n"
    ) in again.output
    assert "resume: kept 2 of 2 floats" in again.output
    assert (tmp_path / "out" / "sources.csv").read_text() == sources
