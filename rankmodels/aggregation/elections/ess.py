"""ES&S cast-vote records: one row per ballot, one column per rank (xlsx or CSV).

Rows before ``first_vote_row`` are headers; the ranks are the ``max_rankings`` columns from
``first_vote_column`` on (both count from 1), whatever their headers say. A cell holds a
candidate's name or alias, the source's undervote label (a skipped rank), its overvote
label, its undeclared write-in label, or several candidates joined by the overvote
delimiter; an empty cell is a skipped rank (an undeclared write-in with
``blank_is_write_in``). Rows with every cell empty are not ballots. xlsx is read with
``python-calamine`` (calamine, a Rust reader) row by row; CSV with :mod:`csv`.
"""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.config import Source
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.errors import InputError

__all__ = ["read_ess"]


def read_ess(
    source: Source, names: CandidateNames, max_rankings: int, counter: BallotCounter
) -> None:
    """Add the ballots of the ES&S record ``source`` to ``counter``."""
    first_col = (source.first_vote_column or 1) - 1
    first_row = (source.first_vote_row or 2) - 1
    rows = _rows(source.path)
    cell_marks: dict[str, tuple[int, ...] | None] = {}  # each distinct cell read once
    for r, row in enumerate(rows):
        if r < first_row or not any(_text(v) for v in row):
            continue
        marks: list[tuple[int, int]] = []
        for k in range(max_rankings):
            col = first_col + k
            text = _text(row[col]) if col < len(row) else ""
            if text not in cell_marks:
                cell_marks[text] = _cell(text, source, names, r, col)
            codes = cell_marks[text]
            if codes is not None:
                marks.extend((k + 1, code) for code in codes)
        counter.add(ranking_from_marks(marks))


def _cell(
    text: str, source: Source, names: CandidateNames, row: int, col: int
) -> tuple[int, ...] | None:
    """The codes a cell marks (``None``: nothing marked)."""
    if not text:
        return (names.write_in,) if source.blank_is_write_in and names.write_in is not None else None
    parts = text.split(source.overvote_delimiter) if source.overvote_delimiter else [text]
    codes = []
    for part in (p.strip() for p in parts):
        if len(parts) > 1 and (not part or part == source.undervote_label):
            raise _error(source, row, col, f"cell {text!r} joins a blank or undervote to others")
        if part == source.undervote_label:
            continue
        if source.overvote_label and part == source.overvote_label:
            codes.append(OVERVOTE)
        elif source.write_in_label and part == source.write_in_label:
            codes.append(names.write_in)
        else:
            code = names.lookup(part)
            if code is None:
                raise _error(source, row, col, f"{part!r} is not a candidate of the config")
            codes.append(code)
    return tuple(codes) or None


def _error(source: Source, row: int, col: int, message: str) -> InputError:
    return InputError(message, path=source.path, field=f"row {row + 1}, column {col + 1}")


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value).strip()


def _rows(path: Path) -> Iterator[list[Any]]:
    if path.suffix.lower() == ".csv":
        return _csv_rows(path)
    if not zipfile.is_zipfile(path):
        raise InputError("not an xlsx workbook (expected an ES&S .xlsx or .csv)", path=path)
    from python_calamine import CalamineWorkbook

    try:
        sheet = CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0)
        return sheet.iter_rows()
    except Exception as err:  # calamine's errors are its own classes
        raise InputError(f"cannot read the workbook: {err}", path=path) from None


def _csv_rows(path: Path) -> Iterator[list[Any]]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        yield from csv.reader(handle)
