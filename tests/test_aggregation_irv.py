"""Instant runoff and the Condorcet-IRV hybrids (Benham, Smith-IRV): hand-counted
elections, ties, exhausted ballots, batch elimination.

Expected tallies below are counted by hand from the ballots written in each test; the
registry-wide tests compare every optimal ranking with enumeration of all orders
(``tests/_aggregation_helpers.irv_rankings``), and ``test_aggregation_pref_voting`` with
pref_voting.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.aggregation import Profile, aggregate, read_votes
from rankmodels.aggregation.irv import MAX_STATES, instant_runoff, majority_components
from rankmodels_app.aggregate import aggregate_command
from tests._aggregation_helpers import Ballots, irv_rankings, irv_votes, random_ballots


def election(tmp_path, text: str):
    path = tmp_path / "votes.csv"
    path.write_text("ranking,count\n" + text)
    return path


def names(profile: Profile, xs) -> list[str]:
    return [profile.candidates[x] for x in xs]


def votes_of(profile: Profile, r) -> dict[str, float]:
    return {profile.candidates[x]: float(r.votes[x]) for x in r.continuing}


def test_condorcet_winner_squeezed_out_first(tmp_path):
    # C beats A 65:35 and B 67:33 but has the fewest first choices
    profile = read_votes(election(tmp_path, "A>C>B,35\nB>C>A,33\nC>A>B,32\n"))
    result = aggregate(profile, "irv")
    assert names(profile, result.ranking) == ["A", "B", "C"]
    first, second = result.details["rounds"]
    assert votes_of(profile, first) == {"A": 35, "B": 33, "C": 32}
    assert names(profile, first.eliminated) == ["C"] and first.tied == ()
    assert votes_of(profile, second) == {"A": 67, "B": 33}
    assert result.unique and result.winners() == [profile.index("A")]


def test_exhausted_ballots_are_counted_per_round(tmp_path):
    # B and A are bullet votes; D's ballots rank nobody else
    profile = read_votes(election(tmp_path, "A,5\nB,4\nC>B,3\nD,2\n"))
    result = aggregate(profile, "irv")
    rounds = result.details["rounds"]
    assert [votes_of(profile, r) for r in rounds] == [
        {"A": 5, "B": 4, "C": 3, "D": 2},
        {"A": 5, "B": 4, "C": 3},
        {"A": 5, "B": 7},
    ]
    assert [r.exhausted for r in rounds] == [0, 2, 2]
    assert names(profile, result.ranking) == ["B", "A", "C", "D"]


def test_a_cycle_ties_every_round_one_and_every_winner_is_reported(tmp_path):
    profile = read_votes(election(tmp_path, "A>B>C,1\nB>C>A,1\nC>A>B,1\n"))
    result = aggregate(profile, "irv")
    # dropping C elects A (2:1), dropping B elects C, dropping A elects B
    assert {tuple(names(profile, t)) for t in result.ties} == {
        ("A", "B", "C"),
        ("C", "A", "B"),
        ("B", "C", "A"),
    }
    assert result.n_optimal == 3 and result.details["winners"] == [0, 1, 2]
    first = result.details["rounds"][0]
    assert names(profile, first.tied) == ["A", "B", "C"]
    assert names(profile, first.eliminated) == ["C"]  # the listed ranking drops the last index
    assert names(profile, result.ranking) == ["A", "B", "C"]


def test_ties_within_a_ballot_split_it(tmp_path):
    # "A=B>C" gives A and B half a vote each while both continue, all of it once one is out
    profile = read_votes(election(tmp_path, "A=B>C,2\nC,3\nB,1\nA>C,1\n"))
    rounds = aggregate(profile, "irv").details["rounds"]
    assert votes_of(profile, rounds[0]) == {"A": 2, "B": 2, "C": 3}
    # A and B tie; dropping B (the listed ranking) moves its 1 + 1 split vote to A
    assert names(profile, rounds[0].tied) == ["A", "B"]
    assert votes_of(profile, rounds[1]) == {"A": 3, "C": 3}
    assert rounds[1].exhausted == 1  # the bullet vote for B


def test_trailing_tie_is_unranked_and_missing_one_is_complete(tmp_path):
    # of three candidates "A>B=C" is the ballot "A"; "A>B" is "A>B>C"
    path = election(tmp_path, "A>B=C,2\nA,1\nB>C>A,4\nC>B>A,3\nA>B,5\nA>B>C,6\n")
    profile = read_votes(path)
    assert profile.weights.size == 4
    first = aggregate(profile, "irv").details["rounds"][0]
    assert votes_of(profile, first) == {"A": 14, "B": 4, "C": 3}


def test_candidates_without_votes_go_together_in_every_order(tmp_path):
    profile = read_votes(election(tmp_path, "A>B>C>D,3\nB>A,2\n"))
    result = aggregate(profile, "irv")
    first = result.details["rounds"][0]
    assert names(profile, first.eliminated) == ["C", "D"] and names(profile, first.tied) == [
        "C",
        "D",
    ]
    assert result.n_optimal == 2  # C and D in either order below A and B
    assert {tuple(names(profile, t)) for t in result.ties} == {
        ("A", "B", "C", "D"),
        ("A", "B", "D", "C"),
    }


def test_everybody_exhausted_ties_everyone(tmp_path):
    profile = read_votes(election(tmp_path, "A,1\nB,1\nC,1\n"))
    result = aggregate(profile, "irv", max_ties=2)
    # round 1: 1 each -> every candidate may go; e.g. after A, the ballot "A" is exhausted
    assert result.n_optimal == 6 and len(result.ties) == 2
    assert result.details["winners"] == [0, 1, 2]


def test_batch_elimination_on_dublin_north(shared_data):
    profile = read_votes(shared_data / "preflib" / "00001-00000001.soi")
    one = aggregate(profile, "irv")
    batch = aggregate(profile, "irv", batch_elimination=True)
    assert one.winners() == batch.winners() == [profile.index("Trevor Sargent G.P.")]
    rounds = one.details["rounds"]
    assert len(rounds) == 11 and not any(r.batch for r in rounds)
    first = batch.details["rounds"][0]
    votes = np.sort(first.votes[list(first.continuing)])
    # the five lowest have fewer first choices together than the sixth
    assert first.batch and len(first.eliminated) == 5
    assert votes[:5].sum() < votes[5] and votes[:6].sum() >= votes[6]
    assert len(batch.details["rounds"]) == 7


@pytest.mark.parametrize("seed", range(8))
def test_batch_elimination_elects_the_same_winners(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        ballots = random_ballots(5, rng, m=12, pool=6, max_weight=9)
        one = aggregate(ballots.profile(), "irv", max_ties=10_000)
        batch = aggregate(ballots.profile(), "irv", max_ties=10_000, batch_elimination=True)
        assert one.details["winners"] == batch.details["winners"]
        assert {tuple(t) for t in batch.ties} == irv_rankings(ballots, batch=True)


@pytest.mark.parametrize("seed", range(6))
def test_round_tallies_equal_the_exact_count(seed):
    rng = np.random.default_rng(100 + seed)
    ballots = random_ballots(6, rng, m=15, pool=10, max_weight=5)
    profile = ballots.profile()
    for r in instant_runoff(profile).details["rounds"]:
        exact = irv_votes(ballots, set(r.continuing))
        np.testing.assert_allclose(r.votes[list(exact)], [float(v) for v in exact.values()])
        assert r.exhausted == pytest.approx(profile.total - sum(exact.values()))


def test_too_many_tie_breakings_give_a_lower_bound(monkeypatch):
    cyclic = [[0, 1, 2, 3], [1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]]
    ballots = Ballots([[[x] for x in b] for b in cyclic], [1.0] * 4, 4)
    expected = irv_rankings(ballots)
    monkeypatch.setattr("rankmodels.aggregation.irv.MAX_STATES", 3)
    result = aggregate(ballots.profile(), "irv")
    assert result.n_optimal is None and result.n_optimal_at_least >= len(result.ties) >= 1
    assert {tuple(t) for t in result.ties} <= expected
    assert result.details["winners"] is None
    with pytest.raises(ValueError, match="optimal rankings are listed"):
        result.winners()
    monkeypatch.setattr("rankmodels.aggregation.irv.MAX_STATES", MAX_STATES)
    full = aggregate(ballots.profile(), "irv")
    assert full.n_optimal == len(expected) >= result.n_optimal_at_least


# ---------------------------------------------------------------- command line
def run(*args: str):
    return CliRunner().invoke(aggregate_command, list(args))


def test_cli_prints_the_rounds(tmp_path):
    path = election(tmp_path, "A>C>B,35\nB>C>A,33\nC>A>B,32\n")
    result = run("--rule", "irv", str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].split() == ["1", "A"]
    table = lines[lines.index(next(x for x in lines if x.startswith("round"))) :]
    assert table[1].split() == ["A", "35", "67"]
    assert table[2].split() == ["B", "33", "33"]  # A's majority ends the count
    assert table[3].split() == ["C", "32*"]
    assert table[4].split() == ["exhausted", "0", "0"]
    assert "round 2: A has a majority, 67 of 100 votes counting: elected" in table
    assert "Condorcet winner: C (ranked first: NO)" in result.output


def test_cli_json_has_rounds_and_winners_and_reports_ties(tmp_path):
    path = election(tmp_path, "A>B>C,1\nB>C>A,1\nC>A>B,1\n")
    report = json.loads(run("--rule", "irv", "--format", "json", str(path)).output)
    assert report["winners"] == ["A", "B", "C"]
    assert report["n_optimal"] == 3 and len(report["ties"]) == 3
    assert report["rounds"][0] == {
        "round": 1,
        "votes": {"A": 1.0, "B": 1.0, "C": 1.0},
        "exhausted": 0.0,
        "eliminated": ["C"],
        "tied": ["A", "B", "C"],
        "batch": False,
        "elected": [],
    }
    text = run("--rule", "irv", str(path)).output
    assert "round 1: tied for fewest votes: A, B, C; this ranking drops C" in text
    assert "winners over all tie-breakings: A, B, C" in text
    assert "not unique: 3 optimal rankings" in text


def test_batch_elimination_flag(tmp_path, shared_data):
    path = shared_data / "preflib" / "00001-00000001.soi"
    report = json.loads(
        run("--rule", "irv", "--batch-elimination", "--format", "json", str(path)).output
    )
    assert report["rounds"][0]["batch"] is True and len(report["rounds"]) == 7
    wrong = run("--rule", "borda", "--batch-elimination", str(path))
    assert wrong.exit_code == 2
    assert wrong.output.strip() == (
        "Error: --batch-elimination is only for --rule irv, not --rule borda"
    )


# ---------------------------------------------------------------- Condorcet-IRV hybrids
SQUEEZE = "A>C>B,35\nB>C>A,33\nC>A>B,32\n"  # C beats A 65:35 and B 67:33, fewest firsts


def test_hybrids_elect_the_condorcet_winner_that_irv_eliminates_first(tmp_path):
    profile = read_votes(election(tmp_path, SQUEEZE))
    assert names(profile, aggregate(profile, "irv").ranking) == ["A", "B", "C"]
    benham = aggregate(profile, "benham")
    # C is elected before anyone goes; then A beats B 67:33 among the two left
    assert names(profile, benham.ranking) == ["C", "A", "B"] and benham.unique
    (only,) = benham.details["rounds"]
    assert votes_of(profile, only) == {"A": 35, "B": 33, "C": 32}
    assert names(profile, only.elected) == ["C"] and only.eliminated == ()
    smith = aggregate(profile, "smith-irv")
    assert names(profile, smith.details["smith_set"]) == ["C"]
    assert names(profile, smith.ranking) == ["C", "A", "B"] and smith.unique
    assert smith.details["rounds"] == []  # one candidate in the Smith set: no count


# A, B, C beat each other in a cycle (A>B 24:10, B>C 26:8, C>A 18:16) and each beats D,
# who has the second most first choices.
CYCLE = "D>A>B>C,9\nA>B>C>D,7\nB>C>A>D,10\nC>A>B>D,8\n"


def test_benham_and_smith_irv_part_where_d_has_first_choices(tmp_path):
    profile = read_votes(election(tmp_path, CYCLE))
    assert [names(profile, c) for c in majority_components(profile)] == [["A", "B", "C"], ["D"]]
    # Benham: round 1 A 7, B 10, C 8, D 9, no Condorcet winner: A goes; then B beats C
    # 26:8 and D 25:9 and is elected; among C and D, C beats D 25:9
    benham = aggregate(profile, "benham")
    first, second = benham.details["rounds"]
    assert votes_of(profile, first) == {"A": 7, "B": 10, "C": 8, "D": 9}
    assert names(profile, first.eliminated) == ["A"]
    assert votes_of(profile, second) == {"B": 17, "C": 8, "D": 9}
    assert names(profile, second.elected) == ["B"]
    assert names(profile, benham.ranking) == ["B", "C", "D", "A"] and benham.unique
    # Smith-IRV counts among A, B, C only: A 7 + 9, B 10, C 8: C goes, A 24 beats B 10
    smith = aggregate(profile, "smith-irv")
    first, second = smith.details["rounds"]
    assert votes_of(profile, first) == {"A": 16, "B": 10, "C": 8}
    assert votes_of(profile, second) == {"A": 24, "B": 10}
    assert names(profile, smith.ranking) == ["A", "B", "C", "D"] and smith.unique
    assert aggregate(profile, "irv").winners() == benham.winners() == [profile.index("B")]


def test_benham_breaks_ties_every_way_and_reports_them(tmp_path):
    profile = read_votes(election(tmp_path, "A>B>C,1\nB>C>A,1\nC>A>B,1\n"))
    result = aggregate(profile, "benham")
    # no Condorcet winner; all tie at 1 vote; whoever goes, the pair left has one
    assert {tuple(names(profile, t)) for t in result.ties} == {
        ("A", "B", "C"),
        ("C", "A", "B"),
        ("B", "C", "A"),
    }
    assert result.n_optimal == 3 and result.details["winners"] == [0, 1, 2]
    first, second = result.details["rounds"]
    assert names(profile, first.tied) == ["A", "B", "C"]
    assert names(profile, second.elected) == ["A"]


def test_cli_reports_the_hybrids(tmp_path):
    path = election(tmp_path, CYCLE)
    text = run("--rule", "benham", str(path)).output
    assert "round 2: B beats every continuing candidate head to head: elected" in text
    report = json.loads(run("--rule", "benham", "--format", "json", str(path)).output)
    assert [r["elected"] for r in report["rounds"]] == [[], ["B"]]
    assert report["winners"] == ["B"] and "smith_set" not in report
    text = run("--rule", "smith-irv", str(path)).output
    assert "Smith set: A, B, C" in text
    report = json.loads(run("--rule", "smith-irv", "--format", "json", str(path)).output)
    assert report["smith_set"] == ["A", "B", "C"] and report["ranking"] == ["A", "B", "C", "D"]
    wrong = run("--rule", "benham", "--batch-elimination", str(path))
    assert wrong.exit_code == 2
    assert wrong.output.strip() == (
        "Error: --batch-elimination is only for --rule irv, not --rule benham"
    )


def test_hybrids_follow_the_transitive_majority_on_dublin_north(shared_data):
    profile = read_votes(shared_data / "preflib" / "00001-00000001.soi")
    majority = aggregate(profile, "copeland")  # the majority relation is a linear order here
    assert majority.unique
    for rule in ("benham", "smith-irv"):
        result = aggregate(profile, rule)
        # every round has a Condorcet winner of the candidates left: it goes on top
        assert result.unique and result.ranking.tolist() == majority.ranking.tolist()
    assert aggregate(profile, "smith-irv").details["smith_set"] == [int(majority.ranking[0])]
    (only,) = aggregate(profile, "benham").details["rounds"]
    assert only.elected == (int(majority.ranking[0]),)
    assert aggregate(profile, "irv").ranking.tolist() != majority.ranking.tolist()
