"""Every loss's diagonal second derivative against central differences of its gradient,
taken here one query and one document at a time."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.losses import LOSSES

CASES = [
    (name, {})
    for name in LOSSES.names
    if name not in ("sinkprop", "softrank", "pirank")  # smoothing set below
] + [
    ("bregman", {"surrogate": "cross_entropy", "c": 0.7}),
    ("bregman", {"surrogate": "qnorm"}),
    ("bregman_mix", {"square": 0.2, "qnorm": 1.5, "cross_entropy": 0.4}),
    ("lambdarank", {"k": 3}),
    ("sinkprop", {"sigma": 0.5}),
    ("softrank", {"sigma": 0.5}),
    ("pirank", {"tau": 1.0}),
]


def _batch(rng):
    lengths = np.array([5, 3, 6])
    s = rng.normal(size=(3, 6))
    r = rng.integers(0, 4, size=(3, 6)).astype(float)
    r[0, :2] = [3.0, 0.0]  # every query has a relevant and an irrelevant document
    r[1, :2] = [2.0, 0.0]
    r[2, :2] = [1.0, 0.0]
    return s, r, lengths


def _by_differences(spec, s, r, lengths, options, eps=1e-5):
    out = np.zeros(s.shape)
    for b, m in enumerate(lengths):
        for j in range(m):
            up, down = s[b, :m].copy(), s[b, :m].copy()
            up[j] += eps
            down[j] -= eps
            g_up = spec(up, r[b, :m], **options).grad[j]
            g_down = spec(down, r[b, :m], **options).grad[j]
            out[b, j] = (g_up - g_down) / (2 * eps)
    return out


@pytest.mark.parametrize(("name", "options"), CASES)
def test_second_derivatives_match_differences_of_the_gradient(rng, name, options):
    spec = LOSSES[name]
    s, r, lengths = _batch(rng)
    result, hess = spec.with_hessian(s, r, lengths, **{**spec.fit_options, **options})
    reference = spec(s, r, lengths, **{**spec.fit_options, **options})
    np.testing.assert_allclose(result.value, reference.value, rtol=1e-12)
    np.testing.assert_allclose(result.grad, reference.grad, rtol=1e-12, atol=1e-15)
    expected = _by_differences(spec, s, r, lengths, {**spec.fit_options, **options})
    np.testing.assert_allclose(hess, expected, rtol=1e-4, atol=1e-6)
    mask = np.arange(6)[None, :] < lengths[:, None]
    assert np.all(hess[~mask] == 0)
    assert np.any(np.abs(hess[mask]) > 1e-3)  # not trivially zero


def test_closed_forms_of_the_simple_surrogates(rng):
    s, r, lengths = _batch(rng)
    mask = np.arange(6)[None, :] < lengths[:, None]
    _, square = LOSSES["bregman"].with_hessian(s, r, lengths)
    np.testing.assert_array_equal(square, np.where(mask, 0.5, 0.0))
    _, ce = LOSSES["bregman"].with_hessian(s, r, lengths, surrogate="cross_entropy", c=2.0)
    np.testing.assert_allclose(ce, np.where(mask, np.exp(s / 2.0) / 2.0, 0.0))


def test_qnorm_uses_one_half_where_a_score_is_zero():
    s = np.array([[0.0, 0.4, -0.3], [0.0, 0.0, 0.0]])
    r = np.array([[2.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    _, hess = LOSSES["bregman"].with_hessian(s, r, np.array([3, 3]), surrogate="qnorm")
    assert hess[0, 0] == 0.5 and np.all(hess[1] == 0.5)
    assert np.all(np.isfinite(hess)) and hess[0, 1] != 0.5


def test_lambdarank_second_derivative_is_lambdamart_s():
    """Two documents, r = (1, 0), scores (0, 0): rho = 1/2, |Delta NDCG| = 1 - 1/log2(3)
    divided by IDCG = 1, so both get |Delta| / 4."""
    _, hess = LOSSES["lambdarank"].with_hessian(
        np.array([[0.0, 0.0]]), np.array([[1.0, 0.0]]), np.array([2])
    )
    np.testing.assert_allclose(hess, [[(1 - 1 / np.log2(3)) / 4] * 2])
