"""Dissertation chapter 3 as run in section 3.6: single-feature weak learners against a
literal Algorithm 1, the surrogate's scale (its definition, a known optimum scale found by
the search), the surrogate-scale study end to end; PiRank's per-level block sizes and rows
kept against the product of block-diagonal NeuralSort matrices built by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rankmodels.ltr.batching import ragged_batch
from rankmodels.ltr.boost import ARMIJO, fit_boosted_ranker
from rankmodels.ltr.bregman import bregman_loss, bregman_minimiser
from rankmodels.ltr.letor import LetorData, format_letor, read_letor
from rankmodels.ltr.metrics import ndcg_weights
from rankmodels.ltr.models import mean_ndcg
from rankmodels.ltr.neuralsort import neuralsort, pirank_loss, relaxed_levels, relaxed_topk
from rankmodels.ltr.surrogate_search import search_box
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import fit_linear_ranker, standardisation
from rankmodels.ltr.weak_learners import FeatureLearner, fit_feature_learner
from rankmodels_app.cli import cli


def _letor(features: np.ndarray, relevance: np.ndarray) -> LetorData:
    B, n = relevance.shape
    return LetorData(features, relevance, np.full(B, n), np.array([str(b) for b in range(B)]))


# ---------------------------------------------------------------- single-feature learners


def test_feature_learner_is_the_brute_force_argmax_of_eq_3_18(rng):
    X = rng.normal(size=(40, 6)) * np.array([1.0, 5.0, 0.1, 2.0, 1.0, 0.0])
    for _ in range(5):
        d = rng.normal(size=40)
        learner = fit_feature_learner(X, d)
        candidates = [
            (sign * d @ X[:, k] / np.linalg.norm(X[:, k]), k, sign)
            for k in range(6)
            if np.linalg.norm(X[:, k]) > 0
            for sign in (1.0, -1.0)
        ]
        _, k, sign = max(candidates)
        assert (learner.feature, learner.weight) == (k, sign)
        np.testing.assert_allclose(learner.predict(X), sign * X[:, k])
    with pytest.raises(ValueError, match="every feature is 0"):
        fit_feature_learner(np.zeros((3, 2)), np.ones(3))


def _literal_algorithm_1(X, rel, eta, T, beta):
    """Algorithm 1 for the square surrogate of beta ||x||^2 (psi*(s) = ||s||^2 / (4 beta),
    grad psi*(s) = s / (2 beta)), written out with loops; the sign of the printed
    initialisation and update corrected (d = r~ - grad psi*(s): the descent direction).
    Step length eq. 3.19 backtracked (halved) until the Armijo condition holds."""
    B, n, F = X.shape
    rt = np.zeros((B, n))
    for b in range(B):
        gains = [2.0 ** rel[b, j] - 1 for j in range(n)]
        ideal = sum(g / math.log2(2 + p) for p, g in enumerate(sorted(gains, reverse=True)))
        rt[b] = [g / ideal if ideal > 0 else 0.0 for g in gains]

    def risk(s):
        return sum(beta * sum((rt[b, j] - s[b, j] / (2 * beta)) ** 2 for j in range(n))
                   for b in range(B)) / B  # fmt: skip

    s = np.zeros((B, n))
    d = np.array([[rt[b, j] - 0.0 / (2 * beta) for j in range(n)] for b in range(B)])
    chosen, risks = [], [risk(s)]
    for _ in range(T):
        best = None
        for k in range(F):
            for sign in (1.0, -1.0):
                num = sum(d[b, j] * sign * X[b, j, k] for b in range(B) for j in range(n))
                norm = math.sqrt(sum(X[b, j, k] ** 2 for b in range(B) for j in range(n)))
                if best is None or num / norm > best[0]:
                    best = (num / norm, k, sign)
        _, k, sign = best
        h = sign * X[:, :, k]
        along = sum(d[b, j] * h[b, j] for b in range(B) for j in range(n))
        alpha = eta * along / sum(h[b, j] ** 2 for b in range(B) for j in range(n))
        while risk(s + alpha * h) > risks[-1] - ARMIJO * alpha * along / B:
            alpha /= 2
        s = s + alpha * h
        d = np.array([[rt[b, j] - s[b, j] / (2 * beta) for j in range(n)] for b in range(B)])
        chosen.append((k, sign * alpha))
        risks.append(risk(s))
    return chosen, risks


@pytest.mark.parametrize(("eta", "beta"), [(1.0, 0.2), (0.3, 1.0)])
def test_feature_boosting_equals_a_literal_algorithm_1(rng, eta, beta):
    X = rng.normal(size=(4, 5, 3)) + np.array([0.0, 1.0, -0.5])
    rel = rng.integers(0, 3, size=(4, 5)).astype(float)
    data = _letor(X, rel)
    T = 8
    ranker = fit_boosted_ranker(
        data,
        "bregman",
        valid=data,
        options={"surrogate": "square", "scale": beta},
        n_trees=T,
        shrinkage=eta,
        patience=T,
        weak_learner="feature",
    )
    chosen, risks = _literal_algorithm_1(X, rel, eta, T, beta)
    np.testing.assert_allclose(ranker.train_loss, risks, rtol=1e-10)
    assert all(isinstance(t, FeatureLearner) for t in ranker.trees)
    kept = [(t.feature, t.weight) for t in ranker.trees]
    assert [k for k, _ in kept] == [k for k, _ in chosen[: len(kept)]]
    np.testing.assert_allclose([w for _, w in kept], [w for _, w in chosen[: len(kept)]])
    assert np.all(np.diff(risks) < 0)


def test_cli_boost_feature_learners_are_the_library_ranker(tmp_path):
    data, _ = synthetic_letor(20, 4, docs=(4, 7), seed=3)
    path, out = tmp_path / "train.txt", tmp_path / "m.json"
    path.write_text(format_letor(data))
    args = ["ltr", "train", str(path), "--model", "boost", "--weak-learner", "feature"]
    args += ["--loss", "bregman", "--max-iter", "15", "--test-fraction", "0", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    assert model["model"] == "boost" and set(model["trees"][0]) == {"feature", "weight"}
    again = fit_boosted_ranker(read_letor(path), "bregman", n_trees=15, weak_learner="feature")
    assert [t["feature"] for t in model["trees"]] == [t.feature for t in again.trees]
    np.testing.assert_allclose(
        [t["weight"] for t in model["trees"]], [t.weight for t in again.trees]
    )
    scores = CliRunner().invoke(cli, ["ltr", "predict", str(path), "-m", str(out)])
    letor = read_letor(path)
    np.testing.assert_allclose(
        np.array(scores.stdout.split(), dtype=float), again.scores(letor)[letor.mask]
    )
    bad = CliRunner().invoke(cli, [*args[:7], "--max-depth", "2"])
    assert bad.exit_code == 2
    assert (
        bad.stderr.strip() == "Error: --max-depth: only trees have it, not --weak-learner feature"
    )


# ---------------------------------------------------------------- the surrogate's scale


@pytest.mark.parametrize("surrogate", ["square", "cross_entropy", "qnorm"])
def test_scale_is_the_surrogate_of_beta_psi(rng, surrogate):
    """phi_beta(s) = beta phi(s / beta), gradient grad phi(s / beta), minimiser beta grad
    psi(r~) (zero gradient there)."""
    S, R = rng.normal(size=(3, 6)), rng.integers(1, 4, size=(3, 6)).astype(float)
    beta = 0.37
    scaled = bregman_loss(S, R, surrogate=surrogate, scale=beta)
    plain = bregman_loss(S / beta, R, surrogate=surrogate)
    np.testing.assert_allclose(scaled.value, beta * plain.value)
    np.testing.assert_allclose(scaled.grad, plain.grad)
    best = bregman_minimiser(R, surrogate=surrogate, scale=beta)
    np.testing.assert_allclose(best, beta * bregman_minimiser(R, surrogate=surrogate))
    assert np.abs(bregman_loss(best, R, surrogate=surrogate, scale=beta).grad).max() < 1e-9


def _queries(B, n, rng):
    x1 = rng.normal(size=(B, n))
    return np.stack([x1, 0.9 * x1 + 0.45 * rng.normal(size=(B, n))], axis=-1)


def _graded(u):
    """Labels 2, 2, 1, 1, 0, ... by the order of u within each query."""
    ranks = np.argsort(np.argsort(-u, axis=1), axis=1)
    return np.where(ranks < 2, 2.0, np.where(ranks < 4, 1.0, 0.0))


def test_scale_search_finds_the_known_optimum_scale():
    """A linear ranker with penalty l2 on the square surrogate of beta ||x||^2 has the
    closed form w(beta) = (Z^T Z / (2 beta B) + 2 l2 I)^{-1} Z^T r~ / B (standardised
    features Z): beta turns w from the least-squares direction (beta -> 0) to Z^T r~
    (beta -> inf). Validation queries are labelled by w(0.3), so validation NDCG@10 is 1
    exactly on an interval of beta around 0.3 and lower at both ends of [0, 1]."""
    rng = np.random.default_rng(0)
    B, n, l2, beta_star = 40, 8, 1.0, 0.3
    X = _queries(B, n, rng)
    train = _letor(X, _graded(X[..., 0] - 0.7 * X[..., 1] + 0.3 * rng.normal(size=(B, n))))
    mean, scale = standardisation(train)
    Z = ((X - mean) / scale).reshape(-1, 2)
    rt = ndcg_weights(ragged_batch(np.zeros((B, n)), train.relevance, None), None, "exp2m1",
                      "log2")[0].reshape(-1)  # fmt: skip

    def w_of(beta):
        return np.linalg.solve(Z.T @ Z / (2 * beta * B) + 2 * l2 * np.eye(2), Z.T @ rt / B)

    Xv = _queries(40, n, rng)
    valid = _letor(Xv, _graded(Xv @ (w_of(beta_star) / scale)))
    betas = np.linspace(0.005, 1.0, 400)
    closed = np.array([mean_ndcg(valid, Xv @ (w_of(b) / scale), 10) for b in betas])
    plateau = betas[closed == 1.0]
    assert plateau.min() < beta_star < plateau.max()
    assert closed[0] < 0.97 and closed[-1] < 0.97  # the scale matters

    def fit(beta):
        options = {"surrogate": "square", "scale": beta}
        return fit_linear_ranker(train, "bregman", options=options, l2=l2, max_iter=200)

    np.testing.assert_allclose(fit(beta_star).weights, w_of(beta_star), rtol=1e-5)
    search = search_box(lambda a: fit(float(a[0])).ndcg(valid), 1, method="pattern", max_evals=40)
    assert search.value == 1.0
    assert plateau.min() - 0.0025 <= search.alpha[0] <= plateau.max() + 0.0025


# ---------------------------------------------------------------- the study


def test_cli_study_surrogate_scale_end_to_end(tmp_path):
    data, _ = synthetic_letor(30, 3, docs=(5, 8), seed=2)
    path = tmp_path / "q.txt"
    path.write_text(format_letor(data))
    args = ["study", "surrogate-scale", "--data", str(path), "--data", "sample"]
    args += ["--betas", "0.1,10", "--rounds", "8", "--replicates", "2", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    records = pd.read_csv(tmp_path / "surrogate_scale.csv")
    assert len(records) == 2 * 2 * 2 and set(records["beta"]) == {0.1, 10.0}
    assert {f"ndcg@{k}" for k in range(1, 11)} <= set(records.columns)
    assert (tmp_path / "surrogate_scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "surrogate_scale_summary.csv").exists()
    assert (tmp_path / "surrogate_scale.nc").exists()
    # one task by hand: the split of replicate 0 and the boosted ranker at beta = 10
    row = records[(records["data"] == str(path)) & (records["beta"] == 10.0)].iloc[0]
    seed = np.random.SeedSequence(0, spawn_key=(0,))
    order = np.random.default_rng(seed).permutation(30)
    train, valid, test = (data.subset(np.sort(p)) for p in np.split(order, [18, 24]))
    options = {"surrogate": "cross_entropy", "scale": 10.0}
    ranker = fit_boosted_ranker(
        train, "bregman", valid=valid, options=options, n_trees=8, shrinkage=1.0,
        weak_learner="feature",
    )  # fmt: skip
    assert row["ndcg@10"] == pytest.approx(ranker.ndcg(test, 10))
    assert "mean test NDCG over 2 random splits" in result.stderr
    bad = CliRunner().invoke(cli, [*args[:2], "--betas", "1e-5", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: loss bregman is not finite")
    missing = CliRunner().invoke(cli, [*args[:2], "--data", str(tmp_path / "no.txt")])
    assert missing.exit_code == 2 and "is not a file" in missing.stderr
    for betas in ("0", "0.1,0", "nan", "-1", "inf"):
        refused = CliRunner().invoke(cli, [*args[:2], "--betas", betas, "--out", str(tmp_path)])
        assert refused.exit_code == 2 and "'--betas'" in refused.stderr, betas
    huge = CliRunner().invoke(cli, [*args[:2], "--rounds", str(10**12), "--out", str(tmp_path)])
    assert huge.exit_code == 2 and "'--rounds'" in huge.stderr


# ---------------------------------------------------------------- PiRank per level


def _by_hand(s, taus, k, sizes, keeps):
    """The multi-level relaxed top-k rows as the product of explicit block-diagonal
    NeuralSort matrices, one per level (b_j items per block, k_j rows kept)."""
    product, y, j = np.eye(len(s)), np.asarray(s, float), 0
    while len(y) > sizes[min(j, len(sizes) - 1)]:
        b, kj = sizes[min(j, len(sizes) - 1)], keeps[min(j, len(keeps) - 1)]
        blocks = [neuralsort(y[i : i + b], taus[j], kj) for i in range(0, len(y), b)]
        level = np.zeros((sum(p.shape[0] for p in blocks), len(y)))
        row = 0
        for i, p in zip(range(0, len(y), b), blocks, strict=True):
            level[row : row + p.shape[0], i : i + p.shape[1]] = p
            row += p.shape[0]
        product, y, j = level @ product, level @ y, j + 1
    return neuralsort(y, taus[j], k) @ product, j + 1


@pytest.mark.parametrize(
    ("n", "k", "sizes", "keeps"),
    [(9, 1, (4, 3), (2,)), (11, 2, (5,), (3, 2)), (10, 1, (3, 2), (2, 1))],
)
def test_per_level_block_sizes_and_rows_kept_by_hand(rng, n, k, sizes, keeps):
    s = rng.normal(size=n)
    d = relaxed_levels(n, k, sizes, keeps)
    ratio, tau = 0.5, 0.8
    taus = [tau * ratio ** (d - j) for j in range(1, d + 1)]
    P, _ = relaxed_topk(s, tau, k, sizes, ratio, keeps)
    expected, height = _by_hand(s, taus, k, sizes, keeps)
    assert height == d > 2
    np.testing.assert_allclose(P, expected, atol=1e-12)
    hard, _ = relaxed_topk(s, 1e-6, k, sizes, 1.0, keeps)  # keeps >= k: exact in the limit
    np.testing.assert_allclose(hard, np.eye(n)[np.argsort(-s)[:k]], atol=1e-6)


def test_per_level_settings_are_checked():
    s = np.zeros(9)
    for sizes, keeps in [((4, 2), 2), ((4,), (3, 4)), ((4,), 0)]:
        with pytest.raises(ValueError, match="block_size|level_k"):
            pirank_loss(s, np.ones(9), k=2, block_size=sizes, level_k=keeps)
    with pytest.raises(ValueError, match="level_k needs block_size"):
        pirank_loss(s, np.ones(9), level_k=3)
    scores, labels = np.linspace(0.0, 2.0, 12), np.arange(12.0) % 3
    spec_default = pirank_loss(scores, labels)  # Table 2: k = 10; the ablations' tau = 5
    stated = pirank_loss(scores, labels, tau=5.0, k=10)
    assert spec_default.value == pytest.approx(stated.value)
    np.testing.assert_array_equal(spec_default.grad, stated.grad)
    assert not np.allclose(pirank_loss(scores, labels, tau=1000.0, k=10).grad, stated.grad)


def test_cli_parses_per_level_options(tmp_path):
    data, _ = synthetic_letor(12, 3, docs=(6, 9), seed=4)
    path = tmp_path / "q.txt"
    path.write_text(format_letor(data))
    args = ["ltr", "train", str(path), "--loss", "pirank", "--max-iter", "3", "-q"]
    opts = ["--option", "k=1", "--option", "block_size=4,3", "--option", "level_k=2"]
    out = tmp_path / "m.json"
    result = CliRunner().invoke(cli, [*args, *opts, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["options"]["block_size"] == [4, 3]
    bad = CliRunner().invoke(cli, [*args, "--option", "block_size=4,x"])
    assert bad.exit_code == 2
    assert "block_size takes an integer or comma-separated integers" in bad.stderr
