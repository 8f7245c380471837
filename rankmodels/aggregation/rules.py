"""The rule registry and the one entry point for every rule, :func:`aggregate`.

Each rule is a :class:`RuleSpec` in :data:`RULES` (a :class:`rankmodels.registry.Registry`):
what to call, its kind, which options it takes and whether it always counts its optimal
rankings exactly. The command line's ``--rule`` choices, the option checks and the rules
table of ``docs/aggregation.md`` (:func:`rules_table`) all read the registry, so a new rule
is one ``register`` call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rankmodels.aggregation import condorcet, distance, irv, positional
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import DEFAULT_MAX_TIES, Aggregation
from rankmodels.registry import Registry

__all__ = ["RULES", "RuleOptions", "RuleSpec", "aggregate", "rules_table", "score_vector"]

RuleKind = Literal["positional", "distance", "condorcet", "runoff", "counted"]
OPTION_NAMES = ("k", "scores", "max_exact", "batch_elimination", "seats", "seed")
"""Options a rule may take (:attr:`RuleSpec.options`); the others must be left unset."""


@dataclass(frozen=True)
class RuleOptions:
    """Settings handed to a rule: ``k`` (k-approval), ``scores`` (the custom vector, first
    place first), ``max_exact`` (Kemeny's largest exact component, ``None`` = default),
    ``batch_elimination`` (instant runoff), ``seats`` and ``seed`` (single transferable
    vote: seats to fill, seed of the tie-breaking draws) and ``max_ties``, the cap on
    listed optimal rankings (every rule)."""

    k: int | None = None
    scores: Sequence[float] | None = None
    max_exact: int | None = None
    batch_elimination: bool | None = None
    max_ties: int = DEFAULT_MAX_TIES
    seats: int | None = None
    seed: int | None = None


@dataclass(frozen=True)
class RuleSpec:
    """One aggregation rule.

    ``solve(profile, options)`` runs it; ``kind`` is ``positional`` (sorts by a score
    vector, then ``vector(n, options)`` gives it), ``distance`` (minimises an expected
    distance), ``condorcet`` (reads only the pairwise majorities), ``runoff`` (eliminates
    candidates round by round) or ``counted`` (counted as a tabulator counts an election,
    one outcome of seeded tie-breaks); ``options`` are the
    :class:`RuleOptions` fields it takes besides ``max_ties``; ``counts_ties_exactly`` is
    True when ``n_optimal`` is always exact, False when it can be only a lower bound (then
    ``count_limit`` says when).
    """

    name: str
    summary: str
    kind: RuleKind
    solve: Callable[[Profile, RuleOptions], Aggregation]
    counts_ties_exactly: bool
    options: tuple[str, ...] = ()
    vector: Callable[[int, RuleOptions], np.ndarray] | None = None
    count_limit: str = ""


RULES = Registry[RuleSpec]("rule")
"""Every rule :func:`aggregate` accepts, in the order of the docs and ``--help``."""


def _register_positional(
    name: str,
    summary: str,
    vector: Callable[[int, RuleOptions], np.ndarray],
    options: tuple[str, ...] = (),
) -> None:
    def solve(profile: Profile, opts: RuleOptions) -> Aggregation:
        h = vector(profile.n, opts)
        return positional.positional(profile, h, rule=name, max_ties=opts.max_ties)

    RULES.register(RuleSpec(name, summary, "positional", solve, True, options, vector))


def _custom_scores(n: int, opts: RuleOptions) -> np.ndarray:
    if opts.scores is None:
        raise ValueError("rule 'scores' needs a score vector")
    return positional.check_scores(opts.scores, n)


_register_positional("borda", "`h(i) = n - i`", lambda n, o: positional.borda(n))
_register_positional("plurality", "`h = (1, 0, ..., 0)`", lambda n, o: positional.plurality(n))
_register_positional(
    "antiplurality",
    "`h = (1, ..., 1, 0)` (veto)",
    lambda n, o: positional.antiplurality(n),
)
_register_positional(
    "k-approval",
    "`h(i) = 1` for `i <= k`; needs `--k`",
    lambda n, o: positional.k_approval(n, o.k),
    ("k",),
)
_register_positional("log", "`h(i) = -log i` (table 4.1)", lambda n, o: positional.log_scores(n))
_register_positional("squared", "`h(i) = -i^2` (table 4.1)", lambda n, o: positional.squared(n))
_register_positional(
    "scores",
    "your `h`: `--scores 3,2,1,0` (first place first)",
    _custom_scores,
    ("scores",),
)
_BLOCK_LIMIT = "at least, when more than 20 candidates are tied together"
RULES.register(
    RuleSpec(
        "kemeny",
        "expected Kendall tau distance; exact subset DP per majority component",
        "distance",
        lambda p, o: distance.kemeny(
            p, o.max_ties, distance.MAX_EXACT_KEMENY if o.max_exact is None else o.max_exact
        ),
        False,
        ("max_exact",),
        count_limit="unknown when a majority component above `max_exact` (20) candidates is "
        "left to the heuristic and the heuristic does not meet its lower bound; at least, "
        "when more than 2^62 rankings tie",
    )
)


def _register_listed(
    name: str,
    summary: str,
    kind: RuleKind,
    rule: Callable[[Profile, int], Aggregation],
    count_limit: str = "",
) -> None:
    """Register a rule called as ``rule(profile, max_ties)``; ``count_limit`` says when its
    count can be only a lower bound (empty: always exact)."""
    RULES.register(
        RuleSpec(
            name,
            summary,
            kind,
            lambda profile, opts: rule(profile, opts.max_ties),
            counts_ties_exactly=not count_limit,
            count_limit=count_limit,
        )
    )


_register_listed(
    "footrule",
    "expected Spearman footrule; exact assignment, optima = perfect matchings of tight edges",
    "distance",
    distance.footrule,
    _BLOCK_LIMIT,
)
_register_listed(
    "mode",
    "expected 0-1 loss: the most probable ranking (trie over ballot prefixes)",
    "distance",
    distance.mode,
)
_register_listed(
    "copeland", "wins + 1/2 ties in pairwise majorities", "condorcet", condorcet.copeland
)
_register_listed(
    "schulze",
    "strongest paths on the margins; every linear extension of the Schulze order",
    "condorcet",
    condorcet.schulze,
    _BLOCK_LIMIT,
)
_register_listed(
    "ranked-pairs",
    "lock majorities by decreasing margin; equal margins broken every possible way",
    "condorcet",
    condorcet.ranked_pairs,
    f"{_BLOCK_LIMIT}, or when the tie-breakings are too many to search",
)

_RUNOFF_LIMIT = (
    f"at least, when the tie-breakings reach more than {irv.MAX_STATES:,} sets of continuing "
    "candidates"
)
RULES.register(
    RuleSpec(
        "irv",
        "instant runoff: drop the candidate with the fewest first choices until one is left; "
        "ranking = reverse elimination order, ties for last broken every way",
        "runoff",
        lambda p, o: irv.instant_runoff(p, o.max_ties, bool(o.batch_elimination)),
        False,
        ("batch_elimination",),
        count_limit=_RUNOFF_LIMIT,
    )
)
_register_listed(
    "benham",
    "instant runoff that elects a Condorcet winner of the continuing candidates as soon as "
    "there is one; ranking = winner, the rule on the rest, then reverse elimination order",
    "runoff",
    irv.benham,
    _RUNOFF_LIMIT,
)
_register_listed(
    "smith-irv",
    "instant runoff among the Smith set; ranking = the majority components in order, each by "
    "instant runoff among its candidates",
    "runoff",
    irv.smith_irv,
    _RUNOFF_LIMIT,
)


def _stv(profile: Profile, opts: RuleOptions) -> Aggregation:
    from rankmodels.aggregation.elections.stv import stv

    if opts.seats is None:
        raise ValueError("rule 'stv' needs seats")
    return stv(profile, opts.seats, 0 if opts.seed is None else opts.seed)


RULES.register(
    RuleSpec(
        "stv",
        "single transferable vote for `seats` (Droop quota, fractional surplus transfer, as "
        "RCTab counts); ranking = winners in order of election, then by when they went out",
        "counted",
        _stv,
        False,
        ("seats", "seed"),
        count_limit="at least 1: one outcome of the tie-breaks drawn from `seed`, not every "
        "tie-breaking",
    )
)


def score_vector(
    rule: str, n: int, k: int | None = None, scores: Sequence[float] | None = None
) -> np.ndarray | None:
    """The ``(n,)`` score vector ``h`` of a positional rule (``h[0]`` = first place), or
    ``None`` for the other rules. ``k`` is k-approval's, ``scores`` the custom vector."""
    spec = RULES[rule]
    return None if spec.vector is None else spec.vector(n, RuleOptions(k=k, scores=scores))


def aggregate(
    profile: Profile,
    rule: str = "borda",
    *,
    k: int | None = None,
    scores: Sequence[float] | None = None,
    max_ties: int = DEFAULT_MAX_TIES,
    max_exact: int | None = None,
    batch_elimination: bool | None = None,
    seats: int | None = None,
    seed: int | None = None,
) -> Aggregation:
    """Consensus ranking(s) of ``profile`` under ``rule`` (a name in :data:`RULES`).

    ``k`` is the number of approved positions for ``k-approval``; ``scores`` the custom
    score vector (position 1 first) for rule ``scores``; ``max_exact`` the largest Kemeny
    component solved exactly (default 20); ``batch_elimination`` makes instant runoff drop
    every candidate that cannot catch up at once; ``seats`` and ``seed`` are single
    transferable vote's seats and tie-break seed; ``max_ties`` caps the listed optimal
    rankings. An option the rule does not take is an error.
    """
    spec = RULES[rule]
    if max_ties < 1:
        raise ValueError(f"max_ties must be at least 1, got {max_ties}")
    given = (k, scores, max_exact, batch_elimination, seats, seed)
    for option, value in zip(OPTION_NAMES, given, strict=True):
        if value is not None and option not in spec.options:
            raise ValueError(f"rule {rule!r} takes no {option}")
    options = RuleOptions(k, scores, max_exact, batch_elimination, max_ties, seats, seed)
    return spec.solve(profile, options)


def rules_table() -> str:
    """The markdown table of the rules for ``docs/aggregation.md``."""
    rows = ["| rule | kind | what it optimises | number of optimal rankings |", "|---|---|---|---|"]
    for spec in RULES:
        counted = "exact" if spec.counts_ties_exactly else f"exact; {spec.count_limit}"
        rows.append(f"| `{spec.name}` | {spec.kind} | {spec.summary} | {counted} |")
    return "\n".join(rows)
