"""Benchmark: learning to rank on real MQ2008 queries, every loss x model beside LightGBM.

5-fold cross-validation by query on the LETOR 4.0 MQ2008 fold-1 test file (156 queries, 46
features). In each fold the training queries are split once more (seeded, 20 %) into a
fitting and a validation part, the same for every row. Everything chosen is chosen on that
validation part, never on the fold's test queries:

* MLP and boosting stop early on its NDCG@10; LightGBM ``lambdarank`` (the ``bench`` extra)
  stops early on its own ``ndcg@10`` there; the tuned LightGBM row also chooses
  ``num_leaves``, ``min_data_in_leaf`` and the learning rate there (:data:`LIGHTGBM_GRID`);
* linear models with a fixed setting train on the whole training part (L-BFGS, 50
  iterations, ridge start) and do not use it;
* ``sinkprop linear, sigma chosen`` (and ``softrank``): each candidate of
  :data:`SMOOTHING_CANDIDATES` (one sigma, or SinkProp section 5's annealing schedule) is
  fitted on the fitting part and scored on the validation part; the best is refitted on
  the whole training part;
* ``bregman_mix ..., alpha searched``: the surrogate weights of the dissertation's section
  3.5 (:func:`rankmodels.ltr.surrogate_search.best_surrogate`, 12 fits) chosen on it;
* ``rerank over BASE``: the base trained on the fitting part, the re-ranking weights
  (dissertation eq. 2.20) on the fitting part with their l2 chosen on the validation part.

Every model is scored on the fold's test queries with ``rankmodels.ltr.metrics.ndcg``
(NDCG@10, a query without relevant documents counts 1 -- LightGBM's convention), so all
rows share one metric. Reported: mean NDCG@10 over the 5 folds +- its standard error
(std / sqrt(5)); the paired differences from the ridge baseline and from LightGBM (mean
over the folds of the row's NDCG@10 minus theirs on the same fold, +- the standard error of
those 5 differences: the folds' shared difficulty cancels); and the mean wall time of one
fit (selection and refit included).

Run: ``python benchmarks/ltr.py [DATA] [--models linear,mlp,boost] [--losses ...]
[--rows SUBSTRING,...]`` (``--rows`` keeps the rows whose name contains one of the
substrings). Needs ``lightgbm``.

``python benchmarks/ltr.py --timing [--rounds 100] [--leaves 31] [--big-queries 10000]
[--threads 1,2] [--sets mq2008,mslr,generated] [--losses lambdarank,bregman]`` instead
times our boosting (``fit_boosted_ranker``, the library call behind ``rankmodels ltr train
--model boost``) against LightGBM ``lambdarank`` at equal rounds, leaves, least documents
per leaf (20), learning rate (0.1) and bins (64), no early stopping, both given the test
part as validation set (evaluated every round), on: MQ2008 (5 folds), the MSLR sample
(train file, test file) and a generated LETOR-shaped set (``--big-queries`` x 100
documents, 136 features, :func:`rankmodels.ltr.synthetic.synthetic_letor`; 10^6 documents
by default). Each thread count (numba's and LightGBM's ``num_threads``) gets its own rows.
Reported per set, thread count and loss: fit seconds of each (LightGBM's Dataset
construction and our binning included), wall and CPU (``time.process_time``, the robust
measure on a shared machine with one thread; with more, a thread spinning while it waits
counts as work) and their ratios ours / LightGBM, NDCG@10 on the test part of each and the
paired difference (mean over folds +- its standard error on MQ2008), and the load average.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.letor import LetorData, read_letor
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.mlp import fit_mlp_ranker
from rankmodels.ltr.models import mean_ndcg
from rankmodels.ltr.rerank import fit_reranker
from rankmodels.ltr.sinkprop import annealing_schedule
from rankmodels.ltr.splits import holdout_split, kfold_splits
from rankmodels.ltr.surrogate_search import best_surrogate
from rankmodels.ltr.synthetic import synthetic_letor
from rankmodels.ltr.train import fit_linear_ranker, ridge_ranker

DEFAULT_DATA = "../shared/data/letor/mq2008-fold1-test/test.txt"

LINEAR_OPTIONS: dict[str, dict[str, object]] = {
    "softrank": {"sigma": 0.5},
    "pirank": {"k": 10},
    "lambdarank": {"k": 10},
    "sinkprop": {"sigma": 0.3},
}
"""Options that differ from the registry defaults (as the MQ2008 table of docs/ltr.md)."""

SMOOTHING_CANDIDATES: dict[str, list[dict[str, object]]] = {
    "sigma 1": [{"sigma": 1.0}],
    "sigma 0.3": [{"sigma": 0.3}],
    "sigma 0.1": [{"sigma": 0.1}],
    "anneal 1 -> 0.1": [{"sigma": float(s)} for s in annealing_schedule(1.0, 0.1, 3)],
}
"""SinkProp / SoftRank smoothing settings chosen among on the validation part (annealing
stages of 50 L-BFGS iterations each)."""

LIGHTGBM_GRID: dict[str, tuple[float, ...]] = {
    "num_leaves": (7, 15, 31),
    "min_data_in_leaf": (5, 20, 50),
    "learning_rate": (0.05, 0.1),
}
"""LightGBM settings chosen among on the validation part (the tuned LightGBM row)."""

BOOST = {"n_trees": 300, "shrinkage": 0.1}
SEARCH_EVALS = 12

REFERENCES = ("ridge regression (linear baseline)", "LightGBM lambdarank")
"""The rows every other is compared with (always run, whatever ``--rows`` keeps)."""

Scorer = Callable[[LetorData], np.ndarray]


@dataclass(frozen=True)
class Fold:
    """One fold: the training part split into ``fit`` and ``valid``; ``test`` held out."""

    fit: LetorData
    valid: LetorData
    train: LetorData
    test: LetorData


def _lightgbm(fold: Fold, **settings: object) -> Scorer:
    """LightGBM ``lambdarank`` on the fitting part, early-stopped on the validation part;
    ``settings`` override the default parameters (learning rate 0.05, the rest LightGBM's)."""
    import lightgbm as lgb

    def flat(d: LetorData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return d.features[d.mask], d.relevance[d.mask], d.lengths

    X, y, group = flat(fold.fit)
    Xv, yv, gv = flat(fold.valid)
    train_set = lgb.Dataset(X, y, group=group)
    valid_set = lgb.Dataset(Xv, yv, group=gv, reference=train_set)
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "learning_rate": 0.05,
        "verbose": -1,
        "num_threads": 1,
        **settings,
    }
    model = lgb.train(
        params,
        train_set,
        num_boost_round=500,
        valid_sets=[valid_set],
        callbacks=[lgb.early_stopping(30, verbose=False)],
    )

    def scores(d: LetorData) -> np.ndarray:
        out = np.zeros(d.relevance.shape)
        out[d.mask] = model.predict(d.features[d.mask], num_iteration=model.best_iteration)
        return out

    return scores


def _lightgbm_tuned(fold: Fold) -> Scorer:
    """The :data:`LIGHTGBM_GRID` setting whose model has the best validation NDCG@10."""
    fitted = {}
    for leaves, min_leaf, rate in itertools.product(*LIGHTGBM_GRID.values()):
        scorer = _lightgbm(fold, num_leaves=leaves, min_data_in_leaf=min_leaf, learning_rate=rate)
        fitted[(leaves, min_leaf, rate)] = (mean_ndcg(fold.valid, scorer(fold.valid), 10), scorer)
    chosen = max(fitted, key=lambda key: fitted[key][0])
    print(f"    LightGBM (num_leaves, min_data_in_leaf, learning_rate) chosen {chosen}", flush=True)
    return fitted[chosen][1]


def _linear(
    data: LetorData,
    loss: str,
    options: Mapping[str, object],
    stages: Sequence[Mapping[str, object]] | None = None,
):
    return fit_linear_ranker(data, loss, options=options, stages=stages, max_iter=50)


def _mlp(fold: Fold, loss: str, options: Mapping[str, object]):
    return fit_mlp_ranker(
        fold.fit, loss, valid=fold.valid, options=options, hidden=(32,), epochs=60, lr=3e-3, seed=0
    )


def _boost(fold: Fold, loss: str, options: Mapping[str, object]):
    return fit_boosted_ranker(fold.fit, loss, valid=fold.valid, options=options, **BOOST)


def _smoothing_chosen(loss: str) -> Callable[[Fold], Scorer]:
    """The :data:`SMOOTHING_CANDIDATES` setting of ``loss`` best on the validation part,
    refitted on the whole training part."""

    def run(fold: Fold) -> Scorer:
        valid_ndcg = {
            name: _linear(fold.fit, loss, {}, stages).ndcg(fold.valid)
            for name, stages in SMOOTHING_CANDIDATES.items()
        }
        chosen = max(valid_ndcg, key=valid_ndcg.get)
        shown = {name: round(v, 4) for name, v in valid_ndcg.items()}
        print(f"    {loss} validation NDCG@10 {shown} -> {chosen}", flush=True)
        return _linear(fold.train, loss, {}, SMOOTHING_CANDIDATES[chosen]).scores

    return run


def _searched(fit: Callable[[Fold, dict[str, float]], object]) -> Callable[[Fold], Scorer]:
    """Best-surrogate search: ``fit(fold, alpha_options)`` on the fitting part, alpha chosen
    on the validation part."""

    def run(fold: Fold) -> Scorer:
        ranker, search = best_surrogate(
            lambda opts: fit(fold, opts),
            lambda r: r.ndcg(fold.valid),
            max_evals=SEARCH_EVALS,
        )
        print(f"    alpha {np.round(search.alpha, 3)} valid {search.value:.4f}", flush=True)
        return ranker.scores

    return run


def _rerank(base: Callable[[Fold], object], loss: str) -> Callable[[Fold], Scorer]:
    def run(fold: Fold) -> Scorer:
        ranker = fit_reranker(fold.fit, base(fold), loss, fold.valid, max_iter=50)
        print(f"    rerank weights {np.round(ranker.weights, 4)} l2 {ranker.l2}", flush=True)
        return ranker.scores

    return run


def _fitters(models: Sequence[str], losses: Sequence[str]) -> dict[str, Callable[[Fold], Scorer]]:
    """Row name -> ``fit(fold)`` returning a scorer ``LetorData -> (B, n)``."""
    out: dict[str, Callable[[Fold], Scorer]] = {
        "ridge regression (linear baseline)": lambda f: ridge_ranker(f.train).scores,
        "LightGBM lambdarank": _lightgbm,
        "LightGBM lambdarank, tuned on validation": _lightgbm_tuned,
    }
    for model in models:
        for loss in losses:
            o = LINEAR_OPTIONS.get(loss, {})
            if model == "linear":
                out[f"{loss} linear"] = lambda f, loss=loss, o=o: _linear(f.train, loss, o).scores
            elif model == "mlp":
                out[f"{loss} mlp"] = lambda f, loss=loss, o=o: _mlp(f, loss, o).scores
            elif model == "boost":
                out[f"{loss} boost"] = lambda f, loss=loss, o=o: _boost(f, loss, o).scores
    if "linear" in models:
        for loss in ("sinkprop", "softrank"):
            out[f"{loss} linear, sigma chosen on validation"] = _smoothing_chosen(loss)
        out["bregman_mix linear, alpha searched"] = _searched(
            lambda f, opts: fit_linear_ranker(f.fit, "bregman_mix", options=opts, max_iter=50)
        )
    if "boost" in models:
        for surrogate in ("qnorm", "cross_entropy"):
            out[f"bregman boost, {surrogate}"] = lambda f, s=surrogate: (
                _boost(f, "bregman", {"surrogate": s}).scores
            )
        out["bregman_mix boost, alpha searched"] = _searched(
            lambda f, opts: _boost(f, "bregman_mix", opts)
        )
    out["rerank over pirank linear"] = _rerank(
        lambda f: _linear(f.fit, "pirank", LINEAR_OPTIONS["pirank"]), "pirank"
    )
    out["rerank over bregman boost"] = _rerank(lambda f: _boost(f, "bregman", {}), "bregman")
    return out


TIMING_LOSSES = ("lambdarank", "bregman")
"""The losses of our boosting timed against LightGBM lambdarank (``--losses`` to change)."""

TIMING_SETS = ("mq2008", "mslr", "generated")
"""The data sets of ``--timing`` (``--sets`` to choose)."""


@dataclass(frozen=True)
class Timed:
    """One timed fit: wall and CPU seconds (``time.process_time``: all of the process's
    threads, so a thread spinning while it waits counts) and the test NDCG@10 per fold."""

    wall: float
    cpu: float
    ndcg: np.ndarray


def _clock(fit: Callable[[LetorData, LetorData], np.ndarray], folds) -> Timed:
    """Time ``fit(train, test) -> test scores`` over the folds (seconds summed)."""
    wall = cpu = 0.0
    ndcgs = []
    for train, test in folds:
        w0, c0 = time.perf_counter(), time.process_time()
        scores = fit(train, test)
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        ndcgs.append(mean_ndcg(test, scores, 10))
    return Timed(wall, cpu, np.array(ndcgs))


def _ours(loss: str, rounds: int, leaves: int) -> Callable[[LetorData, LetorData], np.ndarray]:
    """``fit_boosted_ranker`` at the timing settings (module docstring)."""

    def fit(train: LetorData, test: LetorData) -> np.ndarray:
        ranker = fit_boosted_ranker(
            train,
            loss,
            valid=test,
            n_trees=rounds,
            num_leaves=leaves,
            min_leaf=20,
            shrinkage=0.1,
            max_bins=64,
            patience=rounds,
        )
        return ranker.scores(test)

    return fit


def _lightgbm_timed(rounds: int, leaves: int, threads: int):
    """LightGBM ``lambdarank`` at the same settings, Dataset construction included."""
    import lightgbm as lgb

    def fit(train: LetorData, test: LetorData) -> np.ndarray:
        X, y = train.features[train.mask], train.relevance[train.mask]
        Xt, yt = test.features[test.mask], test.relevance[test.mask]
        train_set = lgb.Dataset(X, y, group=train.lengths, params={"max_bin": 64})
        test_set = lgb.Dataset(Xt, yt, group=test.lengths, reference=train_set)
        params = {
            "objective": "lambdarank",
            "metric": "ndcg",
            "eval_at": [10],
            "num_leaves": leaves,
            "min_data_in_leaf": 20,
            "learning_rate": 0.1,
            "max_bin": 64,
            "verbose": -1,
            "num_threads": threads,
        }
        model = lgb.train(params, train_set, num_boost_round=rounds, valid_sets=[test_set])
        out = np.zeros(test.relevance.shape)
        out[test.mask] = model.predict(Xt, num_threads=threads)
        return out

    return fit


def _timing_sets(args: argparse.Namespace) -> dict[str, list[tuple[LetorData, LetorData]]]:
    """The chosen data sets as lists of (train, test) folds."""
    sets: dict[str, list[tuple[LetorData, LetorData]]] = {}
    chosen = args.sets.split(",")
    if "mq2008" in chosen:
        sets["MQ2008 (5 folds)"] = list(kfold_splits(read_letor(args.data), 5, seed=args.seed))
    if "mslr" in chosen:
        letor = "../shared/data/letor/mslr-web-fold1-5k/msn1.fold1."
        train = read_letor(letor + "train.5k.txt")
        test = read_letor(letor + "test.5k.txt", n_features=train.features.shape[2])
        sets["MSLR sample (train / test file)"] = [(train, test)]
    if "generated" in chosen:
        big = synthetic_letor(n_queries=args.big_queries, n_features=136, docs=(100, 100), seed=1)
        n_fit = round(0.8 * args.big_queries)
        q = np.arange(args.big_queries)
        sets[f"generated, {args.big_queries * 100:,} documents × 136"] = [
            (big[0].subset(q[:n_fit]), big[0].subset(q[n_fit:]))
        ]
    return sets


def timing(args: argparse.Namespace) -> None:
    """The ``--timing`` table (module docstring): one row per data set, thread count and
    loss of ours, LightGBM fitted once per data set and thread count."""
    import os

    import numba

    losses = args.losses.split(",") if args.losses else list(TIMING_LOSSES)
    sets = _timing_sets(args)
    print(
        f"{args.rounds} rounds, {args.leaves} leaves, min 20 per leaf, rate 0.1, 64 bins; "
        f"seconds summed over folds; load average at start {os.getloadavg()[0]:.1f}"
    )
    print(
        "| data | threads | our loss | ours wall (s) | LightGBM wall (s) | ratio wall "
        "| ours CPU (s) | LightGBM CPU (s) | ratio CPU | ours NDCG@10 | LightGBM NDCG@10 "
        "| Δ (paired) | load |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    for threads in (int(t) for t in args.threads.split(",")):
        numba.set_num_threads(threads)
        for name, folds in sets.items():
            theirs = _clock(_lightgbm_timed(args.rounds, args.leaves, threads), folds)
            for loss in losses:
                ours = _clock(_ours(loss, args.rounds, args.leaves), folds)
                delta = ours.ndcg - theirs.ndcg
                shown = _mean_se(delta, signed=True) if len(folds) > 1 else f"{delta[0]:+.4f}"
                print(
                    f"| {name} | {threads} | {loss} | {ours.wall:.2f} | {theirs.wall:.2f} "
                    f"| **{ours.wall / theirs.wall:.2f}** | {ours.cpu:.2f} | {theirs.cpu:.2f} "
                    f"| **{ours.cpu / theirs.cpu:.2f}** | {ours.ndcg.mean():.4f} "
                    f"| {theirs.ndcg.mean():.4f} | {shown} | {os.getloadavg()[0]:.1f} |",
                    flush=True,
                )


DEFAULTS_GRID: dict[str, tuple[float, ...]] = {"num_leaves": (7, 15, 31), "l2": (0.0, 1.0)}
"""Tree settings of our boosting compared by ``--defaults`` (the rest at their defaults)."""

DEFAULTS_LOSSES: dict[str, tuple[str, dict[str, object]]] = {
    "lambdarank": ("lambdarank", {}),
    "bregman, square": ("bregman", {}),
    "bregman, cross_entropy": ("bregman", {"surrogate": "cross_entropy"}),
    "bregman, qnorm": ("bregman", {"surrogate": "qnorm"}),
}
"""The losses whose defaults ``--defaults`` compares with LightGBM's."""


def _defaults_folds(args: argparse.Namespace) -> dict[str, list[Fold]]:
    """MQ2008's 5 folds (each fold's validation part seeded, as the main table) and the
    MSLR sample: its train file cut into 5 folds by query, each in turn the validation part
    of a fit on the other 4 (cross-validation on the training file), the test file held
    out for all five."""
    out: dict[str, list[Fold]] = {"MQ2008": []}
    for train, test in kfold_splits(read_letor(args.data), args.folds, seed=args.seed):
        fit_idx, valid_idx = holdout_split(train.lengths.shape[0], 0.2, seed=args.seed)
        out["MQ2008"].append(Fold(train.subset(fit_idx), train.subset(valid_idx), train, test))
    letor = "../shared/data/letor/mslr-web-fold1-5k/msn1.fold1."
    train = read_letor(letor + "train.5k.txt")
    test = read_letor(letor + "test.5k.txt", n_features=train.features.shape[2])
    out["MSLR sample"] = [
        Fold(fit, valid, train, test) for fit, valid in kfold_splits(train, 5, seed=args.seed)
    ]
    return out


def defaults(args: argparse.Namespace) -> None:
    """The ``--defaults`` tables: validation NDCG@10 of every :data:`DEFAULTS_GRID`
    setting (what a default is chosen by), then test NDCG@10 of each setting against
    LightGBM's default row, per data set and loss (paired over the folds; on the MSLR
    sample the five fits share one test file, so the ± there is the spread of fitting on
    different 80 % of the training queries, not of the test queries)."""
    sets = _defaults_folds(args)
    lightgbm = {
        name: np.array([mean_ndcg(f.test, _lightgbm(f)(f.test), 10) for f in folds])
        for name, folds in sets.items()
    }
    settings = [
        dict(zip(DEFAULTS_GRID, v, strict=True)) for v in itertools.product(*DEFAULTS_GRID.values())
    ]
    valid: dict[tuple, list[float]] = {}
    test: dict[tuple, np.ndarray] = {}
    for setting in settings:
        key = tuple(setting.values())
        for name, folds in sets.items():
            for row, (loss, options) in DEFAULTS_LOSSES.items():
                fits = [
                    fit_boosted_ranker(
                        f.fit, loss, valid=f.valid, options=options, **BOOST, **setting
                    )
                    for f in folds
                ]
                valid.setdefault((key, name), []).extend(
                    r.ndcg(f.valid) for r, f in zip(fits, folds, strict=True)
                )
                test[(key, name, row)] = np.array(
                    [r.ndcg(f.test) for r, f in zip(fits, folds, strict=True)]
                )
        shown = {name: f"{np.mean(valid[(key, name)]):.4f}" for name in sets}
        print(f"    {setting} validation NDCG@10 (mean over losses and folds) {shown}", flush=True)
    print("\n| setting | " + " | ".join(f"{n} validation" for n in sets) + " | mean |")
    print("|---|" + "---:|" * (len(sets) + 1))
    for setting in settings:
        key = tuple(setting.values())
        means = [float(np.mean(valid[(key, name)])) for name in sets]
        print(
            f"| {setting} | " + " | ".join(f"{m:.4f}" for m in means) + f" | {np.mean(means):.4f} |"
        )
    print("\n| data | loss | setting | test NDCG@10 | LightGBM | Δ vs LightGBM (paired) |")
    print("|---|---|---|---:|---:|---:|")
    for name in sets:
        for row in DEFAULTS_LOSSES:
            for setting in settings:
                values = test[(tuple(setting.values()), name, row)]
                delta = values - lightgbm[name]
                shown = _mean_se(delta, signed=True) if len(values) > 1 else f"{delta[0]:+.4f}"
                mean = _mean_se(values) if len(values) > 1 else f"{values[0]:.4f}"
                their = _mean_se(lightgbm[name]) if len(values) > 1 else f"{lightgbm[name][0]:.4f}"
                print(f"| {name} | {row} | {setting} | {mean} | {their} | {shown} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--models", default="linear,mlp,boost")
    parser.add_argument("--losses", default="", help="default: every loss (--timing: a few)")
    parser.add_argument("--rows", default="", help="keep rows containing one of these")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timing", action="store_true", help="time against LightGBM")
    parser.add_argument("--defaults", action="store_true", help="tree settings vs LightGBM")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--leaves", type=int, default=31)
    parser.add_argument("--big-queries", type=int, default=10_000)
    parser.add_argument("--threads", default="1,2", help="--timing: thread counts, e.g. 1,2")
    parser.add_argument("--sets", default=",".join(TIMING_SETS), help="--timing: data sets")
    args = parser.parse_args()
    if args.timing:
        timing(args)
        return
    if args.defaults:
        defaults(args)
        return
    data = read_letor(args.data)
    folds = []
    for train, test in kfold_splits(data, args.folds, seed=args.seed):
        fit_idx, valid_idx = holdout_split(train.lengths.shape[0], 0.2, seed=args.seed)
        folds.append(Fold(train.subset(fit_idx), train.subset(valid_idx), train, test))
    fitters = _fitters(args.models.split(","), (args.losses or ",".join(LOSSES.names)).split(","))
    keep = [r for r in args.rows.split(",") if r]
    print(f"{data.lengths.shape[0]} queries, {args.folds}-fold CV by query, NDCG@10 on test")
    print(
        "| model | NDCG@10 mean ± SE | Δ vs ridge (paired) | Δ vs LightGBM (paired) "
        "| fit time (s) |\n|---|---:|---:|---:|---:|",
        flush=True,
    )
    references: dict[str, np.ndarray] = {}
    for name, fit in fitters.items():
        is_reference = name in REFERENCES
        if keep and not is_reference and not any(r in name for r in keep):
            continue
        values, times = [], []
        for fold in folds:
            t0 = time.perf_counter()
            scorer = fit(fold)
            times.append(time.perf_counter() - t0)
            values.append(mean_ndcg(fold.test, scorer(fold.test), 10))
        if is_reference:
            references[name] = np.array(values)
        deltas = [
            _mean_se(np.array(values) - references[r], signed=True)
            if r in references and r != name
            else "—"
            for r in REFERENCES
        ]
        print(
            f"| {name} | {_mean_se(values)} | {deltas[0]} | {deltas[1]} | {np.mean(times):.2f} |",
            flush=True,
        )


def _mean_se(values: Sequence[float] | np.ndarray, signed: bool = False) -> str:
    """``mean ± standard error`` of per-fold values (with a sign when ``signed``)."""
    se = np.std(values, ddof=1) / np.sqrt(len(values))
    return f"{np.mean(values):{'+' if signed else ''}.4f} ± {se:.4f}"


if __name__ == "__main__":
    main()
