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

Run: ``python benchmarks/aggregation.py`` (``--ballots 100000`` for a quick run). Needs
pref_voting (``pip install -e '.[bench]'``). numba functions are compiled before timing.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

from rankmodels.aggregation import Profile, aggregate
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ballots", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--kemeny-ballots", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
