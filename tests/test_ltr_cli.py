"""``rankmodels ltr`` end to end with CliRunner: training, evaluation, the shipped sample,
bad input (exit 2, one line naming the file / option), conventions and progress."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.ltr import metrics
from rankmodels.ltr.letor import format_letor, read_letor
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.synthetic import SAMPLE, synthetic_letor
from rankmodels_app import _common
from rankmodels_app.cli import cli


def _run(*args: object):
    """``rankmodels ltr ARGS``."""
    return CliRunner().invoke(cli, ["ltr", *(str(a) for a in args)])


def _write(tmp_path, rng, name="train.txt", n_queries=12, n_features=3):
    data, _ = synthetic_letor(n_queries=n_queries, n_features=n_features, docs=(4, 6), seed=rng)
    path = tmp_path / name
    path.write_text(format_letor(data))
    return path


def _bad(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_train_end_to_end(tmp_path, rng):
    path = _write(tmp_path, rng)
    out = tmp_path / "model.json"
    args = ["train", path, "--loss", "sinkprop", "--anneal", "1,0.3", "--option", "n_iter=5"]
    result = _run(*args, "--max-iter", "20", "-k", "5", "-o", out, "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "sinkprop linear: NDCG@5 train" in result.stderr  # with -o: a summary
    report = json.loads(out.read_text())
    assert report["queries"] == {"train": 8, "test": 4}
    assert report["options"] == {"n_iter": 5}
    assert report["anneal"] == [{"sigma": 1.0}, {"sigma": 0.3}]
    assert len(report["weights"]) == 3 and 0 <= report["ndcg@5"]["test"] <= 1


def test_shipped_sample_commands(tmp_path, repo_data):
    """The commands the README gives for a fresh clone, on data/letor-sample.txt."""
    sample = repo_data / "letor-sample.txt"
    model = tmp_path / "model.json"
    train = _run("train", sample, "-o", model, "-q")
    assert train.exit_code == 0, train.output
    spec = json.loads(model.read_text())
    _, w_true = synthetic_letor(**SAMPLE)
    w = np.asarray(spec["weights"]) / np.asarray(spec["feature_scale"])
    assert w @ w_true / np.linalg.norm(w) > 0.9  # the known truth, up to scale
    evaluate = _run("evaluate", sample, "-m", model, "--format", "json")
    assert evaluate.exit_code == 0, evaluate.output
    assert json.loads(evaluate.stdout)["queries"] == SAMPLE["n_queries"]
    assert _run("losses").exit_code == 0


def test_losses_command_lists_the_registry():
    result = _run("losses")
    assert result.exit_code == 0
    for spec in LOSSES:
        assert f"{spec.name}: {spec.summary}" in result.stdout
        for opt in spec.options:
            assert f"--option {opt.name}=" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--seed", "-1"], ["--seed", "-1 is not in the range"]),
        (["--option", "sigma"], ["--option: expected KEY=VALUE"]),
        (["--option", "sigma=abc"], ["--option: sigma takes a finite number, got 'abc'"]),
        (["--option", "sigma=nan"], ["sigma takes a finite number"]),
        (["--option", "method=[1]"], ["method takes one of exact, normal, hybrid"]),
        (
            ["--option", "foo=1"],
            ["loss softrank has no option 'foo'; its options: sigma, k, gain, discount, method"],
        ),
        (["--option", "sigma=-1"], ["--option: sigma must be positive"]),
        (["--option", "sigma=1", "--option", "sigma=2"], ["sigma is given twice"]),
        (["--loss", "listmle", "--option", "rng=1"], ["rng takes a value only the library"]),
        (["--loss", "pirank", "--option", "block_size=3"], ["block_size needs a cut-off k"]),
        (["--loss", "listnet", "--anneal", "1,0.5"], ["no smoothing", "sinkprop, softrank"]),
        (["--anneal", "1,x"], ["comma-separated"]),
        (["--anneal", "1,-0.5"], ["--anneal: sigma must be positive"]),
        (["--test-fraction", "0.9"], ["leaves no training query of the 1"]),
        (["--test-fraction", "nan"], ["--test-fraction", "'nan' is not a number"]),
        (["--l2", "nan"], ["--l2", "'nan' is not a number"]),
        (["--l2", "inf"], ["--l2", "inf is not in the range"]),
        (["-k", "100000000000000000000"], ["--cutoff", "is not in the range 1<=x<=1000000000"]),
        (["--hidden", "8"], ["--hidden: only an mlp has hidden layers, not --model linear"]),
        (["--model", "rerank", "--hidden", "8"], ["not --model rerank --base linear"]),
        (["--model", "mlp", "--hidden", "8,x"], ["--hidden: expected comma-separated", "'8,x'"]),
        (["--model", "mlp", "--hidden", "0"], ["--hidden: layer widths must be in 1 .. 10000"]),
        (["--model", "mlp", "--max-depth", "2"], ["--max-depth: only boost has weak learners"]),
        (["--shrinkage", "0.5"], ["--shrinkage: only boost has weak learners, not --model linear"]),
        (["--model", "boost", "--shrinkage", "0"], ["--shrinkage", "0<x<=1"]),
        (["--model", "boost", "--shrinkage", "nan"], ["--shrinkage", "'nan' is not a number"]),
        (["--model", "boost", "--max-depth", "0"], ["--max-depth", "not in the range"]),
        (["--normalise", "l2"], ["--normalise", "'l2' is not one of"]),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, args, fragments):
    path = tmp_path / "one.txt"
    path.write_text("2 qid:1 1:1\n0 qid:1 1:0\n1 qid:1 1:0.5\n")
    _bad(_run("train", path, "--max-iter", "2", *args), *fragments)


@pytest.mark.parametrize(
    "args",
    [
        ["--option", "sigma=1e-300"],
        ["--option", "sigma=1e300"],
        ["--loss", "sinkprop", "--option", "sigma=1e-300"],
        ["--loss", "sinkprop", "--option", "n_iter=100000000"],
        ["--loss", "bregman", "--option", "surrogate=cross_entropy", "--option", "c=1e-300"],
        ["--loss", "pirank", "--option", "tau=1e-300", "--option", "k=1000000000000"],
        ["--loss", "softrank", "--option", "n_exact=1000000000000000000000"],
        ["--l2", "inf"],
        ["--l2", "1e6"],
        ["--max-iter", "100000000"],
    ],
)
def test_extreme_values_run_or_exit_2_never_a_traceback(repo_data, args):
    result = _run("train", repo_data / "letor-sample.txt", "-q", "--max-iter", "3", *args)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        _bad(result)


def test_huge_feature_index_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("1 qid:1 1:0.5\n0 qid:1 100000000:0.5\n")
    _bad(_run("train", path), f"{path}: line 2: feature index 100000000 exceeds 10000")


def test_bad_file_and_overwrite(tmp_path, rng):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0\n1 qid:1 x:0\n")
    _bad(_run("train", bad), f"{bad}: line 2:")
    good = _write(tmp_path, rng)
    _bad(_run("train", good, "-o", good), "refusing")


def test_one_query_trains_and_nothing_to_learn_is_refused(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("2 qid:1 1:1\n0 qid:1 1:0\n1 qid:1 1:0.5\n")
    result = _run("train", one, "--loss", "listnet", "-k", "3")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "listnet linear: NDCG@3 train 1.0000"  # no test part: no NaN
    flat = tmp_path / "flat.txt"
    flat.write_text("0 qid:1 1:1\n0 qid:1 1:0\n1 qid:2 1:3\n1 qid:2 1:0.5\n")
    _bad(
        _run("train", flat, "--test-fraction", "0"),
        f"{flat}: nothing to learn: none of the 2 training queries has two documents",
    )


@pytest.mark.filterwarnings("error")  # no "Mean of empty slice" RuntimeWarning
def test_evaluate_conventions_for_queries_without_relevant_documents(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("2 qid:1 1:1 2:0\n0 qid:1 1:0 2:1\n1 qid:1 1:0.5 2:0.5\n")
    model = tmp_path / "model.json"
    assert _run("train", train, "-o", model, "-q", "--loss", "listnet").exit_code == 0
    zeros = tmp_path / "zeros.txt"
    zeros.write_text("0 qid:1 1:1 2:0\n0 qid:1 1:0 2:1\n0 qid:2 1:1\n")
    result = _run("evaluate", zeros, "-m", model, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ndcg@10"] == 1.0  # LightGBM: no relevant document, every order ideal
    assert report["map"] == report["mrr"] == report["precision@10"] == 0.0
    assert report["arp"] is None and report["opa"] is None  # defined nowhere
    text = _run("evaluate", zeros, "-m", model)
    assert "arp           n/a" in text.stdout and "ndcg@10       1.0000" in text.stdout


def test_ungrouped_qids_warn_and_group_stably(tmp_path):
    grouped = tmp_path / "grouped.txt"
    grouped.write_text("1 qid:a 1:1\n0 qid:a 1:2\n2 qid:b 1:3\n0 qid:b 1:4\n0 qid:c 1:1\n")
    scattered = tmp_path / "scattered.txt"
    scattered.write_text("1 qid:a 1:1\n2 qid:b 1:3\n0 qid:a 1:2\n0 qid:b 1:4\n0 qid:c 1:1\n")
    want = _run("train", grouped, "--test-fraction", "0", "-o", tmp_path / "g.json", "-q")
    assert want.exit_code == 0 and "warning" not in want.stderr
    got = _run("train", scattered, "--test-fraction", "0", "-o", tmp_path / "s.json", "-q")
    assert got.exit_code == 0, got.output
    assert f"warning: {scattered}: qid a comes back on line 3" in got.stderr
    assert got.stdout == want.stdout
    assert (
        json.loads((tmp_path / "g.json").read_text())["weights"]
        == json.loads((tmp_path / "s.json").read_text())["weights"]
    )


def test_evaluate_matches_the_library(tmp_path, rng):
    path = _write(tmp_path, rng)
    model = tmp_path / "model.json"
    assert _run("train", path, "--loss", "listnet", "-o", model, "-q").exit_code == 0
    result = _run("evaluate", path, "-m", model, "-k", "3", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    spec = json.loads(model.read_text())
    data = read_letor(path)
    scores = (data.features - spec["feature_mean"]) / spec["feature_scale"] @ spec["weights"]
    kw = {"lengths": data.lengths}
    assert report["queries"] == 12
    assert report["ndcg@3"] == pytest.approx(
        np.mean(metrics.ndcg(data.relevance, scores, k=3, **kw))
    )
    assert report["mrr"] == pytest.approx(
        np.mean(metrics.reciprocal_rank(data.relevance, scores, **kw))
    )
    text = _run("evaluate", path, "-m", model)
    assert text.exit_code == 0 and "ndcg@10" in text.stdout and "opa" in text.stdout


def test_evaluate_feature_counts(tmp_path, rng):
    """More features in the data than the model: the message says which file has how many.
    Fewer (a sparse file that never mentions the last features): they are 0."""
    wide = _write(tmp_path, rng, "wide.txt", n_features=4)
    narrow = _write(tmp_path, rng, "narrow.txt", n_features=3)
    model = tmp_path / "model.json"
    assert _run("train", narrow, "-o", model, "-q", "--loss", "listnet").exit_code == 0
    _bad(
        _run("evaluate", wide, "-m", model),
        f"{wide} has 4 features but the model {model} was trained on 3",
    )
    sparse = tmp_path / "sparse.txt"
    sparse.write_text("1 qid:1 1:0.5\n0 qid:1 2:1.5\n2 qid:1 1:2\n")
    result = _run("evaluate", sparse, "-m", model, "--format", "json")
    assert result.exit_code == 0, result.output
    spec = json.loads(model.read_text())
    x = np.array([[0.5, 0, 0], [0, 1.5, 0], [2, 0, 0]])
    scores = (x - spec["feature_mean"]) / spec["feature_scale"] @ spec["weights"]
    want = metrics.ndcg(np.array([1.0, 0, 2]), scores, k=10)
    assert json.loads(result.stdout)["ndcg@10"] == pytest.approx(want)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a JSON model"),
        ("[1, 2]", "JSON object"),
        ('{"weights": [1, 2, 3]}', "feature_mean: missing"),
        (
            '{"weights": [], "feature_mean": [], "feature_scale": []}',
            "weights: must be a non-empty",
        ),
        (
            '{"weights": [1, 2, 3], "feature_mean": [0, 0], "feature_scale": [1, 1, 1]}',
            "feature_mean: must be a list of 3 numbers",
        ),
        (
            '{"weights": [1, 2, 3], "feature_mean": [0, 0, 0], "feature_scale": [1, 0, 1]}',
            "feature_scale: must be positive",
        ),
        ('{"model": "rerank", "n_features": 3, "kernels": ["rbf"]}', "kernels: must be a list"),
        (
            '{"model": "rerank", "n_features": 3, "kernels": ["zscore"], "weights": [1, 2]}',
            "weights: must be a list of 1 numbers",
        ),
        (
            '{"model": "rerank", "n_features": 3, "kernels": ["zscore"], "weights": [1], "l2": -1}',
            "l2: must be a finite number >= 0",
        ),
        (
            '{"model": "rerank", "n_features": 3, "kernels": ["zscore"], "weights": [1], '
            '"base": {"model": "rerank"}}',
            "base: must be a linear, mlp or boost model",
        ),
        (
            '{"model": "rerank", "n_features": 3, "kernels": ["zscore"], "weights": [1], '
            '"base": {"model": "linear", "weights": [1, 2, 3]}}',
            "base.feature_mean: missing",
        ),
    ],
)
def test_evaluate_bad_model(tmp_path, rng, content, message):
    path = _write(tmp_path, rng)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    _bad(_run("evaluate", path, "-m", bad), str(bad), message)


def test_progress_bar_on_a_terminal_only(tmp_path, rng, monkeypatch):
    path = _write(tmp_path, rng)
    quiet = _run("train", path, "--max-iter", "3")  # CliRunner's stderr is not a terminal
    assert quiet.exit_code == 0 and "training softrank" not in quiet.stderr
    monkeypatch.setattr(_common, "show_progress", lambda q: not q)  # as if on a terminal
    shown = _run("train", path, "--max-iter", "3")
    assert shown.exit_code == 0 and "training softrank" in shown.stderr
    assert "training" not in _run("train", path, "--max-iter", "3", "-q").stderr


@pytest.mark.parametrize("kind", ["linear", "mlp", "boost", "rerank"])
def test_every_model_trains_evaluates_and_predicts(tmp_path, kind):
    """train -o, then evaluate and predict read the model back: predict's scores are the
    library ranker's, evaluate's NDCG@10 is theirs (recomputed here), and the test NDCG
    of train equals what evaluate reports on those queries."""
    data, _ = synthetic_letor(n_queries=40, n_features=3, docs=(4, 8), seed=3)
    path = tmp_path / "train.txt"
    path.write_text(format_letor(data))
    model = tmp_path / "model.json"
    args = ("train", path, "--model", kind, "--loss", "listnet", "--max-iter", "30")
    result = _run(*args, "--test-fraction", "0", "-o", model)
    assert result.exit_code == 0, result.output
    assert f"listnet {kind}: NDCG@10 train" in result.stderr
    assert json.loads(model.read_text())["model"] == kind
    scores_file = tmp_path / "scores.txt"
    predict = _run("predict", path, "-m", model, "-o", scores_file)
    assert predict.exit_code == 0, predict.output
    scores = np.array([float(v) for v in scores_file.read_text().split()])
    assert scores.shape == (int(data.lengths.sum()),)
    padded = np.zeros(data.relevance.shape)
    padded[data.mask] = scores
    ndcg = float(np.mean(metrics.ndcg(data.relevance, padded, lengths=data.lengths, k=10)))
    evaluate = _run("evaluate", path, "-m", model, "--format", "json")
    assert json.loads(evaluate.stdout)["ndcg@10"] == pytest.approx(ndcg)
    report = json.loads(model.read_text())
    assert report["ndcg@10"]["train"] == pytest.approx(ndcg)
    stdout = _run("predict", path, "-m", model)
    assert stdout.exit_code == 0 and stdout.stdout == scores_file.read_text()
    from rankmodels.ltr.model_io import read_ranker

    ranker, n = read_ranker(model)
    assert n == 3
    written = read_letor(path)  # the file holds 6 significant digits
    np.testing.assert_allclose(ranker.scores(written)[data.mask], scores, rtol=1e-15)


def test_crossval_folds_and_json(tmp_path):
    data, _ = synthetic_letor(n_queries=30, n_features=3, docs=(4, 8), seed=2)
    path = tmp_path / "d.txt"
    path.write_text(format_letor(data))
    args = ("crossval", path, "--folds", "3", "--loss", "listnet", "--max-iter", "20")
    result = _run(*args, "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    # recompute: the same folds, fitted by the library
    from rankmodels.ltr.splits import kfold_indices
    from rankmodels.ltr.train import fit_linear_ranker

    expected = [
        fit_linear_ranker(data.subset(tr), "listnet", max_iter=20).ndcg(data.subset(te))
        for tr, te in kfold_indices(30, 3, 0)
    ]
    np.testing.assert_allclose(out["folds"], expected, rtol=1e-10)
    assert out["ndcg@10"] == pytest.approx(np.mean(expected))
    assert out["ndcg@10_se"] == pytest.approx(np.std(expected, ddof=1) / np.sqrt(3))
    text = _run(*args, "--model", "boost", "-q")
    assert text.exit_code == 0, text.output
    assert len(text.stdout.splitlines()) == 4 and "±" in text.stdout.splitlines()[-1]


def test_crossval_and_predict_bad_input(tmp_path, rng):
    path = _write(tmp_path, rng)
    _bad(_run("crossval", path, "--folds", "13"), "--folds 13 is more than the 12 queries")
    _bad(
        _run("crossval", path, "--model", "mlp", "--anneal", "1,0.5", "--loss", "softrank"),
        "--anneal: only the linear model anneals",
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": "boost", "n_features": 3, "trees": [{"feature": [0, -1]}]}')
    _bad(_run("predict", path, "-m", bad), str(bad), "trees[0].left: missing")
    bad.write_text(
        '{"model": "boost", "n_features": 3, "trees": [{"feature": [0, -1, -1], '
        '"threshold": [0.5, null, null], "left": [0, -1, -1], "right": [2, -1, -1], '
        '"value": [0, 1, 2]}]}'
    )
    _bad(_run("predict", path, "-m", bad), "trees[0]: is not a tree on 3 features")
    bad.write_text(
        '{"model": "mlp", "n_features": 3, "hidden": [2], "params": [1, 2], '
        '"feature_mean": [0, 0, 0], "feature_scale": [1, 1, 1]}'
    )
    _bad(_run("predict", path, "-m", bad), "params: must be a list of 10 numbers")
    bad.write_text('{"model": "linear", "normalise": "l2", "weights": [1, 2, 3]}')
    _bad(_run("predict", path, "-m", bad), str(bad), "normalise: must be one of none, zscore")
    bad.write_text('{"model": "forest"}')
    _bad(_run("evaluate", path, "-m", bad), "model: must be one of linear, mlp, boost")


def _refit_file(tmp_path, seed: int = 3, n_queries: int = 40, name: str = "train.txt"):
    """A synthetic file and the data as read back from it (6 significant digits)."""
    data, _ = synthetic_letor(n_queries=n_queries, n_features=3, docs=(4, 8), seed=seed)
    path = tmp_path / name
    path.write_text(format_letor(data))
    return path, read_letor(path)


def _predicted(tmp_path, path, *train_args) -> np.ndarray:
    """``train --test-fraction 0 -o`` then ``predict``: one score per document."""
    model = tmp_path / "model.json"
    result = _run("train", path, "--test-fraction", "0", "-o", model, "-q", *train_args)
    assert result.exit_code == 0, result.output
    scores = _run("predict", path, "-m", model)
    assert scores.exit_code == 0, scores.output
    return np.array([float(v) for v in scores.stdout.split()])


def test_mlp_and_boosting_knobs_reach_the_library(tmp_path):
    """--hidden, --max-depth, --min-leaf and --shrinkage train what the library trains with
    those keywords (the CLI's model refitted here), and they change the model."""
    from rankmodels.ltr.boost import fit_boosted_ranker
    from rankmodels.ltr.mlp import fit_mlp_ranker

    path, data = _refit_file(tmp_path)
    common = ("--loss", "listnet", "--max-iter", "15")
    mlp = _predicted(tmp_path, path, *common, "--model", "mlp", "--hidden", "5,3")
    assert json.loads((tmp_path / "model.json").read_text())["hidden"] == [5, 3]
    lib = fit_mlp_ranker(data, "listnet", hidden=(5, 3), l2=1e-3, epochs=15, seed=0)
    np.testing.assert_allclose(mlp, lib.scores(data)[data.mask], rtol=1e-12)
    knobs = ("--max-depth", "2", "--min-leaf", "3", "--shrinkage", "0.5")
    boost = _predicted(tmp_path, path, *common, "--model", "boost", *knobs)
    trees = json.loads((tmp_path / "model.json").read_text())["trees"]
    assert max(len(t["feature"]) for t in trees) <= 7  # depth 2: at most 7 nodes
    lib = fit_boosted_ranker(
        data, "listnet", n_trees=15, seed=0, max_depth=2, min_leaf=3, shrinkage=0.5
    )
    np.testing.assert_allclose(boost, lib.scores(data)[data.mask], rtol=1e-12)
    default = _predicted(tmp_path, path, *common, "--model", "boost")
    assert not np.allclose(default, boost)
    assert (
        max(len(t["feature"]) for t in json.loads((tmp_path / "model.json").read_text())["trees"])
        > 7
    )


def test_per_query_normalisation_is_trained_saved_and_applied(tmp_path):
    """--normalise zscore: the model is the library's fit on the normalised queries, the
    file says so, and predict / evaluate normalise the raw file before scoring; crossval
    --normalise minmax is the library's cross-validation on min-max normalised queries."""
    from rankmodels.ltr.query_norm import normalise_queries
    from rankmodels.ltr.splits import kfold_indices
    from rankmodels.ltr.train import fit_linear_ranker

    path, data = _refit_file(tmp_path)
    args = ("--loss", "listnet", "--max-iter", "30")
    scores = _predicted(tmp_path, path, *args, "--normalise", "zscore")
    spec = json.loads((tmp_path / "model.json").read_text())
    assert spec["normalise"] == "zscore"
    z = normalise_queries(data, "zscore")
    lib = fit_linear_ranker(z, "listnet", max_iter=30, l2=1e-3)
    np.testing.assert_allclose(scores, lib.scores(z)[data.mask], rtol=1e-10)
    evaluate = _run("evaluate", path, "-m", tmp_path / "model.json", "--format", "json")
    assert json.loads(evaluate.stdout)["ndcg@10"] == pytest.approx(lib.ndcg(z))
    assert not np.allclose(scores, _predicted(tmp_path, path, *args), atol=1e-3)
    result = _run(
        "crossval", path, "--folds", "3", *args, "--normalise", "minmax", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    m = normalise_queries(data, "minmax")
    expected = [
        fit_linear_ranker(m.subset(tr), "listnet", max_iter=30).ndcg(m.subset(te))
        for tr, te in kfold_indices(40, 3, 0)
    ]
    np.testing.assert_allclose(json.loads(result.stdout)["folds"], expected, rtol=1e-10)


def test_linear_model_stops_early_on_valid(tmp_path):
    """train --model linear --valid FILE is the library's early-stopped fit on those
    validation queries, which here differs from the fit that ignores them."""
    from rankmodels.ltr.train import fit_linear_ranker

    path, data = _refit_file(tmp_path, seed=5, n_queries=10)
    valid_path, valid = _refit_file(tmp_path, seed=6, n_queries=20, name="valid.txt")
    args = ("--loss", "softrank", "--option", "sigma=0.5", "--l2", "0", "--max-iter", "25")
    scores = _predicted(tmp_path, path, *args, "--valid", valid_path)
    kw = dict(options={"sigma": 0.5}, l2=0.0, max_iter=25)
    lib = fit_linear_ranker(data, "softrank", valid=valid, **kw)
    np.testing.assert_allclose(scores, lib.scores(data)[data.mask], rtol=1e-10)
    plain = fit_linear_ranker(data, "softrank", **kw)
    assert not np.allclose(plain.weights, lib.weights)
