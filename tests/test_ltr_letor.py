"""LETOR reader (with fuzzing), linear-ranker training, and the ``rankmodels ltr`` CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.ltr import metrics
from rankmodels.ltr.letor import LetorData, parse_letor, read_letor
from rankmodels.ltr.train import fit_linear_ranker, ridge_ranker
from rankmodels_app.cli import cli

SAMPLE = """# a comment line
2 qid:10 1:0.5 3:1.0 # docid = a
0 qid:10 2:0.25
1 qid:7 1:1 2:2 3:3

0 qid:10 1:-1.5
"""


def test_parse_sample_sparse_and_non_contiguous():
    d = parse_letor(SAMPLE)
    assert list(d.qids) == ["10", "7"]
    np.testing.assert_array_equal(d.lengths, [3, 1])
    assert d.features.shape == (2, 3, 3)
    np.testing.assert_array_equal(d.features[0], [[0.5, 0, 1.0], [0, 0.25, 0], [-1.5, 0, 0]])
    np.testing.assert_array_equal(d.relevance, [[2, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(d.features[1, 0], [1, 2, 3])
    sub = d.subset(np.array([1]))
    assert sub.features.shape == (1, 1, 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x qid:1 1:0", "label"),
        ("-1 qid:1 1:0", "non-negative"),
        ("1 q:1 1:0", "qid"),
        ("1 qid:1 0:3", "feature"),
        ("1 qid:1 2:abc", "feature"),
        ("1 qid:1 2:1 2:3", "twice"),
        ("1", "expected"),
        ("# nothing", "no documents"),
    ],
)
def test_bad_lines_name_the_line(text, message):
    with pytest.raises(InputError, match=message) as err:
        parse_letor("1 qid:1 1:0\n" + text if message != "no documents" else text, "f.txt")
    assert str(err.value).startswith("f.txt")
    if message != "no documents":
        assert "line 2" in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .:#qid-\nabe", max_size=200))
def test_fuzz_reader_returns_data_or_input_error(text):
    try:
        d = parse_letor(text)
    except InputError:
        return
    assert isinstance(d, LetorData)
    assert d.lengths.sum() >= 1 and np.all(d.relevance >= 0)


def test_real_mq2008_fold(shared_data):
    path = shared_data / "letor" / "mq2008-fold1-test" / "test.txt"
    d = read_letor(path)
    n_lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    assert d.lengths.shape == (156,) and d.features.shape[2] == 46
    assert d.lengths.sum() == n_lines
    assert set(np.unique(d.relevance)) <= {0.0, 1.0, 2.0}


def _synthetic(rng, n_queries=40, n_docs=12, n_feat=5):
    w_true = rng.normal(size=n_feat)
    X = rng.normal(size=(n_queries, n_docs, n_feat))
    utility = X @ w_true
    rel = np.digitize(utility, np.quantile(utility, [0.6, 0.85])).astype(float)
    lengths = np.full(n_queries, n_docs)
    qids = np.array([str(i) for i in range(n_queries)], dtype=object)
    return LetorData(X, rel, lengths, qids), w_true


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
    data, w_true = _synthetic(rng)
    model = fit_linear_ranker(data, loss, options=options, stages=stages, max_iter=60)
    w = model.weights * 1.0 / model.scale  # back to raw feature units
    cosine = w @ w_true / np.linalg.norm(w) / np.linalg.norm(w_true)
    assert cosine > 0.9
    test, _ = _synthetic(np.random.default_rng(1), n_queries=20)
    ideal_scores = test.features @ w_true
    assert model.ndcg(test, k=5) > 0.9 * np.mean(metrics.ndcg(test.relevance, ideal_scores, k=5))


def test_training_objective_gradient(rng):
    """The chain rule X^T g of the trainer, through scipy's objective, by finite differences."""
    from scipy.optimize import check_grad

    from rankmodels.ltr.losses import LOSSES

    data, _ = _synthetic(rng, n_queries=6, n_docs=5, n_feat=3)
    X = data.features

    def f(w):
        return float(np.mean(LOSSES["softrank"](X @ w, data.relevance, sigma=0.7).value))

    def g(w):
        res = LOSSES["softrank"](X @ w, data.relevance, sigma=0.7)
        return np.einsum("bnf,bn->f", X, res.grad) / X.shape[0]

    assert check_grad(f, g, rng.normal(size=3)) < 1e-6


def test_fit_rejects_unknown_loss(rng):
    data, _ = _synthetic(rng)
    with pytest.raises(ValueError, match="loss"):
        fit_linear_ranker(data, "hinge")
    assert ridge_ranker(data).weights.shape == (5,)


def _write(tmp_path, rng):
    data, _ = _synthetic(rng, n_queries=12, n_docs=6, n_feat=3)
    lines = []
    for b in range(12):
        for j in range(6):
            feats = " ".join(f"{f + 1}:{data.features[b, j, f]:.6f}" for f in range(3))
            lines.append(f"{int(data.relevance[b, j])} qid:{b} {feats}")
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_train_end_to_end(tmp_path, rng):
    path = _write(tmp_path, rng)
    out = tmp_path / "model.json"
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "ltr",
            "train",
            str(path),
            "--loss",
            "sinkprop",
            "--anneal",
            "1,0.3",
            "--option",
            "n_iter=5",
            "--max-iter",
            "20",
            "-k",
            "5",
            "-o",
            str(out),
            "--seed",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "sinkprop: NDCG@5 train" in result.output
    report = json.loads(out.read_text())
    assert report["queries"] == {"train": 8, "test": 4}
    assert report["anneal"] == [{"sigma": 1.0}, {"sigma": 0.3}]
    assert len(report["weights"]) == 3 and 0 <= report["ndcg@5"]["test"] <= 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--option", "sigma"], "KEY=VALUE"),
        (["--option", "bogus=1"], "bogus"),
        (["--option", "sigma=-1"], "sigma"),
        (["--loss", "listnet", "--anneal", "1,0.5"], "no smoothing"),
        (["--anneal", "1,x"], "comma-separated"),
    ],
)
def test_cli_bad_options_exit_2(tmp_path, rng, args, message):
    path = _write(tmp_path, rng)
    result = CliRunner().invoke(cli, ["ltr", "train", str(path), "--max-iter", "2", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_cli_bad_file_and_overwrite(tmp_path, rng):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0\n1 qid:1 x:0\n")
    result = CliRunner().invoke(cli, ["ltr", "train", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: line 2:" in result.output
    good = _write(tmp_path, rng)
    result = CliRunner().invoke(cli, ["ltr", "train", str(good), "-o", str(good)])
    assert result.exit_code == 2 and "refusing" in result.output


def test_cli_evaluate_matches_the_library(tmp_path, rng):
    path = _write(tmp_path, rng)
    model = tmp_path / "model.json"
    runner = CliRunner()
    assert (
        runner.invoke(
            cli, ["ltr", "train", str(path), "--loss", "listnet", "-o", str(model), "-q"]
        ).exit_code
        == 0
    )
    result = runner.invoke(
        cli, ["ltr", "evaluate", str(path), "-m", str(model), "-k", "3", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    spec = json.loads(model.read_text())
    data = read_letor(path)
    scores = (data.features - spec["feature_mean"]) / spec["feature_scale"] @ spec["weights"]
    assert report["queries"] == 12
    assert report["ndcg@3"] == pytest.approx(np.mean(metrics.ndcg(data.relevance, scores, k=3)))
    assert report["mrr"] == pytest.approx(np.mean(metrics.reciprocal_rank(data.relevance, scores)))
    text = runner.invoke(cli, ["ltr", "evaluate", str(path), "-m", str(model)])
    assert text.exit_code == 0 and "ndcg@10" in text.output and "opa" in text.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a JSON model"),
        ("[1, 2]", "JSON object"),
        ('{"weights": [1, 2, 3]}', "feature_mean: missing"),
        ('{"weights": [1, 2]}', "weights: must hold 3"),
        (
            '{"weights": [1, 2, 3], "feature_mean": [0, 0, 0], "feature_scale": [1, 0, 1]}',
            "feature_scale: must be positive",
        ),
    ],
)
def test_cli_evaluate_bad_model(tmp_path, rng, content, message):
    path = _write(tmp_path, rng)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = CliRunner().invoke(cli, ["ltr", "evaluate", str(path), "-m", str(bad)])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
