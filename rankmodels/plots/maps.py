"""Map of a RAFOS float track (cartopy; Natural Earth land and coasts shipped with the package).

Inputs follow the tracking contract: ``record`` is a validated float record (``source_lat``,
``source_lon`` (source), ``launch_*``, optional ``recovery_*``, ``source_start_time`` /
``source_end_time``); ``track`` is the ``track-float`` output (``lat``, ``lon``, ``time`` (cycle),
``position_cov`` (cycle, enu, enu) km^2 or ``lat_std``/``lon_std`` degrees, ``source_lat``,
``source_lon``); ``truth`` has ``lat``, ``lon`` (cycle).

Artists carrying data have a ``gid``: "land", "coastline", "uncertainty", "track",
"track-points" (positions without a valid neighbour, which a line cannot show), "truth",
"sources", "launch", "recovery", "time-marks", "scale-bar", "scale-bar-label" and, in the inset
overview of the whole source array, "overview-sources", "overview-track" and "overview-extent"
(the outline of the main map). The graticule
is labelled with the axes' own ticks, placed where each meridian crosses the bottom edge and
each parallel the left edge of the frame (on a conic map these are not below / beside the
points where the lines would cross a rectangle in degrees).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib.dates as mdates
import numpy as np
import shapely
import xarray as xr
from matplotlib import patheffects
from matplotlib.artist import Artist
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from shapely.geometry.base import BaseGeometry

from rankmodels.plots import style
from rankmodels.plots._fields import (
    figure_text,
    isolated,
    scalar,
    span_days,
    times,
    title,
    values,
)
from rankmodels.plots.cartopy_data import natural_earth_feature
from rankmodels.plots.labels import LABEL_FONTSIZE, place_labels
from rankmodels.plots.placement import (
    INSET_SIZES,
    Box,
    candidate_boxes,
    free_box,
    growth,
    inset_size,
    points_geometry,
    polyline_geometry,
)
from rankmodels.plots.track_summary import source_names, track_kind
from rankmodels.plots.uncertainty import CONFIDENCE, position_covariance_km, uncertainty_band
from rankmodels.tracking.geometry import tangent_step

if TYPE_CHECKING:
    from cartopy.mpl.geoaxes import GeoAxes

MAP_WIDTH_IN = 9.4
"""Width of the map panel (inches); the height follows the map's aspect ratio."""
_HALO = [patheffects.withStroke(linewidth=2.5, foreground="white")]
_GRID_STEPS = (1, 2, 5, 10, 15, 20, 30)
_FINE_GRID_STEPS = (0.25, 0.5)
MIN_SPAN_DEG = 1.0
"""Least extent of a map: a degree of latitude (111 km) each way (its longitude equivalent
across), so a short record is not lost in a map mostly empty."""
_GRID_LABEL_SIZE = 8


# --------------------------------------------------------------------------------------------
# geometry of the map frame
# --------------------------------------------------------------------------------------------


def center_longitude(lons: np.ndarray) -> float:
    """Circular mean of longitudes (degrees), robust to the antimeridian."""
    rad = np.deg2rad(lons[np.isfinite(lons)])
    if rad.size == 0:
        return 0.0
    return float(np.rad2deg(np.arctan2(np.sin(rad).mean(), np.cos(rad).mean())))


def unwrap_longitude(lons: np.ndarray, center: float) -> np.ndarray:
    """Longitudes shifted by multiples of 360 into [center - 180, center + 180)."""
    return (np.asarray(lons, dtype=float) - center + 180.0) % 360.0 - 180.0 + center


def grid_degrees(lo: float, hi: float, max_lines: int) -> np.ndarray:
    """Grid-line positions over [lo, hi]: the smallest of 1, 2, 5, 10, 15, 20, 30 degrees
    giving at most ``max_lines`` lines, or a half or quarter degree when whole degrees give
    fewer than 3 (wrapped to [-180, 180))."""

    def lines(step: float) -> np.ndarray:
        return np.arange(np.ceil(lo / step) * step, hi + 1e-9, step)

    for step in _GRID_STEPS:
        ticks = lines(step)
        if ticks.size <= max_lines:
            break
    if ticks.size < 3:
        for step in reversed(_FINE_GRID_STEPS):
            if lines(step).size >= 3 or step == _FINE_GRID_STEPS[0]:
                ticks = lines(step)
                break
    return (ticks + 180.0) % 360.0 - 180.0


def map_projection(lat_min: float, lat_max: float, lon0: float):
    """Lambert conformal conic for mid/high latitudes (what Southern Ocean maps use), with
    standard parallels at 1/6 and 5/6 of the latitude range; Mercator near or across the
    equator."""
    import cartopy.crs as ccrs

    lat0 = 0.5 * (lat_min + lat_max)
    if abs(lat0) >= 20.0 and lat_min * lat_max > 0:
        span = lat_max - lat_min
        return ccrs.LambertConformal(
            central_longitude=lon0,
            central_latitude=lat0,
            standard_parallels=(lat_min + span / 6.0, lat_max - span / 6.0),
            cutoff=30.0 if lat0 < 0 else -30.0,
        )
    return ccrs.Mercator(central_longitude=lon0)


@dataclass
class MapFrame:
    """A map axes and what the drawing helpers need to know about it."""

    fig: Figure
    ax: GeoAxes
    lon0: float
    """Central longitude (degrees)."""
    visible: tuple[float, float, float, float]
    """Visible box in degrees: west, east (relative to ``lon0``), south, north."""
    per_pt: float
    """Projected units per typographic point."""

    def project(self, lon, lat) -> np.ndarray:
        """``(n, 2)`` projected x, y of lon/lat degrees (NaN stays NaN)."""
        import cartopy.crs as ccrs

        lon = np.atleast_1d(np.asarray(lon, dtype=float))
        lat = np.atleast_1d(np.asarray(lat, dtype=float))
        xy = self.ax.projection.transform_points(ccrs.Geodetic(), lon, lat)[:, :2].copy()
        xy[~(np.isfinite(lon) & np.isfinite(lat))] = np.nan
        return xy

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """Projected extent: left, right, bottom, top."""
        x0, x1, y0, y1 = self.ax.get_extent()
        return x0, x1, y0, y1


def map_frame(
    lats: np.ndarray, lons: np.ndarray, grow: tuple[float, float, float, float] = (0, 0, 0, 0)
) -> MapFrame:
    """Figure and projected axes covering the points (degrees) with a margin of 12 % of the
    latitude range and 6 % of the longitude range (each at least 0.15 degree of latitude or
    its equivalent across), at least :data:`MIN_SPAN_DEG` each way, widened by ``grow`` (left,
    right, bottom, top, projected units: room for an inset); the figure height follows the
    map's aspect ratio."""
    import cartopy.crs as ccrs

    lon0 = center_longitude(lons)
    lons = unwrap_longitude(lons, lon0)
    ok = np.isfinite(lats) & np.isfinite(lons)
    if not ok.any():
        raise ValueError("nothing to draw: no finite positions in track, sources or record")
    lat_min, lat_max = lats[ok].min(), lats[ok].max()
    lon_min, lon_max = lons[ok].min(), lons[ok].max()
    across = 1.0 / max(np.cos(np.deg2rad(0.5 * (lat_min + lat_max))), 0.05)  # lon per lat degree
    pad_lat = max(0.15, 0.12 * (lat_max - lat_min), 0.5 * (MIN_SPAN_DEG - (lat_max - lat_min)))
    pad_lon = max(
        0.15 * across,
        0.06 * (lon_max - lon_min),
        0.5 * (MIN_SPAN_DEG * across - (lon_max - lon_min)),
    )
    lat_min, lat_max = max(-89.0, lat_min - pad_lat), min(89.0, lat_max + pad_lat)

    fig = Figure(figsize=(MAP_WIDTH_IN + 1.7, 6.8), layout="constrained")
    ax = fig.add_subplot(1, 1, 1, projection=map_projection(lat_min, lat_max, lon0))
    relative = ccrs.PlateCarree(central_longitude=lon0)
    ax.set_extent([lon_min - pad_lon - lon0, lon_max + pad_lon - lon0, lat_min, lat_max], relative)
    if any(grow):
        x0, x1, y0, y1 = ax.get_extent()
        left, right, bottom, top = grow
        ax.set_extent([x0 - left, x1 + right, y0 - bottom, y1 + top], ax.projection)
    ax.set_facecolor(style.OCEAN_COLOR)
    x0, x1, y0, y1 = ax.get_extent()
    height = np.clip(MAP_WIDTH_IN * (y1 - y0) / (x1 - x0) + 1.5, 4.0, 10.0)
    fig.set_size_inches(MAP_WIDTH_IN + 1.7, height)
    visible = tuple(ax.get_extent(crs=relative))
    return MapFrame(fig, ax, lon0, visible, (x1 - x0) / (MAP_WIDTH_IN * 72.0))


# --------------------------------------------------------------------------------------------
# layers
# --------------------------------------------------------------------------------------------


def _draw_land_and_grid(frame: MapFrame) -> None:
    """Land and coastlines (shipped Natural Earth, 50m, or 110m beyond 60 degrees across),
    clipped to the visible box; dashed whole-degree graticule labelled at the frame
    (:func:`label_graticule`)."""
    import cartopy.crs as ccrs

    ax, lon0 = frame.ax, frame.lon0
    w, e, s, n = frame.visible
    clip = (w + lon0 - 2.0, e + lon0 + 2.0, max(s - 2.0, -90.0), min(n + 2.0, 90.0))
    across = max(n - s, (e - w) * np.cos(np.deg2rad(0.5 * (s + n))))
    scale = "50m" if across <= 60.0 else "110m"
    land = natural_earth_feature(
        "land", scale, extent=clip, facecolor=style.LAND_COLOR, edgecolor="none"
    )
    ax.add_feature(land, zorder=1).set_gid("land")
    coast = natural_earth_feature(
        "coastline", scale, extent=clip, edgecolor=style.COAST_COLOR, linewidth=0.6
    )
    ax.add_feature(coast, zorder=2).set_gid("coastline")
    lons = grid_degrees(w + lon0, e + lon0, 9)
    lats = grid_degrees(s, n, 12)
    ax.gridlines(
        crs=ccrs.PlateCarree(),
        draw_labels=False,
        xlocs=lons,
        ylocs=lats,
        linewidth=0.5,
        color="0.55",
        alpha=0.6,
        linestyle="--",
        zorder=2.5,
    )
    label_graticule(frame, lons, lats)


def degree_label(value: float, positive: str, negative: str) -> str:
    """'120°W', '56°S', '0°', '180°' (longitudes wrapped to [-180, 180))."""
    if positive == "E":
        value = (value + 180.0) % 360.0 - 180.0
    if value == 0 or abs(value) == 180:
        return f"{abs(value):g}°"
    return f"{abs(value):g}°{positive if value > 0 else negative}"


def edge_crossing(xy: np.ndarray, axis: int, level: float) -> float | None:
    """Along the polyline ``xy`` ``(n, 2)``, the other coordinate at the first point where
    coordinate ``axis`` crosses ``level`` (linear interpolation); None if it never does."""
    d = xy[:, axis] - level
    ok = np.isfinite(d[:-1]) & np.isfinite(d[1:])
    hit = np.flatnonzero(ok & (np.sign(d[:-1]) != np.sign(d[1:])))
    if hit.size == 0:
        return None
    i = hit[0]
    f = d[i] / (d[i] - d[i + 1])
    return float(xy[i, 1 - axis] + f * (xy[i + 1, 1 - axis] - xy[i, 1 - axis]))


def graticule_ticks(
    frame: MapFrame, lons: np.ndarray, lats: np.ndarray
) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """``(x, label)`` where each meridian crosses the bottom edge and ``(y, label)`` where each
    parallel crosses the left edge of the frame (projected units); lines leaving through
    another edge get no label, nor does one closer than a label's width to the previous."""
    x0, x1, y0, y1 = frame.bounds
    w, e, s, n = frame.visible
    lat_line = np.linspace(max(s - 5.0, -89.5), min(n + 5.0, 89.5), 4001)
    lon_line = frame.lon0 + np.linspace(w - 5.0, e + 5.0, 4001)
    xticks: list[tuple[float, str]] = []
    for lon in lons:
        x = edge_crossing(frame.project(np.full_like(lat_line, lon), lat_line), 1, y0)
        if x is not None and x0 <= x <= x1:
            xticks.append((x, degree_label(lon, "E", "W")))
    yticks: list[tuple[float, str]] = []
    for lat in lats:
        y = edge_crossing(frame.project(lon_line, np.full_like(lon_line, lat)), 0, x0)
        if y is not None and y0 <= y <= y1:
            yticks.append((y, degree_label(lat, "N", "S")))
    min_dx = 0.62 * _GRID_LABEL_SIZE * 6 * frame.per_pt
    min_dy = 1.4 * _GRID_LABEL_SIZE * frame.per_pt
    return _spaced(sorted(xticks), min_dx), _spaced(sorted(yticks), min_dy)


def _spaced(ticks: list[tuple[float, str]], gap: float) -> list[tuple[float, str]]:
    kept: list[tuple[float, str]] = []
    for pos, text in ticks:
        if not kept or pos - kept[-1][0] >= gap:
            kept.append((pos, text))
    return kept


def label_graticule(frame: MapFrame, lons: np.ndarray, lats: np.ndarray) -> None:
    """Tick marks and labels of :func:`graticule_ticks` on the bottom and left axes."""
    xticks, yticks = graticule_ticks(frame, lons, lats)
    for axis, ticks in ((frame.ax.xaxis, xticks), (frame.ax.yaxis, yticks)):
        axis.set_ticks([p for p, _ in ticks], [t for _, t in ticks])
        axis.set_visible(True)
    frame.ax.tick_params(labelsize=_GRID_LABEL_SIZE, length=3, color="0.4", direction="out")


def scale_bar_km(width_km: float) -> float:
    """The largest 1, 2 or 5 x 10^k km not longer than a fifth of ``width_km``."""
    target = 0.2 * width_km
    power = 10.0 ** np.floor(np.log10(target))
    return float(max(m * power for m in (1.0, 2.0, 5.0) if m * power <= target))


def _draw_scale_bar(frame: MapFrame) -> None:
    """A horizontal bar in the lower left corner whose length is a round number of km on the
    ground at that spot (the projection is conformal: the local scale holds in every
    direction)."""
    import cartopy.crs as ccrs

    ax = frame.ax
    x0, x1, y0, y1 = frame.bounds
    xa, ya = x0 + 0.03 * (x1 - x0), y0 + 0.05 * (y1 - y0)
    lon_a, lat_a = ccrs.Geodetic().transform_point(xa, ya, ax.projection)
    lat_b, lon_b = tangent_step(lat_a, lon_a, 1.0, 0.0)
    per_km = float(np.hypot(*(frame.project(lon_b, lat_b)[0] - (xa, ya))))
    length = scale_bar_km((x1 - x0) / per_km)
    xb = xa + length * per_km
    (bar,) = ax.plot(
        [xa, xb], [ya, ya], color="0.1", lw=2.2, solid_capstyle="butt", zorder=9,
        path_effects=_HALO, marker="|", markersize=7, markeredgewidth=1.2,
    )  # fmt: skip
    bar.set_gid("scale-bar")
    ax.annotate(
        f"{length:g} km",
        xy=(0.5 * (xa + xb), ya),
        xycoords=ax.transData,
        xytext=(0, 5),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=8,
        color="0.1",
        path_effects=_HALO,
        zorder=9,
    ).set_gid("scale-bar-label")


def _draw_uncertainty(frame: MapFrame, track: xr.Dataset, lat, lon) -> list[Artist]:
    cov = position_covariance_km(track)
    band = None if cov is None else uncertainty_band(frame.project, lat, lon, cov)
    if band is None:
        return []
    kw = {"facecolor": style.UNCERTAINTY_COLOR, "alpha": 0.35}
    frame.ax.add_geometries(
        [band], crs=frame.ax.projection, edgecolor="none", zorder=3, **kw
    ).set_gid("uncertainty")
    return [Patch(label=f"{CONFIDENCE:.0%} position uncertainty", **kw)]


def _draw_track(frame: MapFrame, xy: np.ndarray, t: np.ndarray, label: str) -> LineCollection:
    """The track as segments between consecutive valid positions, coloured by date; positions
    without a valid neighbour (a one-cycle record, a fix between gaps) as dots."""
    dates = mdates.date2num(t)
    segments = np.stack([xy[:-1], xy[1:]], axis=1)
    keep = np.isfinite(segments).all(axis=(1, 2))
    lc = LineCollection(
        segments[keep], cmap=style.TRACK_CMAP, linewidths=2.0, zorder=4, capstyle="round"
    )
    lc.set_array(dates[:-1][keep])
    finite = dates[np.isfinite(dates)]
    if finite.size:
        lc.set_clim(finite.min(), max(finite.max(), finite.min() + 1.0))
    lc.set_gid("track")
    lc.set_label(label)
    frame.ax.add_collection(lc)
    alone = isolated(np.isfinite(xy).all(axis=1) & np.isfinite(dates))
    if alone.any():
        dots = frame.ax.scatter(
            xy[alone, 0], xy[alone, 1], c=dates[alone], cmap=lc.cmap, norm=lc.norm, s=22,
            edgecolors="0.15", linewidths=0.5, zorder=4.6,
        )  # fmt: skip
        dots.set_gid("track-points")
    return lc


def time_marks(t: np.ndarray) -> tuple[np.ndarray, str]:
    """Indices of the cycles that start a new month (records longer than 90 days) or a new
    10-day period since the first cycle (shorter records), and the legend text."""
    valid = ~np.isnat(t)
    if span_days(t) > 90:
        period = np.where(valid, t.astype("datetime64[M]").astype(np.int64), -1)
        label = "first cycle of each month"
    else:
        first = t[valid].min() if valid.any() else np.datetime64(0, "ns")
        period = np.where(valid, (t - first) // np.timedelta64(10, "D"), -1)
        label = "every 10 days"
    change = np.flatnonzero(valid[1:] & (period[1:] != period[:-1])) + 1
    return change, label


def _draw_time_marks(frame: MapFrame, xy: np.ndarray, t: np.ndarray) -> list[Artist]:
    idx, label = time_marks(t)
    idx = idx[np.isfinite(xy[idx]).all(axis=1)]
    if idx.size == 0:
        return []
    kw = {"marker": "o", "edgecolors": "0.15", "linewidths": 0.6}
    frame.ax.scatter(
        xy[idx, 0], xy[idx, 1], transform=frame.ax.projection, s=11, c="white", zorder=4.7, **kw
    ).set_gid("time-marks")
    return [
        Line2D(
            [],
            [],
            ls="none",
            marker="o",
            markersize=4,
            markerfacecolor="white",
            markeredgecolor="0.15",
            markeredgewidth=0.6,
            label=label,
        )
    ]


def _draw_truth(frame: MapFrame, txy: np.ndarray) -> Line2D:
    (line,) = frame.ax.plot(
        txy[:, 0],
        txy[:, 1],
        transform=frame.ax.projection,
        color=style.TRUTH_COLOR,
        lw=0.9,
        ls=(0, (4, 2.5)),
        zorder=4.5,
        label="true track",
    )
    line.set_gid("truth")
    return line


def source_activity(
    record: xr.Dataset, n_sources: int, t0: np.datetime64, t1: np.datetime64
) -> tuple[np.ndarray, list[str]]:
    """Per source: whether it was active at any time in [t0, t1] (``source_start_time`` /
    ``source_end_time``, NaT = unbounded), and a note 'from DATE' / 'until DATE' for a period
    that starts or ends inside [t0, t1] ('' otherwise)."""
    active = np.ones(n_sources, dtype=bool)
    notes = [""] * n_sources
    bounds = {}
    for name in ("source_start_time", "source_end_time"):
        if name in record:
            bounds[name] = np.asarray(record[name].values).astype("datetime64[ns]")
    start, end = bounds.get("source_start_time"), bounds.get("source_end_time")
    for i in range(n_sources):
        parts = []
        if start is not None and not np.isnat(start[i]):
            active[i] &= start[i] <= t1
            if start[i] > t0:
                parts.append(f"from {np.datetime_as_string(start[i], unit='D')}")
        if end is not None and not np.isnat(end[i]):
            active[i] &= end[i] >= t0
            if end[i] < t1:
                parts.append(f"until {np.datetime_as_string(end[i], unit='D')}")
        notes[i] = ", ".join(parts)
    return active, notes


def sources_during(
    record: xr.Dataset, n_sources: int, t: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """:func:`source_activity` over the span of the finite times ``t`` (every source active,
    without notes, when there is none)."""
    finite_t = t[~np.isnat(t)]
    if finite_t.size == 0:
        return np.ones(n_sources, dtype=bool), [""] * n_sources
    return source_activity(record, n_sources, finite_t.min(), finite_t.max())


def _draw_sources(
    frame: MapFrame,
    names: list[str],
    sxy: np.ndarray,
    activity: tuple[np.ndarray, list[str]],
    obstacles: np.ndarray,
    markers: np.ndarray,
    avoid: list[Box],
    colors: np.ndarray | None = None,
    label: str = "sound source",
) -> list[Artist]:
    """Triangles in the source ``colors`` (default :func:`rankmodels.plots.style.source_colors`;
    hollow when inactive throughout the track: ``activity`` as :func:`sources_during`),
    labelled with the name and a partial activity period, the labels kept off the boxes to
    ``avoid`` (the inset); one legend entry, ``label``."""
    active, notes = activity
    colors = style.source_colors(len(names)) if colors is None else np.asarray(colors)
    face = colors.copy()
    face[~active] = (1.0, 1.0, 1.0, 1.0)
    edge = np.where(active[:, None], np.array([[0.1, 0.1, 0.1, 1.0]]), colors)
    ax = frame.ax
    sc = ax.scatter(
        sxy[:, 0],
        sxy[:, 1],
        transform=ax.projection,
        marker="^",
        s=95,
        c=face,
        edgecolors=edge,
        linewidths=0.9,
        zorder=6,
    )
    sc.set_gid("sources")
    shown = [figure_text(name) for name in names]
    texts = [
        f"{name}\n(inactive)" if not active[i] else (f"{name}\n{notes[i]}" if notes[i] else name)
        for i, name in enumerate(shown)
    ]
    anchors = np.where(inside_frame(frame, sxy)[:, None], sxy, np.nan)  # no label off the map
    placements = place_labels(
        anchors, texts, obstacles, markers, frame.per_pt, frame.bounds, avoid=avoid
    )
    for anchor, text, placement in zip(sxy, texts, placements, strict=True):
        if placement is None:
            continue
        dx, dy, ha, va = placement
        ax.annotate(
            text,
            xy=(anchor[0], anchor[1]),
            xycoords=ax.transData,
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=LABEL_FONTSIZE,
            color="0.1",
            linespacing=0.95,
            path_effects=_HALO,
            zorder=7,
            annotation_clip=True,
        )
    return [
        Line2D(
            [],
            [],
            ls="none",
            marker="^",
            markersize=8,
            markerfacecolor="0.6",
            markeredgecolor="0.1",
            label=label,
        )
    ]


_ENDPOINTS = {
    # gid: (marker, face colour, edge colour, marker area, legend marker size, legend label)
    "launch": ("*", style.LAUNCH_COLOR, "black", 260, 12, "launch"),
    "recovery": ("s", style.RECOVERY_COLOR, "white", 70, 7, "recovery (surfacing)"),
}


def _draw_endpoint(frame: MapFrame, gid: str, pxy: np.ndarray) -> list[Artist]:
    marker, color, edge, size, legend_size, label = _ENDPOINTS[gid]
    frame.ax.scatter(
        pxy[:, 0],
        pxy[:, 1],
        transform=frame.ax.projection,
        marker=marker,
        s=size,
        c=color,
        edgecolors=edge,
        linewidths=1.0,
        zorder=8,
    ).set_gid(gid)
    return [
        Line2D(
            [],
            [],
            ls="none",
            marker=marker,
            markersize=legend_size,
            markerfacecolor=color,
            markeredgecolor="black",
            label=label,
        )
    ]


def _draw_fixes(frame: MapFrame, track: xr.Dataset) -> list[Artist]:
    """The position fixes the track used (``fix_lat``, ``fix_lon``; gid "fixes"), as small
    open diamonds; nothing when the track has none."""
    if "fix_lat" not in track or track["fix_lat"].size == 0:
        return []
    fxy = frame.project(values(track, "fix_lon"), values(track, "fix_lat"))
    frame.ax.scatter(
        fxy[:, 0], fxy[:, 1], transform=frame.ax.projection, marker="D", s=22,
        facecolors="white", edgecolors=style.RECOVERY_COLOR, linewidths=1.0, zorder=8,
    ).set_gid("fixes")  # fmt: skip
    return [
        Line2D(
            [],
            [],
            ls="none",
            marker="D",
            markersize=5,
            markerfacecolor="white",
            markeredgecolor=style.RECOVERY_COLOR,
            label=f"GPS fix ({len(fxy)})",
        )
    ]


# --------------------------------------------------------------------------------------------
# inset overview of the source array
# --------------------------------------------------------------------------------------------

OVERVIEW_CLEARANCE_PT = 4.0
"""Least distance (typographic points) between the inset and anything drawn on the map."""
OVERVIEW_LABEL_SIZE = 6.0
"""Font size of the source names in the inset."""


def inside_frame(frame: MapFrame, xy: np.ndarray) -> np.ndarray:
    """``(n,)`` whether each projected point ``xy`` ``(n, 2)`` lies inside the map (NaN: no)."""
    x0, x1, y0, y1 = frame.bounds
    with np.errstate(invalid="ignore"):
        return (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)


@dataclass
class Overview:
    """What the inset overview shows, in its own projected coordinates."""

    projection: object
    """Its cartopy projection (:func:`map_projection` of the sources and track)."""
    extent: tuple[float, float, float, float]
    """left, right, bottom, top: the content with a margin of 8 % of the larger side."""
    outline: np.ndarray
    """``(n, 2)`` the main map's frame."""
    track: np.ndarray
    """``(cycle, 2)``."""
    sources: np.ndarray
    """``(source, 2)``."""

    @property
    def aspect(self) -> float:
        """Width over height."""
        x0, x1, y0, y1 = self.extent
        return (x1 - x0) / (y1 - y0)


def overview_view(
    frame: MapFrame, src_lat: np.ndarray, src_lon: np.ndarray, lat: np.ndarray, lon: np.ndarray
) -> Overview:
    """The inset's view of the sources, the track (NaN breaks its line) and the outline of the
    main map: a :func:`map_projection` of the sources and track, and an extent in its projected
    coordinates, so that nothing drawn is cut off (a latitude/longitude box misses the arcs of
    conic parallels: the main map's top edge bulges north of its corners)."""
    import cartopy.crs as ccrs

    all_lat, all_lon = np.concatenate([src_lat, lat]), np.concatenate([src_lon, lon])
    lon0 = center_longitude(all_lon)
    all_lon = unwrap_longitude(all_lon, lon0)
    ok = np.isfinite(all_lat) & np.isfinite(all_lon)
    projection = map_projection(all_lat[ok].min(), all_lat[ok].max(), lon0)
    x0, x1, y0, y1 = frame.bounds
    edge = np.linspace(0.0, 1.0, 50)
    outline = np.concatenate(
        [
            np.c_[x0 + (x1 - x0) * edge, np.full_like(edge, y0)],
            np.c_[np.full_like(edge, x1), y0 + (y1 - y0) * edge],
            np.c_[x1 - (x1 - x0) * edge, np.full_like(edge, y1)],
            np.c_[np.full_like(edge, x0), y1 - (y1 - y0) * edge],
        ]
    )
    oxy = projection.transform_points(frame.ax.projection, outline[:, 0], outline[:, 1])[:, :2]
    txy = projection.transform_points(ccrs.Geodetic(), lon, lat)[:, :2]
    sxy = projection.transform_points(ccrs.Geodetic(), src_lon, src_lat)[:, :2]
    content = np.concatenate([oxy, txy, sxy])
    content = content[np.isfinite(content).all(axis=1)]
    (cx0, cy0), (cx1, cy1) = content.min(axis=0), content.max(axis=0)
    pad = 0.08 * max(cx1 - cx0, cy1 - cy0)
    extent = (cx0 - pad, cx1 + pad, cy0 - pad, cy1 + pad)
    return Overview(projection, extent, oxy, txy, sxy)


def scale_bar_region(frame: MapFrame) -> BaseGeometry:
    """The box :func:`_draw_scale_bar` draws in, at most: from the lower left corner to a
    fifth of the width past the bar's start, up to the top of its label."""
    x0, x1, y0, y1 = frame.bounds
    right = x0 + 0.23 * (x1 - x0) + 6.0 * frame.per_pt
    top = y0 + 0.05 * (y1 - y0) + 18.0 * frame.per_pt
    return shapely.box(x0, y0, right, top)


def frame_with_overview(
    zoom_lat: np.ndarray,
    zoom_lon: np.ndarray,
    view_of: Callable[[MapFrame], Overview | None],
    drawn_of: Callable[[MapFrame], BaseGeometry],
) -> tuple[MapFrame, Overview | None, Box | None]:
    """The map frame of :func:`map_frame` over the points, the inset's view (``view_of(frame)``,
    None when no inset is needed) and its box on the map (projected units): the first of
    :func:`~rankmodels.plots.placement.free_box` that keeps :data:`OVERVIEW_CLEARANCE_PT`
    away from everything drawn (``drawn_of(frame)``). When there is none the map is widened
    once by an empty strip for it (:func:`~rankmodels.plots.placement.growth`), and if even
    that fails the smallest inset goes in the upper right corner."""
    frame = map_frame(zoom_lat, zoom_lon)
    for attempt in range(2):
        view = view_of(frame)
        if view is None:
            return frame, None, None
        clearance = OVERVIEW_CLEARANCE_PT * frame.per_pt
        box = free_box(frame.bounds, view.aspect, drawn_of(frame), clearance)
        if box is not None:
            return frame, view, box
        if attempt == 0:
            grow = growth(frame.bounds, view.aspect, clearance)
            frame = map_frame(zoom_lat, zoom_lon, grow)
    size = inset_size(frame.bounds, view.aspect, INSET_SIZES[-1])
    return frame, view, candidate_boxes(frame.bounds, *size)[0]


def _draw_overview(
    frame: MapFrame,
    view: Overview,
    box: Box,
    names: list[str],
    active: np.ndarray,
    colors: np.ndarray | None = None,
) -> GeoAxes:
    """Inset map at ``box`` (main map's projected units) of ``view``: land, the sources
    (triangles in their ``colors``, default :func:`rankmodels.plots.style.source_colors`,
    hollow when ``active`` is false, named), the track and the outline of the main map
    (red)."""
    import cartopy.crs as ccrs

    x0, x1, y0, y1 = frame.bounds
    bx0, bx1, by0, by1 = box
    fraction = [(bx0 - x0) / (x1 - x0), (by0 - y0) / (y1 - y0)]
    fraction += [(bx1 - bx0) / (x1 - x0), (by1 - by0) / (y1 - y0)]
    ax = frame.ax.inset_axes(fraction, projection=view.projection, zorder=10)
    ax.set_gid("overview")
    ax.set_extent(list(view.extent), view.projection)
    ax.set_facecolor(style.OCEAN_COLOR)
    corners = ccrs.PlateCarree().transform_points(
        view.projection,
        np.array([view.extent[0], view.extent[1], view.extent[0], view.extent[1]]),
        np.array([view.extent[2], view.extent[2], view.extent[3], view.extent[3]]),
    )
    lons, lats = corners[:, 0], corners[:, 1]
    clip = (lons.min() - 6.0, lons.max() + 6.0, max(lats.min() - 6.0, -90.0),
            min(lats.max() + 6.0, 90.0))  # fmt: skip
    land = natural_earth_feature(
        "land", "110m", extent=clip, facecolor=style.LAND_COLOR, edgecolor=style.COAST_COLOR,
        linewidth=0.4,
    )  # fmt: skip
    ax.add_feature(land, zorder=1)
    (line,) = ax.plot(*view.track.T, color=style.UNCERTAINTY_COLOR, lw=1.2, zorder=3)
    line.set_gid("overview-track")
    colors = style.source_colors(len(names)) if colors is None else np.asarray(colors)
    face = np.where(active[:, None], colors, (1.0, 1.0, 1.0, 1.0))
    ax.scatter(
        *view.sources.T, marker="^", s=22, c=face, edgecolors=np.where(
            active[:, None], np.array([[0.1, 0.1, 0.1, 1.0]]), colors
        ), linewidths=0.5, zorder=4,
    ).set_gid("overview-sources")  # fmt: skip
    (rect,) = ax.plot(*view.outline.T, color="#d62728", lw=1.1, zorder=5)
    rect.set_gid("overview-extent")
    ex0, ex1, ey0, ey1 = view.extent
    per_pt = (ex1 - ex0) / (fraction[2] * MAP_WIDTH_IN * 72.0)
    shown = [figure_text(name) for name in names]
    placements = place_labels(
        view.sources, shown, view.track, view.sources, per_pt, view.extent,
        fontsize=OVERVIEW_LABEL_SIZE,
    )  # fmt: skip
    for anchor, text, placement in zip(view.sources, shown, placements, strict=True):
        if placement is None:
            continue
        dx, dy, ha, va = placement
        ax.annotate(
            text, xy=tuple(anchor), xycoords=ax.transData, xytext=(dx, dy),
            textcoords="offset points", ha=ha, va=va, fontsize=OVERVIEW_LABEL_SIZE,
            color="0.15", path_effects=_HALO, zorder=6, annotation_clip=True,
        ).set_gid("overview-label")  # fmt: skip
    for spine in ax.spines.values():
        spine.set_edgecolor("0.3")
    return ax


# --------------------------------------------------------------------------------------------
# the figure
# --------------------------------------------------------------------------------------------


def track_map(record: xr.Dataset, track: xr.Dataset, truth: xr.Dataset | None = None) -> Figure:
    """Map of the estimated track with its 95 % uncertainty band, the sound sources, launch and
    recovery positions, a scale bar and, if given, the true track (dashed). The title and the
    legend say whether the track is smoothed or filtered (``smoothed`` attribute).

    The extent covers the track, launch/recovery and truth with a margin (longitudes are
    unwrapped around their circular mean, so tracks across the antimeridian work), so a short
    track is not a squiggle in a map sized for the whole array; the projection is Lambert
    conformal conic centred on them (Mercator near the equator). Sources inside that extent are
    drawn and labelled; when any source lies outside it, an inset overview
    (:func:`_draw_overview`) shows the whole source array, the track and the outline of the
    main map, placed where it covers nothing drawn on the map (:func:`frame_with_overview`).
    A track without any finite position gets the extent of the sources. Land and coastlines
    come from the shipped Natural Earth data: nothing is downloaded. The track is coloured by
    date (colour bar); sources share their colours with
    :func:`rankmodels.plots.tracking.toa_diagram`.
    """
    lat, lon = values(track, "lat"), values(track, "lon")
    if lat is None or lon is None:
        raise ValueError("track has no 'lat'/'lon' variables")
    t = times(track)
    names = source_names(track)
    src = next(
        (
            (values(ds, "source_lat"), values(ds, "source_lon"))
            for ds in (track, record)
            if "source_lat" in ds and "source_lon" in ds
        ),
        None,
    )
    if src is None:
        raise ValueError("neither track nor record has 'source_lat'/'source_lon'")
    src_lat, src_lon = src
    if src_lat.size != len(names):
        raise ValueError(f"{src_lat.size} source positions for {len(names)} source names")
    ends = {
        gid: (scalar(record, f"{gid}_lat"), scalar(record, f"{gid}_lon"))
        for gid in ("launch", "recovery")
    }
    ends = {gid: p for gid, p in ends.items() if None not in p}
    truth_ll = None
    if truth is not None and "lat" in truth and "lon" in truth:
        truth_ll = (values(truth, "lat"), values(truth, "lon"))

    pts_lat = [lat, *(np.array([p[0]]) for p in ends.values())]
    pts_lon = [lon, *(np.array([p[1]]) for p in ends.values())]
    if truth_ll is not None:
        pts_lat.append(truth_ll[0])
        pts_lon.append(truth_ll[1])
    zoom_lat, zoom_lon = np.concatenate(pts_lat), np.concatenate(pts_lon)
    if not (np.isfinite(zoom_lat) & np.isfinite(zoom_lon)).any():
        zoom_lat, zoom_lon = src_lat, src_lon  # no position at all: show the source array
    cov = position_covariance_km(track)

    def view_of(frame: MapFrame) -> Overview | None:
        if inside_frame(frame, frame.project(src_lon, src_lat)).all():
            return None
        return overview_view(frame, src_lat, src_lon, lat, lon)

    def drawn_of(frame: MapFrame) -> BaseGeometry:
        band = None if cov is None else uncertainty_band(frame.project, lat, lon, cov)
        sxy = frame.project(src_lon, src_lat)
        ends_xy = [frame.project(p[1], p[0]) for p in ends.values()]
        if "fix_lat" in track and track["fix_lat"].size:
            ends_xy.append(frame.project(values(track, "fix_lon"), values(track, "fix_lat")))
        parts = [
            polyline_geometry(frame.project(lon, lat), 3.0 * frame.per_pt),
            points_geometry(sxy[inside_frame(frame, sxy)], 6.0 * frame.per_pt),
            points_geometry(np.concatenate([np.empty((0, 2)), *ends_xy]), 9.0 * frame.per_pt),
            scale_bar_region(frame),
        ]
        if band is not None:
            parts.append(band)
        if truth_ll is not None:
            parts.append(polyline_geometry(frame.project(truth_ll[1], truth_ll[0]), frame.per_pt))
        return shapely.union_all(parts)

    frame, view, box = frame_with_overview(zoom_lat, zoom_lon, view_of, drawn_of)
    _draw_land_and_grid(frame)

    handles = _draw_uncertainty(frame, track, lat, lon)
    xy = frame.project(lon, lat)
    kind = track_kind(track)
    lc = _draw_track(frame, xy, t, kind)
    handles.append(Line2D([], [], color=lc.cmap(0.5), lw=2.0, label=lc.get_label()))
    obstacles = [xy]
    if truth_ll is not None:
        txy = frame.project(truth_ll[1], truth_ll[0])
        handles.append(_draw_truth(frame, txy))
        obstacles.append(txy)
    handles += _draw_time_marks(frame, xy, t)
    sxy = frame.project(src_lon, src_lat)
    end_xy = {gid: frame.project(p[1], p[0]) for gid, p in ends.items()}
    markers = np.concatenate([sxy, *end_xy.values()])
    activity = sources_during(record, len(names), t)
    avoid = [] if box is None else [box]
    handles += _draw_sources(frame, names, sxy, activity, np.concatenate(obstacles), markers, avoid)
    for gid, pxy in end_xy.items():
        handles += _draw_endpoint(frame, gid, pxy)
    handles += _draw_fixes(frame, track)
    if view is not None and box is not None:
        _draw_overview(frame, view, box, names, activity[0])

    fig = frame.fig
    ncols = len(handles) if len(handles) <= 5 else (len(handles) + 1) // 2
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols, fontsize=8, frameon=False)
    cbar = fig.colorbar(lc, ax=frame.ax, shrink=0.82, pad=0.02, aspect=30)
    cbar.set_label("date of listening cycle", fontsize=9)
    style.date_axis(cbar.ax.yaxis, span_days(t))
    cbar.ax.tick_params(labelsize=8)
    _draw_scale_bar(frame)
    frame.ax.set_title(title(track, record, kind), fontsize=11, loc="left")
    return fig
