"""Candidate spellings in cast-vote records -> candidate codes of a contest."""

from __future__ import annotations

from collections.abc import Sequence

from rankmodels.aggregation.elections.ballots import UNDECLARED_WRITE_INS
from rankmodels.aggregation.elections.config import Candidate

__all__ = ["CandidateNames"]


class CandidateNames:
    """The contest's candidates in config order (undeclared write-ins last when counted)
    and every spelling the records may use: the name and the aliases, compared exactly
    after stripping spaces (as RCTab compares them)."""

    def __init__(self, candidates: Sequence[Candidate], write_ins: bool) -> None:
        names = [c.name for c in candidates]
        if write_ins:
            names.append(UNDECLARED_WRITE_INS)
        self.names = tuple(names)
        self.declared = tuple(c.name for c in candidates)
        self.code: dict[str, int] = {}
        for i, c in enumerate(candidates):
            for spelling in (c.name, *c.aliases):
                self.code.setdefault(spelling.strip(), i)
        if write_ins:
            self.code[UNDECLARED_WRITE_INS] = len(names) - 1

    @property
    def write_in(self) -> int | None:
        """The code of undeclared write-ins, if counted."""
        return self.code.get(UNDECLARED_WRITE_INS) if UNDECLARED_WRITE_INS in self.names else None

    def lookup(self, text: str) -> int | None:
        """The code a spelling names, or ``None``."""
        return self.code.get(text.strip())
