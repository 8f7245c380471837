"""Calibration of ``track-float``: simulated DIMES floats whose signals carry what their
files do not state, tracked with and without calibration, the estimates against the truth.

Scenarios (each its own float, the same seed, so the track, noise, detections and clutter are
the same in all): exact parameters; each geometric mismatch alone -- float clock drift 0.02
s/day, true sound speed 1485 m/s while the file says 1500, written source offsets off by
N(0, 2^2) s, 5 % of source arrivals delayed by Uniform(10, 60) s of multipath; all four
together; and a noisy world (clutter 2 per window, P_D 0.8 at every range, TOA noise 3 s,
with the shipped sample's geometric mismatch), also tracked with the true noise, detection and
clutter given as the starting values. Every float is tracked with the command's settings
(``exact``, smoothing, ``--multipath 0.02``, all of ``--calibrate-params``) without and with
calibration. Printed per run: median and 90th-percentile position error (km), % of true
arrivals assigned to their source, the estimated sound speed, drift, TOA noise, P_D, clutter
rate and process noise (``±`` the standard error; ``kept`` where the record did not determine
it) against the truth, and the run time (compile time excluded).

``--worlds N``: instead, N floats drawn across the ranges real records span
(:mod:`rankmodels.tracking.worlds`; ``benchmarks/quality.py`` runs them and prints, per
world, the estimates against the truth and the error with and without calibration).

    python benchmarks/calibration.py [--particles 10000] [--seeds 1] [--days 404]
        [--only TEXT] [--calibration-particles 1000] [--multipath 0.02] [--sigma 5]
    python benchmarks/calibration.py --worlds 30 [--particles 3000]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path

import numpy as np

from rankmodels.tracking.config import COMMAND_MULTIPATH, FLOAT_EM_PARTICLES, TrackConfig
from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.simulate import (
    SAMPLE_MISMATCH,
    Mismatch,
    SignalSpec,
    dimes_float767,
    range_dependent_detection,
)

NOMINAL_SPEED = 1500.0
ALL_TOGETHER = Mismatch(clock_drift=0.02, true_sound_speed=1485.0, offset_error=2.0, multipath=0.05)
#: The noisy world: (mismatch, signal overrides, starting values given to the tracker).
NOISY = {"clutter_rate": 2.0, "p_detect": 0.8, "sigma": 3.0}
SCENARIOS: dict[str, tuple[Mismatch, dict[str, float], dict[str, float]]] = {
    "exact parameters": (Mismatch(), {}, {}),
    "drift 0.02 s/day": (Mismatch(clock_drift=0.02), {}, {}),
    "sound speed 1485 (file 1500)": (Mismatch(true_sound_speed=1485.0), {}, {}),
    "offsets off by 2 s": (Mismatch(offset_error=2.0), {}, {}),
    "multipath 5 %": (Mismatch(multipath=0.05), {}, {}),
    "all together": (ALL_TOGETHER, {}, {}),
    "noisy world (lambda 2, P_D 0.8, sigma 3), sample mismatch": (SAMPLE_MISMATCH, NOISY, {}),
    "noisy world, true noise/P_D/clutter given": (SAMPLE_MISMATCH, NOISY, NOISY),
}
#: The estimated scalars printed: (track variable, label, decimals).
ESTIMATES = (
    ("sound_speed", "speed m/s", 1),
    ("clock_drift", "drift s/day", 4),
    ("sigma", "sigma s", 2),
    ("p_detect", "P_D", 3),
    ("clutter_rate", "clutter", 2),
    ("process_noise", "q km/day", 2),
)


def _truth(record, truth, mismatch: Mismatch, spec: SignalSpec) -> dict[str, float]:
    """The true value of each printed estimate (P_D: the mean over the active
    source-cycle pairs the simulation drew from; process noise: not a random walk, none)."""
    if callable(spec.p_detect):
        dist = great_circle_km(
            truth["lat"].values[:, None], truth["lon"].values[:, None],
            record["source_lat"].values[None, :], record["source_lon"].values[None, :],
        )  # fmt: skip
        p_detect = float(np.mean(spec.p_detect(dist)))
    else:
        p_detect = float(spec.p_detect)
    return {
        "sound_speed": mismatch.true_sound_speed or NOMINAL_SPEED,
        "clock_drift": mismatch.clock_drift,
        "sigma": spec.sigma,
        "p_detect": p_detect,
        "clutter_rate": spec.clutter_rate,
        "process_noise": math.nan,
    }


def run_one(record, truth, config: TrackConfig) -> dict[str, object]:
    """Score of one run (``config``) and its estimates (NaN standard error where kept)."""
    track, summary = track_float(record, config)
    score = score_track(track, truth)
    row: dict[str, object] = {
        "median_km": score["median_km"],
        "p90_km": score["p90_km"],
        "arrivals_right": score["arrivals_right"],
        "run_time_s": summary.run_time_s,
        "passes": 0 if summary.calibration is None else len(summary.calibration.loglik),
    }
    for name, _, _ in ESTIMATES:
        row[name] = float(track[name]) if name in track else math.nan
        row[f"{name}_std"] = float(track[f"{name}_std"]) if name in track else math.nan
    return row


def _estimate(value: float, std: float, true: float, digits: int) -> str:
    shown = f"{value:.{digits}f} ± {std:.{digits}f}" if math.isfinite(std) else "kept"
    return shown + (f" ({true:.{digits}f})" if math.isfinite(true) else "")


def _worlds(n: int, particles: int) -> None:
    """``benchmarks/quality.py --n N --broken 0``: the varied worlds' rows."""
    spec = importlib.util.spec_from_file_location("quality", Path(__file__).with_name("quality.py"))
    quality = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quality)  # type: ignore[union-attr]
    quality.main(["--n", str(n), "--broken", "0", "--particles", str(particles)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=1, help="floats per scenario (seeds 1..)")
    parser.add_argument("--days", type=int, default=404)
    parser.add_argument("--only", default=None, help="run only scenarios containing this text")
    parser.add_argument("--calibration-particles", type=int, default=FLOAT_EM_PARTICLES)
    parser.add_argument(
        "--multipath", type=float, default=COMMAND_MULTIPATH, help="the tracker's --multipath"
    )
    parser.add_argument("--sigma", type=float, default=5.0, help="TOA noise std (s)")
    parser.add_argument("--worlds", type=int, default=0, help="N varied worlds instead")
    args = parser.parse_args()
    if args.worlds:
        _worlds(args.worlds, args.particles)
        return
    labels = " | ".join(f"{label} (true)" for _, label, _ in ESTIMATES)
    header = (
        f"| scenario | calibration | median km | p90 km | arrivals right | {labels} | passes "
        "| run time s |"
    )
    print(
        f"{args.days}-day floats, TOA noise {args.sigma:g} s unless stated, {args.particles} "
        f"particles ({args.calibration_particles} in the EM), tracker multipath "
        f"{args.multipath:g}, {args.seeds} seed(s)\n"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, (mismatch, signal, given) in SCENARIOS.items():
        if args.only and args.only not in name:
            continue
        spec = SignalSpec(
            p_detect=signal.get("p_detect", range_dependent_detection()),
            sound_speed=NOMINAL_SPEED,
            sigma=signal.get("sigma", args.sigma),
            clutter_rate=signal.get("clutter_rate", 1.0),
        )
        for calibrate in (False, True):
            rows, trues = [], []
            for seed in range(1, args.seeds + 1):
                record, truth = dimes_float767(
                    seed=seed, days=args.days, spec=spec, mismatch=mismatch
                )
                config = TrackConfig(
                    particles=args.particles,
                    seed=seed,
                    calibrate=calibrate,
                    calibration_particles=args.calibration_particles,
                    multipath=args.multipath,
                    sigma=given.get("sigma", args.sigma),
                    p_detect=given.get("p_detect", TrackConfig().p_detect),
                    clutter_rate=given.get("clutter_rate", TrackConfig().clutter_rate),
                )
                rows.append(run_one(record, truth, config))
                trues.append(_truth(record, truth, mismatch, spec))
            mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
            true = {k: float(np.mean([t[k] for t in trues])) for k in trues[0]}
            estimates = " | ".join(
                _estimate(mean[n], mean[f"{n}_std"], true[n], d) for n, _, d in ESTIMATES
            )
            print(
                f"| {name} | {'on' if calibrate else 'off'} | {mean['median_km']:.2f} | "
                f"{mean['p90_km']:.2f} | {100 * mean['arrivals_right']:.1f} % | {estimates} | "
                f"{mean['passes']:.0f} | {mean['run_time_s']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
