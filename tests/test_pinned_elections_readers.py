"""Two vendor conventions on records of a few ballots: a NIST CDF candidate named as the
source's overvote label is an overvote at its rank (and a candidate the config does not
know without that label), and a Dominion session whose ``Original`` does not say
``IsCurrent`` is counted as scanned, its ``Modified`` ignored."""

from __future__ import annotations

import json

import pytest

from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter
from rankmodels.aggregation.elections.cdf import read_cdf
from rankmodels.aggregation.elections.config import Candidate, Source
from rankmodels.aggregation.elections.dominion import read_dominion
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

ANN, BOB, CY = 0, 1, 2
NAMES = CandidateNames([Candidate("Ann", ("51",)), Candidate("Bob", ("52",)),
                        Candidate("Cy", ("53",))], False)  # fmt: skip


def _read(reader, source):
    counter = BallotCounter()
    reader(source, NAMES, counter)
    ballots = counter.ballots(NAMES.names)
    return dict(zip(ballots.rankings, ballots.counts.tolist(), strict=True))


def _cvr(*marks):
    """A CDF record's CVR: one snapshot, contest K, ``(selection, rank)`` marks."""
    selections = [{"ContestSelectionId": sid, "Rank": rank} for sid, rank in marks]
    contest = {"ContestId": "K", "CVRContestSelection": selections}
    return {"CurrentSnapshotId": "s", "CVRSnapshot": [{"@id": "s", "CVRContest": [contest]}]}


def _write_cdf(tmp_path):
    people = {"cA": "Ann", "cB": "Bob", "cO": "Overvote"}
    election = {
        "@id": "e",
        "Candidate": [{"@id": cid, "Name": name} for cid, name in people.items()],
        "Contest": [{"@id": "K", "Name": "Mayor", "ContestSelection": [
            {"@id": "s" + cid[1], "CandidateIds": [cid]} for cid in people
        ]}],
    }  # fmt: skip
    cvrs = [_cvr(("sO", 1), ("sB", 2)), _cvr(("sA", 1), ("sO", 2)), _cvr(("sA", 1), ("sB", 2))]
    path = tmp_path / "cdf.json"
    path.write_text(json.dumps({"CVR": cvrs, "Election": [election]}))
    return path


def test_a_cdf_candidate_named_as_the_overvote_label_is_an_overvote(tmp_path):
    path = _write_cdf(tmp_path)
    got = _read(read_cdf, Source(path, "cdf", contest_id="Mayor", overvote_label="Overvote"))
    assert got == {
        ((1, (OVERVOTE,)), (2, (BOB,))): 1,
        ((1, (ANN,)), (2, (OVERVOTE,))): 1,
        ((1, (ANN,)), (2, (BOB,))): 1,
    }
    with pytest.raises(InputError, match="'Overvote' is not a candidate of the config"):
        _read(read_cdf, Source(path, "cdf", contest_id="Mayor"))


def _session(original_marks, modified_marks=None, **flags):
    def card(marks):
        return {"Contests": [{"Id": 5, "Marks": [
            {"CandidateId": c, "Rank": r, "IsAmbiguous": False} for c, r in marks
        ]}]}  # fmt: skip

    session = {"Original": {**flags, "Cards": [card(original_marks)]}}
    if modified_marks is not None:
        session["Modified"] = {"Cards": [card(modified_marks)]}
    return session


def test_a_dominion_session_without_is_current_counts_as_scanned(tmp_path):
    """Sessions: no ``IsCurrent`` (Ann > Bob scanned, Cy adjudicated) counts Ann > Bob;
    ``IsCurrent`` false counts the adjudicated Cy; true counts the scan, Bob."""
    folder = tmp_path / "dominion"
    folder.mkdir()
    (folder / "ContestManifest.json").write_text(
        json.dumps({"List": [{"Id": 5, "Description": "Mayor"}]})
    )
    (folder / "CandidateManifest.json").write_text(json.dumps({"List": [
        {"Id": 51 + k, "Description": name, "ContestId": 5} for k, name in enumerate("ABC")
    ]}))  # fmt: skip
    sessions = [
        _session([(51, 1), (52, 2)], [(53, 1)]),
        _session([(51, 1)], [(53, 1)], IsCurrent=False),
        _session([(52, 1)], [(51, 1)], IsCurrent=True),
    ]
    (folder / "CvrExport.json").write_text(json.dumps({"Sessions": sessions}))
    got = _read(read_dominion, Source(folder, "dominion", contest_id="5"))
    assert got == {((1, (ANN,)), (2, (BOB,))): 1, ((1, (CY,)),): 1, ((1, (BOB,)),): 1}
