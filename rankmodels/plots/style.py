"""Shared look of the tracking figures: one colour per sound source, clutter style, date axes.

A source has the same colour on the map (its triangle) and on the TOA diagram (its arrivals and its
predicted TOA curve), so the two figures can be read together. Source colours are all chromatic
(the greys of the tab palettes are left out); clutter, launch and recovery are achromatic (grey,
white, black), so none of them can be mistaken for a source.
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
LAUNCH_COLOR = "white"
"""Launch star: white with a black edge (the track starts dark in viridis)."""
RECOVERY_COLOR = "black"
"""Recovery square: black with a white edge (the track ends light in viridis)."""
FIGURE_DPI = 150


_TAB10_GREY = 7
_TAB20_GREYS = (14, 15)


def source_colors(n: int) -> np.ndarray:
    """``(n, 4)`` RGBA colours, one per source, chromatic, distinct and stable for a given ``n``.

    Up to 9 sources use ``tab10`` without its grey; more use ``tab20`` without its two greys,
    the saturated shades first, then the light ones (18 distinct colours), cycling beyond that.
    """
    if n < 0:
        raise ValueError(f"number of sources must be >= 0, got {n}")
    if n <= 9:
        order = np.delete(np.arange(10), _TAB10_GREY)
        return np.asarray(colormaps["tab10"](order[:n]))
    order = np.r_[np.arange(0, 20, 2), np.arange(1, 20, 2)]
    order = order[~np.isin(order, _TAB20_GREYS)]
    return np.asarray(colormaps["tab20"](order[np.arange(n) % order.size]))


def date_axis(axis: Axis, span_days: float) -> None:
    """Readable date ticks on ``axis``: months for long records, days for short ones (whole
    days only: a record of a few cycles gets no repeated day labels at hours)."""
    if span_days < 7:
        locator = mdates.DayLocator()
    else:
        locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.DateFormatter("%Y-%m" if span_days > 90 else "%Y-%m-%d"))
