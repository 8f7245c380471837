"""The re-ranker's choice of ``l2``, pinned: validation NDCGs scripted per ``l2`` decide
which is kept; ties go to the larger ``l2`` (the grid is tried largest first, whatever
order it is given in), and each ``l2`` is fitted with its own penalty."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.rerank import RerankedRanker, fit_reranker
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import fit_linear_ranker


@pytest.fixture(scope="module")
def setting():
    data, _ = synthetic_letor(n_queries=8, n_features=3, docs=(3, 6), seed=4)
    base = fit_linear_ranker(data, "listnet", max_iter=10)
    return data, base


def _scripted(monkeypatch, table):
    """RerankedRanker.ndcg answers ``table[l2]``; returns the order the l2 were asked in."""
    asked = []

    def ndcg(self, data, k=10):
        asked.append(self.l2)
        return table[self.l2]

    monkeypatch.setattr(RerankedRanker, "ndcg", ndcg)
    return asked


@pytest.mark.parametrize(
    ("grid", "table", "chosen"),
    [
        ((1.0, 0.1, 0.01, 0.0), {1.0: 0.5, 0.1: 0.7, 0.01: 0.7, 0.0: 0.6}, 0.1),
        ((0.0, 0.01, 0.1, 1.0), {1.0: 0.5, 0.1: 0.7, 0.01: 0.7, 0.0: 0.6}, 0.1),
        ((0.0, 2.0, 0.5), {0.0: 0.9, 2.0: 0.9, 0.5: 0.9}, 2.0),
        ((0.0, 2.0, 0.5), {0.0: 0.9, 2.0: 0.1, 0.5: 0.2}, 0.0),
    ],
)
def test_the_best_validation_ndcg_wins_and_ties_go_to_the_larger_l2(
    monkeypatch, setting, grid, table, chosen
):
    data, base = setting
    asked = _scripted(monkeypatch, table)
    ranker = fit_reranker(data, base, "listnet", data, l2_grid=grid, max_iter=3)
    assert asked == sorted(grid, reverse=True)  # tried largest first
    assert ranker.l2 == chosen and dict(ranker.valid_ndcg) == table


def test_each_l2_is_fitted_with_its_own_penalty(monkeypatch, setting):
    """The kept weights are those fitted with the chosen l2 alone (not a neighbour's)."""
    data, base = setting
    _scripted(monkeypatch, {10.0: 0.2, 0.0: 0.9})
    both = fit_reranker(data, base, "listnet", data, l2_grid=(10.0, 0.0), max_iter=20)
    alone = fit_reranker(data, base, "listnet", data, l2_grid=(0.0,), max_iter=20)
    strong = fit_reranker(data, base, "listnet", data, l2_grid=(10.0,), max_iter=20)
    np.testing.assert_array_equal(both.weights, alone.weights)
    assert np.linalg.norm(strong.weights) < np.linalg.norm(alone.weights)


@pytest.mark.parametrize("grid", [(), (1.0, -0.1), (np.inf,)])
def test_a_bad_grid_is_refused(setting, grid):
    data, base = setting
    with pytest.raises(ValueError, match="non-empty grid of finite l2 >= 0"):
        fit_reranker(data, base, "listnet", data, l2_grid=grid)


def test_the_score_model_has_one_weight_per_kernel(setting):
    from rankmodels.ltr.rerank import RERANK

    assert RERANK.n_params(1 + 2) == 2 and RERANK.n_params(1 + 1) == 1


def test_one_iteration_is_enough_and_none_is_refused(setting):
    data, base = setting
    assert fit_reranker(data, base, "listnet", data, l2_grid=(0.0,), max_iter=1).l2 == 0.0
    with pytest.raises(ValueError, match="need max_iter >= 1"):
        fit_reranker(data, base, "listnet", data, max_iter=0)


def test_a_loss_that_is_not_finite_is_refused(monkeypatch, setting):
    """A loss that is NaN on the training data (finite on the registry's probe): L-BFGS
    ends where it started (finite weights) with a NaN objective, which is refused."""
    from rankmodels.ltr import rerank
    from rankmodels.ltr.batching import LossResult
    from rankmodels.ltr.losses import LossSpec
    from rankmodels.ltr.train import TrainingError

    data, base = setting

    def nan_loss(s, relevance, lengths=None):
        s = np.asarray(s, dtype=float)
        bad = s.shape == data.relevance.shape
        return LossResult(np.full(s.shape[0], np.nan if bad else 0.0), np.zeros(s.shape))

    monkeypatch.setattr(rerank, "LOSSES", {"nan": LossSpec("nan", "NaN on the data", nan_loss)})
    with pytest.raises(TrainingError, match="re-ranking objective is not finite"):
        fit_reranker(data, base, "nan", data, l2_grid=(0.0,), max_iter=3)
