"""NIST SP 1500-103 Common Data Format cast-vote records, JSON.

The contest is the ``Election.Contest`` whose ``Name`` is the source's contest id; a
ballot's marks are its ``CVRContestSelection`` s in the snapshot named by
``CurrentSnapshotId``: the rank on the selection or on each ``SelectionPosition``
(positions with ``HasIndication`` or ``IsAllocable`` "no" are not marks), the candidate by
``ContestSelectionId -> CandidateIds[0] -> Candidate.Name`` (a selection with
``IsWriteIn`` or a position with ``CVRWriteIn`` is an undeclared write-in; a candidate
named as the source's overvote label is an overvote). A ballot without the contest is
not counted.
"""

from __future__ import annotations

from typing import Any

from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.jsonfile import read_json_object
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_cdf"]

_TRUE = ("yes", "true", "1", True, 1)


def read_cdf(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    """Add the ballots of the CDF JSON record ``source`` to ``counter``."""
    path = source.path
    if path.suffix.lower() != ".json":
        raise InputError("only the JSON form of the Common Data Format is read", path=path)
    report = read_json_object(path, "a CDF JSON record")
    candidates: dict[str, str] = {}
    contest = None
    for election in report.get("Election", []):
        for c in election.get("Candidate", []):
            candidates[c["@id"]] = c.get("Name", "")
        for item in election.get("Contest", []):
            if contest is None and item.get("Name") == source.contest_id:
                contest = item
    if contest is None:
        raise InputError(f"contest {source.contest_id!r} not found", path=path, field="Contest")
    selections = {s["@id"]: s for s in contest.get("ContestSelection", [])}
    selection_code: dict[str, int] = {}
    for sid, selection in selections.items():
        selection_code[sid] = _code(selection, candidates, source, names)
    for i, cvr in enumerate(report.get("CVR", [])):
        found = _cvr_contest(cvr, contest["@id"])
        if found is None:
            continue
        marks: list[tuple[int, int]] = []
        for sel in found.get("CVRContestSelection", []) or []:
            sid = sel.get("ContestSelectionId")
            if sid not in selection_code:
                raise InputError(
                    f"ContestSelection {sid!r} is not in the contest", path=path, field=f"CVR[{i}]"
                )
            code = selection_code[sid]
            if "Rank" in sel:
                marks.append((int(sel["Rank"]), code))
                continue
            for pos in sel.get("SelectionPosition", []):
                mark = names.write_in if "CVRWriteIn" in pos else code
                if pos.get("HasIndication") == "no" or pos.get("IsAllocable") == "no":
                    continue
                marks.append((int(pos["Rank"]), mark))
        counter.add(ranking_from_marks(marks))


def _code(
    selection: dict[str, Any], candidates: dict[str, str], source: Source, names: CandidateNames
) -> int:
    if selection.get("IsWriteIn") in _TRUE:
        if names.write_in is None:
            raise InputError(
                "a write-in selection, but the config counts no write-ins",
                path=source.path,
                field=selection["@id"],
            )
        return names.write_in
    ids = selection.get("CandidateIds") or []
    if not ids or ids[0] not in candidates:
        raise InputError(
            "selection without a known candidate",
            path=source.path,
            field=selection.get("@id", "ContestSelection"),
        )
    name = candidates[ids[0]]
    if source.overvote_label and name == source.overvote_label:
        return OVERVOTE
    code = names.lookup(name)
    if code is None:
        raise InputError(
            f"{name!r} is not a candidate of the config", path=source.path, field=selection["@id"]
        )
    return code


def _cvr_contest(cvr: dict[str, Any], contest_id: str) -> dict[str, Any] | None:
    current = cvr.get("CurrentSnapshotId")
    for snapshot in cvr.get("CVRSnapshot", []):
        if current is not None and snapshot.get("@id") != current:
            continue
        for contest in snapshot.get("CVRContest", []):
            if contest.get("ContestId") == contest_id:
                return contest
    return None
