"""Reading and writing vote files: the votes CSV and PrefLib ``.soc/.soi/.toc/.toi``.

Votes CSV (the format is described for users in ``docs/aggregation.md``)
    A header row, one ballot type per row. Column ``ranking`` holds candidates best first
    separated by ``>``, ties joined by ``=`` (``A>B=C>D``); optional column ``count``
    (positive number, default 1). Candidates a ballot leaves out are unranked: tied below
    all ranked ones. The candidate set is every name that appears, in order of first
    appearance, unless the caller passes the candidate list (then other names are errors).

PrefLib (format of preflib.org since 2022)
    ``# NUMBER ALTERNATIVES: n`` and ``# ALTERNATIVE NAME i: name`` header lines, then one
    line per ballot type ``count: a,b,{c,d},e`` with 1-based candidate numbers and braces
    around ties. The extension fixes what is allowed: ``soc`` strict and complete, ``soi``
    strict and possibly incomplete, ``toc`` complete with ties, ``toi`` anything.

Every problem raises :class:`rankmodels.errors.InputError` naming the file and the line.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from rankmodels.aggregation.profile import Profile
from rankmodels.errors import InputError

__all__ = [
    "PREFLIB_TYPES",
    "read_preflib",
    "read_votes",
    "read_votes_csv",
    "write_preflib",
    "write_votes_csv",
]

PREFLIB_TYPES = ("soc", "soi", "toc", "toi")
_CSV_SUFFIXES = (".csv", ".txt")


Progress = Callable[[int], None]
"""Called now and then with the number of bytes read since the previous call; the calls add
up to the file size."""


def read_votes(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> Profile:
    """Read a votes CSV or a PrefLib file, chosen by the file extension."""
    suffix = Path(path).suffix.lower()
    if suffix.lstrip(".") in PREFLIB_TYPES:
        return read_preflib(path, progress=progress)
    if suffix in _CSV_SUFFIXES:
        return read_votes_csv(path, candidates=candidates, progress=progress)
    raise InputError(
        f"unknown vote file type {suffix or '(none)'!r}; expected .csv or one of "
        + ", ".join("." + t for t in PREFLIB_TYPES),
        path=path,
    )


@contextlib.contextmanager
def _text_file(
    path: str | os.PathLike[str], newline: str | None = None, progress: Progress | None = None
) -> Iterator[Iterable[str]]:
    """The lines of ``path`` as UTF-8 text (a byte-order mark is skipped); decoding errors
    become :class:`InputError` naming the file. ``progress`` hears of the bytes read."""
    with open(path, newline=newline, encoding="utf-8-sig") as handle:
        try:
            yield handle if progress is None else _reporting(handle, progress)
        except UnicodeDecodeError as err:
            raise InputError(
                f"not UTF-8 text (byte {err.start} cannot be decoded)", path=path
            ) from None


def _reporting(handle: TextIO, progress: Progress, every: int = 4096) -> Iterator[str]:
    """The lines of ``handle``, telling ``progress`` every ``every`` lines how many more bytes
    the decoder has consumed (the binary buffer's position: a text handle cannot tell while
    it is iterated)."""
    raw = handle.buffer
    done = 0
    for i, line in enumerate(handle, start=1):
        yield line
        if i % every == 0:
            position = raw.tell()
            progress(position - done)
            done = position
    progress(raw.tell() - done)


# --------------------------------------------------------------------------- CSV
def read_votes_csv(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> Profile:
    """Read the votes CSV at ``path`` into a :class:`Profile`."""
    with _text_file(path, newline="", progress=progress) as lines:
        return parse_votes_csv(lines, path=path, candidates=candidates)


def parse_votes_csv(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None = None,
    candidates: Sequence[str] | None = None,
) -> Profile:
    """Parse votes CSV text from its lines (an open handle; ``path`` only names it in
    errors)."""
    reader = csv.reader(lines)
    header = next(reader, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(reader, None)
    if header is None:
        raise InputError("empty file; expected a header with a 'ranking' column", path=path)
    columns = [c.strip().lower() for c in header]
    if "ranking" not in columns:
        raise InputError(
            f"header {','.join(header)!r} has no 'ranking' column", path=path, field="line 1"
        )
    col_ranking = columns.index("ranking")
    col_count = columns.index("count") if "count" in columns else None
    fixed = candidates is not None
    names: dict[str, int] = {c: i for i, c in enumerate(candidates or [])}
    ballots: list[list[list[int]]] = []
    counts: list[float] = []
    seen: dict[str, int] = {}  # ranking text -> its ballot: a repeated text is parsed once
    total = 0.0
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        field = f"line {line}"
        if len(row) != len(header):
            raise InputError(
                f"expected {len(header)} fields as in the header, got {len(row)}",
                path=path,
                field=field,
            )
        count = 1.0 if col_count is None else _parse_count(row[col_count], path, field)
        total = _add_count(total, count, path, field)
        text = row[col_ranking]
        if text in seen:
            counts[seen[text]] += count
            continue
        groups = _parse_csv_ranking(text, path, field)
        ballot = []
        for group in groups:
            ids = []
            for name in group:
                if name not in names:
                    if fixed:
                        raise InputError(f"unknown candidate {name!r}", path=path, field=field)
                    names[name] = len(names)
                ids.append(names[name])
            ballot.append(ids)
        seen[text] = len(ballots)
        ballots.append(ballot)
        counts.append(count)
    if not ballots:
        raise InputError("no ballots after the header", path=path)
    return Profile.from_weak_orders(ballots, counts, list(names))


_NAME_OK = re.compile(r"^[^<>=,\n]+$")


def _parse_csv_ranking(text: str, path: object, field: str) -> list[list[str]]:
    text = text.strip()
    if not text:
        raise InputError(
            "empty ranking; expected candidates separated by '>'", path=path, field=field
        )
    if "<" in text:
        raise InputError(
            f"ranking {text!r} uses '<'; write candidates best first with '>'",
            path=path,
            field=field,
        )
    groups = []
    seen: set[str] = set()
    for part in text.split(">"):
        group = []
        for raw in part.split("="):
            name = raw.strip()
            if not name or not _NAME_OK.match(name):
                raise InputError(
                    f"malformed ranking {text!r}: empty candidate name between separators",
                    path=path,
                    field=field,
                )
            if name in seen:
                raise InputError(
                    f"candidate {name!r} appears twice in ranking {text!r}",
                    path=path,
                    field=field,
                )
            seen.add(name)
            group.append(name)
        groups.append(group)
    return groups


def _add_count(total: float, count: float, path: object, field: str) -> float:
    """``total + count``, which must stay a finite float (the profile normalises by it)."""
    total += count
    if total > sys.float_info.max:
        raise InputError(
            f"the counts add up to more than {sys.float_info.max:.3g}, the largest float; "
            "scale them down",
            path=path,
            field=field,
        )
    return total


def _parse_count(text: str, path: object, field: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InputError(
            f"count {text.strip()!r} is not a number", path=path, field=field
        ) from None
    if not value > 0 or value == float("inf"):
        raise InputError(
            f"count must be a positive number, got {text.strip()!r}", path=path, field=field
        )
    return value


def write_votes_csv(profile: Profile, handle: TextIO) -> None:
    """Write ``profile`` as a votes CSV (every ballot lists all candidates, ties with '=')."""
    for name in profile.candidates:
        if not _NAME_OK.match(name) or name != name.strip():
            raise ValueError(f"candidate name {name!r} cannot be written to a votes CSV")
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["ranking", "count"])
    for groups, w in zip(profile.weak_orders(), profile.weights, strict=True):
        text = ">".join("=".join(profile.candidates[x] for x in g) for g in groups)
        writer.writerow([text, _format_count(w)])


def _format_count(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(float(w))


# --------------------------------------------------------------------------- PrefLib
_HEADER = re.compile(r"^#\s*([A-Z ]+?)\s*(\d+)?\s*:\s*(.*)$")


def read_preflib(path: str | os.PathLike[str], progress: Progress | None = None) -> Profile:
    """Read a PrefLib ``.soc/.soi/.toc/.toi`` file into a :class:`Profile`."""
    kind = Path(path).suffix.lower().lstrip(".")
    if kind not in PREFLIB_TYPES:
        raise InputError(f"expected a PrefLib extension {PREFLIB_TYPES}, got {kind!r}", path=path)
    with _text_file(path, progress=progress) as lines:
        return parse_preflib(lines, kind, path=path)


def parse_preflib(
    lines: Iterable[str], kind: str, path: str | os.PathLike[str] | None = None
) -> Profile:
    """Parse PrefLib text of data type ``kind`` (``soc``, ``soi``, ``toc`` or ``toi``) from
    its lines (an open handle; ``path`` only names it in errors)."""
    n: int | None = None
    names: dict[int, str] = {}
    ballots: list[list[list[int]]] = []
    counts: list[float] = []
    total = 0.0
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        field = f"line {line_no}"
        if not line:
            continue
        if line.startswith("#"):
            match = _HEADER.match(line)
            if not match:
                continue
            key, number, value = match.groups()
            if key == "NUMBER ALTERNATIVES":
                try:
                    n = int(value)
                except ValueError:
                    n = -1
                if n < 1:
                    raise InputError(
                        f"NUMBER ALTERNATIVES must be a positive integer, got {value!r}",
                        path=path,
                        field=field,
                    )
            elif key == "ALTERNATIVE NAME" and number is not None:
                names[int(number)] = value.strip() or number
            continue
        if n is None:
            raise InputError(
                "ballot before the '# NUMBER ALTERNATIVES: n' header line", path=path, field=field
            )
        count_text, sep, body = line.partition(":")
        if not sep:
            raise InputError(f"expected 'count: ballot', got {line!r}", path=path, field=field)
        try:
            count = int(count_text.strip())
        except ValueError:
            raise InputError(
                f"count {count_text.strip()!r} is not an integer", path=path, field=field
            ) from None
        if count <= 0:
            raise InputError(f"count must be positive, got {count}", path=path, field=field)
        ballots.append(_parse_preflib_ballot(body, n, kind, path, field))
        counts.append(float(count) if count <= sys.float_info.max else float("inf"))
        total = _add_count(total, counts[-1], path, field)
    if n is None:
        raise InputError("empty file; expected a '# NUMBER ALTERNATIVES: n' header", path=path)
    if not ballots:
        raise InputError("no ballots in the file", path=path)
    labels = [names.get(i + 1, str(i + 1)) for i in range(n)]
    if len(set(labels)) != n:
        labels = [f"{i + 1}: {name}" for i, name in enumerate(labels)]
    return Profile.from_weak_orders(ballots, counts, labels)


_TOKEN = re.compile(r"\{[^{}]*\}|[^,{}]+")


def _parse_preflib_ballot(
    body: str, n: int, kind: str, path: object, field: str
) -> list[list[int]]:
    body = body.strip()
    if not body:
        raise InputError("empty ballot after 'count:'", path=path, field=field)
    if re.sub(r"\{[^{}]*\}|[^,{}]+|,", "", body).strip():
        raise InputError(f"malformed ballot {body!r}: unbalanced braces", path=path, field=field)
    groups: list[list[int]] = []
    seen: set[int] = set()
    for token in _TOKEN.findall(body):
        token = token.strip()
        tied = token.startswith("{")
        if tied and kind in ("soc", "soi"):
            raise InputError(
                f"ties {token!r} are not allowed in a .{kind} file", path=path, field=field
            )
        parts = token.strip("{}").split(",") if tied else [token]
        group = []
        for part in parts:
            part = part.strip()
            try:
                x = int(part)
            except ValueError:
                raise InputError(
                    f"malformed ballot {body!r}: {part!r} is not a candidate number",
                    path=path,
                    field=field,
                ) from None
            if not 1 <= x <= n:
                raise InputError(f"unknown candidate {x}; expected 1..{n}", path=path, field=field)
            if x in seen:
                raise InputError(
                    f"candidate {x} appears twice in the ballot", path=path, field=field
                )
            seen.add(x)
            group.append(x - 1)
        groups.append(group)
    if kind in ("soc", "toc") and len(seen) != n:
        raise InputError(
            f"a .{kind} ballot must rank all {n} candidates, this one ranks {len(seen)}",
            path=path,
            field=field,
        )
    return groups


def write_preflib(profile: Profile, handle: TextIO, title: str = "") -> str:
    """Write ``profile`` in PrefLib format; return the data type used.

    ``soc`` when every ballot is strict and complete, ``soi`` when the only ties are the
    unranked bottom groups, ``toi`` otherwise. The unranked bottom group is left out.
    """
    ballots = profile.weak_orders()
    bottom_only = all(len(b) > 1 and all(len(g) == 1 for g in b[:-1]) for b in ballots)
    kind = "soc" if profile.is_strict else ("soi" if bottom_only else "toi")
    out = io.StringIO()
    out.write(f"# DATA TYPE: {kind}\n")
    if title:
        out.write(f"# TITLE: {title}\n")
    out.write(f"# NUMBER ALTERNATIVES: {profile.n}\n")
    out.write(f"# NUMBER VOTERS: {_format_count(profile.total)}\n")
    out.write(f"# NUMBER UNIQUE ORDERS: {len(ballots)}\n")
    for i, name in enumerate(profile.candidates, start=1):
        out.write(f"# ALTERNATIVE NAME {i}: {name}\n")
    order = sorted(range(len(ballots)), key=lambda j: -profile.weights[j])
    for j in order:
        groups = ballots[j]
        if len(groups) > 1 and len(groups[-1]) > 1:
            groups = groups[:-1]
        cells = [
            str(g[0] + 1) if len(g) == 1 else "{" + ",".join(str(x + 1) for x in g) + "}"
            for g in groups
        ]
        w = profile.weights[j]
        if not float(w).is_integer():
            raise ValueError("PrefLib needs integer counts; this profile has fractional weights")
        out.write(f"{int(w)}: {','.join(cells)}\n")
    handle.write(out.getvalue())
    return kind
