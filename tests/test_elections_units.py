"""The election counting pieces on their own: Java's generator, ballots as cast, the
rules at count time (hand-counted cases and instant runoff cross-checked against
:func:`rankmodels.aggregation.irv.instant_runoff`), configs and records that are wrong."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.aggregation.elections.ballots import (
    OVERVOTE,
    UNDECLARED_WRITE_INS,
    BallotCounter,
    from_profile,
    ranking_from_marks,
)
from rankmodels.aggregation.elections.config import read_config
from rankmodels.aggregation.elections.cvr_csv import read_cvr_ballots
from rankmodels.aggregation.elections.javarandom import JavaRandom, shuffle
from rankmodels.aggregation.elections.records import read_ballots
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import Status, TabulationError, tabulate
from rankmodels.aggregation.irv import instant_runoff
from rankmodels.aggregation.profile import Profile
from rankmodels.errors import InputError
from rankmodels_app.aggregate import aggregate_command


def _ballots(names, rows):
    """Cast ballots from ``(count, [(rank, name-or-OVERVOTE), ...])`` rows."""
    code = {n: i for i, n in enumerate(names)}
    counter = BallotCounter()
    for count, marks in rows:
        counter.add(
            ranking_from_marks((r, OVERVOTE if x is OVERVOTE else code[x]) for r, x in marks),
            count,
        )
    return counter.ballots(names)


def _strict(count, *names):
    return count, [(r, x) for r, x in enumerate(names, start=1)]


def test_java_random_matches_java():
    """Values ``java.util.Random`` gives (JDK documentation examples widely reproduced)."""
    assert JavaRandom(0).next_int32() == -1155484576
    assert JavaRandom(42).next_int32() == -1170105035
    assert JavaRandom(0).next_double() == pytest.approx(0.730967787376657, abs=1e-15)
    r = JavaRandom(7)
    draws = [r.next_int(6) for _ in range(6000)]
    assert set(draws) == set(range(6))
    assert all(800 < draws.count(k) < 1200 for k in range(6))
    items = list(range(10))
    shuffle(items, JavaRandom(3))
    assert sorted(items) == list(range(10)) and items != list(range(10))


def test_ballot_counter_merges_equal_ballots():
    counter = BallotCounter()
    counter.add(ranking_from_marks([(2, 1), (1, 0)]))
    counter.add(ranking_from_marks([(1, 0), (2, 1)]), 3)
    counter.add(ranking_from_marks([]))
    ballots = counter.ballots(["A", "B"])
    assert len(ballots.rankings) == 2
    assert ballots.total == 5 and ballots.undervotes == 1
    assert ballots.rankings[0] == ((1, (0,)), (2, (1,)))


def test_stv_by_hand():
    """Two seats, 10 ballots: A 6 (A>B), C 3, B 1. Droop quota floor(10/3)+1 = 4; A's
    surplus fraction (6-4)/6 = 0.3333 (4 places, down) moves 0.3333 of each A ballot to
    B: 1 + 6 * 0.3333 = 2.9998 < 3, so B goes and C takes the second seat; A kept
    6 * 0.6667 = 4.0002, the residual surplus 0.0002."""
    b = _ballots("ABC", [_strict(6, "A", "B"), _strict(3, "C"), _strict(1, "B")])
    (count,) = tabulate(b, Rules(seats=2, mode="multi-seat"))
    r1, r2, r3 = count.rounds[:3]
    assert r1.threshold == 4 and r1.elected == [0]
    assert r2.tally == {1: Decimal("2.9998"), 2: Decimal(3), 0: Decimal(4)}
    assert r2.residual_surplus == Decimal("0.0002")
    assert r2.eliminated == [1]
    assert r1.transfers[0] == {1: Decimal("1.9998"), "residual surplus": Decimal("0.0002")}
    assert r3.elected == [2]
    assert [count.candidates[w] for w in count.winners] == ["A", "C"]
    # RCTab's decimal strings: whole numbers until a transferred value goes in
    assert [str(r2.tally[x]) for x in (1, 2, 0)] == ["2.9998", "3", "4"]
    assert str(r2.inactive[Status.EXHAUSTED_CHOICES]) == "0"


@pytest.mark.parametrize("places", [4, 12])
def test_stv_by_hand_at_any_precision(places):
    """The count above with ``d`` places: the fraction is ``0.33...3`` (``d`` threes), B
    gets ``1 + 6 * 0.33...3 = 2.99...98`` and A's residual surplus is ``2 * 10**-d``. At 12
    places a product of two values overflows 64-bit integers, so the count runs on Python
    integers; both paths give the exact decimals."""
    b = _ballots("ABC", [_strict(6, "A", "B"), _strict(3, "C"), _strict(1, "B")])
    (count,) = tabulate(b, Rules(seats=2, mode="multi-seat", decimal_places=places))
    r2 = count.rounds[1]
    assert str(r2.tally[1]) == "2." + "9" * (places - 1) + "8"
    assert r2.residual_surplus == 2 * Decimal(10) ** -places
    assert [count.candidates[w] for w in count.winners] == ["A", "C"]


def test_a_tie_that_asks_an_operator_stops_the_count():
    """A 3, B 2, C 2: B and C tie for last; "ask" stops there naming them, and so does
    "previous-rounds-then-ask" (no earlier round); without a tie both count."""
    tied = _ballots("ABC", [_strict(3, "A"), _strict(2, "B", "A"), _strict(2, "C")])
    for mode in ("ask", "previous-rounds-then-ask"):
        with pytest.raises(TabulationError, match="round 1: a tie between B, C needs"):
            tabulate(tied, Rules(tiebreak=mode))
        clear = _ballots("ABC", [_strict(3, "A"), _strict(2, "B", "A"), _strict(1, "C")])
        (count,) = tabulate(clear, Rules(tiebreak=mode))
        assert [count.candidates[w] for w in count.winners] == ["A"]


def test_overvote_exhausts_only_while_two_marks_continue():
    """Marks A and B at rank 1, then C: exhaust-if-multiple exhausts the ballot while A
    and B continue; exhaust exhausts it at once; skip passes to C."""
    names = "ABCD"
    rows = [(1, [(1, "A"), (1, "B"), (2, "C")]), _strict(3, "A"), _strict(3, "B")]
    rows += [_strict(2, "C"), _strict(1, "D")]
    for rule, status, votes_c in (
        ("exhaust-if-multiple", Status.OVERVOTE, 2),
        ("exhaust", Status.OVERVOTE, 2),
        ("skip", None, 3),
    ):
        (count,) = tabulate(_ballots(names, rows), Rules(overvote=rule, tiebreak="candidate-order"))
        first = count.rounds[0]
        assert first.tally[2] == votes_c
        if status is not None:
            assert first.inactive[status] == 1


def test_skipped_ranks_exhaust_after_the_limit():
    """Ranks 1 and 4 marked (two skipped between): with max_skipped_ranks 1 the ballot is
    inactive by skipped rankings once its rank-1 candidate is out; with 2 it moves on."""
    rows = [(1, [(1, "D"), (4, "A")]), _strict(3, "A"), _strict(2, "B")]
    for limit, reaches_a in ((1, False), (2, True)):
        b = _ballots("ABD", rows)
        (count,) = tabulate(b, Rules(max_skipped_ranks=limit))
        second = count.rounds[1]
        assert second.tally[0] == (4 if reaches_a else 3)
        assert second.inactive[Status.SKIPPED_RANKINGS] == (0 if reaches_a else 1)


def test_duplicates_exhaust_or_are_passed_over():
    rows = [(1, [(1, "C"), (2, "C"), (3, "A")]), _strict(3, "A"), _strict(2, "B")]
    for exhaust, a_votes in ((True, 3), (False, 4)):
        (count,) = tabulate(_ballots("ABC", rows), Rules(exhaust_on_duplicate=exhaust))
        assert count.rounds[1].tally[0] == a_votes
        assert count.rounds[1].inactive[Status.REPEATED_RANKINGS] == (1 if exhaust else 0)


def test_an_unnamed_overvote_twice_is_a_repeated_ranking():
    """RCTab reads an overvote marker as one more candidate: passed over at rank 1, met
    again at rank 2, it is a repeat (with exhaust_on_duplicate) before A is reached."""
    rows = [(1, [(1, OVERVOTE), (2, OVERVOTE), (3, "A")]), _strict(2, "A"), _strict(1, "B")]
    for exhaust, a_votes in ((True, 2), (False, 3)):
        rules = Rules(overvote="skip", exhaust_on_duplicate=exhaust)
        (count,) = tabulate(_ballots("AB", rows), rules)
        assert count.rounds[0].tally[0] == a_votes
        assert count.rounds[0].inactive[Status.REPEATED_RANKINGS] == (1 if exhaust else 0)


@pytest.mark.parametrize("seed", range(6))
def test_single_seat_agrees_with_instant_runoff(seed):
    """Random complete strict ballots with distinct tallies: the eliminations of the
    count are instant runoff's elimination order, up to the majority."""
    rng = np.random.default_rng(seed)
    n = 5
    orders = np.array([rng.permutation(n) for _ in range(12)])
    weights = rng.integers(1, 40, size=12)
    profile = Profile.from_orders(orders, weights=weights.astype(float))
    ballots = from_profile(profile)
    (count,) = tabulate(ballots, Rules(continue_until_two=True))
    ranking = instant_runoff(profile).ranking
    if any(r.tied for r in count.rounds):
        pytest.skip("a tie: the tabulator draws, instant_runoff lists every way")
    gone = [x for r in count.rounds for x in r.eliminated]
    assert gone == list(ranking[::-1][: len(gone)])
    assert count.winners == [int(ranking[0])]


def _config(tmp_path, **changes):
    src = {
        "tabulatorVersion": "TEST",
        "outputSettings": {"contestName": "t"},
        "cvrFileSources": [
            {
                "filePath": "cvr.csv",
                "provider": "ess",
                "firstVoteColumnIndex": "2",
                "firstVoteRowIndex": "2",
                "overvoteLabel": "overvote",
                "skippedRankLabel": "undervote",
                "undeclaredWriteInLabel": "UWI",
            }
        ],
        "candidates": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        "rules": {
            "tiebreakMode": "useCandidateOrder",
            "overvoteRule": "exhaustImmediately",
            "winnerElectionMode": "singleWinnerMajority",
            "numberOfWinners": "1",
            "maxSkippedRanksAllowed": "1",
            "maxRankingsAllowed": "3",
        },
    }
    for key, value in changes.items():
        section, _, field = key.partition("__")
        target = (
            src[section]
            if not field
            else (src[section][0] if isinstance(src[section], list) else src[section])
        )
        target[field or section] = value
    (tmp_path / "cvr.csv").write_text(
        "id,r1,r2,r3\n1,A,B,\n2,B,undervote,A\n3,C,UWI,\n4,overvote,A,B\n5,A,,\n"
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(src))
    return path


def test_ess_csv_record_read_as_cast(tmp_path):
    contest = read_config(_config(tmp_path))
    ballots = read_ballots(contest)
    assert ballots.candidates == ("A", "B", "C", UNDECLARED_WRITE_INS)
    assert ballots.total == 5
    assert ((1, (1,)), (3, (0,))) in ballots.rankings  # the skipped rank is a gap
    assert ((1, (OVERVOTE,)), (2, (0,)), (3, (1,))) in ballots.rankings


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"rules__cutoff": True}, "rules.cutoff"),
        ({"rules__tiebreakMode": "flipACoin"}, "rules.tiebreakMode"),
        ({"rules__overvoteRule": "sometimes"}, "rules.overvoteRule"),
        ({"cvrFileSources__filePath": "nowhere.xlsx"}, "cvrFileSources[0].filePath"),
        ({"cvrFileSources__provider": "unisyn"}, "cvrFileSources[0].provider"),
        ({"rules__maxSkippedRanksAllowed": "-1"}, "rules.maxSkippedRanksAllowed"),
    ],
)
def test_bad_configs_name_the_key(tmp_path, change, key):
    with pytest.raises(InputError, match=key.replace("[", r"\[").replace("]", r"\]")):
        read_config(_config(tmp_path, **change))


def test_unknown_candidate_and_fake_xlsx(tmp_path):
    path = _config(tmp_path)
    (tmp_path / "cvr.csv").write_text("id,r1,r2,r3\n1,A,Zed,\n")
    with pytest.raises(InputError, match="row 2, column 3: 'Zed' is not a candidate"):
        read_ballots(read_config(path))
    (tmp_path / "fake.xlsx").write_text("not a workbook")
    data = json.loads(path.read_text())
    data["cvrFileSources"][0]["filePath"] = "fake.xlsx"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="not an xlsx workbook"):
        read_ballots(read_config(path))


def test_rank_column_csv_read_as_cast(tmp_path):
    path = tmp_path / "cvr.csv"
    path.write_text(
        "id,Choice 1,Choice 2,Choice 3,count\n1,write-in,Bob,,2\n2,Ann,overvote,Bob,1\n3,,,,1\n"
    )
    ballots = read_cvr_ballots(path)
    assert ballots.candidates == ("Bob", "Ann", UNDECLARED_WRITE_INS)
    assert ballots.total == 4 and ballots.undervotes == 1
    assert ((1, (2,)), (2, (0,))) in ballots.rankings
    assert ((1, (1,)), (2, (OVERVOTE,)), (3, (0,))) in ballots.rankings


def test_cli_counts_a_config_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    path = _config(tmp_path)
    result = runner.invoke(aggregate_command, ["--rules", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["results"][0]["tally"] == {
        "A": "2",
        "B": "1",
        "C": "1",
        UNDECLARED_WRITE_INS: "0",
    }
    assert report["results"][0]["inactiveBallots"]["overvotes"] == "1"
    text = runner.invoke(aggregate_command, ["--rules", str(path), "--format", "rctab-csv"])
    assert text.output.startswith("Contest Information\nGenerated By,rankmodels\n")
    for args, message in (
        (["--rules", str(tmp_path / "missing.json")], "no such file"),
        (["--rules", str(_config(tmp_path, rules__hareQuota="maybe"))], "rules.hareQuota"),
        (["--rule", "stv", str(tmp_path / "cvr.csv")], "needs --seats"),
        (["--rule", "irv", "--seats", "2", str(tmp_path / "cvr.csv")], "only for --rule stv"),
    ):
        result = runner.invoke(aggregate_command, args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error:") and message in lines[0]


def test_cli_stv_on_a_rank_column_record(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("Choice 1,Choice 2,count\nA,B,6\nC,,3\nB,,1\n")
    result = CliRunner().invoke(
        aggregate_command, ["--rule", "stv", "--seats", "2", str(path), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    elected = [a["elected"] for r in report["results"] for a in r["tallyResults"] if "elected" in a]
    assert elected == ["A", "C"]
    assert report["results"][1]["tally"]["B"] == "2.9998"
