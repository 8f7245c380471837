"""Speed of the tracking likelihood engines and of a whole float track, in one run.

Engines: particle-cycles per second at s = 12 sources and r = 4 recorded arrivals, on cycles of
the shipped (simulated) float 767 record with all twelve sources active, particles scattered
15 km around the true position (the situation inside the particle filter). ``minfactor`` is
timed on the same geometry under its own model (no loss, no clutter). Whole track: the
10,000-particle track of float 767 (729 days) with the default settings, in a process whose
numba cache is warm; the first call (which loads the compiled code) is reported apart.

No peer library implements this model, so the ratios printed are between the engines
(the exact sum over associations against the paper's loopy BP).

    python benchmarks/tracking.py [--particles 100000] [--repeats 5] [--no-track]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

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


def rate(engine: str, cycles, model: SignalModel, repeats: int, association: bool) -> float:
    """Best-of-``repeats`` particle-cycles per second over the benchmark cycles.

    Slow engines are timed on the first tenth of the particles (a run of about a second).
    """
    probe = [(toa, pred[:2000], lab) for toa, pred, lab in cycles]

    def run(batch) -> None:
        for toa, predicted, labels in batch:
            log_likelihood(
                toa, predicted, model, engine=engine, labels=labels, association=association
            )

    run(probe)  # compile or load from cache
    start = time.perf_counter()
    run(probe)
    if time.perf_counter() - start > 0.1:
        n = max(2000, cycles[0][1].shape[0] // 10)
        cycles = [(toa, pred[:n], lab) for toa, pred, lab in cycles]
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run(cycles)
        best = min(best, time.perf_counter() - start)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--track-particles", type=int, default=10_000)
    parser.add_argument("--no-track", action="store_true")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    record = read_float(DATA / "float767.nc")
    truth = xr.open_dataset(DATA / "float767_truth.nc")
    window = float(record["window_length"])
    cycles = benchmark_cycles(record, truth, args.particles, args.cycles, rng)
    paper = SignalModel(sigma=5.0, p_detect=0.9, clutter_rate=1.0, window=window)
    no_loss = SignalModel(sigma=5.0, p_detect=1.0, clutter_rate=0.0, window=window)

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(
        f"s = 12, r = 4, {args.particles:,} particles x {args.cycles} cycles, best of "
        f"{args.repeats}"
    )
    rows = [
        ("exact", paper, False),
        ("exact", paper, True),
        ("bp", paper, False),
        ("bp", paper, True),
        ("baseline", paper, False),
        ("labels", paper, False),
        ("exact", no_loss, False),
        ("minfactor", no_loss, False),
    ]
    rates = {}
    for engine, model, assoc in rows:
        key = (engine, model is no_loss, assoc)
        rates[key] = rate(engine, cycles, model, args.repeats, assoc)
        label = (
            f"{engine}{' +association' if assoc else ''}{' (P_D=1, lambda=0)' if key[1] else ''}"
        )
        print(f"  {label:36s} {rates[key] / 1e6:8.3f} M particle-cycles/s")
    print(
        f"exact / bp: {rates[('exact', False, False)] / rates[('bp', False, False)]:.1f}x "
        f"(with association {rates[('exact', False, True)] / rates[('bp', False, True)]:.1f}x)"
    )
    print(
        f"exact / minfactor (P_D=1, lambda=0): "
        f"{rates[('exact', True, False)] / rates[('minfactor', True, False)]:.1f}x"
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
    main()
