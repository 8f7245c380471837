"""``rankmodels ltr``: train and evaluate linear rankers on LETOR / SVMlight files."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np

from rankmodels import __version__
from rankmodels.errors import InputError
from rankmodels.ltr import metrics
from rankmodels.ltr.letor import LetorData, LetorOrderWarning, read_letor
from rankmodels.ltr.losses import LOSSES, LossSpec
from rankmodels.ltr.train import (
    LinearRanker,
    TrainingError,
    check_learnable,
    fit_linear_ranker,
    ridge_ranker,
)
from rankmodels_app._common import (
    BadInput,
    NumberRange,
    OneLineGroup,
    atomic_output,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
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


_data_argument = click.argument(
    "data", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)


def _cutoff_option(help: str) -> Callable[[F], F]:
    """``-k/--cutoff``, the NDCG cut-off (default 10; at most 10^9, longer than any list)."""
    return click.option(
        "-k", "--cutoff", type=click.IntRange(1, 10**9), default=10, show_default=True, help=help
    )


@click.group("ltr", cls=OneLineGroup)
def ltr_group() -> None:
    """Learning to rank on LETOR / SVMlight files."""


@ltr_group.command("losses")
def ltr_losses() -> None:
    """List the losses, their --option settings (with defaults) and what --anneal lowers."""
    for spec in LOSSES:
        click.echo(f"{spec.name}: {spec.summary}")
        for opt in spec.options:
            click.echo(f"    --option {opt.name}=...  {opt.type_name} (default {opt.default})")
        if spec.smoothing:
            click.echo(f"    --anneal lowers {spec.smoothing}")


@ltr_group.command("train")
@_data_argument
@click.option(
    "--loss",
    type=click.Choice(LOSSES.names),
    default="softrank",
    show_default=True,
    help="Training loss ('rankmodels ltr losses' lists them with their options).",
)
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Loss option, e.g. --option sigma=0.5 --option k=10 (repeatable).",
)
@click.option(
    "--anneal",
    metavar="V1,V2,...",
    help="Anneal the smoothing (sigma for sinkprop/softrank, tau for pirank) through these.",
)
@click.option(
    "--test-fraction",
    type=NumberRange(0.0, 0.9),
    default=0.3,
    show_default=True,
    help="Fraction of queries held out for testing.",
)
@click.option(
    "--l2",
    type=NumberRange(min=0.0, max=1e6),
    default=1e-3,
    show_default=True,
    help="L2 penalty on the weights.",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1, max=100_000),
    default=100,
    show_default=True,
    help="L-BFGS iterations per annealing stage.",
)
@_cutoff_option("Report NDCG at this cut-off.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the weights and the scores as JSON here.",
)
@seed_option()
@quiet_option
@reports_bad_input
def ltr_train(
    data: Path,
    loss: str,
    options: tuple[str, ...],
    anneal: str | None,
    test_fraction: float,
    l2: float,
    max_iter: int,
    cutoff: int,
    output: Path | None,
    seed: int,
    quiet: bool,
) -> None:
    """Fit a linear ranker on the queries of DATA with LOSS and report NDCG@k.

    The queries are split at random (``--seed``) into a training and a test part; the
    ridge-regression start is reported alongside for comparison. A query without relevant
    documents has NDCG 1 (every order is ideal, as in LightGBM). A progress bar goes to
    stderr when it is a terminal (not with --quiet).
    """
    spec = LOSSES[loss]
    opts = _parse_options(options, spec)
    stages = _parse_anneal(anneal, spec, opts)
    if output is not None:
        refuse_to_overwrite(output, [data])
    letor = _read(data)
    n_queries = letor.lengths.shape[0]
    n_test = int(round(test_fraction * n_queries))
    if n_test >= n_queries:
        raise BadInput(
            f"--test-fraction {test_fraction} leaves no training query of the {n_queries} in {data}"
        )
    perm = np.random.default_rng(seed).permutation(n_queries)
    train, test = letor.subset(perm[n_test:]), letor.subset(perm[:n_test])
    check_learnable(train, data)
    ridge = ridge_ranker(train)
    n_stages = len(stages) if stages else 1
    with progressbar(n_stages * max_iter, f"training {loss}", quiet) as bar:
        try:
            model = fit_linear_ranker(
                train,
                loss,
                options=opts,
                stages=stages,
                l2=l2,
                max_iter=max_iter,
                progress=bar.update,
            )
        except TrainingError as err:
            raise BadInput(f"{data}: {err}") from None
    report = {
        "loss": loss,
        "options": opts,
        "anneal": stages,
        "seed": seed,
        "queries": {"train": int(train.lengths.shape[0]), "test": n_test},
        f"ndcg@{cutoff}": {
            "train": model.ndcg(train, cutoff),
            "test": model.ndcg(test, cutoff) if n_test else None,
        },
        f"ridge_ndcg@{cutoff}": {
            "train": ridge.ndcg(train, cutoff),
            "test": ridge.ndcg(test, cutoff) if n_test else None,
        },
        "weights": model.weights.tolist(),
        "feature_mean": model.mean.tolist(),
        "feature_scale": model.scale.tolist(),
        "version": __version__,
    }
    line = f"{loss}: NDCG@{cutoff} train {report[f'ndcg@{cutoff}']['train']:.4f}"
    if n_test:
        line += f", test {report[f'ndcg@{cutoff}']['test']:.4f}"
        line += f" (ridge start: test {report[f'ridge_ndcg@{cutoff}']['test']:.4f})"
    click.echo(line)
    if output is not None:
        with atomic_output(output, "w") as handle:
            json.dump(report, handle, indent=2)
        if not quiet:
            click.echo(f"wrote {output}", err=True)


def _read_model(path: Path) -> LinearRanker:
    """The linear ranker of a JSON file written by ``ltr train -o``."""
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not a JSON model file ({err})", path=path) from None
    if not isinstance(spec, dict):
        raise InputError("expected a JSON object as written by 'rankmodels ltr train'", path=path)
    arrays = {}
    for key in ("weights", "feature_mean", "feature_scale"):
        try:
            arr = np.asarray(spec[key], dtype=float)
        except KeyError:
            raise InputError("missing", path=path, field=key) from None
        except (TypeError, ValueError):
            raise InputError("must be a list of numbers", path=path, field=key) from None
        n = len(arrays["weights"]) if arrays else None
        if arr.ndim != 1 or arr.size == 0 or (n is not None and arr.shape != (n,)):
            raise InputError(
                "must be a non-empty list of numbers, one per feature"
                + (f" ({n}, as weights)" if n is not None else ""),
                path=path,
                field=key,
            )
        if not np.all(np.isfinite(arr)):
            raise InputError("must hold finite numbers", path=path, field=key)
        arrays[key] = arr
    if np.any(arrays["feature_scale"] <= 0):
        raise InputError("must be positive", path=path, field="feature_scale")
    return LinearRanker(arrays["weights"], arrays["feature_mean"], arrays["feature_scale"])


def _mean_where_defined(values: np.ndarray) -> float | None:
    """Mean over the queries where a metric is defined (not NaN); None if it is nowhere."""
    defined = ~np.isnan(values)
    return float(values[defined].mean()) if defined.any() else None


@ltr_group.command("evaluate")
@_data_argument
@click.option(
    "--model",
    "-m",
    "model_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON model written by 'rankmodels ltr train -o'.",
)
@_cutoff_option("Cut-off of NDCG, precision and ERR.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@reports_bad_input
def ltr_evaluate(data: Path, model_path: Path, cutoff: int, fmt: str) -> None:
    """Score the queries of DATA with a saved linear ranker and print mean metrics.

    NDCG, precision and ERR are cut at k; MAP, MRR, RBP (alpha 0.8), ARP and OPA use the
    whole list. A query without relevant documents has NDCG 1 (as LightGBM) and MAP, MRR,
    precision, ERR and RBP 0; ARP (needs a relevant document) and OPA (needs two different
    labels) average over the queries where they are defined, and are reported as n/a
    (JSON null) when they are defined nowhere. Features missing from the sparse file are 0.
    """
    model = _read_model(model_path)
    n_model = model.weights.shape[0]
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
        click.echo(json.dumps({"queries": int(letor.lengths.shape[0]), **means}))
    else:
        for name, value in means.items():
            click.echo(f"{name:<14}{'n/a' if value is None else f'{value:.4f}'}")
