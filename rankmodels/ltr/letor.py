"""Reader for LETOR / SVMlight ranking files.

One document per line::

    <label> qid:<query id> <feature>:<value> <feature>:<value> ... [# comment]

Labels are non-negative numbers (graded relevance), feature indices positive integers
(1-based, sparse: missing features are 0), values floats. Lines of one query need not be
contiguous; queries keep the order of their first appearance. Blank lines and lines
starting with ``#`` are skipped. Bad lines raise :class:`rankmodels.errors.InputError`
naming the file and the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from rankmodels.errors import InputError

__all__ = ["LetorData", "parse_letor", "read_letor"]


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
    if not np.isfinite(label) or label < 0:
        raise InputError(f"label must be a finite non-negative number, got {body[0]!r}", **where)
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
        if not sep or index < 1 or not np.isfinite(val):
            raise InputError(f"feature {token!r} must be '<positive int>:<finite number>'", **where)
        if index in feats:
            raise InputError(f"feature {index} appears twice", **where)
        feats[index] = val
    return label, qid, feats


def parse_letor(text: str, path: str | os.PathLike[str] | None = None) -> LetorData:
    """Parse the text of a LETOR / SVMlight file (see the module docstring)."""
    rows: list[tuple[float, str, dict[int, float]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        rows.append(_parse_line(line, {"path": path, "field": f"line {number}"}))
    if not rows:
        raise InputError("no documents found", path=path)
    n_features = max((max(f) for _, _, f in rows if f), default=0)
    order: dict[str, list[int]] = {}
    for i, (_, qid, _) in enumerate(rows):
        order.setdefault(qid, []).append(i)
    qids = np.array(list(order), dtype=object)
    lengths = np.array([len(v) for v in order.values()], dtype=np.int64)
    B, n = len(qids), int(lengths.max())
    features = np.zeros((B, n, n_features))
    relevance = np.zeros((B, n))
    for b, members in enumerate(order.values()):
        for j, i in enumerate(members):
            label, _, feats = rows[i]
            relevance[b, j] = label
            for index, value in feats.items():
                features[b, j, index - 1] = value
    return LetorData(features, relevance, lengths, qids)


def read_letor(path: str | os.PathLike[str]) -> LetorData:
    """Read a LETOR / SVMlight file (UTF-8 or ASCII)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=path) from None
    return parse_letor(text, path)
