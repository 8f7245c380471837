"""``rankmodels float``: float records from CSV tables or decoder files (import) and to CSV
tables (export)."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from rankmodels.files import atomic_path
from rankmodels.tracking.decoders import read_argo_aux, read_nemo_profiles, read_seaglider_logs
from rankmodels.tracking.records import WindowStretchedWarning, read_float, write_float
from rankmodels.tracking.sound_speed import starting_sound_speed
from rankmodels.tracking.tables import (
    TABLE_FILES,
    export_tables,
    parse_meta,
    read_meta_table,
    record_from_arrivals,
    record_from_tables,
)
from rankmodels_app._common import (
    BadInput,
    InputPath,
    NumberRange,
    OneLineGroup,
    count,
    out_option,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    status,
)


@click.group("float", cls=OneLineGroup)
def float_group() -> None:
    """Float records (NetCDF) from CSV tables or decoder files, and to CSV tables."""


def _meta_pair(text: str) -> tuple[str, str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise BadInput(f"--meta: expected KEY=VALUE, got {text[:60]!r}")
    return ("--meta", key, value)


@float_group.command("import")
@click.option(
    "--toa",
    "toa_table",
    type=click.Path(path_type=Path),
    default=None,
    help="TOA table: time and toa_1 .. toa_R per cycle (wide), or time,toa per arrival (long).",
)
@click.option(
    "--nemo",
    "nemo_files",
    type=InputPath(path_type=Path, dir_okay=False),
    multiple=True,
    help="NEMO float .profile file with [RAFOS_VALUES] (instead of --toa). Repeatable.",
)
@click.option(
    "--argo-aux",
    "argo_file",
    type=InputPath(path_type=Path, dir_okay=False),
    default=None,
    help="Argo trajectory auxiliary NetCDF with TOA/RAW_TOA, COR, RAFOS_STATUS (instead of "
    "--toa); its surface positions become fixes.",
)
@click.option(
    "--seaglider",
    "seaglider_logs",
    type=InputPath(path_type=Path, dir_okay=False),
    multiple=True,
    help="Seaglider dive log with $RAFOS lines (instead of --toa). Repeatable.",
)
@click.option(
    "--index-seconds",
    type=NumberRange(min=0.0, min_open=True),
    default=None,
    help="Seconds per Seaglider arrival index i1..i6 (required with --seaglider).",
)
@click.option(
    "--sources",
    "sources_table",
    type=click.Path(path_type=Path),
    required=True,
    help="Sources table: name, lat, lon and optional offset, drift (s/day), start, end.",
)
@click.option(
    "--fixes",
    "fixes_table",
    type=click.Path(path_type=Path),
    default=None,
    help="Position fixes table (GPS at surfacings): time, lat, lon, error (km), in time order.",
)
@click.option(
    "--meta",
    "meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="launch_lat, launch_lon, launch_time (required), recovery_lat/lon/time, sound_speed, "
    "window_length, clock_offset_launch/recovery/error (float clock ahead of GPS, s), "
    "float_id, attr:NAME. Repeatable.",
)
@click.option(
    "--meta-table",
    type=click.Path(path_type=Path),
    default=None,
    help="The same metadata as a key,value table (as 'float export' writes it); --meta adds to it.",
)
@out_option("The float record to write (NetCDF).", required=True)
@quiet_option
@reports_bad_input
def import_command(
    toa_table: Path | None,
    nemo_files: tuple[Path, ...],
    argo_file: Path | None,
    seaglider_logs: tuple[Path, ...],
    index_seconds: float | None,
    sources_table: Path,
    fixes_table: Path | None,
    meta: tuple[str, ...],
    meta_table: Path | None,
    out: Path,
    quiet: bool,
) -> None:
    """Build a float record from arrivals (a TOA table, NEMO .profile files, an Argo
    trajectory auxiliary file or Seaglider logs), a sources table and metadata; write it to
    FILE.

    Without a sound_speed in the metadata, a record with temperature and pressure gets the
    TEOS-10 sound speed of the float's water (median over the cycles). Every problem in a file
    is one line naming the file, the line or variable (exit 2).
    """
    arrivals = [p for p in (toa_table, argo_file) if p] + [*nemo_files, *seaglider_logs]
    given = [bool(toa_table), bool(nemo_files), bool(argo_file), bool(seaglider_logs)]
    if sum(given) != 1:
        raise BadInput("expected the arrivals from one of --toa, --nemo, --argo-aux, --seaglider")
    if seaglider_logs and index_seconds is None:
        raise BadInput("--seaglider: expected --index-seconds (seconds per arrival index)")
    inputs = [*arrivals, sources_table, *(p for p in (meta_table, fixes_table) if p)]
    refuse_to_overwrite(out, inputs)
    pairs = read_meta_table(meta_table) if meta_table is not None else []
    pairs += [_meta_pair(item) for item in meta]
    dropped = 0
    meta_values = parse_meta(pairs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WindowStretchedWarning)
        if toa_table is not None:
            record = record_from_tables(toa_table, sources_table, meta_values, fixes_table)
        else:
            if nemo_files:
                decoded = read_nemo_profiles(nemo_files)
            elif argo_file is not None:
                decoded = read_argo_aux(argo_file)
            else:
                decoded = read_seaglider_logs(seaglider_logs, float(index_seconds))
            dropped = decoded.dropped
            record = record_from_arrivals(
                decoded.arrivals,
                arrivals[0],
                sources_table,
                meta_values,
                fixes_table,
                decoded.fixes,
            )
    speed = ""
    start = starting_sound_speed(record)
    if "sound_speed" not in meta_values and start.origin == "sensors":
        note = f"TEOS-10 from the float's temperature and pressure, median of {start.cycles}"
        record["sound_speed"] = ((), start.value, {**record["sound_speed"].attrs, "comment": note})
        speed = f", sound speed {start.value:.1f} m/s from the float's temperature and pressure"
    for note in caught:
        if issubclass(note.category, WindowStretchedWarning):
            click.echo(f"warning: {note.message}", err=True)
        else:
            warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    with atomic_path(out) as tmp:
        write_float(record, tmp, "rankmodels float import")
    fixes = f", {count(record.sizes['fix'], 'fix', 'fixes')}" if "fix_time" in record else ""
    bad = f", {count(dropped, 'sample')} dropped for a bad RAFOS status" if dropped else ""
    status(
        f"{count(record.sizes['cycle'], 'cycle')}, {count(record.sizes['rank'], 'rank')}, "
        f"{count(record.sizes['source'], 'source')}{fixes}{bad}{speed}; wrote {out}",
        quiet,
    )


@float_group.command("export")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@out_option(
    "Folder for toa.csv, sources.csv, meta.csv and, for a record with fixes, fixes.csv.",
    folder=True,
    required=True,
)
@quiet_option
@reports_bad_input
def export_command(file: Path, out: Path, quiet: bool) -> None:
    """Write the TOA table (wide), the sources table, the metadata table and, when the
    record has position fixes, the fixes table of the float record FILE into OUT; 'float
    import' reads them back into the same record."""
    for name in TABLE_FILES.values():
        refuse_to_overwrite(out / name, [file])
    written = export_tables(read_float(file), out)
    status(f"wrote {out}/: {', '.join(written)}", quiet)
