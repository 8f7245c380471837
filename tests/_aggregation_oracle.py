"""Test oracle: the line-by-line vote parsers the fast readers replaced (verbatim).

The fast readers (``rankmodels.aggregation.votes_csv`` and ``.preflib``) must give the same
profile as these on every valid file and the same error (message and line) on every bad
one; ``tests/test_aggregation_io.py`` checks that on generated files.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Iterable, Sequence

from rankmodels.aggregation.profile import Profile
from rankmodels.errors import InputError


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


_HEADER = re.compile(r"^#\s*([A-Z ]+?)\s*(\d+)?\s*:\s*(.*)$")


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
