"""RankNet, LambdaRank, ListNet, ListMLE and the Bregman surrogates against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rankmodels.ltr import metrics
from rankmodels.ltr.bregman import SURROGATES, bregman_loss, bregman_minimiser
from rankmodels.ltr.listwise import listmle_loss, listnet_loss
from rankmodels.ltr.pairwise import lambdarank_loss, ranknet_loss
from rankmodels.permutations import all_permutations


def test_ranknet_value_by_pair_enumeration(rng):
    s = rng.normal(size=6)
    rel = rng.integers(0, 3, size=6).astype(float)
    expected = sum(
        math.log1p(math.exp(-(s[i] - s[j])))
        for i, j in itertools.permutations(range(6), 2)
        if rel[i] > rel[j]
    )
    assert ranknet_loss(s, rel).value == pytest.approx(expected)


def test_lambdas_from_swapping_documents_in_the_ranking(rng):
    """|Delta NDCG| by actually swapping two documents and re-evaluating NDCG."""
    n = 7
    s = rng.normal(size=n)
    rel = rng.integers(0, 4, size=n).astype(float)
    order = np.argsort(-s)
    base = metrics.ndcg(rel, order=order, k=4)
    lam = np.zeros(n)
    for i, j in itertools.permutations(range(n), 2):
        if rel[i] <= rel[j]:
            continue
        swapped = order.copy()
        pi, pj = np.flatnonzero(order == i)[0], np.flatnonzero(order == j)[0]
        swapped[pi], swapped[pj] = j, i
        delta = abs(metrics.ndcg(rel, order=swapped, k=4) - base)
        rho = 1 / (1 + math.exp(s[i] - s[j]))  # RankNet pair gradient magnitude
        lam[i] -= delta * rho
        lam[j] += delta * rho
    res = lambdarank_loss(s, rel, k=4)
    np.testing.assert_allclose(res.grad, lam, atol=1e-12)
    assert abs(res.grad.sum()) < 1e-12
    # the more relevant document of a misordered pair is pushed up (negative cost gradient)
    top_rel = int(np.argmax(rel))
    assert res.grad[top_rel] <= 0


def test_listnet_value_gradient_and_minimiser(rng):
    s = rng.normal(size=5)
    rel = np.array([2.0, 0.0, 1.0, 3.0, 0.0])
    target = np.exp(rel) / np.exp(rel).sum()
    logp = s - np.log(np.exp(s).sum())
    res = listnet_loss(s, rel)
    assert res.value == pytest.approx(-(target * logp).sum())
    at_min = listnet_loss(rel + 3.0, rel)
    np.testing.assert_allclose(at_min.grad, 0.0, atol=1e-12)
    assert at_min.value < res.value


def test_listmle_is_a_plackett_luce_likelihood_summing_to_one(rng):
    """exp(-ListMLE) over all n! ground-truth orders is a probability distribution."""
    n = 4
    s = rng.normal(size=n)
    total = 0.0
    for perm in all_permutations(n):
        rel = np.empty(n)
        rel[perm] = np.arange(n, 0, -1, dtype=float)  # perm[0] most relevant
        prob = 1.0
        for k in range(n):
            rest = perm[k:]
            prob *= math.exp(s[perm[k]]) / sum(math.exp(s[x]) for x in rest)
        value = listmle_loss(s, rel).value
        assert value == pytest.approx(-math.log(prob))
        total += math.exp(-value)
    assert total == pytest.approx(1.0)


def test_listmle_ties(rng):
    s = rng.normal(size=5)
    distinct = np.array([4.0, 1.0, 3.0, 0.0, 2.0])
    a = listmle_loss(s, distinct, rng=np.random.default_rng(1)).value
    assert a == pytest.approx(listmle_loss(s, distinct).value)  # no ties: rng irrelevant
    tied = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    values = {
        round(listmle_loss(s, tied, rng=np.random.default_rng(i)).value, 12) for i in range(20)
    }
    assert len(values) > 1  # random tie-breaking explores the tied orders


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_bregman_surrogates_are_nonnegative_convex_and_consistent(rng, surrogate):
    rel = np.array([3.0, 0.5, 2.0, 1.0, 0.2])  # positive gains: finite cross-entropy optimum
    best = bregman_minimiser(rel, surrogate=surrogate)
    np.testing.assert_array_equal(np.argsort(-best), np.argsort(-rel))  # NDCG consistency
    at = bregman_loss(best, rel, surrogate=surrogate)
    assert abs(at.value) < 1e-12
    np.testing.assert_allclose(at.grad, 0.0, atol=1e-12)
    for _ in range(20):
        a, b = rng.normal(size=5), rng.normal(size=5)
        fa = bregman_loss(a, rel, surrogate=surrogate).value
        fb = bregman_loss(b, rel, surrogate=surrogate).value
        fm = bregman_loss((a + b) / 2, rel, surrogate=surrogate).value
        assert fa >= -1e-12 and fb >= -1e-12
        assert fm <= (fa + fb) / 2 + 1e-12


def test_bregman_square_closed_form_and_errors(rng):
    s = rng.normal(size=4)
    rel = np.array([1.0, 0.0, 2.0, 1.0])
    g = 2**rel - 1
    rt = g / (np.sort(g)[::-1] @ (1 / np.log2(2 + np.arange(4))))
    assert bregman_loss(s, rel).value == pytest.approx(((rt - s / 2) ** 2).sum())
    with pytest.raises(ValueError, match="surrogate"):
        bregman_loss(s, rel, surrogate="hinge")
    with pytest.raises(ValueError, match="c must"):
        bregman_loss(s, rel, surrogate="cross_entropy", c=0.0)
