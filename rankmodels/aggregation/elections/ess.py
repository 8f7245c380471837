"""ES&S cast-vote records: one row per ballot, one column per rank (xlsx or CSV).

Rows before ``first_vote_row`` are headers; the ranks are the ``max_rankings`` columns from
``first_vote_column`` on (both count from 1), whatever their headers say. A cell holds a
candidate's name or alias, the source's undervote label (a skipped rank), its overvote
label, its undeclared write-in label, or several candidates joined by the overvote
delimiter; an empty cell is a skipped rank (an undeclared write-in with
``blank_is_write_in``). xlsx is read with ``python-calamine`` (calamine, a Rust reader)
row by row; every row element of the sheet is a ballot, as for RCTab (a row element
without cells is an undervote), which the sheet's XML tells (calamine does not). A CSV is
read with :mod:`csv`; there every line is a ballot.
"""

from __future__ import annotations

import csv
import re
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
    for r, row in rows:
        if r < first_row:
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
        return (
            (names.write_in,) if source.blank_is_write_in and names.write_in is not None else None
        )
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


def _rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    """``(row index from 0, cells)`` of every row of the record."""
    if path.suffix.lower() == ".csv":
        return _csv_rows(path)
    if not zipfile.is_zipfile(path):
        raise InputError("not an xlsx workbook (expected an ES&S .xlsx or .csv)", path=path)
    from python_calamine import CalamineWorkbook

    try:
        sheet = CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0)
        cells = sheet.iter_rows()
        start = sheet.start[0] if sheet.start else 0
    except Exception as err:  # calamine's errors are its own classes
        raise InputError(f"cannot read the workbook: {err}", path=path) from None
    return _merge(_row_numbers(path), cells, start)


def _merge(
    numbers: Iterator[int], cells: Iterator[list[Any]], start: int
) -> Iterator[tuple[int, list[Any]]]:
    """The sheet's row elements with calamine's cells (rows ``start ..``)."""
    index = start
    row = next(cells, None)
    for n in numbers:
        while row is not None and index < n:
            row, index = next(cells, None), index + 1
        yield n, row if row is not None and index == n else []


_ROW = re.compile(rb"<row\b([^>]*)>")
_R = re.compile(rb'\br="(\d+)"')


def _row_numbers(path: Path, chunk: int = 1 << 20) -> Iterator[int]:
    """Row indices (from 0) of the row elements of the workbook's first sheet, scanning
    its XML in chunks."""
    with zipfile.ZipFile(path) as book:
        with book.open(_first_sheet(book)) as sheet:
            previous = -1
            tail = b""
            while True:
                data = sheet.read(chunk)
                text = tail + data
                cut = text.rfind(b"<") if data else len(text)
                body, tail = text[:cut], text[cut:]
                for match in _ROW.finditer(body):
                    found = _R.search(match[1])
                    previous = int(found[1]) - 1 if found else previous + 1
                    yield previous
                if not data:
                    return


def _first_sheet(book: zipfile.ZipFile) -> str:
    """The archive path of the workbook's first sheet."""
    workbook = book.read("xl/workbook.xml")
    first = re.search(rb"<sheet\b[^>]*\br:id=\"([^\"]+)\"", workbook)
    rels = book.read("xl/_rels/workbook.xml.rels")
    if first:
        for rel in re.finditer(rb"<Relationship\b[^>]*>", rels):
            if re.search(rb'\bId="' + re.escape(first[1]) + rb'"', rel[0]):
                target = re.search(rb'\bTarget="([^"]+)"', rel[0])[1].decode()
                return target.lstrip("/") if target.startswith("/") else f"xl/{target}"
    return "xl/worksheets/sheet1.xml"


def _csv_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        yield from enumerate(csv.reader(handle))
