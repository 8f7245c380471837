"""The motion models on simulated floats: track-float's calibrated defaults with the random
walk and with ``--motion lagrangian``, on drifting (mean flow + Ornstein-Uhlenbeck eddies,
s = 4 km/day, tau = 5 days), straight and spiral floats of 200-500 days at sigma 3-6 s.

Prints per float and motion model the median and p90 position error (km), the daily velocity's
rms error (km/day; the random walk's from its differenced positions), the CPU time and the
Lagrangian motion's time scale and eddy speed.

    python benchmarks/motion.py
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr

from rankmodels.tracking.config import COMMAND_MULTIPATH, TrackConfig
from rankmodels.tracking.geometry import great_circle_km, tangent_offsets
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.simulate import SignalSpec, dimes_float767, range_dependent_detection

#: (seed, trajectory, days, sigma s) of each float.
CASES = (
    (11, "drift", 300, 3.0),
    (12, "drift", 400, 5.0),
    (13, "drift", 250, 3.0),
    (14, "drift", 500, 4.0),
    (15, "drift", 200, 6.0),
    (16, "drift", 365, 3.0),
    (17, "straight", 300, 4.0),
    (18, "spiral", 300, 4.0),
)


def daily_steps(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """``(T - 1, 2)`` (east, north) km between consecutive positions."""
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    return np.stack([east, north], 1)


def velocities(track: xr.Dataset) -> np.ndarray:
    """The track's daily velocities (km/day) into each cycle after the first."""
    if "velocity_east" in track:
        return np.stack([track.velocity_east.values, track.velocity_north.values], 1)[1:] * 86.4
    return daily_steps(track.lat.values, track.lon.values)


def main() -> None:
    for seed, trajectory, days, sigma in CASES:
        spec = SignalSpec(sigma=sigma, p_detect=range_dependent_detection(), clutter_rate=1.0)
        record, truth = dimes_float767(seed, days=days, trajectory=trajectory, spec=spec)
        true_v = daily_steps(truth.lat.values, truth.lon.values)
        for motion in ("random-walk", "lagrangian"):
            config = TrackConfig(calibrate=True, multipath=COMMAND_MULTIPATH, motion=motion)
            started = time.process_time()
            track, _ = track_float(record, config)
            cpu = time.process_time() - started
            err = great_circle_km(track.lat.values, track.lon.values, truth.lat.values,
                                  truth.lon.values)  # fmt: skip
            rms = np.sqrt(np.mean((velocities(track) - true_v) ** 2))
            extra = ""
            if "time_scale" in track:
                tau, tau_std = float(track.time_scale), float(track.time_scale_std)
                extra = f"  tau {tau:.2f} ± {tau_std:.2f} days, s {float(track.eddy_speed):.2f}"
            print(
                f"{seed} {trajectory:8s} {days} d sigma {sigma:g} {motion:11s} median "
                f"{np.median(err):5.2f} p90 {np.percentile(err, 90):5.2f} km, velocity rms "
                f"{rms:4.2f} km/day, cpu {cpu:5.1f} s{extra}",
                flush=True,
            )


if __name__ == "__main__":
    main()
