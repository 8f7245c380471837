"""``java.util.Random`` bit for bit, for tie-breaks that certified tabulators draw with it.

A 48-bit linear congruential generator (Knuth, TAOCP vol. 2, 3.2.1):
``seed <- (seed * 0x5DEECE66D + 0xB) mod 2**48``, ``next(bits)`` the top ``bits`` bits.
``nextDouble() = (next(26) * 2**27 + next(27)) / 2**53``; ``nextInt(bound)`` rejects the
draws that would bias the remainder; ``Collections.shuffle`` swaps element ``i - 1`` with
``nextInt(i)`` for ``i = n .. 2``.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["JavaRandom", "shuffle"]

_MULTIPLIER = 0x5DEECE66D
_MASK = (1 << 48) - 1
T = TypeVar("T")


class JavaRandom:
    """The generator ``new java.util.Random(seed)`` (``seed`` any 64-bit integer)."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + 0xB) & _MASK
        value = self._seed >> (48 - bits)
        return value - (1 << 32) if bits == 32 and value >= 1 << 31 else value

    def next_int32(self) -> int:
        """A uniform signed 32-bit integer (``nextInt()``)."""
        return self._next(32)

    def next_double(self) -> float:
        """Uniform on ``[0, 1)`` with 53 random bits (``nextDouble``)."""
        return ((self._next(26) << 27) + self._next(27)) * 2.0**-53

    def next_int(self, bound: int) -> int:
        """Uniform on ``0 .. bound - 1`` (``nextInt(bound)``, ``bound >= 1``)."""
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: the top bits
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + m < 1 << 31:  # no int32 overflow: not in the biased tail
                return r
            u = self._next(31)


def shuffle(items: list[T], random: JavaRandom) -> None:
    """Shuffle ``items`` in place as ``Collections.shuffle(items, random)`` does."""
    for i in range(len(items), 1, -1):
        j = random.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]
