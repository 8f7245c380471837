"""Every loss of the registry: finite values, gradient against central finite differences
on ragged batches, padding, single-list / batch agreement, options declared and checked."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from rankmodels.ltr.batching import pad_lists
from rankmodels.ltr.losses import LOSSES, options_table

CASES = [
    ("sinkprop", {"sigma": 0.8}),
    ("sinkprop", {"sigma": 0.5, "n_iter": 12, "k": 3, "eps": 1e-3, "discount": "log2"}),
    ("sinkprop", {"sigma": 0.8, "measure": "logit_logistic"}),
    ("sinkprop", {"sigma": 0.3, "measure": "logit_logistic", "n_iter": 9, "eps": 1e-3, "k": 3}),
    ("softrank", {"sigma": 0.7}),
    ("softrank", {"sigma": 0.4, "k": 3, "gain": "exp2"}),
    ("softrank", {"sigma": 0.7, "method": "normal"}),
    ("softrank", {"sigma": 0.7, "method": "hybrid", "n_exact": 1}),
    ("softrank", {"sigma": 0.7, "sinkhorn_iter": 6}),
    ("softrank", {"sigma": 0.5, "k": 3, "method": "normal", "sinkhorn_iter": 2}),
    ("pirank", {"tau": 0.6, "straight_through": False}),
    ("pirank", {"tau": 0.6, "k": 2, "straight_through": False}),
    ("pirank", {"tau": 0.6, "k": 2, "block_size": 3, "straight_through": False}),
    (
        "pirank",
        {"tau": 0.9, "k": 2, "block_size": 3, "level_ratio": 0.5, "straight_through": False},
    ),
    (
        "pirank",
        {"tau": 0.7, "k": 1, "block_size": (3, 2), "level_k": 1, "straight_through": False},
    ),
    ("pirank", {"tau": 0.7, "k": 1, "block_size": 4, "level_k": (2, 1), "straight_through": False}),
    ("ranknet", {}),
    ("lambdarank", {}),
    ("lambdarank", {"k": 3, "discount": "sinkprop"}),
    ("listnet", {}),
    ("listmle", {}),
    ("bregman", {"surrogate": "square"}),
    ("bregman", {"surrogate": "cross_entropy", "c": 0.5}),
    ("bregman", {"surrogate": "qnorm"}),
    ("bregman", {"surrogate": "qnorm", "scale": 0.4}),
    ("bregman", {"surrogate": "cross_entropy", "c": 0.5, "scale": 3.0}),
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


def _check_gradient(loss, S, R, L, kw):
    res = loss(S, R, L, **kw)
    assert res.value.shape == (len(LENGTHS),) and res.grad.shape == S.shape
    assert np.all(np.isfinite(res.value)) and np.all(np.isfinite(res.grad))
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


@pytest.mark.parametrize("name", LOSSES.names)
def test_every_registered_loss_with_its_training_options(batch, name):
    """Registry-wide: a new loss is checked without touching this file."""
    spec = LOSSES[name]
    _check_gradient(spec, *batch, dict(spec.fit_options))


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_gradient_matches_finite_differences(batch, case):
    name, kw = case
    _check_gradient(LOSSES[name], *batch, kw)


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


@pytest.mark.parametrize("name", LOSSES.names)
@pytest.mark.filterwarnings("error")
def test_empty_list_in_a_batch(name, rng):
    S = rng.normal(size=(2, 4))
    R = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    res = LOSSES[name](S, R, [4, 0])
    full = LOSSES[name](S[:1], R[:1], [4])
    assert res.value[1] == 0.0 and np.all(res.grad[1] == 0.0)
    np.testing.assert_allclose(res.value[0], full.value[0])
    np.testing.assert_allclose(res.grad[0], full.grad[0])


@pytest.mark.parametrize("name", LOSSES.names)
def test_declared_options_are_the_functions_keywords(name):
    spec = LOSSES[name]
    keywords = {
        p.name: p.default
        for p in inspect.signature(spec.function).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert {o.name: o.default for o in spec.options} == keywords
    if spec.smoothing is not None:
        assert spec.option(spec.smoothing).kind is float
    assert set(spec.fit_options) <= set(keywords)


@pytest.mark.parametrize("name", LOSSES.names)
def test_every_option_value_parses_and_bad_ones_are_refused(name, batch):
    """Defaults round-trip through their text; every allowed word runs; unknown names and
    wrong kinds name the option (and, for unknown names, list the valid ones)."""
    spec = LOSSES[name]
    with pytest.raises(ValueError, match=f"loss {name} has no option 'foo'; its options: ") as err:
        spec.parse({"foo": "1"})
    assert all(o.name in str(err.value) for o in spec.options)
    with pytest.raises(ValueError, match="no option 'foo'"):
        spec(*batch, foo=1)
    for opt in spec.options:
        if opt.kind is object:  # library-only (a random generator)
            with pytest.raises(ValueError, match=f"{opt.name} takes a value only the library"):
                spec.parse({opt.name: "3"})
            continue
        assert spec.parse({opt.name: str(opt.default)}) == {opt.name: opt.default}
        for bad in ("abc", "[1]", "nan", "1.5" if opt.kind is int else "maybe"):
            with pytest.raises(ValueError, match=f"{opt.name} takes "):
                spec.parse({opt.name: bad})
        wrong = 1.5 if opt.kind is str else "abc"
        with pytest.raises((TypeError, ValueError), match=f"{opt.name} takes "):
            spec.check({opt.name: wrong})
        for word in opt.words or ():
            assert np.all(np.isfinite(spec(*batch, **{opt.name: word}).value))


def test_validate_runs_the_losses_own_range_checks():
    for name, options, message in [
        ("sinkprop", {"sigma": -1.0}, "sigma must be positive"),
        ("sinkprop", {"n_iter": -1}, "n_iter"),
        ("softrank", {"sinkhorn_iter": -1}, "sinkhorn_iter must lie in"),
        ("softrank", {"n_exact": -2}, "n_exact"),
        ("pirank", {"block_size": 3}, "block_size needs a cut-off"),
        ("lambdarank", {"k": 0}, "k must be >= 1"),
        ("bregman", {"c": 0.0}, "c must be positive"),
    ]:
        with pytest.raises(ValueError, match=message):
            LOSSES[name].validate(options)
    assert LOSSES["softrank"].validate({"sigma": 2, "k": np.int64(3)}) == {"sigma": 2, "k": 3}


def test_docs_show_the_registry_table():
    docs = (Path(__file__).parents[1] / "docs" / "ltr.md").read_text(encoding="utf-8")
    assert options_table() in docs
