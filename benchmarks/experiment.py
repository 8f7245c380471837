"""Joint calibration of a replayed DIMES experiment across seeds and worlds: how often the
shared estimates land where the truth is, and whether their standard errors say so
(``docs/validation.md``, "Across seeds and worlds").

Each run is two whole commands: ``rankmodels simulate-experiment`` (the first ``--floats``
DIMES floats, cut at ``--max-days``; true sound speed 1485 m/s where the files say 1500
(1470 in ``files-1470``), source offsets written with N(0, 2^2) s errors, every source
drifting 0.01 s/day more than written, float clocks drifting 0.02 s/day, plus the world's
own settings) and ``track-float
REPLAY/ --calibrate-mode experiment --no-plots`` (``--workers``), optionally also per float
(``--per-float``). Worlds (the first three by default):

- ``acceptance``: 2 % multipath, detection 0.95 up to 800 km falling to 0.75 at 2,500 km,
  clutter 1 per window, TOA noise 5 s (the replay's defaults);
- ``no-multipath``: the same without multipath;
- ``flat-detection``: no multipath and detection 0.95 at every range;
- ``files-1470``: the acceptance world whose records state 1470 m/s (below the truth).

Printed per run: the speed's error against its stated standard error (z; the Monte Carlo
part of that error beside it), the sources whose
offset correction is within 0.5 s and whose drift correction is within 0.003 s/day of the truth
(of those estimated) with the root mean square of their z, the tracks' median of medians / of
90th percentiles (km), how far east / north the tracks sit from the truth together (the
mean over the floats of each one's mean error, km), and the wall time of the calibration.
Then per world: the speed's mean and root-mean-square error, how many runs are within 2 m/s,
and how many within 2 standard errors (what ``± SE`` promises: about 95 %).

    python benchmarks/experiment.py [--seeds 11 12 13 14 15] [--worlds acceptance ...]
        [--floats 20] [--max-days 300] [--workers 2] [--calibration-particles N]
        [--per-float] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.geometry import tangent_offsets

TRUE_SPEED = 1485.0
REPLAY = [
    "--true-sound-speed", str(TRUE_SPEED), "--offset-error", "2", "--source-drift-error", "0.01",
    "--float-clock-drift", "0.02", "--quiet",
]  # fmt: skip
WORLDS = {
    "acceptance": ["--multipath", "0.02", "--file-sound-speed", "1500"],
    "no-multipath": ["--multipath", "0", "--file-sound-speed", "1500"],
    "flat-detection": ["--multipath", "0", "--p-detect-far", "0.95", "--file-sound-speed", "1500"],
    "files-1470": ["--multipath", "0.02", "--file-sound-speed", "1470"],
}
OFFSET_TOLERANCE = 0.5  # s
DRIFT_TOLERANCE = 0.003  # s/day
SPEED_TOLERANCE = 2.0  # m/s


def _rms(values: list[float]) -> float:
    return float(np.sqrt(np.mean(np.square(values)))) if values else float("nan")


def shared_errors(replay: Path, out: Path) -> dict[str, float]:
    """The joint run ``out``'s shared estimates against the replay's truth."""
    truth = json.loads((replay / "experiment.json").read_text())
    sources = {s["source"]: s for s in truth["sources"]}
    summary = json.loads((out / "summary.json").read_text())
    first, shared = summary["floats"][0], summary["experiment"]
    speed, speed_std = float(first["sound_speed"]), float(first["sound_speed_std"])
    offset_z, offset_ok, drift_z, drift_ok = [], [], [], []
    with open(out / "sources.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            true = sources[row["source"]]
            if row["offset_correction_std"]:
                error = float(row["offset_correction"]) - true["offset_error"]
                offset_z.append(error / float(row["offset_correction_std"]))
                offset_ok.append(abs(error) <= OFFSET_TOLERANCE)
            if row["drift_correction_std"]:
                error = float(row["drift_correction"]) - (true["true_drift"] - true["file_drift"])
                drift_z.append(error / float(row["drift_correction_std"]))
                drift_ok.append(abs(error) <= DRIFT_TOLERANCE)
    return {
        "speed_error": speed - TRUE_SPEED,
        "speed_std": speed_std,
        "speed_monte_carlo_std": float(shared.get("sound_speed_monte_carlo_std") or "nan"),
        "offsets_ok": sum(offset_ok),
        "offsets": len(offset_ok),
        "offset_rms_z": _rms(offset_z),
        "drifts_ok": sum(drift_ok),
        "drifts": len(drift_ok),
        "drift_rms_z": _rms(drift_z),
    }


def track_errors(replay: Path, out: Path) -> tuple[float, float, float, float]:
    """Median over the floats of their median and of their 90th-percentile errors (km), and
    the mean over the floats of their mean error east and north (km): how far the tracks sit
    from the truth together."""
    medians, p90s, east, north = [], [], [], []
    for track_file in sorted(out.glob("*/track.nc")):
        with (
            xr.open_dataset(track_file) as track,
            xr.open_dataset(replay / f"{track_file.parent.name}_truth.nc") as truth,
        ):
            err = position_error_km(track, truth)
            offsets = tangent_offsets(truth["lat"].values, truth["lon"].values,
                                      track["lat"].values, track["lon"].values)  # fmt: skip
        medians.append(np.median(err))
        p90s.append(np.percentile(err, 90))
        east.append(np.nanmean(offsets[0]))
        north.append(np.nanmean(offsets[1]))
    return (
        float(np.median(medians)), float(np.median(p90s)), float(np.mean(east)),
        float(np.mean(north)),
    )  # fmt: skip


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13, 14, 15])
    parser.add_argument("--worlds", nargs="+", choices=sorted(WORLDS), default=list(WORLDS)[:3])
    parser.add_argument("--floats", type=int, default=20)
    parser.add_argument("--max-days", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--calibration-particles", type=int, help="the EM's particles [default: the tracker's]"
    )
    parser.add_argument("--per-float", action="store_true", help="also calibrate float by float")
    parser.add_argument("--keep", type=Path, help="keep replays and outputs in this folder")
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        alone = " | per float: tracks km" if args.per_float else ""
        print(
            f"{args.floats} floats, records cut at {args.max_days} days, {args.workers} workers\n"
            "world seed | speed error (SE, its Monte Carlo part) z | offsets within 0.5 s (rms z) "
            "| drifts within 0.003 (rms z) | tracks km | tracks together east / north km | "
            f"wall s{alone}"
        )
        results: dict[str, list[dict[str, float]]] = {world: [] for world in args.worlds}
        for seed in args.seeds:
            for world in args.worlds:
                replay, out = root / f"replay_{world}_{seed}", root / f"joint_{world}_{seed}"
                subprocess.run(
                    [str(bin_dir / "rankmodels"), "simulate-experiment", "--out", str(replay),
                     "--floats", str(args.floats), "--max-days", str(args.max_days),
                     "--seed", str(seed), *REPLAY, *WORLDS[world]],
                    check=True,
                )  # fmt: skip
                track = [str(bin_dir / "track-float"), f"{replay}/", "--no-plots", "--quiet",
                         "--workers", str(args.workers)]  # fmt: skip
                if args.calibration_particles:
                    track += ["--calibration-particles", str(args.calibration_particles)]
                wall = _timed([*track, "--calibrate-mode", "experiment", "--out", str(out)])
                row = shared_errors(replay, out)
                results[world].append(row)
                median, p90, east, north = track_errors(replay, out)
                line = (
                    f"{world} {seed} | {row['speed_error']:+.2f} ({row['speed_std']:.2f}, "
                    f"{row['speed_monte_carlo_std']:.2f}) "
                    f"{row['speed_error'] / row['speed_std']:+.1f} | "
                    f"{row['offsets_ok']}/{row['offsets']} ({row['offset_rms_z']:.1f}) | "
                    f"{row['drifts_ok']}/{row['drifts']} ({row['drift_rms_z']:.1f}) | "
                    f"{median:.2f} / {p90:.2f} | {east:+.2f} / {north:+.2f} | {wall:.0f}"
                )
                if args.per_float:
                    per_float = root / f"alone_{world}_{seed}"
                    _timed([*track, "--out", str(per_float)])
                    line += " | {:.2f} / {:.2f}".format(*track_errors(replay, per_float)[:2])
                print(line, flush=True)
    print("world | runs | speed mean / rms error m/s | within 2 m/s | within 2 SE | "
          "offsets within 0.5 s | drifts within 0.003")  # fmt: skip
    for world, rows in results.items():
        err = np.array([r["speed_error"] for r in rows])
        z = err / np.array([r["speed_std"] for r in rows])
        offsets = f"{sum(r['offsets_ok'] for r in rows)}/{sum(r['offsets'] for r in rows)}"
        drifts = f"{sum(r['drifts_ok'] for r in rows)}/{sum(r['drifts'] for r in rows)}"
        print(
            f"{world} | {len(rows)} | {err.mean():+.2f} / {np.sqrt(np.mean(err**2)):.2f} | "
            f"{np.sum(abs(err) <= SPEED_TOLERANCE)}/{len(err)} | {np.sum(abs(z) <= 2)}/{len(z)} | "
            f"{offsets} | {drifts}"
        )


if __name__ == "__main__":
    main()
