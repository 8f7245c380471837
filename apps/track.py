"""``track-float``: track a RAFOS float; write track.nc, a map, a TOA diagram and a report."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.plots.run_report import IMAGES, REPORT_FILE, write_run_report
from rankmodels.threads import prepare_environment
from rankmodels.tracking.batch import TRACK_FILE, read_record, track_file
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.estimates import CANNOT_DETERMINE
from rankmodels.tracking.pipeline import progress_steps
from rankmodels.tracking.settings import settings_of
from rankmodels.tracking.summary import TrackSummary
from rankmodels_app._common import (
    BadInput,
    OneLineCommand,
    count,
    out_option,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    status,
    version_option,
)
from rankmodels_app.setting_options import setting_options
from rankmodels_app.track_batch import run_batch

#: Exit status of ``--strict`` when a track quality check failed.
EXIT_QUALITY = 3
#: TrackConfig field -> the option that sets it (:data:`rankmodels.tracking.settings.SETTINGS`).
_OPTIONS = {field: setting.option for field, setting in settings_of("track-float").items()}


def _config(**settings: object) -> TrackConfig:
    """:class:`TrackConfig` from the options; its range errors as one line naming the option."""
    try:
        return TrackConfig(**settings)  # type: ignore[arg-type]
    except InputError as err:
        raise BadInput(f"{_OPTIONS.get(err.field or '', err.field)}: {err.message}") from None


def _truth(file: Path, record: xr.Dataset) -> xr.Dataset | None:
    """The true track ``NAME_truth.nc`` that simulate-float wrote beside a simulated record
    (None otherwise). The user did not name it, so an unusable one is a warning, not an error."""
    from rankmodels.plots.truth import truth_beside

    try:
        return truth_beside(file, record)
    except InputError as err:
        click.echo(f"warning: {err}; the report has no comparison with the truth", err=True)
        return None


def _write_figures(
    record: xr.Dataset,
    track: xr.Dataset,
    summary: TrackSummary,
    out: Path,
    truth: xr.Dataset | None,
) -> list[str]:
    """map.png, toa.png, diagnostics.png and the self-contained report.html
    (:func:`rankmodels.plots.run_report.write_run_report`), with the true track when ``truth``
    is given."""
    import matplotlib  # only runs that draw pay for its import

    matplotlib.use("Agg")
    return write_run_report(out, record, track, summary, truth)


def _quality_line(summary: TrackSummary) -> str:
    """One line: how many quality checks passed, failed (named, value > threshold) and were
    not computed."""
    failed = summary.failed_checks
    skipped = [c.name for c in summary.quality if c.passed is None]
    passed = len(summary.quality) - len(failed) - len(skipped)
    parts = [f"{passed} passed"]
    if failed:
        shown = ", ".join(f"{c.name} {c.value:.3g} > {c.threshold:.3g}" for c in failed)
        parts.append(f"WARNING {len(failed)} failed ({shown})")
    if skipped:
        parts.append(f"{len(skipped)} not computed ({', '.join(skipped)})")
    return "quality checks: " + ", ".join(parts)


def _calibration_lines(summary: TrackSummary) -> list[str]:
    """What was estimated (values with standard errors, from where the EM started), what was
    kept and why, and how the EM ended."""
    result = summary.calibration
    if result is None:
        motion = "motion" if summary.lagrangian else "process noise"
        return ["not calibrated (the file's clock, sound speed and source offsets; the "
                f"configured noise, detection, clutter, multipath and {motion})"]  # fmt: skip
    runs = f"{count(len(result.loglik), 'EM pass', 'EM passes')} at {result.particles} particles"
    if result.kept_file_values:
        return [
            "calibration kept the file's and the configured values (no M-step raised the "
            f"likelihood; {runs})"
        ]
    estimated = [p.text() for p in summary.parameters if p.estimated]
    kept: dict[str, list[str]] = {}  # reason -> what
    for p in summary.parameters:
        if p.status == "kept":
            kept.setdefault(p.reason, []).append(p.kept_text())
    if "offsets" in result.params:
        cal = result.calibration
        changed = np.isfinite(cal.source_offset_correction_std)
        if changed.any():
            largest = float(abs(cal.source_offset_correction[changed]).max())
            estimated.append(
                f"source offset corrections up to {largest:.1f} s ({int(changed.sum())} of "
                f"{changed.size} sources)"
            )
        else:
            kept.setdefault(CANNOT_DETERMINE, []).append("source offsets as written")
    lines = [
        f"calibrated: {'; '.join(estimated) or 'nothing'} (EM pass {result.best} of "
        f"{len(result.loglik) - 1} at {result.particles} particles kept; {result.stop})"
    ]
    for reason, what in kept.items():
        reason = reason.replace("determine it", "determine them") if len(what) > 1 else reason
        lines.append(f"kept ({reason}): {'; '.join(what)}")
    return lines


def _summary_lines(summary: TrackSummary, out: Path, written: list[str]) -> list[str]:
    smooth = "smoothed" if summary.smoothed else "filtered only"
    used = []
    if summary.fixes_used:
        used.append(f"{summary.fixes_used} position fix{'es' if summary.fixes_used > 1 else ''}")
    if summary.recovery_used:
        used.append("the recovery fix")
    if used:
        smooth += f" (with {' and '.join(used)})"
    if not summary.recovery_fix:
        smooth += "; no recovery fix in the record"
    timing = f"run time {summary.run_time_s:.1f} s"
    if summary.compile_time_s > 0:
        timing += f" (plus numba kernels compiled in {summary.compile_time_s:.1f} s)"
    return [
        f"{count(summary.cycles, 'cycle')} ({summary.cycles_without_data} without arrivals), "
        f"{count(summary.arrivals, 'arrival')}; engine {summary.engine}, "
        f"{summary.particles} particles, {smooth}",
        f"mean ESS {summary.mean_ess:.0f} "
        f"({100 * summary.mean_ess / summary.particles:.0f}%), arrivals called clutter "
        f"{100 * summary.clutter_fraction:.1f}%, collapsed cycles {len(summary.collapsed_cycles)}",
        *_calibration_lines(summary),
        *([f"Lagrangian statistics: {summary.lagrangian.text()}"] if summary.lagrangian else []),
        _quality_line(summary),
        f"{timing}; wrote {out}/: {', '.join(written)}",
    ]


def _first_cycles(indices: list[int], shown: int = 5) -> str:
    """``cycle 3, 17, ...``: the first ``shown`` of 0-based cycle ``indices``, numbered from 1
    as in the report and the summary."""
    more = ", ..." if len(indices) > shown else ""
    word = "cycle" if len(indices) == 1 else "cycles"
    return f"{word} {', '.join(str(i + 1) for i in indices[:shown])}{more}"


def _warnings(summary: TrackSummary) -> list[str]:
    """stderr warnings: collapsed cycles, unconverged message passing and each failed quality
    check."""
    lines = []
    if summary.collapsed_cycles:
        cycles = summary.collapsed_cycles
        lines.append(
            f"the filter collapsed (all particles had zero likelihood) at "
            f"{count(len(cycles), 'cycle')} ({_first_cycles(cycles)}); those cycles were skipped"
        )
    if summary.unconverged_cycles:
        cycles = summary.unconverged_cycles
        lines.append(
            f"engine {summary.engine} did not converge for some particles within its sweep "
            f"limit at {count(len(cycles), 'cycle')} ({_first_cycles(cycles)}); their "
            "likelihoods there are approximations"
        )
    lines += [f"quality check {c.name} failed: {c.message}" for c in summary.failed_checks]
    return lines


@click.command("track-float", cls=OneLineCommand)
@click.argument(
    "files", nargs=-1, required=True, metavar="FILE...", type=click.Path(path_type=Path)
)
@out_option(
    "Output folder  [default: a folder named after FILE, in the current directory; "
    "for many floats, tracks/ with one folder per float]",
    folder=True,
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=256),
    default=None,
    help="Many floats: Dask worker processes on this machine  [default: one per CPU, at most "
    "one per float]",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Many floats: the address of a running dask.distributed scheduler (instead of local "
    "workers).",
)
@click.option(
    "--worker-threads",
    type=click.IntRange(min=1, max=256),
    default=None,
    help="Many floats: numba threads of each float's kernels  [default: the cores of a "
    "worker's machine divided among its Dask workers, at least 1]",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Many floats: keep the floats whose folders under OUT are complete under the same "
    "record and settings (their manifest.json says so) and track only the others; one line "
    "says which are redone and why.",
)
@setting_options(
    "track-float", "particles", "seed", "engine", "sigma", "p_detect", "clutter_rate",
    "multipath", "process_noise", "motion", "eddy_speed", "time_scale", "position_noise",
    "sound_speed", "min_correlation", "calibrate",
)  # fmt: skip
@click.option(
    "--calibrate-mode",
    type=click.Choice(["float", "experiment"]),
    default="float",
    show_default=True,
    help="Many floats: calibrate each float alone (float) or all together (experiment: one "
    "sound speed and per-source offset and clock-drift corrections shared by the floats, "
    "each float with its own clock and statistical model; EM on the Dask workers).",
)
@setting_options(
    "track-float", "calibrate_params", "calibration_iterations", "calibration_particles",
    "smooth",
)  # fmt: skip
@click.option(
    "--plots/--no-plots",
    default=True,
    show_default=True,
    help="Write map.png, toa.png, diagnostics.png and report.html (many floats: also "
    "fleet.png and fleet.html).",
)
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit with status {EXIT_QUALITY} when a track quality check fails (outputs are "
    "still written).",
)
@quiet_option
@version_option("track-float")
@reports_bad_input
def track_float(
    files: tuple[Path, ...],
    out: Path | None,
    workers: int | None,
    scheduler: str | None,
    worker_threads: int | None,
    resume: bool,
    particles: int,
    seed: int,
    engine: str,
    sigma: float,
    p_detect: float,
    clutter_rate: float,
    multipath: float,
    process_noise: float,
    motion: str,
    eddy_speed: float,
    time_scale: float,
    position_noise: float,
    sound_speed: float | None,
    min_correlation: float | None,
    calibrate: bool,
    calibrate_mode: str,
    calibrate_params: str,
    calibration_iterations: int,
    calibration_particles: int | None,
    smooth: bool,
    plots: bool,
    strict: bool,
    quiet: bool,
) -> None:
    """Track the RAFOS float recorded in FILE (NetCDF float record); given several files or a
    folder of records, track each into its own folder under OUT, in parallel on Dask, and
    write OUT/summary.csv and summary.json.

    Writes OUT/track.nc (positions, uncertainty, per-arrival source association, the
    calibrated clock, sound speed and source offsets, track quality checks) and, with --plots,
    a map, a TOA diagram, diagnostics and an HTML report.
    Prints a short summary; failed quality checks are warnings (errors with --strict).
    """
    config = _config(
        engine=engine,
        particles=particles,
        seed=seed,
        sigma=sigma,
        p_detect=p_detect,
        clutter_rate=clutter_rate,
        multipath=multipath,
        process_noise=process_noise,
        motion=motion,
        eddy_speed=eddy_speed,
        time_scale=time_scale,
        position_noise=position_noise,
        smooth=smooth,
        sound_speed=sound_speed,
        min_correlation=min_correlation,
        calibrate=calibrate,
        calibrate_params=calibrate_params,
        calibration_iterations=calibration_iterations,
        calibration_particles=calibration_particles,
    )
    joint = calibrate_mode == "experiment"
    if joint and not calibrate:
        raise BadInput("--calibrate-mode experiment: needs --calibrate (not --no-calibrate)")
    if len(files) > 1 or files[0].is_dir():
        run_batch(
            files, out, config, plots=plots, workers=workers, scheduler=scheduler,
            worker_threads=worker_threads, strict=strict, quiet=quiet,
            exit_quality=EXIT_QUALITY, joint=joint, resume=resume,
        )  # fmt: skip
        return
    batch_only = {
        "--workers": workers,
        "--scheduler": scheduler,
        "--worker-threads": worker_threads,
        "--calibrate-mode": "experiment" if joint else None,
        "--resume": True if resume else None,
    }
    for option, value in batch_only.items():
        if value is not None:
            raise BadInput(f"{option}: only for many floats (several files or a folder)")
    (file,) = files
    out = Path(file.stem) if out is None else out
    outputs = [TRACK_FILE, *((*IMAGES.values(), REPORT_FILE) if plots else ())]
    for name in outputs:
        refuse_to_overwrite(out / name, [file])
    record, note = read_record(file, labels_required=engine == "labels")
    if note:
        click.echo(f"warning: {note}", err=True)
    truth = _truth(file, record) if plots else None

    def figures(folder, _file, record, track, summary):
        return _write_figures(record, track, summary, folder, truth)

    try:
        with progressbar(progress_steps(record, config), "Tracking", quiet) as bar:
            done = track_file(
                record, file, out, config, progress=bar.update, figures=figures if plots else None
            )
    except InputError as err:
        if err.field in _OPTIONS:
            raise BadInput(f"{_OPTIONS[err.field]}: {err.message}") from None
        raise err.with_path(file) from None
    summary, written = done.summary, done.written
    for line in _warnings(summary):
        click.echo(f"warning: {line}", err=True)
    for line in _summary_lines(summary, out, written):
        status(line, quiet)
    if strict and summary.failed_checks:
        click.echo(
            f"Error: {len(summary.failed_checks)} track quality check(s) failed (--strict)",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_QUALITY)


def track_float_main() -> None:
    """Console-script entry point for ``track-float`` (thread policy:
    :func:`rankmodels.threads.prepare_environment`)."""
    prepare_environment()
    track_float(prog_name="track-float")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(track_float_main())
