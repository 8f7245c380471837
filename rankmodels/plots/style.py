"""Shared look of the tracking figures: one colour per sound source, clutter style, date axes.

A source has the same colour on the map (its triangle) and on the TOA diagram (its arrivals and its
predicted TOA curve), so the two figures can be read together.
"""

from __future__ import annotations

import matplotlib.dates as mdates
import numpy as np
from matplotlib import colormaps
from matplotlib.axis import Axis

CLUTTER_COLOR = "0.35"
TRACK_CMAP = "viridis"
UNCERTAINTY_COLOR = "#6a8caf"
TRUTH_COLOR = "0.1"
LAND_COLOR = "#e8e4d8"
COAST_COLOR = "0.35"
OCEAN_COLOR = "#f3f7fa"
LAUNCH_COLOR = "#2ca02c"
RECOVERY_COLOR = "#d62728"
FIGURE_DPI = 150


def source_colors(n: int) -> np.ndarray:
    """``(n, 4)`` RGBA colours, one per source, distinct and stable for a given ``n``.

    Up to 10 sources use ``tab10``; more use ``tab20`` with the saturated shades first, then the
    light ones (20 distinct colours), cycling beyond that.
    """
    if n < 0:
        raise ValueError(f"number of sources must be >= 0, got {n}")
    if n <= 10:
        return np.asarray(colormaps["tab10"](np.arange(n)))
    order = np.r_[np.arange(0, 20, 2), np.arange(1, 20, 2)]
    return np.asarray(colormaps["tab20"](order[np.arange(n) % 20]))


def date_axis(axis: Axis, span_days: float) -> None:
    """Readable date ticks on ``axis``: months for long records, days for short ones."""
    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.DateFormatter("%Y-%m" if span_days > 90 else "%Y-%m-%d"))
