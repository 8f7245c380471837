"""What one float of a jointly calibrated experiment is tracked with
(:mod:`rankmodels.tracking.experiment`): its EM trace and kept parameters (the shared sound
speed and source offset corrections, its own clock and statistical model) as a
:class:`~rankmodels.tracking.calibration.CalibrationResult`, and the shared corrections of
its sources' clock drifts, which enter its record's ``source_drift``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.tracking.calibration import CalibrationResult
from rankmodels.tracking.schema import TRACK, annotate

__all__ = ["CALIBRATION_MODE", "SOURCE_ERRORS_CAVEAT", "FloatCalibration", "with_drift_correction"]

#: ``track.nc``'s attribute ``calibration_mode`` of a float calibrated with its experiment.
CALIBRATION_MODE = "experiment"
#: What the source corrections' standard errors leave out, said wherever they are shown: the
#: tracks of all floats can move together by a fraction of a kilometre while each source's
#: correction takes up the change in its distances (docs/tracking.md, "How far to trust the
#: source corrections' standard errors").
SOURCE_ERRORS_CAVEAT = (
    "their standard errors leave out how far all the tracks can move together and can be "
    "too small where they moved (docs/tracking.md)"
)


def with_drift_correction(record: xr.Dataset, correction: np.ndarray) -> xr.Dataset:
    """``record`` with ``correction`` (s/day, one per source) added to its ``source_drift``
    (0 where the record has none): the written offsets then follow the corrected clocks
    (:func:`~rankmodels.tracking.records.written_offsets`)."""
    drift = record["source_drift"].values if "source_drift" in record else 0.0
    out = record.copy()
    out["source_drift"] = ("source", np.asarray(drift, dtype=float) + correction)
    return out


@dataclass(frozen=True)
class FloatCalibration:
    """One float's share of an experiment's calibration: ``result`` (its trace; the kept
    pass gives its :class:`~rankmodels.tracking.calibration.Calibration`),
    ``drift_correction`` and ``drift_correction_std`` (s/day, one per source of its record;
    std NaN where not estimated), ``floats`` of the experiment."""

    result: CalibrationResult
    drift_correction: np.ndarray
    drift_correction_std: np.ndarray
    floats: int

    def apply(self, record: xr.Dataset) -> xr.Dataset:
        """The record as tracked: its ``source_drift`` corrected."""
        return with_drift_correction(record, self.drift_correction)

    def annotate(self, track: xr.Dataset) -> xr.Dataset:
        """``track`` with the shared values it was tracked with beside the calibration's
        variables: ``source_drift_correction`` and its ``_std`` (source), the attributes
        ``calibration_mode`` (:data:`CALIBRATION_MODE`) and ``experiment_floats``."""
        out = track.assign(
            source_drift_correction=("source", self.drift_correction),
            source_drift_correction_std=("source", self.drift_correction_std),
        )
        out.attrs.update(calibration_mode=CALIBRATION_MODE, experiment_floats=self.floats)
        return annotate(out, TRACK)
