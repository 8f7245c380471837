"""Real elections from PrefLib (read-only shared data) through every rule."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from rankmodels.aggregation import RULES, aggregate, read_votes
from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.condorcet import condorcet_winner
from rankmodels.aggregation.distance import kemeny, kemeny_cost
from rankmodels.aggregation.rules import rule_score_vector
from rankmodels.dsm import is_doubly_stochastic

FILES = ["00001-00000001.soi", "00004-00000040.soc", "00004-00000067.soc"]
ALL_RULES = [r for r in RULES if r != "scores"]


@functools.cache
def _read(path: Path):
    return read_votes(path)


@pytest.fixture
def profiles(shared_data):
    """The three PrefLib files, parsed once per test session."""
    return {name: _read(shared_data / "preflib" / name) for name in FILES}


@pytest.mark.parametrize("name", FILES)
def test_every_rule_on_real_elections(profiles, name):
    profile = profiles[name]
    assert is_doubly_stochastic(profile.positional_matrix)
    for rule in ALL_RULES:
        k = 2 if rule == "k-approval" else None
        result = aggregate(profile, rule, k=k)
        assert sorted(result.ranking.tolist()) == list(range(profile.n))
        report = profile_axiom_report(profile, result, rule_score_vector(rule, profile.n, k))
        cw = condorcet_winner(profile)
        if rule in ("kemeny", "copeland", "schulze", "ranked-pairs") and cw is not None:
            assert report["honoured"]["condorcet"] is True


def test_dublin_north_2002(profiles):
    profile = profiles["00001-00000001.soi"]
    assert profile.n == 12 and profile.total == 43942
    names = profile.candidates
    kemeny = aggregate(profile, "kemeny")
    # The majority relation of Dublin North is transitive, so the Condorcet methods and
    # Kemeny all return the majority order (every pair ordered by its majority).
    P = profile.pairwise
    for rule in ("copeland", "schulze", "ranked-pairs"):
        assert aggregate(profile, rule).ranking.tolist() == kemeny.ranking.tolist()
    rank = np.argsort(kemeny.ranking)
    for x in range(12):
        for y in range(12):
            if P[x, y] > 0.5:
                assert rank[x] < rank[y]
    assert names[kemeny.ranking[0]] == "Trevor Sargent G.P."
    assert names[condorcet_winner(profile)] == "Trevor Sargent G.P."
    assert kemeny.unique


def test_dublin_exact_kemeny_over_all_12_candidates(profiles):
    """The subset DP on all 12 candidates at once (4096 subsets, no component split)
    agrees with the split solution and beats every adjacent swap."""
    profile = profiles["00001-00000001.soi"]
    P = profile.pairwise
    whole = kemeny(profile, split=False)
    result = aggregate(profile, "kemeny")
    assert whole.details["components"] == [list(range(12))]
    assert whole.objective == pytest.approx(result.objective, abs=1e-9)
    assert whole.ranking.tolist() == result.ranking.tolist() and whole.n_optimal == 1
    order = result.ranking
    for i in range(11):
        swapped = order.copy()
        swapped[[i, i + 1]] = swapped[[i + 1, i]]
        assert kemeny_cost(P, swapped) > result.objective


def test_netflix_subsets(profiles):
    jaws = profiles["00004-00000040.soc"]
    assert jaws.candidates == ("Jaws", "I", "Four Rooms") and jaws.total == 2310
    assert aggregate(jaws, "kemeny").ranking.tolist() == [0, 1, 2]
    ray = profiles["00004-00000067.soc"]
    assert aggregate(ray, "borda").ranking.tolist() == aggregate(ray, "kemeny").ranking.tolist()
