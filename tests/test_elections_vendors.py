"""The vendor readers on small records written here -- Dominion (which sessions, cards,
contests and marks count, checked ballot by ballot; the contest by id or description),
Clear Ballot and Hart -- and bad records refused with one line (exit 2). The real records
are in ``test_elections_rctab.py``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankmodels.aggregation.elections.ballots import OVERVOTE, UNDECLARED_WRITE_INS
from rankmodels.aggregation.elections.config import read_config
from rankmodels.aggregation.elections.records import read_ballots
from rankmodels_app.aggregate import aggregate_command

INVALID = 7  # OutstackConditionManifest's "InvalidContest"


def _mark(candidate, rank, ambiguous=False):
    return {"CandidateId": candidate, "Rank": rank, "IsAmbiguous": ambiguous, "IsVote": True}


def _contest(cid, *marks, invalid=False):
    return {"Id": cid, "Marks": list(marks), "OutstackConditionIds": [INVALID] if invalid else []}


def _session(record, *contests, current=True, modified=None, cards=True):
    original = {"IsCurrent": current, "BallotTypeId": 1, "PrecinctPortionId": 1}
    if cards:
        original["Cards"] = [{"Id": 1, "Contests": list(contests)}]
    else:
        original["Contests"] = list(contests)
    session = {"TabulatorId": 1, "BatchId": 1, "RecordId": record, "Original": original}
    if modified is not None:
        session["Modified"] = {"BallotTypeId": 1, "Cards": [{"Contests": modified}]}
    return session


def write_export(tmp_path):
    """Contest 5 "Mayor" (candidates 51 Ann, 52 Bob, 53 Cy, 59 write-in) beside contest 6.
    Counted ballots: [Ann, Bob]; [Bob] (the ambiguous Ann mark left out); [Ann+Bob
    overvote, Cy]; [write-in]; the adjudicated [Cy]; a second-file ballot without
    ``Cards`` [Bob, Ann]. Not counted: contest 6, an InvalidContest, a session not
    current and never adjudicated."""
    folder = tmp_path / "dominion"
    folder.mkdir()

    def manifest(name, items):
        (folder / name).write_text(json.dumps({"Version": "5", "List": items}))

    manifest(
        "ContestManifest.json",
        [{"Id": 5, "Description": "Mayor"}, {"Id": 6, "Description": "Council"}],
    )
    manifest(
        "CandidateManifest.json",
        [
            {"Id": 51, "Description": "ANN", "ContestId": 5},
            {"Id": 52, "Description": "BOB", "ContestId": 5},
            {"Id": 53, "Description": "CY", "ContestId": 5},
            {"Id": 59, "Description": "Write-in", "ContestId": 5},
            {"Id": 61, "Description": "DEE", "ContestId": 6},
        ],
    )
    manifest("OutstackConditionManifest.json", [{"Id": INVALID, "Description": "InvalidContest"}])
    first = [
        _session(1, _contest(5, _mark(51, 1), _mark(52, 2)), _contest(6, _mark(61, 1))),
        _session(2, _contest(5, _mark(51, 1, ambiguous=True), _mark(52, 2))),
        _session(3, _contest(5, _mark(51, 1), _mark(52, 1), _mark(53, 2))),
        _session(4, _contest(5, _mark(59, 1))),
        _session(5, _contest(5, _mark(51, 1), invalid=True)),
        _session(6, _contest(5, _mark(51, 1)), current=False),
        _session(7, _contest(5, _mark(51, 1)), current=False, modified=[_contest(5, _mark(53, 1))]),
    ]
    second = [_session(8, _contest(5, _mark(52, 1), _mark(51, 2)), cards=False)]
    (folder / "CvrExport_1.json").write_text(json.dumps({"Sessions": first}))
    (folder / "CvrExport_2.json").write_text(json.dumps({"Sessions": second}))
    return folder


def write_config(tmp_path, contest="5", names=("Ann", "Bob", "Cy"), where="dominion"):
    config = {
        "outputSettings": {"contestName": "Mayor"},
        "cvrFileSources": [
            {
                "filePath": where,
                "contestId": contest,
                "provider": "dominion",
                "undeclaredWriteInLabel": "59",
            }
        ],
        "candidates": [{"name": n, "aliases": [str(51 + i)]} for i, n in enumerate(names)],
        "rules": {
            "tiebreakMode": "useCandidateOrder",
            "overvoteRule": "alwaysSkipToNextRank",
            "winnerElectionMode": "singleWinnerMajority",
            "numberOfWinners": "1",
        },
    }
    path = tmp_path / f"{contest}_{len(names)}_{where.replace('/', '_')}_config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("contest", ["5", "Mayor"])
def test_sessions_cards_and_marks_that_count(tmp_path, contest):
    write_export(tmp_path)
    ballots = read_ballots(read_config(write_config(tmp_path, contest)))
    ann, bob, cy, wi = range(4)
    assert ballots.candidates == ("Ann", "Bob", "Cy", UNDECLARED_WRITE_INS)
    got = dict(zip(ballots.rankings, ballots.counts.tolist(), strict=True))
    assert got == {
        ((1, (ann,)), (2, (bob,))): 1,
        ((2, (bob,)),): 1,
        ((1, (ann, bob)), (2, (cy,))): 1,
        ((1, (wi,)),): 1,
        ((1, (cy,)),): 1,
        ((1, (bob,)), (2, (ann,))): 1,
    }
    assert OVERVOTE not in {x for r in got for _, xs in r for x in xs}


def run(*args):
    return CliRunner().invoke(aggregate_command, [str(a) for a in args])


def test_the_count_and_bad_folders(tmp_path):
    folder = write_export(tmp_path)
    result = run("--rules", write_config(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.output
    first = json.loads(result.output)["results"][0]
    # round 1: Ann 1, Bob 2 (one with an ambiguous Ann mark), Cy 2 (the overvote skipped
    # on to Cy, the adjudicated ballot), write-ins 1
    assert first["tally"] == {"Ann": "1", "Bob": "2", "Cy": "2", "Undeclared Write-ins": "1"}
    for config, message in (
        (write_config(tmp_path, "Sheriff"), "contest 'Sheriff' not found"),
        (write_config(tmp_path, names=("Ann", "Bob")), "candidate Id 53 is not a candidate"),
    ):
        bad = run("--rules", config)
        assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1
        assert bad.output.startswith("Error: ") and message in bad.output
    for name in ("CvrExport_1.json", "CvrExport_2.json"):
        (folder / name).unlink()
    bad = run("--rules", write_config(tmp_path))
    assert bad.exit_code == 2 and "no CvrExport.json" in bad.output
    (folder / "CvrExport.json").write_text("{not json")
    bad = run("--rules", write_config(tmp_path))
    assert bad.exit_code == 2 and "not JSON" in bad.output
    bad = run("--rules", write_config(tmp_path, where="dominion/CvrExport.json"))
    assert bad.exit_code == 2 and "is a folder of CvrExport" in bad.output


def _config(tmp_path, provider, file_path, contest, names, label=""):
    config = {
        "outputSettings": {"contestName": "Mayor"},
        "cvrFileSources": [
            {
                "filePath": file_path,
                "contestId": contest,
                "provider": provider,
                "undeclaredWriteInLabel": label,
            }
        ],
        "candidates": [{"name": n, "aliases": [a]} for n, a in names],
        "rules": {
            "tiebreakMode": "useCandidateOrder",
            "overvoteRule": "alwaysSkipToNextRank",
            "winnerElectionMode": "singleWinnerMajority",
            "numberOfWinners": "1",
            "maxRankingsAllowed": "2",
        },
    }
    path = tmp_path / f"{provider}_{len(names)}_config.json"
    path.write_text(json.dumps(config))
    return path


BALLOT_COLUMNS = "RowNumber,BoxID,BoxPosition,BallotID,PrecinctID,BallotStyleID,"
BALLOT_COLUMNS += "PrecinctStyleName,ScanComputerName,Status,Remade"


def _choice(contest, rank, name):
    return f'"Choice_1_1:{contest}:{rank}:Vote For 1:{name}:NON"'


def test_clear_ballot(tmp_path):
    """Columns: Ann and Bob at ranks 1 and 2 of "City, Mayor" (a comma inside the quoted
    header), one column of another contest. Rows: Ann>Bob, Bob (and Dee of the other
    contest), Ann+Bob at rank 1 (an
    overvote), nothing (an undervote), Ann>Bob."""
    cols = [_choice("City, Mayor", r, n) for n in ("Ann", "Bob") for r in (1, 2)]
    cols.append(_choice("Council", 1, "Dee"))
    rows = ["1,0,0,1,0", "0,0,1,0,1", "1,0,1,0,0", "0,0,0,0,0", "1,0,0,1,0"]
    lines = [BALLOT_COLUMNS + "," + ",".join(cols)]
    lines += [f"{i},b,1,id{i},1,1,p,s,0,0," + row for i, row in enumerate(rows)]
    (tmp_path / "cb.csv").write_text("\n".join(lines) + "\n")
    names = [("Ann", "Ann"), ("Bob", "Bob")]
    ballots = read_ballots(
        read_config(_config(tmp_path, "clearBallot", "cb.csv", "City, Mayor", names))
    )
    got = dict(zip(ballots.rankings, ballots.counts.tolist(), strict=True))
    assert got == {
        ((1, (0,)), (2, (1,))): 2,
        ((1, (0, 1)),): 1,
        (): 1,
        ((1, (1,)),): 1,
    }
    bad = run("--rules", _config(tmp_path, "clearBallot", "cb.csv", "City, Mayor", names[:1]))
    assert bad.exit_code == 2 and "'Bob' is not a candidate of the config" in bad.output
    (tmp_path / "cb.csv").write_text(
        "\n".join([lines[0], lines[1].replace(",1,0,0,1,0", ",2,0,0,1,0")])
    )
    bad = run("--rules", _config(tmp_path, "clearBallot", "cb.csv", "City, Mayor", names))
    assert bad.exit_code == 2 and "line 2: a choice cell holds '2'" in bad.output
    (tmp_path / "cb.csv").write_text(BALLOT_COLUMNS + "," + _choice("City, Mayor", 3, "Ann") + "\n")
    bad = run("--rules", _config(tmp_path, "clearBallot", "cb.csv", "City, Mayor", names))
    assert bad.exit_code == 2 and "rank 3 exceeds maxRankingsAllowed (2)" in bad.output


def _sheet(contest, *options):
    ns = 'xmlns="http://tempuri.org/CVRDesign.xsd"'
    opts = "".join(f"<Option><Id>{i}</Id><Value>{v}</Value></Option>" for i, v in options)
    return (
        f'<?xml version="1.0" encoding="utf-8"?><Cvr {ns}><Contests><Contest><Name>M</Name>'
        f"<Id>{contest}</Id><Options>{opts}</Options></Contest></Contests></Cvr>"
    )


def test_hart(tmp_path):
    """Sheets: a>b (a's value 10, b's 01), b>a+w (an overvote with a write-in at rank 2),
    a sheet of another contest, a sheet with no option marked."""
    folder = tmp_path / "hart"
    folder.mkdir()
    (folder / "1.xml").write_text(_sheet("m1", ("a", "10"), ("b", "01")))
    (folder / "2.xml").write_text(_sheet("m1", ("b", "10"), ("a", "01"), ("w", "01")))
    (folder / "3.xml").write_text(_sheet("other", ("a", "10")))
    (folder / "4.xml").write_text(_sheet("m1"))
    names = [("Ann", "a"), ("Bob", "b")]
    config = _config(tmp_path, "hart", "hart", "m1", names, label="w")
    ballots = read_ballots(read_config(config))
    got = dict(zip(ballots.rankings, ballots.counts.tolist(), strict=True))
    assert got == {((1, (0,)), (2, (1,))): 1, ((1, (1,)), (2, (0, 2))): 1, (): 1}
    bad = run("--rules", _config(tmp_path, "hart", "hart", "m1", names[:1], label="w"))
    assert bad.exit_code == 2 and "option 'b' is not a candidate of the config" in bad.output
    (folder / "5.xml").write_text("<Cvr><Contests>")
    bad = run("--rules", config)
    assert bad.exit_code == 2 and "5.xml: not XML" in bad.output
