"""``rankmodels simulate-float``: write a simulated float record and its true track."""

from __future__ import annotations

import math
import os
from pathlib import Path

import click

from rankmodels.errors import InputError
from rankmodels.tracking.records import write_float, write_truth
from rankmodels.tracking.simulate import (
    FLOAT767_DAYS,
    MAX_DAYS,
    TRAJECTORIES,
    FixSchedule,
    Mismatch,
    dimes_float767,
    simulated_float_id,
    simulation_steps,
)
from rankmodels_app._common import (
    BadInput,
    OneLineCommand,
    atomic_path,
    count,
    out_option,
    progressbar,
    quiet_option,
    reports_bad_input,
    seed_option,
    status,
)
from rankmodels_app.setting_options import bad_setting, setting_options
from rankmodels_app.sim_options import make_folder, signal_options, signal_spec

#: Longest ``--name`` (bytes): NAME_truth.nc and its temporary twin must fit in a file name.
MAX_NAME_BYTES = 200


def _plain_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--name`` is a file name inside ``--out``: no path separator, no ``..``, printable,
    at most :data:`MAX_NAME_BYTES` bytes."""
    separators = {"/", os.sep, os.altsep} - {None}
    if value is not None and (
        not value
        or ".." in value
        or any(sep in value for sep in separators)
        or not value.isprintable()
        or len(value.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES
    ):
        raise click.BadParameter(
            f"{value[:60]!r} is not a plain file name; expected a name without path "
            f"separators, '..' or control characters, at most {MAX_NAME_BYTES} bytes "
            "(the files go into --out)",
            ctx=ctx,
            param=param,
        )
    return value


@click.command("simulate-float", cls=OneLineCommand)
@out_option(
    "Folder for NAME.nc and NAME_truth.nc.", folder=True, default=Path("."), show_default=True
)
@click.option(
    "--name",
    default=None,
    callback=_plain_name,
    help="Base name of the files  [default: the float id, sim-TRAJECTORY-seedSEED-DAYSd]",
)
@click.option(
    "--trajectory",
    type=click.Choice(TRAJECTORIES),
    default="drift",
    show_default=True,
    help="drift: a random walk with float 767's mean velocity; straight: constant velocity to "
    "the same recovery; spiral: a spiral of 3 turns.",
)
@click.option(
    "--days",
    type=click.IntRange(min=2, max=MAX_DAYS),
    default=FLOAT767_DAYS,
    show_default=True,
    help=f"Days from launch to recovery (one cycle a day), 2 to {MAX_DAYS} (10 years).",
)
@setting_options("simulate-float", "clock_drift", "clock_offset")
@signal_options("simulate-float")
@setting_options("simulate-float", "source_drift")
@click.option(
    "--fix-every",
    type=float,
    default=None,
    metavar="DAYS",
    help="The float surfaces every DAYS days and records a GPS fix (fix_* variables), as a "
    "RAFOS-enabled Argo float does in open water  [default: no fixes].",
)
@click.option(
    "--fix-until",
    type=float,
    default=None,
    metavar="DAYS",
    help="No fixes later than DAYS days after launch (ice)  [default: the whole record].",
)
@click.option(
    "--fix-error",
    type=float,
    default=0.5,
    show_default=True,
    metavar="KM",
    help="Error (km per axis) of each fix: drawn and stated as fix_error.",
)
@click.option(
    "--lost",
    is_flag=True,
    help="A lost float: the record has no recovery fix.",
)
@seed_option(default=767)
@quiet_option
@reports_bad_input
def simulate_float(
    out: Path,
    name: str | None,
    trajectory: str,
    days: int,
    seed: int,
    quiet: bool,
    source_drift: float,
    fix_every: float | None,
    fix_until: float | None,
    fix_error: float,
    lost: bool,
    sigma: float,
    p_detect: float,
    p_detect_far: float,
    clutter_rate: float,
    **mismatch: float | None,
) -> None:
    """Simulate a RAFOS float on the DIMES source array, launched where DIMES float 767 was.

    Writes OUT/NAME.nc (the float record, float id sim-TRAJECTORY-seedSEED-DAYSd) and
    OUT/NAME_truth.nc (its true track). The mismatch options make the signals depart from
    what the record states (the truth file keeps the true values). The shipped
    data/float767.nc and data/float767_truth.nc are 'rankmodels simulate-float --out data
    --name float767 --float-clock-drift 0.02 --true-sound-speed 1470 --offset-error 1
    --multipath 0.02'. --fix-every adds GPS fixes at surfacings, --lost leaves out the
    recovery fix, --source-drift makes the sources' clocks drift (stated in the record).
    --sigma, --p-detect, --p-detect-far and --clutter-rate set the signals (defaults: the
    sample's).
    """
    try:
        departure = Mismatch(**mismatch)
    except InputError as err:
        raise bad_setting("simulate-float", err) from None
    if not (math.isfinite(source_drift) and abs(source_drift) <= 1.0):
        raise BadInput(f"--source-drift: expected a number in [-1, 1] s/day, got {source_drift!r}")
    schedule = None
    if fix_every is not None:
        try:
            schedule = FixSchedule(fix_every, fix_until, fix_error)
        except InputError as err:
            raise BadInput(f"--fix-{err.field}: {err.message}") from None
    elif fix_until is not None:
        raise BadInput("--fix-until: needs --fix-every")
    make_folder(out)
    name = name or simulated_float_id(trajectory, seed, days)
    with progressbar(simulation_steps(days, trajectory), "Simulating", quiet) as bar:
        record, truth = dimes_float767(
            seed,
            days=days,
            trajectory=trajectory,
            spec=signal_spec(sigma, p_detect, p_detect_far, clutter_rate),
            mismatch=departure,
            progress=bar.update,
            fixes=schedule,
            recovered=not lost,
            source_drift=source_drift,
            correlations=True,
        )
    with atomic_path(out / f"{name}.nc") as tmp:
        write_float(record, tmp, "rankmodels simulate-float")
    with atomic_path(out / f"{name}_truth.nc") as tmp:
        write_truth(truth, tmp, "rankmodels simulate-float")
    fixes = f", {count(record.sizes['fix'], 'fix', 'fixes')}" if "fix_time" in record else ""
    status(
        f"wrote {out / f'{name}.nc'} and {out / f'{name}_truth.nc'} "
        f"({count(record.sizes['cycle'], 'cycle')}, {trajectory}, seed {seed}{fixes}"
        f"{', no recovery fix' if lost else ''})",
        quiet,
    )
