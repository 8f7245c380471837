"""A filter pass's smoother and association run when first read, under the parameters the
filter ran with: reading them later, after passes under other parameters ran, gives what an
eager pass gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rankmodels.tracking.calibration import Calibration
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.model_fit import StatisticalModel
from rankmodels.tracking.passes import Predictor, run_pass
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters
from rankmodels.tracking.simulate import dimes_float767


def test_a_pass_read_later_equals_one_read_at_once():
    record = dimes_float767(seed=3, days=12)[0]
    config = TrackConfig(particles=300, ensemble=50)
    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    eager = run_pass(prepared, start, config)
    expected = (eager.ensembles, eager.mean, eager.cov, eager.assoc)
    lazy = run_pass(prepared, start, config)
    other = Calibration.nominal(prepared.n_sources, 1450.0)
    moved = Parameters(other, StatisticalModel(replace(start.signal, sigma=9.0), 3.0))
    elsewhere = run_pass(prepared, moved, config)
    _ = elsewhere.assoc  # a whole pass under other parameters in between
    assert not np.array_equal(elsewhere.mean, expected[1])
    assert np.array_equal(lazy.filt.mean, eager.filt.mean)
    np.testing.assert_array_equal(lazy.ensembles, expected[0])
    np.testing.assert_array_equal(lazy.mean, expected[1])
    np.testing.assert_array_equal(lazy.cov, expected[2])
    np.testing.assert_array_equal(lazy.assoc.posterior, expected[3].posterior)
    np.testing.assert_array_equal(lazy.assoc.predicted_toa, expected[3].predicted_toa)
    assert lazy.params is start and elsewhere.params is moved


def test_the_association_given_each_trajectory_averages_to_the_marginal():
    """An EM's run keeps ``members[t, m]``, the association of cycle ``t``'s arrivals given
    trajectory ``m`` alone (the engine at that one position); its mean over the trajectories
    is ``posterior``, and each recorded arrival's row sums to one."""
    record = dimes_float767(seed=3, days=12)[0]
    config = TrackConfig(particles=300, ensemble=40)
    prepared = prepare(record, config)
    start = start_parameters(prepared, config)
    assert run_pass(prepared, start, config).assoc.members is None  # kept for an EM only
    this = run_pass(prepared, start, config, keep_members=True)
    members, ens = this.assoc.members, this.ensembles
    assert members.shape == (*ens.shape[:2], *this.assoc.posterior.shape[1:])
    np.testing.assert_allclose(members.mean(axis=1), this.assoc.posterior, atol=1e-6)
    recorded = np.isfinite(prepared.toa)
    np.testing.assert_allclose(
        members.sum(axis=3)[recorded.nonzero()[0], :, recorded.nonzero()[1]], 1.0, atol=1e-5
    )
    t, m = 5, 17
    one = Predictor(prepared, start).association(t, ens[t, m : m + 1])[0]
    np.testing.assert_allclose(members[t, m], one, atol=1e-6)
    assert np.ptp(members[t], axis=0)[recorded[t]].max() > 1e-3  # trajectories differ


def test_progress_is_counted_once_whether_a_pass_completes_or_not():
    record = dimes_float767(seed=3, days=6)[0]
    config = TrackConfig(particles=100, ensemble=20)
    prepared = prepare(record, config)
    for read in (False, True):
        done: list[int] = []
        this = run_pass(prepared, start_parameters(prepared, config), config, progress=done.append)
        this.settle_progress()
        if read:
            _ = this.assoc
        assert sum(done) == prepared.pass_steps
