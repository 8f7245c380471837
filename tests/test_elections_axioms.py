"""Axioms of counted contests (Condorcet and majority winners and losers, the Smith set):
the head-to-head numbers against the count itself with two candidates left, every
verdict against brute force on small profiles under every ballot rule, a hand profile
with known answers, a shipped RCTab contest, and the command line's text, JSON and HTML."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.aggregation.elections.axioms import election_axioms
from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import read_config
from rankmodels.aggregation.elections.records import read_ballots
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import tabulate
from rankmodels_app.aggregate import aggregate_command
from tests.conftest import SHARED_DATA

NAMES = ("A", "B", "C", "D")


def _random_ballots(rng: np.random.Generator, n: int, unnamed_overvotes: bool):
    """Up to 8 distinct ballots with skipped ranks, overvotes, repeats and undervotes."""
    counter = BallotCounter()
    for _ in range(int(rng.integers(1, 9))):
        marks = []
        for rank in range(1, 6):
            u = rng.random()
            if u < 0.2:
                continue  # a skipped rank
            if u < 0.3:
                picks = rng.choice(n, size=2, replace=False)
                marks += [(rank, int(x)) for x in picks]  # an overvote naming two
            elif u < 0.35 and unnamed_overvotes:
                marks.append((rank, OVERVOTE))
            else:
                marks.append((rank, int(rng.integers(n))))  # repeats happen
        counter.add(ranking_from_marks(marks), int(rng.integers(1, 5)))
    return counter.ballots(NAMES[:n])


def _random_rules(rng: np.random.Generator) -> Rules:
    return Rules(
        overvote=str(rng.choice(["exhaust", "skip", "exhaust-if-multiple"])),
        max_skipped_ranks=[None, 0, 1][int(rng.integers(3))],
        exhaust_on_duplicate=bool(rng.integers(2)),
    )


def _for_whom(ballots, rules, x, y):
    """Per distinct ballot, the name it counts for when only ``x`` and ``y`` are in the
    count (round 1 of the tabulator with every other candidate excluded), else None."""
    out = []
    others = frozenset(c for c in ballots.candidates if c not in (x, y))
    for ranking in ballots.rankings:
        counter = BallotCounter()
        counter.add(ranking)
        one = counter.ballots(ballots.candidates)
        first = tabulate(one, Rules(**{**rules.__dict__, "excluded": others}))[0].rounds[0]
        votes = {ballots.candidates[c]: v for c, v in first.tally.items() if v > 0}
        out.append(next(iter(votes), None))
    return out


def _brute_force(ballots, rules, counts):
    names = ballots.candidates
    weight = list(ballots.counts)
    wins = {(x, y): 0 for x in names for y in names if x != y}
    against = {x: [0] * len(weight) for x in names}  # pairs each ballot counts against x
    for x, y in itertools.combinations(names, 2):
        for j, who in enumerate(_for_whom(ballots, rules, x, y)):
            if who is not None:
                loser = y if who == x else x
                wins[who, loser] += weight[j]
                against[loser][j] += 1
    beats = {(x, y): wins[x, y] > wins[y, x] for x, y in wins}
    winner = [x for x in names if all(beats[x, y] for y in names if y != x)]
    loser = [x for x in names if all(beats[y, x] for y in names if y != x)]
    smith = next(
        set(s)
        for size in range(1, len(names) + 1)
        for s in itertools.combinations(names, size)
        if all(beats[a, b] for a in s for b in names if b not in s)
    )
    voters = ballots.total - ballots.undervotes
    last = [
        x
        for x in names
        if 2 * sum(w for w, k in zip(weight, against[x], strict=True) if k == len(names) - 1)
        > voters
    ]
    first = counts[0].rounds[0]
    majority = [names[x] for x, v in first.tally.items() if 2 * v > first.active]
    return wins, winner, loser, smith, majority, last


@pytest.mark.parametrize("seed", range(40))
def test_axioms_match_brute_force_under_every_ballot_rule(seed):
    rng = np.random.default_rng(seed)
    rules = _random_rules(rng)
    n = int(rng.integers(2, 5))
    ballots = _random_ballots(rng, n, unnamed_overvotes=rules.overvote != "exhaust-if-multiple")
    counts = tabulate(ballots, rules)
    got = election_axioms(ballots, rules, counts)
    wins, winner, loser, smith, majority, last = _brute_force(ballots, rules, counts)
    for pair in got["pairwise"]:
        assert pair["x_over_y"] == wins[pair["x"], pair["y"]]
        assert pair["y_over_x"] == wins[pair["y"], pair["x"]]
    assert got["condorcet_winner"] == (winner[0] if winner else None)
    assert got["condorcet_loser"] == (loser[0] if loser and n > 1 else None)
    assert set(got["smith_set"]) == smith
    assert got["majority_winner"] == (majority[0] if majority else None)
    assert got["majority_loser"] == (last[0] if last else None)
    elected = {ballots.candidates[w] for w in counts[0].winners}
    assert set(got["elected"]) == elected
    assert got["condorcet_winner_elected"] == (winner[0] in elected if winner else None)


def _center_squeeze():
    counter = BallotCounter()
    for count, order in ((35, "ABC"), (33, "CBA"), (32, "BAC")):
        counter.add(ranking_from_marks((r, "ABC".index(x)) for r, x in enumerate(order, 1)), count)
    return counter.ballots(("A", "B", "C"))


def test_center_squeeze_known_answers():
    """35 A>B>C, 33 C>B>A, 32 B>A>C: instant runoff drops B and elects A, though B beats
    A 65-35 and C 67-33; C loses to both and is last on 67 ballots."""
    ballots = _center_squeeze()
    rules = Rules()
    got = election_axioms(ballots, rules, tabulate(ballots, rules))
    assert got["elected"] == ["A"]
    assert (got["condorcet_winner"], got["condorcet_winner_elected"]) == ("B", False)
    assert (got["condorcet_loser"], got["condorcet_loser_elected"]) == ("C", False)
    assert got["smith_set"] == ["B"] and got["smith_set_elected"] == []
    assert got["majority_winner"] is None and got["majority_winner_elected"] is None
    assert (got["majority_loser"], got["majority_loser_elected"]) == ("C", False)
    pairs = {(p["x"], p["y"]): (p["x_over_y"], p["y_over_x"], p["margin"]) for p in got["pairwise"]}
    assert pairs["A", "B"] == (35, 65, 0.15)
    assert pairs["B", "C"] == (67, 33, 0.17)
    # two seats, quota 34: A's surplus of 1 moves as 35 x 0.0285 = 0.9975 to B, who then
    # has 32.9975 < 33 and goes out: A and C are elected, the Condorcet winner is not
    two = Rules(seats=2, mode="multi-seat")
    stv = election_axioms(ballots, two, tabulate(ballots, two))
    assert stv["elected"] == ["A", "C"] and stv["condorcet_winner_elected"] is False
    assert stv["condorcet_loser_elected"] is True and stv["majority_loser_elected"] is True


def test_a_shipped_contest_against_the_count():
    """Portland 2015 (99 ballots, 15 candidates): every head-to-head number equals the
    count with only those two candidates left, the Smith set is dominant and minimal."""
    root = SHARED_DATA / "rcv" / "rctab-test-data" / "2015_portland_mayor"
    if not root.is_dir():
        pytest.skip("RCTab test data not found")
    contest = read_config(next(root.glob("*_config.json")))
    ballots = read_ballots(contest)
    counts = tabulate(ballots, contest.rules, [c.name for c in contest.candidates])
    got = election_axioms(ballots, contest.rules, counts)
    declared = [c.name for c in contest.candidates]
    assert got["candidates"] == declared and got["elected"] == ["Mavodones, Nicholas M. Jr."]
    wins = {}
    for pair in got["pairwise"]:
        wins[pair["x"], pair["y"]], wins[pair["y"], pair["x"]] = pair["x_over_y"], pair["y_over_x"]
    for x, y in itertools.combinations(declared, 2):
        others = frozenset(c for c in ballots.candidates if c not in (x, y))
        rules = Rules(**{**contest.rules.__dict__, "excluded": others, "stop_after_round": 1})
        tally = tabulate(ballots, rules, declared)[0].rounds[0].tally
        code = ballots.candidates.index
        assert (wins[x, y], wins[y, x]) == (tally[code(x)], tally[code(y)])
    smith = set(got["smith_set"])
    beats = {(x, y): wins[x, y] > wins[y, x] for x, y in wins}
    assert all(beats[a, b] for a in smith for b in declared if b not in smith)
    for a in smith:  # minimal: no member can leave without breaking dominance
        rest = smith - {a}
        assert not rest or not all(beats[b, a] for b in rest)
    assert got["condorcet_winner"] == (next(iter(smith)) if len(smith) == 1 else None)


def test_cli_reports_axioms_in_text_json_and_html(tmp_path):
    votes = tmp_path / "squeeze.csv"
    votes.write_text(
        "rank1,rank2,rank3\n" + "A,B,C\n" * 35 + "C,B,A\n" * 33 + "B,A,C\n" * 32, encoding="utf-8"
    )
    runner = CliRunner()
    text = runner.invoke(aggregate_command, ["--rule", "stv", "--seats", "1", str(votes)])
    assert text.exit_code == 0, text.output
    assert "Condorcet winner: B (elected: NO)" in text.output
    assert "Condorcet loser: C (elected: no)" in text.output
    assert "majority loser: C (elected: no)" in text.output
    page = tmp_path / "rounds.html"
    out = runner.invoke(
        aggregate_command,
        ["--rule", "stv", "--seats", "2", "--format", "json", "--chart", str(page), str(votes)],
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["axioms"]["condorcet_winner"] == "B"
    assert report["axioms"]["elected"] == ["A", "C"]
    assert report["axioms"]["condorcet_winner_elected"] is False
    html = page.read_text(encoding="utf-8")
    assert "<h2>Axioms</h2>" in html and "Condorcet loser: C (elected: YES)" in html
    assert '<th>A vs B</th><td class="num">35</td><td class="num">65</td>' in html
