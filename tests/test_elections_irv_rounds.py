"""Instant runoff's rounds as tabulators report them: the count shown stops at the round
where a candidate has a majority (``--until-one-left`` shows the whole elimination order,
which the ranking and the axiom report use either way), undeclared write-ins go alone
first, and on a cast-vote record the exhausted ballots are split by cause -- checked by
hand on small records and, on random records with every marker, against the exhausted
total of the count itself."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.aggregation import aggregate, read_votes
from rankmodels_app.aggregate import aggregate_command
from tests.conftest import REPO


def run(*args: str) -> dict:
    result = CliRunner().invoke(aggregate_command, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def text(*args: str) -> str:
    result = CliRunner().invoke(aggregate_command, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def record(tmp_path, rows: list[tuple[str, int]], ranks: int = 4):
    """A rank-column record of ``(cells, times)`` rows, cells comma-separated."""
    path = tmp_path / "cvr.csv"
    lines = [",".join(f"rank{k}" for k in range(1, ranks + 1))]
    lines += [cells for cells, times in rows for _ in range(times)]
    path.write_text("\n".join(lines) + "\n")
    return path


def shown(report: dict) -> list[tuple[list[str], list[str]]]:
    return [(r["elected"], r["eliminated"]) for r in report["rounds"]]


def test_the_count_stops_at_the_majority():
    """data/election.soi: Elm then Oak go; in round 3 Cedar has 21 of the 40 votes
    counting, a majority: elected, nobody eliminated. The full order goes on with Birch and
    Ash; the ranking and the axiom report are the same either way."""
    soi = str(REPO / "data" / "election.soi")
    report = run("--rule", "irv", soi)
    assert shown(report) == [([], ["Elm"]), ([], ["Oak"]), (["Cedar"], [])]
    assert report["rounds"][2]["votes"]["Cedar"] == 21
    full = run("--rule", "irv", "--until-one-left", soi)
    assert shown(full) == [([], ["Elm"]), ([], ["Oak"]), (["Cedar"], ["Birch"]), ([], ["Ash"])]
    assert report["ranking"] == full["ranking"] == ["Cedar", "Ash", "Birch", "Oak", "Elm"]
    assert report["axioms"] == full["axioms"]
    assert "round 3: Cedar has a majority, 21 of 40 votes counting: elected" in text(
        "--rule", "irv", soi
    )
    bad = CliRunner().invoke(aggregate_command, ["--rule", "borda", "--until-one-left", soi])
    assert bad.exit_code == 2
    assert (
        bad.output.strip()
        == "Error: --until-one-left is only for --rule irv, smith-irv, not --rule borda"
    )


def irv_rounds(tmp_path, votes: str):
    path = tmp_path / "votes.csv"
    path.write_text("ranking,count\n" + votes)
    return aggregate(read_votes(path), "irv").details["rounds"]


def test_majority_in_round_one_and_equal_votes_at_the_end(tmp_path):
    """A majority at once (6 of 11): round 1 elects A. Equal votes between the last two:
    no round has a majority, so none elects."""
    rounds = irv_rounds(tmp_path, "A>B>C,6\nB>C>A,3\nC>B>A,2\n")
    assert rounds[0].elected == (0,)
    assert all(r.elected == () for r in irv_rounds(tmp_path, "A>B,1\nB>A,1\n"))


def test_write_ins_go_alone_first(tmp_path):
    """Write-ins (3) have more votes than D (1) and A has a majority of round 1 (7 of 12):
    still round 1 only eliminates the write-ins; then A (8 of 12) is elected."""
    rows = [("A,,,", 7), ("write-in,A,,", 1), ("write-in,,,", 2), ("D,,,", 1), ("B,,,", 1)]
    report = run("--rule", "irv", str(record(tmp_path, rows)))
    assert shown(report) == [([], ["Write-in"]), (["A"], [])]
    assert report["rounds"][1]["votes"] == {"A": 8, "B": 1, "D": 1}


# the hand-counted record: A 5, B 4, C 3 (C>A, C>overvote>B, C>-->-->B), D 1, a ballot no
# round counts (an overvote first) and an empty line (no ballot)
MARKED = [
    ("A,,,", 5),
    ("B,,,", 4),
    ("C,A,,", 1),
    ("C,overvote,B,", 1),
    ("C,,,B", 1),
    ("D,,,", 1),
    (",,,", 1),
    ("overvote,A,,", 1),
]


@pytest.mark.parametrize(
    ("options", "causes", "final", "left_out"),
    [
        ((), (1, 0, 1), (6, 5), 1),
        (("--skipped-ranks", "exhaust-after-2"), (1, 1, 1), (6, 4), 1),
        (("--overvote", "skip"), (0, 0, 1), (7, 6), 0),
    ],
)
def test_exhausted_ballots_by_cause(tmp_path, options, causes, final, left_out):
    """Round 1: D goes (exhausted choices). Round 2: C goes; C>A moves to A; C>overvote>B
    exhausts by overvote (or, passing over overvotes, moves to B, and overvote>A counts
    for A from round 1); C>-->-->B moves to B, or exhausts after two skipped ranks (Maine).
    Round 3: A has a majority."""
    path = str(record(tmp_path, MARKED))
    report = run("--rule", "irv", *options, path)
    last = report["rounds"][-1]
    assert (last["votes"]["A"], last["votes"]["B"]) == final and last["elected"] == ["A"]
    labels = ("overvotes", "skipped rankings", "exhausted choices")
    assert last["inactive"] == dict(zip(labels, causes, strict=True))
    assert report["rounds"][0]["inactive"] == dict.fromkeys(labels, 0)
    assert report["left_out"] == left_out
    table = text("--rule", "irv", *options, path).splitlines()
    rows = [line.split()[-1] for line in table if line.strip().startswith(labels)]
    assert rows == list(map(str, causes))
    assert (
        f"ballots no round counts (no marks, or an overvote or skipped ranks first): {left_out}"
        in table
    )


@pytest.mark.parametrize("seed", range(3))
def test_causes_add_up_to_the_exhausted_ballots(tmp_path, seed):
    """Random records with every marker (skipped ranks, overvotes, write-ins, repeated
    candidates): in every round, under every overvote and skipped-rank rule, the causes
    add up to the count's own exhausted total, and the ballots left out are the ones the
    count never saw."""
    rng = np.random.default_rng(seed)
    cells = ["A", "B", "C", "D", "E", "", "overvote", "write-in"]
    p = np.array([0.2, 0.18, 0.16, 0.12, 0.1, 0.12, 0.06, 0.06])
    rows = [(",".join(rng.choice(cells, size=5, p=p)), 1) for _ in range(300)]
    path = str(record(tmp_path, rows, ranks=5))
    for options in ((), ("--overvote", "skip"), ("--skipped-ranks", "exhaust-after-2")):
        report = run("--rule", "irv", "--until-one-left", *options, path)
        for r in report["rounds"]:
            assert sum(r["inactive"].values()) == r["exhausted"]
        assert report["ballots"] + report["left_out"] == 300
