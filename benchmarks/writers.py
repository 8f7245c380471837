"""Benchmark: writing ballots and tables, whole commands against prefsampling, and each writer
against the reader of its format.

Part 1 -- ``rankmodels mallows sample`` of ``-n`` (10^6) votes on ``--candidates`` (10),
``phi = --phi``, to a votes CSV, as a child process: wall time, CPU time and peak RSS
(``os.wait4``). The peer is the same job done with prefsampling: ``prefsampling.ordinal.
mallows`` draws the votes, ``collections.Counter`` merges equal ones and ``csv.writer`` writes
the same CSV (columns ranking, count; rows in the same order). ``--before DIR`` also times the
command of another source tree, run with ``PYTHONPATH=DIR``: ``git archive REV | tar -x -C
DIR`` and ``ln -s apps DIR/rankmodels_app``.

Part 2 -- in this process, on the profile just written: each ballot writer (votes CSV,
PrefLib, ABIF) against reading its output back (``read_votes``), and the float record's CSV
export (``float export``) against its import, on ``data/float767.nc``.

Run: ``python benchmarks/writers.py [-n 1000000] [--peer-votes N] [--before DIR]``
(prefsampling is in the ``bench`` extra; ``--skip-peer`` without it). Numba functions are
compiled by an untimed first run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "from rankmodels_app.cli import main; main()"
PEER = """
import collections, csv, sys
import numpy as np
from prefsampling.ordinal import mallows
n, m, phi, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
names = [chr(65 + i) for i in range(m)]
votes = mallows(n, m, phi, central_vote=np.arange(m), seed=1)
counts = collections.Counter(tuple(int(x) for x in vote) for vote in votes)
with open(out, "w", newline="") as handle:
    writer = csv.writer(handle, lineterminator="\\n")
    writer.writerow(["ranking", "count"])
    for vote in sorted(counts):
        writer.writerow([">".join(names[x] for x in vote), counts[vote]])
"""


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (MB) of one child process, run in the folder that
    ``env``'s ``PYTHONPATH`` names (the repository by default: ``python -c`` puts the working
    folder first on the path)."""
    started = time.perf_counter()
    cwd = (env or {}).get("PYTHONPATH", ROOT)
    proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **(env or {})})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def sample_argv(n: int, m: int, phi: float, out: Path) -> list[str]:
    centre = ",".join(chr(65 + i) for i in range(m))
    words = ["mallows", "sample", "--centre", centre, "--phi", str(phi), "-n", str(n)]
    return [sys.executable, "-c", SAMPLE, *words, "--seed", "1", "-o", str(out), "-q"]


def best(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def part_one(args: argparse.Namespace, folder: Path) -> Path:
    n, m, phi = args.voters, args.candidates, args.phi
    trees = {"rankmodels mallows sample": {}}
    if args.before:
        trees["the same, --before tree"] = {"PYTHONPATH": str(args.before)}
    print(f"Part 1: {n:,} votes of {m} candidates, phi = {phi}, to a votes CSV")
    print("| command | wall s | CPU s | peak RSS MB | CSV rows |")
    print("|---|---|---|---|---|")
    walls = {}
    for k, (label, env) in enumerate(trees.items()):
        out = folder / f"votes{k}.csv"
        run(sample_argv(1000, m, phi, out), env)  # compile / load the numba cache
        wall, cpu, rss = run(sample_argv(n, m, phi, out), env)
        walls[label] = wall
        lines = sum(1 for _ in open(out)) - 1
        print(f"| `{label}` | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {lines:,} |")
    if not args.skip_peer:
        peer_n = args.peer_votes or n
        peer = folder / "peer.csv"
        wall, cpu, rss = run([sys.executable, "-c", PEER, str(peer_n), str(m), str(phi), peer])
        lines = sum(1 for _ in open(peer)) - 1
        print(f"| prefsampling + Counter + csv ({peer_n:,} votes) | {wall:.2f} | {cpu:.2f} "
              f"| {rss:.0f} | {lines:,} |")  # fmt: skip
        if peer_n == n:
            ours = walls["rankmodels mallows sample"]
            print(f"ratio prefsampling / rankmodels, whole commands: {wall / ours:.0f}x")
    return folder / "votes0.csv"


def part_two(votes: Path, folder: Path) -> None:
    from rankmodels.aggregation import read_votes, write_abif, write_preflib, write_votes_csv
    from rankmodels.tracking.records import read_float
    from rankmodels.tracking.tables import (
        export_tables,
        parse_meta,
        read_meta_table,
        record_from_tables,
    )

    profile = read_votes(votes)
    print(f"\nPart 2: writers against readers ({profile.weights.size:,} distinct ballots)")
    print("| format | write s | read s | write / read |")
    print("|---|---|---|---|")
    for name, writer in (
        ("votes CSV", write_votes_csv),
        ("PrefLib .soc", write_preflib),
        ("ABIF", write_abif),
    ):
        path = folder / {"votes CSV": "w.csv", "PrefLib .soc": "w.soc", "ABIF": "w.abif"}[name]

        def write(path: Path = path, writer=writer) -> None:
            with open(path, "w", encoding="utf-8") as handle:
                writer(profile, handle)

        t_write = best(write)
        t_read = best(lambda path=path: read_votes(path))
        print(f"| {name} | {t_write:.2f} | {t_read:.2f} | {t_write / t_read:.2f} |")
    record = read_float(ROOT / "data" / "float767.nc")
    tables = folder / "tables"
    t_write = best(lambda: export_tables(record, tables))
    meta = parse_meta(read_meta_table(tables / "meta.csv"))
    t_read = best(lambda: record_from_tables(tables / "toa.csv", tables / "sources.csv", meta))
    print(f"| float767 CSV tables (728 cycles) | {t_write:.3f} | {t_read:.3f} "
          f"| {t_write / t_read:.2f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--voters", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--phi", type=float, default=0.8)
    parser.add_argument("--peer-votes", type=int, default=0, help="prefsampling's n [-n]")
    parser.add_argument("--before", type=Path, default=None, help="another source tree")
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        votes = part_one(args, Path(tmp))
        part_two(votes, Path(tmp))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
