"""Quality checks of ``track-float`` on varied simulated worlds: false alarms and detections.

Intact floats are drawn by :func:`rankmodels.tracking.worlds.draw_world` across the ranges
real records span (length 10-730 days, sigma 2-8 s, P_D 0.6-0.97 constant or falling with
range and per source, clutter 0.3-3 per window, multipath 0-8 %, with and without the
sample's geometric mismatch; ``docs/validation.md``, "Quality checks on varied worlds"). Broken
floats are drawn the same way and then broken by
:func:`rankmodels.tracking.worlds.break_record` (a 120-cycle gap, the file's sound speed 10 %
wrong tracked with ``--no-calibrate``, shuffled source positions, the launch position 100 km
off). Every float is tracked as ``track-float`` tracks it (calibrated, ``--multipath 0.02``,
the command's defaults apart from ``--particles``); intact floats also with
``--no-calibrate``.

Printed (markdown): the share of intact floats passing every check (what ``--strict`` needs),
each check's false-alarm rate on intact floats and detection rate per broken kind, and per
float the track error (median km, calibrated and not) and the estimates the track carries
against the truth. Every row goes to ``OUT.csv`` and, with the rates, ``OUT.json``.

``--short``: the short-record criterion instead: exact-parameter floats (the sample's model
without mismatch) of 10, 15, 30 and 60 days, ``--seeds`` each, calibrated against
``--no-calibrate``: the ratio of the median errors per length.

Each float depends only on (``--seed``, its kind, its index), so rows are reproducible one by
one and the same with ``--workers`` (a dask ``LocalCluster``) as serially.

    python benchmarks/quality.py [--n 100] [--broken 25] [--seed 0] [--particles 10000]
        [--workers K] [--out /tmp/rankmodels-quality] [--quick] [--calibration-particles N]
        [--motion lagrangian]
    python benchmarks/quality.py --short [--seeds 5] [--particles 10000]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from rankmodels.tracking.calibration import CALIBRATION_PARAMS
from rankmodels.tracking.config import COMMAND_MULTIPATH, MOTIONS, TrackConfig
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels.tracking.worlds import (
    BROKEN_KINDS,
    GAP_MIN_CYCLES,
    RANGES,
    World,
    break_record,
    draw_world,
    simulate_world,
    true_parameters,
)

INTACT = "intact"
SHORT = "short"
#: Stream of each kind in the seed sequence ``(seed, stream, index)``.
STREAMS = {INTACT: 0, **{kind: 1 + k for k, kind in enumerate(BROKEN_KINDS)}, SHORT: 9}
SHORT_DAYS = (10, 15, 30, 60)
#: What a track may estimate, each with the names its variable may have in ``track.nc``.
ESTIMATES = {
    "sound_speed": ("sound_speed",),
    "clock_drift": ("clock_drift",),
    "sigma": ("sigma",),
    "p_detect": ("p_detect",),
    "clutter_rate": ("clutter_rate",),
    "multipath": ("multipath",),
    "process_noise": ("process_noise", "process_noise_km"),
}


@dataclass(frozen=True)
class Task:
    """One float: ``kind`` (intact, a broken kind, or short), ``index`` within its kind,
    ``seed`` of the whole benchmark, ``particles``; ``days`` only for short floats."""

    kind: str
    index: int
    seed: int
    particles: int
    days: int = 0
    calibrate_params: str = ",".join(CALIBRATION_PARAMS)
    uncalibrated: bool = True
    calibration_particles: int | None = None
    motion: str = TrackConfig().motion


def command_config(
    particles: int,
    seed: int,
    calibrate_params: str = ",".join(CALIBRATION_PARAMS),
    calibration_particles: int | None = None,
    motion: str = TrackConfig().motion,
) -> TrackConfig:
    """``track-float``'s settings (calibrated, ``--multipath`` ``COMMAND_MULTIPATH``), with
    ``--calibrate-params`` ``calibrate_params``, ``--calibration-particles``
    ``calibration_particles`` (None: the command's default) and ``--motion`` ``motion``."""
    return TrackConfig(
        particles=particles,
        seed=seed,
        calibrate=True,
        multipath=COMMAND_MULTIPATH,
        calibrate_params=calibrate_params,
        calibration_particles=calibration_particles,
        motion=motion,
    )


def _mean(values: np.ndarray) -> float:
    """Mean of the finite values (NaN when none)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else math.nan


def _estimates(track: xr.Dataset) -> dict[str, float]:
    """``est_NAME`` (and ``est_NAME_std``) of every :data:`ESTIMATES` variable the track
    holds (a per-source variable by its mean over the sources); absent ones are left out."""
    out: dict[str, float] = {}
    for name, candidates in ESTIMATES.items():
        var = next((v for v in candidates if v in track.data_vars), None)
        if var is None:
            continue
        out[f"est_{name}"] = _mean(track[var].values)
        if f"{var}_std" in track.data_vars:
            out[f"est_{name}_std"] = _mean(track[f"{var}_std"].values)
    return out


def _run(record: xr.Dataset, truth: xr.Dataset, config: TrackConfig) -> dict[str, object]:
    """Track ``record`` with ``config``: error against ``truth``, the checks (``CHECK`` value,
    ``CHECK_passed`` 1 / 0 / -1 not computed, ``failed`` names, ``passed_all``), the
    estimates, what was calibrated and the run time."""
    track, summary = track_float(record, config)
    score = score_track(track, truth)
    row: dict[str, object] = {
        "median_km": score["median_km"],
        "p90_km": score["p90_km"],
        "arrivals_right": score["arrivals_right"],
        "passed_all": not summary.failed_checks,
        "failed": ",".join(c.name for c in summary.failed_checks),
        "calibrated": str(track.attrs.get("calibrated", "")),
        "run_time_s": summary.run_time_s,
    }
    for check in summary.quality:
        row[check.name] = check.value
        row[f"{check.name}_passed"] = {True: 1, False: 0, None: -1}[check.passed]
    return row | _estimates(track)


def _calibrated_and_not(
    record: xr.Dataset, truth: xr.Dataset, config: TrackConfig
) -> dict[str, object]:
    """:func:`_run` with ``config`` (calibrated) and the median error with ``--no-calibrate``
    as ``median_km_nocal``."""
    uncalibrated = _run(record, truth, replace(config, calibrate=False))
    return _run(record, truth, config) | {"median_km_nocal": uncalibrated["median_km"]}


def float_row(
    kind: str,
    world: World,
    rng: np.random.Generator,
    config: TrackConfig,
    uncalibrated: bool = True,
) -> dict[str, object]:
    """The row of one float of ``world``: intact (tracked calibrated and with
    ``--no-calibrate``) or broken as ``kind`` with ``rng``: its settings, the true parameters
    (``true_NAME``), what was broken (``breakage``) and the run's fields (:func:`_run`);
    ``config``: the calibrated settings (the world's seed replaces its seed);
    ``uncalibrated``: also track intact floats with ``--no-calibrate``."""
    record, truth = simulate_world(world)
    config = replace(config, seed=world.seed)
    row: dict[str, object] = {"kind": kind, **world.row()}
    row |= {f"true_{k}": v for k, v in true_parameters(world, record, truth).items()}
    if kind == INTACT:
        if not uncalibrated:
            return row | _run(record, truth, config) | {"median_km_nocal": math.nan}
        return row | _calibrated_and_not(record, truth, config)
    broken = break_record(record, kind, rng)
    row["breakage"] = broken.note
    return row | _run(broken.record, truth, replace(config, **broken.config))


def short_row(seed: int, days: int, config: TrackConfig) -> dict[str, object]:
    """The row of one exact-parameter float (the sample's model, no mismatch) of ``days``
    days simulated with ``seed``: the calibrated run and ``median_km_nocal``."""
    record, truth = dimes_float767(seed, days=days)
    record = validate_float(record)
    config = replace(config, seed=seed)
    row: dict[str, object] = {"kind": SHORT, "seed": seed, "days": days}
    return row | _calibrated_and_not(record, truth, config)


def task_rng(task: Task) -> np.random.Generator:
    """The generator of everything random in one task: seeded by ``(seed, STREAMS[kind],
    index, days)``, so floats of different kinds and indices are independent."""
    return np.random.default_rng([task.seed, STREAMS[task.kind], task.index, task.days])


def run_task(task: Task) -> dict[str, object]:
    """The row of one :class:`Task` (its world drawn from :func:`task_rng`), ``index`` added."""
    rng = task_rng(task)
    config = command_config(
        task.particles, task.seed, task.calibrate_params, task.calibration_particles, task.motion
    )
    if task.kind == SHORT:
        row = short_row(int(rng.integers(2**31)), task.days, config)
    else:
        long_enough = (GAP_MIN_CYCLES + 1, RANGES["days"][1]) if task.kind == "gap" else None
        world = draw_world(rng, days=long_enough)
        row = float_row(task.kind, world, rng, config, task.uncalibrated)
    return {"index": task.index, **row}


def tasks_for(args: argparse.Namespace) -> list[Task]:
    """The floats the arguments ask for."""
    params, em, motion = args.calibrate_params, args.calibration_particles, args.motion
    if args.short:
        return [
            Task(
                SHORT,
                i,
                args.seed,
                args.particles,
                days,
                params,
                calibration_particles=em,
                motion=motion,
            )  # fmt: skip
            for days in SHORT_DAYS
            for i in range(args.seeds)
        ]
    nocal = not args.calibrated_only
    intact = [
        Task(INTACT, i, args.seed, args.particles, 0, params, nocal, em, motion)
        for i in range(args.n)
    ]
    broken = [
        Task(
            kind, i, args.seed, args.particles, 0, params, calibration_particles=em, motion=motion
        )  # fmt: skip
        for kind in BROKEN_KINDS
        for i in range(args.broken)
    ]
    return intact + broken


def run_all(tasks: list[Task], workers: int | None, rows_path: Path | None = None) -> pd.DataFrame:
    """Rows of every task, serially or on a dask ``LocalCluster`` of ``workers`` processes
    (one thread each), in task order; one progress line per float on stderr and, with
    ``rows_path``, each row as one JSON line appended there as it completes (an interrupted
    run keeps the floats it finished)."""
    started = time.perf_counter()
    if rows_path is not None:
        rows_path.write_text("")

    def report(row: dict[str, object], done: int) -> None:
        if rows_path is not None:
            with rows_path.open("a") as handle:
                handle.write(json.dumps(_json_ready(row)) + "\n")
        print(
            f"[{done}/{len(tasks)} {time.perf_counter() - started:.0f} s] {row['kind']} "
            f"{row['index']}: {row['days']} days, median {row['median_km']:.2f} km, "
            f"failed: {row['failed'] or '-'}",
            file=sys.stderr,
            flush=True,
        )

    if workers is None:
        rows = []
        for task in tasks:
            rows.append(run_task(task))
            report(rows[-1], len(rows))
        return pd.DataFrame(rows)
    from dask.distributed import Client, LocalCluster, as_completed

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1) as cluster,
        Client(cluster) as client,
    ):
        futures = client.map(run_task, tasks, pure=False)
        for done, future in enumerate(as_completed(futures), 1):
            report(future.result(), done)
        rows = [future.result() for future in futures]
    return pd.DataFrame(rows)


def check_names(table: pd.DataFrame) -> list[str]:
    """The checks the rows hold, in column order."""
    return [c[: -len("_passed")] for c in table.columns if c.endswith("_passed")]


def rates(table: pd.DataFrame) -> dict[str, object]:
    """The measurement: ``intact_pass`` (share of intact floats passing every check),
    ``false_alarm[check]`` (share of intact floats where it failed), ``not_computed[check]``
    (share of intact floats where it was not computed), ``detection[kind]`` (share of that
    kind's floats failing some check) and ``detection_by_check[kind][check]``, with the
    counts ``n_intact`` and ``n_broken[kind]``."""
    intact = table[table["kind"] == INTACT]
    checks = check_names(table)
    out: dict[str, object] = {
        "n_intact": len(intact),
        "intact_pass": float(intact["passed_all"].mean()) if len(intact) else math.nan,
        "false_alarm": {c: float((intact[f"{c}_passed"] == 0).mean()) for c in checks},
        "not_computed": {c: float((intact[f"{c}_passed"] == -1).mean()) for c in checks},
        "n_broken": {},
        "detection": {},
        "detection_by_check": {},
    }
    for kind in BROKEN_KINDS:
        part = table[table["kind"] == kind]
        if not len(part):
            continue
        out["n_broken"][kind] = len(part)
        out["detection"][kind] = float((~part["passed_all"].astype(bool)).mean())
        out["detection_by_check"][kind] = {
            c: float((part[f"{c}_passed"] == 0).mean()) for c in checks
        }
    return out


def short_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Per length of the short floats: the median over seeds of the calibrated and the
    uncalibrated median error (km), their ratio, and the largest per-seed ratio."""
    part = table[table["kind"] == SHORT].assign(
        ratio=lambda t: t["median_km"] / t["median_km_nocal"]
    )
    return (
        part.groupby("days")
        .agg(
            seeds=("index", "size"),
            calibrated_km=("median_km", "median"),
            uncalibrated_km=("median_km_nocal", "median"),
            worst_ratio=("ratio", "max"),
        )
        .assign(ratio=lambda t: t["calibrated_km"] / t["uncalibrated_km"])
    )


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %" if math.isfinite(value) else "–"


def _num(value: object, digits: int = 2) -> str:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    return f"{number:.{digits}f}" if math.isfinite(number) else "–"


def markdown_rates(result: dict[str, object]) -> str:
    """The rates as two markdown tables: the summary, then each check against each kind."""
    kinds = list(result["detection"])
    lines = [
        f"intact floats passing every check: {_pct(result['intact_pass'])} of {result['n_intact']}",
        "",
        "| check | false alarms (intact) | not computed (intact) | "
        + " | ".join(f"detects {k} ({result['n_broken'][k]})" for k in kinds)
        + " |",
        "|---|---|---|" + "---|" * len(kinds),
    ]
    for check in result["false_alarm"]:
        detected = " | ".join(_pct(result["detection_by_check"][k][check]) for k in kinds)
        lines.append(
            f"| `{check}` | {_pct(result['false_alarm'][check])} | "
            f"{_pct(result['not_computed'][check])} | {detected} |"
        )
    any_check = " | ".join(_pct(result["detection"][k]) for k in kinds)
    lines.append(f"| any check | {_pct(1 - result['intact_pass'])} | | {any_check} |")
    return "\n".join(lines)


def markdown_worlds(table: pd.DataFrame) -> str:
    """Per intact float: its world, track error calibrated and not, failed checks, and each
    estimate the tracks carry against the truth (``est (true)``)."""
    intact = table[table["kind"] == INTACT]
    names = [n for n in ESTIMATES if f"est_{n}" in intact.columns]
    head = "| # | days | traj | sigma | P_D near/far | lambda | multipath | geometric | "
    head += "median km | no-calibrate km | failed | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for _, r in intact.iterrows():
        estimates = " | ".join(
            f"{_num(r[f'est_{n}'], 3)} ({_num(r[f'true_{n}'], 3)})" for n in names
        )
        lines.append(
            f"| {r['index']} | {r['days']} | {r['trajectory']} | {r['sigma']:.1f} | "
            f"{r['p_detect']:.2f}/{r['p_detect_far']:.2f} | {r['clutter_rate']:.2f} | "
            f"{100 * r['multipath']:.1f} % | {'yes' if r['geometric'] else 'no'} | "
            f"{r['median_km']:.2f} | {r['median_km_nocal']:.2f} | {r['failed'] or '–'} | "
            f"{estimates} |"
        )
    return "\n".join(lines)


def markdown_short(ratios: pd.DataFrame) -> str:
    """The short-record table."""
    lines = [
        "| days | seeds | calibrated median km | --no-calibrate median km | ratio | worst seed |",
        "|---|---|---|---|---|---|",
    ]
    for days, r in ratios.iterrows():
        lines.append(
            f"| {days} | {int(r['seeds'])} | {r['calibrated_km']:.2f} | {r['uncalibrated_km']:.2f} "
            f"| {r['ratio']:.2f} | {r['worst_ratio']:.2f} |"
        )
    return "\n".join(lines)


def _json_ready(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _json_ready(value.item())
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="intact floats")
    parser.add_argument("--broken", type=int, default=25, help="floats per broken kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--particles", type=int, default=TrackConfig().particles)
    parser.add_argument("--workers", type=int, default=None, help="dask worker processes")
    parser.add_argument("--out", type=Path, default=None, help="OUT.csv and OUT.json")
    parser.add_argument(
        "--quick", action="store_true", help="10 intact, 2 per broken kind, 1,000 particles"
    )
    parser.add_argument("--short", action="store_true", help="the short-record measurement")
    parser.add_argument("--seeds", type=int, default=5, help="--short: floats per length")
    parser.add_argument(
        "--calibrate-params",
        default=",".join(CALIBRATION_PARAMS),
        help="what the calibrated runs estimate (track-float --calibrate-params)",
    )
    parser.add_argument(
        "--calibration-particles",
        type=int,
        default=None,
        help="the EM's particles (track-float --calibration-particles) [default: the command's]",
    )
    parser.add_argument(
        "--motion",
        choices=MOTIONS,
        default=TrackConfig().motion,
        help="track-float --motion",
    )
    parser.add_argument(
        "--calibrated-only",
        action="store_true",
        help="track intact floats only as track-float does (not also with --no-calibrate)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.broken, args.particles, args.seeds = 10, 2, 1000, 2
    mode = "short" if args.short else "quality"
    out = args.out or Path(f"/tmp/rankmodels-{mode}-seed{args.seed}")
    tasks = tasks_for(args)
    started = time.perf_counter()
    table = run_all(tasks, args.workers, out.with_suffix(".rows.jsonl"))
    wall = time.perf_counter() - started
    print(
        f"{len(tasks)} floats, {args.particles} particles, seed {args.seed}, "
        f"{args.workers or 'no'} dask workers, {wall:.0f} s wall\n"
    )
    if args.short:
        ratios = short_ratios(table)
        print(markdown_short(ratios))
        summary: dict[str, object] = {"short": ratios.reset_index().to_dict(orient="records")}
    else:
        summary = rates(table)
        print(markdown_rates(summary))
        print()
        print(markdown_worlds(table))
    table.to_csv(out.with_suffix(".csv"), index=False)
    rows = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    document = {"args": {k: str(v) for k, v in vars(args).items()}, **summary, "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(_json_ready(document), indent=1))
    print(
        f"\nrows: {out.with_suffix('.csv')}, {out.with_suffix('.json')} "
        f"(as they completed: {out.with_suffix('.rows.jsonl')})",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
