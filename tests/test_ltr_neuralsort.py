"""NeuralSort / PiRank: the operator as printed, tau limits (proposition 1), multi-level,
straight-through estimation."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr import metrics
from rankmodels.ltr.neuralsort import neuralsort, pirank_loss, relaxed_levels, relaxed_topk


def _operator_as_printed(s, tau):
    """P[i, :] = softmax(((n + 1 - 2i) s - A_s 1) / tau), i = 1..n, A_s[j,l] = |s_j - s_l|."""
    n = len(s)
    A1 = np.array([sum(abs(s[j] - s[l]) for l in range(n)) for j in range(n)])
    P = np.empty((n, n))
    for i in range(1, n + 1):
        z = ((n + 1 - 2 * i) * s - A1) / tau
        e = np.exp(z - z.max())
        P[i - 1] = e / e.sum()
    return P


def test_operator_matches_the_printed_formula(rng):
    s = rng.normal(size=7)
    np.testing.assert_allclose(neuralsort(s, 0.8), _operator_as_printed(s, 0.8), atol=1e-14)
    np.testing.assert_allclose(neuralsort(s, 0.8, k=3), _operator_as_printed(s, 0.8)[:3])
    np.testing.assert_allclose(neuralsort(s, 0.8).sum(axis=1), 1.0)


@pytest.mark.parametrize("block_size", [None, 6, 11])
def test_tau_to_zero_recovers_sort_and_hard_ndcg_proposition1(rng, block_size):
    n, k = 40, 5
    s = rng.normal(size=n)
    rel = rng.integers(0, 4, size=n).astype(float)
    P, _ = relaxed_topk(s, 1e-5, k, block_size)
    np.testing.assert_allclose(P, np.eye(n)[np.argsort(-s)[:k]], atol=1e-12)
    hard = 1 - metrics.ndcg(rel, s, k=k)
    gaps = [
        abs(
            pirank_loss(s, rel, tau=t, k=k, block_size=block_size, straight_through=False).value
            - hard
        )
        for t in (10.0, 1.0, 0.01, 1e-5)
    ]
    assert gaps[-1] < 1e-9 and gaps[0] > gaps[-1]


def test_multilevel_rows_are_distributions_and_blocks_beyond_n_are_single_level(rng):
    s = rng.normal(size=30)
    P, _ = relaxed_topk(s, 0.5, 4, block_size=7)
    assert P.shape == (4, 30)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    single, _ = relaxed_topk(s, 0.5, 4)
    same, _ = relaxed_topk(s, 0.5, 4, block_size=30)
    np.testing.assert_array_equal(single, same)
    assert np.abs(P - single).max() > 1e-3  # a different relaxation at finite tau
    with pytest.raises(ValueError, match="block_size"):
        relaxed_topk(s, 0.5, 4, block_size=4)


def test_straight_through_value_is_hard_and_gradient_is_relaxed(rng):
    s = [rng.normal(size=m) for m in (9, 4)]
    rel = [rng.integers(0, 3, size=m).astype(float) + (np.arange(m) == 0) for m in (9, 4)]
    st = pirank_loss(s, rel, tau=0.5, k=3)
    relaxed = pirank_loss(s, rel, tau=0.5, k=3, straight_through=False)
    hard = [1 - metrics.ndcg(r, x, k=3) for r, x in zip(rel, s, strict=True)]
    np.testing.assert_allclose(st.value, hard)
    np.testing.assert_array_equal(st.grad, relaxed.grad)
    assert np.all(np.abs(relaxed.value - st.value) > 1e-6)


def test_invalid_tau_and_block_size():
    with pytest.raises(ValueError, match="tau"):
        neuralsort(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="tau"):
        pirank_loss(np.zeros(3), np.ones(3), tau=-1.0)
    # without a cut-off the blocks cannot shrink a list longer than block_size
    for k in (None, 5):
        with pytest.raises(ValueError, match="block_size needs a cut-off k"):
            pirank_loss(np.zeros(8), np.ones(8), k=k, block_size=5)


def _hard_topk(s, k):
    """The first k rows of the permutation matrix sorting s decreasingly."""
    return np.eye(len(s))[np.argsort(-s)[:k]]


@pytest.mark.parametrize("ratio", [1.0, 0.3])
def test_two_levels_by_definition_with_per_level_temperatures(rng, ratio):
    """P = Q [blockdiag(P_1, P_2)], P_c = NeuralSort(block c, tau_1 = ratio tau),
    Q = NeuralSort(concatenated relaxed tops, tau_2 = tau) (appendix B, eq. 19)."""
    s, tau, k = rng.normal(size=10), 0.7, 3
    P1, P2 = neuralsort(s[:6], ratio * tau, k), neuralsort(s[6:], ratio * tau, k)
    Q = neuralsort(np.concatenate([P1 @ s[:6], P2 @ s[6:]]), tau, k)
    expected = np.hstack([Q[:, :3] @ P1, Q[:, 3:] @ P2])
    P, _ = relaxed_topk(s, tau, k, block_size=6, level_ratio=ratio)
    np.testing.assert_allclose(P, expected, rtol=1e-12, atol=1e-15)


def test_levels_and_the_eq19_limit_lowest_level_first(rng):
    assert relaxed_levels(6, 3, 6) == 1 and relaxed_levels(10, 3, 6) == 2
    assert relaxed_levels(40, 3, 7) == 4  # 40 -> 18 -> 9 -> 5 -> one sort
    assert relaxed_levels(40, 3, None) == 1
    # tau_1 -> 0 with tau_2 = tau fixed: the blocks are sorted exactly, the top is relaxed
    s, tau, k = rng.normal(size=10), 0.7, 3
    P1, P2 = _hard_topk(s[:6], k), _hard_topk(s[6:], k)
    Q = neuralsort(np.concatenate([P1 @ s[:6], P2 @ s[6:]]), tau, k)
    P, _ = relaxed_topk(s, tau, k, block_size=6, level_ratio=1e-7)
    np.testing.assert_allclose(P, np.hstack([Q[:, :3] @ P1, Q[:, 3:] @ P2]), atol=1e-9)
    one_tau, _ = relaxed_topk(s, tau, k, block_size=6)
    assert np.abs(one_tau - P).max() > 1e-3  # the per-level temperatures matter
    for bad in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError, match="level_ratio must be in"):
            pirank_loss(s, np.ones(10), k=3, block_size=6, level_ratio=bad)


def _loss_list_by_list(scores, rel, lengths, tau, k, block_size, straight_through):
    """PiRank's value and gradient one list at a time through :func:`relaxed_topk` (the
    per-list NeuralSort and its hand-written VJP)."""
    value, grad = np.zeros(len(lengths)), np.zeros(scores.shape)
    for b, m in enumerate(lengths):
        s, r = scores[b, :m], rel[b, :m]
        kk = m if k is None else min(k, m)
        gain = 2.0**r - 1.0
        disc = 1.0 / np.log2(np.arange(2, m + 2))
        idcg = np.sort(gain)[::-1][:kk] @ disc[:kk]
        if m == 0 or idcg == 0:
            continue
        u, d = gain / idcg, disc[:kk]
        P, backward = relaxed_topk(s, tau, kk, block_size)
        hard = u[np.argsort(-s, kind="stable")[:kk]] @ d
        value[b] = 1.0 - (hard if straight_through else d @ P @ u)
        grad[b, :m] = backward(-np.outer(d, u))
    return value, grad


@pytest.mark.parametrize("straight_through", [True, False])
@pytest.mark.parametrize(("k", "block_size"), [(3, None), (None, None), (2, 5)])
@pytest.mark.parametrize("chunk", [4_000_000, 30])
def test_lists_of_one_length_together_equal_list_by_list(
    monkeypatch, straight_through, k, block_size, chunk
):
    """The loss vectorised over lists of equal length (chunked when ``chunk`` elements are
    exceeded) equals the list-by-list computation, with tied scores, lists without relevant
    items and, with blocks, lists longer than a block (which stay list by list)."""
    import rankmodels.ltr.neuralsort as ns

    monkeypatch.setattr(ns, "_BATCH_ELEMENTS", chunk)
    rng = np.random.default_rng(3)
    lengths = np.array([4, 7, 4, 1, 7, 4, 9, 0, 4, 7])
    n = lengths.max()
    scores = np.round(rng.normal(size=(lengths.size, n)), 1)  # ties
    rel = rng.integers(0, 3, size=(lengths.size, n)).astype(float)
    rel[2] = 0.0  # nothing relevant: no loss, no gradient
    got = pirank_loss(scores, rel, lengths, tau=0.7, k=k, block_size=block_size,
                      straight_through=straight_through)  # fmt: skip
    value, grad = _loss_list_by_list(scores, rel, lengths, 0.7, k, block_size, straight_through)
    np.testing.assert_allclose(got.value, value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.grad, grad, rtol=1e-10, atol=1e-12)
    assert np.any(grad != 0) and np.all(grad[2] == 0)
