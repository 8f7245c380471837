"""Ballots as cast: for every rank, the marks the voter made there.

A ballot is a :data:`Ranking`, the tuple of its marked ranks in increasing order, each a
``(rank, marks)`` pair: ``rank`` counts from 1 and ranks the voter left empty are absent
(so a skipped rank is a gap in the numbers), ``marks`` are candidate codes in increasing
order -- two or more of them are an overvote whose candidates are known -- or the single
code :data:`OVERVOTE` when the record only says "overvote". A candidate ranked twice
appears at both ranks. Undeclared write-ins are a candidate of their own
(:data:`UNDECLARED_WRITE_INS`, the last code). A ballot with no marked rank is an
*undervote*: it is kept (it counts among the ballots cast) and never counts for anybody.

Nothing is decided while reading: the rules of a contest (:class:`.rules.Rules`) apply when
the ballots are counted. :class:`BallotCounter` merges equal ballots as they stream by, so
memory grows with the number of *distinct* ballots, not with the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OVERVOTE",
    "UNDECLARED_WRITE_INS",
    "BallotCounter",
    "CastBallots",
    "Ranking",
    "from_profile",
    "ranking_from_marks",
]

OVERVOTE = -1
"""Code of an overvote mark that does not say which candidates were marked."""

UNDECLARED_WRITE_INS = "Undeclared Write-ins"
"""The name under which all undeclared write-ins are counted (RCTab's)."""

Ranking = tuple[tuple[int, tuple[int, ...]], ...]
"""Marked ranks of one ballot, increasing: ``((rank, (code, ...)), ...)``."""


def ranking_from_marks(marks: Iterable[tuple[int, int]]) -> Ranking:
    """The :data:`Ranking` of ``(rank, code)`` marks given in any order (``rank >= 1``)."""
    by_rank: dict[int, list[int]] = {}
    for rank, code in marks:
        by_rank.setdefault(rank, []).append(code)
    return tuple((rank, tuple(sorted(by_rank[rank]))) for rank in sorted(by_rank))


@dataclass(frozen=True)
class CastBallots:
    """Distinct ballots as cast and how many times each was cast.

    ``candidates``: names, indexed by the codes in the rankings (undeclared write-ins, when
    present, last, named :data:`UNDECLARED_WRITE_INS`); ``rankings``: the distinct
    ballots; ``counts``: ``(m,)`` int64, how many ballots of each.
    """

    candidates: tuple[str, ...]
    rankings: tuple[Ranking, ...]
    counts: np.ndarray

    @property
    def total(self) -> int:
        """Number of ballots cast."""
        return int(self.counts.sum())

    @property
    def undervotes(self) -> int:
        """Ballots without any marked rank."""
        return int(sum(c for r, c in zip(self.rankings, self.counts, strict=True) if not r))

    @property
    def max_rank(self) -> int:
        """The largest rank marked on any ballot (0 without marks)."""
        return max((r[-1][0] for r in self.rankings if r), default=0)


class BallotCounter:
    """Distinct :data:`Ranking` s and their counts, growing as ballots arrive."""

    def __init__(self) -> None:
        self._index: dict[Ranking, int] = {}
        self._counts: list[int] = []

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, ranking: Ranking, count: int = 1) -> None:
        """Count ``count`` more ballots ``ranking``."""
        i = self._index.setdefault(ranking, len(self._counts))
        if i == len(self._counts):
            self._counts.append(count)
        else:
            self._counts[i] += count

    def merge(self, other: BallotCounter) -> None:
        """Add every ballot counted by ``other``."""
        for ranking, i in other._index.items():
            self.add(ranking, other._counts[i])

    def ballots(self, candidates: Sequence[str]) -> CastBallots:
        """The ballots counted, for the candidate names the codes index."""
        return CastBallots(
            tuple(candidates), tuple(self._index), np.array(self._counts, dtype=np.int64)
        )


def from_profile(profile) -> CastBallots:
    """The ballots of a :class:`~rankmodels.aggregation.profile.Profile` as cast: each
    ballot's tie groups at ranks 1, 2, ... (a group of two or more is an overvote), its
    unranked last group left unmarked; weights must be whole numbers."""
    counter = BallotCounter()
    n = profile.n
    for order, level, weight in zip(profile.orders, profile.levels, profile.weights, strict=True):
        if weight != int(weight):
            raise ValueError("counting needs whole numbers of ballots")
        last = level[-1]
        trailing = n >= 2 and level[-2] == last
        marks = [
            (int(level[k]) + 1, int(order[k]))
            for k in range(n)
            if not (trailing and level[k] == last)
        ]
        counter.add(ranking_from_marks(marks), int(weight))
    return counter.ballots(profile.candidates)
