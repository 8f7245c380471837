"""``track-float a.nc b.nc ...`` / ``track-float FOLDER/``: track many floats at once.

Called by :mod:`rankmodels_app.track` when it is given more than one record or a folder. Every
float is a Dask task (a local cluster of ``--workers`` processes, or the scheduler at
``--scheduler``); a failed float is one line on stderr and the others go on. Each task runs
its kernels on ``--worker-threads`` numba threads (default: a host's cores divided among its
Dask workers, :func:`rankmodels.tracking.batch.worker_threads`). With plots, the fleet
overview (``fleet.png``, ``fleet.html``) closes the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from rankmodels.errors import InputError
from rankmodels.text import with_error
from rankmodels.tracking.batch import (
    FAILED,
    SUMMARY_FILES,
    float_folders,
    resume_checks,
    track_many,
    write_summary,
)
from rankmodels.tracking.checkpoint import CHECKPOINT_FOLDER, PassStore
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.experiment import (
    SOURCES_FILE,
    ExperimentResult,
    calibrate_experiment,
    experiment_passes,
    shared_summary,
    write_sources,
)
from rankmodels.tracking.manifest import Check
from rankmodels.tracking.shared import SOURCE_ERRORS_CAVEAT
from rankmodels_app._common import (
    EXIT_BAD_INPUT,
    BadInput,
    progressbar,
    refuse_to_overwrite,
    status,
)

#: Output folder of a batch when --out is not given.
DEFAULT_BATCH_OUT = Path("tracks")


def record_files(paths: tuple[Path, ...]) -> list[Path]:
    """The records to track: each file as given, each folder's ``*.nc`` files (sorted, not
    the ``*_truth.nc`` files simulate-float writes beside its records)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.nc") if not p.name.endswith("_truth.nc"))
            if not found:
                raise BadInput(f"{path}: no float records (*.nc) in this folder")
            files += found
        else:
            files.append(path)
    return files


def run_batch(
    paths: tuple[Path, ...],
    out: Path | None,
    config: TrackConfig,
    *,
    plots: bool,
    workers: int | None,
    scheduler: str | None,
    worker_threads: int | None = None,
    strict: bool,
    quiet: bool,
    exit_quality: int,
    joint: bool = False,
    resume: bool = False,
) -> None:
    """Track every record under ``out`` (default :data:`DEFAULT_BATCH_OUT`), each task's
    kernels on ``worker_threads`` numba threads (None: the default split), and write the
    summary table and, with ``plots``, the fleet overview; one stderr line per failed float
    and per float whose hand labels were dropped, a closing count; exit 2 when any failed
    (``exit_quality`` with ``strict`` when all ran but a quality check failed). ``joint``:
    calibrate the floats together first (:func:`rankmodels.tracking.experiment.
    calibrate_experiment`, on the same Dask client) and track each with its share; the shared
    estimates go into summary.json, sources.csv, fleet.html and two lines of the summary.
    ``resume``: keep the floats whose folders are complete under the same inputs and settings
    (:func:`rankmodels.tracking.batch.resume_checks`), saying in one line which are redone
    and why; the joint calibration keeps every E-step in ``OUT/em-checkpoint/``
    (:mod:`rankmodels.tracking.checkpoint`), which ``resume`` reads back (otherwise it starts
    afresh)."""
    from rankmodels.plots.fleet import FLEET_FILES, write_fleet
    from rankmodels.plots.run_report import float_figures

    files = record_files(paths)
    out = DEFAULT_BATCH_OUT if out is None else out
    try:
        float_folders(files)
    except ValueError as err:
        raise BadInput(str(err)) from None
    for name in (*SUMMARY_FILES, *(FLEET_FILES if plots else ()), *([SOURCES_FILE] * joint)):
        refuse_to_overwrite(out / name, files)
    if scheduler is None and workers is None:
        workers = max(1, min(len(files), os.cpu_count() or 1))
    experiment, shared = None, None
    with _client(workers, scheduler) as client:
        if joint:
            steps = len(files) * experiment_passes(config)
            with progressbar(steps, "Calibrating the experiment", quiet) as bar:
                store = PassStore(out / CHECKPOINT_FOLDER, resume=resume)
                try:
                    experiment = calibrate_experiment(
                        files, config, client=client, threads=worker_threads,
                        progress=bar.update, checkpoint=store,
                    )  # fmt: skip
                except InputError as err:
                    raise BadInput(str(err)) from None
            if resume:
                status(
                    f"resume: the joint calibration read {store.hits} float passes back from "
                    f"{out / CHECKPOINT_FOLDER} and ran {store.misses}",
                    quiet,
                )
            shared = shared_summary(experiment)
        calibrations = experiment.floats if experiment else None
        kept = None
        if resume:
            checks = resume_checks(files, out, config, figures=plots, calibrations=calibrations)
            kept = [check.row if check.complete else None for check in checks]
            status(_resume_line(float_folders(files), checks), quiet)
        todo = len(files) if kept is None else sum(row is None for row in kept)
        with progressbar(todo, "Floats", quiet) as bar:
            table = track_many(
                files,
                out,
                config,
                figures=float_figures if plots else None,
                client=client,
                threads=worker_threads,
                progress=bar.update,
                calibrations=calibrations,
                kept=kept,
            )
    written = write_summary(table, out, shared)
    if experiment is not None:
        written += write_sources(experiment, out)
        for line in _shared_lines(experiment):
            status(line, quiet)
    if plots:
        written += write_fleet(out, table, shared)
    _report(table, out, written, strict, exit_quality, quiet)


def _resume_line(names: list[str], checks: list[Check]) -> str:
    """``--resume`` in one line: how many floats are kept, and the others grouped by why they
    are redone."""
    redone: dict[str, list[str]] = {}
    for name, check in zip(names, checks, strict=True):
        if not check.complete:
            redone.setdefault(check.reason, []).append(name)
    n_redone = sum(len(group) for group in redone.values())
    line = (
        f"resume: kept {len(names) - n_redone} of {len(names)} floats (complete under the same "
        "record and settings)"
    )
    if redone:
        groups = "; ".join(f"{', '.join(group)}: {reason}" for reason, group in redone.items())
        line += f"; redoing {n_redone}: {groups}"
    return line


def _shared_lines(result: ExperimentResult) -> list[str]:
    """The joint calibration in two lines: the shared sound speed (± its standard error and
    that error's Monte Carlo part) and the source corrections (how many estimated, the
    largest), with how the EM ended and how far its end point was polished."""
    p = result.parameters
    speed = (
        f"sound speed {with_error(p.sound_speed, p.sound_speed_std, 1)} m/s (the EM's Monte "
        f"Carlo error {result.sound_speed_monte_carlo_std:.1f} of it)"
        if np.isfinite(p.sound_speed_std)
        else f"sound speed kept at {p.sound_speed:.1f} m/s"
    )
    parts, estimated = [], False
    for label, values, stds, unit, digits in (
        ("offset corrections", p.offset_correction, p.offset_correction_std, "s", 2),
        ("clock-drift corrections", p.drift_correction, p.drift_correction_std, "s/day", 4),
    ):
        done = np.isfinite(stds)
        largest = f", largest {np.abs(values[done]).max():.{digits}f} {unit}" if done.any() else ""
        parts.append(f"{label} for {int(done.sum())} of {done.size} sources{largest}")
        estimated = estimated or bool(done.any())
    polished = (
        f", polished {result.polish_reach:.2f} of a Newton step"
        if np.isfinite(result.polish_reach)
        else ""
    )
    return [
        f"experiment calibrated jointly ({len(result.names)} floats, EM pass {result.best} of "
        f"{len(result.loglik) - 1} kept{polished}; {result.stop}): {speed}",
        f"shared source clocks: {'; '.join(parts)} (sources.csv"
        + (f"; {SOURCE_ERRORS_CAVEAT})" if estimated else ")"),
    ]


@contextmanager
def _client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """A Dask client (:func:`rankmodels.studies.runner.dask_client`) on ``workers`` local
    processes or at ``scheduler``; a scheduler address that is malformed or does not answer is
    :class:`BadInput` naming it (a failure while the client is in use is not)."""
    from rankmodels.studies.runner import dask_client

    if scheduler is None:
        with dask_client(workers=workers) as client:
            yield client
        return
    from distributed.comm.addressing import get_address_host_port

    stack = ExitStack()
    try:
        # parsed before any Client exists: a Client that fails while starting can leave
        # distributed's shared event-loop runner unusable for the rest of the process
        get_address_host_port(scheduler)
        client = stack.enter_context(dask_client(scheduler=scheduler))
    except ValueError as err:  # distributed's parser of addresses
        raise BadInput(f"--scheduler {scheduler!r}: not a scheduler address ({err})") from None
    except (OSError, TimeoutError) as err:
        raise BadInput(f"--scheduler {scheduler!r}: cannot connect ({err})") from None
    with stack:
        yield client


def _report(
    table: pd.DataFrame,
    out: Path,
    written: list[str],
    strict: bool,
    exit_quality: int,
    quiet: bool,
) -> None:
    for warning in table["warning"][table["warning"] != ""]:
        click.echo(f"warning: {warning}", err=True)
    failed = table[table["status"] == FAILED]
    for reason in failed["reason"]:
        click.echo(f"Error: {reason}", err=True)
    done = table[table["status"] != FAILED]
    total = table["run_time_s"].sum()
    status(
        f"{len(done)} of {len(table)} floats tracked ({total:.1f} s of work); "
        f"wrote {out}/: {', '.join([*done['float'], *written])}",
        quiet,
    )
    quality = int((done["quality_failed"] > 0).sum())
    if quality and not (strict and failed.empty):
        click.echo(f"warning: {quality} float(s) failed a track quality check", err=True)
    if len(failed):
        click.echo(f"Error: {len(failed)} of {len(table)} floats failed", err=True)
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
    if strict and quality:
        click.echo(f"Error: {quality} float(s) failed a track quality check (--strict)", err=True)
        raise click.exceptions.Exit(exit_quality)
