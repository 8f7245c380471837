"""Told the truth: does a float track at least as well given its world's true statistics as
given the file's defaults?

On varied worlds (:func:`rankmodels.tracking.worlds.draw_world`, the geometry made exact: no
clock drift, sound speed or offset errors, so that ``--no-calibrate`` tracks every float), each
float is tracked with ``--no-calibrate`` and the command's other defaults three ways:

* ``defaults``: the file's / command's starting values (sigma 5 s, P_D 0.9, clutter 1 per
  window, multipath 0.02 with 30 s delays, eddy speed 4 km/day, time scale 3 days), with two
  seeds: their difference is the Monte Carlo noise of the comparison;
* ``true signal``: the world's sigma, mean P_D (over the active sources at the true positions),
  clutter rate and multipath share (the delays keep the tracker's exponential of mean 30 s;
  the world's are Uniform(10, 60) s);
* ``true signal and motion``: also, for a drifting world, its eddy speed and time scale, for a
  straight one (a constant velocity) an eddy speed of :data:`STRAIGHT_EDDY_SPEED`; a spiral has
  no Lagrangian truth and keeps the defaults.

Printed per world the median / p90 errors (km) and the ratios to the defaults' mean, and over
the worlds the mean ratio and how many worlds are worse than the defaults by more than the
seed-to-seed noise.

    python benchmarks/told.py [--worlds 12] [--days 100 730] [--seed 100]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    COMMAND_PARTICLES,
    TrackConfig,
)
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.worlds import (
    FILE_SOUND_SPEED,
    draw_world,
    simulate_world,
    true_parameters,
)

#: Eddy speed (km/day) told for a straight float, whose velocity does not vary.
STRAIGHT_EDDY_SPEED = 0.1


def _median_p90(record, truth, config: TrackConfig) -> tuple[float, float]:
    error = position_error_km(track_float(record, config)[0], truth)
    return float(np.median(error)), float(np.percentile(error, 90))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=12)
    parser.add_argument("--days", type=int, nargs=2, default=(100, 730))
    parser.add_argument("--seed", type=int, default=100, help="first world seed")
    args = parser.parse_args()
    base = TrackConfig(calibrate=False, multipath=COMMAND_MULTIPATH, motion=COMMAND_MOTION,
                       particles=COMMAND_PARTICLES)  # fmt: skip
    ratios: dict[str, list[float]] = {"true signal": [], "true signal and motion": []}
    worse: dict[str, int] = dict.fromkeys(ratios, 0)
    for seed in range(args.seed, args.seed + args.worlds):
        world = dataclasses.replace(
            draw_world(seed, days=tuple(args.days)),
            clock_drift=0.0, true_sound_speed=FILE_SOUND_SPEED, offset_error=0.0,
        )  # fmt: skip
        record, truth = simulate_world(world)
        true = true_parameters(world, record, truth)
        runs = {
            f"defaults seed {s}": _median_p90(record, truth, dataclasses.replace(base, seed=s))
            for s in (0, 1)
        }
        signal = dataclasses.replace(
            base, sigma=world.sigma, p_detect=true["p_detect"], clutter_rate=world.clutter_rate,
            multipath=world.multipath,
        )  # fmt: skip
        runs["true signal"] = _median_p90(record, truth, signal)
        motion = signal
        if world.trajectory == "straight":  # a constant velocity: no eddies
            motion = dataclasses.replace(signal, eddy_speed=STRAIGHT_EDDY_SPEED)
        if "time_scale" in true:
            motion = dataclasses.replace(signal, eddy_speed=true["eddy_speed"],
                                         time_scale=true["time_scale"])  # fmt: skip
        runs["true signal and motion"] = _median_p90(record, truth, motion)
        defaults = [runs["defaults seed 0"][0], runs["defaults seed 1"][0]]
        reference, noise = float(np.mean(defaults)), abs(defaults[0] - defaults[1])
        line = (f"world {seed}: {world.trajectory} {world.days} d sigma {world.sigma:.1f} P_D "
                f"{true['p_detect']:.2f} clutter {world.clutter_rate:.2f} multipath "
                f"{world.multipath:.3f}")  # fmt: skip
        for name, (median, p90) in runs.items():
            line += f"; {name} {median:.2f} / {p90:.2f}"
            if name in ratios:
                ratios[name].append(median / reference)
                worse[name] += median > reference + max(noise, 0.02 * reference)
                line += f" ({median / reference:.2f}x)"
        print(line + f" km; seed noise {noise:.2f} km", flush=True)
    for name, values in ratios.items():
        print(f"{name}: median error {np.mean(values):.3f}x the defaults' on average "
              f"({min(values):.2f}-{max(values):.2f}); worse by more than the seed noise in "
              f"{worse[name]} of {len(values)} worlds")  # fmt: skip


if __name__ == "__main__":
    main()
