"""Brute-force references shared by the aggregation tests (small n only)."""

from __future__ import annotations

import numpy as np

from rankmodels.aggregation import Profile
from rankmodels.permutations import all_permutations, inverse


def expanded_distribution(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """``(orders, probs)`` over all of ``S_n``: each weak order spread uniformly over its
    linear extensions, found by testing every permutation (independent of the library)."""
    n = profile.n
    perms = all_permutations(n)
    probs = np.zeros(len(perms))
    for groups, p in zip(profile.weak_orders(), profile.probabilities, strict=True):
        level = np.empty(n, dtype=int)
        for g, members in enumerate(groups):
            level[members] = g
        ok = np.all(np.diff(level[perms], axis=1) >= 0, axis=1)
        probs[ok] += p / ok.sum()
    return perms, probs


def random_weak_profile(n: int, rng: np.random.Generator, m: int = 8) -> Profile:
    """Random ballots with random ties and truncation."""
    ballots = []
    for _ in range(m):
        perm = rng.permutation(n)
        keep = rng.integers(1, n + 1)
        cuts = np.sort(rng.choice(np.arange(1, keep), size=rng.integers(0, keep), replace=False))
        ballots.append([g.tolist() for g in np.split(perm[:keep], cuts) if g.size])
    return Profile.from_weak_orders(ballots, rng.integers(1, 5, size=m), n)


def ranks_of(orders: np.ndarray) -> np.ndarray:
    return inverse(orders)
