"""One entry point for every rule: :func:`aggregate` (``--rule`` on the command line)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankmodels.aggregation.condorcet import copeland, ranked_pairs, schulze
from rankmodels.aggregation.distance import MAX_EXACT_KEMENY, footrule, kemeny, mode
from rankmodels.aggregation.positional import POSITIONAL_RULES, positional, score_vector
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import DEFAULT_MAX_TIES, Aggregation

__all__ = ["RULES", "aggregate", "rule_score_vector"]

DISTANCE_RULES = ("kemeny", "footrule", "mode")
CONDORCET_RULES = ("copeland", "schulze", "ranked-pairs")
RULES = (*POSITIONAL_RULES, "scores", *DISTANCE_RULES, *CONDORCET_RULES)
"""Rule names accepted by :func:`aggregate`; ``scores`` takes a custom score vector."""


def rule_score_vector(
    rule: str, n: int, k: int | None = None, scores: Sequence[float] | None = None
) -> np.ndarray | None:
    """The ``(n,)`` score vector of a positional rule (``scores`` for the custom one), or
    ``None`` for rules that are not positional."""
    if rule == "scores":
        if scores is None:
            raise ValueError("rule 'scores' needs a score vector")
        return np.asarray(scores, dtype=float)
    if rule in POSITIONAL_RULES:
        return score_vector(rule, n, k)
    return None


def aggregate(
    profile: Profile,
    rule: str = "borda",
    *,
    k: int | None = None,
    scores: Sequence[float] | None = None,
    max_ties: int = DEFAULT_MAX_TIES,
    max_exact: int = MAX_EXACT_KEMENY,
) -> Aggregation:
    """Consensus ranking(s) of ``profile`` under ``rule`` (one of :data:`RULES`).

    ``k`` is the number of approved positions for ``k-approval``; ``scores`` the custom
    score vector (position 1 first) for rule ``scores``; ``max_ties`` caps the listed optimal
    rankings; ``max_exact`` is the largest Kemeny component solved exactly.
    """
    if max_ties < 1:
        raise ValueError(f"max_ties must be at least 1, got {max_ties}")
    h = rule_score_vector(rule, profile.n, k, scores)
    if h is not None:
        return positional(profile, h, rule=rule, max_ties=max_ties)
    if rule == "kemeny":
        return kemeny(profile, max_ties=max_ties, max_exact=max_exact)
    if rule == "footrule":
        return footrule(profile, max_ties=max_ties)
    if rule == "mode":
        return mode(profile, max_ties=max_ties)
    if rule == "copeland":
        return copeland(profile, max_ties=max_ties)
    if rule == "schulze":
        return schulze(profile, max_ties=max_ties)
    if rule == "ranked-pairs":
        return ranked_pairs(profile, max_ties=max_ties)
    raise ValueError(f"unknown rule {rule!r}; expected one of {', '.join(RULES)}")
