"""Dominion cast-vote records: a folder with ``CvrExport.json`` (or ``CvrExport_N.json``
files, one per batch) and its manifests.

``ContestManifest.json`` lists the contests (``Id``, ``Description``): the source's contest
is named by either. ``CandidateManifest.json`` lists the candidates (``Id``,
``Description``, ``ContestId``); a config names each by its ``Id`` (an alias) or its
description, and the source's undeclared write-in label is an ``Id``.
``OutstackConditionManifest.json`` names the condition ``InvalidContest``.

Each export holds ``Sessions``: a ballot as scanned (``Original``) or, when that is not
current, as adjudicated (``Modified``; without it the session is not counted). Each card of
a session (``Cards``, or the session itself) that carries the contest is one ballot -- unless
the contest is flagged ``InvalidContest`` -- whose marks are its ``Marks``: ``(Rank,
CandidateId)``, ambiguous marks left out, several candidates at one rank an overvote. This
is how RCTab reads them. The exports are read one file at a time, in the order of their
numbers, so memory holds one export and the distinct ballots.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rankmodels.aggregation.elections.ballots import BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.jsonfile import read_json_object
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_dominion"]

_EXPORT = re.compile(r"^CvrExport(?:_(\d+))?\.json$")


def read_dominion(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    """Add the ballots of the Dominion folder ``source`` to ``counter``."""
    folder = source.path
    if not folder.is_dir():
        raise InputError("a Dominion record is a folder of CvrExport*.json files", path=folder)
    exports = sorted((int(m[1] or 0), p) for p in folder.iterdir() if (m := _EXPORT.match(p.name)))
    if not exports:
        raise InputError("no CvrExport.json or CvrExport_N.json in the folder", path=folder)
    contest = _contest_id(folder, source.contest_id)
    codes = _candidate_codes(folder, contest, source, names)
    invalid = _invalid_condition(folder)
    for _, path in exports:
        for i, session in enumerate(read_json_object(path, "JSON").get("Sessions") or []):
            try:
                ballot = _ballot_data(session)
                if ballot is None:
                    continue
                for card in ballot.get("Cards", [ballot]):
                    for item in card.get("Contests") or []:
                        if str(item["Id"]) != contest:
                            continue
                        if invalid is not None and invalid in (
                            item.get("OutstackConditionIds") or []
                        ):
                            continue
                        marks = [
                            (int(mark["Rank"]), _code(codes, mark["CandidateId"], path, i))
                            for mark in item.get("Marks") or []
                            if not mark.get("IsAmbiguous")
                        ]
                        counter.add(ranking_from_marks(marks))
            except InputError:
                raise
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                raise InputError(
                    f"not a Dominion session: {err!r}", path=path, field=f"Sessions[{i}]"
                ) from None


def _manifest(folder: Path, name: str) -> list[dict[str, Any]]:
    items = read_json_object(folder / name, "JSON").get("List")
    if not isinstance(items, list):
        raise InputError("expected a List", path=folder / name)
    return items


def _contest_id(folder: Path, wanted: str) -> str:
    """The ``Id`` of the contest whose ``Id`` or ``Description`` is ``wanted``."""
    contests = _manifest(folder, "ContestManifest.json")
    for key in ("Id", "Description"):
        for c in contests:
            if str(c.get(key, "")).strip() == wanted:
                return str(c["Id"])
    raise InputError(
        f"contest {wanted!r} not found (by Id or Description)",
        path=folder / "ContestManifest.json",
    )


def _candidate_codes(
    folder: Path, contest: str, source: Source, names: CandidateNames
) -> dict[str, int]:
    """Candidate ``Id`` -> candidate code, for the candidates of the contest."""
    codes: dict[str, int] = {}
    for c in _manifest(folder, "CandidateManifest.json"):
        if str(c.get("ContestId")) != contest:
            continue
        cid = str(c["Id"])
        if cid == source.write_in_label:
            if names.write_in is None:
                raise InputError("write-ins in the record, none in the config", path=folder)
            codes[cid] = names.write_in
            continue
        code = names.lookup(cid)
        if code is None:
            code = names.lookup(str(c.get("Description", "")))
        if code is not None:
            codes[cid] = code
    return codes


def _code(codes: dict[str, int], candidate: Any, path: Path, i: int) -> int:
    code = codes.get(str(candidate))
    if code is None:
        raise InputError(
            f"candidate Id {candidate} is not a candidate of the config (name it or alias its Id)",
            path=path,
            field=f"Sessions[{i}]",
        )
    return code


def _invalid_condition(folder: Path) -> int | None:
    """The ``Id`` of the outstack condition ``InvalidContest``, if the folder names it."""
    if not (folder / "OutstackConditionManifest.json").exists():
        return None
    for c in _manifest(folder, "OutstackConditionManifest.json"):
        if c.get("Description") == "InvalidContest":
            return int(c["Id"])
    return None


def _ballot_data(session: dict[str, Any]) -> dict[str, Any] | None:
    """The session's current ballot: as scanned, else as adjudicated, else none."""
    original = session["Original"]
    if original.get("IsCurrent", True):
        return original
    return session.get("Modified")
