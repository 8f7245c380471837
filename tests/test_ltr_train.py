"""Linear-ranker training: the trainer's own objective against an independent value and
finite differences, stationarity of the fit, a known linear truth, progress, and data with
nothing to learn."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.errors import InputError
from rankmodels.ltr import metrics
from rankmodels.ltr.early_stopping import EarlyStopping
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import (
    check_learnable,
    fit_linear_ranker,
    ridge_ranker,
    training_objective,
)


def _standardised(data: LetorData) -> np.ndarray:
    """The design, built here from the definition (features over all training documents
    to zero mean and unit variance; padding 0)."""
    docs = data.features[data.mask]
    std = docs.std(axis=0)
    z = (data.features - docs.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return np.where(data.mask[:, :, None], z, 0.0)


def _central(f, w: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(w.shape[0])])


@pytest.mark.parametrize(
    ("loss", "options"),
    [("softrank", {"sigma": 0.7}), ("listnet", {}), ("sinkprop", {"sigma": 0.8}), ("pirank", {})],
)
def test_trainer_objective_is_the_mean_loss_plus_penalty_and_its_gradient(rng, loss, options):
    """F(w) = mean_b loss_b(X_b w) + l2 |w|^2 by definition; grad F by finite differences of
    the trainer's own function (6 queries and l2 = 0.3, so a lost 1/B or a flipped penalty
    gradient is far outside the tolerance)."""
    data, _ = synthetic_letor(n_queries=6, n_features=3, docs=(2, 6), seed=rng)
    l2 = 0.3
    objective = training_objective(data, loss, options=options, l2=l2)
    X = _standardised(data)
    spec = LOSSES[loss]
    for _ in range(3):
        w = rng.normal(size=3)
        value, grad = objective(w)
        per_query = spec(X @ w, data.relevance, data.lengths, **spec.fit_options, **options).value
        assert value == pytest.approx(np.mean(per_query) + l2 * w @ w, rel=1e-12)
        np.testing.assert_allclose(
            grad, _central(lambda v: objective(v)[0], w), rtol=1e-6, atol=1e-8
        )


def test_gradient_vanishes_at_the_fitted_weights(rng):
    """The fit is a stationary point of the objective's *value* (finite differences, not the
    trainer's gradient), and better than the ridge start."""
    data, _ = synthetic_letor(n_queries=12, n_features=3, docs=(3, 8), seed=rng)
    options, l2 = {"sigma": 0.7}, 0.05
    model = fit_linear_ranker(data, "softrank", options=options, l2=l2, max_iter=500)
    objective = training_objective(data, "softrank", options=options, l2=l2)

    def value(w):
        return objective(w)[0]

    start = ridge_ranker(data).weights
    assert value(model.weights) < value(start)
    assert np.linalg.norm(_central(value, model.weights)) < 1e-3 * np.linalg.norm(
        _central(value, start)
    )


@pytest.mark.parametrize(
    ("loss", "options", "stages"),
    [
        ("softrank", {"sigma": 0.5}, None),
        ("sinkprop", {}, [{"sigma": 1.0}, {"sigma": 0.3}]),
        ("pirank", {"tau": 0.5, "k": 5}, None),
        ("listnet", {}, None),
    ],
)
def test_linear_ranker_recovers_a_linear_truth(rng, loss, options, stages):
    data, w_true = synthetic_letor(n_queries=40, n_features=5, docs=(12, 12), noise=0.0, seed=rng)
    model = fit_linear_ranker(data, loss, options=options, stages=stages, max_iter=60)
    w = model.weights / model.scale  # back to raw feature units
    cosine = w @ w_true / np.linalg.norm(w) / np.linalg.norm(w_true)
    assert cosine > 0.9
    test, _ = synthetic_letor(n_queries=20, n_features=5, docs=(12, 12), noise=0.0, seed=1)
    ideal = metrics.ndcg(test.relevance, test.features @ w_true, k=5)
    assert model.ndcg(test, k=5) > 0.9 * np.mean(ideal)


def test_progress_counts_every_iteration_of_every_stage(rng):
    data, _ = synthetic_letor(n_queries=5, n_features=2, docs=(3, 5), seed=rng)
    steps: list[int] = []
    fit_linear_ranker(data, "listnet", max_iter=7, progress=steps.append)
    assert sum(steps) == 7 and all(s >= 0 for s in steps)
    steps.clear()
    fit_linear_ranker(
        data, "softrank", stages=[{"sigma": 1.0}, {"sigma": 0.5}], max_iter=4, progress=steps.append
    )
    assert sum(steps) == 8


def test_nothing_to_learn_is_refused(rng):
    data, _ = synthetic_letor(n_queries=4, n_features=2, docs=(3, 5), seed=rng)
    for labels in (0.0, 2.0):  # every query: one label for all its documents
        flat = LetorData(data.features, np.where(data.mask, labels, 0.0), data.lengths, data.qids)
        with pytest.raises(InputError, match="f.txt: nothing to learn: none of the 4 training"):
            check_learnable(flat, "f.txt")
        with pytest.raises(InputError, match="nothing to learn"):
            fit_linear_ranker(flat, "listnet")
    one = data.relevance.copy()
    one[1:] = 0.0
    one[0, :2] = [0.0, 1.0]  # a single query with two labels is enough
    check_learnable(LetorData(data.features, one, data.lengths, data.qids))


def test_a_non_finite_objective_stops_training_with_a_clear_error(rng, monkeypatch):
    """A loss that overflows on the training data (but not on the probe query of the
    registry's validation) ends in TrainingError, not in NaN weights."""
    from rankmodels.ltr import train
    from rankmodels.ltr.batching import ragged_batch
    from rankmodels.ltr.losses import LossResult, LossSpec
    from rankmodels.registry import Registry

    def overflowing(scores, relevance, lengths=None):
        batch = ragged_batch(scores, relevance, lengths)
        value = np.full(batch.scores.shape[0], np.inf if batch.scores.shape[1] > 4 else 0.0)
        return LossResult(value, np.zeros_like(batch.scores))

    losses = Registry[LossSpec]("loss")
    losses.register(LossSpec("overflowing", "inf on lists longer than 4", overflowing))
    monkeypatch.setattr(train, "LOSSES", losses)
    data, _ = synthetic_letor(n_queries=4, n_features=2, docs=(6, 8), seed=rng)
    with pytest.raises(train.TrainingError, match="overflowing objective is not finite"):
        fit_linear_ranker(data, "overflowing")
    # outside the domain (overflowing scores) the objective is +inf with a zero gradient
    value, grad = training_objective(data, "overflowing")(np.full(2, 1e308))
    assert value == np.inf and np.all(grad == 0)


def test_bad_arguments(rng):
    data, _ = synthetic_letor(n_queries=4, n_features=2, docs=(3, 5), seed=rng)
    with pytest.raises(ValueError, match="unknown loss 'hinge'; expected one of: sinkprop"):
        fit_linear_ranker(data, "hinge")
    with pytest.raises(ValueError, match="max_iter"):
        fit_linear_ranker(data, "listnet", max_iter=0)
    for l2 in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="l2 must be finite and >= 0"):
            training_objective(data, "listnet", l2=l2)
    with pytest.raises(ValueError, match="no option 'sigma'"):
        fit_linear_ranker(data, "listnet", options={"sigma": 1.0})
    with pytest.raises(TypeError, match="sigma takes a finite number"):
        fit_linear_ranker(data, "softrank", stages=[{"sigma": "abc"}])


def _overfitting_split() -> tuple[LetorData, LetorData]:
    """8 training and 12 validation queries on which unpenalised SoftRank's validation
    NDCG@3 rises for four L-BFGS iterations, then falls (a seed where that happens)."""
    data, _ = synthetic_letor(n_queries=20, n_features=4, docs=(4, 8), noise=1.0, seed=11)
    return data.subset(np.arange(8)), data.subset(np.arange(8, 20))


def test_early_stopping_returns_the_best_validation_iterate():
    """With ``valid`` and a patience beyond ``max_iter`` the fit is the iterate (the ridge
    start included) with the best validation NDCG@k: brute force over the fits stopped
    after 1 .. M iterations (L-BFGS is deterministic, so those are its iterates)."""
    fit, valid = _overfitting_split()
    M, kw = 12, dict(options={"sigma": 0.5}, l2=0.0)
    candidates = [ridge_ranker(fit)] + [
        fit_linear_ranker(fit, "softrank", max_iter=m, **kw) for m in range(1, M + 1)
    ]
    scores = [c.ndcg(valid, 3) for c in candidates]
    best = candidates[int(np.argmax(scores))]  # the first of equal scores
    stopped = fit_linear_ranker(fit, "softrank", valid=valid, max_iter=M, patience=M, k=3, **kw)
    np.testing.assert_array_equal(stopped.weights, best.weights)
    assert 0 < np.argmax(scores) < M and max(scores) > scores[-1]  # neither start nor end


def test_early_stopping_patience_and_progress():
    """Patience 1 keeps the end of the first strictly improving run of iterates (brute
    force over the fits stopped after m iterations); the progress calls sum to max_iter per
    stage; ``valid=None`` is the plain fit."""
    fit, valid = _overfitting_split()
    kw = dict(options={"sigma": 0.5}, l2=0.0)
    iterates = [ridge_ranker(fit)] + [
        fit_linear_ranker(fit, "softrank", max_iter=m, **kw) for m in range(1, 13)
    ]
    scores = [c.ndcg(valid, 3) for c in iterates]
    first_drop = next(m for m in range(1, 13) if scores[m] <= scores[m - 1])
    assert first_drop > 2
    steps: list[int] = []
    stopped = fit_linear_ranker(
        fit, "softrank", valid=valid, max_iter=12, patience=1, k=3, progress=steps.append, **kw
    )
    np.testing.assert_array_equal(stopped.weights, iterates[first_drop - 1].weights)
    assert steps == [1] * first_drop + [12 - first_drop]
    stages = [{"sigma": 1.0}, {"sigma": 0.3}]
    steps.clear()
    fit_linear_ranker(
        fit, "softrank", valid=valid, stages=stages, max_iter=9, patience=1, progress=steps.append
    )
    assert sum(steps) == 18
    plain = fit_linear_ranker(fit, "softrank", stages=stages, max_iter=9)
    again = fit_linear_ranker(fit, "softrank", valid=None, stages=stages, max_iter=9)
    np.testing.assert_array_equal(plain.weights, again.weights)


def test_early_stopping_keeps_the_first_best_and_counts_patience():
    stopper = EarlyStopping(2, "start")
    assert stopper.best == "start" and stopper.best_score == -np.inf
    assert not stopper.offer("a", 0.5)
    assert not stopper.offer("b", 0.5)  # a tie is no improvement
    assert not stopper.offer("c", 0.6)  # improvement resets the count
    assert not stopper.offer("d", 0.1)
    assert stopper.offer("e", 0.6) and stopper.best == "c"
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(0, None)
