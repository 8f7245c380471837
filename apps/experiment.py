"""``rankmodels simulate-experiment``: replay a real RAFOS experiment with simulated floats."""

from __future__ import annotations

import csv
from pathlib import Path

import click

from rankmodels import jsontext
from rankmodels.errors import InputError
from rankmodels.tracking.experiment_metadata import read_metadata
from rankmodels.tracking.records import write_float, write_truth
from rankmodels.tracking.replay import (
    REPLAY_WINDOW,
    draw_experiment,
    experiment_summary,
    replay_float,
    replay_name,
)
from rankmodels.tracking.schema import DEFAULT_SOUND_SPEED
from rankmodels_app._common import (
    BadInput,
    InputPath,
    NumberRange,
    OneLineCommand,
    atomic_output,
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

#: The truth summary files written beside the records.
SUMMARY_FILES = ("experiment.json", "experiment_sources.csv", "experiment_floats.csv")


def _write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with atomic_output(path, "w") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


@click.command("simulate-experiment", cls=OneLineCommand)
@click.argument("metadata", type=InputPath(file_okay=False, path_type=Path), required=False)
@out_option(
    "Folder for the records floatID.nc, their truths floatID_truth.nc and the summary.",
    folder=True,
    default=Path("replay"),
    show_default=True,
)
@click.option(
    "--floats",
    "n_floats",
    type=click.IntRange(min=1),
    default=None,
    help="Replay the first N floats of the floats table (table order)  [default: all].",
)
@click.option(
    "--float",
    "float_ids",
    multiple=True,
    metavar="ID",
    help="Replay the float ID of the floats table (repeat for more; not with --floats).",
)
@click.option(
    "--max-days",
    type=click.IntRange(2, 3653),
    default=None,
    help="Cut records longer than DAYS days: the float surfaces DAYS days after its launch "
    "[default: the real records].",
)
@click.option(
    "--file-sound-speed",
    type=NumberRange(min=1400.0, max=1600.0),
    default=DEFAULT_SOUND_SPEED,
    show_default=True,
    help="Sound speed (m/s) every record states (sound_speed).",
)
@setting_options("simulate-experiment", "source_drift", "float_clock_drift")
@signal_options("simulate-experiment")
@seed_option(default=0)
@quiet_option
@reports_bad_input
def simulate_experiment(
    metadata: Path | None,
    out: Path,
    n_floats: int | None,
    float_ids: tuple[str, ...],
    max_days: int | None,
    file_sound_speed: float,
    source_drift: float,
    float_clock_drift: float | None,
    sigma: float,
    p_detect: float,
    p_detect_far: float,
    clutter_rate: float,
    true_sound_speed: float | None,
    offset_error: float,
    multipath: float,
    seed: int,
    quiet: bool,
) -> None:
    """Replay the DIMES experiment: simulate its floats on the real metadata in METADATA.

    METADATA is a folder holding sound_sources.csv (the sources: positions, missions,
    deployments, transmission times, drifts) and dimes_floats.csv (the floats: launch and
    recovery positions and dates, clock offsets at launch and recovery); without it, the
    DIMES tables shipped with the package. Each float is
    simulated on the DIMES sources moored during its record, from its real launch to its real
    recovery position and date (a drifting track pinned at both ends), with its float clock
    going from the table's launch offset to its recovery offset (or drifting
    --float-clock-drift); each record states the clock offsets measured at launch and at its
    end, in whole seconds. All floats share the true
    sound speed (--true-sound-speed; the records state --file-sound-speed), the errors of the
    written source offsets (drawn once per source, std --offset-error) and the sources'
    undeclared clock drift (--source-drift-error).

    Writes OUT/floatID.nc and OUT/floatID_truth.nc per float (track them all with
    'track-float OUT/'), and the truth of the experiment: OUT/experiment.json,
    experiment_sources.csv and experiment_floats.csv. The same seed gives the same files.
    """
    if n_floats is not None and float_ids:
        raise BadInput("--floats and --float: give one of them")
    try:
        spec = signal_spec(
            sigma,
            p_detect,
            p_detect_far,
            clutter_rate,
            sound_speed=file_sound_speed,
            window_length=REPLAY_WINDOW,
        )
        meta = read_metadata(metadata)
        experiment = draw_experiment(
            meta,
            seed,
            spec=spec,
            true_sound_speed=true_sound_speed,
            offset_error=offset_error,
            source_drift=source_drift,
            multipath=multipath,
            float_clock_drift=float_clock_drift,
        )
        if float_ids:
            entries = [meta.float_entry(f) for f in dict.fromkeys(float_ids)]
        else:
            entries = list(meta.floats[:n_floats])
    except InputError as err:
        if err.field == "float":
            raise BadInput(f"--float: {err.message}") from None
        if err.path is None:  # a setting (the metadata's errors name their file)
            raise bad_setting("simulate-experiment", err) from None
        raise
    make_folder(out)
    replays = []
    with progressbar(len(entries), "Replaying", quiet) as bar:
        for entry in entries:
            record, truth = replay_float(experiment, entry, max_days=max_days, correlations=True)
            name = replay_name(entry.float_id)
            with atomic_path(out / f"{name}.nc") as tmp:
                write_float(record, tmp, "rankmodels simulate-experiment")
            with atomic_path(out / f"{name}_truth.nc") as tmp:
                write_truth(truth, tmp, "rankmodels simulate-experiment")
            replays.append((entry, record))
            bar.update(1)
    summary = experiment_summary(experiment, replays)
    with atomic_output(out / SUMMARY_FILES[0], "w") as handle:
        handle.write(jsontext.dumps(summary))
    _write_csv(out / SUMMARY_FILES[1], summary["sources"])
    _write_csv(out / SUMMARY_FILES[2], summary["floats"])
    status(
        f"wrote {count(len(replays), 'float')} to {out} "
        f"({count(sum(r.sizes['cycle'] for _, r in replays), 'cycle')}, seed {seed}) and "
        f"the experiment's truth to {out / SUMMARY_FILES[0]}",
        quiet,
    )
