"""Byte-level scanning of vote files in compiled loops: records, lines, distinct byte strings.

The readers (:mod:`.votes_csv`, :mod:`.preflib`, :mod:`.cvr`) never loop over ballots in
Python: a file is read in chunks of bytes and each chunk goes through these kernels, which
return spans (``start, end`` byte offsets) into a buffer. Everything that needs Python's
own string semantics (``str.strip`` with Unicode whitespace, ``int`` and ``float``
parsing, names) is done once per *distinct* byte string, found with :func:`intern_spans`.

Line numbers follow Python's readers exactly: physical lines end at ``\\r\\n``, ``\\r`` or
``\\n``; a CSV record that spans lines (a quoted field holding a newline) is numbered by its
last line, as ``csv.reader.line_num`` does.

Every scanner takes ``final``: when False, the buffer is a chunk of a longer file and an
incomplete last line or record (or a ``\\r`` whose ``\\n`` may follow) is left unconsumed;
the caller prepends it to the next chunk. ``consumed`` is the number of bytes used.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "ASCII_SPACE",
    "csv_records",
    "intern_spans",
    "text_lines",
]

_LF, _CR, _COMMA, _QUOTE = 10, 13, 44, 34
ASCII_SPACE = np.zeros(256, dtype=np.bool_)
"""``ASCII_SPACE[b]``: byte ``b`` is an ASCII character for which ``str.isspace`` holds."""
ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True

# csv.reader states (CPython's Modules/_csv.c, default dialect, strict=False)
_START_RECORD, _START_FIELD, _IN_FIELD, _IN_QUOTED, _QUOTE_IN_QUOTED, _EAT_CRNL = range(6)

BLANK, MAYBE_BLANK, CONTENT = 0, 1, 2
"""What a record or line holds: only ASCII whitespace; ASCII whitespace and non-ASCII bytes
(which may be Unicode whitespace: Python decides); something else."""


@numba.njit(cache=True)
def _content(kind: int, c: int, space: np.ndarray) -> int:  # pragma: no cover
    if c >= 128:
        return max(kind, MAYBE_BLANK)
    return kind if space[c] else CONTENT


@numba.njit(cache=True)
def csv_records(buf: np.ndarray, final: bool) -> tuple:  # pragma: no cover
    """Split ``buf`` (uint8) into CSV records exactly as ``csv.reader`` does on a file opened
    with ``newline=""`` (excel dialect: ``,`` and ``"``, doubled quotes, quotes only at the
    start of a field, text after a closing quote kept).

    Returns ``(out, field_end, rec_first, rec_nfields, rec_line, rec_content, consumed,
    lines)``: field ``f`` is ``out[field_end[f - 1]:field_end[f]]`` (unquoted content,
    ``field_end[-1]`` read as 0), record ``r`` holds fields ``rec_first[r] ..
    rec_first[r] + rec_nfields[r] - 1`` and ends on line ``rec_line[r]`` (1-based within the
    buffer), ``rec_content[r]`` is :data:`BLANK`, :data:`MAYBE_BLANK` or :data:`CONTENT`;
    ``lines`` physical lines were consumed.
    """
    n = buf.size
    space = ASCII_SPACE
    bound = 2
    for i in range(n):
        c = buf[i]
        if c == _COMMA or c == _LF or c == _CR:
            bound += 1
    out = np.empty(n, np.uint8)
    field_end = np.empty(bound, np.int64)
    rec_first = np.empty(bound, np.int64)
    rec_nfields = np.empty(bound, np.int64)
    rec_line = np.empty(bound, np.int64)
    rec_content = np.empty(bound, np.int8)
    state = _START_RECORD
    o = 0  # bytes written to out
    nf = 0  # fields saved
    nr = 0  # records completed
    first = 0  # first field of the current record
    kind = BLANK
    line = 0  # lines completed
    line_start = 0
    done_byte, done_out, done_line = 0, 0, 0  # end of the last completed record
    i = 0
    while i < n:
        c = buf[i]
        eol = c == _LF
        if c == _CR:
            if i + 1 < n:
                eol = buf[i + 1] != _LF
            elif final:
                eol = True
            else:
                break  # a "\n" may follow in the next chunk
        newline = c == _LF or c == _CR
        if state == _START_RECORD and newline:
            state = _EAT_CRNL
        else:
            if state == _START_RECORD:
                state = _START_FIELD
            if state == _START_FIELD:
                if newline:
                    field_end[nf] = o
                    nf += 1
                    state = _EAT_CRNL
                elif c == _QUOTE:
                    state = _IN_QUOTED
                elif c == _COMMA:
                    field_end[nf] = o
                    nf += 1
                else:
                    out[o] = c
                    o += 1
                    kind = _content(kind, c, space)
                    state = _IN_FIELD
            elif state == _IN_FIELD:
                if newline or c == _COMMA:
                    field_end[nf] = o
                    nf += 1
                    state = _EAT_CRNL if newline else _START_FIELD
                else:
                    out[o] = c
                    o += 1
                    kind = _content(kind, c, space)
            elif state == _IN_QUOTED:
                if c == _QUOTE:
                    state = _QUOTE_IN_QUOTED
                else:
                    out[o] = c
                    o += 1
                    kind = _content(kind, c, space)
            elif state == _QUOTE_IN_QUOTED:
                if c == _QUOTE:
                    out[o] = c
                    o += 1
                    kind = CONTENT
                    state = _IN_QUOTED
                elif newline or c == _COMMA:
                    field_end[nf] = o
                    nf += 1
                    state = _EAT_CRNL if newline else _START_FIELD
                else:
                    out[o] = c
                    o += 1
                    kind = _content(kind, c, space)
                    state = _IN_FIELD
            # _EAT_CRNL: only the "\n" of a "\r\n" arrives here
        i += 1
        if eol:
            line += 1
            line_start = i
            if state != _IN_QUOTED:
                if state in (_START_FIELD, _IN_FIELD, _QUOTE_IN_QUOTED):
                    field_end[nf] = o
                    nf += 1
                rec_first[nr] = first
                rec_nfields[nr] = nf - first
                rec_line[nr] = line
                rec_content[nr] = kind
                nr += 1
                first = nf
                kind = BLANK
                state = _START_RECORD
                done_byte, done_out, done_line = i, o, line
    if final and i == n:
        pending = line_start < n
        if pending:  # the last line has no terminator: csv.reader still ends it
            line += 1
        if state == _IN_QUOTED or (pending and state != _START_RECORD):
            field_end[nf] = o
            nf += 1
        if state != _START_RECORD or pending:
            rec_first[nr] = first
            rec_nfields[nr] = nf - first
            rec_line[nr] = line
            rec_content[nr] = kind
            nr += 1
        done_byte, done_out, done_line = n, o, line
    return (
        out[:done_out],
        field_end[: rec_first[nr - 1] + rec_nfields[nr - 1] if nr else 0],
        rec_first[:nr],
        rec_nfields[:nr],
        rec_line[:nr],
        rec_content[:nr],
        done_byte,
        done_line,
    )


@numba.njit(cache=True)
def text_lines(buf: np.ndarray, final: bool) -> tuple:  # pragma: no cover
    """Physical lines of ``buf`` as Python's text files split them (``\\r\\n``, ``\\r``,
    ``\\n``). Returns ``(starts, ends, consumed)``: line ``k`` is ``buf[starts[k]:ends[k]]``
    without its terminator."""
    n = buf.size
    bound = 1
    for i in range(n):
        if buf[i] == _LF or buf[i] == _CR:
            bound += 1
    starts = np.empty(bound, np.int64)
    ends = np.empty(bound, np.int64)
    k = 0
    begin = 0
    i = 0
    while i < n:
        c = buf[i]
        if c == _LF or c == _CR:
            if c == _CR and i + 1 == n and not final:
                break
            starts[k] = begin
            ends[k] = i
            k += 1
            if c == _CR and i + 1 < n and buf[i + 1] == _LF:
                i += 1
            begin = i + 1
        i += 1
    if final and begin < n:
        starts[k] = begin
        ends[k] = n
        k += 1
        begin = n
    return starts[:k], ends[:k], begin


@numba.njit(cache=True)
def _fnv(buf: np.ndarray, start: int, end: int) -> np.uint64:  # pragma: no cover
    h = np.uint64(14695981039346656037)
    for i in range(start, end):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h


@numba.njit(cache=True)
def _same(buf: np.ndarray, a0: int, a1: int, b0: int, b1: int) -> bool:  # pragma: no cover
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):
        if buf[a0 + k] != buf[b0 + k]:
            return False
    return True


@numba.njit(cache=True)
def _grown(slots: np.ndarray, hashes: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover
    """A hash table twice the size holding the first ``k`` entries."""
    bigger = np.full(2 * slots.size, -1, np.int64)
    mask = np.uint64(bigger.size - 1)
    for j in range(k):
        s = hashes[j] & mask
        while bigger[s] >= 0:
            s = (s + np.uint64(1)) & mask
        bigger[s] = j
    return bigger


@numba.njit(cache=True)
def intern_spans(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple:  # pragma: no cover
    """Number the distinct byte strings ``buf[starts[i]:ends[i]]`` in order of first
    appearance (a hash table, bytes compared in full). Returns ``(ids, first)``: span ``i``
    is distinct string ``ids[i]``, whose first occurrence is span ``first[ids[i]]``."""
    m = starts.size
    slots = np.full(64, -1, np.int64)  # grows with the distinct strings, not with m
    hashes = np.empty(m, np.uint64)
    first = np.empty(m, np.int64)
    ids = np.empty(m, np.int64)
    k = 0
    for i in range(m):
        if 2 * k >= slots.size:
            slots = _grown(slots, hashes, k)
        mask = np.uint64(slots.size - 1)
        h = _fnv(buf, starts[i], ends[i])
        s = h & mask
        while True:
            j = slots[s]
            if j < 0:
                slots[s] = k
                hashes[k] = h
                first[k] = i
                ids[i] = k
                k += 1
                break
            f = first[j]
            if hashes[j] == h and _same(buf, starts[f], ends[f], starts[i], ends[i]):
                ids[i] = j
                break
            s = (s + np.uint64(1)) & mask
    return ids, first[:k].copy()
