"""The votes CSV reader: one ballot type per row, ``ranking`` like ``A>B=C>D``.

Format (described for users in ``docs/aggregation.md``): a header row, then one row per
ballot type. Column ``ranking`` holds candidates best first separated by ``>``, ties joined
by ``=``; optional column ``count`` (positive number, default 1). Candidates a ballot leaves
out are unranked: tied below all ranked ones. The candidate set is every name that appears,
in order of first appearance, unless the caller passes the candidate list (then other names
are errors). Rows whose cells are all blank are skipped.

The file is read in chunks and split into records as :class:`.csv_common.CsvReader` does
(``csv.reader``'s rules exactly). Only *distinct* texts reach Python: ranking texts are
split into names in a compiled loop, each distinct name and each distinct count is parsed
once, and the ballots are merged in a :class:`.BallotTable`. Validation is vectorised; the
first bad row is then parsed again on its own (:func:`parse_ranking`) to raise the error
with its message and line number.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import group_keys
from rankmodels.aggregation.csv_common import CsvReader, DistinctValues, Records
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import intern_spans
from rankmodels.aggregation.stream import CHUNK_BYTES, Progress, file_chunks, run, text_chunks
from rankmodels.errors import InputError

__all__ = ["NAME_OK", "parse_ranking", "parse_votes_csv", "read_votes_csv"]

NAME_OK = re.compile(r"^[^<>=,\n]+$")
"""What a candidate name in a votes CSV may be (after stripping spaces)."""

_INVALID = -1  # code of a token that is not a name


def read_votes_csv(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    progress: Progress | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Profile:
    """Read the votes CSV at ``path`` into a :class:`Profile`; ``progress`` hears of the bytes
    read, ``chunk_bytes`` is how many are read at a time."""
    with open(path, "rb") as handle:
        return _read(file_chunks(handle, progress, chunk_bytes), path, candidates)


def parse_votes_csv(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None = None,
    candidates: Sequence[str] | None = None,
) -> Profile:
    """Parse votes CSV text from its lines (an open handle; ``path`` only names it in
    errors)."""
    return _read(text_chunks(lines), path, candidates)


def _read(
    chunks: Iterable[bytes], path: str | os.PathLike[str] | None, candidates: Sequence[str] | None
) -> Profile:
    reader = _VotesCsv(path, candidates)
    run(reader, chunks)
    return reader.profile()


# --------------------------------------------------------------------------- ranking texts
@numba.njit(cache=True)
def _ranking_tokens(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple:  # pragma: no cover
    """Split each text at ``>`` (next group) and ``=`` (same group). Returns ``(tok_start,
    tok_end, owner, group, has_lt)``: token spans, the text and group of each token, and
    whether each text holds a ``<``."""
    m = starts.size
    bound = m
    for i in range(m):
        for p in range(starts[i], ends[i]):
            if buf[p] == 62 or buf[p] == 61:
                bound += 1
    tok_start = np.empty(bound, np.int64)
    tok_end = np.empty(bound, np.int64)
    owner = np.empty(bound, np.int64)
    group = np.empty(bound, np.int64)
    has_lt = np.zeros(m, np.bool_)
    t = 0
    for i in range(m):
        g = 0
        begin = starts[i]
        for p in range(starts[i], ends[i]):
            c = buf[p]
            if c == 62 or c == 61:  # '>' or '='
                tok_start[t], tok_end[t], owner[t], group[t] = begin, p, i, g
                t += 1
                g += c == 62
                begin = p + 1
            elif c == 60:  # '<'
                has_lt[i] = True
        tok_start[t], tok_end[t], owner[t], group[t] = begin, ends[i], i, g
        t += 1
    return tok_start, tok_end, owner, group, has_lt


def parse_ranking(text: str, path: object, field: str) -> list[list[str]]:
    """The tie groups of names in a ranking text (``A>B=C``), checked."""
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
            if not name or not NAME_OK.match(name):
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


class _VotesCsv(CsvReader):
    """Reads a votes CSV chunk by chunk (a :class:`.stream.ChunkReader`)."""

    what = "a header with a 'ranking' column"

    def __init__(self, path: str | os.PathLike[str] | None, candidates: Sequence[str] | None):
        super().__init__(path, candidates)
        self.tokens = DistinctValues(self._token_code)
        self.col_ranking = 0

    def _token_code(self, raw: str) -> int:
        name = raw.strip()
        if not name or not NAME_OK.match(name):
            return _INVALID
        return self.names.code(name)

    def read_header(self, header: list[str], line: int) -> None:
        columns = [c.strip().lower() for c in header]
        if "ranking" not in columns:
            raise InputError(
                f"header {','.join(header)!r} has no 'ranking' column",
                path=self.path,
                field="line 1",
            )
        self.col_ranking = columns.index("ranking")
        self.col_count = columns.index("count") if "count" in columns else None

    def records(self, rec: Records) -> None:
        ok = rec.nfields == len(self.header)
        counts = self.record_counts(rec, ok)
        starts, ends = rec.column(self.col_ranking, ok)
        text_id, text_first = intern_spans(rec.out, starts, ends)
        t0, t1 = starts[text_first], ends[text_first]
        tok_start, tok_end, owner, group, has_lt = _ranking_tokens(rec.out, t0, t1)
        codes = self.tokens.lookup(rec.out, tok_start, tok_end, np.int64)
        keep = np.ones(codes.size, dtype=bool)
        data, offsets, valid, _ = group_keys(
            owner, group, codes, keep, t0.size, len(self.names.index)
        )
        ok &= (valid & ~has_lt)[text_id]
        self.check(rec, ok, counts)
        self.table.count(self.table.add(data, offsets)[text_id], counts)

    def explain(self, rec: Records, r: int, field: str) -> None:
        for group in parse_ranking(rec.cells(r)[self.col_ranking], self.path, field):
            for name in group:
                if name not in self.names.index:
                    raise InputError(f"unknown candidate {name!r}", path=self.path, field=field)
