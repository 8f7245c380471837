"""Benchmark: rank aggregation, rankmodels against pref_voting in one run.

Part 1 -- Borda and plurality on 10^6 raw ballots over 10 candidates (impartial culture).
The timing of both libraries includes building the profile from the raw ``(N, n)`` ballot
array (rankmodels: :meth:`Profile.from_orders`, a histogram of unique ballots; pref_voting:
``Profile(rankings)``) and then computing the scores.

Part 2 -- exact Kemeny. n = 8 with ``--kemeny-ballots`` ballots (pref_voting's
``kemeny_young_rankings`` scores all n! rankings against every ballot type, so it is timed on
a modest profile); n = 16 and n = 20 for rankmodels alone (pref_voting would enumerate
2 * 10^13 and 2.4 * 10^18 rankings). rankmodels is timed twice: ``kemeny`` as
:func:`~rankmodels.aggregation.aggregate` runs it (majority components first) and
``split=False`` (one subset DP over all n candidates, the worst case).

Part 3 -- real files end to end (``--files``). The same 10^6 ballots written as a votes CSV
(30 MB, one ballot per line), a PrefLib ``.soc`` (equal ballots merged: 874k lines) and a
cast-vote record (``rank1 .. rank10`` columns), in a temporary folder. For each file: the
whole ``aggregate --rule borda`` and ``--rule irv`` command as a fresh process (interpreter
start, reading, the rule, the axiom report, JSON written), its wall time, CPU time (user +
system: on a shared machine the wall time also counts other jobs) and peak memory
(``/usr/bin/time -v``); reading alone in this process (ballots per second); the command on
a one-ballot file (the fixed start-up cost); and pref_voting
in a fresh process reading the same file and running the same rule (``preflib_to_profile``
for the ``.soc``, ``csv_to_profile(csv_format="rank_columns")`` for the CVR; it has no
reader for the votes CSV), one run each, killed after ``--pv-timeout`` seconds.

Run: ``python benchmarks/aggregation.py`` (``--ballots 100000`` for a quick run; ``--files``
adds part 3, ``--only-files`` runs only it). Needs pref_voting (``pip install -e
'.[bench]'``) and ``/usr/bin/time``. numba functions are compiled before timing.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankmodels.aggregation import Profile, aggregate, read_votes, score_vector, write_preflib
from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.distance import kemeny


def best_time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def impartial_culture(n_ballots: int, n: int, rng: np.random.Generator) -> np.ndarray:
    return np.argsort(rng.random((n_ballots, n)), axis=1)


def row(label: str, ours: float, theirs: float | None) -> str:
    if theirs is None:
        return f"| {label} | {ours * 1e3:,.1f} ms | cannot | - |"
    return f"| {label} | {ours * 1e3:,.1f} ms | {theirs:,.2f} s | {theirs / ours:,.0f}x |"


def write_files(folder: Path, raw: np.ndarray) -> dict[str, Path]:
    """The ballots ``raw`` as a votes CSV, a PrefLib ``.soc`` and a cast-vote record."""
    names = np.array([f"c{i}" for i in range(raw.shape[1])])
    rows = names[raw].tolist()
    paths = {"CSV": folder / "votes.csv", ".soc": folder / "votes.soc", "CVR": folder / "cvr.csv"}
    paths["CSV"].write_text("ranking\n" + "\n".join(map(">".join, rows)) + "\n")
    header = ",".join(f"rank{k + 1}" for k in range(raw.shape[1]))
    paths["CVR"].write_text(header + "\n" + "\n".join(map(",".join, rows)) + "\n")
    with open(paths[".soc"], "w") as handle:
        write_preflib(Profile.from_orders(raw, candidates=list(names)), handle)
    return paths


@dataclass(frozen=True)
class Run:
    """One fresh process: wall and CPU (user + system) seconds, peak memory, its output."""

    wall: float
    cpu: float
    peak_mb: float
    stdout: str


def timed_process(args: list[str], timeout: float) -> Run | None:
    """Run ``args`` under ``/usr/bin/time -v``; ``None`` after ``timeout`` seconds."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            ["/usr/bin/time", "-v", *args], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{done.stderr[-2000:]}")

    def field(label: str) -> float:
        return float(re.search(label + r": ([\d.]+)", done.stderr).group(1))

    cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
    peak = field(r"Maximum resident set size \(kbytes\)") / 1024
    return Run(seconds, cpu, peak, done.stdout)


AGGREGATE = "from rankmodels_app.aggregate import aggregate_main; aggregate_main()"
"""The ``aggregate`` console script."""

PREF_VOTING = """
import sys, warnings
warnings.filterwarnings("ignore")
from pref_voting.io.readers import csv_to_profile, preflib_to_profile
from pref_voting.iterative_methods import instant_runoff
path, rule = sys.argv[1], sys.argv[2]
if path.endswith(".soc"):
    profile = preflib_to_profile(path, as_linear_profile=True)
else:
    profile = csv_to_profile(path, csv_format="rank_columns", as_linear_profile=True)
print(profile.borda_scores() if rule == "borda" else instant_runoff(profile))
"""


def check_same(report: dict, theirs: object, n_ballots: int) -> None:
    """Our JSON report agrees with pref_voting's printed result: Borda scores (theirs are
    totals over ballots ``c0``, ``c1``, ... numbered 0, 1, ...; ours are averages), or the
    instant-runoff winners."""
    if report["rule"] == "borda":
        ours = {int(name[1:]): score * n_ballots for name, score in report["scores"].items()}
        assert all(np.isclose(ours[c], theirs[c]) for c in theirs), (ours, theirs)
    else:
        assert [int(name[1:]) for name in report["winners"]] == sorted(theirs)


def _aggregate_args(path: Path, rule: str, out: Path) -> list[str]:
    return [sys.executable, "-c", AGGREGATE, "--rule", rule, "--format", "json", "--quiet",
            "-o", str(out), str(path)]  # fmt: skip


def _cell(run: Run | None, timeout: float) -> str:
    return f"> {timeout:,.0f} s | - | -" if run is None else (
        f"{run.wall:,.2f} s | {run.cpu:,.2f} s | {run.peak_mb:,.0f} MB"
    )  # fmt: skip


def end_to_end(raw: np.ndarray, timeout: float) -> list[str]:
    """Part 3: the ``aggregate`` command and pref_voting on files of the ballots ``raw``."""
    lines = [
        "| file | rule | `aggregate` wall | CPU | peak memory | pref_voting wall | CPU | "
        "peak memory | ratio (wall) | ratio (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    reading = []
    with tempfile.TemporaryDirectory(prefix="aggregation-bench-") as folder:
        paths = write_files(Path(folder), raw)
        out = Path(folder) / "out.json"
        for path in paths.values():  # compile every reader, rule and the axiom report
            profile = read_votes(path)
            for rule in ("borda", "irv"):
                result = aggregate(profile, rule)
                profile_axiom_report(profile, result, score_vector(rule, profile.n))
        for label, path in paths.items():
            start = time.perf_counter()
            profile = read_votes(path)
            seconds = time.perf_counter() - start
            reading.append(
                f"| {label} | {path.stat().st_size / 1e6:,.0f} MB | {seconds:,.2f} s | "
                f"{raw.shape[0] / seconds / 1e6:,.2f} M/s | {profile.weights.size:,} |"
            )
            for rule in ("borda", "irv"):
                ours = timed_process(_aggregate_args(path, rule, out), timeout)
                report = json.loads(out.read_text())
                assert report["ballots"] == raw.shape[0]  # the command really read them all
                theirs = None
                if label != "CSV":  # pref_voting has no reader for the votes CSV
                    theirs = timed_process(
                        [sys.executable, "-c", PREF_VOTING, str(path), rule], timeout
                    )
                if theirs is not None:
                    check_same(report, ast.literal_eval(theirs.stdout.strip()), raw.shape[0])
                ratios = "- | -" if theirs is None else (
                    f"{theirs.wall / ours.wall:,.0f}x | {theirs.cpu / ours.cpu:,.0f}x"
                )  # fmt: skip
                pv = "no reader | - | -" if label == "CSV" else _cell(theirs, timeout)
                lines.append(f"| {label} | {rule} | {_cell(ours, timeout)} | {pv} | {ratios} |")
        one = Path(folder) / "one.csv"
        one.write_text("ranking\nc0>c1\n")
        start_up = timed_process(_aggregate_args(one, "borda", out), timeout)
        profile = read_votes(paths["CSV"])
        t_irv, result = best_time(lambda: aggregate(profile, "irv"), 1)
        t_borda, _ = best_time(lambda: aggregate(profile, "borda"), 1)
    return [
        *lines,
        "",
        "| file | size | `read_votes` | ballots per second | distinct ballots |",
        "|---|---|---|---|---|",
        *reading,
        "",
        f"after reading: IRV {t_irv * 1e3:,.0f} ms ({len(result.details['rounds'])} rounds), "
        f"Borda {t_borda * 1e3:,.0f} ms on {profile.weights.size:,} distinct ballots",
        f"start-up (the command on a one-ballot file): {_cell(start_up, timeout)}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ballots", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--kemeny-ballots", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", action="store_true", help="add part 3 (files end to end)")
    parser.add_argument("--only-files", action="store_true", help="run only part 3")
    parser.add_argument("--pv-timeout", type=float, default=1800.0)
    args = parser.parse_args()
    if args.only_files:
        raw = impartial_culture(args.ballots, args.candidates, np.random.default_rng(args.seed))
        print("\n".join(end_to_end(raw, args.pv_timeout)))
        return
    warnings.filterwarnings("ignore")
    from pref_voting.other_methods import kemeny_young_rankings
    from pref_voting.profiles import Profile as PVProfile

    rng = np.random.default_rng(args.seed)
    lines = ["| task | rankmodels | pref_voting | ratio |", "|---|---|---|---|"]

    # ---- part 1: positional rules on raw ballots
    raw = impartial_culture(args.ballots, args.candidates, rng)
    aggregate(Profile.from_orders(raw[:100]), "borda")  # compile
    t_borda, ours_b = best_time(lambda: aggregate(Profile.from_orders(raw), "borda"), args.repeat)
    t_plur, ours_p = best_time(
        lambda: aggregate(Profile.from_orders(raw), "plurality"), args.repeat
    )
    start = time.perf_counter()
    theirs = PVProfile(raw)
    t_pv_profile = time.perf_counter() - start
    t_pv_borda, borda = best_time(theirs.borda_scores, 1)
    t_pv_plur, plural = best_time(theirs.plurality_scores, 1)
    n = args.candidates
    assert np.allclose(ours_b.scores * args.ballots, [borda[x] for x in range(n)])
    assert np.allclose(ours_p.scores * args.ballots, [plural[x] for x in range(n)])
    label = f"{args.ballots:,} ballots, {n} candidates"
    lines.append(row(f"Borda, {label}", t_borda, t_pv_profile + t_pv_borda))
    lines.append(row(f"plurality, {label}", t_plur, t_pv_profile + t_pv_plur))

    # ---- part 2: exact Kemeny
    small = impartial_culture(args.kemeny_ballots, 8, rng)
    profile8 = Profile.from_orders(small)
    kemeny(profile8)  # compile
    t8, res8 = best_time(lambda: kemeny(profile8), args.repeat)
    t8_whole, _ = best_time(lambda: kemeny(profile8, split=False), args.repeat)
    t_pv8, (rankings, distance) = best_time(lambda: kemeny_young_rankings(PVProfile(small)), 1)
    assert {tuple(t) for t in res8.ties} == {tuple(r) for r in rankings}
    assert np.isclose(res8.objective * args.kemeny_ballots, distance)
    label = f"{args.kemeny_ballots} ballots"
    lines.append(row(f"Kemeny n = 8, {label}", t8, t_pv8))
    lines.append(row(f"Kemeny n = 8, {label}, one DP over all 8", t8_whole, t_pv8))
    for size in (16, 20):
        profile = Profile.from_orders(impartial_culture(1000, size, rng))
        t, res = best_time(lambda p=profile: kemeny(p), 1)
        t_whole, whole = best_time(lambda p=profile: kemeny(p, split=False), 1)
        assert np.isclose(res.objective, whole.objective)
        biggest = max(len(c) for c in res.details["components"])
        lines.append(row(f"Kemeny n = {size}, 1000 ballots (largest component {biggest})", t, None))
        lines.append(row(f"Kemeny n = {size}, one DP over all {size}", t_whole, None))
    print("\n".join(lines))
    if args.files:
        print("\n".join(["", *end_to_end(raw, args.pv_timeout)]))


if __name__ == "__main__":
    main()
