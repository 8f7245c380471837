"""NIST SP 1500-103 Common Data Format cast-vote records, JSON or XML.

The contest is the ``Election.Contest`` whose ``Name`` is the source's contest id; a
ballot's marks are its ``CVRContestSelection`` s in the snapshot named by
``CurrentSnapshotId``, except a selection whose ``Status`` is ``needs-adjudication``: the
rank on the selection or on each ``SelectionPosition`` (positions with ``HasIndication``
or ``IsAllocable`` "no" are not marks), the candidate by ``ContestSelectionId ->
CandidateIds[0] -> Candidate.Name`` (a selection with ``IsWriteIn``, a position with
``CVRWriteIn`` or a candidate named as the undeclared write-in label is an undeclared
write-in; a candidate named as the source's overvote label is an overvote). A ballot
without the contest is not counted; one with the contest and no marks is an undervote.

Both forms are read in one pass with bounded memory, whatever the order of the parts:
the JSON form member by member with its ``CVR`` array streamed (:mod:`.jsonstream`), the
XML form (any namespace, element names as in the JSON form, ``ObjectId`` attributes as
``@id``) element by element. Each record's raw marks per contest are merged as they
stream by (memory grows with the distinct ballots) and named once the contest is known.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.jsonstream import members
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_cdf"]

_TRUE = ("yes", "true", "1", True, 1)

RawMark = tuple[Any, Any, bool]
"""A mark as recorded: ``(rank, ContestSelectionId, written in)``."""


def read_cdf(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    """Add the ballots of the CDF record ``source`` (``.json`` or ``.xml``) to
    ``counter``."""
    path = source.path
    suffix = path.suffix.lower()
    if suffix not in (".json", ".xml"):
        raise InputError("a CDF record is a .json or .xml file", path=path)
    parts = _json_parts(path) if suffix == ".json" else _xml_parts(path)
    candidates: dict[str, str] = {}
    contests: list[dict[str, Any]] = []
    raw: Counter[tuple[Any, tuple[RawMark, ...]]] = Counter()
    for key, value in parts:
        if key == "CVR":
            if not isinstance(value, dict):
                raise InputError("expected CVR objects", path=path, field="CVR")
            try:
                raw.update(_raw_marks(value))
            except InputError as err:
                raise err.with_path(path) from None
        elif key == "Election":
            for election in _values(value):
                for c in _values(_get(election, "Candidate")):
                    candidates[_value(c, "@id")] = _value(c, "Name") or ""
                contests.extend(_values(_get(election, "Contest")))
    contest = next((c for c in contests if _value(c, "Name") == source.contest_id), None)
    if contest is None:
        raise InputError(f"contest {source.contest_id!r} not found", path=path, field="Contest")
    selections = {_value(s, "@id"): s for s in _values(_get(contest, "ContestSelection"))}
    codes = _Codes(selections, candidates, source, names)
    contest_id = _value(contest, "@id")
    for (cid, marks), count in raw.items():
        if cid == contest_id:
            counter.add(ranking_from_marks(codes.mark(m) for m in marks), count)


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else None


def _values(value: Any) -> list[Any]:
    """A JSON array or an XML element's repeated children as a list (``[]`` for none)."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _value(item: Any, key: str) -> Any:
    """The (first) value of ``key`` in ``item``, or ``None``."""
    found = _values(_get(item, key))
    return found[0] if found else None


def _scalar(value: Any, key: str) -> Any:
    """``value`` when it is a text or a number (or absent), else :class:`InputError`."""
    if value is None or isinstance(value, str | int | float):
        return value
    raise InputError(f"{key} holds {type(value).__name__}, expected a text or a number")


def _raw_marks(cvr: dict[str, Any]) -> dict[tuple[Any, tuple[RawMark, ...]], int]:
    """``(ContestId, raw marks) -> 1`` for each contest of the record's current snapshot."""
    current = _value(cvr, "CurrentSnapshotId")
    out: dict[tuple[Any, tuple[RawMark, ...]], int] = {}
    seen = set()
    for snapshot in _values(cvr.get("CVRSnapshot")):
        if current is not None and _value(snapshot, "@id") != current:
            continue
        for contest in _values(_get(snapshot, "CVRContest")):
            cid = _scalar(_value(contest, "ContestId"), "ContestId")
            if cid in seen:
                continue
            seen.add(cid)
            marks: list[RawMark] = []
            for sel in _values(_get(contest, "CVRContestSelection")):
                if _value(sel, "Status") == "needs-adjudication":
                    continue
                sid = _scalar(_value(sel, "ContestSelectionId"), "ContestSelectionId")
                rank = _scalar(_value(sel, "Rank"), "Rank")
                if rank is not None:
                    marks.append((rank, sid, False))
                    continue
                for pos in _values(_get(sel, "SelectionPosition")):
                    if "no" in (_value(pos, "HasIndication"), _value(pos, "IsAllocable")):
                        continue
                    rank = _scalar(_value(pos, "Rank"), "Rank")
                    marks.append((rank, sid, _get(pos, "CVRWriteIn") is not None))
            out[(cid, tuple(marks))] = 1
    return out


class _Codes:
    """Candidate codes of the contest's selections, looked up when a mark needs them."""

    def __init__(
        self,
        selections: dict[Any, Any],
        candidates: dict[str, str],
        source: Source,
        names: CandidateNames,
    ) -> None:
        self.selections = selections
        self.candidates = candidates
        self.source = source
        self.names = names
        self.known: dict[Any, int] = {}

    def fail(self, message: str, field: str) -> InputError:
        return InputError(message, path=self.source.path, field=field)

    def write_in(self, field: str) -> int:
        if self.names.write_in is None:
            raise self.fail("a write-in, but the config counts no write-ins", field)
        return self.names.write_in

    def mark(self, raw: RawMark) -> tuple[int, int]:
        rank, sid, written_in = raw
        if sid not in self.selections:
            raise self.fail(f"ContestSelection {sid!r} is not in the contest", "CVR")
        try:
            number = int(rank)
        except (TypeError, ValueError):
            raise self.fail(f"Rank {rank!r} is not a whole number", str(sid)) from None
        if number < 1:
            raise self.fail(f"Rank {rank!r} is not a positive number", str(sid))
        if written_in:
            return number, self.write_in(str(sid))
        if sid not in self.known:
            self.known[sid] = self.code(sid)
        return number, self.known[sid]

    def code(self, sid: Any) -> int:
        selection = self.selections[sid]
        if _value(selection, "IsWriteIn") in _TRUE:
            return self.write_in(str(sid))
        ids = _values(_get(selection, "CandidateIds"))
        if not ids or ids[0] not in self.candidates:
            raise self.fail("selection without a known candidate", str(sid))
        name = self.candidates[ids[0]]
        source = self.source
        if source.overvote_label and name == source.overvote_label:
            return OVERVOTE
        if source.write_in_label and name == source.write_in_label:
            return self.write_in(str(sid))
        code = self.names.lookup(name)
        if code is None:
            raise self.fail(f"{name!r} is not a candidate of the config", str(sid))
        return code


def _json_parts(path: Path) -> Iterator[tuple[str, Any]]:
    return members(path, ("CVR", "Election"), "a CDF JSON record")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _element(elem: ET.Element) -> dict[str, Any]:
    """An XML element as the JSON form holds it: children by local name, each a list (of
    texts for leaves, of objects for elements with children or attributes), the
    ``ObjectId`` attribute as ``@id``."""
    out: dict[str, Any] = {}
    if "ObjectId" in elem.attrib:
        out["@id"] = elem.attrib["ObjectId"]
    for child in elem:
        if len(child) or "ObjectId" in child.attrib:
            value: Any = _element(child)
        else:
            value = (child.text or "").strip()
        out.setdefault(_local(child.tag), []).append(value)
    return out


def _xml_parts(path: Path) -> Iterator[tuple[str, Any]]:
    """``(name, object)`` for each ``CVR`` and ``Election`` child of the report's root, as
    they end; every child is freed once read."""
    depth = 0
    root = None
    try:
        for event, elem in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                depth += 1
                if depth == 1:
                    root = elem
                    if _local(elem.tag) != "CastVoteRecordReport":
                        raise InputError(
                            f"root element {_local(elem.tag)!r}: expected CastVoteRecordReport",
                            path=path,
                        )
                continue
            depth -= 1
            if depth == 1:
                name = _local(elem.tag)
                if name in ("CVR", "Election"):
                    yield name, _element(elem)
                assert root is not None
                root.remove(elem)
    except (ET.ParseError, LookupError, UnicodeError) as err:  # LookupError: an unknown encoding
        raise InputError(f"not XML: {err}", path=path) from None
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
