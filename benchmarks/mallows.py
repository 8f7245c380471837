"""Benchmark: Mallows sampling against prefsampling in one run, and mixture fitting.

Part 1 -- sample ``--rankings`` (10^6) rankings of ``--candidates`` (10) from one Mallows model
(``phi = --phi``): rankmodels' numba repeated-insertion sampler against
``prefsampling.ordinal.mallows`` (un-normalised ``phi``, the same model). Both outputs are
checked against the exact mean Kendall distance to the centre and the exact first-place
marginals (within 5 standard errors), so the two sample the same distribution.

Part 2 -- rankmodels alone: a 2-component mixture (10^6 draws), and the exact positional and
pairwise marginals for n up to 200 (no peer computes these without sampling).

Part 3 -- fit a 2-component mixture by EM to ``--fit-ballots`` (10^5) ballots of 10 candidates
(``--restarts`` restarts, the CLI's default 5), and check that the centres come back.

Run: ``python benchmarks/mallows.py`` (``--skip-peer`` without prefsampling; ``pip install -e
'.[bench]'`` for it). numba functions are compiled before timing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from rankmodels.aggregation import Profile
from rankmodels.aggregation.mallows import Mallows, MallowsMixture, fit_mixture
from rankmodels.permutations import inverse, kendall_distance


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def check_sample(model: Mallows, orders: np.ndarray, who: str) -> None:
    """Mean Kendall distance and first-place frequencies within 5 SE of the exact values."""
    d = kendall_distance(inverse(orders), inverse(model.centre))
    se = d.std() / np.sqrt(d.size)
    mean = model.expected_distance()
    gap = abs(d.mean() - mean)
    first = np.bincount(orders[:, 0], minlength=model.n) / orders.shape[0]
    exact = model.positional_matrix[:, 0]
    z_first = np.max(np.abs(first - exact) / np.sqrt(exact * (1 - exact) / orders.shape[0]))
    status = "ok" if gap < 5 * se and z_first < 5 else "MISMATCH"
    print(f"  {who}: mean distance {d.mean():.4f} (exact {mean:.4f}, {gap / se:.1f} SE), "
          f"first place max {z_first:.1f} SE: {status}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankings", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--phi", type=float, default=0.8)
    parser.add_argument("--fit-ballots", type=int, default=100_000)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    n, size = args.candidates, args.rankings
    model = Mallows(np.arange(n), args.phi)
    rng = np.random.default_rng(args.seed)
    model.sample(10, rng)  # compile / load the numba cache

    print(f"Part 1: {size:,} rankings of {n} candidates, phi = {args.phi}")
    ours, orders = timed(lambda: model.sample(size, rng), args.repeat)
    print(f"  rankmodels: {ours:.3f} s (best of {args.repeat})")
    check_sample(model, orders, "rankmodels")
    if not args.skip_peer:
        from prefsampling.ordinal import mallows as prefsampling_mallows

        theirs, votes = timed(
            lambda: prefsampling_mallows(size, n, args.phi, central_vote=np.arange(n), seed=1),
            1,
        )
        print(f"  prefsampling: {theirs:.1f} s; ratio {theirs / ours:,.0f}x")
        check_sample(model, np.asarray(votes, dtype=np.int64), "prefsampling")

    print("Part 2: rankmodels alone")
    other = np.roll(np.arange(n), n // 2)
    mixture = MallowsMixture(np.array([0.6, 0.4]), (model, Mallows(other, 0.6)))
    mixture.sample(10, rng)
    t, _ = timed(lambda: mixture.sample(size, rng), args.repeat)
    print(f"  2-component mixture, {size:,} rankings: {t:.3f} s")
    for m in (10, 50, 200):
        big = Mallows(np.arange(m), 0.9).as_mixture()
        t_pos, _ = timed(lambda big=big: big.positional_matrix, args.repeat)
        t_pair, _ = timed(lambda big=big: big.pairwise, args.repeat)
        print(f"  exact marginals n = {m}: positional {t_pos * 1e3:.2f} ms, "
              f"pairwise {t_pair * 1e3:.2f} ms")  # fmt: skip

    print(f"Part 3: EM fit of a 2-component mixture, {args.fit_ballots:,} ballots of {n}")
    truth = MallowsMixture(np.array([0.6, 0.4]), (Mallows(np.arange(n), 0.6), Mallows(other, 0.7)))
    ballots = truth.sample(args.fit_ballots, rng)
    fit_mixture(ballots[:200], 2, np.random.default_rng(1), restarts=1)  # compile
    start = time.perf_counter()
    profile = Profile.from_orders(ballots)
    t_hist = time.perf_counter() - start
    t_fit, fit = timed(
        lambda: fit_mixture(profile, 2, np.random.default_rng(1), restarts=args.restarts), 1
    )
    got = sorted(tuple(c.centre.tolist()) for c in fit.model.components)
    want = sorted(tuple(c.centre.tolist()) for c in truth.components)
    print(f"  histogram {t_hist:.2f} s ({profile.weights.size:,} distinct ballots); "
          f"EM {t_fit:.2f} s for {args.restarts} restarts ({t_fit / args.restarts:.2f} s each, "
          f"{fit.trace.size} iterations in the best); centres "
          f"{'recovered' if got == want else 'WRONG'}; phi "
          f"{', '.join(f'{c.phi:.3f}' for c in fit.model.components)}")  # fmt: skip


if __name__ == "__main__":
    main()
