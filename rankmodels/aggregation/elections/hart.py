"""Hart Verity cast-vote records: a folder of XML files, one ballot sheet each.

A file is a ``Cvr`` (namespace ``http://tempuri.org/CVRDesign.xsd``) whose ``Contests``
hold ``Contest`` s (``Id``, ``Name``, ``Options``). The source's contest id is a contest
``Id``; each ``Option`` is a candidate by its ``Id`` (matched to the config's names and
aliases, the undeclared write-in label to write-ins) and its ``Value`` says which ranks
were marked, one digit per rank left to right (``0100``: rank 2; ``0101``: ranks 2 and
4). Each sheet with the contest is one ballot, as RCTab reads them. Files are read one at
a time, so memory holds one sheet and the distinct ballots.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rankmodels.aggregation.elections.ballots import BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_hart"]

_NS = "{http://tempuri.org/CVRDesign.xsd}"


def read_hart(source: Source, names: CandidateNames, counter: BallotCounter) -> None:
    """Add the ballots of the Hart folder ``source`` to ``counter``."""
    folder = source.path
    if not folder.is_dir():
        raise InputError("a Hart record is a folder of XML files", path=folder)
    files = sorted(p for p in folder.iterdir() if p.name.lower().endswith("xml"))
    if not files:
        raise InputError("no XML files in the folder", path=folder)
    for path in files:
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as err:
            raise InputError(f"not XML: {err}", path=path) from None
        for contest in root.iter(f"{_NS}Contest"):
            if (contest.findtext(f"{_NS}Id") or "").strip() != source.contest_id:
                continue
            marks = []
            for option in contest.iter(f"{_NS}Option"):
                code = _code(option.findtext(f"{_NS}Id") or "", source, names, path)
                value = (option.findtext(f"{_NS}Value") or "").strip()
                marks.extend((rank, code) for rank, digit in enumerate(value, 1) if digit == "1")
            counter.add(ranking_from_marks(marks))


def _code(option: str, source: Source, names: CandidateNames, path) -> int:
    option = option.strip()
    code = names.write_in if option == source.write_in_label else names.lookup(option)
    if code is None:
        raise InputError(f"option {option!r} is not a candidate of the config", path=path)
    return code
