"""The figures and the report of one tracking run, written into its output folder.

``map.png``, ``toa.png`` and ``diagnostics.png``
(:func:`rankmodels.plots.tracking.track_figures_png`) and ``report.html`` with the same figures
embedded, so the report travels alone (:func:`rankmodels.plots.report.tracking_report`). Each
file is written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

from rankmodels.files import atomic_output

__all__ = ["IMAGES", "REPORT_FILE", "float_figures", "write_run_report"]

IMAGES: dict[str, str] = {"map": "map.png", "toa": "toa.png", "diagnostics": "diagnostics.png"}
"""Figure name -> file name in the run folder."""
REPORT_FILE = "report.html"


def write_run_report(
    out: str | os.PathLike[str],
    record: xr.Dataset,
    track: xr.Dataset,
    summary: object,
    truth: xr.Dataset | None = None,
) -> list[str]:
    """Write the figures (:data:`IMAGES`) and :data:`REPORT_FILE` of ``track`` into ``out``
    (created if needed); ``summary`` as :func:`~rankmodels.plots.report.tracking_report` takes
    it, ``truth`` the true track of a simulated record. Land comes from the shipped Natural
    Earth data. Returns the file names written, in that order."""
    from rankmodels.plots.cartopy_data import use_shipped_natural_earth
    from rankmodels.plots.report import tracking_report
    from rankmodels.plots.tracking import track_figures_png

    use_shipped_natural_earth()
    folder = Path(out)
    pngs = track_figures_png(record, track, truth)
    for name, png in pngs.items():
        with atomic_output(folder / IMAGES[name]) as handle:
            handle.write(png)
    with atomic_output(folder / REPORT_FILE, "w") as handle:
        handle.write(tracking_report(track, summary, pngs, truth))
    return [*(IMAGES[name] for name in pngs), REPORT_FILE]


def float_figures(
    out: str | os.PathLike[str],
    file: str | os.PathLike[str],
    record: xr.Dataset,
    track: xr.Dataset,
    summary: object,
) -> list[str]:
    """:func:`write_run_report` for the float recorded in ``file``, with the true track of a
    simulated record beside it (:func:`~rankmodels.plots.truth.truth_beside`; an unusable
    truth file only costs the comparison). The figure writer of batch runs
    (:data:`rankmodels.tracking.batch.Figures`)."""
    from rankmodels.errors import InputError
    from rankmodels.plots.truth import truth_beside

    try:
        truth = truth_beside(file, record)
    except InputError:
        truth = None
    return write_run_report(out, record, track, summary, truth)
