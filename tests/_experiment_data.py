"""A tiny simulated experiment for the joint-calibration tests: short floats spread over the
DIMES array, sharing its sources, with a true sound speed other than the files', written
source offsets off by shared errors and each float's own clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankmodels.tracking import simulate
from rankmodels.tracking.records import write_float

DEPLOYED = np.datetime64("2009-05-25", "ns")
FILE_SPEED = 1500.0
TRUE_SPEED = 1485.0
#: launch (lat, lon), end (lat, lon), clock offset (s), clock drift (s/day) of each float
FLOATS = (
    ((-56.6, -106.0), (-57.2, -103.0), 0.5, 0.02),
    ((-59.2, -92.0), (-58.8, -89.0), -0.8, -0.01),
    ((-56.8, -80.0), (-57.5, -77.0), 0.2, 0.015),
    ((-59.0, -66.0), (-58.5, -63.5), -0.3, 0.0),
)
#: written offsets are off by these (s), shared by every float that hears the source
OFFSET_ERRORS = np.array([1.5, -1.0, 0.5, -1.5, 1.0, -0.5, 0.8, -0.8, 1.2, -1.2, 0.3, -0.3])


def write_experiment(
    folder: Path, days: int = 30, n_floats: int = 4, source_drift: float = 0.0, seed: int = 0
) -> list[Path]:
    """Write ``n_floats`` records (``fK.nc``, truth beside as ``fK_truth.nc``) of ``days``
    cycles into ``folder``; the sources drift ``source_drift`` s/day (stated as 0 in the
    records). Returns the record paths."""
    folder.mkdir(parents=True, exist_ok=True)
    launch_time = np.datetime64("2009-06-01T00:00", "ns")
    sources = [
        simulate.Source(name, lat, lon, offset=20.0 * (i % 4), start=DEPLOYED, drift=source_drift)
        for i, (name, lat, lon) in enumerate(simulate.DIMES_SOURCES)
    ]
    spec = simulate.SignalSpec(sound_speed=FILE_SPEED, sigma=3.0, clutter_rate=0.5, p_detect=0.9)
    paths = []
    for k, (start, end, offset, drift) in enumerate(FLOATS[:n_floats]):
        track_days = np.arange(1, days + 1, dtype=float)
        lat, lon = simulate.straight_track(track_days, start, end, float(days))
        mismatch = simulate.Mismatch(
            clock_offset=offset, clock_drift=drift, true_sound_speed=TRUE_SPEED
        )
        record, truth = simulate.simulate_record(
            sources,
            launch_time + track_days[:-1].astype(np.int64) * simulate.DAY,
            lat[:-1],
            lon[:-1],
            (start[0], start[1], launch_time),
            spec,
            np.random.default_rng([seed, k]),
            recovery=(float(lat[-1]), float(lon[-1]), launch_time + days * simulate.DAY),
            float_id=f"f{k}",
            mismatch=mismatch,
            mismatch_rng=np.random.default_rng([seed, k, 1]),
        )
        record["source_offset"] = record["source_offset"] + OFFSET_ERRORS
        if "source_drift" in record:
            record = record.drop_vars("source_drift")
        path = folder / f"f{k}.nc"
        write_float(record, path)
        truth.to_netcdf(folder / f"f{k}_truth.nc")
        paths.append(path)
    return paths
