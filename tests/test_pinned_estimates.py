"""Which ``--calibrate-params`` groups a track names as calibrated: those with an estimated
parameter, and the source offsets when any one of them was estimated, in the documented
order (drift, speed, offsets, then the statistical groups)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rankmodels.tracking.calibration import Calibration
from rankmodels.tracking.estimates import ParameterReport, calibrated_names


def _report(name, status):
    std = 0.1 if status == "estimated" else math.nan
    return ParameterReport(name, name, "", 2, 1.0, std, 1.0, status, "")


def _used(offset_std):
    cal = Calibration.nominal(3, 1480.0)
    return replace(cal, source_offset_correction_std=np.array(offset_std, dtype=float))


def test_some_source_offsets_estimated_name_the_offsets():
    reports = (_report("sound_speed", "kept"), _report("sigma", "estimated"),
               _report("clutter_rate", "kept"))  # fmt: skip
    nan = math.nan
    assert calibrated_names(reports, _used([nan, 0.4, nan])) == ("offsets", "sigma")
    assert calibrated_names(reports, _used([0.3, 0.4, 0.5])) == ("offsets", "sigma")
    assert calibrated_names(reports, _used([nan, nan, nan])) == ("sigma",)


def test_groups_come_in_the_documented_order_each_once():
    reports = (_report("multipath_delay", "estimated"), _report("multipath", "estimated"),
               _report("clock_drift", "estimated"), _report("clock_offset", "estimated"),
               _report("sound_speed", "estimated"), _report("p_detect", "kept"))  # fmt: skip
    assert calibrated_names(reports, _used([math.nan, 1.0, math.nan])) == (
        "drift", "speed", "offsets", "multipath"
    )  # fmt: skip
