"""Float clock offsets measured at launch and recovery, as data on the clock model.

The float clock reads ``e(t) = c_0 + c_1 t`` seconds ahead of true time, ``t`` days since the
launch (:class:`~rankmodels.tracking.calibration.Calibration`). Before a launch and after a
recovery the clock is read against GPS time: ``m_j`` at day ``t_j`` (``t_0 = 0``; the recovery
at the record's ``recovery_time``), each with error ``s`` (s, ``clock_offset_error``), so

    m_j = c_0 + c_1 t_j + e_j,    e_j ~ N(0, s^2),

independent of the arrivals. The readings are therefore data of the clock's M-step: their
log-likelihood ``-sum_j (m_j - c_0 - c_1 t_j)^2 / (2 s^2)`` adds to the arrivals', its score
``a_j (m_j - a_j^T c) / s^2`` and information ``a_j a_j^T / s^2`` (``a_j = (1, t_j)``) to the
arrival statistics, and they replace the priors of what they measure (the launch reading
``c_0``'s, the pair ``c_1``'s). The file's clock, which an uncalibrated track uses, is the line
through the readings (as ARTOA corrects TOAs linearly between the launch and recovery offsets):
``c_0 = m_0``, ``c_1 = (m_1 - m_0) / t_1``, no drift with the launch reading alone, no clock
error without readings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.tracking.schema import DEFAULT_CLOCK_READING_ERROR

__all__ = ["ClockReadings"]

_DAY = np.timedelta64(86_400_000_000_000, "ns")


@dataclass(frozen=True)
class ClockReadings:
    """``R`` (0, 1 or 2) measured float clock offsets: ``day (R,)`` days since the launch,
    ``offset (R,)`` s ahead of true time, each with standard deviation ``error`` (s)."""

    day: np.ndarray
    offset: np.ndarray
    error: float = DEFAULT_CLOCK_READING_ERROR

    def __post_init__(self) -> None:
        day, offset = np.asarray(self.day, float), np.asarray(self.offset, float)
        if day.shape != offset.shape or day.ndim != 1 or day.size > 2:
            raise ValueError(
                f"day and offset must be (R,) alike with R <= 2, got {day.shape} and {offset.shape}"
            )
        if not (np.isfinite(day).all() and np.isfinite(offset).all()):
            raise ValueError("day and offset must be finite")
        if day.size == 2 and not day[1] > day[0]:
            raise ValueError(f"the recovery reading must come after the launch, got days {day}")
        if not self.error > 0:
            raise ValueError(f"error must be > 0 s, got {self.error}")
        object.__setattr__(self, "day", day)
        object.__setattr__(self, "offset", offset)

    @classmethod
    def none(cls) -> ClockReadings:
        """No readings: the clock is known only through its priors."""
        return cls(np.empty(0), np.empty(0))

    @classmethod
    def from_record(cls, record: xr.Dataset) -> ClockReadings:
        """The readings of a validated float record (``clock_offset_launch``, and
        ``clock_offset_recovery`` at ``recovery_time``; none without them)."""
        if "clock_offset_launch" not in record:
            return cls.none()
        day, offset = [0.0], [float(record["clock_offset_launch"])]
        if "clock_offset_recovery" in record:
            launch = np.datetime64(record["launch_time"].values, "ns")
            recovery = np.datetime64(record["recovery_time"].values, "ns")
            day.append(float((recovery - launch) / _DAY))
            offset.append(float(record["clock_offset_recovery"]))
        error = float(record.get("clock_offset_error", DEFAULT_CLOCK_READING_ERROR))
        return cls(np.array(day), np.array(offset), error)

    def __len__(self) -> int:
        return int(self.day.size)

    @property
    def measures(self) -> tuple[bool, bool]:
        """Whether the readings determine ``(c_0, c_1)`` without a prior."""
        return len(self) >= 1, len(self) >= 2

    def file_clock(self) -> tuple[float, float]:
        """``(c_0, c_1)`` (s, s/day): the line through the readings (module docstring)."""
        if len(self) == 0:
            return 0.0, 0.0
        if len(self) == 1:
            return float(self.offset[0]), 0.0
        slope = (self.offset[1] - self.offset[0]) / (self.day[1] - self.day[0])
        return float(self.offset[0] - slope * self.day[0]), float(slope)

    def _design(self) -> np.ndarray:
        return np.column_stack([np.ones(len(self)), self.day])  # (R, 2) rows a_j = (1, t_j)

    def score(self, clock_offset: float, clock_drift: float) -> np.ndarray:
        """``(2,)`` gradient of :meth:`log_likelihood` in ``(c_0, c_1)``."""
        a = self._design()
        return a.T @ (self.offset - a @ np.array([clock_offset, clock_drift])) / self.error**2

    def information(self) -> np.ndarray:
        """``(2, 2)`` ``sum_j a_j a_j^T / s^2`` (minus the Hessian of the log-likelihood)."""
        a = self._design()
        return a.T @ a / self.error**2

    def log_likelihood(self, clock_offset: float, clock_drift: float) -> float:
        """``-sum_j (m_j - c_0 - c_1 t_j)^2 / (2 s^2)`` (up to a constant)."""
        r = self.offset - clock_offset - clock_drift * self.day
        return float(-0.5 * np.sum(r * r) / self.error**2)
