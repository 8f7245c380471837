"""Digests of what ``track-float`` writes, to show that a change of code leaves outputs alone.

Runs the commands users run on fixed inputs and hashes every variable of each ``track.nc``
(values, dtype, shape) and its attributes (those that hold a time, a duration or the package
version left out); ``--record`` stores them in ``benchmarks/digests.json``, the default run
compares against that file and prints each variable that differs.

Runs: the shipped sample ``data/float767.nc`` calibrated (the default), ``--no-calibrate`` and
``--engine bp``; a 4-float, 30-day folder (the joint-calibration tests' experiment) in batch
mode (each float calibrated alone) and with ``--calibrate-mode experiment``.

    python benchmarks/digests.py [--record] [--only NAME ...] [--keep DIR]
    python benchmarks/digests.py --record-from DIR     # digests of the outputs a --keep left

Digests hold on one machine and numba version; another CPU may round differently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
STORE = REPO / "benchmarks" / "digests.json"
#: attributes that change from run to run whatever the code computes (the input's path too)
VOLATILE = ("time", "version", "history", "date", "compile", "created", "source_file")

SAMPLE = str(REPO / "data" / "float767.nc")
RUNS: dict[str, list[str]] = {
    "sample-default": [SAMPLE],
    "sample-no-calibrate": [SAMPLE, "--no-calibrate"],
    "sample-bp": [SAMPLE, "--engine", "bp"],
    "folder-batch": ["{folder}", "--workers", "2"],
    "folder-experiment": ["{folder}", "--workers", "2", "--calibrate-mode", "experiment"],
}


def _hash(array: np.ndarray) -> str:
    array = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{array.dtype}{array.shape}".encode())
    if array.dtype.kind in "OUS":
        digest.update("\x1f".join(map(str, array.ravel())).encode())
    else:
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def digest_track(path: Path) -> dict[str, str]:
    """``{name: digest}`` of every variable of the track file ``path`` and of its attributes."""
    out = {}
    with xr.open_dataset(path, decode_times=False) as track:
        for name in sorted(track.variables):
            out[name] = _hash(track[name].values)
        attrs = {
            k: str(v)
            for k, v in sorted(track.attrs.items())
            if not any(word in k for word in VOLATILE)
        }
        out["@attrs"] = hashlib.sha256(json.dumps(attrs).encode()).hexdigest()[:16]
    return out


def _folder(work: Path) -> Path:
    from tests._experiment_data import write_experiment

    folder = work / "floats"
    write_experiment(folder, days=30)
    for truth in folder.glob("*_truth.nc"):
        truth.unlink()
    return folder


def digest_folder(out: Path) -> dict[str, dict[str, str]]:
    """Digests of each track file under ``out``, by path relative to it."""
    return {str(p.relative_to(out)): digest_track(p) for p in sorted(out.rglob("track.nc"))}


def run(name: str, work: Path) -> dict[str, dict[str, str]]:
    """Run ``RUNS[name]`` into ``work/name``; digests of each track file written."""
    out = work / name
    args = [a.replace("{folder}", str(work / "floats")) for a in RUNS[name]]
    cmd = ["track-float", *args, "--no-plots", "--quiet", "-o", str(out)]
    subprocess.run(cmd, check=True)
    return digest_folder(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help="store the digests")
    parser.add_argument("--only", nargs="*", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--keep", type=Path, help="leave the outputs in this folder")
    parser.add_argument("--record-from", type=Path, help="store the digests of a kept run")
    args = parser.parse_args()
    if args.record_from:
        found = {name: digest_folder(args.record_from / name) for name in args.only}
        STORE.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="digests-"))
    work.mkdir(parents=True, exist_ok=True)
    _folder(work)
    stored = json.loads(STORE.read_text()) if STORE.exists() else {}
    differences = 0
    for name in args.only:
        found = run(name, work)
        if args.record:
            stored[name] = found
            print(f"{name}: recorded {sum(map(len, found.values()))} digests")
            continue
        expected = stored.get(name, {})
        for track, variables in found.items():
            for var, value in variables.items():
                want = expected.get(track, {}).get(var)
                if want != value:
                    differences += 1
                    print(f"{name} {track} {var}: {want} -> {value}")
        print(f"{name}: {'identical' if not differences else 'see above'}")
    if args.record:
        STORE.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    if not args.keep:
        shutil.rmtree(work)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
