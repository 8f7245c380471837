"""``rankmodels study ...``: run a simulation study on this machine or on a Dask cluster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import pandas as pd

from rankmodels.studies import StudyResult, dask_client, run_study
from rankmodels.studies import aggregation_study as agg_study
from rankmodels.studies import surrogate_scale as scale_study
from rankmodels.studies.tracking_clutter import (
    DEFAULT_ENGINES,
    DEFAULT_LAMBDAS,
    MIN_CYCLES,
    STUDY_ENGINES,
    TRAJECTORIES,
    tracking_clutter_study,
)
from rankmodels_app._common import (
    AliasedOption,
    BadInput,
    NumberRange,
    OneLineGroup,
    atomic_output,
    atomic_path,
    out_option,
    progressbar,
    quiet_option,
    seed_option,
    status,
)
from rankmodels_app.sim_options import make_folder


class _CommaList(click.ParamType):
    """``a,b,c`` -> a list; numbers (``kind=float``, in ``[0, high]``, or ``(0, high]`` with
    ``positive``) or names from ``choices``."""

    def __init__(
        self,
        kind: type = str,
        choices: Sequence[str] = (),
        high: float = float("inf"),
        positive: bool = False,
    ) -> None:
        self.kind = kind
        self.choices = tuple(choices)
        self.high = high
        self.positive = positive
        self.name = "NUMBERS" if kind is float else "NAMES"

    def convert(self, value: Any, param: Any, ctx: Any) -> list[Any]:
        if isinstance(value, list):
            return value
        items = [v.strip() for v in str(value).split(",") if v.strip()]
        if not items:
            self.fail("expected a comma-separated list, got nothing", param, ctx)
        if self.kind is float:
            try:
                numbers = [float(v) for v in items]
            except ValueError:
                self.fail(f"expected comma-separated numbers, got {value!r}", param, ctx)
            if any(not (x >= 0 and x < float("inf")) for x in numbers):
                self.fail(f"expected finite numbers >= 0, got {value!r}", param, ctx)
            if self.positive and 0 in numbers:
                self.fail(f"expected numbers > 0, got {value!r}", param, ctx)
            if any(x > self.high for x in numbers):
                self.fail(f"expected numbers in [0, {self.high:g}], got {value!r}", param, ctx)
            if len(set(numbers)) != len(numbers):
                self.fail(f"repeated values in {value!r}", param, ctx)
            return numbers
        if len(set(items)) != len(items):
            self.fail(f"repeated values in {value!r}", param, ctx)
        bad = [v for v in items if v not in self.choices]
        if bad:
            self.fail(f"unknown {bad}; expected some of {', '.join(self.choices)}", param, ctx)
        return items


def _client(workers: int | None, scheduler: str | None) -> Any:
    """A Dask client context, or None to run serially."""
    if workers is not None and scheduler is not None:
        raise click.UsageError("give --workers or --scheduler, not both")
    if workers is None and scheduler is None:
        return None
    return dask_client(workers=workers, scheduler=scheduler)


def _run(study: Any, client: Any, where: str, quiet: bool) -> StudyResult:
    """Run ``study`` serially (``client`` None) or inside the Dask ``client`` context."""
    n_tasks = len(study.points()) * study.replicates
    with progressbar(n_tasks, f"{study.name}: {n_tasks} tasks", quiet) as bar:
        if client is None:
            return run_study(study, progress=bar.update)
        try:
            with client as connected:
                return run_study(study, client=connected, progress=bar.update)
        except ImportError as err:  # dask is in the `studies` extra
            raise BadInput(str(err)) from None
        except OSError as err:  # unreachable scheduler, refused connection, timeout
            raise BadInput(f"{where}: cannot reach Dask: {err}") from None


def _write(result: StudyResult, out: Path, name: str) -> list[Path]:
    """Per-task CSV, summary CSV and NetCDF, each written atomically; returns the paths."""
    paths = [out / f"{name}.csv", out / f"{name}_summary.csv", out / f"{name}.nc"]
    with atomic_output(paths[0], "w") as handle:
        result.records.to_csv(handle, index=False)
    with atomic_output(paths[1], "w") as handle:
        result.summary().to_csv(handle, index=False)
    with atomic_path(paths[2]) as tmp:
        result.to_dataset().to_netcdf(tmp, engine="netcdf4")
    return paths


def _mse_table(result: StudyResult) -> str:
    """Mean MSE +- SE (units^2): rows (trajectory, lambda), columns engines."""
    rows = result.summary(["mse"])
    cell = rows.apply(lambda r: f"{r['mean']:.2e} ± {r['se']:.1e}", axis=1)
    table = rows.assign(cell=cell).pivot_table(
        index=["trajectory", "clutter_rate"], columns="engine", values="cell", aggfunc="first"
    )
    return table[list(dict.fromkeys(rows["engine"]))].to_string()


def _comparison(result: StudyResult) -> str:
    """Each ranked engine against the baseline, paired by seed."""
    engines = list(dict.fromkeys(result.records["engine"]))
    if "baseline" not in engines or len(engines) < 2 or result.attrs["replicates"] < 2:
        return ""
    parts = []
    for engine in (e for e in engines if e != "baseline"):
        cmp = result.compare("mse", "engine", engine, "baseline")
        cmp.insert(0, "engine", engine)
        parts.append(cmp)
    table = pd.concat(parts).rename(columns={"a_wins": "wins_vs_baseline"})
    return table.to_string(index=False, float_format=lambda x: f"{x:.3g}")


_EXECUTION_OPTIONS = (
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="Run on a local Dask cluster of this many worker processes.",
    ),
    click.option(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="Run on the Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786).",
    ),
    seed_option(help="Root seed of every task seed."),
    out_option(
        "Folder for the tables and the figure.",
        folder=True,
        default=Path("study"),
        show_default=True,
    ),
    quiet_option,
)


def _execution_options(command: Callable[..., None]) -> Callable[..., None]:
    """--workers, --scheduler, --seed, --out and --quiet: where and how every study runs."""
    for option in reversed(_EXECUTION_OPTIONS):
        command = option(command)
    return command


@click.group("study", cls=OneLineGroup)
def study_group() -> None:
    """Simulation studies that reproduce the papers' experiments.

    Tasks run in this process by default; --workers N starts a local Dask cluster of N
    processes, --scheduler tcp://HOST:8786 uses a running one ('dask scheduler' and
    'dask worker tcp://HOST:8786' on the machines). Results do not depend on the scheduler.
    """


@study_group.command("tracking-clutter")
@click.option(
    "--replicates",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Paired seeds per grid point.",
)
@click.option(
    "--particles",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="Particles of the filter.",
)
@click.option(
    "--cycles",
    type=click.IntRange(min=MIN_CYCLES),
    default=50,
    show_default=True,
    help="Daily cycles per simulated track.",
)
@click.option(
    "--clutter-rates",
    "--lambdas",
    "lambdas",
    cls=AliasedOption,
    hidden_aliases=("--lambdas",),
    type=_CommaList(float),
    default=",".join(map(str, DEFAULT_LAMBDAS)),
    show_default=True,
    help="Clutter rates (Poisson mean per window), comma-separated.",
)
@click.option(
    "--engines",
    type=_CommaList(str, STUDY_ENGINES),
    default=",".join(DEFAULT_ENGINES),
    show_default=True,
    help="Likelihood engines, comma-separated.",
)
@click.option(
    "--trajectories",
    type=_CommaList(str, TRAJECTORIES),
    default="straight",
    show_default=True,
    help="straight (Fig. 5.6, 5.8) and/or spiral (Fig. 5.7).",
)
@_execution_options
def tracking_clutter(
    replicates: int,
    particles: int,
    cycles: int,
    lambdas: list[float],
    engines: list[str],
    trajectories: list[str],
    workers: int | None,
    scheduler: str | None,
    seed: int,
    out: Path,
    quiet: bool,
) -> None:
    """Tracking MSE versus clutter, ranked model vs baseline ([Pareek2017] Fig. 5.8).

    Writes OUT/tracking_clutter.csv (one row per task), OUT/tracking_clutter_summary.csv (mean,
    SE, median per grid point and metric), OUT/tracking_clutter.nc, the figure
    OUT/tracking_clutter.png and, per trajectory, an example track at the highest clutter rate
    (OUT/tracking_clutter_example_TRAJECTORY.png, Figs. 5.6a/5.7a), and prints the MSE table
    and the paired comparison with the baseline. MSE in planar units^2 (1 unit = 150 km); see
    docs/studies.md.
    """
    from rankmodels.plots.study_plots import tracking_clutter_figures

    study = tracking_clutter_study(
        lambdas=lambdas,
        engines=engines,
        trajectories=trajectories,
        replicates=replicates,
        cycles=cycles,
        particles=particles,
        seed=seed,
    )
    make_folder(out)  # a bad --out fails before the work
    client = _client(workers, scheduler)
    result = _run(study, client, scheduler or "local cluster", quiet)
    paths = _write(result, out, study.name)
    pngs = []
    for stem, figure in tracking_clutter_figures(result).items():
        pngs.append(out / f"{stem}.png")
        with atomic_path(pngs[-1]) as tmp:
            figure.savefig(tmp, dpi=150)
    status(f"mean MSE ± SE over {replicates} replicates (planar units²):", quiet)
    status(_mse_table(result), quiet)
    comparison = _comparison(result)
    if comparison:
        status("\npaired comparison with the baseline (difference = engine - baseline):", quiet)
        status(comparison, quiet)
    status(
        f"wrote {', '.join(str(p) for p in [*paths, *pngs])} "
        f"({result.attrs['scheduler']}, {result.attrs['wall_time_s']:.0f} s)",
        quiet,
    )


@study_group.command("aggregation")
@click.option(
    "--weights",
    type=_CommaList(float, high=1.0),
    default=",".join(map(str, agg_study.DEFAULT_WEIGHTS)),
    show_default=True,
    help="Weights w of Z1 (in [0, 1]) for the simulated part, comma-separated.",
)
@click.option(
    "--voters",
    type=_CommaList(float),
    default=",".join(map(str, agg_study.DEFAULT_VOTERS)),
    show_default=True,
    help="Votes per simulated profile (N), comma-separated.",
)
@click.option(
    "--phi",
    type=NumberRange(0, 1, min_open=True),
    default=agg_study.PHI,
    show_default=True,
    help="Mallows dispersion of both components.",
)
@click.option(
    "--replicates",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Paired seeds per grid point.",
)
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Sampled profiles per replicate.",
)
@_execution_options
def aggregation(
    weights: list[float],
    voters: list[float],
    phi: float,
    replicates: int,
    trials: int,
    workers: int | None,
    scheduler: str | None,
    seed: int,
    out: Path,
    quiet: bool,
) -> None:
    """Which positional rule ranks A above B, the majority preference of a Mallows mixture
    ([Pareek2017] section 4.6, Fig. 4.1: the probability of ranking A above B against the
    mixture weight).

    Exact part (infinitely many votes, from the mixture's exact marginals, on the weights
    0.51, 0.52, ..., 1 and --weights): OUT/aggregation_exact.nc and the crossing table printed.
    Simulated part (profiles of N votes): OUT/aggregation.csv, OUT/aggregation_summary.csv,
    OUT/aggregation.nc. Figure: OUT/aggregation.png. See docs/studies.md.
    """
    from rankmodels.plots.aggregation_study import success_versus_weight

    if any(v != int(v) or v < 1 for v in voters):
        raise BadInput(f"--voters: expected positive integers, got {voters}")
    try:
        study = agg_study.aggregation_study(
            weights=weights,
            voters=[int(v) for v in voters],
            phi=phi,
            replicates=replicates,
            trials=trials,
            seed=seed,
        )
    except ValueError as err:
        raise BadInput(str(err)) from None
    make_folder(out)  # a bad --out fails before the work
    client = _client(workers, scheduler)
    result = _run(study, client, scheduler or "local cluster", quiet)
    paths = _write(result, out, study.name)
    exact = agg_study.exact_study(sorted({*agg_study.EXACT_WEIGHTS, *weights}), phi)
    paths.append(out / f"{study.name}_exact.nc")
    with atomic_path(paths[-1]) as tmp:
        exact.to_netcdf(tmp, engine="netcdf4")
    paths.append(out / f"{study.name}.png")
    with atomic_path(paths[-1]) as tmp:
        success_versus_weight(exact, result.summary()).savefig(tmp, dpi=150)
    status("limit of infinitely many votes: each rule ranks A above B for w > w_success", quiet)
    crossing = agg_study.crossing_table(exact)
    crossing["order"] = crossing["order"].astype(object).fillna("NaN")  # no crossing (phi = 1)
    status(crossing.to_string(index=False, float_format="{:.4f}".format), quiet)
    if exact.attrs["no_crossing"]:
        status(f"NaN: {exact.attrs['no_crossing']}", quiet)
    status(
        f"\nP(A ranked above B) on N sampled votes, mean over {replicates} x {trials} profiles:",
        quiet,
    )
    status(_success_table(result), quiet)
    status(
        f"wrote {', '.join(map(str, paths))} "
        f"({result.attrs['scheduler']}, {result.attrs['wall_time_s']:.0f} s)",
        quiet,
    )


def _success_table(result: StudyResult) -> str:
    """Mean success per (experiment, N, w), one column per rule (and the majority)."""
    rows = result.summary()
    table = rows.pivot_table(
        index=["experiment", "voters", "weight"], columns="metric", values="mean", sort=False
    )
    return table[list(dict.fromkeys(rows["metric"]))].to_string(float_format="{:.3f}".format)


@study_group.command("surrogate-scale")
@click.option(
    "--data",
    "datasets",
    multiple=True,
    metavar="FILE",
    help="LETOR files (repeatable); 'sample' is the shipped data/letor-sample.txt.  "
    "[default: sample]",
)
@click.option(
    "--betas",
    type=_CommaList(float, positive=True),
    default=",".join(map(str, scale_study.DEFAULT_BETAS)),
    show_default=True,
    help="Scales beta of the cross-entropy surrogate, comma-separated.",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 10**6),
    default=100,
    show_default=True,
    help="Boosting rounds at most (early stopping on the validation queries).",
)
@click.option(
    "--replicates",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Random train/validation/test splits, paired across beta.",
)
@_execution_options
def surrogate_scale(
    datasets: tuple[str, ...],
    betas: list[float],
    rounds: int,
    replicates: int,
    workers: int | None,
    scheduler: str | None,
    seed: int,
    out: Path,
    quiet: bool,
) -> None:
    """Test NDCG against the scale beta of the cross-entropy surrogate
    beta (sum x log x - x), boosting single features ([Pareek2017] section 3.6.3, Fig. 3.6:
    NDCG against beta).

    Each replicate splits the queries 60/20/20 % into training, validation (early stopping)
    and test. Writes OUT/surrogate_scale.csv, OUT/surrogate_scale_summary.csv,
    OUT/surrogate_scale.nc and the figure OUT/surrogate_scale.png, and prints mean test
    NDCG@1, @5, @10 per beta. See docs/ltr.md.
    """
    from rankmodels.plots.surrogate_scale import ndcg_versus_scale

    data = list(datasets) or [scale_study.SAMPLE]
    for name in data:
        if name != scale_study.SAMPLE and not Path(name).is_file():
            raise BadInput(f"--data: {name} is not a file (or 'sample')")
    try:
        study = scale_study.surrogate_scale_study(
            data=data, betas=betas, replicates=replicates, rounds=rounds, seed=seed
        )
        for name in data:
            scale_study.load_queries(name)  # bad files fail here, with one line
    except ValueError as err:
        raise BadInput(str(err)) from None
    make_folder(out)  # a bad --out fails before the work
    client = _client(workers, scheduler)
    result = _run(study, client, scheduler or "local cluster", quiet)
    paths = _write(result, out, study.name)
    summary = result.summary()
    paths.append(out / f"{study.name}.png")
    with atomic_path(paths[-1]) as tmp:
        ndcg_versus_scale(summary).savefig(tmp, dpi=150)
    table = summary[summary["metric"].isin(["ndcg@1", "ndcg@5", "ndcg@10"])].pivot_table(
        index=["data", "beta"], columns="metric", values="mean", sort=False
    )
    status(f"mean test NDCG over {replicates} random splits:", quiet)
    status(table.to_string(float_format="{:.4f}".format), quiet)
    status(
        f"wrote {', '.join(map(str, paths))} "
        f"({result.attrs['scheduler']}, {result.attrs['wall_time_s']:.0f} s)",
        quiet,
    )
