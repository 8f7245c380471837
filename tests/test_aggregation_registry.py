"""Registry-wide tests: every registered rule, against its definition over S_n.

Each rule in ``RULES`` must run on small profiles, return valid rankings, report exactly the
optimal set that enumeration finds (from the raw ballots, with many ties), count it exactly
even when the listing is capped, and keep the ``n_optimal`` semantics. A new rule gets all of
this by being registered (and needs a reference in ``tests/_aggregation_helpers.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rankmodels.aggregation import RULES, aggregate
from rankmodels.aggregation.rules import OPTION_NAMES, rules_table
from rankmodels_app.aggregate import COUNTED_RULES, aggregate_command
from tests._aggregation_helpers import (
    expanded_distribution,
    margins,
    optimal_rankings,
    random_ballots,
    ranked_pairs_tie_breakings,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "aggregation.md"


def rule_options(name: str, n: int, rng: np.random.Generator) -> dict[str, object]:
    """Settings for the options a rule takes (scores with ties and a bottom-heavy tail)."""
    make = {
        "k": lambda: int(rng.integers(1, n + 1)),
        "scores": lambda: np.sort(rng.integers(0, 3, size=n))[::-1].tolist(),
        "max_exact": lambda: 20,
        "batch_elimination": lambda: bool(rng.integers(0, 2)),
        "seats": lambda: int(rng.integers(1, n + 1)),
        "seed": lambda: int(rng.integers(0, 100)),
    }
    return {opt: make[opt]() for opt in RULES[name].options}


def tied_profiles(n: int, rng: np.random.Generator, count: int):
    """Ballot sets with few distinct ballots and equal weights: many exact ties."""
    for trial in range(count):
        yield random_ballots(n, rng, m=2 + trial % 4, pool=2 + trial % 3, max_weight=1 + trial % 2)


def test_every_option_is_known_and_kinds_are_the_four():
    assert len(RULES) >= 14
    for spec in RULES:
        assert set(spec.options) <= set(OPTION_NAMES), spec.name
        assert spec.kind in ("positional", "distance", "condorcet", "runoff", "counted")
        assert (spec.vector is not None) == (spec.kind == "positional")
        # a rule that may report only a lower bound says when
        assert spec.counts_ties_exactly == (spec.count_limit == ""), spec.name


def test_docs_table_is_the_registry():
    assert rules_table() in DOCS.read_text()


def test_cli_offers_exactly_the_registered_rules():
    rule_param = next(p for p in aggregate_command.params if p.name == "rule")
    assert tuple(rule_param.type.choices) == RULES.names
    assert COUNTED_RULES == ("stv",)


@pytest.mark.parametrize("name", RULES.names)
def test_rule_rejects_options_it_does_not_take(name):
    profile = random_ballots(3, np.random.default_rng(0)).profile()
    options = {"k": 1, "scores": [1, 0, 0], "max_exact": 5, "batch_elimination": True}
    for option, value in options.items():
        if option not in RULES[name].options:
            with pytest.raises(ValueError, match=f"takes no {option}"):
                aggregate(profile, name, **{option: value})


@pytest.mark.parametrize("name", RULES.names)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_every_rule_returns_valid_rankings(name, n, rng):
    for ballots in tied_profiles(n, rng, 4):
        result = aggregate(ballots.profile(), name, **rule_options(name, n, rng))
        assert result.rule == name
        for t in result.ties:
            assert sorted(t.tolist()) == list(range(n))
        assert result.ranking.tolist() == result.ties[0].tolist()
        assert len({tuple(t) for t in result.ties}) == len(result.ties)  # no duplicates


@pytest.mark.parametrize("name", [spec.name for spec in RULES if spec.kind != "counted"])
@pytest.mark.parametrize("n", [3, 4, 5])
def test_optimal_set_and_count_equal_enumeration(name, n, rng):
    """(A counted rule gives one outcome of seeded tie-breaks, not a set of optima: its
    own tests check it against the tabulator.)"""
    checked = 0
    for ballots in tied_profiles(n, rng, 10):
        if name == "ranked-pairs":
            D = margins(*expanded_distribution(ballots))
            if ranked_pairs_tie_breakings(D) > 5000:  # the reference tries them all
                continue
        options = rule_options(name, n, rng)
        expected = optimal_rankings(name, ballots, **options)
        result = aggregate(ballots.profile(), name, max_ties=10_000, **options)
        assert {tuple(t) for t in result.ties} == expected
        assert result.n_optimal == len(expected) == result.n_optimal_at_least
        assert result.exact
        # the pairs every optimal ranking orders the same way
        perms = np.array(sorted(expected))
        ranks = np.argsort(perms, axis=1)
        settled = np.all(ranks[:, :, None] < ranks[:, None, :], axis=0)
        assert np.array_equal(result.always_above()[0], settled)
        # the count does not depend on how many rankings are listed
        capped = aggregate(ballots.profile(), name, max_ties=2, **options)
        above, complete = capped.always_above()
        assert complete == (capped.settled is not None or len(expected) <= 2)
        if complete:
            assert np.array_equal(above, settled)
        assert capped.n_optimal == len(expected)
        assert len(capped.ties) == min(2, len(expected))
        assert {tuple(t) for t in capped.ties} <= expected
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("name", RULES.names)
def test_n_optimal_semantics(name, rng):
    """``n_optimal`` is the count or None; ``n_optimal_at_least`` never exceeds it and is
    at least the number listed; ``unique`` means one known optimum."""
    for ballots in tied_profiles(6, rng, 6):
        result = aggregate(ballots.profile(), name, max_ties=7, **rule_options(name, 6, rng))
        at_least = result.n_optimal_at_least
        assert result.n_optimal in (None, at_least)
        assert len(result.ties) <= 7 and (at_least >= len(result.ties) or not result.exact)
        if result.n_optimal is not None:
            assert len(result.ties) == min(7, result.n_optimal)
        assert result.unique == (result.n_optimal == 1)
        if result.n_optimal == len(result.ties):
            assert result.winners() == sorted({int(t[0]) for t in result.ties})
        else:  # winners from a capped listing would be a guess
            with pytest.raises(ValueError, match="optimal rankings are listed"):
                result.winners()
