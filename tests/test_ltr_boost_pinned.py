"""Boosting's backtracking line search, pinned on a scripted risk.

A registered loss is replaced by one whose value the test dictates call by call (its
gradient is a fixed array), so the line search of :func:`fit_boosted_ranker` meets exactly
the trial values the test wants: a decrease too small for the Armijo condition
``J(f + alpha h) <= J(f) - c alpha <d, h> / B`` (rejected, the step halved), one just
inside it (accepted), and risks that never decrease (no step: the gains start, then stop).
"""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr import boost
from rankmodels.ltr.batching import LossResult
from rankmodels.ltr.boost import ARMIJO, fit_boosted_ranker
from rankmodels.ltr.losses import LOSSES, LossSpec
from rankmodels.ltr.synthetic import synthetic_letor


class ScriptedRisk:
    """Loss ``value`` per call from ``script(s, calls)`` (mean over queries), gradient
    ``grad`` (fixed); calls on other shapes (the registry's probe) answer 0 and are not
    counted. ``calls`` keeps every ``s`` asked about."""

    def __init__(self, grad: np.ndarray, script):
        self.grad = grad
        self.script = script
        self.calls: list[np.ndarray] = []

    def __call__(self, s, relevance, lengths=None) -> LossResult:
        s = np.asarray(s, dtype=float)
        if s.shape != self.grad.shape:
            return LossResult(np.zeros(s.shape[0]), np.zeros(s.shape))
        value = self.script(s, len(self.calls))
        self.calls.append(s.copy())
        return LossResult(np.full(s.shape[0], value), self.grad)


@pytest.fixture
def data():
    return synthetic_letor(n_queries=6, n_features=3, docs=(3, 6), seed=3)[0]


def _use(monkeypatch, risk):
    table = {
        "scripted": LossSpec("scripted", "a scripted risk", risk),
        "bregman": LOSSES["bregman"],
    }
    monkeypatch.setattr(boost, "LOSSES", table)


def _gradient(data):
    grad = np.where(data.mask, -(data.relevance + 0.5 * np.arange(data.relevance.shape[1])), 0.0)
    return grad


def test_the_accepted_step_is_the_first_halving_meeting_the_armijo_condition(monkeypatch, data):
    """Trial 1 (the full step) lowers J by half of what the condition asks: rejected. Trial
    2 (half the step) lowers it by a hair more than asked: accepted. The ranker is that
    half step along the tree, and its recorded risk is trial 2's."""
    grad = _gradient(data)
    d = -grad[data.mask]
    B = data.lengths.shape[0]

    def asked(s):  # c alpha <d, h> / B, with alpha h = s (the scores tried)
        return ARMIJO * float(d @ s[data.mask]) / B

    def script(s, k):
        if k == 0:
            return 1.0
        if k == 1:
            return 1.0 - 0.5 * asked(s)
        return 1.0 - asked(s) * (1.0 + 1e-6)

    risk = ScriptedRisk(grad, script)
    _use(monkeypatch, risk)
    model = fit_boosted_ranker(
        data, "scripted", valid=data, step="gradient", n_trees=1, shrinkage=1.0
    )
    assert len(risk.calls) == 3
    full, half = risk.calls[1], risk.calls[2]
    np.testing.assert_allclose(half, full / 2, rtol=1e-12, atol=1e-15)
    assert asked(full) > 0
    np.testing.assert_allclose(model.scores(data), half, rtol=1e-12, atol=1e-15)
    assert model.train_loss == pytest.approx((1.0, script(half, 2)), rel=1e-14)
    assert not model.gains_start
    # the full step: <d, h> / ||h||^2 = 1 for mean leaves, so alpha h = h, the tree's fit
    h = full[data.mask]
    assert float(d @ h) == pytest.approx(float(h @ h), rel=1e-12)


def test_a_risk_that_never_decreases_halves_max_halvings_times_then_gives_up(monkeypatch, data):
    """Every trial raises J: ``max_halvings + 1`` trials, each half the last, then no step;
    boosting starts from the gains tree (one more risk evaluation there), tries again the
    same way and stops with that tree alone."""
    grad = _gradient(data)
    risk = ScriptedRisk(grad, lambda s, k: 1.0 if k == 0 else 1.0 + 1e-3)
    _use(monkeypatch, risk)
    model = fit_boosted_ranker(
        data, "scripted", valid=data, step="gradient", n_trees=3, shrinkage=1.0, max_halvings=2
    )
    assert len(risk.calls) == 1 + 3 + 1 + 3
    d = -grad[data.mask]
    tried = [float(d @ s[data.mask]) for s in risk.calls[1:4]]
    np.testing.assert_allclose(np.divide(tried[1:], tried[:-1]), [0.5, 0.5], rtol=1e-12)
    assert model.gains_start and len(model.trees) == 1 and model.valid_ndcg == ()
    assert model.train_loss == pytest.approx((1.0 + 1e-3,), rel=1e-14)


def test_no_descent_direction_means_no_step(monkeypatch, data):
    """A zero gradient: the tree fits 0, ``<d, h> = 0``, and no step is tried at all."""
    risk = ScriptedRisk(np.zeros(data.relevance.shape), lambda s, k: 1.0)
    _use(monkeypatch, risk)
    model = fit_boosted_ranker(
        data, "scripted", valid=data, step="gradient", n_trees=2, shrinkage=1.0
    )
    # the start, then the gains tree's risk; no trial step in either round
    assert len(risk.calls) == 2 and model.gains_start and len(model.trees) == 1


def test_a_trial_exactly_at_the_armijo_bound_is_accepted(monkeypatch, data):
    """The first trial's risk is exactly ``J(f) - c alpha <d, h> / B`` (computed as the line
    search computes it, from the same tree): sufficient decrease allows equality."""
    from rankmodels.ltr.trees import fit_tree, quantile_edges

    grad = _gradient(data)
    mask = data.mask
    direction = -grad[mask]
    tree = fit_tree(data.features[mask], direction, quantile_edges(data.features[mask], 64), 4, 10)
    h = tree.predict(data.features[mask])
    along = float(direction @ h)
    step = 1.0 * along / float(h @ h)
    bound = 1.0 - ARMIJO * step * along / data.lengths.shape[0]
    risk = ScriptedRisk(grad, lambda s, k: 1.0 if k == 0 else bound)
    _use(monkeypatch, risk)
    model = fit_boosted_ranker(
        data, "scripted", valid=data, step="gradient", n_trees=1, shrinkage=1.0
    )
    assert len(risk.calls) == 2 and model.train_loss == (1.0, bound)


def test_boosting_runs_n_trees_rounds_in_all_with_the_gains_start(monkeypatch, data):
    """No descent from zero scores (the one trial rises), so the gains tree starts; then
    every round is accepted: ``n_trees`` trees in all, the start's among them."""
    grad = _gradient(data)
    script = {0: 1.0, 1: 2.0, 2: 0.9}
    risk = ScriptedRisk(grad, lambda s, k: script.get(k, 0.9 - 0.1 * (k - 2)))
    _use(monkeypatch, risk)
    model = fit_boosted_ranker(
        data, "scripted", valid=data, step="gradient", n_trees=3, shrinkage=1.0, max_halvings=0
    )
    assert model.gains_start and len(model.train_loss) == 3 and len(model.valid_ndcg) == 2


@pytest.mark.parametrize(
    ("kw", "ok"),
    [({"n_trees": 0}, False), ({"patience": 0}, False), ({"max_halvings": -1}, False),
     ({"n_trees": 1, "patience": 1, "max_halvings": 0}, True)],
)  # fmt: skip
def test_round_counts_are_checked(data, kw, ok):
    if ok:
        assert len(fit_boosted_ranker(data, valid=data, step="gradient", **kw).trees) == 1
    else:
        with pytest.raises(ValueError, match="n_trees and patience must be >= 1"):
            fit_boosted_ranker(data, valid=data, step="gradient", **kw)


def test_one_query_or_no_holdout_trains_and_monitors_on_the_data():
    """Without validation data: one query is never split (whatever the fraction), nor is
    any data with a zero fraction; the ranker is then monitored on its training data."""
    one, _ = synthetic_letor(n_queries=1, n_features=3, docs=(8, 8), seed=2)
    model = fit_boosted_ranker(one, n_trees=2, min_leaf=2, valid_fraction=0.6)
    assert not model.gains_start
    assert model.valid_ndcg[len(model.trees) - 1] == pytest.approx(model.ndcg(one))
    many, _ = synthetic_letor(n_queries=6, n_features=3, docs=(3, 6), seed=2)
    model = fit_boosted_ranker(many, n_trees=2, valid_fraction=0.0, patience=5)
    assert model.valid_ndcg[len(model.trees) - 1] == pytest.approx(model.ndcg(many))
