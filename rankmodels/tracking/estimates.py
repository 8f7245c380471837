"""What a calibrated run estimated, and what it kept: one :class:`ParameterReport` per scalar
parameter of the model, read by ``track.nc``, the command line's summary and the report.

A parameter is *estimated* when the EM pass that was kept changed it from its starting value
with a standard error; otherwise it was *kept* at its starting value -- the file's (sound
speed), zero (clock offset and drift) or the configured value (the statistical model) -- and
the report says why: the record cannot determine it (it carries less information about it
than its prior, :mod:`~rankmodels.tracking.model_fit`), no estimate raised the likelihood
(the EM kept the starting values), it was not asked for (``--calibrate-params``), or its
starting value leaves it out of the model (``P_D = 1``, no clutter, no multipath).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rankmodels.text import with_error
from rankmodels.tracking.calibration import CALIBRATION_PARAMS, Calibration, CalibrationResult
from rankmodels.tracking.correlation import CORRELATION_FIELDS
from rankmodels.tracking.model_fit import StatisticalModel, off_the_model

__all__ = [
    "CANNOT_DETERMINE",
    "NOT_ASKED",
    "NO_GAIN",
    "OFF_THE_MODEL",
    "ParameterReport",
    "calibrated_names",
    "parameter_reports",
]

CANNOT_DETERMINE = "the record cannot determine it"
NO_GAIN = "no estimate raised the likelihood"
NOT_ASKED = "not asked for (--calibrate-params)"
OFF_THE_MODEL = "its starting value leaves it out of the model"
#: How a sound speed started from the float's sensors is described.
SENSORS_START = "from the float's temperature and pressure"

#: name -> (the ``--calibrate-params`` name that covers it, label, unit, digits).
_PARAMETERS: dict[str, tuple[str, str, str, int]] = {
    "sound_speed": ("speed", "sound speed", "m/s", 1),
    "clock_offset": ("drift", "clock offset", "s", 2),
    "clock_drift": ("drift", "clock drift", "s/day", 4),
    "sigma": ("sigma", "TOA noise sigma", "s", 2),
    "p_detect": ("pd", "detection probability P_D", "", 3),
    "clutter_rate": ("clutter", "clutter rate", "per window", 2),
    "multipath": ("multipath", "multipath share", "", 3),
    "multipath_delay": ("multipath", "mean multipath delay", "s", 1),
    "process_noise": ("process-noise", "process noise", "km/day", 2),
    "mean_velocity_east": ("process-noise", "mean velocity east", "km/day", 2),
    "mean_velocity_north": ("process-noise", "mean velocity north", "km/day", 2),
    "eddy_speed": ("process-noise", "eddy speed", "km/day", 2),
    "time_scale": ("process-noise", "Lagrangian time scale", "days", 1),
    "correlation_source_mean": ("correlation", "source log correlation mean", "", 3),
    "correlation_source_spread": ("correlation", "source log correlation spread", "", 3),
    "correlation_clutter_mean": ("correlation", "clutter log correlation mean", "", 3),
    "correlation_clutter_spread": ("correlation", "clutter log correlation spread", "", 3),
}
#: The parameters of each motion model (the others are not reported).
_RANDOM_WALK = ("process_noise",)
_LAGRANGIAN = ("mean_velocity_east", "mean_velocity_north", "eddy_speed", "time_scale")
_GEOMETRY = ("sound_speed", "clock_offset", "clock_drift")
#: The correlation heights' parameters, reported only when the track used heights.
_CORRELATION = tuple(CORRELATION_FIELDS)
#: Parameters whose start is computed from the record (written in full, not as typed).
_COMPUTED_START = (*_LAGRANGIAN, *_CORRELATION)


@dataclass(frozen=True)
class ParameterReport:
    """One parameter: ``value`` used by the track, ``std`` (NaN unless estimated),
    ``start`` (where the EM started), ``status`` (``"estimated"``, ``"kept"`` or ``"not
    calibrated"``) and ``reason`` (why kept; ``""`` otherwise); ``label``, ``unit`` and
    ``digits`` for text; ``start_source`` where the sound speed's start came from
    (``"sensors"``, ``"file"`` or ``"option"``; ``""`` for the other parameters)."""

    name: str
    label: str
    unit: str
    digits: int
    value: float
    std: float
    start: float
    status: str
    reason: str
    start_source: str = ""

    @property
    def estimated(self) -> bool:
        return self.status == "estimated"

    def _amount(self, value: float) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{value:.{self.digits}f}{unit}"

    @property
    def from_sensors(self) -> bool:
        """Whether the start is the float's own sound speed (its temperature and pressure)."""
        return self.start_source == "sensors"

    def _start_text(self) -> str:
        if self.from_sensors:
            return f"{self._amount(self.start)} {SENSORS_START}"
        whose = "the file's " if self.name == "sound_speed" else ""
        return f"{whose}{self._amount(self.start)}"

    def text(self) -> str:
        """``"sound speed 1474.0 ± 4.3 m/s (start 1480)"`` when estimated, ``"sound speed:
        kept at the file's 1480.0 m/s -- the record cannot determine it"`` when kept."""
        if self.estimated:
            unit = f" {self.unit}" if self.unit else ""
            value = with_error(self.value, self.std, self.digits, signed=self.name in _SIGNED)
            exact = self.name in _COMPUTED_START or self.from_sensors
            start = f"{self.start:.{self.digits}f}" if exact else f"{self.start:g}"
            origin = f" {SENSORS_START}" if self.from_sensors else ""
            return f"{self.label} {value}{unit} (start {start}{origin})"
        if self.status == "kept":
            return f"{self.label}: kept at {self._start_text()} — {self.reason}"
        origin = f", {SENSORS_START}" if self.from_sensors else ""
        return f"{self.label} {self._amount(self.value)} (not calibrated{origin})"

    def kept_text(self) -> str:
        """``"sound speed at the file's 1480.0 m/s"``: a kept parameter, its reason apart."""
        return f"{self.label} at {self._start_text()}"


_SIGNED = ("clock_offset", "clock_drift", "mean_velocity_east", "mean_velocity_north")


def _status(
    estimated: bool, asked: bool, result: CalibrationResult | None, off: bool = False
) -> tuple[str, str]:
    if result is None:
        return "not calibrated", ""
    if not asked:
        return "kept", NOT_ASKED
    if off:
        return "kept", OFF_THE_MODEL
    if result.kept_file_values:
        return "kept", NO_GAIN
    return ("estimated", "") if estimated else ("kept", CANNOT_DETERMINE)


def parameter_reports(
    used: Calibration,
    model: StatisticalModel,
    start_model: StatisticalModel,
    result: CalibrationResult | None,
    nominal_speed: float,
    speed_source: str = "file",
) -> tuple[ParameterReport, ...]:
    """One report per parameter of :data:`_PARAMETERS` in that order, those of the motion
    model the track used only, the correlation heights' only when it used them: ``used``
    and ``model`` are what the track used, ``start_model`` the configured statistical model,
    ``result`` the EM (None: not calibrated), ``nominal_speed`` the starting sound speed and
    ``speed_source`` where it came from (``"file"``, ``"sensors"`` or ``"option"``)."""
    reports = []
    params = result.params if result is not None else frozenset()
    off = off_the_model(start_model)
    left_out = _RANDOM_WALK if model.motion is not None else _LAGRANGIAN
    if start_model.correlation is None:
        left_out = (*left_out, *_CORRELATION)
    for name, (group, label, unit, digits) in _PARAMETERS.items():
        if name in left_out:
            continue
        if name in _GEOMETRY:
            value, std = getattr(used, name), getattr(used, f"{name}_std")
            start = nominal_speed if name == "sound_speed" else 0.0
            estimated = math.isfinite(std)
        else:
            value, start = model.value(name), start_model.value(name)
            est = model.estimate(name)
            estimated = est is not None and est.estimated
            std = est.std if estimated else math.nan
        status, reason = _status(estimated, group in params, result, group in off)
        if status != "estimated":
            std = math.nan
        origin = speed_source if name == "sound_speed" else ""
        reports.append(
            ParameterReport(name, label, unit, digits, value, std, start, status, reason, origin)
        )
    return tuple(reports)


def calibrated_names(reports: tuple[ParameterReport, ...], used: Calibration) -> tuple[str, ...]:
    """The ``--calibrate-params`` names whose parameters the track changed (in
    :data:`~rankmodels.tracking.calibration.CALIBRATION_PARAMS` order)."""
    changed = {_PARAMETERS[r.name][0] for r in reports if r.estimated}
    if np.isfinite(used.source_offset_correction_std).any():
        changed.add("offsets")
    return tuple(p for p in CALIBRATION_PARAMS if p in changed)
