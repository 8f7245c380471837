"""Digests that identify inputs across processes: of a file's bytes, and of a value (settings,
parameters, models) through a canonical form whose text is the same in every process for
equal values (:func:`canonical`)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any

import numpy as np

__all__ = ["canonical", "file_digest", "value_digest"]

_CHUNK = 1 << 20


def file_digest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"sha256": hex digest, "bytes": size}`` of the file ``path``."""
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return {"sha256": sha.hexdigest(), "bytes": size}


def canonical(value: Any) -> Any:
    """``value`` as nested tuples of numbers and strings whose ``repr`` is the same in every
    process for equal inputs: sets sorted, dataclasses as ``(class name, fields)``, arrays as
    ``(dtype, shape, bytes)``, numpy scalars as Python ones (a pickle is not: it depends on
    string hashing and on which equal objects happen to be shared)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__qualname__,
            tuple((f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value)),
        )
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((canonical(v) for v in value), key=repr)))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes().hex())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    return (type(value).__qualname__, repr(value))


def value_digest(*values: Any) -> str:
    """The SHA-256 (hex) of ``values``' canonical form (:func:`canonical`)."""
    return hashlib.sha256(repr(canonical(values)).encode()).hexdigest()
