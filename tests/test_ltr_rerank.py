"""The listwise re-ranker (dissertation eqs. 2.20-2.21): similarity sums against a loop
over pairs, the product form against the sum form, gradients against finite differences,
the l2 choice on validation, and diversity: on queries with near-duplicate documents that
are redundant, re-ranking beats the base ranker."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.ltr.letor import LetorData, format_letor, read_letor
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.model_io import read_ranker
from rankmodels.ltr.query_norm import normalise_queries
from rankmodels.ltr.rerank import (
    KERNELS,
    L2_GRID,
    RERANK,
    RerankedRanker,
    fit_reranker,
    similarity_sums,
)
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import TrainingObjective, fit_linear_ranker
from rankmodels_app.cli import cli


def _cosine(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return 0.0 if na == 0 or nb == 0 else float(a @ b / (na * nb))


def test_similarity_sums_by_pairs(rng):
    data, _ = synthetic_letor(5, 4, docs=(1, 6), seed=rng)
    C = similarity_sums(data)
    for k, kernel in enumerate(KERNELS):
        z = normalise_queries(data, kernel).features
        for b, n in enumerate(data.lengths):
            for i in range(n):
                want = sum(_cosine(z[b, i], z[b, j]) for j in range(n) if j != i)
                assert C[b, i, k] == pytest.approx(want, abs=1e-12)
            assert np.all(C[b, n:, k] == 0)
    with pytest.raises(ValueError, match="kernels must be"):
        similarity_sums(data, ("rbf",))


def test_scores_are_the_log_of_eq_2_20(rng):
    """log of b(x_i) prod_{j != i} exp(sum_k w_k S_k(x_i, x_j)) with b = exp(base)."""
    data, _ = synthetic_letor(3, 3, docs=(3, 5), seed=rng)
    base = fit_linear_ranker(data, "listnet", max_iter=5)
    w = np.array([0.3, -0.7])
    ranker = RerankedRanker(base, w)
    zs = [normalise_queries(data, kernel).features for kernel in KERNELS]
    g = base.scores(data)
    for b, n in enumerate(data.lengths):
        for i in range(n):
            f = np.exp(g[b, i])
            for j in range(n):
                if j != i:
                    f *= np.exp(sum(w[k] * _cosine(z[b, i], z[b, j]) for k, z in enumerate(zs)))
            assert ranker.scores(data)[b, i] == pytest.approx(np.log(f), rel=1e-10)


@pytest.mark.parametrize("loss", ["softrank", "bregman", "lambdarank"])
def test_training_objective_gradient_by_finite_differences(rng, loss):
    data, _ = synthetic_letor(6, 3, docs=(2, 6), seed=rng)
    base = fit_linear_ranker(data, "listnet", max_iter=5)
    design = RerankedRanker(base, np.zeros(2)).design(data)
    spec = LOSSES[loss]
    objective = TrainingObjective(
        design, data.relevance, data.lengths, spec, dict(spec.fit_options), 0.05, RERANK
    )
    w = rng.normal(size=2) * 0.3
    value, grad = objective(w)
    h = 1e-6
    numeric = [(objective(w + h * e)[0] - objective(w - h * e)[0]) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    assert np.abs(grad).max() > 1e-4


def _duplicates(n_queries: int, rng: np.random.Generator) -> LetorData:
    """Per query: 4 distinct documents, labelled by their quality (feature 0), and two
    clusters of 4 near-duplicates of equally good quality that are redundant (label 0).
    The other 5 features are a random topic direction per document / cluster."""
    docs, n = [], 12
    features = np.zeros((n_queries, n, 6))
    relevance = np.zeros((n_queries, n))
    for b in range(n_queries):
        topics = rng.normal(size=(6, 5))
        owner = np.array([0, 1, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5])
        features[b, :, 1:] = topics[owner] + 0.05 * rng.normal(size=(n, 5))
        features[b, :, 0] = rng.uniform(size=n)
        relevance[b, :4] = np.round(2 * features[b, :4, 0])
        docs.append(n)
    qids = np.array([str(b) for b in range(n_queries)], dtype=object)
    return LetorData(features, relevance, np.array(docs), qids)


def test_diversity_rerank_demotes_redundant_duplicates(rng):
    train, valid, test = (_duplicates(m, rng) for m in (60, 30, 30))
    base = fit_linear_ranker(train, "listnet", max_iter=50)
    ranker = fit_reranker(train, base, "listnet", valid, max_iter=50)
    assert ranker.weights[KERNELS.index("zscore")] < 0  # duplicates pushed down
    assert ranker.ndcg(test) > base.ndcg(test) + 0.05
    assert set(ranker.valid_ndcg) == {0, 1e-5, 1e-2, 1e-1, 1, 10, 1e2, 1e3}  # section 2.4.3
    assert ranker.valid_ndcg[ranker.l2] == max(ranker.valid_ndcg.values())
    assert ranker.ndcg(valid) == pytest.approx(ranker.valid_ndcg[ranker.l2])


def test_l2_shrinks_the_weights_and_zero_weights_are_the_base(rng):
    train, valid = _duplicates(20, rng), _duplicates(10, rng)
    base = fit_linear_ranker(train, "listnet", max_iter=30)
    np.testing.assert_array_equal(
        RerankedRanker(base, np.zeros(2)).scores(valid), base.scores(valid)
    )
    norms = [
        np.linalg.norm(fit_reranker(train, base, "listnet", valid, l2_grid=[l2]).weights)
        for l2 in (0.0, 0.1, 10.0)
    ]
    assert norms[0] > norms[1] > norms[2] > 0
    steps = []
    fit_reranker(
        train, base, "listnet", valid, l2_grid=[0.0, 1.0], max_iter=7, progress=steps.append
    )
    assert sum(steps) == 14


def test_cli_rerank_on_a_boosted_base_round_trips(tmp_path):
    data = _duplicates(40, np.random.default_rng(8))
    path, model = tmp_path / "train.txt", tmp_path / "model.json"
    path.write_text(format_letor(data))
    args = ["train", path, "--model", "rerank", "--base", "boost", "--loss", "listnet"]
    result = CliRunner().invoke(
        cli, ["ltr", *map(str, args), "--max-iter", "20", "-o", str(model), "-q"]
    )
    assert result.exit_code == 0, result.output
    spec = json.loads(model.read_text())
    assert spec["model"] == "rerank" and spec["base"]["model"] == "boost"
    assert spec["kernels"] == list(KERNELS) and spec["l2"] in L2_GRID
    ranker, _ = read_ranker(model)
    written = read_letor(path)
    base_only = ranker.base.scores(written)
    C = similarity_sums(written)
    np.testing.assert_allclose(
        ranker.scores(written), np.where(written.mask, base_only + C @ spec["weights"], 0.0)
    )
