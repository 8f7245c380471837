"""Query-level splits and per-query normalisation against their definitions."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.query_norm import normalise_queries
from rankmodels.ltr.splits import holdout_split, kfold_indices, kfold_splits
from rankmodels.ltr.synthetic import synthetic_letor


@pytest.mark.parametrize(("n", "folds"), [(10, 2), (11, 3), (156, 5), (7, 7)])
def test_kfold_tests_every_query_once_and_never_trains_on_it(n, folds):
    splits = kfold_indices(n, folds, seed=4)
    tested = np.concatenate([te for _, te in splits])
    assert sorted(tested.tolist()) == list(range(n))
    for train, test in splits:
        assert not set(train) & set(test) and len(train) + len(test) == n
        assert len(test) in (n // folds, -(-n // folds))
    again = kfold_indices(n, folds, seed=4)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, again, strict=True))
    other = kfold_indices(n, folds, seed=5)
    moved = [not np.array_equal(a[1], b[1]) for a, b in zip(splits, other, strict=True)]
    assert n == folds or any(moved)


def test_kfold_splits_keep_whole_queries(rng):
    data, _ = synthetic_letor(n_queries=9, n_features=2, docs=(2, 6), seed=rng)
    for train, test in kfold_splits(data, 3, seed=1):
        assert len(train.qids) + len(test.qids) == 9
        for part in (train, test):
            for b, qid in enumerate(part.qids):
                src = int(np.flatnonzero(data.qids == qid)[0])
                n = data.lengths[src]
                assert part.lengths[b] == n
                np.testing.assert_array_equal(part.features[b, :n], data.features[src, :n])
                np.testing.assert_array_equal(part.relevance[b, :n], data.relevance[src, :n])


def test_holdout_split_sizes_and_refusals():
    train, test = holdout_split(10, 0.3, seed=0)
    assert len(test) == 3 and sorted([*train, *test]) == list(range(10))
    assert len(holdout_split(10, 0.0)[1]) == 0
    with pytest.raises(ValueError, match="leaves no training query of the 1"):
        holdout_split(1, 0.6)
    with pytest.raises(ValueError, match="test_fraction must be in"):
        holdout_split(10, 1.0)
    for folds in (1, 11):
        with pytest.raises(ValueError, match="folds must be in 2 .. 10"):
            kfold_indices(10, folds)


def _loop_normalise(data: LetorData, method: str) -> np.ndarray:
    """Per query, per feature, by a plain loop over the real documents."""
    out = np.zeros_like(data.features)
    for b, n in enumerate(data.lengths):
        for f in range(data.features.shape[2]):
            x = data.features[b, :n, f]
            if method == "zscore":
                sd = np.std(x)
                out[b, :n, f] = (x - x.mean()) / sd if sd > 0 else 0.0
            else:
                span = x.max() - x.min()
                out[b, :n, f] = (x - x.min()) / span if span > 0 else 0.0
    return out


@pytest.mark.parametrize("method", ["zscore", "minmax"])
def test_normalisation_per_query_matches_a_loop(rng, method):
    data, _ = synthetic_letor(n_queries=6, n_features=3, docs=(1, 7), seed=rng)
    feats = data.features.copy()
    feats[0, : data.lengths[0], 1] = 2.5  # a feature constant within a query -> 0
    feats[:, :, 2] = 100 * feats[:, :, 2] + 7  # scale and shift do not matter
    data = LetorData(feats, data.relevance, data.lengths, data.qids)
    out = normalise_queries(data, method)
    np.testing.assert_allclose(out.features, _loop_normalise(data, method), atol=1e-12)
    assert np.all(out.features[~data.mask] == 0)
    if method == "minmax":
        assert out.features.min() >= 0 and out.features.max() <= 1


def test_normalisation_none_and_unknown(rng):
    data, _ = synthetic_letor(n_queries=2, n_features=2, seed=rng)
    assert normalise_queries(data) is data
    with pytest.raises(ValueError, match="unknown normalisation 'l2'; expected one of: none"):
        normalise_queries(data, "l2")
