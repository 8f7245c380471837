"""What the correlation heights buy ``track-float``: association and position error of
simulated DIMES floats tracked with the heights' log-normal source/clutter model, without it,
and with the hard cut ``--min-correlation`` instead.

Each float is :func:`rankmodels.tracking.simulate.dimes_float767` (drifting, the shipped
sample's geometric mismatch ``SAMPLE_MISMATCH``, ``P_D`` falling with range, sigma 5 s) with
correlation heights (``correlations=True``: sources ``Gamma(9, mean 90 -> 60)`` falling with
range, multipath-delayed arrivals 0.7x, clutter ``15 + Gamma(2, mean 20)``), at each clutter
rate of ``--clutter`` (arrivals per 1800 s window; 3 is the "high clutter" of the issue, 1
the simulator's default). Every float is tracked as ``track-float`` tracks it (calibrated,
``--multipath 0.02``, the Lagrangian motion, ``--particles`` the command's 5,000) three ways:

* ``heights``: ``--calibrate-params`` all (the default): the EM fits the heights'
  source/clutter model and each arrival's clutter weight is ``f_C(c) / f_S(c)``;
* ``no heights``: ``--calibrate-params`` without ``correlation``, the heights unused (the same
  track, arrival for arrival, as the record with ``correlation`` dropped);
* ``cut C``: as ``no heights`` plus ``--min-correlation C`` (``--min-correlation``): the
  arrivals below ``C`` are removed before tracking and count as called clutter.

Printed (markdown), per clutter rate and variant: the association accuracy (the fraction of
recorded arrivals whose most probable association, a source or clutter, is the truth's
``true_label``; mean and min over the floats), false alarms (clutter arrivals called a source)
and misses (source arrivals called clutter) as rates of the clutter and source arrivals pooled
over the floats, and likewise the source arrivals given to another source (which the heights
cannot tell apart), the median and 90th-percentile position error (km, each the mean over the
floats; the median's paired difference to ``no heights`` on the same floats, mean ± standard
error), how many floats were lost (median error above :data:`LOST_KM`) and how many failed a
quality check, the estimated clutter rate (mean) and the CPU and wall seconds per float (numba
compile time excluded, each process warmed up on a 10-day float; wall exceeds CPU when the
cores are busy); then one row per float and variant (also the EM's first annealing noise, 20 s
unless those passes lost the float, and whether it kept the file's values; the failed checks);
then the heights' model the ``heights`` runs estimated (log ``c`` mean and spread of source and
clutter arrivals) against the log- moments of the simulated heights by their true label and the
heights-only mixture the EM starts from.

Recorded (at 6f30861, whose annealing passes run without the heights; before it the heights
lost seed 14 at clutter 1): with the heights the false alarms fall from 8.4 to 2.3 % of the
clutter arrivals at clutter 3 and from 10.2 to 3.9 % at clutter 1, misses stay near 1 %, and
the accuracy rises from 93.3 to 94.9 % (every float) and from 94.0 to 94.4 %; the median
error moves by +0.01 ± 0.04 km at clutter 3 and -0.12 ± 0.05 km at clutter 1, at about 1.07x
the CPU. The source arrivals given to the wrong source (about 5 %) are the larger error and the
heights do not change them. The cut at 40 removes about 4 % of the source arrivals (misses),
so its accuracy is 2-5 points below the model's, and seed 14 lost its track with the cut at
both clutter rates (its annealing started at sigma 80; the recovery check failed). The fitted
log-normal matches the simulated heights' log-moments within 0.01; the heights-only mixture
start puts clutter's mean 0.16 high at clutter 1 (few clutter heights), which the EM corrects.

The recorded figures (365-day floats, 16 per clutter rate, 13-17 minutes on 2 cores) came
from:

    python benchmarks/correlation.py --floats 16 --days 365 --workers 2

    python benchmarks/correlation.py [--floats 16] [--days 365] [--clutter 3 1] [--seed 1]
        [--particles 5000] [--min-correlation 40] [--workers 2]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from rankmodels.tracking.calibration import CALIBRATION_PARAMS
from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    COMMAND_PARTICLES,
    TrackConfig,
)
from rankmodels.tracking.correlation import CorrelationModel, apply_min_correlation, log_heights
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL
from rankmodels.tracking.simulate import (
    SAMPLE_MISMATCH,
    SignalSpec,
    dimes_float767,
    range_dependent_detection,
)

HEIGHTS, NO_HEIGHTS = "heights", "no heights"
#: A float is counted lost when its track's median error exceeds this (km; the tracked
#: floats' medians are 3-5 km).
LOST_KM = 20.0
#: Days of the float each process tracks before its first (:func:`warm_up`).
WARM_UP_DAYS = 10
#: The heights' model fields of a track (``correlation_<part>_<stat>``), in printed order.
MODEL_FIELDS = ("source_mean", "source_spread", "clutter_mean", "clutter_spread")


@dataclass(frozen=True)
class Task:
    """One float: its seed and clutter rate, the record length and the tracker's settings."""

    seed: int
    clutter_rate: float
    days: int
    particles: int
    min_correlation: float | None


def variants(task: Task) -> dict[str, TrackConfig]:
    """The configurations compared on one float (module docstring)."""
    heights = TrackConfig(
        particles=task.particles,
        seed=task.seed,
        calibrate=True,
        multipath=COMMAND_MULTIPATH,
        motion=COMMAND_MOTION,
    )
    no_heights = replace(heights, calibrate_params=frozenset(CALIBRATION_PARAMS) - {"correlation"})
    out = {HEIGHTS: heights, NO_HEIGHTS: no_heights}
    if task.min_correlation is not None:
        out[f"cut {task.min_correlation:g}"] = replace(
            no_heights, min_correlation=task.min_correlation
        )
    return out


def simulate(task: Task) -> tuple[xr.Dataset, xr.Dataset]:
    """The float of ``task`` and its truth."""
    spec = SignalSpec(p_detect=range_dependent_detection(), clutter_rate=task.clutter_rate)
    return dimes_float767(
        task.seed, days=task.days, spec=spec, mismatch=SAMPLE_MISMATCH, correlations=True
    )


def recorded_association(track: xr.Dataset, record: xr.Dataset, config: TrackConfig) -> np.ndarray:
    """The track's most probable association of each arrival of ``record`` (cycle, rank), in
    the record's ranks: with ``min_correlation`` the track holds the arrivals kept, moved up
    the ranks (:func:`~rankmodels.tracking.correlation.apply_min_correlation`, applied here to
    the rank numbers to map them back), and the arrivals cut are called clutter."""
    assoc = track["association"].values
    if config.min_correlation is None:
        return assoc
    toa = record["toa"].values
    ranks = np.broadcast_to(np.arange(toa.shape[1], dtype=np.int16), toa.shape)
    numbered = record.assign(source_label=(("cycle", "rank"), ranks.copy()))
    kept = apply_min_correlation(numbered, config.min_correlation)
    rank = kept["source_label"].values
    cycle, position = np.nonzero(rank != NO_ARRIVAL)
    if not np.array_equal(kept["toa"].values[cycle, position], toa[cycle, rank[cycle, position]]):
        raise AssertionError("the cut arrivals' ranks do not map back to the record's")
    full = np.where(np.isnan(toa), NO_ARRIVAL, CLUTTER).astype(assoc.dtype)
    full[cycle, rank[cycle, position]] = assoc[cycle, position]
    return full


def _log_moments(record: xr.Dataset, truth: xr.Dataset) -> dict[str, float]:
    """Mean and standard deviation of ``log c`` of the simulated source and clutter arrivals
    (the log-normal the truth's labels give), keyed as :data:`MODEL_FIELDS`."""
    x, label = log_heights(record["correlation"].values), truth["true_label"].values
    out = {}
    for part, mask in (("source", label >= 0), ("clutter", label == CLUTTER)):
        values = x[mask & np.isfinite(x)]
        out[f"{part}_mean"], out[f"{part}_spread"] = float(values.mean()), float(values.std())
    return out


def run_task(task: Task) -> list[dict[str, object]]:
    """Rows of one float: one per variant (scores, run time, estimates), and with the
    ``heights`` row the simulated heights' log-moments and the mixture start."""
    record, truth = simulate(task)
    label = truth["true_label"].values
    source, clutter = label >= 0, label == CLUTTER
    recorded = source | clutter
    rows = []
    for name, config in variants(task).items():
        cpu, wall = time.process_time(), time.perf_counter()
        track, summary = track_float(record, config)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assoc = recorded_association(track, record, config)
        score = score_track(track.assign(association=(("cycle", "rank"), assoc)), truth)
        row: dict[str, object] = {
            "seed": task.seed,
            "clutter": task.clutter_rate,
            "variant": name,
            "accuracy": float(np.mean(assoc[recorded] == label[recorded])),
            "source_arrivals": int(source.sum()),
            "clutter_arrivals": int(clutter.sum()),
            "false_alarms": int(np.sum(assoc[clutter] >= 0)),
            "misses": int(np.sum(assoc[source] == CLUTTER)),
            "swaps": int(np.sum((assoc[source] >= 0) & (assoc[source] != label[source]))),
            "median_km": score["median_km"],
            "p90_km": score["p90_km"],
            "clutter_rate": float(track["clutter_rate"]) if "clutter_rate" in track else math.nan,
            "failed": ",".join(c.name for c in summary.failed_checks),
            "anneal_sigma": summary.calibration.sigma[0],
            "kept_file_values": summary.calibration.kept_file_values,
            "cpu_s": cpu - summary.compile_time_s,
            "wall_s": wall - summary.compile_time_s,
        }
        if name == HEIGHTS:
            for field in MODEL_FIELDS:
                row[f"est_{field}"] = float(track[f"correlation_{field}"])
            row.update({f"true_{k}": v for k, v in _log_moments(record, truth).items()})
            heights = np.where(np.isnan(record["toa"].values), np.nan, record["correlation"].values)
            start = CorrelationModel.from_heights(heights)
            row.update({f"start_{f}": getattr(start, f) for f in MODEL_FIELDS})
        rows.append(row)
    return rows


def warm_up(task: Task) -> None:
    """Track a short float every way once, so that loading the compiled kernels (not counted
    as compile time) is not charged to a process's first float."""
    run_task(replace(task, days=WARM_UP_DAYS))


def run_all(tasks: list[Task], workers: int) -> list[dict[str, object]]:
    """Rows of every task, in task order, on ``workers`` processes (1: in this one), each
    warmed up first (:func:`warm_up`); a progress line per float on stderr."""
    started, out = time.perf_counter(), {}

    def report(task: Task, rows: list[dict[str, object]]) -> None:
        out[task] = rows
        scores = ", ".join(
            f"{r['variant']} {100 * r['accuracy']:.1f} % / {r['median_km']:.2f} km" for r in rows
        )
        print(f"[{len(out)}/{len(tasks)} {time.perf_counter() - started:.0f} s] clutter "
              f"{task.clutter_rate:g} seed {task.seed}: {scores}", file=sys.stderr,
              flush=True)  # fmt: skip

    if workers <= 1:
        warm_up(tasks[0])
        for task in tasks:
            report(task, run_task(task))
    else:
        with ProcessPoolExecutor(workers, initializer=warm_up, initargs=(tasks[0],)) as pool:
            futures = {pool.submit(run_task, task): task for task in tasks}
            for future in as_completed(futures):
                report(futures[future], future.result())
    return [row for task in tasks for row in out[task]]


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def summary_table(rows: list[dict[str, object]]) -> None:
    """Per clutter rate and variant (module docstring)."""
    print("| clutter | variant | accuracy mean | accuracy min | false alarms | misses "
          "| other source | median km | median vs no heights | p90 km | lost | failing checks "
          "| est. clutter | CPU s / float | wall s / float |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    keys = dict.fromkeys((r["clutter"], r["variant"]) for r in rows)
    for clutter, variant in keys:
        group = [r for r in rows if (r["clutter"], r["variant"]) == (clutter, variant)]
        numeric = [k for k, v in group[0].items() if isinstance(v, (int, float))]
        mean = {k: float(np.mean([r[k] for r in group])) for k in numeric}
        lost = sum(r["median_km"] > LOST_KM for r in group)
        failing = sum(bool(r["failed"]) for r in group)
        counted = ("false_alarms", "misses", "swaps", "source_arrivals", "clutter_arrivals")
        total = {k: sum(r[k] for r in group) for k in counted}
        base = {r["seed"]: r["median_km"] for r in rows
                if (r["clutter"], r["variant"]) == (clutter, NO_HEIGHTS)}  # fmt: skip
        diff = np.array([r["median_km"] - base[r["seed"]] for r in group])
        paired = "-" if variant == NO_HEIGHTS else (
            f"{diff.mean():+.2f} ± {diff.std(ddof=1) / math.sqrt(diff.size):.2f}"
            if diff.size > 1 else f"{diff.mean():+.2f}"
        )  # fmt: skip
        print(
            f"| {clutter:g} | {variant} | {_pct(mean['accuracy'])} | "
            f"{_pct(min(r['accuracy'] for r in group))} | "
            f"{_pct(total['false_alarms'] / total['clutter_arrivals'])} | "
            f"{_pct(total['misses'] / total['source_arrivals'])} | "
            f"{_pct(total['swaps'] / total['source_arrivals'])} | {mean['median_km']:.2f} | "
            f"{paired} | {mean['p90_km']:.2f} | {lost} / {len(group)} | {failing} / {len(group)} |"
            f" {mean['clutter_rate']:.2f} | {mean['cpu_s']:.1f} | "
            f"{mean['wall_s']:.1f} |"
        )


def _em(row: dict[str, object]) -> str:
    """The EM's first annealing noise (s; 20 unless the first passes lost the float) and
    whether it kept the file's values."""
    kept = ", kept file values" if row["kept_file_values"] else ""
    return f"from sigma {row['anneal_sigma']:g}{kept}"


def float_table(rows: list[dict[str, object]]) -> None:
    """One row per float and variant."""
    print("| clutter | seed | variant | source / clutter arrivals | accuracy | false alarms "
          "| misses | other source | median km | p90 km | est. clutter | EM | failed checks "
          "| CPU s | wall s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['clutter']:g} | {r['seed']} | {r['variant']} | {r['source_arrivals']} / "
            f"{r['clutter_arrivals']} | {_pct(r['accuracy'])} | "
            f"{_pct(r['false_alarms'] / max(r['clutter_arrivals'], 1))} | "
            f"{_pct(r['misses'] / max(r['source_arrivals'], 1))} | "
            f"{_pct(r['swaps'] / max(r['source_arrivals'], 1))} | {r['median_km']:.2f} | "
            f"{r['p90_km']:.2f} | {r['clutter_rate']:.2f} | {_em(r)} | {r['failed'] or '-'} | "
            f"{r['cpu_s']:.1f} | "
            f"{r['wall_s']:.1f} |"
        )


def model_table(rows: list[dict[str, object]]) -> None:
    """The ``heights`` runs' estimated model against the simulated heights' log-moments and
    the mixture start (means over the floats, the range over them in brackets)."""
    print("| clutter | log c | estimated (EM) | simulated, by true label | mixture start |")
    print("|---|---|---|---|---|")
    for clutter in dict.fromkeys(r["clutter"] for r in rows):
        group = [r for r in rows if r["clutter"] == clutter and r["variant"] == HEIGHTS]
        for field in MODEL_FIELDS:
            cells = []
            for kind in ("est", "true", "start"):
                values = np.array([r[f"{kind}_{field}"] for r in group])
                cells.append(f"{values.mean():.3f} [{values.min():.3f}, {values.max():.3f}]")
            print(f"| {clutter:g} | {field.replace('_', ' ')} | {' | '.join(cells)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floats", type=int, default=16, help="floats per clutter rate")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--clutter", type=float, nargs="+", default=(3.0, 1.0),
                        help="clutter rates (arrivals per window)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=1, help="seed of the first float")
    parser.add_argument("--particles", type=int, default=COMMAND_PARTICLES)
    parser.add_argument(
        "--min-correlation",
        type=float,
        default=40.0,
        help="the cut variant's --min-correlation (negative: no cut variant)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (1: serially)")
    args = parser.parse_args()
    cut = args.min_correlation if args.min_correlation >= 0 else None
    tasks = [
        Task(seed, clutter, args.days, args.particles, cut)
        for clutter in args.clutter
        for seed in range(args.seed, args.seed + args.floats)
    ]
    started = time.perf_counter()
    rows = run_all(tasks, args.workers)
    wall = time.perf_counter() - started
    print(
        f"{args.floats} simulated {args.days}-day DIMES floats per clutter rate (seeds "
        f"{args.seed}..{args.seed + args.floats - 1}, sample mismatch, sigma 5 s, P_D falling "
        f"with range), tracked calibrated with {args.particles} particles, --multipath "
        f"{COMMAND_MULTIPATH:g}, {COMMAND_MOTION} motion; {args.workers} worker(s), "
        f"{wall:.0f} s wall in all\n"
    )
    summary_table(rows)
    print("\nPer float:\n")
    float_table(rows)
    print("\nThe heights' log-normal model (heights runs; mean [min, max] over the floats):\n")
    model_table(rows)


if __name__ == "__main__":
    main()
