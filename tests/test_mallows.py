"""Mallows models: normaliser and moments by enumeration, sampling, fitting, mixtures."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.mallows import (
    Mallows,
    MallowsMixture,
    expected_distance,
    fit_mallows,
    fit_mallows_mixture,
    log_normaliser,
)
from rankmodels.permutations import all_permutations, inverse, kendall_distance, lehmer_index


@pytest.mark.parametrize("n", [1, 2, 4, 6])
@pytest.mark.parametrize("phi", [0.2, 0.7, 1.0])
def test_normaliser_and_mean_distance_by_enumeration(n, phi):
    perms = all_permutations(n)
    centre = np.random.default_rng(n).permutation(n)
    d = kendall_distance(inverse(perms), inverse(centre))
    assert log_normaliser(n, phi) == pytest.approx(np.log(np.sum(phi**d)))
    model = Mallows(centre, phi)
    p = model.pmf(perms)
    assert p.sum() == pytest.approx(1.0)
    assert expected_distance(n, phi) == pytest.approx(float(p @ d))


def test_sampling_matches_the_pmf(rng):
    model = Mallows(np.array([2, 0, 3, 1]), 0.5)
    samples = model.sample(40000, rng)
    freq = np.bincount(lehmer_index(samples), minlength=24) / 40000
    p = model.pmf(all_permutations(4))
    assert np.max(np.abs(freq - p)) < 4 * np.sqrt(p.max() / 40000)


def test_fit_recovers_centre_and_dispersion(rng):
    truth = Mallows(np.array([3, 1, 4, 0, 5, 2]), 0.4)
    fitted = fit_mallows(truth.sample(5000, rng))
    assert fitted.centre.tolist() == truth.centre.tolist()
    assert fitted.phi == pytest.approx(0.4, abs=0.03)


def test_mixture_pmf_sampling_and_em(rng):
    a = Mallows(np.arange(5), 0.3)
    b = Mallows(np.arange(5)[::-1], 0.3)
    mix = MallowsMixture(np.array([0.7, 0.3]), (a, b))
    assert mix.pmf(all_permutations(5)).sum() == pytest.approx(1.0)
    model, loglik = fit_mallows_mixture(mix.sample(3000, rng), 2, rng)
    centres = sorted(tuple(c.centre.tolist()) for c in model.components)
    assert centres == [(0, 1, 2, 3, 4), (4, 3, 2, 1, 0)]
    big = int(np.argmax(model.weights))
    assert model.components[big].centre.tolist() == [0, 1, 2, 3, 4]
    assert model.weights[big] == pytest.approx(0.7, abs=0.04)
    assert loglik == pytest.approx(float(mix.log_pmf(mix.sample(3000, rng)).mean()), abs=0.1)


def test_invalid_parameters():
    with pytest.raises(ValueError, match="phi"):
        Mallows(np.arange(3), 0.0)
    with pytest.raises(ValueError, match="permutation"):
        Mallows(np.array([0, 0, 1]), 0.5)
    with pytest.raises(ValueError, match="weights"):
        MallowsMixture(np.array([0.5, 0.6]), (Mallows(np.arange(3), 0.5),) * 2)
