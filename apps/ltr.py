"""``rankmodels ltr``: train and evaluate linear rankers on LETOR / SVMlight files."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from rankmodels import __version__
from rankmodels.errors import InputError
from rankmodels.ltr import metrics
from rankmodels.ltr.letor import read_letor
from rankmodels.ltr.losses import LOSSES
from rankmodels.ltr.train import SMOOTHING, LinearRanker, fit_linear_ranker, ridge_ranker
from rankmodels_app._common import (
    BadInput,
    atomic_output,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
)


def _parse_options(pairs: tuple[str, ...]) -> dict:
    options: dict = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--option: expected KEY=VALUE, got {pair!r}")
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        options[key] = value
    return options


def _parse_anneal(text: str | None, loss: str) -> list[dict] | None:
    if text is None:
        return None
    if loss not in SMOOTHING:
        raise BadInput(f"--anneal: loss {loss!r} has no smoothing; use one of {sorted(SMOOTHING)}")
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise BadInput(f"--anneal: expected comma-separated numbers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise BadInput("--anneal: values must be positive")
    return [{SMOOTHING[loss]: v} for v in values]


@click.group("ltr")
def ltr_group() -> None:
    """Learning to rank on LETOR / SVMlight files."""


@ltr_group.command("train")
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--loss",
    type=click.Choice(sorted(LOSSES)),
    default="softrank",
    show_default=True,
    help="Training loss.",
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
    type=click.FloatRange(0.0, 0.9),
    default=0.3,
    show_default=True,
    help="Fraction of queries held out for testing.",
)
@click.option(
    "--l2",
    type=click.FloatRange(min=0.0),
    default=1e-3,
    show_default=True,
    help="L2 penalty on the weights.",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="L-BFGS iterations per annealing stage.",
)
@click.option(
    "-k",
    "--cutoff",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Report NDCG at this cut-off.",
)
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
    ridge-regression start is reported alongside for comparison.
    """
    opts = _parse_options(options)
    stages = _parse_anneal(anneal, loss)
    if output is not None:
        refuse_to_overwrite(output, [data])
    letor = read_letor(data)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(letor.lengths.shape[0])
    n_test = int(round(test_fraction * perm.shape[0]))
    train, test = letor.subset(perm[n_test:]), letor.subset(perm[:n_test])
    ridge = ridge_ranker(train)
    try:
        model = fit_linear_ranker(
            train, loss, options=opts, stages=stages, l2=l2, max_iter=max_iter
        )
    except (TypeError, ValueError) as err:  # an --option the loss rejects
        raise BadInput(f"--option: {err}") from None
    report = {
        "loss": loss,
        "options": opts,
        "anneal": stages,
        "seed": seed,
        "queries": {"train": int(train.lengths.shape[0]), "test": int(test.lengths.shape[0])},
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


def _read_model(path: Path, n_features: int) -> LinearRanker:
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
        if arr.shape != (n_features,) or not np.all(np.isfinite(arr)):
            raise InputError(
                f"must hold {n_features} finite numbers (one per feature of the data)",
                path=path,
                field=key,
            )
        arrays[key] = arr
    if np.any(arrays["feature_scale"] <= 0):
        raise InputError("must be positive", path=path, field="feature_scale")
    return LinearRanker(arrays["weights"], arrays["feature_mean"], arrays["feature_scale"])


@ltr_group.command("evaluate")
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--model",
    "-m",
    "model_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON model written by 'rankmodels ltr train -o'.",
)
@click.option(
    "-k",
    "--cutoff",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Cut-off of NDCG, precision and ERR.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@reports_bad_input
def ltr_evaluate(data: Path, model_path: Path, cutoff: int, fmt: str) -> None:
    """Score the queries of DATA with a saved linear ranker and print mean metrics.

    NDCG, precision and ERR are cut at k; MAP, MRR, RBP (alpha 0.8), ARP and OPA use the
    whole list. ARP and OPA average over the queries where they are defined.
    """
    letor = read_letor(data)
    model = _read_model(model_path, letor.features.shape[2])
    scores = model.scores(letor)
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
    means = {name: float(np.nanmean(v)) for name, v in values.items()}
    if fmt == "json":
        click.echo(json.dumps({"queries": int(letor.lengths.shape[0]), **means}))
    else:
        for name, value in means.items():
            click.echo(f"{name:<14}{value:.4f}")
