"""Best-surrogate estimation: the mixture surrogate by its definition and NDCG
consistency, the grid on [0, 1]^d by enumeration, the grid and pattern searches on
objectives with a known maximiser, and eqs. 3.25-3.26 end to end on synthetic queries."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import minimize

from rankmodels.ltr.bregman import SURROGATES, bregman_loss, bregman_mixture_loss
from rankmodels.ltr.letor import format_letor, read_letor
from rankmodels.ltr.splits import holdout_split
from rankmodels.ltr.surrogate_search import (
    best_surrogate,
    box_grid,
    grid_resolution,
    mixture_options,
    pattern_search,
    pattern_starts,
    search_box,
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


@pytest.mark.parametrize(("dim", "resolution"), [(1, 3), (2, 4), (3, 1), (3, 2), (4, 3)])
def test_box_grid_is_every_lattice_point_but_zero(dim, resolution):
    grid = box_grid(dim, resolution)
    brute = {c for c in np.ndindex(*(resolution + 1,) * dim) if any(c)}
    assert grid.shape == ((resolution + 1) ** dim - 1, dim)
    assert {tuple(np.rint(g * resolution).astype(int)) for g in grid} == brute
    np.testing.assert_array_equal(grid[:dim], np.eye(dim))  # the single surrogates first
    np.testing.assert_array_equal(grid[dim if dim > 1 else 0], np.ones(dim))  # then all ones


@pytest.mark.parametrize(("dim", "evals", "r"), [(3, 6, 1), (3, 7, 1), (3, 25, 1), (3, 26, 2)])
def test_grid_resolution_is_the_finest_that_fits(dim, evals, r):
    assert grid_resolution(dim, evals) == r
    search = search_box(lambda a: 0.0, dim, max_evals=evals)
    assert len(search.trace) == min(evals, (r + 1) ** dim - 1)


@pytest.mark.parametrize("target", [[0.3, 0.55, 0.8], [0.9, 0.1, 0.45]])
def test_pattern_search_converges_on_a_quadratic(target):
    """Interior maximiser of a concave quadratic: compass search ends within its mesh."""
    target = np.array(target)
    search = search_box(
        lambda a: -float(np.sum((a - target) ** 2)), 3, method="pattern", max_evals=300, seed=1
    )
    assert len(search.trace) <= 300
    assert np.abs(search.alpha - target).max() < 1 / 32
    assert search.value == max(v for _, v in search.trace)
    # each of the five starts of section 3.6 is evaluated
    starts = pattern_starts(3, 1)
    tried = np.array([a for a, _ in search.trace])
    assert all(np.any(np.all(tried == s, axis=1)) for s in starts)


def test_pattern_search_steps_by_the_compass_rule():
    """From 0.5 on a line with the maximum at 0.8: poll +0.25 (better: 0.75, step doubles
    to 0.5), +0.5 leaves the box, -0.5 worse, halve: +0.25 out, -0.25 worse, ..."""
    seen = []

    def f(a):
        seen.append(float(a[0]))
        return -abs(float(a[0]) - 0.8)

    x, fx = pattern_search(f, np.array([0.5]), step=0.25, min_step=0.1)
    assert seen[:4] == [0.5, 0.75, 0.25, 1.0]
    assert x[0] == pytest.approx(0.75) and fx == pytest.approx(-0.05)


def test_search_finds_a_vertex_of_a_piecewise_constant_objective():
    """NDCG-like: constant pieces, best when the second weight dominates."""
    for method in ("grid", "pattern"):
        search = search_box(lambda a: float(np.argmax(a) == 1), 3, method=method, max_evals=12)
        assert search.value == 1.0 and np.argmax(search.alpha) == 1
    assert search_box(lambda a: 0.0, 3, max_evals=2).trace[0][0].tolist() == [1, 0, 0]


def test_mixture_options_scale_the_dictionary_as_psi_alpha():
    """psi_alpha = sum_i alpha_i psi_i: phi_alpha(s) = sum_i alpha_i phi_i(s / |alpha|), so
    alpha = e_i is psi_i itself and 2 alpha is a different surrogate."""
    rng = np.random.default_rng(3)
    S, R = rng.normal(size=(2, 5)), rng.integers(0, 3, size=(2, 5)).astype(float)
    alpha = np.array([0.2, 0.5, 0.7])
    mix = bregman_mixture_loss(S, R, **mixture_options(alpha)).value
    parts = [bregman_loss(S / alpha.sum(), R, surrogate=name).value for name in SURROGATES]
    np.testing.assert_allclose(mix, sum(a * p for a, p in zip(alpha, parts, strict=True)))
    single = bregman_mixture_loss(S, R, **mixture_options(np.array([0.0, 1.0, 0.0])))
    np.testing.assert_allclose(single.value, bregman_loss(S, R, surrogate="square").value)
    double = bregman_mixture_loss(S, R, **mixture_options(2 * alpha)).value
    assert np.abs(double - mix).max() > 1e-3


def test_best_surrogate_end_to_end_picks_the_validation_best():
    data, _ = synthetic_letor(100, 5, seed=1, noise=1.0)
    train, valid = data.subset(np.arange(60)), data.subset(np.arange(60, 100))
    fitted = []

    def fit(options):
        fitted.append(options)
        return fit_linear_ranker(train, "bregman_mix", options=options, max_iter=30)

    ranker, search = best_surrogate(fit, lambda r: r.ndcg(valid), max_evals=7)
    assert len(fitted) == len(search.trace) == 7
    assert set(fitted[0]) == {*SURROGATES, "scale"}
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
    assert result.stdout == ""  # with -o the summary goes to stderr
    assert "surrogate weights alpha: cross_entropy " in result.stderr
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
    assert len(summary["alpha"]) == 3 and set(summary["alpha"][0]) == {*SURROGATES, "scale"}
    text = _cli(*args[:-1], 2, "--max-iter", 5, "-q")
    assert text.exit_code == 0 and text.stdout.count(" alpha ") == 3
    pattern = _cli(*args[:-1], 9, "--search", "pattern", "--max-iter", 5, "--format", "json")
    assert pattern.exit_code == 0, pattern.output
    for alpha in json.loads(pattern.stdout)["alpha"]:
        weights = [alpha[name] for name in SURROGATES]
        assert min(weights) >= 0 and max(weights) <= 1
        assert alpha["scale"] == pytest.approx(sum(weights))


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--loss", "softrank"], "searches the weights of --loss bregman_mix, not softrank"),
        (["--loss", "bregman_mix", "--option", "square=2"], "chooses square itself"),
        (["--loss", "bregman_mix", "--option", "square=-1"], "mixture weights must be"),
        (["--loss", "bregman_mix", "--option", "scale=2"], "chooses scale itself"),
    ],
)
def test_cli_search_bad_input(tmp_path, extra, fragment):
    data, _ = synthetic_letor(12, 3, docs=(4, 6), seed=7)
    path = tmp_path / "train.txt"
    path.write_text(format_letor(data))
    result = _cli("train", path, "--surrogate-search", 3, *extra)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr


def test_cli_search_method_needs_the_search(tmp_path):
    data, _ = synthetic_letor(12, 3, docs=(4, 6), seed=7)
    path = tmp_path / "train.txt"
    path.write_text(format_letor(data))
    result = _cli("train", path, "--loss", "bregman_mix", "--search", "pattern")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        "Error: --search: chooses how --surrogate-search N searches; give that too"
    )
