"""Real elections from PrefLib (read-only shared data) through every rule.

Expected facts are derived here from the raw files (their header lines and ballot lines),
not copied from the reader's output.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import numpy as np
import pytest

from rankmodels.aggregation import RULES, aggregate, read_votes
from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.condorcet import condorcet_winner
from rankmodels.aggregation.distance import kemeny, kemeny_cost
from rankmodels.aggregation.rules import score_vector
from rankmodels.dsm import is_doubly_stochastic

DUBLIN = "00001-00000001.soi"  # 2002 Dublin North, Irish STV ballots (truncated)
JAWS = "00004-00000040.soc"  # Netflix Prize subset: Jaws, I, Four Rooms
RAY = "00004-00000067.soc"  # Netflix Prize subset of three other films
FILES = [DUBLIN, JAWS, RAY]
# every rule that needs no user-chosen vector; k-approval approves the top K_APPROVAL
# places (any 1 <= k <= n would do: 2 is the smallest that differs from plurality)
ALL_RULES = [r for r in RULES.names if r != "scores"]
K_APPROVAL = 2


@functools.cache
def _read(path: Path):
    return read_votes(path)


@pytest.fixture
def profiles(shared_data):
    """The three PrefLib files, parsed once per test session."""
    return {name: _read(shared_data / "preflib" / name) for name in FILES}


@functools.cache
def raw_file(path: Path) -> tuple[dict[str, str], list[tuple[int, list[int]]]]:
    """``(header, ballots)`` of a PrefLib file read line by line: ``# KEY: value`` lines and
    ``COUNT: a,b,c`` lines (1-based candidates, no ties in these files)."""
    header, ballots = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            header[key.strip()] = value.strip()
        elif line.strip():
            count, ranking = line.split(":")
            ballots.append((int(count), [int(x) - 1 for x in ranking.split(",")]))
    return header, ballots


def raw_majorities(path: Path) -> np.ndarray:
    """``W[x, y]``: ballots ranking ``x`` above ``y`` (unranked candidates below the ranked
    ones), counted directly from the ballot lines."""
    header, ballots = raw_file(path)
    n = int(header["NUMBER ALTERNATIVES"])
    W = np.zeros((n, n))
    for count, ranked in ballots:
        unranked = sorted(set(range(n)) - set(ranked))
        for a, b in itertools.combinations(ranked, 2):
            W[a, b] += count
        for a in ranked:
            W[a, unranked] += count
    return W


@pytest.mark.parametrize("name", FILES)
def test_every_rule_on_real_elections(profiles, name):
    profile = profiles[name]
    assert is_doubly_stochastic(profile.positional_matrix)
    for rule in ALL_RULES:
        k = K_APPROVAL if rule == "k-approval" else None
        seats = 3 if RULES[rule].kind == "counted" else None
        result = aggregate(profile, rule, k=k, **({"seats": seats} if seats else {}))
        assert sorted(result.ranking.tolist()) == list(range(profile.n))
        if seats:  # a count: one outcome of its seeded tie-breaks, no optimum to enumerate
            continue
        assert result.exact and result.n_optimal is not None  # 12 candidates: all exact
        report = profile_axiom_report(profile, result, score_vector(rule, profile.n, k))
        cw = condorcet_winner(profile)
        if RULES[rule].kind == "condorcet" or rule == "kemeny":
            if cw is not None:
                assert report["honoured"]["condorcet"] is True


def test_dublin_north_2002(profiles, shared_data):
    path = shared_data / "preflib" / DUBLIN
    header, _ = raw_file(path)
    profile = profiles[DUBLIN]
    assert profile.n == int(header["NUMBER ALTERNATIVES"])
    assert profile.total == int(header["NUMBER VOTERS"])
    names = profile.candidates
    kemeny_result = aggregate(profile, "kemeny")
    # The Condorcet winner from the raw ballot lines: beats every rival head to head.
    W = raw_majorities(path)
    winners = [
        x for x in range(profile.n) if all(W[x, y] > W[y, x] for y in range(profile.n) if y != x)
    ]
    assert winners == [condorcet_winner(profile)]
    # (It is Trevor Sargent of the Green Party, who topped the 2002 poll in Dublin North.)
    assert (
        names[winners[0]] == header[f"ALTERNATIVE NAME {winners[0] + 1}"] == "Trevor Sargent G.P."
    )
    assert names[kemeny_result.ranking[0]] == names[winners[0]]
    # The majority relation of Dublin North is transitive, so the Condorcet methods and
    # Kemeny all return the majority order (every pair ordered by its majority).
    for rule in ("copeland", "schulze", "ranked-pairs"):
        assert aggregate(profile, rule).ranking.tolist() == kemeny_result.ranking.tolist()
    rank = np.argsort(kemeny_result.ranking)
    for x, y in itertools.permutations(range(profile.n), 2):
        if W[x, y] > W[y, x]:
            assert rank[x] < rank[y]
    # no pair is an exact tie, so that transitive majority order is the only Kemeny ranking
    assert np.all((W != W.T) | np.eye(profile.n, dtype=bool))
    assert kemeny_result.unique


def test_dublin_exact_kemeny_over_all_12_candidates(profiles):
    """The subset DP on all 12 candidates at once (2^12 = 4096 subsets, no component split)
    agrees with the split solution and beats every adjacent swap."""
    profile = profiles[DUBLIN]
    P = profile.pairwise
    whole = kemeny(profile, split=False)
    result = aggregate(profile, "kemeny")
    assert whole.details["components"] == [list(range(profile.n))]
    assert whole.objective == pytest.approx(result.objective, abs=1e-9)
    assert whole.ranking.tolist() == result.ranking.tolist() and whole.n_optimal == 1
    order = result.ranking
    for i in range(profile.n - 1):
        swapped = order.copy()
        swapped[[i, i + 1]] = swapped[[i + 1, i]]
        assert kemeny_cost(P, swapped) > result.objective


def test_netflix_subsets(profiles, shared_data):
    for name in (JAWS, RAY):
        header, ballots = raw_file(shared_data / "preflib" / name)
        profile = profiles[name]
        n = int(header["NUMBER ALTERNATIVES"])
        assert profile.candidates == tuple(header[f"ALTERNATIVE NAME {i}"] for i in range(1, n + 1))
        assert profile.total == int(header["NUMBER VOTERS"]) == sum(c for c, _ in ballots)
        # Kemeny on three candidates from the raw counts: the cheapest of the 3! orders
        W = raw_majorities(shared_data / "preflib" / name)
        costs = {
            p: sum(W[b, a] for a, b in itertools.combinations(p, 2))
            for p in itertools.permutations(range(n))
        }
        best = min(costs.values())
        assert {tuple(t) for t in aggregate(profile, "kemeny").ties} == {
            p for p, c in costs.items() if c == best
        }
        # Borda points per ballot from the raw counts: n - 1 for first place, down to 0
        points = np.zeros(n)
        for count, ranked in ballots:
            points[ranked] += count * np.arange(n - 1, -1, -1)
        borda = aggregate(profile, "borda")
        np.testing.assert_allclose(borda.scores * profile.total, points)
        assert borda.ranking.tolist() == np.argsort(-points, kind="stable").tolist()
