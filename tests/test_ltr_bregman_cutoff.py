"""The Bregman surrogates' target normalised by the ideal DCG@k (option ``k``): the target
against a brute-force ideal DCG@k, derivatives by finite differences on long lists, the
consistency for NDCG@k that the cut-off gives (brute force over every ranking of a query
with random labels), and Newton boosting's indifference to the surrogate's scale."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.bregman import (
    SURROGATES,
    bregman_minimiser,
    bregman_mixture_with_hessian,
    bregman_with_hessian,
)
from rankmodels.ltr.metrics import ndcg
from rankmodels.ltr.synthetic import synthetic_letor


def _brute_ideal_dcg(gains: np.ndarray, k: int) -> float:
    """max over every ranking of sum_{position p < k} gain / log2(2 + p)."""
    return max(
        sum(gains[i] / np.log2(2.0 + p) for p, i in enumerate(order[:k]))
        for order in itertools.permutations(range(gains.size))
    )


@pytest.mark.parametrize("k", [1, 3, 5])
def test_target_is_the_gains_over_the_brute_force_ideal_dcg_at_k(rng, k):
    """The square surrogate's minimiser is 2 r~, r~ = (2^r - 1) / IDCG@k; six relevant
    documents of seven, so the whole list's IDCG is larger."""
    R = rng.integers(1, 4, size=(3, 7)).astype(float)
    R[:, 6] = 0.0
    target = bregman_minimiser(R, surrogate="square", k=k) / 2.0
    for b in range(3):
        g = np.exp2(R[b]) - 1.0
        np.testing.assert_allclose(target[b], g / _brute_ideal_dcg(g, k), rtol=1e-12)
    full = bregman_minimiser(R, surrogate="square", k=None) / 2.0
    assert np.all(full <= target + 1e-15) and not np.allclose(full, target)


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_gradient_and_hessian_by_finite_differences_with_a_cut_off(rng, surrogate):
    """Lists of 14 documents, more than k = 3 of them relevant: the gradient against
    central differences of the value, the Hessian's diagonal against those of the gradient."""
    S = rng.normal(size=(2, 14))
    R = rng.integers(1, 4, size=(2, 14)).astype(float)
    opts = {"surrogate": surrogate, "k": 3, "scale": 0.7}
    res, hess = bregman_with_hessian(S, R, **opts)
    eps = 1e-6
    for j in range(14):
        up, down = S.copy(), S.copy()
        up[:, j] += eps
        down[:, j] -= eps
        (res_up, _), (res_down, _) = (
            bregman_with_hessian(up, R, **opts),
            bregman_with_hessian(down, R, **opts),
        )
        np.testing.assert_allclose(
            (res_up.value - res_down.value) / (2 * eps), res.grad[:, j], rtol=1e-5, atol=1e-8
        )
        np.testing.assert_allclose(
            (res_up.grad[:, j] - res_down.grad[:, j]) / (2 * eps), hess[:, j], rtol=1e-4, atol=1e-7
        )


# One query of four documents whose labels are random given the documents: labels A with
# probability 0.45, B with 0.55. By IDCG@1 the expected targets are 0.633, 0.700, 0.217,
# 0.700 (document 1 or 3 first: expected NDCG@1 0.70); by the whole list's IDCG they are
# 0.391, 0.382, 0.193, 0.382 (document 0 first: expected NDCG@1 0.633).
LABELS = np.array([[2.0, 1.0, 1.0, 1.0], [1.0, 2.0, 1.0, 2.0]])
PROBABILITIES = np.array([0.45, 0.55])


def _expected_ndcg_at_1(scores: np.ndarray) -> float:
    return float(
        sum(
            p * float(np.ravel(ndcg(r[None], scores=scores[None], k=1))[0])
            for p, r in zip(PROBABILITIES, LABELS, strict=True)
        )
    )


def _expected_surrogate_minimiser(surrogate: str, k: int | None) -> np.ndarray:
    """argmin_s sum_l p_l phi(s, r_l), by BFGS on the surrogate's value and gradient."""

    def risk(s):
        res = bregman_with_hessian(np.tile(s, (2, 1)), LABELS, surrogate=surrogate, k=k)[0]
        return float(PROBABILITIES @ res.value), PROBABILITIES @ res.grad

    return minimize(risk, np.zeros(4), jac=True, method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_the_cut_off_makes_the_surrogate_consistent_for_ndcg_at_k(surrogate):
    """The minimiser of the expected surrogate with k = 1 ranks as the best of all 24
    rankings for expected NDCG@1; with the whole list's normaliser it does not."""
    best = max(
        _expected_ndcg_at_1(-np.argsort(order).astype(float))
        for order in itertools.permutations(range(4))
    )
    assert best == pytest.approx(0.70)
    cut = _expected_surrogate_minimiser(surrogate, k=1)
    assert _expected_ndcg_at_1(cut) == pytest.approx(best, abs=1e-12)
    whole = _expected_surrogate_minimiser(surrogate, k=None)
    assert np.argmax(whole) == 0
    assert _expected_ndcg_at_1(whole) == pytest.approx(0.45 + 0.55 / 3)


@pytest.mark.parametrize(
    "options", [{"surrogate": "square"}, {"surrogate": "cross_entropy", "c": 0.5}]
)
def test_newton_boosting_is_indifferent_to_the_surrogate_scale(options):
    """phi_beta(s) = beta phi(s / beta): in u = s / beta the Newton leaf -G/H and the split
    gains' order are those of phi (gradient grad phi(u), Hessian grad^2 phi(u) / beta), so
    every tree is the same and the scores are beta times those at scale 1 (no l2, no
    Hessian floor). The gradient step is not: its step is not divided by beta."""
    data = synthetic_letor(n_queries=20, n_features=4, docs=(5, 14), seed=2)[0]
    kw = dict(n_trees=15, min_leaf=3, min_hessian=0.0, patience=100, valid=data)
    one = fit_boosted_ranker(data, "bregman", options=options, **kw)
    three = fit_boosted_ranker(data, "bregman", options={**options, "scale": 3.0}, **kw)
    assert len(one.trees) == len(three.trees) and len(one.train_loss) == 16
    np.testing.assert_allclose(three.scores(data), 3.0 * one.scores(data), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(three.train_loss, 3.0 * np.array(one.train_loss), rtol=1e-9)
    kw["step"] = "gradient"
    one = fit_boosted_ranker(data, "bregman", options=options, **kw)
    three = fit_boosted_ranker(data, "bregman", options={**options, "scale": 3.0}, **kw)
    assert not np.allclose(three.scores(data), 3.0 * one.scores(data), rtol=1e-3)


def test_the_mixture_takes_the_cut_off_of_its_surrogates(rng):
    """phi_alpha with k is the normalised alpha-weighted sum of the surrogates with k, and
    its Hessian's diagonal the same sum of theirs (lists longer than k)."""
    S = rng.normal(size=(2, 12))
    R = rng.integers(1, 4, size=(2, 12)).astype(float)
    alpha = {"cross_entropy": 0.2, "square": 0.5, "qnorm": 0.3}
    mix, mix_hess = bregman_mixture_with_hessian(S, R, k=4, **alpha)
    parts = [bregman_with_hessian(S, R, surrogate=name, k=4) for name in alpha]
    value = sum(w * part.value for w, (part, _) in zip(alpha.values(), parts, strict=True))
    grad = sum(w * part.grad for w, (part, _) in zip(alpha.values(), parts, strict=True))
    hess = sum(w * h for w, (_, h) in zip(alpha.values(), parts, strict=True))
    np.testing.assert_allclose(mix.value, value, rtol=1e-12)
    np.testing.assert_allclose(mix.grad, grad, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mix_hess, hess, rtol=1e-12)
    whole = bregman_mixture_with_hessian(S, R, k=None, **alpha)[0]
    assert not np.allclose(whole.grad, mix.grad)
