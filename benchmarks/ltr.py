"""Benchmark: learning to rank on real MQ2008 queries, every loss x model beside LightGBM.

5-fold cross-validation by query on the LETOR 4.0 MQ2008 fold-1 test file (156 queries, 46
features). In each fold the training queries are split once more (seeded, 20 %) into a
fitting and a validation part, the same for every model: MLP and boosting stop early on
its NDCG@10, LightGBM ``lambdarank`` (the ``bench`` extra) stops early on its own
``ndcg@10`` there, and linear models simply do not use it (L-BFGS, 50 iterations, ridge
start). Every model is scored on the fold's test queries with ``rankmodels.ltr.metrics.ndcg``
(NDCG@10, a query without relevant documents counts 1 -- LightGBM's convention), so all
rows share one metric. Reported: mean NDCG@10 over the 5 folds +- its standard error
(std / sqrt(5)), and the mean wall time of one fit.

Run: ``python benchmarks/ltr.py [DATA] [--models linear,mlp,boost] [--losses ...]``
(LightGBM and the ridge baseline are always included). Needs ``lightgbm``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from rankmodels.ltr.boost import fit_boosted_ranker
from rankmodels.ltr.letor import LetorData, read_letor
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.mlp import fit_mlp_ranker
from rankmodels.ltr.models import mean_ndcg
from rankmodels.ltr.splits import holdout_split, kfold_splits
from rankmodels.ltr.train import fit_linear_ranker, ridge_ranker

DEFAULT_DATA = "../shared/data/letor/mq2008-fold1-test/test.txt"

LINEAR_OPTIONS: dict[str, dict[str, object]] = {
    "softrank": {"sigma": 0.5},
    "pirank": {"k": 10},
    "lambdarank": {"k": 10},
    "sinkprop": {"sigma": 0.3},
}
"""Options that differ from the registry defaults (as the MQ2008 table of docs/ltr.md)."""


def _lightgbm(fit: LetorData, valid: LetorData) -> Callable[[LetorData], np.ndarray]:
    import lightgbm as lgb

    def flat(d: LetorData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return d.features[d.mask], d.relevance[d.mask], d.lengths

    X, y, group = flat(fit)
    Xv, yv, gv = flat(valid)
    train_set = lgb.Dataset(X, y, group=group)
    valid_set = lgb.Dataset(Xv, yv, group=gv, reference=train_set)
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "learning_rate": 0.05,
        "verbose": -1,
        "num_threads": 1,
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


def _fitters(models: list[str], losses: list[str]) -> dict[str, Callable]:
    """name -> fit(fit_data, valid_data) returning a scorer ``LetorData -> (B, n)``."""
    out: dict[str, Callable] = {
        "ridge regression (linear baseline)": lambda f, v: ridge_ranker(f).scores,
        "LightGBM lambdarank": _lightgbm,
    }
    for model in models:
        for loss in losses:
            opts = LINEAR_OPTIONS.get(loss, {})
            if model == "linear":
                out[f"{loss} linear"] = lambda f, v, loss=loss, o=opts: (
                    fit_linear_ranker(f, loss, options=o, max_iter=50).scores
                )
            elif model == "mlp":
                out[f"{loss} mlp"] = lambda f, v, loss=loss, o=opts: (
                    fit_mlp_ranker(
                        f, loss, valid=v, options=o, hidden=(32,), epochs=60, lr=3e-3, seed=0
                    ).scores
                )
            elif model == "boost":
                out[f"{loss} boost"] = lambda f, v, loss=loss, o=opts: (
                    fit_boosted_ranker(
                        f, loss, valid=v, options=o, n_trees=300, shrinkage=0.1, min_leaf=20
                    ).scores
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--models", default="linear,mlp,boost")
    parser.add_argument("--losses", default=",".join(LOSSES.names))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = read_letor(args.data)
    folds = []
    for train, test in kfold_splits(data, args.folds, seed=args.seed):
        fit_idx, valid_idx = holdout_split(train.lengths.shape[0], 0.2, seed=args.seed)
        folds.append((train.subset(fit_idx), train.subset(valid_idx), train, test))
    fitters = _fitters(args.models.split(","), args.losses.split(","))
    print(f"{data.lengths.shape[0]} queries, {args.folds}-fold CV by query, NDCG@10 on test")
    print("| model | NDCG@10 mean ± SE | fit time (s) |\n|---|---:|---:|")
    for name, fit in fitters.items():
        values, times = [], []
        for fit_part, valid_part, train, test in folds:
            t0 = time.perf_counter()
            # linear models and the baseline train on the whole training part
            uses_valid = not (name.endswith(" linear") or name.startswith("ridge"))
            scorer = fit(fit_part, valid_part) if uses_valid else fit(train, None)
            times.append(time.perf_counter() - t0)
            values.append(mean_ndcg(test, scorer(test), 10))
        se = np.std(values, ddof=1) / np.sqrt(len(values))
        print(f"| {name} | {np.mean(values):.4f} ± {se:.4f} | {np.mean(times):.2f} |", flush=True)


if __name__ == "__main__":
    main()
