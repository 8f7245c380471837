"""A minimal reference filter, and ``track-float`` timed against it as whole processes.

The reference is what a competent user would write for one float: read the record with
xarray, a bootstrap particle filter (random walk, systematic resampling when the effective
sample size falls under half the particles) whose per-cycle weight is the exact likelihood of
the paper's model (:func:`rankmodels.tracking.engines.log_likelihood`, ``exact``, the same
signal model and multipath share as ``track-float``'s defaults), the file's clock, sound
speed and source offsets, no smoothing, no association, no quality checks, no outputs but the
posterior-mean track. Propagation, weights and resampling are one numba kernel per cycle.

``--reference`` runs only the reference (used as the child process). Without it, the script
times as child processes, alternating, ``--repeats`` times each: the reference, ``track-float
FILE --no-smooth --no-plots`` (calibrated default, without the smoother the reference lacks)
and ``track-float FILE --no-smooth --no-plots --no-calibrate``, all with ``--particles``; it
prints wall and CPU time (``RUSAGE_CHILDREN``) and the ratios of the medians to the
reference. Every command runs once first (warm numba cache). The float is a simulated
``--days``-day DIMES float with the shipped sample's mismatch (``rankmodels simulate-float``).

    python benchmarks/reference_filter.py [--days 404] [--particles 10000] [--repeats 3]
    python benchmarks/reference_filter.py --reference FILE [--particles 10000]
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = (
    "--float-clock-drift 0.02 --true-sound-speed 1470 --offset-error 1 --multipath 0.02".split()
)


def reference_track(path: str, particles: int, seed: int = 0):
    """Posterior-mean track ``(T, 2)`` of the record at ``path`` by the reference filter."""
    import numba
    import numpy as np
    import xarray as xr

    from rankmodels.tracking.config import COMMAND_MULTIPATH, TrackConfig
    from rankmodels.tracking.engines import log_likelihood
    from rankmodels.tracking.geometry import EARTH_RADIUS_KM, pairwise_distance_km
    from rankmodels.tracking.records import active_sources, written_offsets
    from rankmodels.tracking.signal_model import SignalModel

    @numba.njit(cache=True)
    def propagate(x, noise):  # pragma: no cover - numba
        """Random-walk step: ``noise (N, 2)`` km east and north."""
        to_deg = 180.0 / (math.pi * EARTH_RADIUS_KM)
        for i in range(x.shape[0]):
            lat = x[i, 0]
            x[i, 1] += noise[i, 0] * to_deg / math.cos(math.radians(lat))
            x[i, 0] = lat + noise[i, 1] * to_deg

    @numba.njit(cache=True)
    def update(x, logw, ell, u, out_mean):  # pragma: no cover - numba
        """Weight by ``ell``, record the weighted mean, resample if ESS < N/2."""
        n = x.shape[0]
        top = -math.inf
        for i in range(n):
            logw[i] += ell[i]
            top = max(top, logw[i])
        total = 0.0
        for i in range(n):
            total += math.exp(logw[i] - top)
        lse = top + math.log(total)
        w = np.empty(n)
        sq = 0.0
        out_mean[:] = 0.0
        for i in range(n):
            logw[i] -= lse
            w[i] = math.exp(logw[i])
            sq += w[i] * w[i]
            out_mean[0] += w[i] * x[i, 0]
            out_mean[1] += w[i] * x[i, 1]
        if 1.0 / sq < 0.5 * n:
            new = np.empty_like(x)
            cdf, j = w[0], 0
            for i in range(n):
                target = (u + i) / n
                while cdf < target and j < n - 1:
                    j += 1
                    cdf += w[j]
                new[i] = x[j]
            x[:] = new
            logw[:] = -math.log(n)

    record = xr.open_dataset(path, engine="netcdf4").load()
    config = TrackConfig()
    toa = np.asarray(record["toa"].values, dtype=float)
    active = active_sources(record)
    offset = written_offsets(record)
    km_per_s = float(record["sound_speed"]) / 1000.0
    src_lat, src_lon = record["source_lat"].values, record["source_lon"].values
    model = SignalModel(
        sigma=config.sigma,
        p_detect=config.p_detect,
        clutter_rate=config.clutter_rate,
        window=float(record["window_length"]),
        multipath=COMMAND_MULTIPATH,
    )
    rng = np.random.default_rng(seed)
    x = np.tile([float(record["launch_lat"]), float(record["launch_lon"])], (particles, 1))
    logw = np.full(particles, -math.log(particles))
    day = (record["time"].values - record["launch_time"].values) / np.timedelta64(1, "D")
    dt = np.maximum(np.diff(day, prepend=0.0), 1e-3)
    means = np.empty((toa.shape[0], 2))
    for t in range(toa.shape[0]):
        propagate(x, rng.normal(0.0, config.process_noise * math.sqrt(dt[t]), (particles, 2)))
        act = active[t]
        if np.isnan(toa[t]).all():
            ell = np.zeros(particles)
        else:
            dist = pairwise_distance_km(x[:, 0], x[:, 1], src_lat[act], src_lon[act])
            predicted = dist / km_per_s + offset[t, act]
            ell = log_likelihood(toa[t], predicted, model, engine="exact").loglik
        update(x, logw, ell, rng.random(), means[t])
    return means


def _run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", metavar="FILE", help="run only the reference on FILE")
    parser.add_argument("--days", type=int, default=404)
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.reference:
        reference_track(args.reference, args.particles)
        return
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [str(bin_dir / "rankmodels"), "simulate-float", "--out", tmp, "--name", "float",
             "--days", str(args.days), "-q", *SIMULATE],
            check=True,
        )  # fmt: skip
        path = str(Path(tmp) / "float.nc")
        particles = ["--particles", str(args.particles)]
        track = [str(bin_dir / "track-float"), path, "--out", str(Path(tmp) / "out"), "-q",
                 "--no-smooth", "--no-plots", *particles]  # fmt: skip
        commands = {
            "reference filter": [sys.executable, __file__, "--reference", path, *particles],
            "track-float --no-smooth --no-plots": track,
            "  ... --no-calibrate": [*track, "--no-calibrate"],
        }
        for argv in commands.values():
            _run(argv)  # warm the numba cache
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, argv in commands.items():
                times[name].append(_run(argv))
    ref_wall = statistics.median(w for w, _ in times["reference filter"])
    ref_cpu = statistics.median(c for _, c in times["reference filter"])
    print(f"{args.days}-day float, {args.particles} particles, median of {args.repeats}")
    print(f"{'command':40s} {'wall s':>8s} {'CPU s':>8s} {'wall x':>7s} {'CPU x':>7s}")
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:40s} {wall:8.2f} {cpu:8.2f} {wall / ref_wall:7.2f} {cpu / ref_cpu:7.2f}")


if __name__ == "__main__":
    main()
