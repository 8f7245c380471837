"""Reading and writing vote files: the votes CSV, cast-vote records, PrefLib
``.soc/.soi/.toc/.toi`` and ABIF.

:func:`read_votes` picks the reader by the file extension and the header:
:mod:`.votes_csv` for ``.csv`` and ``.txt``, :mod:`.cvr` for a CSV with rank columns,
:mod:`.preflib` for the PrefLib types, :mod:`.abif` for ``.abif``. They read the file in
chunks of bytes without a Python loop per ballot and keep only the distinct ballots. Every
problem raises :class:`rankmodels.errors.InputError` naming the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from rankmodels.aggregation.abif import read_abif, write_abif
from rankmodels.aggregation.ballot_text import LineFormat, ballot_lines
from rankmodels.aggregation.csv_common import first_record
from rankmodels.aggregation.cvr import CvrConventions, rank_columns, read_cvr
from rankmodels.aggregation.preflib import PREFLIB_TYPES, parse_preflib, read_preflib
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.stream import Progress
from rankmodels.aggregation.votes_csv import NAME_OK, parse_votes_csv, read_votes_csv
from rankmodels.errors import InputError

__all__ = [
    "FORMATS",
    "PREFLIB_TYPES",
    "parse_preflib",
    "parse_votes_csv",
    "read_preflib",
    "read_votes",
    "read_votes_csv",
    "write_abif",
    "write_preflib",
    "write_votes_csv",
]

_CSV_SUFFIXES = (".csv", ".txt")
FORMATS = ("auto", "csv", "cvr", "abif")
"""``read_votes`` formats: by extension and header, the votes CSV, a cast-vote record,
ABIF."""


def read_votes(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
    format: str = "auto",
    conventions: CvrConventions | None = None,
) -> Profile:
    """Read a vote file: a votes CSV, a cast-vote record or a PrefLib file.

    With ``format="auto"`` the extension picks PrefLib (``.soc/.soi/.toc/.toi``), ABIF
    (``.abif``) or CSV (``.csv``, ``.txt``), and a CSV whose header has rank columns
    (``rank1``, ``Choice 1``, ...) and no ``ranking`` column is read as a cast-vote record
    (:mod:`.cvr`, cells read by ``conventions``). ``candidates`` fixes the allowed names
    (CSV and CVR); ``progress`` hears of the bytes read.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    suffix = Path(path).suffix.lower()
    if format == "auto" and suffix.lstrip(".") in PREFLIB_TYPES:
        return read_preflib(path, progress=progress)
    if format == "abif" or (format == "auto" and suffix == ".abif"):
        if candidates is not None:
            raise InputError(
                "candidates are for CSV files; an ABIF file declares its candidates", path=path
            )
        return read_abif(path, progress=progress)
    if format == "auto" and suffix not in _CSV_SUFFIXES:
        raise InputError(
            f"unknown vote file type {suffix or '(none)'!r}; expected .csv, .abif or one of "
            + ", ".join("." + t for t in PREFLIB_TYPES),
            path=path,
        )
    if format == "cvr" or (format == "auto" and _looks_like_cvr(path)):
        return read_cvr(path, candidates, progress, conventions)
    return read_votes_csv(path, candidates=candidates, progress=progress)


def _looks_like_cvr(path: str | os.PathLike[str]) -> bool:
    header = first_record(path)
    if header is None:
        return False
    return "ranking" not in [c.strip().lower() for c in header] and bool(rank_columns(header))


def write_votes_csv(profile: Profile, handle: TextIO) -> None:
    """Write ``profile`` as a votes CSV (every ballot lists all candidates, ties with '='),
    one row per ballot of the profile, in its order; the text is built and written in blocks
    (:mod:`.ballot_text`)."""
    for name in profile.candidates:
        if not NAME_OK.match(name) or name != name.strip():
            raise ValueError(f"candidate name {name!r} cannot be written to a votes CSV")
    # Every row names every candidate: quote them all (as the csv module would) or none.
    quote = '"' if any('"' in name for name in profile.candidates) else ""
    tokens = [name.replace('"', '""') for name in profile.candidates]
    fmt = LineFormat(tokens, False, ",", ">", "=", body_open=quote, body_close=quote)
    handle.write("ranking,count\n")
    for text in ballot_lines(profile, fmt):
        handle.write(text)


def write_preflib(profile: Profile, handle: TextIO, title: str = "") -> str:
    """Write ``profile`` in PrefLib format; return the data type used.

    ``soc`` when every ballot is strict and complete, ``soi`` when the only ties are the
    unranked bottom groups, ``toi`` otherwise. The unranked bottom group is left out; the
    ballots are written by decreasing count (equal counts in the profile's order).
    """
    if not np.all(profile.weights == np.floor(profile.weights)):
        raise ValueError("PrefLib needs integer counts; this profile has fractional weights")
    last = profile.levels[:, -1:].astype(np.int64)
    # Only the bottom group tied: every level is min(position, last level), over 2+ groups.
    bottom_only = bool(
        np.all(last > 0) and np.all(profile.levels == np.minimum(np.arange(profile.n), last))
    )
    kind = "soc" if profile.is_strict else ("soi" if bottom_only else "toi")
    head = [f"# DATA TYPE: {kind}\n"]
    if title:
        head.append(f"# TITLE: {title}\n")
    head.append(f"# NUMBER ALTERNATIVES: {profile.n}\n")
    head.append(f"# NUMBER VOTERS: {_format_count(profile.total)}\n")
    head.append(f"# NUMBER UNIQUE ORDERS: {profile.weights.size}\n")
    head += [f"# ALTERNATIVE NAME {i}: {name}\n" for i, name in enumerate(profile.candidates, 1)]
    handle.write("".join(head))
    tokens = [str(x) for x in range(1, profile.n + 1)]
    fmt = LineFormat(tokens, True, ": ", ",", ",", "{", "}", drop_unranked=True)
    rows = np.argsort(-profile.weights, kind="stable")
    for text in ballot_lines(profile, fmt, rows):
        handle.write(text)
    return kind


def _format_count(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(float(w))
