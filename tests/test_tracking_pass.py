"""A filter pass's smoother and association run when first read, under the parameters the
filter ran with: reading them later, after the run moved on to other parameters, gives what
an eager pass gives, and leaves the run's current parameters in place."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rankmodels.tracking.calibration import Calibration
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.model_fit import StatisticalModel
from rankmodels.tracking.pipeline import prepare, track_pass
from rankmodels.tracking.simulate import dimes_float767


def test_a_pass_read_later_equals_one_read_at_once():
    record = dimes_float767(seed=3, days=12)[0]
    run = prepare(record, TrackConfig(particles=300, ensemble=50))
    eager = track_pass(run)
    expected = (eager.ensembles, eager.mean, eager.cov, eager.assoc)
    lazy = track_pass(run)
    other = Calibration.nominal(run.cycles.n_sources, 1450.0)
    run.cycles.calibrate(other)
    model = run.statistical_model()
    moved = StatisticalModel(replace(model.signal, sigma=9.0), 3.0)
    run.use_model(moved)
    assert np.array_equal(lazy.filt.mean, eager.filt.mean)
    np.testing.assert_array_equal(lazy.ensembles, expected[0])
    np.testing.assert_array_equal(lazy.mean, expected[1])
    np.testing.assert_array_equal(lazy.cov, expected[2])
    np.testing.assert_array_equal(lazy.assoc.posterior, expected[3].posterior)
    np.testing.assert_array_equal(lazy.assoc.predicted_toa, expected[3].predicted_toa)
    # the run keeps the parameters it was moved to
    assert run.cycles.km_per_s == 1.45 and run.config.sigma == 9.0
    assert run.dynamics.process_noise == 3.0 and run.statistical_model() is moved


def test_progress_is_counted_once_whether_a_pass_completes_or_not():
    record = dimes_float767(seed=3, days=6)[0]
    run = prepare(record, TrackConfig(particles=100, ensemble=20))
    for read in (False, True):
        done: list[int] = []
        this = track_pass(run, done.append)
        this.settle_progress()
        if read:
            _ = this.assoc
        assert sum(done) == run.pass_steps
