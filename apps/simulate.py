"""``rankmodels simulate-float``: write a simulated float record and its true track."""

from __future__ import annotations

from pathlib import Path

import click

from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import TRAJECTORIES, dimes_float767
from rankmodels_app._common import atomic_path, reports_bad_input, seed_option


@click.command("simulate-float")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Folder for NAME.nc and NAME_truth.nc.",
)
@click.option("--name", default="float767", show_default=True, help="Base name of the files.")
@click.option("--trajectory", type=click.Choice(TRAJECTORIES), default="drift", show_default=True)
@click.option(
    "--days",
    type=click.IntRange(min=2),
    default=729,
    show_default=True,
    help="Days from launch to recovery (one cycle a day).",
)
@seed_option(default=767)
@reports_bad_input
def simulate_float(out: Path, name: str, trajectory: str, days: int, seed: int) -> None:
    """Simulate a RAFOS float on the DIMES source array (float 767's launch and recovery).

    With the defaults, `rankmodels simulate-float --out data` reproduces the shipped
    data/float767.nc and data/float767_truth.nc.
    """
    record, truth = dimes_float767(seed, days=days, trajectory=trajectory)
    with atomic_path(out / f"{name}.nc") as tmp:
        write_float(record, tmp)
    with atomic_path(out / f"{name}_truth.nc") as tmp:
        truth.to_netcdf(
            tmp,
            engine="netcdf4",
            encoding={"true_label": {"zlib": True}, "lat": {"zlib": True}, "lon": {"zlib": True}},
        )
    click.echo(
        f"wrote {out / f'{name}.nc'} and {out / f'{name}_truth.nc'} "
        f"({record.sizes['cycle']} cycles, {trajectory}, seed {seed})"
    )
