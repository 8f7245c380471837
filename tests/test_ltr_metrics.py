"""Ranking metrics: hand-computed values, brute force, and the DSM expectation identity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rankmodels import dsm
from rankmodels.ltr import metrics as M
from rankmodels.ltr.batching import hard_orders, pad_lists, ragged_batch

REL = np.array([3.0, 2.0, 3.0, 0.0, 1.0, 2.0])
ORDER = np.array([0, 1, 2, 3, 4, 5])  # items in index order


def _dcg_loop(rel_in_order, k, gain, disc):
    total = 0.0
    for i, r in enumerate(rel_in_order[:k]):
        total += gain(r) * disc(i + 1)  # 1-based position i+1
    return total


def test_dcg_and_ndcg_against_the_textbook_formula():
    g = lambda r: 2**r - 1  # noqa: E731
    d = lambda k: 1 / math.log2(1 + k)  # noqa: E731
    ranked = REL[ORDER]
    for k in (1, 3, 6, None):
        kk = 6 if k is None else k
        expected = _dcg_loop(ranked, kk, g, d)
        assert M.dcg(REL, order=ORDER, k=k) == pytest.approx(expected)
        ideal = _dcg_loop(sorted(REL, reverse=True), kk, g, d)
        assert M.ndcg(REL, order=ORDER, k=k) == pytest.approx(expected / ideal)


def test_sinkprop_discount_and_exp2_gain():
    # SinkProp section 2.1: D(k) = 1 for k = 1, 2 and 1/log2(k) after
    np.testing.assert_allclose(
        M.discounts(5, "sinkprop"), [1, 1, 1 / math.log2(3), 1 / math.log2(4), 1 / math.log2(5)]
    )
    np.testing.assert_allclose(M.discounts(4, "log2", k=2), [1, 1 / math.log2(3), 0, 0])
    expected = _dcg_loop(REL, 6, lambda r: 2**r, lambda k: 1 if k <= 2 else 1 / math.log2(k))
    assert M.dcg(REL, order=ORDER, gain="exp2", discount="sinkprop") == pytest.approx(expected)
    with pytest.raises(ValueError):
        M.discounts(3, "log10")
    with pytest.raises(ValueError):
        M.gains(REL, "linear")
    with pytest.raises(ValueError):
        M.discounts(3, np.array([1.0, 0.5]))


def test_ideal_order_scores_one_and_scores_sort_descending_with_index_ties():
    ideal = np.argsort(-REL, kind="stable")
    assert M.ndcg(REL, order=ideal) == pytest.approx(1.0)
    scores = np.array([0.5, 0.5, 2.0, -1.0, 0.0, 0.5])
    np.testing.assert_array_equal(hard_orders(scores[None], np.array([6]))[0], [2, 0, 1, 5, 4, 3])
    assert M.dcg(REL, scores) == pytest.approx(M.dcg(REL, order=[2, 0, 1, 5, 4, 3]))


def test_binary_metrics_by_hand():
    rel = np.array([0, 1, 0, 1, 0, 1.0])  # relevant at 1-based positions 2, 4, 6
    order = np.arange(6)
    assert M.precision(rel, order=order, k=2) == pytest.approx(0.5)
    assert M.precision(rel, order=order, k=4) == pytest.approx(0.5)
    assert M.precision(rel, order=order) == pytest.approx(0.5)
    assert M.average_precision(rel, order=order) == pytest.approx((1 / 2 + 2 / 4 + 3 / 6) / 3)
    assert M.average_precision(rel, order=order, k=4) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert M.reciprocal_rank(rel, order=order) == pytest.approx(0.5)
    assert M.reciprocal_rank(rel, order=order, k=1) == 0.0
    alpha = 0.7
    assert M.rbp(rel, order=order, alpha=alpha) == pytest.approx(
        (1 - alpha) * (alpha**1 + alpha**3 + alpha**5)
    )
    assert M.arp(rel, order=order) == pytest.approx((2 + 4 + 6) / 3)


def test_err_and_opa_by_brute_force():
    rel = np.array([2.0, 0.0, 1.0, 2.0])
    order = np.array([1, 0, 3, 2])
    R = [(2 ** rel[i] - 1) / 2**2 for i in order]
    expected, survive = 0.0, 1.0
    for p, r in enumerate(R):
        expected += survive * r / (p + 1)
        survive *= 1 - r
    assert M.err(rel, order=order) == pytest.approx(expected)
    assert M.err(rel, order=order, max_grade=3) < expected
    with pytest.raises(ValueError, match="max_grade"):
        M.err(rel, order=order, max_grade=1)
    pos = np.argsort(order)
    pairs = [(i, j) for i, j in itertools.permutations(range(4), 2) if rel[i] > rel[j]]
    correct = sum(pos[i] < pos[j] for i, j in pairs)
    assert M.opa(rel, order=order) == pytest.approx(correct / len(pairs))


def test_cut_offs_beyond_the_list():
    """P@k divides by k even when k exceeds the list (also for k beyond int64)."""
    ranked = np.array([1.0, 0.0, 2.0])
    for k in (5, 10**20):
        assert M.precision(ranked, order=np.arange(3), k=k) == pytest.approx(2 / k)
        assert M.ndcg(ranked, order=np.arange(3), k=k) == M.ndcg(ranked, order=np.arange(3))


def test_undefined_conventions():
    zeros = np.zeros(4)
    order = np.arange(4)
    assert M.ndcg(zeros, order=order) == 1.0  # LightGBM: every order is ideal
    assert M.ndcg(zeros, order=order, undefined=0.0) == 0.0  # TF-Ranking
    np.testing.assert_array_equal(M.ndcg([zeros, REL], [np.zeros(4), np.zeros(6)], k=3)[:1], [1])
    assert M.average_precision(zeros, order=order) == 0.0
    assert M.reciprocal_rank(zeros, order=order) == 0.0
    assert np.isnan(M.arp(zeros, order=order))
    assert np.isnan(M.opa(np.ones(4), order=order))


def test_ragged_batch_equals_single_lists(rng):
    lists = [rng.integers(0, 3, size=m).astype(float) for m in (5, 2, 7)]
    scores = [rng.normal(size=len(r)) for r in lists]
    S, lengths = pad_lists(scores)
    Rl, _ = pad_lists(lists)
    for name, fn in M.METRICS.items():
        kw = {"max_grade": 2.0} if name == "err" else {}  # default: largest label given
        batch = fn(Rl, S, lengths=lengths, **kw)
        single = [fn(r, s, **kw) for r, s in zip(lists, scores, strict=True)]
        np.testing.assert_allclose(batch, single, err_msg=name)
        np.testing.assert_allclose(fn(lists, scores, **kw), single, err_msg=name)
        orders = [np.argsort(-s, kind="stable") for s in scores]
        padded_orders = np.zeros(S.shape, dtype=np.int64)
        for b, o in enumerate(orders):
            padded_orders[b, : len(o)] = o
        by_order = fn(lists, order=padded_orders, **kw)
        np.testing.assert_allclose(by_order, single, err_msg=name)


@pytest.mark.parametrize("name", sorted(M.METRICS))
def test_expected_metric_under_a_permutation_matrix_is_the_hard_metric(rng, name):
    rel = rng.integers(0, 4, size=6).astype(float)
    order = rng.permutation(6)
    fn = M.METRICS[name]
    np.testing.assert_allclose(
        fn(rel, dsm=dsm.permutation_matrix(order)), fn(rel, order=order), equal_nan=True
    )


@pytest.mark.parametrize("name", ["dcg", "ndcg", "precision", "rbp", "arp"])
def test_expectation_identity_eq3_against_enumeration(rng, name):
    """SinkProp eq. 3: a rank-linear metric's expectation depends only on the marginals."""
    n, m = 5, 7
    rel = rng.integers(0, 4, size=n).astype(float)
    orders = np.array([rng.permutation(n) for _ in range(m)])
    w = rng.dirichlet(np.ones(m))
    fn = M.METRICS[name]
    enumerated = sum(wi * fn(rel, order=o) for wi, o in zip(w, orders, strict=True))
    assert fn(rel, dsm=dsm.marginal_matrix(orders, w)) == pytest.approx(enumerated)
    # the same marginals from the Birkhoff-von Neumann mixture give the same value
    perms, weights = dsm.birkhoff_decomposition(dsm.marginal_matrix(orders, w))
    bvn = sum(wi * fn(rel, order=o) for wi, o in zip(weights, perms, strict=True))
    assert bvn == pytest.approx(enumerated)


def test_non_rank_linear_metrics_use_the_bvn_mixture(rng):
    rel = np.array([1.0, 0.0, 0.0])
    # uniform over the 3 cyclic shifts: every marginal is 1/3
    cyc = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    U = dsm.marginal_matrix(cyc)
    expected_rr = np.mean([M.reciprocal_rank(rel, order=o) for o in cyc])
    # one relevant document: RR is rank-linear here, so any mixture agrees
    assert M.reciprocal_rank(rel, dsm=U) == pytest.approx(expected_rr)
    perms, w = dsm.birkhoff_decomposition(U)
    rel2 = np.array([1.0, 1.0, 0.0])
    via_bvn = sum(wi * M.reciprocal_rank(rel2, order=p) for wi, p in zip(w, perms, strict=True))
    assert M.reciprocal_rank(rel2, dsm=U) == pytest.approx(via_bvn)


def test_input_validation():
    with pytest.raises(ValueError, match="exactly one"):
        M.ndcg(REL)
    with pytest.raises(ValueError, match="exactly one"):
        M.ndcg(REL, np.zeros(6), order=ORDER)
    with pytest.raises(ValueError, match="permutation"):
        M.ndcg(REL, order=[0, 0, 1, 2, 3, 4])
    with pytest.raises(TypeError):
        M.ndcg(REL, order=ORDER.astype(float))
    with pytest.raises(ValueError, match="doubly stochastic"):
        M.ndcg(REL, dsm=np.ones((6, 6)))
    with pytest.raises(ValueError, match="non-negative"):
        M.ndcg(-REL, np.zeros(6))
    with pytest.raises(ValueError, match="finite"):
        M.ndcg(REL, np.full(6, np.nan))
    with pytest.raises(ValueError, match="k must"):
        M.precision(REL, order=ORDER, k=0)
    with pytest.raises(ValueError, match="alpha"):
        M.rbp(REL, order=ORDER, alpha=1.5)
    with pytest.raises(ValueError, match="lengths"):
        ragged_batch(np.zeros((2, 3)), lengths=[1, 4])
    with pytest.raises(ValueError, match="shape"):
        ragged_batch(np.zeros(3), np.zeros(4))
