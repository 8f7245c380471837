"""Every loss: gradient against central finite differences on ragged batches, padding,
single-list / batch agreement."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.batching import pad_lists
from rankmodels.ltr.losses import LOSSES

CASES = [
    ("sinkprop", {"sigma": 0.8}),
    ("sinkprop", {"sigma": 0.5, "n_iter": 12, "k": 3, "eps": 1e-3, "discount": "log2"}),
    ("softrank", {"sigma": 0.7}),
    ("softrank", {"sigma": 0.4, "k": 3, "gain": "exp2"}),
    ("softrank", {"sigma": 0.7, "method": "normal"}),
    ("softrank", {"sigma": 0.7, "method": "hybrid", "n_exact": 1}),
    ("pirank", {"tau": 0.6, "straight_through": False}),
    ("pirank", {"tau": 0.6, "k": 2, "straight_through": False}),
    ("pirank", {"tau": 0.6, "k": 2, "block_size": 3, "straight_through": False}),
    ("ranknet", {}),
    ("lambdarank", {}),
    ("lambdarank", {"k": 3, "discount": "sinkprop"}),
    ("listnet", {}),
    ("listmle", {}),
    ("bregman", {"surrogate": "square"}),
    ("bregman", {"surrogate": "cross_entropy", "c": 0.5}),
    ("bregman", {"surrogate": "qnorm"}),
]
LENGTHS = (7, 1, 5, 6, 4)


@pytest.fixture
def batch(rng):
    scores = [rng.normal(size=m) for m in LENGTHS]
    rels = [rng.integers(0, 4, size=m).astype(float) for m in LENGTHS]
    rels[3][:] = 0.0  # a query without relevant documents
    S, L = pad_lists(scores)
    R, _ = pad_lists(rels)
    return S, R, L


def _ids(case):
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_gradient_matches_finite_differences(batch, case):
    name, kw = case
    loss = LOSSES[name]
    S, R, L = batch
    res = loss(S, R, L, **kw)
    assert res.value.shape == (len(LENGTHS),) and res.grad.shape == S.shape
    h = 1e-6
    fd = np.zeros_like(S)
    for b, m in enumerate(L):
        for j in range(m):
            e = np.zeros_like(S)
            e[b, j] = h
            up, down = loss(S + e, R, L, **kw).value[b], loss(S - e, R, L, **kw).value[b]
            fd[b, j] = (up - down) / (2 * h)
    np.testing.assert_allclose(res.grad, fd, atol=1e-7, rtol=1e-6)
    assert np.any(np.abs(res.grad) > 1e-6)  # the check is not vacuous


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_padding_is_inert_and_single_lists_agree(batch, case, rng):
    name, kw = case
    loss = LOSSES[name]
    S, R, L = batch
    res = loss(S, R, L, **kw)
    noisy = S + np.where(np.arange(S.shape[1]) < L[:, None], 0.0, rng.normal(size=S.shape))
    again = loss(noisy, R, L, **kw)
    np.testing.assert_allclose(again.value, res.value, rtol=1e-12, atol=1e-14)
    assert np.all(res.grad[np.arange(S.shape[1])[None, :] >= L[:, None]] == 0)
    for b, m in enumerate(L):
        one = loss(S[b, :m], R[b, :m], **kw)
        assert np.isscalar(one.value)
        np.testing.assert_allclose(one.value, res.value[b], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(one.grad, res.grad[b, :m], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.filterwarnings("error")
def test_empty_list_in_a_batch(name, rng):
    S = rng.normal(size=(2, 4))
    R = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    res = LOSSES[name](S, R, [4, 0])
    full = LOSSES[name](S[:1], R[:1], [4])
    assert res.value[1] == 0.0 and np.all(res.grad[1] == 0.0)
    np.testing.assert_allclose(res.value[0], full.value[0])
    np.testing.assert_allclose(res.grad[0], full.grad[0])
