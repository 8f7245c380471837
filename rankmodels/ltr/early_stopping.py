"""Early stopping on validation NDCG@k, shared by every model's trainer.

A trainer offers its candidates in order (the linear model's L-BFGS iterates, the MLP's
epochs, boosting's rounds), each with its validation score. :class:`EarlyStopping` keeps the
first candidate with the highest score (a later one must be strictly better) and says to
stop once ``patience`` candidates in a row have not improved on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["EarlyStopping"]


@dataclass
class EarlyStopping(Generic[T]):
    """The best candidate so far (``best``, ``best_score``; ``best`` starts as ``start``,
    scored ``-inf``) and how many offers since it improved (``waited``)."""

    patience: int
    best: T
    best_score: float = -float("inf")
    waited: int = 0

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience}")

    def offer(self, candidate: T, score: float) -> bool:
        """Record ``candidate`` with its validation ``score``; True when training should
        stop (``patience`` offers in a row without a strictly better score)."""
        if score > self.best_score:
            self.best, self.best_score, self.waited = candidate, score, 0
            return False
        self.waited += 1
        return self.waited >= self.patience
