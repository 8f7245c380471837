"""Repeated-insertion sampling of Mallows models and mixtures (numba, batched, seeded).

Repeated insertion (Doignon et al. 2004): insert ``W[0], W[1], ...`` one at a time; ``W[i]``
goes to slot ``j in {0..i}`` of the current list with probability

    phi**(i - j) / (1 + phi + ... + phi**i)

(it makes ``i - j`` discordant pairs with ``W``, independently across ``i``), which yields an
exact draw from ``P(sigma) ~ phi**d_K(sigma, W)``. For a mixture, each draw first picks its
component from the weights. Randomness: one ``numpy.random.Generator``; per block of
``rows = max(1, BLOCK // n)`` draws (fewer in the last), the component labels (mixtures only)
and then an ``(n, rows)`` array of uniforms whose row ``i`` picks the slots of ``W[i]`` by
inverting the slot CDF.
"""

from __future__ import annotations

from collections.abc import Iterator

import numba
import numpy as np

from rankmodels.permutations import as_permutation

__all__ = ["BLOCK", "block_rows", "sample_blocks", "sample_orders", "slot_cdfs"]

BLOCK = 1 << 20
"""Uniforms per block of draws: a block holds ``BLOCK // n`` draws and takes about
``16 BLOCK`` bytes (its uniforms and its orders) whatever ``n``."""


def block_rows(n: int) -> int:
    """Draws per block for ``n`` items (:data:`BLOCK`)."""
    return max(1, BLOCK // max(n, 1))


def slot_cdfs(phis: np.ndarray, n: int) -> np.ndarray:
    """``(C, n, n)`` slot CDFs: ``F[c, i, j] = P(slot <= j)`` for item ``W_c[i]``, ``j <= i``
    (1 beyond)."""
    phis = np.asarray(phis, dtype=float)
    F = np.ones((phis.size, n, n))
    for c, phi in enumerate(phis):
        for i in range(n):
            w = phi ** (i - np.arange(i + 1, dtype=float))  # slot j makes i - j inversions
            F[c, i, : i + 1] = np.cumsum(w / w.sum())
    return F


@numba.njit(cache=True)
def _insert(
    centres: np.ndarray, F: np.ndarray, labels: np.ndarray, U: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - numba
    """Fill ``out[s]`` (best first) by inserting ``centres[labels[s], i]`` at the slot that
    ``U[i, s]`` selects, ``i = 0..n-1``."""
    rows, n = out.shape
    for s in range(rows):
        c = labels[s]
        for i in range(n):
            u = U[i, s]
            j = i  # smallest j with F[c, i, j] > u (i if none): few steps when phi is small
            while j > 0 and F[c, i, j - 1] > u:
                j -= 1
            for k in range(i, j, -1):
                out[s, k] = out[s, k - 1]
            out[s, j] = centres[c, i]


def sample_blocks(
    centres: np.ndarray,
    phis: np.ndarray,
    weights: np.ndarray,
    size: int,
    rng: np.random.Generator,
) -> Iterator[np.ndarray]:
    """``size`` orders (best first) from the mixture ``sum_c weights[c]
    Mallows(centres[c], phis[c])`` in blocks ``(rows, n)`` of ``max(1, BLOCK // n)`` rows;
    ``centres`` ``(C, n)``, ``phis`` and ``weights`` ``(C,)``. Arguments are checked before
    the first block."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    centres = as_permutation(np.atleast_2d(centres), "centres")
    C, n = centres.shape
    phis = np.asarray(phis, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if phis.shape != (C,) or np.any(~(phis > 0)) or np.any(phis > 1):
        raise ValueError(f"phis must be {C} numbers in (0, 1], got {phis}")
    if weights.shape != (C,) or np.any(~(weights >= 0)) or not np.isclose(weights.sum(), 1):
        raise ValueError(f"weights must be {C} non-negative numbers summing to 1, got {weights}")
    return _blocks(centres, slot_cdfs(phis, n), weights / weights.sum(), size, rng)


def _blocks(
    centres: np.ndarray, F: np.ndarray, p: np.ndarray, size: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    C, n = centres.shape
    for start in range(0, size, block_rows(n)):
        rows = min(block_rows(n), size - start)
        if C == 1:
            labels = np.zeros(rows, dtype=np.int64)
        else:
            labels = rng.choice(C, size=rows, p=p).astype(np.int64)
        out = np.empty((rows, n), dtype=np.int64)
        _insert(centres, F, labels, rng.random((n, rows)), out)
        yield out


def sample_orders(
    centres: np.ndarray,
    phis: np.ndarray,
    weights: np.ndarray,
    size: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """``(size, n)`` orders (best first) from the mixture ``sum_c weights[c]
    Mallows(centres[c], phis[c])``: the blocks of :func:`sample_blocks`, stacked."""
    blocks = sample_blocks(centres, phis, weights, size, rng)  # checks the arguments
    out = np.empty((size, np.shape(np.atleast_2d(centres))[1]), dtype=np.int64)
    start = 0
    for block in blocks:
        out[start : start + block.shape[0]] = block
        start += block.shape[0]
    return out
