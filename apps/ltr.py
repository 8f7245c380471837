"""``rankmodels ltr``: train, evaluate, cross-validate and apply rankers (linear, MLP,
boosted trees) on LETOR / SVMlight files."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np

from rankmodels import __version__, jsontext
from rankmodels.ltr import metrics
from rankmodels.ltr.boost import STEPS, fit_boosted_ranker
from rankmodels.ltr.bregman import SURROGATES
from rankmodels.ltr.letor import LetorData, LetorOrderWarning, read_letor
from rankmodels.ltr.losses import LOSSES, LossSpec
from rankmodels.ltr.mlp import fit_mlp_ranker
from rankmodels.ltr.model_io import (
    MODEL_KINDS,
    PARAMETER_KEYS,
    AnyRanker,
    ranker_to_dict,
    read_ranker,
)
from rankmodels.ltr.query_norm import NORMALISATIONS, NormalisedRanker, normalise_queries
from rankmodels.ltr.rerank import L2_GRID, fit_reranker
from rankmodels.ltr.splits import holdout_split, kfold_indices
from rankmodels.ltr.surrogate_search import (
    SEARCHES,
    SurrogateSearch,
    best_surrogate,
    mixture_options,
)
from rankmodels.ltr.train import (
    TrainingError,
    check_learnable,
    fit_linear_ranker,
    ridge_ranker,
)
from rankmodels.ltr.weak_learners import WEAK_LEARNERS
from rankmodels_app._common import (
    BadInput,
    InputPath,
    NumberRange,
    OneLineGroup,
    atomic_output,
    count,
    out_option,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
    status,
)

F = TypeVar("F", bound=Callable[..., Any])


def _parse_options(pairs: tuple[str, ...], spec: LossSpec) -> dict[str, object]:
    """``--option KEY=VALUE`` pairs typed and checked against the loss's declared options."""
    texts: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--option: expected KEY=VALUE, got {pair!r}")
        if key in texts:
            raise BadInput(f"--option: {key} is given twice")
        texts[key] = raw
    try:
        return spec.validate(spec.parse(texts))
    except (TypeError, ValueError) as err:
        raise BadInput(f"--option: {err}") from None


def _parse_anneal(
    text: str | None, spec: LossSpec, options: dict[str, object]
) -> list[dict[str, object]] | None:
    """``--anneal V1,V2,...`` as one option override per stage, each checked."""
    if text is None:
        return None
    if spec.smoothing is None:
        smooth = ", ".join(s.name for s in LOSSES if s.smoothing)
        raise BadInput(
            f"--anneal: loss {spec.name} has no smoothing to anneal; those with: {smooth}"
        )
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise BadInput(f"--anneal: expected comma-separated numbers, got {text!r}") from None
    stages = [{spec.smoothing: v} for v in values]
    for stage in stages:
        try:
            spec.validate({**options, **stage})
        except (TypeError, ValueError) as err:
            raise BadInput(f"--anneal: {err}") from None
    return stages


def _read(path: Path, n_features: int = 0) -> LetorData:
    """:func:`read_letor`, its warnings (a qid coming back) shown as one line on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LetorOrderWarning)
        data = read_letor(path, n_features=n_features)
    for warning in caught:
        click.echo(f"warning: {warning.message}", err=True)
    return data


_data_argument = click.argument("data", type=InputPath(dir_okay=False, path_type=Path))


def _cutoff_option(help: str) -> Callable[[F], F]:
    """``-k/--cutoff``, the NDCG cut-off (default 10; at most 10^9, longer than any list)."""
    return click.option(
        "-k", "--cutoff", type=click.IntRange(1, 10**9), default=10, show_default=True, help=help
    )


_format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format: a text table or one JSON object.",
)


def _knob_help(text: str, function: Callable[..., Any], name: str) -> str:
    """``text`` and the default of keyword ``name`` of the library trainer ``function``."""
    value = inspect.signature(function).parameters[name].default
    shown = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
    return f"{text}  [default: {shown}]"


@click.group("ltr", cls=OneLineGroup)
def ltr_group() -> None:
    """Learning to rank on LETOR / SVMlight files."""


@ltr_group.command("losses")
@quiet_option
def ltr_losses(quiet: bool) -> None:
    """List the losses, their --option settings (with defaults) and what --anneal lowers."""
    for spec in LOSSES:
        click.echo(f"{spec.name}: {spec.summary}")
        for opt in spec.options:
            click.echo(f"    --option {opt.name}=...  {opt.type_name} (default {opt.default})")
        if spec.smoothing:
            click.echo(f"    --anneal lowers {spec.smoothing}")


def _training_options(f: F) -> F:
    """The options ``train`` and ``crossval`` share: loss, its options, model, schedule."""
    options = [
        click.option(
            "--loss",
            type=click.Choice(LOSSES.names),
            default="softrank",
            show_default=True,
            help="Training loss ('rankmodels ltr losses' lists them with their options).",
        ),
        click.option(
            "--option",
            "options",
            multiple=True,
            metavar="KEY=VALUE",
            help="Loss option, e.g. --option sigma=0.5 --option k=10 (repeatable).",
        ),
        click.option(
            "--anneal",
            metavar="V1,V2,...",
            help="linear only: anneal the smoothing (sigma for sinkprop/softrank, tau for "
            "pirank) through these.",
        ),
        click.option(
            "--model",
            "kind",
            type=click.Choice(MODEL_KINDS),
            default="linear",
            show_default=True,
            help="linear (L-BFGS), mlp (tanh hidden layers, Adam), boost "
            "(listwise gradient boosting of regression trees or single features) or rerank "
            "(the --base model's scores re-ranked by cosine-similarity kernels, "
            "f_i = b(x_i) prod_{j != i} exp(sum_k w_k S_k(x_i, x_j)), dissertation eq. 2.20).",
        ),
        click.option(
            "--normalise",
            type=click.Choice(NORMALISATIONS),
            default="none",
            show_default=True,
            help="Per-query feature normalisation before training (kept in the model file "
            "and applied by evaluate and predict).",
        ),
        click.option(
            "--hidden",
            metavar="W1[,W2...]",
            help=_knob_help("mlp: hidden layer widths", fit_mlp_ranker, "hidden"),
        ),
        click.option(
            "--weak-learner",
            type=click.Choice(WEAK_LEARNERS),
            help="boost: regression trees, or single features x_k chosen by the exhaustive "
            "argmax of <d, h>/||h|| over the residuals d (dissertation eq. 3.18, section 3.6; "
            "a linear ranker).  [default: tree]",
        ),
        click.option(
            "--step",
            type=click.Choice(STEPS),
            help=_knob_help(
                "boost: newton (leaves minimise the loss's second-order expansion, "
                "LambdaMART's step) or gradient (least-squares trees, step <d, h>/||h||^2: "
                "dissertation Algorithm 1, NDCG-consistent listwise boosting)",
                fit_boosted_ranker,
                "step",
            ),
        ),
        click.option(
            "--num-leaves",
            type=click.IntRange(2, 10**6),
            help=_knob_help(
                "boost: leaves of each tree, grown best split first",
                fit_boosted_ranker,
                "num_leaves",
            ),
        ),
        click.option(
            "--max-depth",
            type=click.IntRange(1, 30),
            help=_knob_help(
                "boost: depth limit of each tree (None: leaves alone limit it)",
                fit_boosted_ranker,
                "max_depth",
            ),
        ),
        click.option(
            "--min-leaf",
            type=click.IntRange(1, 10**9),
            help=_knob_help(
                "boost: least documents in a tree leaf", fit_boosted_ranker, "min_leaf"
            ),
        ),
        click.option(
            "--min-gain",
            type=NumberRange(min=0.0, max=1e12),
            help=_knob_help(
                "boost: least gain of a split (decrease of the second-order expansion, x2)",
                fit_boosted_ranker,
                "min_gain",
            ),
        ),
        click.option(
            "--subsample",
            type=NumberRange(0.0, 1.0, min_open=True),
            help=_knob_help(
                "boost: fraction of the training documents each tree is fitted to (seeded)",
                fit_boosted_ranker,
                "subsample",
            ),
        ),
        click.option(
            "--colsample",
            type=NumberRange(0.0, 1.0, min_open=True),
            help=_knob_help(
                "boost: fraction of the features each tree may split (seeded)",
                fit_boosted_ranker,
                "colsample",
            ),
        ),
        click.option(
            "--shrinkage",
            type=NumberRange(0.0, 1.0, min_open=True),
            help=_knob_help(
                "boost: shrinkage (learning rate) of every tree's step",
                fit_boosted_ranker,
                "shrinkage",
            ),
        ),
        click.option(
            "--base",
            type=click.Choice(MODEL_KINDS[:-1]),
            default="linear",
            show_default=True,
            help="The base ranker of --model rerank, trained with the same loss first.",
        ),
        click.option(
            "--surrogate-search",
            "search_evals",
            type=click.IntRange(1, 1000),
            help="with --loss bregman_mix: choose its weights alpha in [0,1]^3 (their sum is "
            "the surrogate's scale) on validation queries (dissertation 3.5) by this many fits.",
        ),
        click.option(
            "--search",
            "search_method",
            type=click.Choice(SEARCHES),
            help="How --surrogate-search chooses alpha: the finest grid on [0,1]^3 that the "
            "fits allow (dissertation section 3.5.1), or pattern search from the five starts "
            "of its section 3.6 (zeros perturbed, ones, each unit vector).  "
            "[default: grid]",
        ),
        click.option(
            "--l2",
            type=NumberRange(min=0.0, max=1e6),
            default=1e-3,
            show_default=True,
            help="L2 penalty on the weights (linear, mlp).",
        ),
        click.option(
            "--max-iter",
            type=click.IntRange(min=1, max=100_000),
            default=100,
            show_default=True,
            help="L-BFGS iterations per annealing stage (linear), epochs (mlp), boosting "
            "rounds (boost).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@dataclass(frozen=True)
class _Recipe:
    """How ``train`` and ``crossval`` fit one model: kind, loss, its options, annealing
    stages, schedule and, with ``search_evals``, the best-surrogate search."""

    kind: str
    base: str
    loss: str
    opts: dict[str, object]
    stages: list[dict[str, object]] | None
    l2: float
    max_iter: int
    seed: int
    search_evals: int | None
    search_method: str
    cutoff: int
    source: Path
    mlp: dict[str, object]
    trees: dict[str, object]

    @property
    def steps(self) -> int:
        """Progress steps of one :meth:`fit`."""
        per_fit = (len(self.stages) if self.stages else 1) * self.max_iter
        if self.kind == "rerank":
            per_fit += len(L2_GRID) * self.max_iter
        return per_fit * (self.search_evals or 1)

    def _hold_out(self, train: LetorData, what: str) -> tuple[LetorData, LetorData]:
        """``(S_1, S_2)``: 20 % of the training queries held out (seeded) for ``what``."""
        fit_idx, valid_idx = holdout_split(train.lengths.shape[0], 0.2, self.seed)
        if valid_idx.size == 0:
            raise BadInput(f"{what}: too few training queries to hold 20 % out for validation")
        return train.subset(fit_idx), train.subset(valid_idx)

    def fit(
        self, train: LetorData, valid: LetorData | None, progress: Callable[[int], None]
    ) -> tuple[AnyRanker, SurrogateSearch | None]:
        """The fitted model (and the surrogate search when there is one)."""
        if self.search_evals is None:
            return self._fit(train, valid, {}, progress), None
        if valid is None:
            train, valid = self._hold_out(train, "--surrogate-search")
        return best_surrogate(
            lambda weights: self._fit(train, valid, weights, progress),
            lambda ranker: ranker.ndcg(valid, self.cutoff),
            method=self.search_method,
            max_evals=self.search_evals,
            seed=self.seed,
        )

    def _fit(
        self,
        train: LetorData,
        valid: LetorData | None,
        weights: dict[str, float],
        progress: Callable[[int], None],
    ) -> AnyRanker:
        """One model; linear stops early on ``valid`` when given, mlp and boost on
        ``valid`` or 20 % of ``train``; rerank fits its base, then its kernel weights,
        choosing l2 on ``valid`` (20 % of ``train`` held out for both if None)."""
        opts = {**self.opts, **weights}
        if self.kind == "rerank":
            if valid is None:
                train, valid = self._hold_out(train, "--model rerank")
            base = replace(self, kind=self.base)._fit(train, valid, weights, progress)
        try:
            if self.kind == "rerank":
                return fit_reranker(
                    train,
                    base,
                    self.loss,
                    valid,
                    options=opts,
                    max_iter=self.max_iter,
                    progress=progress,
                )
            if self.kind == "linear":
                return fit_linear_ranker(
                    train,
                    self.loss,
                    valid=valid,
                    options=opts,
                    stages=self.stages,
                    l2=self.l2,
                    max_iter=self.max_iter,
                    progress=progress,
                )
            if self.kind == "mlp":
                return fit_mlp_ranker(
                    train,
                    self.loss,
                    valid=valid,
                    options=opts,
                    l2=self.l2,
                    epochs=self.max_iter,
                    seed=self.seed,
                    progress=progress,
                    **self.mlp,
                )
            return fit_boosted_ranker(
                train,
                self.loss,
                valid=valid,
                options=opts,
                n_trees=self.max_iter,
                seed=self.seed,
                progress=progress,
                **self.trees,
            )
        except TrainingError as err:
            raise BadInput(f"{self.source}: {err}") from None


def _check_anneal(kind: str, anneal: str | None) -> None:
    if anneal is not None and kind != "linear":
        raise BadInput(f"--anneal: only the linear model anneals, not --model {kind}")


#: The boost options that single-feature learners have (the rest shape trees).
FEATURE_KNOBS = ("weak_learner", "step", "shrinkage", "subsample", "colsample")


def _model_knobs(
    kind: str,
    base: str,
    hidden: str | None,
    knobs: dict[str, object],
) -> tuple[dict[str, object], dict[str, object]]:
    """The library keywords of ``--hidden`` (mlp) and of the tree options (``knobs``: the
    boost options' values by keyword, None where not given), refused for a model that has
    no such knob."""
    trained = {kind, base} if kind == "rerank" else {kind}
    what = f"--model {kind}" + (f" --base {base}" if kind == "rerank" else "")
    mlp: dict[str, object] = {}
    if hidden is not None:
        if "mlp" not in trained:
            raise BadInput(f"--hidden: only an mlp has hidden layers, not {what}")
        try:
            widths = tuple(int(w) for w in hidden.split(","))
        except ValueError:
            raise BadInput(
                f"--hidden: expected comma-separated layer widths, got {hidden!r}"
            ) from None
        if not all(1 <= w <= 10_000 for w in widths):
            raise BadInput(f"--hidden: layer widths must be in 1 .. 10000, got {hidden!r}")
        mlp["hidden"] = widths
    trees = {name: value for name, value in knobs.items() if value is not None}
    if trees and "boost" not in trained:
        flag = "--" + next(iter(trees)).replace("_", "-")
        raise BadInput(f"{flag}: only boost has weak learners, not {what}")
    if trees.get("weak_learner") == "feature":
        tree_only = [name for name in trees if name not in FEATURE_KNOBS]
        if tree_only:
            flag = "--" + tree_only[0].replace("_", "-")
            raise BadInput(f"{flag}: only trees have it, not --weak-learner feature")
    return mlp, trees


def _check_search(
    search_evals: int | None, method: str | None, loss: str, opts: dict[str, object]
) -> None:
    """``--surrogate-search`` needs ``--loss bregman_mix`` and chooses its weights and scale
    itself; ``--search`` needs ``--surrogate-search``."""
    if search_evals is None:
        if method is not None:
            raise BadInput("--search: chooses how --surrogate-search N searches; give that too")
        return
    if loss != "bregman_mix":
        raise BadInput(
            f"--surrogate-search: searches the weights of --loss bregman_mix, not {loss}"
        )
    fixed = sorted(set(opts) & {*SURROGATES, "scale"})
    if fixed:
        raise BadInput(f"--surrogate-search: chooses {', '.join(fixed)} itself; drop that --option")


def _search_report(search: SurrogateSearch, cutoff: int) -> dict[str, object]:
    return {
        "alpha": mixture_options(search.alpha),
        "tried": [
            {"alpha": mixture_options(a), f"valid_ndcg@{cutoff}": v} for a, v in search.trace
        ],
    }


@ltr_group.command("train")
@_data_argument
@_training_options
@click.option(
    "--valid",
    type=InputPath(dir_okay=False, path_type=Path),
    help="Validation queries for early stopping (every model) and the choices of rerank and "
    "--surrogate-search (default: none for linear, 20 % of the training queries for the rest).",
)
@click.option(
    "--test-fraction",
    type=NumberRange(0.0, 0.9),
    default=0.3,
    show_default=True,
    help="Fraction of queries held out for testing.",
)
@_cutoff_option("Report NDCG at this cut-off.")
@out_option("Write the model and the report as JSON here.", name="output")
@seed_option()
@quiet_option
@reports_bad_input
def ltr_train(
    data: Path,
    loss: str,
    options: tuple[str, ...],
    anneal: str | None,
    kind: str,
    normalise: str,
    hidden: str | None,
    base: str,
    search_evals: int | None,
    search_method: str | None,
    l2: float,
    max_iter: int,
    valid: Path | None,
    test_fraction: float,
    cutoff: int,
    output: Path | None,
    seed: int,
    quiet: bool,
    **tree_knobs: Any,
) -> None:
    """Fit a ranker on the queries of DATA with LOSS and report NDCG@k.

    The queries are split at random ('--seed') into a training and a test part; the
    ridge-regression start is reported alongside for comparison. A query without relevant
    documents has NDCG 1 (every order is ideal, as in LightGBM). A progress bar goes to
    stderr when it is a terminal (not with --quiet).
    """
    spec = LOSSES[loss]
    opts = _parse_options(options, spec)
    _check_anneal(kind, anneal)
    _check_search(search_evals, search_method, loss, opts)
    stages = _parse_anneal(anneal, spec, opts)
    knobs = _model_knobs(kind, base, hidden, tree_knobs)
    if output is not None:
        refuse_to_overwrite(output, [data] + ([valid] if valid else []))
    letor = normalise_queries(_read(data), normalise)
    n_queries = letor.lengths.shape[0]
    try:
        train_idx, test_idx = holdout_split(n_queries, test_fraction, seed)
    except ValueError:
        raise BadInput(
            f"--test-fraction {test_fraction} leaves no training query of the {n_queries} in {data}"
        ) from None
    train, test = letor.subset(train_idx), letor.subset(test_idx)
    n_test = len(test_idx)
    n_features = letor.features.shape[2]
    valid_data = None
    if valid is not None:
        valid_data = _read(valid, n_features=n_features)
        if valid_data.features.shape[2] > n_features:
            raise BadInput(f"{valid} has more features than {data} ({n_features})")
        valid_data = normalise_queries(valid_data, normalise)
    check_learnable(train, data)
    ridge = ridge_ranker(train)
    recipe = _Recipe(
        kind,
        base,
        loss,
        opts,
        stages,
        l2,
        max_iter,
        seed,
        search_evals,
        search_method or "grid",
        cutoff,
        data,
        *knobs,
    )
    with progressbar(recipe.steps, f"training {loss} {kind}", quiet) as bar:
        model, search = recipe.fit(train, valid_data, bar.update)
    report = {
        "loss": loss,
        "options": opts,
        **({"surrogate_search": _search_report(search, cutoff)} if search else {}),
        "anneal": stages,
        "seed": seed,
        "normalise": normalise,
        "queries": {"train": int(train.lengths.shape[0]), "test": n_test},
        f"ndcg@{cutoff}": {
            "train": model.ndcg(train, cutoff),
            "test": model.ndcg(test, cutoff) if n_test else None,
        },
        f"ridge_ndcg@{cutoff}": {
            "train": ridge.ndcg(train, cutoff),
            "test": ridge.ndcg(test, cutoff) if n_test else None,
        },
        **ranker_to_dict(NormalisedRanker(model, normalise), n_features),
        "version": __version__,
    }
    line = f"{loss} {kind}: NDCG@{cutoff} train {report[f'ndcg@{cutoff}']['train']:.4f}"
    if n_test:
        line += f", test {report[f'ndcg@{cutoff}']['test']:.4f}"
        line += f" (ridge start: test {report[f'ridge_ndcg@{cutoff}']['test']:.4f})"
    if search is not None:
        alpha = ", ".join(f"{k} {v:.3f}" for k, v in mixture_options(search.alpha).items())
        line += f"\nsurrogate weights alpha: {alpha} (validation NDCG@{cutoff} {search.value:.4f})"
    if output is None:
        click.echo(line)
        return
    with atomic_output(output, "w") as handle:
        handle.write(jsontext.dumps(report, exact=PARAMETER_KEYS))
    status(f"{line}\nwrote {output}", quiet)


def _model_scores(model_path: Path, data: Path) -> tuple[LetorData, np.ndarray]:
    """The queries of ``data`` and their scores under the saved model (exit 2 on files
    that do not fit together)."""
    model, n_model = read_ranker(model_path)
    letor = _read(data, n_features=n_model)
    if letor.features.shape[2] > n_model:
        raise BadInput(
            f"{data} has {letor.features.shape[2]} features but the model {model_path} "
            f"was trained on {n_model}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        scores = model.scores(letor)
    if not np.all(np.isfinite(scores[letor.mask])):
        raise BadInput(f"{model_path}: its weights give non-finite scores on {data}")
    return letor, scores


def _mean_where_defined(values: np.ndarray) -> float | None:
    """Mean over the queries where a metric is defined (not NaN); None if it is nowhere."""
    defined = ~np.isnan(values)
    return float(values[defined].mean()) if defined.any() else None


_model_file_option = click.option(
    "--model",
    "-m",
    "model_path",
    required=True,
    type=InputPath(dir_okay=False, path_type=Path),
    help="JSON model written by 'rankmodels ltr train -o'.",
)


@ltr_group.command("evaluate")
@_data_argument
@_model_file_option
@_cutoff_option("Cut-off of NDCG, precision and ERR.")
@_format_option
@quiet_option
@reports_bad_input
def ltr_evaluate(data: Path, model_path: Path, cutoff: int, fmt: str, quiet: bool) -> None:
    """Score the queries of DATA with a saved ranker and print mean metrics.

    NDCG, precision and ERR are cut at k; MAP, MRR, RBP (alpha 0.8), ARP and OPA use the
    whole list. A query without relevant documents has NDCG 1 (as LightGBM) and MAP, MRR,
    precision, ERR and RBP 0; ARP (needs a relevant document) and OPA (needs two different
    labels) average over the queries where they are defined, and are reported as n/a
    (JSON null) when they are defined nowhere. Features missing from the sparse file are 0.
    """
    letor, scores = _model_scores(model_path, data)
    args = (letor.relevance, scores)
    kw = {"lengths": letor.lengths}
    values = {
        f"ndcg@{cutoff}": metrics.ndcg(*args, k=cutoff, **kw),
        f"precision@{cutoff}": metrics.precision(*args, k=cutoff, **kw),
        "map": metrics.average_precision(*args, **kw),
        "mrr": metrics.reciprocal_rank(*args, **kw),
        f"err@{cutoff}": metrics.err(*args, k=cutoff, **kw),
        "rbp": metrics.rbp(*args, **kw),
        "arp": metrics.arp(*args, **kw),
        "opa": metrics.opa(*args, **kw),
    }
    means = {name: _mean_where_defined(v) for name, v in values.items()}
    if fmt == "json":
        click.echo(jsontext.dumps({"queries": int(letor.lengths.shape[0]), **means}), nl=False)
    else:
        for name, value in means.items():
            click.echo(f"{name:<14}{'n/a' if value is None else f'{value:.4f}'}")


@ltr_group.command("predict")
@_data_argument
@_model_file_option
@out_option("Write the scores here  [default: standard output]", name="output")
@quiet_option
@reports_bad_input
def ltr_predict(data: Path, model_path: Path, output: Path | None, quiet: bool) -> None:
    """Write one score per document of DATA, one per line, in the file's document order
    (queries grouped by qid as the reader groups them)."""
    if output is not None:
        refuse_to_overwrite(output, [data, model_path])
    letor, scores = _model_scores(model_path, data)
    text = "".join(f"{v:.17g}\n" for v in scores[letor.mask])
    if output is None:
        click.echo(text, nl=False)
    else:
        with atomic_output(output, "w") as handle:
            handle.write(text)
        status(f"wrote {count(len(text.splitlines()), 'score')} to {output}", quiet)


@ltr_group.command("crossval")
@_data_argument
@_training_options
@click.option(
    "--folds", type=click.IntRange(2, 1000), default=5, show_default=True, help="Folds by query."
)
@_cutoff_option("Report NDCG at this cut-off.")
@_format_option
@seed_option()
@quiet_option
@reports_bad_input
def ltr_crossval(
    data: Path,
    loss: str,
    options: tuple[str, ...],
    anneal: str | None,
    kind: str,
    normalise: str,
    hidden: str | None,
    base: str,
    search_evals: int | None,
    search_method: str | None,
    l2: float,
    max_iter: int,
    folds: int,
    cutoff: int,
    fmt: str,
    seed: int,
    quiet: bool,
    **tree_knobs: Any,
) -> None:
    """K-fold cross-validation by query on DATA: fit on the other folds, NDCG@k on each fold, and
    the mean with its standard error (std over folds / sqrt(folds))."""
    spec = LOSSES[loss]
    opts = _parse_options(options, spec)
    _check_anneal(kind, anneal)
    _check_search(search_evals, search_method, loss, opts)
    stages = _parse_anneal(anneal, spec, opts)
    knobs = _model_knobs(kind, base, hidden, tree_knobs)
    letor = normalise_queries(_read(data), normalise)
    n_queries = letor.lengths.shape[0]
    if folds > n_queries:
        raise BadInput(f"--folds {folds} is more than the {n_queries} queries of {data}")
    values, alphas = [], []
    recipe = _Recipe(
        kind,
        base,
        loss,
        opts,
        stages,
        l2,
        max_iter,
        seed,
        search_evals,
        search_method or "grid",
        cutoff,
        data,
        *knobs,
    )
    with progressbar(folds * recipe.steps, f"crossval {loss} {kind}", quiet) as bar:
        for train_idx, test_idx in kfold_indices(n_queries, folds, seed):
            train, test = letor.subset(train_idx), letor.subset(test_idx)
            check_learnable(train, data)
            model, search = recipe.fit(train, None, bar.update)
            if search is not None:
                alphas.append(mixture_options(search.alpha))
            values.append(model.ndcg(test, cutoff))
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1) / np.sqrt(folds))
    key = f"ndcg@{cutoff}"
    if fmt == "json":
        searched = {"alpha": alphas} if alphas else {}
        summary = {"loss": loss, "model": kind, "folds": values, key: mean, f"{key}_se": se}
        click.echo(jsontext.dumps(summary | searched), nl=False)
    else:
        for number, value in enumerate(values, start=1):
            chosen = ""
            if alphas:
                chosen = "  alpha " + " ".join(f"{v:.3f}" for v in alphas[number - 1].values())
            click.echo(f"fold {number:<4}{key} {value:.4f}{chosen}")
        click.echo(f"mean     {key} {mean:.4f} ± {se:.4f}")
