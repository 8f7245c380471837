"""Reader for LETOR / SVMlight ranking files.

One document per line::

    <label> qid:<query id> <feature>:<value> <feature>:<value> ... [# comment]

Labels are numbers in ``0 .. MAX_LABEL`` (graded relevance), feature indices positive
integers up to :data:`MAX_FEATURES` (1-based, sparse: missing features are 0), values
numbers of magnitude at most :data:`MAX_VALUE`.
Blank lines and lines starting with ``#`` are skipped. Bad lines raise
:class:`rankmodels.errors.InputError` naming the file and the line.

The lines of a query should be contiguous. When a qid comes back after other queries its
documents are grouped with its first lines all the same (queries keep the order of their
first appearance, documents their file order: a stable sort by qid) and a
:class:`LetorOrderWarning` says so, since that is often two files concatenated.

The documents are held densely, ``(B, n_max, F)``; a file whose padded array would exceed
:data:`MAX_DENSE_BYTES` is refused with the sizes in the message.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from rankmodels.errors import InputError

__all__ = [
    "MAX_DENSE_BYTES",
    "MAX_FEATURES",
    "MAX_LABEL",
    "MAX_VALUE",
    "LetorData",
    "LetorOrderWarning",
    "format_letor",
    "parse_letor",
    "read_letor",
]

MAX_FEATURES = 10_000
"""Largest feature index read (LETOR sets have at most a few hundred features; the dense
layout costs ``8 F`` bytes per document)."""

MAX_LABEL = 100.0
"""Largest label (gains ``2^r`` must stay finite; LETOR grades are 0..4)."""

MAX_VALUE = 1e100
"""Largest feature magnitude (sums of squares over the documents must stay finite)."""

MAX_DENSE_BYTES = 2 * 2**30
"""Largest padded feature array ``B * n_max * F * 8`` bytes that :func:`parse_letor` builds."""


class LetorOrderWarning(UserWarning):
    """A qid reappears after other queries; its documents were grouped by qid."""


@dataclass(frozen=True)
class LetorData:
    """A ragged batch of queries with document features.

    ``features`` ``(B, n_max, F)``, ``relevance`` ``(B, n_max)``, ``lengths`` ``(B,)``,
    ``qids`` ``(B,)`` query ids as strings; padding is zero.
    """

    features: np.ndarray
    relevance: np.ndarray
    lengths: np.ndarray
    qids: np.ndarray

    @property
    def mask(self) -> np.ndarray:
        """``(B, n_max)`` True on the real (non-padding) documents."""
        return np.arange(self.features.shape[1])[None, :] < self.lengths[:, None]

    def subset(self, index: np.ndarray) -> LetorData:
        """The queries ``index`` (trimmed to their longest list)."""
        index = np.asarray(index)
        lengths = self.lengths[index]
        n = int(lengths.max(initial=0))
        return LetorData(
            self.features[index, :n], self.relevance[index, :n], lengths, self.qids[index]
        )


def _parse_line(line: str, where: dict) -> tuple[float, str, dict[int, float]]:
    body = line.split("#", 1)[0].split()
    if len(body) < 2:
        raise InputError("expected '<label> qid:<id> [<feature>:<value> ...]'", **where)
    try:
        label = float(body[0])
    except ValueError:
        raise InputError(f"label {body[0]!r} is not a number", **where) from None
    if not 0 <= label <= MAX_LABEL:
        raise InputError(
            f"label must be a non-negative number up to {MAX_LABEL} (a relevance grade), "
            f"got {body[0]!r}",
            **where,
        )
    if not body[1].startswith("qid:") or len(body[1]) == 4:
        raise InputError(f"second field must be 'qid:<id>', got {body[1]!r}", **where)
    qid = body[1][4:]
    feats: dict[int, float] = {}
    for token in body[2:]:
        key, sep, value = token.partition(":")
        try:
            index = int(key)
            val = float(value)
        except ValueError:
            index, val = -1, np.nan
        if not sep or index < 1 or not abs(val) <= MAX_VALUE:
            raise InputError(
                f"feature {token!r} must be '<positive int>:<number of magnitude <= "
                f"{MAX_VALUE:g}>'",
                **where,
            )
        if index > MAX_FEATURES:
            raise InputError(
                f"feature index {index} exceeds {MAX_FEATURES}, the most features this reader "
                "holds (densely)",
                **where,
            )
        if index in feats:
            raise InputError(f"feature {index} appears twice", **where)
        feats[index] = val
    return label, qid, feats


def parse_letor(
    text: str, path: str | os.PathLike[str] | None = None, *, n_features: int = 0
) -> LetorData:
    """Parse the text of a LETOR / SVMlight file (see the module docstring).

    The feature count ``F`` is the largest index in the file, or ``n_features`` when that
    is larger (a model trained on more features than a sparse file happens to mention).
    """
    rows: list[tuple[float, str, dict[int, float]]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        rows.append(_parse_line(line, {"path": path, "field": f"line {number}"}))
        lines.append(number)
    if not rows:
        raise InputError("no documents found", path=path)
    order: dict[str, list[int]] = {}
    returning: list[int] = []  # rows whose qid was left for another query before
    for i, (_, qid, _) in enumerate(rows):
        members = order.setdefault(qid, [])
        if members and rows[i - 1][1] != qid:
            returning.append(i)
        members.append(i)
    if returning:
        i = returning[0]
        qid = rows[i][1]
        warnings.warn(
            f"{_where(path)}qid {qid} comes back on line {lines[i]} after other queries (first "
            f"seen on line {lines[order[qid][0]]}; {len(returning)} such returns); its "
            "documents are grouped by qid",
            LetorOrderWarning,
            stacklevel=2,
        )
    F = max(n_features, max((max(f) for _, _, f in rows if f), default=0))
    qids = np.array(list(order), dtype=object)
    lengths = np.array([len(v) for v in order.values()], dtype=np.int64)
    B, n = len(qids), int(lengths.max())
    if B * n * F * 8 > MAX_DENSE_BYTES:
        raise InputError(
            f"the padded feature array ({B} queries x {n} documents x {F} features) would take "
            f"{B * n * F * 8 / 2**30:.1f} GiB, more than {MAX_DENSE_BYTES / 2**30:.0f} GiB",
            path=path,
        )
    features = np.zeros((B, n, F))
    relevance = np.zeros((B, n))
    for b, members in enumerate(order.values()):
        for j, i in enumerate(members):
            label, _, feats = rows[i]
            relevance[b, j] = label
            for index, value in feats.items():
                features[b, j, index - 1] = value
    return LetorData(features, relevance, lengths, qids)


def _where(path: str | os.PathLike[str] | None) -> str:
    return "" if path is None else f"{os.fspath(path)}: "


def read_letor(path: str | os.PathLike[str], *, n_features: int = 0) -> LetorData:
    """Read a LETOR / SVMlight file (UTF-8 or ASCII); ``n_features`` as in
    :func:`parse_letor`."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=path) from None
    return parse_letor(text, path, n_features=n_features)


def format_letor(data: LetorData, digits: int = 6) -> str:
    """The LETOR text of ``data`` (every feature written, ``digits`` significant digits):
    :func:`parse_letor` reads it back to the same queries."""
    lines = []
    for b, qid in enumerate(data.qids):
        for j in range(int(data.lengths[b])):
            feats = " ".join(f"{f + 1}:{v:.{digits}g}" for f, v in enumerate(data.features[b, j]))
            lines.append(f"{data.relevance[b, j]:g} qid:{qid} {feats}".rstrip())
    return "\n".join(lines) + "\n"
