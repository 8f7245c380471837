"""What position fixes and source clock drift do to a track (``docs/validation.md``,
"Position fixes and source clock drift").

Fixes: a 300-day drifting float (``dimes_float767``) that surfaces every 10 days for the first
100 days (``--fix-every 10 --fix-until 100``, fix error 0.5 km) and then stays under the ice,
tracked as ``track-float`` does (calibrated, ``--multipath 0.02``, 10,000 particles), with and
without its fixes; the error of the smoothed track at the fix times, over the first 100 days and
over the whole record (median / p90 km). Drift: the same float's sources drifting 0.01 s/day,
tracked with the drift given, against the drift-free float (same seed).

    python benchmarks/fixes.py [--seeds 1 2 3] [--particles 10000]
"""

from __future__ import annotations

import argparse

import numpy as np

from rankmodels.tracking import TrackConfig, track_float
from rankmodels.tracking.config import COMMAND_MULTIPATH
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.records import validate_float
from rankmodels.tracking.simulate import FixSchedule, dimes_float767

FIX_VARIABLES = ["fix_time", "fix_lat", "fix_lon", "fix_error"]


def _stats(err: np.ndarray) -> str:
    return f"{np.median(err):.2f} / {np.percentile(err, 90):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=300)
    args = parser.parse_args()
    config = TrackConfig(particles=args.particles, calibrate=True, multipath=COMMAND_MULTIPATH)
    print("seed | at fixes median / max | first 100 d with / without | all with / without")
    for seed in args.seeds:
        record, truth = dimes_float767(seed, days=args.days, fixes=FixSchedule(10.0, 100.0, 0.5))
        with_fixes = position_error_km(track_float(validate_float(record), config)[0], truth)
        bare = validate_float(record.drop_vars(FIX_VARIABLES))
        without = position_error_km(track_float(bare, config)[0], truth)
        at = truth["time"].values.searchsorted(record["fix_time"].values)
        print(
            f"{seed} | {np.median(with_fixes[at]):.2f} / {with_fixes[at].max():.2f} | "
            f"{_stats(with_fixes[:100])} / {_stats(without[:100])} | "
            f"{_stats(with_fixes)} / {_stats(without)}",
            flush=True,
        )
    plain_config = TrackConfig(particles=args.particles)
    print("seed | drift given | drift-free | drift ignored (median / p90 km)")
    for seed in args.seeds:
        plain, truth = dimes_float767(seed, days=args.days)
        drifting, _ = dimes_float767(seed, days=args.days, source_drift=0.01)
        drifting = validate_float(drifting)
        ignored = drifting.copy(deep=True)
        ignored["source_drift"].values[:] = 0.0
        cells = [
            _stats(position_error_km(track_float(rec, plain_config)[0], truth))
            for rec in (drifting, validate_float(plain), ignored)
        ]
        print(f"{seed} | {' | '.join(cells)}", flush=True)


if __name__ == "__main__":
    main()
