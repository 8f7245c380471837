"""The Lagrangian motion's products against the truth, on drifting floats of one world.

Each float is simulated on the DIMES geometry (:func:`rankmodels.tracking.simulate.dimes_float767`,
``trajectory="drift"``: a mean flow plus continuously integrated Ornstein-Uhlenbeck eddies of
speed ``s`` and time scale ``tau``, ``--eddies``) and tracked with the ``track-float`` defaults.
Printed per float, and as rates over the floats:

* the time scale ``tau`` and the diffusivity ``K = s^2 tau`` with their stated standard errors,
  and their z-scores against the truth (the fraction with ``|z| <= 2``);
* the smoothed velocity's honesty: the fraction of the true instantaneous velocities (east and
  north, every cycle) within two stated standard errors of the estimate;
* the daily velocity's rms error and the median position error, as ratios to the oracle
  smoother's (``benchmarks/oracle.py``, told the associations, the parameters and the dynamics).

    python benchmarks/motion.py [--floats 20] [--days 365] [--sigma 4] [--eddies 4 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from oracle import Oracle, errors, track_velocity, velocity_rms

from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    COMMAND_PARTICLES,
    TrackConfig,
)
from rankmodels.tracking.motion_fit import K_M2_S
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.simulate import SignalSpec, dimes_float767, range_dependent_detection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floats", type=int, default=20)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--sigma", type=float, default=4.0)
    parser.add_argument(
        "--eddies", type=float, nargs=2, default=(4.0, 5.0), metavar=("SPEED", "TAU"),
        help="eddy speed km/day, time scale days",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=400, help="seed of the first float")
    args = parser.parse_args()
    spec = SignalSpec(sigma=args.sigma, p_detect=range_dependent_detection(), clutter_rate=1.0)
    config = TrackConfig(calibrate=True, multipath=COMMAND_MULTIPATH, motion=COMMAND_MOTION,
                         particles=COMMAND_PARTICLES)  # fmt: skip
    speed, tau_true = args.eddies
    k_true = speed**2 * tau_true
    z_tau, z_k, covered, ratios = [], [], [], []
    print(f"{args.floats} drifting floats of {args.days} days, sigma {args.sigma:g} s, eddies "
          f"{speed:g} km/day, tau {tau_true:g} days (K {k_true:g} km^2/day)")  # fmt: skip
    for seed in range(args.seed, args.seed + args.floats):
        record, truth = dimes_float767(seed, days=args.days, spec=spec, eddies=(speed, tau_true))
        started = time.process_time()
        track, _ = track_float(record, config)
        cpu = time.process_time() - started
        oracle = Oracle(record, truth, args.sigma)
        lat, lon, oracle_v = oracle.solve(oracle.start_at_truth(truth))
        oracle_err = errors(lat, lon, truth)
        tau, tau_se = float(track.time_scale), float(track.time_scale_std)
        k = float(track.diffusivity) / K_M2_S
        k_se = float(track.diffusivity_std) / K_M2_S
        z_tau.append((tau - tau_true) / tau_se)
        z_k.append((k - k_true) / k_se)
        v = np.stack([track.velocity_east.values, track.velocity_north.values], 1)
        v_se = np.stack([track.velocity_east_std.values, track.velocity_north_std.values], 1)
        true_v = np.stack([truth.velocity_east.values, truth.velocity_north.values], 1)
        inside = np.abs(v - true_v) <= 2.0 * v_se
        covered.append(inside.mean())
        err = errors(track.lat.values, track.lon.values, truth)
        ratio = (velocity_rms(track_velocity(track), truth) / velocity_rms(oracle_v, truth),
                 np.median(err) / np.median(oracle_err))  # fmt: skip
        ratios.append(ratio)
        print(f"{seed}: tau {tau:5.2f} ± {tau_se:4.2f} (z {z_tau[-1]:+5.2f}), K {k:6.1f} ± "
              f"{k_se:5.1f} (z {z_k[-1]:+5.2f}), velocity within 2 SE {inside.mean():.1%}, "
              f"velocity rms {ratio[0]:.2f}x the oracle's, median {np.median(err):.2f} km "
              f"({ratio[1]:.2f}x), cpu {cpu:.0f} s", flush=True)  # fmt: skip
    z_tau, z_k = np.array(z_tau), np.array(z_k)
    for name, z in (("tau", z_tau), ("K", z_k)):
        print(f"{name} within 2 SE: {np.mean(np.abs(z) <= 2):.0%} (rms z "
              f"{np.sqrt(np.mean(z**2)):.2f}, mean z {z.mean():+.2f})")  # fmt: skip
    vel, med = np.mean(ratios, axis=0)
    print(
        f"velocities within 2 SE: {np.mean(covered):.1%} (per float {min(covered):.1%} .. "
        f"{max(covered):.1%}); velocity rms {vel:.2f}x the oracle's, median error {med:.2f}x"
    )


if __name__ == "__main__":
    main()
