"""Track a whole experiment: many float records, one output folder each, on Dask or serially.

:func:`track_many` runs :func:`track_one` for every record -- read, then :func:`track_file`:
track, write ``track.nc`` and (given a ``figures`` writer) the figures and the report, as the
single-float command does -- serially in this process or
as tasks on a ``dask.distributed`` client (:func:`rankmodels.studies.runner.dask_client`
makes one). On Dask every task runs its kernels on :func:`worker_threads` numba threads
(by default the cores of a host divided among the Dask threads on it, so the workers never
run more busy threads than cores) and with the thread policy of :mod:`rankmodels.threads`. A
float that fails (a bad file, an error in tracking) becomes a row with status
``"failed"`` and its one-line reason; the others go on. The result is the summary table, one
row per float in input order (:data:`SUMMARY_COLUMNS`), which :func:`write_summary` writes as
``summary.csv`` and ``summary.json``.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from rankmodels import jsontext
from rankmodels.errors import InputError
from rankmodels.files import atomic_output, atomic_path, remove_partial
from rankmodels.text import printable
from rankmodels.threads import numba_threads, prepare_environment
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.manifest import (
    MANIFEST_FILE,
    Check,
    check_manifest,
    float_manifest,
    write_manifest,
)
from rankmodels.tracking.output import write_track
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import InvalidLabelsWarning, WindowStretchedWarning, read_float
from rankmodels.tracking.schema import MOTION_QUANTITIES
from rankmodels.tracking.shared import FloatCalibration
from rankmodels.tracking.summary import TrackSummary

__all__ = [
    "SUMMARY_COLUMNS",
    "SUMMARY_DECIMALS",
    "SUMMARY_FILES",
    "TRACK_FILE",
    "float_folders",
    "read_record",
    "resume_checks",
    "track_file",
    "track_many",
    "track_one",
    "worker_threads",
    "write_summary",
]

TRACK_FILE = "track.nc"
SUMMARY_FILES = ("summary.csv", "summary.json")
OK, FAILED = "ok", "failed"
CALIBRATED = (
    "sound_speed",
    "clock_offset",
    "clock_drift",
    "sigma",
    "p_detect",
    "clutter_rate",
    "multipath",
    "multipath_delay",
    "process_noise",
)
#: The Lagrangian motion's parameters and statistics (``--motion lagrangian``; empty for the
#: random walk): mean velocity (km/day), eddy speed (km/day), time scale (days), eddy kinetic
#: energy (m^2/s^2), diffusivity (m^2/s).
LAGRANGIAN = MOTION_QUANTITIES
SUMMARY_COLUMNS: dict[str, str] = {
    "float": "name of the float's output folder (the record's file name without .nc)",
    "status": f"{OK!r} or {FAILED!r}",
    "reason": "why it failed, one line ('' when ok)",
    "warning": "the reader's warning about hand labels it dropped ('' for none)",
    "file": "the float record",
    "float_id": "the record's float_id attribute",
    "cycles": "listening cycles",
    "arrivals": "recorded arrivals",
    "run_time_s": "wall time of this float: reading, tracking, writing (s)",
    "mean_ess": "mean effective sample size of the forward filter",
    "clutter_fraction": "share of arrivals whose most probable origin is clutter",
    "collapsed_cycles": "cycles where the filter collapsed",
    "end_distance_km": "great-circle distance from the filtered end point to the recovery fix",
    "quality": "'passed', or the names of the failed quality checks",
    "quality_failed": "number of failed quality checks",
    "calibrated": "what the calibration changed from its starting values (comma-separated "
    "--calibrate-params names; '' for nothing)",
    **{name: f"{name} the track used (estimated, or its starting value)" for name in CALIBRATED},
    **{f"{name}_std": f"standard error of {name} (NaN where not estimated)" for name in CALIBRATED},
    **{name: f"{name} of the Lagrangian motion (NaN with the random walk)" for name in LAGRANGIAN},
    **{f"{name}_std": f"standard error of {name} (NaN where not estimated)" for name in LAGRANGIAN},
}
"""Columns of the summary table and their meaning (NaN / '' where a float failed)."""

_PARAMETER_DECIMALS = {
    "sound_speed": 2,
    "clock_offset": 3,
    "clock_drift": 5,
    "sigma": 3,
    "p_detect": 4,
    "clutter_rate": 3,
    "multipath": 4,
    "multipath_delay": 2,
    "process_noise": 3,
    "mean_velocity_east": 3,
    "mean_velocity_north": 3,
    "eddy_speed": 3,
    "time_scale": 2,
    "eddy_kinetic_energy": 6,
    "diffusivity": 1,
}
SUMMARY_DECIMALS: dict[str, int] = {
    "run_time_s": 2,
    "mean_ess": 1,
    "clutter_fraction": 4,
    "end_distance_km": 2,
    **_PARAMETER_DECIMALS,
    **{f"{name}_std": digits for name, digits in _PARAMETER_DECIMALS.items()},
}
"""Decimals kept in ``summary.csv`` / ``summary.json`` for the real-valued columns: a hundredth
of what the reports show (10 ms, 0.1 particle, 0.01 %, 10 m, 0.01 m/s, ...), so the files hold
what the numbers mean without binary noise (17.303141077999953 s is 17.3 s)."""

COUNT_COLUMNS = ("cycles", "arrivals", "collapsed_cycles", "quality_failed")
"""Integer columns (pandas ``Int64``: empty for a failed float)."""

Progress = Callable[[int], None] | None
#: ``figures(out, file, record, track, summary)`` writes a float's figures and report into
#: ``out`` and returns their names (e.g. :func:`rankmodels.plots.run_report.float_figures`;
#: module-level, so that it reaches Dask workers).
Figures = Callable[[Path, str, xr.Dataset, xr.Dataset, TrackSummary], list[str]]


def float_folders(files: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The output folder name of each record: its file name without the ``.nc`` suffix.
    ValueError when two records would share a folder."""
    names = [Path(f).name.removesuffix(".nc") or Path(f).name for f in files]
    seen: dict[str, str] = {}
    for name, file in zip(names, files, strict=True):
        if name in seen:
            raise ValueError(
                f"{os.fspath(file)} and {seen[name]} would both write to the folder {name!r}; "
                "rename one of them"
            )
        seen[name] = os.fspath(file)
    return names


def _empty_row(file: str, name: str) -> dict[str, Any]:
    row: dict[str, Any] = {column: math.nan for column in SUMMARY_COLUMNS}
    row.update(
        float=name,
        file=file,
        status=FAILED,
        reason="",
        warning="",
        float_id="",
        quality="",
        calibrated="",
    )
    return row


def read_record(
    file: str | os.PathLike[str], labels_required: bool = False
) -> tuple[xr.Dataset, str]:
    """The validated record of ``file`` (:func:`~rankmodels.tracking.records.read_float`;
    hand labels checked strictly only when ``labels_required``) and the reader's notes, one
    line naming the file ('' when none): its
    :class:`~rankmodels.tracking.records.InvalidLabelsWarning` about inconsistent hand labels
    it dropped and :class:`~rankmodels.tracking.records.WindowStretchedWarning` about a
    listening window it stretched."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InvalidLabelsWarning)
        warnings.simplefilter("always", WindowStretchedWarning)
        record = read_float(file, labels_required=labels_required)
    notes = [
        str(w.message)
        for w in caught
        if issubclass(w.category, (InvalidLabelsWarning, WindowStretchedWarning))
    ]
    return record, "; ".join(notes)


def end_distance_km(record: xr.Dataset, track: xr.Dataset) -> float:
    """Great-circle distance (km) from the last finite filtered position
    (``lat_filtered``/``lon_filtered``) to the recovery fix; NaN without either."""
    if "recovery_lat" not in record or "lat_filtered" not in track:
        return math.nan
    lat = np.asarray(track["lat_filtered"].values, dtype=float)
    lon = np.asarray(track["lon_filtered"].values, dtype=float)
    ok = np.flatnonzero(np.isfinite(lat) & np.isfinite(lon))
    if ok.size == 0:
        return math.nan
    return float(
        great_circle_km(
            lat[ok[-1]],
            lon[ok[-1]],
            float(record["recovery_lat"].values),
            float(record["recovery_lon"].values),
        )
    )


def summary_row(
    row: dict[str, Any], record: xr.Dataset, track: xr.Dataset, summary: TrackSummary
) -> dict[str, Any]:
    """``row`` filled from a finished run (status ok)."""
    failed = [c.name for c in summary.failed_checks]
    row.update(
        status=OK,
        float_id=printable(record.attrs.get("float_id", "")),
        cycles=summary.cycles,
        arrivals=summary.arrivals,
        mean_ess=summary.mean_ess,
        clutter_fraction=summary.clutter_fraction,
        collapsed_cycles=len(summary.collapsed_cycles),
        end_distance_km=end_distance_km(record, track),
        quality=", ".join(failed) if failed else "passed",
        quality_failed=len(failed),
        calibrated=str(track.attrs.get("calibrated", "")),
    )
    for name in (*CALIBRATED, *LAGRANGIAN):
        for column in (name, f"{name}_std"):
            if column in track.data_vars:
                row[column] = float(track[column].values)
    return row


@dataclass(frozen=True)
class Tracked:
    """A float tracked into its folder: the ``record`` as tracked (with its experiment's
    share applied), the ``track``, the run's ``summary`` and the files ``written``."""

    record: xr.Dataset
    track: xr.Dataset
    summary: TrackSummary
    written: list[str]


def track_file(
    record: xr.Dataset,
    file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: TrackConfig,
    *,
    calibration: FloatCalibration | None = None,
    progress: Progress = None,
    figures: Figures | None = None,
) -> Tracked:
    """Track ``record`` (read from ``file``) into the folder ``out``: ``track.nc``
    (atomically), then ``figures``. ``calibration``: the float's share of its experiment's
    joint calibration, tracked with (and recorded in ``track.nc``) instead of its own;
    ``progress`` as :func:`~rankmodels.tracking.pipeline.track_float` calls it."""
    if calibration is None:
        track, summary = track_float(record, config, progress=progress)
    else:
        record = calibration.apply(record)
        result = calibration.result
        track, summary = track_float(record, config, progress=progress, calibration=result)
        track = calibration.annotate(track)
    track.attrs["source_file"] = os.fspath(file)
    with atomic_path(Path(out) / TRACK_FILE) as tmp:
        write_track(track, tmp)
    written = [TRACK_FILE]
    if figures is not None:
        written += figures(Path(out), os.fspath(file), record, track, summary)
    return Tracked(record, track, summary, written)


def track_one(
    file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: TrackConfig,
    figures: Figures | None = None,
    name: str | None = None,
    calibration: FloatCalibration | None = None,
) -> dict[str, Any]:
    """Read the record ``file`` and track it into folder ``out`` (:func:`track_file`), then
    write the folder's manifest (:mod:`~rankmodels.tracking.manifest`; removed first, with
    any temporary file a killed run left, :func:`~rankmodels.files.remove_partial`, so a
    float interrupted on the way has none); the summary row (:data:`SUMMARY_COLUMNS`). Never
    raises for a bad float: an :class:`~rankmodels.errors.InputError` or file-system error is
    the row's one-line ``reason``, any other exception ``"internal error: Type: message"``;
    the reader's warning about dropped hand labels (:func:`read_record`) is the row's
    ``warning``."""
    started = time.perf_counter()
    file = os.fspath(file)
    row = _empty_row(file, name if name is not None else Path(out).name)
    try:
        (Path(out) / MANIFEST_FILE).unlink(missing_ok=True)
        remove_partial(out)  # what a killed run left half-written
        manifest = float_manifest(
            file, config, figures=figures is not None, calibration=calibration
        )
        record, row["warning"] = read_record(file, labels_required=config.engine == "labels")
        done = track_file(record, file, out, config, calibration=calibration, figures=figures)
        summary_row(row, done.record, done.track, done.summary)
        row["run_time_s"] = time.perf_counter() - started
        write_manifest(out, manifest, done.written, row)
    except InputError as err:
        row["reason"] = str(err.with_path(file))
    except OSError as err:
        row["reason"] = f"{err.filename or file}: {err.strerror or err}"
    except Exception as err:  # noqa: BLE001 - one float's bug must not stop the others
        row["reason"] = f"{file}: internal error: {type(err).__name__}: {err}"
    row["reason"] = " ".join(printable(row["reason"]).split())
    if row["status"] == FAILED:
        row["run_time_s"] = time.perf_counter() - started
    return row


def resume_checks(
    files: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    config: TrackConfig,
    *,
    figures: bool,
    calibrations: Sequence[FloatCalibration | None] | None = None,
) -> list[Check]:
    """For each record of ``files``, whether its folder under ``out`` (:func:`float_folders`)
    is complete under the same inputs and settings (:func:`~rankmodels.tracking.manifest.
    check_manifest`; ``figures``: whether figures are asked for, ``calibrations`` each
    float's share of a joint calibration). A record that cannot be read is not complete."""
    joint = list(calibrations) if calibrations is not None else [None] * len(files)
    checks = []
    for file, name, calibration in zip(files, float_folders(files), joint, strict=True):
        try:
            wanted = float_manifest(file, config, figures=figures, calibration=calibration)
        except OSError as err:
            checks.append(Check(False, f"cannot read the record ({err.strerror or err})"))
            continue
        checks.append(check_manifest(Path(out) / name, wanted))
    return checks


def track_many(
    files: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    config: TrackConfig | None = None,
    *,
    figures: Figures | None = None,
    client: Any | None = None,
    threads: int | None = None,
    progress: Progress = None,
    calibrations: Sequence[FloatCalibration] | None = None,
    kept: Sequence[dict[str, Any] | None] | None = None,
) -> pd.DataFrame:
    """Track every record of ``files`` into ``out/NAME/`` (:func:`float_folders`), serially or
    as one task per float on the ``dask.distributed`` ``client``, each task with ``threads``
    numba threads (default :func:`worker_threads`; ignored without a client), each float's
    ``figures`` written by that writer (:data:`Figures`; none without);
    ``progress(1)`` as each float finishes; ``calibrations``: each float's share of the
    experiment's joint calibration (:func:`track_one`); ``kept``: per float the summary row
    of a complete folder to keep as it is (:func:`resume_checks`; None: track it). Returns
    the summary table (:data:`SUMMARY_COLUMNS`, input order). A task lost with its worker is
    a failed row too."""
    config = TrackConfig() if config is None else config
    names = float_folders(files)
    paths = [os.fspath(f) for f in files]
    outs = [os.fspath(Path(out) / name) for name in names]
    joint = list(calibrations) if calibrations is not None else [None] * len(paths)
    rows: list[dict[str, Any] | None] = list(kept) if kept is not None else [None] * len(paths)
    todo = [i for i, row in enumerate(rows) if row is None]
    if client is None:
        for i in todo:
            rows[i] = track_one(paths[i], outs[i], config, figures, names[i], joint[i])
            if progress is not None:
                progress(1)
    elif todo:
        threads = worker_threads(client) if threads is None else threads
        done = _on_dask(
            client, [paths[i] for i in todo], [outs[i] for i in todo], [names[i] for i in todo],
            config, figures, threads, progress, [joint[i] for i in todo],
        )  # fmt: skip
        for i, row in zip(todo, done, strict=True):
            rows[i] = row
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return table.astype(dict.fromkeys(COUNT_COLUMNS, "Int64"))  # counts stay whole with NA


def worker_threads(client: Any) -> int:
    """numba threads per task on ``client``'s workers: on every host, its cores
    (:func:`rankmodels.threads.available_cores`, asked of each worker) divided among the Dask
    threads of the workers running there; the smallest over the hosts, at least 1."""
    from rankmodels.threads import available_cores

    cores = client.run(available_cores)  # worker address -> cores of its host
    per_host: dict[str, list[int]] = {}
    for address, info in client.scheduler_info()["workers"].items():
        if address in cores:
            host = per_host.setdefault(info["host"], [0, cores[address]])
            host[0] += int(info["nthreads"])
    if not per_host:
        return 1
    return max(
        1, min(host_cores // max(1, dask_threads) for dask_threads, host_cores in per_host.values())
    )


def _track_task(
    threads: int,
    file: str,
    out: str,
    config: TrackConfig,
    figures: Figures | None,
    name: str,
    calibration: FloatCalibration | None,
) -> dict[str, Any]:
    """:func:`track_one` on a Dask worker, its kernels on ``threads`` numba threads."""
    prepare_environment()  # before the worker's first parallel kernel (a remote worker's too)
    with numba_threads(threads):
        return track_one(file, out, config, figures, name, calibration)


def _on_dask(
    client: Any,
    paths: list[str],
    outs: list[str],
    names: list[str],
    config: TrackConfig,
    figures: Figures | None,
    threads: int,
    progress: Progress,
    calibrations: list[FloatCalibration | None],
) -> list[dict[str, Any]]:
    from distributed import as_completed

    n = len(paths)
    futures = client.map(
        _track_task, [threads] * n, paths, outs, [config] * n, [figures] * n, names,
        calibrations, pure=False,
    )  # fmt: skip
    index = {future.key: i for i, future in enumerate(futures)}
    rows: list[dict[str, Any] | None] = [None] * len(paths)
    try:
        for future in as_completed(futures, loop=client.loop):  # client is not the default
            i = index[future.key]
            try:
                rows[i] = future.result()
            except Exception as err:  # noqa: BLE001 - a worker died or the task was lost
                rows[i] = _empty_row(paths[i], names[i])
                rows[i]["reason"] = f"{paths[i]}: task failed: {type(err).__name__}: {err}"
            if progress is not None:
                progress(1)
    finally:
        client.cancel([f for f in futures if not f.done()])
    return [r for r in rows if r is not None]


def write_summary(
    table: pd.DataFrame,
    out: str | os.PathLike[str],
    experiment: dict[str, Any] | None = None,
) -> list[str]:
    """Write ``table`` as ``out/summary.csv`` and ``out/summary.json`` (``{"columns": meaning
    of each column, "floats": [row, ...]}``, NaN as null, and with ``experiment`` -- the
    shared estimates of a joint calibration,
    :func:`~rankmodels.tracking.experiment.shared_summary` -- under ``"experiment"``),
    rounded to :data:`SUMMARY_DECIMALS`, atomically; returns the names."""
    folder = Path(out)
    table = table.round({c: d for c, d in SUMMARY_DECIMALS.items() if c in table.columns})
    with atomic_output(folder / SUMMARY_FILES[0], "w") as handle:
        table.to_csv(handle, index=False, lineterminator="\n")
    rows = json.loads(table.to_json(orient="records"))
    with atomic_output(folder / SUMMARY_FILES[1], "w") as handle:
        document = {"columns": SUMMARY_COLUMNS, "floats": rows}
        if experiment is not None:
            document["experiment"] = experiment
        handle.write(jsontext.dumps(document))
    return list(SUMMARY_FILES)
