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


def test_the_association_given_each_trajectory_averages_to_the_marginal():
    """An EM's run keeps ``members[t, m]``, the association of cycle ``t``'s arrivals given
    trajectory ``m`` alone (the engine at that one position); its mean over the trajectories
    is ``posterior``, and each recorded arrival's row sums to one."""
    record = dimes_float767(seed=3, days=12)[0]
    config = TrackConfig(particles=300, ensemble=40)
    assert track_pass(prepare(record, config)).assoc.members is None  # kept for an EM only
    run = prepare(record, config, keep_members=True)
    this = track_pass(run)
    members, ens = this.assoc.members, this.ensembles
    assert members.shape == (*ens.shape[:2], *this.assoc.posterior.shape[1:])
    np.testing.assert_allclose(members.mean(axis=1), this.assoc.posterior, atol=1e-6)
    recorded = np.isfinite(run.cycles.toa)
    np.testing.assert_allclose(
        members.sum(axis=3)[recorded.nonzero()[0], :, recorded.nonzero()[1]], 1.0, atol=1e-5
    )
    t, m = 5, 17
    one = run.cycles.association(t, ens[t, m : m + 1])[0]
    np.testing.assert_allclose(members[t, m], one, atol=1e-6)
    assert np.ptp(members[t], axis=0)[recorded[t]].max() > 1e-3  # trajectories differ


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
