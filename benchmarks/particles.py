"""Accuracy against particles: track-float's calibrated defaults with ``--motion`` on simulated
drifting DIMES floats at 1,000 to 20,000 particles (the final pass; the EM's passes keep their
1,000), median and p90 error per float and particle count, and the run's CPU time.

    python benchmarks/particles.py [--floats 6] [--motion lagrangian]
        [--particles 1000 2000 5000 10000 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rankmodels.tracking.config import COMMAND_MULTIPATH, MOTIONS, TrackConfig
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.simulate import SignalSpec, dimes_float767, range_dependent_detection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floats", type=int, default=6)
    parser.add_argument("--motion", choices=MOTIONS, default="lagrangian")
    parser.add_argument("--particles", type=int, nargs="+",
                        default=[1000, 2000, 5000, 10_000, 20_000])  # fmt: skip
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    table: dict[int, list[tuple[float, float, float]]] = {n: [] for n in args.particles}
    for k in range(args.floats):
        seed, days, sigma = 300 + k, int(rng.integers(200, 731)), (3.0, 5.0)[k % 2]
        spec = SignalSpec(sigma=sigma, p_detect=range_dependent_detection(), clutter_rate=1.0)
        record, truth = dimes_float767(seed, days=days, spec=spec)
        for n in args.particles:
            config = TrackConfig(calibrate=True, multipath=COMMAND_MULTIPATH, particles=n,
                                 motion=args.motion)  # fmt: skip
            started = time.process_time()
            track, _ = track_float(record, config)
            cpu = time.process_time() - started
            err = great_circle_km(track["lat"].values, track["lon"].values, truth["lat"].values,
                                  truth["lon"].values)  # fmt: skip
            table[n].append((float(np.median(err)), float(np.percentile(err, 90)), cpu))
            print(f"float {seed} {days} d sigma {sigma:g}, {n} particles: median "
                  f"{np.median(err):.2f} p90 {np.percentile(err, 90):.2f} km, cpu {cpu:.1f} s",
                  flush=True)  # fmt: skip
    print("\n| particles | median error (mean over floats) | p90 | CPU s |\n|---|---|---|---|")
    for n, rows in table.items():
        med, p90, cpu = np.mean(rows, axis=0)
        print(f"| {n:,} | {med:.2f} | {p90:.2f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
