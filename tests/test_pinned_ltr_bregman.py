"""The Bregman surrogates' default cut-off is 10: without ``k`` the target is the gains
over the ideal DCG of the ten best documents (written out here), on lists of 14 documents
with more than ten of them relevant, so that the whole list's ideal DCG differs."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.bregman import (
    bregman_loss,
    bregman_minimiser,
    bregman_mixture_loss,
    bregman_mixture_with_hessian,
    bregman_with_hessian,
)
from rankmodels.ltr.losses import LOSSES


@pytest.fixture
def case(rng):
    relevance = rng.integers(1, 4, size=(2, 14)).astype(float)
    relevance[:, 0] = 0.0
    scores = rng.normal(size=(2, 14))
    gains = np.exp2(relevance) - 1.0
    best = -np.sort(-gains, axis=1)[:, :10]
    ideal = (best / np.log2(2.0 + np.arange(10))).sum(axis=1)
    target = gains / ideal[:, None]
    whole = (-np.sort(-gains, axis=1) / np.log2(2.0 + np.arange(14))).sum(axis=1)
    assert np.all(whole > ideal * (1 + 1e-3))  # the cut-off matters here
    return scores, relevance, target


def test_the_square_surrogate_and_its_minimiser_cut_the_norm_after_ten(case):
    """``phi = ||r~ - s / 2||^2``, gradient ``s / 2 - r~``, minimiser ``2 r~``."""
    s, rel, target = case
    res = bregman_loss(s, rel)
    np.testing.assert_allclose(res.value, ((target - s / 2.0) ** 2).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(np.reshape(res.grad, s.shape), s / 2.0 - target, rtol=1e-12)
    with_hessian, _ = bregman_with_hessian(s, rel)
    np.testing.assert_allclose(np.reshape(with_hessian.grad, s.shape), s / 2 - target, rtol=1e-12)
    np.testing.assert_allclose(bregman_minimiser(rel), 2.0 * target, rtol=1e-12)
    registered = LOSSES["bregman"].function(s, rel)
    np.testing.assert_allclose(np.reshape(registered.grad, s.shape), s / 2 - target, rtol=1e-12)


def test_the_mixture_cuts_the_norm_after_ten(case):
    """The square surrogate alone in the mixture: its gradient ``s / 2 - r~``."""
    s, rel, target = case
    only_square = {"cross_entropy": 0.0, "qnorm": 0.0}
    for res in (bregman_mixture_loss(s, rel, **only_square),
                bregman_mixture_with_hessian(s, rel, **only_square)[0]):  # fmt: skip
        np.testing.assert_allclose(np.reshape(res.grad, s.shape), s / 2 - target, rtol=1e-12)
