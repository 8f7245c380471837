"""The Aggregated Ballot Information Format (ABIF, [ABIF]): ranked ballots with counts.

Format (for users in ``docs/aggregation.md``), one item per line; what a line is follows
from its first character after spaces:

* ``27: DGM > SBJ = SY > [Adam Muñoz]`` -- a **ballot line**: a positive integer count,
  ``:``, then candidates best first, ``>`` between ranks and ``=`` (or ``,``) between tied
  candidates. A candidate is a bare token (any characters but spaces and
  ``> = , / [ ] " # : { }``) or a quoted one, ``[...]`` or ``"..."``; ``[A]``, ``"A"`` and
  ``A`` are the same candidate. Candidates a ballot leaves out are unranked (tied below the
  ranked ones). A ballot line with no candidate ranks nobody and is left out. Ratings
  (``A/5``) are not read: this is a reader of rankings.
* ``=DGM:[Doña García Márquez]`` -- a **candidate line** declaring a token and the
  candidate's name (``[...]``, ``"..."`` or the rest of the line). When a file declares
  candidates, its ballots may use declared tokens only, the candidates are the declared
  ones in the order declared (also those no ballot ranks) and carry their declared names;
  otherwise the candidates are the tokens in order of first appearance.
* ``{"title": "..."}`` -- a **metadata line** (ends with ``}``), ignored.
* ``# ...`` -- a comment; ``#`` outside quotes also ends any other line. Blank lines are
  skipped.

As PrefLib files (:mod:`.preflib`), the file is read in chunks by a
:class:`.line_reader.LineReader`: this module gives its line kinds (candidate, metadata and
unknown lines are read one at a time), the compiled tokeniser of ballot texts and
:func:`parse_ballot`, which raises a bad ballot's error; each distinct candidate token
reaches Python once.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import TextIO

import numba
import numpy as np

from rankmodels.aggregation.ballot_table import group_keys
from rankmodels.aggregation.ballot_text import LineFormat, ballot_lines
from rankmodels.aggregation.csv_common import DistinctValues, Names
from rankmodels.aggregation.line_reader import (
    BALLOT,
    COMMENT,
    FIRST_OWN_KIND,
    LineReader,
    line_kinds,
    separator_table,
    token_arrays,
)
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.scan import ASCII_SPACE
from rankmodels.aggregation.stream import CHUNK_BYTES, Progress, file_chunks, text_chunks
from rankmodels.errors import InputError

__all__ = ["parse_abif", "parse_ballot", "read_abif", "write_abif"]

_SPACES = "".join(chr(b) for b in np.flatnonzero(ASCII_SPACE))
_SPECIALS = '>=,/[]"#:{}'
_STOP = np.zeros(256, dtype=np.bool_)
"""``_STOP[b]``: byte ``b`` ends a bare token."""
_STOP[[ord(c) for c in _SPACES + _SPECIALS]] = True
_BARE = re.compile(f"[^{re.escape(_SPACES + _SPECIALS)}]+")
_SEPARATOR = separator_table(">=,")
_INVALID = -1  # code of a token that names nobody (empty after stripping)

_METADATA, _DECLARATION, _OTHER = range(FIRST_OWN_KIND, FIRST_OWN_KIND + 3)  # line kinds


def read_abif(
    path: str | os.PathLike[str],
    progress: Progress | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Profile:
    """Read the ABIF file at ``path`` into a :class:`Profile` (``progress`` hears of the
    bytes read, ``chunk_bytes`` are read at a time)."""
    with open(path, "rb") as handle:
        return _Abif(path).read(file_chunks(handle, progress, chunk_bytes))


def parse_abif(lines: Iterable[str], path: str | os.PathLike[str] | None = None) -> Profile:
    """Parse ABIF text from its lines (an open handle; ``path`` only names it in errors)."""
    return _Abif(path).read(text_chunks(lines))


@numba.njit(cache=True)
def _body_tokens(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    space: np.ndarray,
    stop: np.ndarray,
    separator: np.ndarray,
) -> tuple:  # pragma: no cover
    """Candidate tokens of ballot texts ``A > [B b] = "C"`` (what follows a ballot line's
    colon), as :func:`parse_ballot` reads them. Returns ``(tok_start, tok_end, owner,
    group, valid)``: the span of each token without its quotes, its text and tie group,
    and whether each text is well formed (a token between every two separators, quotes
    closed, no rating)."""
    m = starts.size
    tok_start, tok_end, owner, group = token_arrays(buf, starts, ends, separator)
    bound = tok_start.size
    valid = np.ones(m, np.bool_)
    t = 0
    for i in range(m):
        p, e = starts[i], ends[i]
        g = 0
        tokens = 0
        expect = True  # a token comes next
        while True:
            while p < e and space[buf[p]]:
                p += 1
            if p == e or buf[p] == 35:  # the end, or a comment
                valid[i] = not (expect and tokens > 0)  # else it ends with a separator
                break
            c = buf[p]
            if not expect:
                if c == 62:  # '>'
                    g += 1
                elif c != 61 and c != 44:  # neither '=' nor ','
                    valid[i] = False
                    break
                expect = True
                p += 1
                continue
            if c == 91 or c == 34:  # '[' or '"'
                close = 93 if c == 91 else 34
                q = p + 1
                while q < e and buf[q] != close:
                    q += 1
                if q == e:
                    valid[i] = False
                    break
                a, b, p = p + 1, q, q + 1
            elif stop[c]:
                valid[i] = False
                break
            else:
                q = p
                while q < e and not stop[buf[q]]:
                    q += 1
                a, b, p = p, q, q
            if t == bound:  # more tokens than separators allow: two without one between
                valid[i] = False
                break
            tok_start[t], tok_end[t], owner[t], group[t] = a, b, i, g
            t += 1
            tokens += 1
            expect = False
    return tok_start[:t], tok_end[:t], owner[:t], group[:t], valid


def _uncomment(text: str) -> str:
    """``text`` up to its first ``#`` outside ``[...]`` and ``"..."``."""
    close = None
    for k, ch in enumerate(text):
        if close is not None:
            close = None if ch == close else close
        elif ch in '["':
            close = "]" if ch == "[" else '"'
        elif ch == "#":
            return text[:k]
    return text


def _token(text: str, pos: int, body: str, path: object, field: str) -> tuple[str, int]:
    """The candidate token starting at ``text[pos]`` (not a space) and where it ends."""
    ch = text[pos]
    if ch in '["':
        close = "]" if ch == "[" else '"'
        end = text.find(close, pos + 1)
        if end < 0:
            raise InputError(
                f"malformed ballot {body!r}: {ch!r} without its closing {close!r}",
                path=path,
                field=field,
            )
        return text[pos + 1 : end], end + 1
    match = _BARE.match(text, pos)
    if match is None:
        raise InputError(
            f"malformed ballot {body!r}: expected a candidate, got {ch!r}", path=path, field=field
        )
    return match.group(), match.end()


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACES:
        pos += 1
    return pos


def parse_ballot(body: str, path: object, field: str) -> list[list[str]]:
    """The tie groups of candidate tokens in a ballot text (what follows the count's
    colon), best first, checked; ``[]`` for a ballot that ranks nobody."""
    text = _uncomment(body)
    shown = text.strip()
    groups: list[list[str]] = []
    seen: set[str] = set()
    pos = _skip(text, 0)
    tied = False
    while pos < len(text):
        raw, pos = _token(text, pos, shown, path, field)
        name = raw.strip()
        if not name:
            raise InputError(
                f"malformed ballot {shown!r}: empty candidate name", path=path, field=field
            )
        if name in seen:
            raise InputError(
                f"candidate {name!r} appears twice in the ballot", path=path, field=field
            )
        seen.add(name)
        if tied:
            groups[-1].append(name)
        else:
            groups.append([name])
        pos = _skip(text, pos)
        if pos == len(text):
            break
        sep = text[pos]
        if sep == "/":
            raise InputError(
                f"ballot {shown!r} has ratings ('/'); only rankings are read: write the "
                "candidates best first with '>' and '='",
                path=path,
                field=field,
            )
        if sep not in ">=,":
            raise InputError(
                f"malformed ballot {shown!r}: expected '>' or '=' after {name!r}, got {sep!r}",
                path=path,
                field=field,
            )
        tied = sep != ">"
        pos = _skip(text, pos + 1)
        if pos == len(text):
            raise InputError(
                f"malformed ballot {shown!r}: it ends with a separator", path=path, field=field
            )
    return groups


_DECLARATION_LINE = re.compile(
    rf'=\s*(?:\[(?P<t1>[^\]]*)\]|"(?P<t2>[^"]*)"|(?P<t3>{_BARE.pattern}))\s*:\s*'
    r'(?:\[(?P<n1>[^\]]*)\]|"(?P<n2>[^"]*)"|(?P<n3>[^\[\]"]*?))\s*',
    re.DOTALL,
)


class _Abif(LineReader):
    """Reads an ABIF file chunk by chunk."""

    kinds = line_kinds(
        _OTHER, {"#": COMMENT, "{": _METADATA, "=": _DECLARATION, "0123456789": BALLOT}
    )
    read_alone = (_METADATA, _DECLARATION, _OTHER)
    ballot_line = "a ballot line 'count: A > B = C'"

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        super().__init__(path)
        self.tokens = Names(None)
        self.codes = DistinctValues(self._code)
        self.declared: dict[str, tuple[str, int]] = {}  # token -> (name, line)
        self.first_use: list[int] = []  # line where each token code first appears
        self.counted = 0.0
        self.lines = False  # any line that is not blank or a comment

    def _code(self, text: str) -> int:
        name = text.strip()
        return self.tokens.code(name) if name else _INVALID

    def read_line(self, text: str, number: int, kind: int) -> None:
        """A candidate line (remembered), a metadata line (checked) or an error."""
        self.lines = True
        text = _uncomment(text).strip()
        field = f"line {number}"
        if kind == _METADATA:
            if not text.endswith("}"):
                raise InputError(
                    f"metadata line {text!r} does not end with '}}'", path=self.path, field=field
                )
            return
        if kind == _OTHER:
            raise InputError(
                f"expected a ballot line 'count: A > B = C', a candidate line '=token:[name]', "
                f"a '{{...}}' metadata line or a '#' comment, got {text!r}",
                path=self.path,
                field=field,
            )
        match = _DECLARATION_LINE.fullmatch(text)
        if match is None:
            raise InputError(
                f"malformed candidate line {text!r}; expected '=token:[name]'",
                path=self.path,
                field=field,
            )
        token = next(v for v in match.group("t1", "t2", "t3") if v is not None).strip()
        name = next(v for v in match.group("n1", "n2", "n3") if v is not None).strip()
        if not token or not name:
            raise InputError(
                f"candidate line {text!r} needs a token and a name", path=self.path, field=field
            )
        earlier = self.declared.get(token)
        if earlier is not None and earlier[0] != name:
            raise InputError(
                f"candidate {token!r} declared again as {name!r} (line {earlier[1]} says "
                f"{earlier[0]!r})",
                path=self.path,
                field=field,
            )
        self.declared.setdefault(token, (name, number))
        if token not in self.tokens.index:  # numbered now, so that usually no relabelling
            self.tokens.code(token)  # is needed at the end
            self.first_use.append(sys.maxsize)

    def bodies(
        self, buf: np.ndarray, b0: np.ndarray, b1: np.ndarray, lines: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.lines = True
        tok_start, tok_end, owner, group, valid = _body_tokens(
            buf, b0, b1, ASCII_SPACE, _STOP, _SEPARATOR
        )
        known = len(self.tokens.index)
        cand = self.codes.lookup(buf, tok_start, tok_end, np.int64)
        data, offsets, unique, _ = group_keys(
            owner, group, cand, np.ones(cand.size, np.bool_), b0.size, len(self.tokens.index)
        )
        self._first_uses(cand, lines[owner], known)
        return valid & unique, data, offsets

    def add(
        self, data: np.ndarray, offsets: np.ndarray, ids: np.ndarray, counts: np.ndarray
    ) -> None:
        ranked = np.diff(offsets)
        counts = np.where(ranked[ids] > 0, counts, 0.0)  # a ballot ranking nobody is left out
        self.counted += counts.sum()
        super().add(data, offsets, ids, counts)

    def _first_uses(self, cand: np.ndarray, line: np.ndarray, known: int) -> None:
        """Remember the line where each token code from ``known`` on first appears."""
        new = cand >= known
        first = np.full(len(self.tokens.index) - known, np.iinfo(np.int64).max)
        np.minimum.at(first, cand[new] - known, line[new])
        self.first_use.extend(first.tolist())

    def parse_ballot(self, body: str, field: str) -> None:
        parse_ballot(body, self.path, field)

    def profile(self) -> Profile:
        if not self.lines:
            raise InputError("empty file; expected ballot lines 'count: A > B = C'", path=self.path)
        if not len(self.table):
            raise InputError("no ballot lines in the file", path=self.path)
        if not self.counted:
            raise InputError("no ballot ranks any candidate", path=self.path)
        used = self.tokens.list
        if not self.declared:
            return self.table.profile(used)
        undeclared = [(self.first_use[c], t) for c, t in enumerate(used) if t not in self.declared]
        if undeclared:
            line, token = min(undeclared)
            raise InputError(
                f"candidate {token!r} is not declared (the file declares its candidates with "
                "'=token:[name]' lines)",
                path=self.path,
                field=f"line {line}",
            )
        names: dict[str, str] = {}
        for token, (name, line) in self.declared.items():
            if name in names:
                raise InputError(
                    f"candidate name {name!r} given to {names[name]!r} and {token!r}",
                    path=self.path,
                    field=f"line {line}",
                )
            names[name] = token
        order = [self.tokens.index[token] for token in self.declared]
        if order == list(range(len(order))):  # declared before use: numbered in order
            return self.table.profile(list(names))
        return _relabelled(self.table.profile(self.tokens.list), order, list(names))


def _relabelled(profile: Profile, order: list[int], names: list[str]) -> Profile:
    """``profile`` with candidate ``order[i]`` renamed ``names[i]`` and moved to index
    ``i`` (tied candidates re-sorted by their new index, as :class:`.Profile` keeps them)."""
    new = np.empty(profile.n, dtype=np.int64)
    new[order] = np.arange(profile.n)
    orders = new[profile.orders]
    levels = np.asarray(profile.levels, dtype=np.int64)
    by = np.argsort(levels * profile.n + orders, axis=1, kind="stable")
    orders = np.take_along_axis(orders, by, axis=1)
    return Profile(tuple(names), orders, profile.levels, profile.weights)


def write_abif(profile: Profile, handle: TextIO, title: str = "") -> None:
    """Write ``profile`` as ABIF: a candidate line per candidate (in index order, so the
    file reads back as the same profile), then a ballot line per ballot type. A trailing tie
    of two or more candidates after ranked ones is left out (unranked). Names must not start
    or end with spaces, hold a line break, or hold both ``]`` and ``"``; counts must be
    integers."""
    tokens = [_quoted(name, bare=True) for name in profile.candidates]
    out = ["# Aggregated Ballot Information Format, written by rankmodels"]
    if title:
        out.append("{" + f"title: {_quoted(title, bare=False)}" + "}")
    for token, name in zip(tokens, profile.candidates, strict=True):
        out.append(f"={token}:{_quoted(name, bare=False)}")
    if not np.all(profile.weights == np.floor(profile.weights)):
        raise ValueError("ABIF needs integer counts; this profile has fractional weights")
    handle.write("\n".join(out) + "\n")
    fmt = LineFormat(tokens, True, ":", ">", "=", drop_unranked=True)
    for text in ballot_lines(profile, fmt):
        handle.write(text)


def _quoted(name: str, bare: bool) -> str:
    """``name`` as a bare token (when ``bare`` and it can be one), ``[name]`` or
    ``"name"``."""
    if not name or name != name.strip() or "\n" in name or "\r" in name:
        raise ValueError(f"candidate name {name!r} cannot be written to ABIF")
    if bare and _BARE.fullmatch(name):
        return name
    if "]" not in name:
        return f"[{name}]"
    if '"' not in name:
        return f'"{name}"'
    raise ValueError(f"candidate name {name!r} cannot be written to ABIF (it has ']' and '\"')")
