"""The true track of a simulated record, for the map, the diagnostics and the report.

``simulate-float`` writes ``NAME.nc`` (the record, attribute ``simulated = 1``) and
``NAME_truth.nc`` beside it (``lat``, ``lon`` (cycle) and ``true_label`` (cycle, rank), the
truth format of ``docs/tracking.md``). :func:`truth_beside` finds and reads that file for a
simulated record, so a run on simulated data is compared with what really happened.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.plots.track_summary import attr_flag
from rankmodels.tracking.records import NETCDF_MAGIC

TRUTH_SUFFIX = "_truth.nc"


def truth_path(record_path: str | os.PathLike[str]) -> Path:
    """``DIR/NAME_truth.nc`` for the record ``DIR/NAME.nc``."""
    path = Path(record_path)
    return path.with_name(path.stem + TRUTH_SUFFIX)


def read_truth(path: str | os.PathLike[str], record: xr.Dataset) -> xr.Dataset:
    """The truth file ``path`` (loaded into memory), checked against ``record``: ``lat``,
    ``lon`` (cycle) and ``true_label`` (cycle, rank) with the record's numbers of cycles and
    ranks. Raises :class:`~rankmodels.errors.InputError` naming the file and the field."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror or err})", path=path) from None
    if not head.startswith(NETCDF_MAGIC):
        raise InputError("not a NetCDF truth file", path=path)
    try:
        with xr.open_dataset(path, engine="netcdf4", cache=False) as raw:
            truth = raw.load()
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, IndexError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"not a readable NetCDF truth file ({reason})", path=path) from None
    expected = {
        "lat": (record.sizes["cycle"],),
        "lon": (record.sizes["cycle"],),
        "true_label": (record.sizes["cycle"], record.sizes["rank"]),
    }
    for name, shape in expected.items():
        if name not in truth:
            raise InputError(
                "missing; expected the true track of the record", path=path, field=name
            )
        if np.shape(truth[name].values) != shape:
            raise InputError(
                f"has shape {np.shape(truth[name].values)}; the record needs {shape} "
                "(cycle, rank): the truth of another record?",
                path=path,
                field=name,
            )
    return truth


def truth_beside(record_path: str | os.PathLike[str], record: xr.Dataset) -> xr.Dataset | None:
    """The truth of a simulated record from :func:`truth_path` (via :func:`read_truth`), or
    None when the record is not simulated or no such file exists."""
    path = truth_path(record_path)
    if not attr_flag(record.attrs, "simulated") or not path.is_file():
        return None
    return read_truth(path, record)
