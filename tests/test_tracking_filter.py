"""The particle filter against the exact Kalman filter, and the tangent-plane random walk."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.filter import particle_filter, systematic_resample
from rankmodels.tracking.geometry import tangent_offsets
from tests._tracking_planar import PlanarWalk, gaussian_loglik, kalman, simulate


def _run(rng, *, n_steps=40, q=2.0, r=1.5, n=6000, observed=None, **kw):
    dt = rng.uniform(0.5, 1.5, n_steps)
    observed = np.ones(n_steps, bool) if observed is None else observed
    x, y = simulate(rng, n_steps, q, r, dt)
    pf = particle_filter(
        np.zeros(2), dt, gaussian_loglik(y, r, observed), PlanarWalk(q), n, rng, **kw
    )
    return x, y, dt, pf, kalman(y, q, r, dt, observed)


def test_filter_matches_kalman(rng):
    _, _, _, pf, (mf, pf_var, ll, _, _) = _run(rng)
    # Monte Carlo tolerances scale with the effective sample size of each step
    se = np.sqrt(pf_var / pf.ess)[:, None]
    err = np.abs(pf.mean - mf)
    assert np.all(err < 6 * se) and err.mean() < 0.06
    var = np.stack([pf.cov[:, 0, 0], pf.cov[:, 1, 1]], axis=1)
    assert np.all(np.abs(var / pf_var[:, None] - 1) < 0.05 + 6 * np.sqrt(2 / pf.ess)[:, None])
    assert np.all(np.abs(pf.cov[:, 0, 1]) < 6 * pf_var / np.sqrt(pf.ess))
    # log p(y_t | y_<t) per step and in total (the evidence estimate is unbiased in p, not log p)
    assert np.abs(pf.loglik - ll).max() < 0.1
    assert abs(pf.loglik.sum() - ll.sum()) < 0.5
    assert np.all((pf.ess > 0) & (pf.ess <= 6000 + 1e-6))
    assert pf.resampled.any()
    # the association ensembles are equally weighted draws from the same posterior
    assert np.abs(pf.ensembles.mean(axis=1) - mf).max() < 0.3


def test_cycles_without_data_only_predict(rng):
    observed = np.zeros(30, bool)
    observed[:5] = True
    _, _, dt, pf, (mf, pf_var, ll, _, _) = _run(rng, n_steps=30, observed=observed)
    assert np.all(pf.loglik[~observed] == 0.0)
    # the filter's own variance grows by q^2 dt per empty cycle (q = 2), as in the Kalman
    # prediction step: no reweighting, so each increment is the step variance plus Monte Carlo
    # noise of a few times q^2 dt sqrt(2 / N) (plus the cross term with the current spread)
    var = 0.5 * (pf.cov[:, 0, 0] + pf.cov[:, 1, 1])
    assert np.allclose(var[5:], pf_var[5:], rtol=0.1)
    growth = np.diff(var[4:])
    assert np.all(
        np.abs(growth - 4.0 * dt[5:]) < 6 * np.sqrt((4.0 * dt[5:] + var[4:-1]) * 8 / 6000)
    )
    assert np.polyfit(dt[5:], growth, 1)[0] == pytest.approx(4.0, rel=0.1)
    assert not pf.resampled[5:].any() and np.all(pf.ess[5:] == pf.ess[5])


@pytest.mark.filterwarnings("error")
def test_collapse_is_detected_not_divided_by_zero(rng):
    dt = np.ones(6)
    y = np.zeros((6, 2))

    def loglik(t, x):
        if t == 3:
            return np.full(len(x), -np.inf)
        if t == 4:
            return np.full(len(x), np.nan)
        return -np.sum((x - y[t]) ** 2, axis=1)

    pf = particle_filter(np.zeros(2), dt, loglik, PlanarWalk(1.0), 500, rng)
    assert pf.collapsed.tolist() == [False, False, False, True, True, False]
    assert np.isneginf(pf.loglik[3:5]).all() and np.isfinite(pf.loglik[[0, 1, 2, 5]]).all()
    assert np.isfinite(pf.mean).all() and np.isfinite(pf.ess).all()


def test_infinite_likelihood_is_an_error(rng):
    with pytest.raises(ValueError, match=r"\+inf"):
        particle_filter(
            np.zeros(2), np.ones(2), lambda t, x: np.full(len(x), np.inf), PlanarWalk(1.0), 10, rng
        )


def test_systematic_resampling_counts(rng):
    for _ in range(20):
        w = rng.dirichlet(np.full(13, 0.5))
        n = int(rng.integers(1, 200))
        counts = np.bincount(systematic_resample(w, n, rng), minlength=13)
        assert counts.sum() == n
        assert np.all(counts >= np.floor(n * w) - 1e-9) and np.all(counts <= np.ceil(n * w))


@pytest.mark.parametrize("zeros", [False, True])
def test_systematic_resampling_is_the_sorted_search(zeros):
    """The merge equals numpy's search of the same points, zero weights (flat stretches of
    the cdf) and the last index included."""
    rng = np.random.default_rng(7)
    for size in (1, 2, 13, 1000):
        w = rng.dirichlet(np.full(size, 0.3))
        if zeros:  # about half the weights zero, the last one among them when there are two
            keep = rng.random(size) < 0.5
            keep[rng.integers(max(size - 1, 1))] = True
            keep[-1] = size == 1
            w = np.where(keep, w, 0.0) / np.sum(w[keep])
        for n in (1, 7, 1000):
            seed = int(rng.integers(1 << 30))
            got = systematic_resample(w, n, np.random.default_rng(seed))
            cdf = np.cumsum(w)
            cdf[-1] = 1.0
            u = (np.random.default_rng(seed).random() + np.arange(n)) / n
            want = np.minimum(np.searchsorted(cdf, u, side="right"), size - 1)
            np.testing.assert_array_equal(got, want)
            assert w[got].min() > 0


class _Fixed:
    """A generator whose uniform draw is ``value`` (points on the cdf's steps)."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def test_systematic_resampling_on_the_steps():
    """Points that fall exactly on a cumulative weight go past it (side="right"), over the
    zero weight too: u = 0, 1/4, 1/2, 3/4 on cdf 1/4, 1/4, 1/2, 1."""
    w = np.array([0.25, 0.0, 0.25, 0.5])
    np.testing.assert_array_equal(systematic_resample(w, 4, _Fixed(0.0)), [0, 2, 3, 3])
    # a draw just below 1 rounds the last point up to 1.0: still the last index, not past it
    last = systematic_resample(w, 4, _Fixed(np.nextafter(1.0, 0.0)))
    np.testing.assert_array_equal(last, [0, 3, 3, 3])


def test_tangent_random_walk_steps_and_density(rng):
    walk = RandomWalk(process_noise=6.0)
    x0 = np.array([-58.0, 179.99])  # next to the date line
    x = walk.propagate(np.tile(x0, (200_000, 1)), 2.5, rng)
    east, north = tangent_offsets(x0[0], x0[1], x[:, 0], x[:, 1])
    assert abs(east.mean()) < 0.1 and abs(north.mean()) < 0.1
    assert np.allclose([east.std(), north.std()], 6.0 * math.sqrt(2.5), rtol=0.01)
    assert np.all((x[:, 1] >= -180) & (x[:, 1] < 180))
    # the density (per degree^2, Jacobian included) integrates to one over lat/lon
    lat = np.linspace(-58.6, -57.4, 601)
    lon = np.linspace(179.99 - 1.2, 179.99 + 1.2, 1201)
    grid = np.stack(np.meshgrid(lat, lon, indexing="ij"), axis=-1)
    dens = np.exp(walk.log_density(x0, grid, 2.5))
    total = dens.sum() * (lat[1] - lat[0]) * (lon[1] - lon[0])
    assert total == pytest.approx(1.0, abs=2e-3)
    assert walk.log_density(x0, grid, 2.5).max() <= walk.log_density_bound(x0[None], 2.5)


def test_random_walk_rejects_bad_parameters():
    with pytest.raises(ValueError, match="process_noise"):
        RandomWalk(0.0)
    with pytest.raises(ValueError, match="time step"):
        RandomWalk(1.0).propagate(np.zeros((3, 2)), 0.0, np.random.default_rng(0))


def test_moments_are_km_covariance_at_the_mean(rng):
    walk = RandomWalk(5.0)
    x = walk.propagate(np.tile([-60.0, -80.0], (100_000, 1)), 1.0, rng)
    mean, cov = walk.moments(x)
    assert np.allclose(mean, [-60.0, -80.0], atol=0.002)
    assert np.allclose(cov, 25.0 * np.eye(2), rtol=0.02, atol=0.3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_particles": 0}, ValueError, "n_particles must be >= 1"),
        ({"n_particles": 10.5}, TypeError, "n_particles must be an integer"),
        ({"n_ensemble": -1}, ValueError, "n_ensemble must be >= 0"),
        ({"ess_threshold": 1.5}, ValueError, r"ess_threshold must be in \[0, 1\]"),
        ({"x0": np.zeros(3)}, ValueError, "x0 must be a finite"),
        ({"x0": np.array([np.nan, 0.0])}, ValueError, "x0 must be a finite"),
        ({"dt": np.array([1.0, 0.0])}, ValueError, "dt must be"),
        ({"dt": np.array([1.0, np.inf])}, ValueError, "dt must be"),
        ({"dt": np.ones((2, 2))}, ValueError, "dt must be"),
    ],
)
def test_filter_arguments_are_checked(rng, kwargs, error, match):
    args = {"x0": np.zeros(2), "dt": np.ones(2), "n_particles": 10, **kwargs}
    with pytest.raises(error, match=match):
        particle_filter(
            args.pop("x0"),
            args.pop("dt"),
            lambda t, x: np.zeros(len(x)),
            PlanarWalk(1.0),
            args.pop("n_particles"),
            rng,
            **args,
        )


@pytest.mark.parametrize(("n_ensemble", "kept"), [(0, 0), (80, 50)])
def test_ensemble_size_none_or_capped_at_the_particles(rng, n_ensemble, kept):
    """n_ensemble = 0: no ensembles; more than N: capped at N equally weighted draws."""
    pf = particle_filter(
        np.zeros(2),
        np.ones(4),
        lambda t, x: -np.sum(x**2, axis=1),
        PlanarWalk(1.0),
        50,
        rng,
        n_ensemble=n_ensemble,
    )
    assert pf.ensembles.shape == (4, kept, 2)
    assert np.isfinite(pf.mean).all()
