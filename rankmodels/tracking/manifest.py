"""What a float's output folder was made from, so that a resumed batch does not redo it.

After a float's outputs are written (``track.nc``, then the figures), the batch writes
``manifest.json`` into its folder, atomically and last: the input record's SHA-256 and size,
the settings it was tracked with (every field of
:class:`~rankmodels.tracking.config.TrackConfig`, whether figures were written, the SHA-256
of its share of an experiment's joint calibration), the package version, the files written
and the float's summary row. A folder is *complete* when its manifest is readable, every file
it lists exists, and its inputs and settings are the ones asked for now
(:func:`check_manifest`); a run killed at any moment leaves either a complete folder or one
without a manifest (every file is written atomically, the manifest after all of them), which a
resumed run redoes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankmodels import __version__
from rankmodels.files import atomic_output
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.digests import file_digest, value_digest
from rankmodels.tracking.shared import FloatCalibration

__all__ = [
    "MANIFEST_FILE",
    "Check",
    "Manifest",
    "check_manifest",
    "float_manifest",
    "write_manifest",
]

MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class Manifest:
    """A float's inputs and settings: ``record`` (``{"sha256", "bytes"}`` of the record
    file), ``settings`` (JSON-ready: the :class:`TrackConfig` fields, ``figures`` and the
    ``calibration`` share's SHA-256, None when tracked alone) and ``version``."""

    record: dict[str, Any]
    settings: dict[str, Any]
    version: str


def _setting(value: Any) -> Any:
    """A :class:`TrackConfig` value as JSON holds it exactly (sets sorted, floats as text)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, float):
        return repr(value)
    return value


def float_manifest(
    file: str | os.PathLike[str],
    config: TrackConfig,
    *,
    figures: bool,
    calibration: FloatCalibration | None = None,
) -> Manifest:
    """The :class:`Manifest` of tracking the record ``file`` with ``config`` (``figures``:
    whether the figures and the report are written; ``calibration``: the float's share of
    its experiment's joint calibration). Reads the whole file (OSError when it cannot)."""
    settings = {f.name: _setting(getattr(config, f.name)) for f in dataclasses.fields(config)}
    settings["figures"] = bool(figures)
    settings["calibration"] = None if calibration is None else value_digest(calibration)
    return Manifest(file_digest(file), settings, __version__)


def write_manifest(
    folder: str | os.PathLike[str], manifest: Manifest, written: list[str], row: dict[str, Any]
) -> None:
    """Write ``folder/manifest.json`` atomically: ``manifest``, the files ``written`` and the
    summary ``row`` exactly as it reads back (floats in full and still floats, NaN as null,
    numpy scalars as Python ones)."""
    exact = {key: _json_value(value) for key, value in row.items()}
    document = {**dataclasses.asdict(manifest), "written": list(written), "row": exact}
    with atomic_output(Path(folder) / MANIFEST_FILE, "w") as handle:
        handle.write(json.dumps(document, indent=2, allow_nan=False) + "\n")


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Check:
    """What :func:`check_manifest` found: ``complete`` (the folder can be kept; then ``row``
    is its summary row, nulls as NaN) or the ``reason`` it must be redone."""

    complete: bool
    reason: str = ""
    row: dict[str, Any] | None = None


def check_manifest(folder: str | os.PathLike[str], wanted: Manifest) -> Check:
    """Whether ``folder`` holds complete outputs made from ``wanted``'s inputs and settings
    (module docstring); otherwise why not, in words: ``no complete output``, ``the record
    changed``, ``settings changed: NAMES``, ``made by rankmodels VERSION``."""
    try:
        with open(Path(folder) / MANIFEST_FILE, encoding="utf-8") as handle:
            found = json.load(handle)
        written = [str(name) for name in found["written"]]
        record, settings, version = found["record"], found["settings"], found["version"]
        row = dict(found["row"])
    except (OSError, ValueError, KeyError, TypeError):
        return Check(False, "no complete output")
    if not all((Path(folder) / name).is_file() for name in written):
        return Check(False, "no complete output")
    if record != wanted.record:
        return Check(False, "the record changed")
    changed = sorted(set(settings) ^ set(wanted.settings)) + [
        name
        for name in wanted.settings
        if name in settings and settings[name] != wanted.settings[name]
    ]
    if changed:
        return Check(False, f"settings changed: {', '.join(changed)}")
    if version != wanted.version:
        return Check(False, f"made by rankmodels {version}")
    return Check(True, row={k: math.nan if v is None else v for k, v in row.items()})
