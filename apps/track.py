"""``track-float``: track a RAFOS float; write track.nc, a map, a TOA diagram and a report."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import matplotlib

from rankmodels.errors import InputError
from rankmodels.tracking.engines import ENGINES
from rankmodels.tracking.output import write_track
from rankmodels.tracking.pipeline import TrackConfig, progress_steps
from rankmodels.tracking.pipeline import track_float as run_tracker
from rankmodels.tracking.records import read_float
from rankmodels_app._common import (
    BadInput,
    OneLineCommand,
    atomic_output,
    atomic_path,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
)

_DEFAULTS = TrackConfig()
_positive = click.FloatRange(min=0.0, min_open=True)


def _write_figures(record, track, summary: dict, out: Path) -> list[str]:
    """map.png, toa.png, diagnostics.png and report.html (the plots helper's functions)."""
    matplotlib.use("Agg")
    from rankmodels.plots.cartopy_data import use_shipped_natural_earth
    from rankmodels.plots.report import tracking_report
    from rankmodels.plots.tracking import diagnostics, toa_diagram, track_map

    use_shipped_natural_earth()
    images = {"map": "map.png", "toa": "toa.png", "diagnostics": "diagnostics.png"}
    figures = {
        "map": lambda: track_map(record, track),
        "toa": lambda: toa_diagram(record, track),
        "diagnostics": lambda: diagnostics(track),
    }
    for name, make in figures.items():
        fig = make()
        with atomic_path(out / images[name]) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    with atomic_output(out / "report.html", "w") as handle:
        handle.write(tracking_report(track, summary, images))
    return [*images.values(), "report.html"]


def _summary_lines(summary: dict, out: Path, written: list[str]) -> list[str]:
    collapsed = summary["collapsed_cycles"]
    smooth = "smoothed" if summary["smoothed"] else "filtered only"
    if summary["recovery_used"]:
        smooth += " (with the recovery fix)"
    return [
        f"{summary['cycles']} cycles ({summary['cycles_without_data']} without arrivals), "
        f"{summary['arrivals']} arrivals; engine {summary['engine']}, "
        f"{summary['particles']} particles, {smooth}",
        f"mean ESS {summary['mean_ess']:.0f} "
        f"({100 * summary['mean_ess'] / summary['particles']:.0f}%), arrivals called clutter "
        f"{100 * summary['clutter_fraction']:.1f}%, collapsed cycles {len(collapsed)}",
        f"run time {summary['run_time_s']:.1f} s; wrote {out}/: {', '.join(written)}",
    ]


@click.command(
    "track-float", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output folder  [default: a folder named after FILE, in the current directory]",
)
@click.option(
    "--particles", type=click.IntRange(min=1), default=_DEFAULTS.particles, show_default=True
)
@seed_option()
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default=_DEFAULTS.engine,
    show_default=True,
    help="Likelihood engine (labels: the record's hand labels).",
)
@click.option(
    "--sigma",
    type=_positive,
    default=_DEFAULTS.sigma,
    show_default=True,
    help="TOA noise standard deviation (s).",
)
@click.option(
    "--pd",
    "p_detect",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=_DEFAULTS.p_detect,
    show_default=True,
    help="Detection probability P_D.",
)
@click.option(
    "--clutter",
    "clutter_rate",
    type=click.FloatRange(min=0.0),
    default=_DEFAULTS.clutter_rate,
    show_default=True,
    help="Mean clutter arrivals per listening window (P_C = LAMBDA / (1 + LAMBDA)).",
)
@click.option(
    "--process-noise",
    type=_positive,
    default=_DEFAULTS.process_noise,
    show_default=True,
    help="Random-walk standard deviation per axis of a one-day step (km).",
)
@click.option(
    "--sound-speed",
    type=_positive,
    default=None,
    help="Sound speed (m/s)  [default: the record's sound_speed, else 1500]",
)
@click.option(
    "--smooth/--no-smooth",
    default=True,
    show_default=True,
    help="Smooth the track with the whole record and the recovery fix.",
)
@click.option(
    "--plots/--no-plots",
    default=True,
    show_default=True,
    help="Write map.png, toa.png, diagnostics.png and report.html.",
)
@quiet_option
@reports_bad_input
def track_float(
    file: Path,
    out: Path | None,
    particles: int,
    seed: int,
    engine: str,
    sigma: float,
    p_detect: float,
    clutter_rate: float,
    process_noise: float,
    sound_speed: float | None,
    smooth: bool,
    plots: bool,
    quiet: bool,
) -> None:
    """Track the RAFOS float recorded in FILE (NetCDF float record).

    Writes OUT/track.nc (positions, uncertainty, per-arrival source association) and, with
    --plots, a map, a TOA diagram, diagnostics and an HTML report. Prints a short summary.
    """
    out = Path(file.stem) if out is None else out
    refuse_to_overwrite(out / "track.nc", [file])
    record = read_float(file)
    try:
        config = TrackConfig(
            engine=engine,
            particles=particles,
            seed=seed,
            sigma=sigma,
            p_detect=p_detect,
            clutter_rate=clutter_rate,
            process_noise=process_noise,
            smooth=smooth,
            sound_speed=sound_speed,
        )
    except ValueError as err:
        raise BadInput(str(err)) from None
    try:
        with progressbar(progress_steps(record, config), "Tracking", quiet) as bar:
            track, summary = run_tracker(record, config, progress=bar.update)
    except InputError as err:
        raise err.with_path(file) from None
    track.attrs["source_file"] = str(file)
    with atomic_path(out / "track.nc") as tmp:
        write_track(track, tmp)
    written = ["track.nc"]
    if plots:
        written += _write_figures(record, track, summary, out)
    if summary["collapsed_cycles"]:
        cycles = summary["collapsed_cycles"]
        click.echo(
            f"warning: the filter collapsed (all particles had zero likelihood) at "
            f"{len(cycles)} cycle(s), first {cycles[:5]}; those cycles were skipped",
            err=True,
        )
    for line in _summary_lines(summary, out, written):
        click.echo(line)


def track_float_main() -> None:
    """Console-script entry point for ``track-float``."""
    track_float(prog_name="track-float")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(track_float_main())
