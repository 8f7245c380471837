"""Single transferable vote on a large generated contest: the whole ``aggregate --rule stv``
command, and VoteKit's STV on the same ballots when VoteKit is installed (``bench`` extra).

    python benchmarks/elections.py --ballots 1000000 --out /tmp/stv_1m.csv

writes the rank-column CSV (20 candidates, 1 to 6 ranks per ballot, Plackett-Luce with
weights ``1/(i+1)``, seeded), then times ``aggregate --rule stv --seats 5`` on it with
``/usr/bin/time`` (wall, user CPU, peak memory) and, when VoteKit imports, VoteKit's
``STV`` (fractional transfer) on the distinct ballots of the same file, timed in-process
from the CSV read on.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

CANDIDATES = [f"C{i:02d}" for i in range(1, 21)]
RANKS = 6


def generate(path: Path, ballots: int, seed: int) -> None:
    """Write ``ballots`` Plackett-Luce ballots (Gumbel-max trick) as a rank-column CSV."""
    rng = np.random.default_rng(seed)
    weights = np.log(1.0 / np.arange(1, len(CANDIDATES) + 1))
    names = np.array(CANDIDATES)
    with open(path, "w") as out:
        out.write(",".join(f"rank{k}" for k in range(1, RANKS + 1)) + "\n")
        for lo in range(0, ballots, 100_000):
            size = min(100_000, ballots - lo)
            keys = weights + rng.gumbel(size=(size, len(CANDIDATES)))
            top = names[np.argsort(-keys, axis=1)[:, :RANKS]]
            length = rng.integers(1, RANKS + 1, size=size)
            out.writelines(
                ",".join(list(row[:k]) + [""] * (RANKS - k)) + "\n"
                for row, k in zip(top, length, strict=True)
            )


def time_command(args: list[str]) -> str:
    """``/usr/bin/time -f`` of a command: wall, user CPU, peak resident memory."""
    run = subprocess.run(
        ["/usr/bin/time", "-f", "wall %e s, user %U s, peak %M kB", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stderr.strip().splitlines()[-1]


def votekit_stv(path: Path, seats: int) -> str:
    """VoteKit's STV on the file's distinct ballots, timed from reading the CSV."""
    from votekit import RankBallot, RankProfile
    from votekit.elections import STV

    start = time.perf_counter()
    with open(path) as handle:
        next(handle)
        distinct = Counter(tuple(c for c in line.rstrip("\n").split(",") if c) for line in handle)
    profile = RankProfile(
        ballots=[
            RankBallot(ranking=tuple(frozenset({c}) for c in r), weight=w)
            for r, w in distinct.items()
        ],
        candidates=CANDIDATES,
        max_ranking_length=RANKS,
    )
    election = STV(profile, n_seats=seats)
    winners = election.get_elected()
    elapsed = time.perf_counter() - start
    return f"votekit STV: {elapsed:.1f} s in-process, elected {winners}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ballots", type=int, default=1_000_000)
    parser.add_argument("--seats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/stv_ballots.csv"))
    parser.add_argument("--votekit", action="store_true", help="also time VoteKit's STV")
    args = parser.parse_args()
    if not args.out.exists():
        generate(args.out, args.ballots, args.seed)
    report = args.out.with_suffix(".report.txt")
    command = ["aggregate", "--rule", "stv", "--seats", str(args.seats), str(args.out)]
    print("aggregate --rule stv:", time_command([*command, "-o", str(report), "--quiet"]))
    if args.votekit:
        try:
            print(votekit_stv(args.out, args.seats))
        except ImportError as err:
            print(f"votekit not installed: {err}", file=sys.stderr)


if __name__ == "__main__":
    main()
