"""``rankmodels mallows sample|fit``: simulate votes from Mallows mixtures and fit them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import numpy as np

from rankmodels import jsontext
from rankmodels.aggregation import read_votes, write_votes_csv
from rankmodels.aggregation.mallows import (
    Mallows,
    MallowsMixture,
    MixtureFit,
    TopKBallots,
    fit_mixture,
    select_components,
)
from rankmodels.aggregation.mallows.io import MAX_THETA, mixture_to_json, read_mixture
from rankmodels.errors import InputError
from rankmodels.text import printable
from rankmodels_app._common import (
    BadInput,
    NumberRange,
    OneLineGroup,
    atomic_output,
    out_option,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
)

MAX_VOTES = 10**8
"""Largest ``mallows sample -n`` (memory grows with the distinct ballots, time with the votes)."""


@click.group("mallows", cls=OneLineGroup)
def mallows_group() -> None:
    """Mallows models and mixtures: sample votes, fit models to votes (docs/mallows.md).

    P(ranking) ~ phi ** (Kendall distance to the centre), 0 < phi <= 1 (phi = 1 is uniform,
    smaller phi is more concentrated); theta = -log(phi).
    """


def _centre_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise BadInput(f"--centre: expected distinct comma-separated candidate names, got {text!r}")
    return names


def _one_model(
    centre: str | None, phi: float | None, theta: float | None
) -> tuple[tuple[str, ...], MallowsMixture]:
    if centre is None:
        raise BadInput("give --centre with --phi or --theta, or --mixture FILE.json")
    if (phi is None) == (theta is None):
        raise BadInput("--centre needs exactly one of --phi and --theta")
    names = _centre_names(centre)
    order = np.arange(len(names))
    model = Mallows(order, phi) if phi is not None else Mallows.from_theta(order, theta)
    return names, model.as_mixture()


@mallows_group.command("sample")
@click.option("--centre", default=None, help="Centre ranking, best first: A,B,C,D.")
@click.option("--phi", type=NumberRange(0, 1, min_open=True), default=None, help="Dispersion phi.")
@click.option("--theta", type=NumberRange(0, MAX_THETA), default=None, help="Or theta = -log(phi).")
@click.option(
    "--mixture",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Mixture JSON (the output of 'mallows fit --format json') instead of --centre.",
)
@click.option(
    "-n", "--voters", type=click.IntRange(1, MAX_VOTES), default=1000, show_default=True,
    help="Number of votes.",
)  # fmt: skip
@click.option(
    "--top", type=click.IntRange(min=1), default=None,
    help="Keep only each voter's top K candidates (the rest unranked).",
)  # fmt: skip
@seed_option()
@out_option("Votes CSV to write (atomically)  [default: standard output]", name="output")
@quiet_option
@reports_bad_input
def sample_command(
    centre: str | None,
    phi: float | None,
    theta: float | None,
    mixture: Path | None,
    voters: int,
    top: int | None,
    seed: int,
    output: Path | None,
    quiet: bool,
) -> None:
    """Draw votes from a Mallows model or mixture (repeated insertion) as a votes CSV.

    The CSV (columns ranking, count; one row per distinct ballot) is what 'rankmodels
    aggregate' and 'rankmodels mallows fit' read.
    """
    if mixture is not None:
        if centre is not None or phi is not None or theta is not None:
            raise BadInput("give either --mixture or --centre with --phi/--theta, not both")
        names, model = read_mixture(mixture)
    else:
        names, model = _one_model(centre, phi, theta)
    if top is not None and top > len(names):
        raise BadInput(
            f"--top: expected at most {len(names)} (the number of candidates), got {top}"
        )
    if output is not None and mixture is not None:
        refuse_to_overwrite(output, [mixture])
    profile = model.sample_histogram(voters, np.random.default_rng(seed), names, top)
    try:
        if output is None:
            write_votes_csv(profile, sys.stdout)
            return
        with atomic_output(output, "w") as handle:
            write_votes_csv(profile, handle)
    except ValueError as err:  # a name the CSV cannot hold, found before anything is written
        raise BadInput(f"{mixture or '--centre'}: {err}") from None
    if not quiet:
        click.echo(f"wrote {voters} votes ({profile.weights.size} distinct) to {output}", err=True)


class _Components(click.ParamType):
    """A positive integer or ``auto``."""

    name = "K|auto"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        if isinstance(value, int) or value == "auto":
            return value
        try:
            k = int(value)
        except ValueError:
            k = 0
        if k < 1:
            self.fail(f"expected a positive integer or 'auto', got {value!r}", param, ctx)
        return k


def _fit_report(
    fit: MixtureFit, ballots: TopKBallots, by_k: dict[int, MixtureFit] | None
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "candidates": list(ballots.candidates),
        "ballots": ballots.total,
        "unique_ballots": int(ballots.counts.size),
        "top_k_ballots": float(ballots.counts[ballots.lengths < ballots.n].sum()),
        **mixture_to_json(ballots.candidates, fit.model),
        "loglik": fit.loglik,
        "bic": fit.bic,
        "n_parameters": fit.n_parameters,
        "converged": fit.converged,
        "exact_centres": fit.exact_centres,
        "restarts": fit.restarts.tolist(),
        "trace": fit.trace.tolist(),
    }
    if by_k is not None:
        report["bic_by_components"] = {str(k): f.bic for k, f in by_k.items()}
    return report


def _fit_text(report: dict[str, Any]) -> str:
    lines = [
        f"{len(report['components'])} component(s), {report['ballots']:g} ballots "
        f"({report['unique_ballots']} different; {report['top_k_ballots']:g} rank only their "
        "top candidates), "
        f"{len(report['candidates'])} candidates",
    ]
    for i, comp in enumerate(report["components"], start=1):
        lines.append(
            f"{i}. weight {comp['weight']:.4f}  phi {comp['phi']:.4f}  theta {comp['theta']:.4f}"
        )
        lines.append("   " + " > ".join(printable(c) for c in comp["centre"]))
    lines.append(f"log-likelihood {report['loglik']:.6g}   BIC {report['bic']:.6g}")
    if "bic_by_components" in report:
        table = ", ".join(f"K={k}: {b:.6g}" for k, b in report["bic_by_components"].items())
        lines.append(f"BIC by number of components: {table}")
    if not report["converged"]:
        lines.append("warning: EM stopped at --max-iter before converging")
    if not report["exact_centres"]:
        lines.append("note: some centres come from the Kemeny heuristic (> 20 tied candidates)")
    return "\n".join(lines) + "\n"


@mallows_group.command("fit")
@click.argument("votes", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--components", type=_Components(), default="1", show_default=True,
    help="Number of mixture components, or 'auto' to choose it by BIC.",
)  # fmt: skip
@click.option(
    "--max-components", type=click.IntRange(min=1), default=5, show_default=True,
    help="Largest number of components tried by --components auto.",
)  # fmt: skip
@click.option(
    "--restarts", type=click.IntRange(min=1), default=5, show_default=True,
    help="EM restarts per number of components (the best is kept).",
)  # fmt: skip
@click.option(
    "--max-iter", type=click.IntRange(min=1), default=200, show_default=True,
    help="EM iterations per restart at most.",
)  # fmt: skip
@seed_option(help="Seed of the EM starting points.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Output format.",
)  # fmt: skip
@out_option("Write the result to this file (atomically) instead of standard output.", name="output")
@quiet_option
@reports_bad_input
def fit_command(
    votes: Path,
    components: int | str,
    max_components: int,
    restarts: int,
    max_iter: int,
    seed: int,
    fmt: str,
    output: Path | None,
    quiet: bool,
) -> None:
    """Fit a Mallows model or mixture to the ballots in VOTES (votes CSV or PrefLib file) by
    maximum likelihood (EM for mixtures).

    Complete and top-k ballots (unranked candidates at the bottom) are fitted with their exact
    likelihood; ballots with ties among ranked candidates are rejected. The JSON output can be
    passed to 'mallows sample --mixture'.
    """
    try:
        ballots = TopKBallots.from_profile(read_votes(votes))
    except InputError as err:
        raise err.with_path(votes) from None
    rng = np.random.default_rng(seed)
    options = {"restarts": restarts, "max_iter": max_iter}
    unique = int(ballots.counts.size)
    if components == "auto":
        top = min(max_components, unique)
        with progressbar(1 + (top - 1) * restarts, "fitting", quiet) as bar:
            fit, by_k = select_components(ballots, top, rng, progress=bar.update, **options)
    else:
        if int(components) > unique:
            raise BadInput(
                f"{votes}: --components {components}: only {unique} distinct ballots to fit"
            )
        by_k = None
        with progressbar(restarts, "fitting", quiet) as bar:
            fit = fit_mixture(ballots, int(components), rng, progress=bar.update, **options)
    report = _fit_report(fit, ballots, by_k)
    text = jsontext.dumps(report) if fmt == "json" else _fit_text(report)
    if output is None:
        sys.stdout.write(text)
        return
    refuse_to_overwrite(output, [votes])
    with atomic_output(output, "w") as handle:
        handle.write(text)
    if not quiet:
        click.echo(f"wrote {output}", err=True)
