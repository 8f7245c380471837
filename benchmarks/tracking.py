"""Speed of the tracking likelihood engines and of a whole float track, in one run.

Engines: particle-cycles per second at s = 12 sources and r = 4 recorded arrivals, on cycles of
the shipped (simulated) float 767 record with all twelve sources active, particles scattered
15 km around the true position (the situation inside the particle filter), all under the
paper's model (``P_D = 0.9``, ``lambda = 1``), and ``exact``, ``bp`` and ``labels`` again with
multipath (``--multipath``, default ``P_M = 0.02``; 0 leaves them out). Whole track: the
10,000-particle track of float 767 (729 days) with the default settings, in a process whose
numba cache is warm; the first call (which loads the compiled code) is reported apart.

No peer library implements this model, so the ratios printed are between the engines
(the exact sum over associations against the paper's two loopy BPs).

On a busy shared machine wall-clock rates of the threaded kernels swing by factors of several
from run to run; ``--cpu-time`` runs the engines on one thread and divides by the process's CPU
time instead, which repeats to a few percent under load (use it to compare two versions).

    python benchmarks/tracking.py [--particles 100000] [--repeats 5] [--no-track] [--cpu-time]
                                  [--multipath 0.02]

Fleet (``--fleet``): ``--floats`` simulated floats of ``--days MIN MAX`` days tracked
as ``track-float FOLDER/`` does (calibration on, figures and report per float unless
``--no-plots``), serially and on a ``LocalCluster`` of ``--workers``; floats per minute and
the speed-up.

    python benchmarks/tracking.py --fleet [--floats 32] [--particles 2000] [--days 30 120]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import xarray as xr

from rankmodels.tracking.engines import log_likelihood
from rankmodels.tracking.geometry import pairwise_distance_km, tangent_step
from rankmodels.tracking.records import active_sources, read_float
from rankmodels.tracking.signal_model import SignalModel

DATA = Path(__file__).resolve().parents[1] / "data"


def benchmark_cycles(
    record: xr.Dataset, truth: xr.Dataset, n_particles: int, n_cycles: int, rng: np.random.Generator
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(toa, predicted (N, 12), labels)`` for cycles with 12 active sources and 4 arrivals."""
    toa = np.asarray(record["toa"].values, dtype=float)
    full = active_sources(record).all(axis=1) & ~np.isnan(toa).any(axis=1)
    chosen = rng.choice(np.flatnonzero(full), size=n_cycles, replace=False)
    speed = float(record["sound_speed"]) / 1000.0
    out = []
    for t in chosen:
        centre = np.array([[float(truth["lat"][t]), float(truth["lon"][t])]])
        lat, lon = tangent_step(
            np.repeat(centre[:, 0], n_particles),
            np.repeat(centre[:, 1], n_particles),
            rng.normal(0, 15.0, n_particles),
            rng.normal(0, 15.0, n_particles),
        )
        dist = pairwise_distance_km(
            lat, lon, record["source_lat"].values, record["source_lon"].values
        )
        predicted = dist / speed + record["source_offset"].values
        labels = np.asarray(truth["true_label"][t].values, dtype=np.int64)
        out.append((toa[t], np.ascontiguousarray(predicted), labels))
    return out


def rate(
    engine: str,
    cycles,
    model: SignalModel,
    repeats: int,
    association: bool,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best-of-``repeats`` particle-cycles per second (of ``clock``) over the benchmark cycles.

    Slow engines are timed on the first tenth of the particles (a run of about a second).
    """
    probe = [(toa, pred[:2000], lab) for toa, pred, lab in cycles]

    def run(batch) -> None:
        for toa, predicted, labels in batch:
            log_likelihood(
                toa, predicted, model, engine=engine, labels=labels, association=association
            )

    run(probe)  # compile or load from cache
    start = clock()
    run(probe)
    if clock() - start > 0.1:
        n = max(2000, cycles[0][1].shape[0] // 10)
        cycles = [(toa, pred[:n], lab) for toa, pred, lab in cycles]
    best = np.inf
    for _ in range(repeats):
        start = clock()
        run(cycles)
        best = min(best, clock() - start)
    return sum(c[1].shape[0] for c in cycles) / best


def time_track(record: xr.Dataset, particles: int) -> tuple[float, float, dict]:
    """Seconds for the first and a second whole track (default settings)."""
    from rankmodels.tracking.pipeline import TrackConfig, track_float

    config = TrackConfig(particles=particles)
    start = time.perf_counter()
    track_float(record, config)
    first = time.perf_counter() - start
    start = time.perf_counter()
    _, summary = track_float(record, config)
    return first, time.perf_counter() - start, summary


def fleet_records(folder: Path, n: int, days: tuple[int, int]) -> list[Path]:
    """``n`` simulated floats (:func:`rankmodels.tracking.simulate.dimes_float767`, seeds 1..n)
    written into ``folder``: lengths evenly spread over ``days`` (shortest, longest), the drift,
    straight and spiral trajectories in turn."""
    from rankmodels.tracking.records import write_float
    from rankmodels.tracking.simulate import dimes_float767

    folder.mkdir(parents=True, exist_ok=True)
    files = []
    lengths = np.linspace(days[0], days[1], n).round().astype(int)
    for i, length in enumerate(lengths):
        trajectory = ("drift", "straight", "spiral")[i % 3]
        record, _ = dimes_float767(seed=i + 1, days=int(length), trajectory=trajectory)
        files.append(folder / f"float{i + 1:03d}.nc")
        write_float(record, files[-1])
    return files


def time_fleet(files: list[Path], out: Path, config, plots: bool, client=None):
    """Wall seconds of :func:`rankmodels.tracking.batch.track_many` over ``files`` (serially
    without ``client``), the 1-minute load average after it, and its summary table."""
    from rankmodels.plots.run_report import float_figures
    from rankmodels.tracking.batch import track_many

    start = time.perf_counter()
    table = track_many(files, out, config, figures=float_figures if plots else None, client=client)
    wall = time.perf_counter() - start
    failed = table[table["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"{len(failed)} floats failed: {list(failed['reason'])}")
    return wall, os.getloadavg()[0], table


def fleet_main(argv: list[str] | None = None) -> None:
    """``--fleet``: a batch of simulated floats tracked serially in this process and on a
    ``LocalCluster`` of ``--workers`` single-threaded worker processes (serial first unless
    ``--dask-first``: the shared machine's load drifts, so run both orders); floats per minute
    and the speed-up. Every process loads the numba kernels and the plotting stack once before
    the clock starts (a 5-day float), so both runs time tracking, not start-up."""
    import tempfile

    import numba

    from rankmodels.plots.run_report import float_figures
    from rankmodels.studies.runner import dask_client
    from rankmodels.tracking.batch import track_one
    from rankmodels.tracking.config import TrackConfig

    parser = argparse.ArgumentParser(description=fleet_main.__doc__.splitlines()[0])
    parser.add_argument("--fleet", action="store_true", required=True)
    parser.add_argument("--floats", type=int, default=32)
    parser.add_argument("--particles", type=int, default=2000)
    parser.add_argument("--days", type=int, nargs=2, default=(30, 120), metavar=("MIN", "MAX"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-plots", dest="plots", action="store_false")
    parser.add_argument("--dask-first", action="store_true")
    args = parser.parse_args(argv)
    config = TrackConfig(particles=args.particles, calibrate=True)  # as track-float
    cluster = f"LocalCluster, {args.workers} workers"

    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
        root = Path(tmp)
        files = fleet_records(root, args.floats, tuple(args.days))
        warm = fleet_records(root / "warm", 1, (5, 5))[0]
        print(f"machine: {os.cpu_count()} cores, {numba.get_num_threads()} numba threads/process")
        print(
            f"{args.floats} simulated floats, {args.days[0]}-{args.days[1]} days, "
            f"{args.particles:,} particles, calibration on, plots {'on' if args.plots else 'off'}",
            flush=True,
        )
        figures = float_figures if args.plots else None
        track_one(warm, root / "warm-out", config, figures)

        def serial() -> tuple:
            load = os.getloadavg()[0]
            return (load, *time_fleet(files, root / "serial", config, args.plots))

        def on_dask() -> tuple:
            with dask_client(workers=args.workers) as client:
                client.run(track_one, warm, root / "warm-out", config, figures)
                load = os.getloadavg()[0]
                return (load, *time_fleet(files, root / "dask", config, args.plots, client))

        runs = {"serial": serial, cluster: on_dask}
        order = list(runs)[::-1] if args.dask_first else list(runs)
        results = {name: runs[name]() for name in order}
        for name, (before, wall, after, table) in results.items():
            print(
                f"  {name:24s} {wall:7.1f} s wall, {60 * args.floats / wall:5.1f} floats/min "
                f"(per-float run times sum to {table['run_time_s'].sum():.1f} s); "
                f"load average {before:.1f} before, {after:.1f} after"
            )
        (_, one, _, alone), (_, two, _, shared) = results["serial"], results[cluster]
        slower = np.median(shared["run_time_s"] / alone["run_time_s"])
        print(
            f"{alone['cycles'].sum()} cycles in all; speed-up {one / two:.2f}x; a float's run "
            f"time on the cluster / serially: median {slower:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--track-particles", type=int, default=10_000)
    parser.add_argument("--no-track", action="store_true")
    parser.add_argument(
        "--cpu-time", action="store_true", help="one thread, rates per CPU-second (engines only)"
    )
    parser.add_argument("--multipath", type=float, default=0.02, help="P_M of the multipath rows")
    args = parser.parse_args()
    clock = time.perf_counter
    if args.cpu_time:
        numba.set_num_threads(1)
        clock = time.process_time

    rng = np.random.default_rng(0)
    record = read_float(DATA / "float767.nc")
    truth = xr.open_dataset(DATA / "float767_truth.nc")
    window = float(record["window_length"])
    cycles = benchmark_cycles(record, truth, args.particles, args.cycles, rng)
    paper = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=window)

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(
        f"s = 12, r = 4, {args.particles:,} particles x {args.cycles} cycles, best of "
        f"{args.repeats}{', one thread, per CPU-second' if args.cpu_time else ''}"
    )
    rows = [
        ("exact", False),
        ("exact", True),
        ("bp", False),
        ("bp", True),
        ("minfactor", False),
        ("minfactor", True),
        ("baseline", False),
        ("labels", False),
    ]
    rates = {}
    for engine, assoc in rows:
        rates[engine, assoc] = rate(engine, cycles, paper, args.repeats, assoc, clock)
        label = f"{engine}{' +association' if assoc else ''}"
        print(f"  {label:36s} {rates[engine, assoc] / 1e6:9.4g} M particle-cycles/s")
    for engine in ("bp", "minfactor"):
        print(
            f"exact / {engine}: {rates['exact', False] / rates[engine, False]:.1f}x "
            f"(with association {rates['exact', True] / rates[engine, True]:.1f}x)"
        )
    print(f"exact / labels: {rates['exact', False] / rates['labels', False]:.3f}")
    if args.multipath > 0:
        delayed = dataclasses.replace(paper, multipath=args.multipath)
        for engine, assoc in (("exact", False), ("exact", True), ("bp", False), ("labels", False)):
            slow = rate(engine, cycles, delayed, args.repeats, assoc, clock)
            label = f"{engine}{' +association' if assoc else ''}, P_M = {args.multipath:g}"
            print(
                f"  {label:36s} {slow / 1e6:9.4g} M particle-cycles/s "
                f"(P_M = 0 / this: {rates[engine, assoc] / slow:.2f}x)"
            )

    if not args.no_track:
        first, second, summary = time_track(record, args.track_particles)
        print(
            f"whole track of float 767 ({record.sizes['cycle']} cycles, "
            f"{args.track_particles:,} particles, exact, smoothing on): "
            f"first call {first:.1f} s, second {second:.1f} s"
        )
        print("  summary:", {k: summary[k] for k in list(summary)[:8]})


if __name__ == "__main__":
    if "--fleet" in sys.argv[1:]:
        fleet_main()
    else:
        main()
