"""Best-surrogate estimation: the mixture surrogate by its definition and NDCG
consistency, the simplex grid by enumeration, the derivative-free search on objectives
with a known maximiser, and eqs. 3.25-3.26 end to end on synthetic queries."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import minimize

from rankmodels.ltr.bregman import SURROGATES, bregman_loss, bregman_mixture_loss
from rankmodels.ltr.letor import format_letor, read_letor
from rankmodels.ltr.splits import holdout_split
from rankmodels.ltr.surrogate_search import (
    best_surrogate,
    mixture_options,
    search_simplex,
    simplex_grid,
)
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import fit_linear_ranker
from rankmodels_app.cli import cli


def test_mixture_is_the_normalised_weighted_sum(rng):
    S, R = rng.normal(size=(3, 6)), rng.integers(0, 4, size=(3, 6)).astype(float)
    weights = {"cross_entropy": 0.5, "square": 2.0, "qnorm": 1.5}
    mix = bregman_mixture_loss(S, R, c=0.7, **weights)
    parts = [bregman_loss(S, R, surrogate=name, c=0.7) for name in weights]
    total = sum(weights.values())
    np.testing.assert_allclose(
        mix.value, sum(w / total * p.value for w, p in zip(weights.values(), parts, strict=True))
    )
    np.testing.assert_allclose(
        mix.grad, sum(w / total * p.grad for w, p in zip(weights.values(), parts, strict=True))
    )
    alone = bregman_mixture_loss(S, R, cross_entropy=0.0, square=3.0, qnorm=0.0)
    np.testing.assert_allclose(alone.value, bregman_loss(S, R, surrogate="square").value)
    for bad in ({"square": -1.0}, {"cross_entropy": 0.0, "square": 0.0, "qnorm": 0.0}):
        with pytest.raises(ValueError, match="mixture weights must be"):
            bregman_mixture_loss(S, R, **bad)


@pytest.mark.parametrize("seed", range(4))
def test_the_mixture_minimiser_orders_by_gain(seed):
    """NDCG consistency of psi_alpha: the unconstrained minimiser sorts by label."""
    rng = np.random.default_rng(seed)
    rel = rng.permutation([3.0, 2.0, 1.0, 0.5, 0.0])
    alpha = rng.dirichlet(np.ones(3))
    opts = mixture_options(alpha)
    res = minimize(
        lambda s: (lambda r: (r.value, r.grad))(bregman_mixture_loss(s, rel, **opts)),
        np.zeros(5),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-10},
    )
    assert np.abs(res.jac).max() < 1e-6
    np.testing.assert_array_equal(np.argsort(-res.x), np.argsort(-rel))


@pytest.mark.parametrize(("dim", "resolution"), [(1, 3), (2, 4), (3, 2), (3, 5), (4, 3)])
def test_simplex_grid_is_every_lattice_point(dim, resolution):
    grid = simplex_grid(dim, resolution)
    brute = {c for c in np.ndindex(*(resolution + 1,) * dim) if sum(c) == resolution}
    assert grid.shape == (math.comb(resolution + dim - 1, dim - 1), dim)
    assert {tuple(np.rint(g * resolution).astype(int)) for g in grid} == brute
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)
    assert np.all(grid[:dim].max(axis=1) == 1.0)  # the vertices come first


def test_search_refines_beyond_the_grid_towards_a_known_maximum():
    target = np.array([0.15, 0.6, 0.25])  # not a grid point
    search = search_simplex(lambda a: -float(np.sum((a - target) ** 2)), 3, max_evals=40)
    grid_best = max(-np.sum((g - target) ** 2) for g in simplex_grid(3, 2))
    assert len(search.trace) <= 40
    assert search.value > grid_best
    assert np.abs(search.alpha - target).max() < 0.05
    assert search.value == max(v for _, v in search.trace)
    np.testing.assert_allclose(search.alpha.sum(), 1.0)


def test_search_finds_a_vertex_of_a_piecewise_constant_objective():
    """NDCG-like: constant pieces, best when the second weight dominates."""
    search = search_simplex(lambda a: float(np.argmax(a) == 1), 3, max_evals=6)
    assert len(search.trace) == 6 and search.value == 1.0 and np.argmax(search.alpha) == 1
    assert search_simplex(lambda a: 0.0, 3, max_evals=2).trace[0][0].tolist() == [1, 0, 0]


def test_best_surrogate_end_to_end_picks_the_validation_best():
    data, _ = synthetic_letor(100, 5, seed=1, noise=1.0)
    train, valid = data.subset(np.arange(60)), data.subset(np.arange(60, 100))
    fitted = []

    def fit(options):
        fitted.append(options)
        return fit_linear_ranker(train, "bregman_mix", options=options, max_iter=30)

    ranker, search = best_surrogate(fit, lambda r: r.ndcg(valid), max_evals=9)
    assert len(fitted) == len(search.trace) == 9
    assert set(fitted[0]) == set(SURROGATES)
    assert ranker.ndcg(valid) == search.value == max(v for _, v in search.trace)
    single = [
        fit_linear_ranker(train, "bregman", options={"surrogate": s}, max_iter=30)
        for s in SURROGATES
    ]
    assert search.value >= max(r.ndcg(valid) for r in single) - 1e-12


def _cli(*args: object):
    return CliRunner().invoke(cli, ["ltr", *(str(a) for a in args)])


def test_cli_train_reports_alpha_and_keeps_the_model_of_it(tmp_path):
    data, _ = synthetic_letor(30, 4, docs=(4, 8), seed=5, noise=1.0)
    path, out = tmp_path / "train.txt", tmp_path / "model.json"
    path.write_text(format_letor(data))
    args = ["train", path, "--loss", "bregman_mix", "--surrogate-search", 5, "--option", "c=2"]
    result = _cli(*args, "--test-fraction", 0, "--max-iter", 20, "--seed", 4, "-o", out)
    assert result.exit_code == 0, result.output
    assert "surrogate weights alpha: cross_entropy " in result.stdout
    report = json.loads(out.read_text())
    tried = report["surrogate_search"]["tried"]
    assert len(tried) == 5
    best = max(tried, key=lambda t: t["valid_ndcg@10"])
    assert report["surrogate_search"]["alpha"] == best["alpha"]
    # the model is the one fitted on S_1 (80 % of the training queries) with that alpha,
    # stopping early on S_2 as every model does
    data = read_letor(path)
    fit_idx, valid_idx = holdout_split(30, 0.2, 4)
    opts = {"c": 2.0, **best["alpha"]}
    valid = data.subset(valid_idx)
    again = fit_linear_ranker(
        data.subset(fit_idx), "bregman_mix", valid=valid, options=opts, max_iter=20
    )
    np.testing.assert_allclose(report["weights"], again.weights, rtol=1e-10)
    assert again.ndcg(data.subset(valid_idx)) == pytest.approx(best["valid_ndcg@10"])


def test_cli_crossval_reports_alpha_per_fold(tmp_path):
    data, _ = synthetic_letor(25, 3, docs=(4, 6), seed=6)
    path = tmp_path / "train.txt"
    path.write_text(format_letor(data))
    args = ["crossval", path, "--folds", 3, "--loss", "bregman_mix", "--surrogate-search", 3]
    result = _cli(*args, "--model", "boost", "--max-iter", 5, "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert len(summary["alpha"]) == 3 and set(summary["alpha"][0]) == set(SURROGATES)
    text = _cli(*args[:-1], 2, "--max-iter", 5, "-q")
    assert text.exit_code == 0 and text.stdout.count(" alpha ") == 3


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--loss", "softrank"], "searches the weights of --loss bregman_mix, not softrank"),
        (["--loss", "bregman_mix", "--option", "square=2"], "chooses square itself"),
        (["--loss", "bregman_mix", "--option", "square=-1"], "mixture weights must be"),
    ],
)
def test_cli_search_bad_input(tmp_path, extra, fragment):
    data, _ = synthetic_letor(12, 3, docs=(4, 6), seed=7)
    path = tmp_path / "train.txt"
    path.write_text(format_letor(data))
    result = _cli("train", path, "--surrogate-search", 3, *extra)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr
