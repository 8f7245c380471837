"""Figures of a RAFOS float track: map, TOA diagram and filter diagnostics.

All functions build a fresh :class:`matplotlib.figure.Figure` with the object-oriented API (no
pyplot state, thread-safe, nothing leaks); save it with ``fig.savefig(path, dpi=FIGURE_DPI)``.

Inputs follow the tracking contract: ``record`` is a validated float record (``source_lat``,
``source_lon`` (source), ``launch_*``, optional ``recovery_*``, ``source_start_time`` /
``source_end_time``, ``window_length``); ``track`` is the ``track-float`` output (``lat``, ``lon``,
``lat_std``, ``lon_std`` (cycle) in degrees, ``position_cov`` (cycle, enu, enu) in km^2,
``association``, ``association_prob``, ``toa`` (cycle, rank), ``predicted_toa`` (cycle, source),
``ess``, ``loglik`` (cycle)); ``truth`` has ``lat``, ``lon`` (cycle).

Every artist that carries data has a ``gid`` ("track", "uncertainty", "sources", "launch",
"recovery", "truth", "land", "coastline", "arrivals-<source>", "clutter", "predicted-<source>",
"ess", "loglik", "collapsed") so tests and callers can find it.
"""

from __future__ import annotations

import matplotlib.dates as mdates
import numpy as np
import xarray as xr
from matplotlib import patheffects
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from rankmodels.plots import style
from rankmodels.plots.cartopy_data import natural_earth_feature
from rankmodels.plots.track_summary import (
    CLUTTER,
    attr_flag,
    collapsed_cycles,
    source_names,
    source_table,
)
from rankmodels.tracking.geometry import tangent_offsets, tangent_step

CONFIDENCE = 0.95
ELLIPSE_SCALE = float(np.sqrt(-2.0 * np.log(1.0 - CONFIDENCE)))
"""Mahalanobis radius of the 95 % region of a 2-D Gaussian: chi^2_2 quantile = -2 ln(1 - 0.95)."""
_ELLIPSE_POINTS = 36
_MAP_WIDTH_IN = 9.4
_HALO = [patheffects.withStroke(linewidth=2.5, foreground="white")]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _values(ds: xr.Dataset | None, name: str) -> np.ndarray | None:
    """``ds[name]`` as a float array, or None when absent."""
    if ds is None or name not in ds:
        return None
    return np.asarray(ds[name].values, dtype=float)


def _times(ds: xr.Dataset) -> np.ndarray:
    """The ``time`` (cycle) values as datetime64[ns]."""
    if "time" not in ds.coords and "time" not in ds:
        raise ValueError("dataset has no 'time' coordinate along 'cycle'")
    return np.asarray(ds["time"].values).astype("datetime64[ns]")


def _float_id(*datasets: xr.Dataset | None) -> str:
    for ds in datasets:
        if ds is not None and "float_id" in ds.attrs:
            return str(ds.attrs["float_id"])
    return "?"


def _span_days(times: np.ndarray) -> float:
    finite = times[~np.isnat(times)]
    if finite.size < 2:
        return 0.0
    return float((finite.max() - finite.min()) / np.timedelta64(1, "D"))


def _center_lon(lons: np.ndarray) -> float:
    """Circular mean of longitudes (degrees), robust to the antimeridian."""
    rad = np.deg2rad(lons[np.isfinite(lons)])
    if rad.size == 0:
        return 0.0
    return float(np.rad2deg(np.arctan2(np.sin(rad).mean(), np.cos(rad).mean())))


def _wrap(lons: np.ndarray, center: float) -> np.ndarray:
    """Longitudes shifted by multiples of 360 into [center - 180, center + 180)."""
    return (np.asarray(lons, dtype=float) - center + 180.0) % 360.0 - 180.0 + center


def _scalar(record: xr.Dataset | None, name: str) -> float | None:
    val = _values(record, name)
    if val is None or val.size != 1 or not np.isfinite(val.item()):
        return None
    return float(val.item())


def _nice_degrees(lo: float, hi: float, steps: tuple[int, ...], max_lines: int) -> np.ndarray:
    """Grid-line positions in whole degrees over [lo, hi]: the smallest step of ``steps``
    giving at most ``max_lines`` lines (longitudes wrapped to [-180, 180))."""
    for step in steps:
        ticks = np.arange(np.ceil(lo / step) * step, hi + 1e-9, step)
        if ticks.size <= max_lines:
            break
    return (ticks + 180.0) % 360.0 - 180.0


def _map_projection(lat_min: float, lat_max: float, lon0: float):
    """Lambert conformal conic for mid/high latitudes (what Southern Ocean maps use), Mercator
    near the equator or across it."""
    import cartopy.crs as ccrs

    lat0 = 0.5 * (lat_min + lat_max)
    if abs(lat0) >= 20.0 and lat_min * lat_max > 0:
        span = lat_max - lat_min
        parallels = (lat_min + span / 6.0, lat_max - span / 6.0)
        return ccrs.LambertConformal(
            central_longitude=lon0,
            central_latitude=lat0,
            standard_parallels=parallels,
            cutoff=30.0 if lat0 < 0 else -30.0,
        )
    return ccrs.Mercator(central_longitude=lon0)


def _project(proj, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """``(n, 2)`` projected x, y of lon/lat degrees (NaN stays NaN)."""
    import cartopy.crs as ccrs

    lon = np.atleast_1d(np.asarray(lon, dtype=float))
    lat = np.atleast_1d(np.asarray(lat, dtype=float))
    xyz = proj.transform_points(ccrs.Geodetic(), lon, lat)
    xy = xyz[:, :2].copy()
    xy[~(np.isfinite(lon) & np.isfinite(lat))] = np.nan
    return xy


def position_covariance_km(track: xr.Dataset) -> np.ndarray | None:
    """``(cycle, 2, 2)`` east/north position covariance in km^2.

    From ``position_cov`` (cycle, enu, enu) when present, else the diagonal built from
    ``lat_std``/``lon_std`` (degrees) converted in the local tangent plane (north = R dlat,
    east = R cos(lat) dlon, :func:`rankmodels.tracking.geometry.tangent_offsets`).
    None when the track carries no uncertainty.
    """
    if "position_cov" in track:
        # the contract's dims are (cycle, enu, enu); repeated dims rule out xarray's transpose
        var = track["position_cov"]
        cov = np.moveaxis(np.asarray(var.values, dtype=float), var.dims.index("cycle"), 0)
        if cov.shape[1:] != (2, 2):
            raise ValueError(f"track 'position_cov' has shape {cov.shape}; expected (cycle, 2, 2)")
        return cov
    lat_std, lon_std = _values(track, "lat_std"), _values(track, "lon_std")
    if lat_std is None or lon_std is None:
        return None
    lat, lon = _values(track, "lat"), _values(track, "lon")
    sd_east, sd_north = tangent_offsets(lat, lon, lat + lat_std, lon + lon_std)
    cov = np.zeros((lat.size, 2, 2))
    cov[:, 0, 0] = sd_east**2
    cov[:, 1, 1] = sd_north**2
    return cov


def confidence_ellipses(
    lat: np.ndarray, lon: np.ndarray, cov_km: np.ndarray, n_points: int = _ELLIPSE_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """Boundaries of the 95 % confidence ellipses, as ``(cycle, n_points)`` lat and lon arrays.

    For a Gaussian position error with east/north covariance C (km^2) the 95 % region is
    {d : d^T C^-1 d <= k^2}, k^2 = -2 ln 0.05 (chi^2 with 2 degrees of freedom). Its boundary is
    d(t) = k V diag(sqrt(lambda)) [cos t, sin t] (C = V diag(lambda) V^T), mapped to degrees with
    the local tangent plane (:func:`rankmodels.tracking.geometry.tangent_step`).
    """
    lam, vec = np.linalg.eigh(cov_km)  # (n, 2), (n, 2, 2)
    lam = np.clip(lam, 0.0, None)
    t = np.linspace(0.0, 2.0 * np.pi, n_points, endpoint=False)
    circle = np.stack([np.cos(t), np.sin(t)])  # (2, m)
    axes = vec * np.sqrt(lam)[:, None, :]  # columns scaled by the axis lengths
    d = ELLIPSE_SCALE * np.einsum("nij,jm->nim", axes, circle)  # (n, 2 [east, north], m)
    return tangent_step(lat[:, None], lon[:, None], d[:, 0], d[:, 1])


def _source_activity(
    record: xr.Dataset, n_sources: int, t0: np.datetime64, t1: np.datetime64
) -> tuple[np.ndarray, list[str]]:
    """Per source: whether it was active at any time in [t0, t1], and a label suffix for a
    partial activity period ('' when active throughout or when no period is given)."""
    active = np.ones(n_sources, dtype=bool)
    notes = [""] * n_sources
    start = end = None
    if "source_start_time" in record:
        start = np.asarray(record["source_start_time"].values).astype("datetime64[ns]")
    if "source_end_time" in record:
        end = np.asarray(record["source_end_time"].values).astype("datetime64[ns]")
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


def _source_positions(record: xr.Dataset, track: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    for ds in (track, record):
        lat, lon = _values(ds, "source_lat"), _values(ds, "source_lon")
        if lat is not None and lon is not None:
            return lat, lon
    raise ValueError("neither track nor record has 'source_lat'/'source_lon'")


# --------------------------------------------------------------------------------------------
# map
# --------------------------------------------------------------------------------------------


def track_map(record: xr.Dataset, track: xr.Dataset, truth: xr.Dataset | None = None) -> Figure:
    """Map of the estimated track with its 95 % uncertainty band, the sound sources, launch and
    recovery positions and, if given, the true track (dashed).

    The extent covers sources, track, launch/recovery and truth with a margin; the projection is
    Lambert conformal conic centred on them (Mercator near the equator). Land and coastlines come
    from the shipped Natural Earth data (50m, or 110m for very large extents): nothing is
    downloaded. The track is coloured by date (colour bar).
    """
    import cartopy.crs as ccrs
    from cartopy.mpl.geoaxes import GeoAxes

    lat = _values(track, "lat")
    lon = _values(track, "lon")
    if lat is None or lon is None:
        raise ValueError("track has no 'lat'/'lon' variables")
    times = _times(track)
    names = source_names(track)
    src_lat, src_lon = _source_positions(record, track)
    if src_lat.size != len(names):
        raise ValueError(f"{src_lat.size} source positions for {len(names)} source names")
    launch = (_scalar(record, "launch_lat"), _scalar(record, "launch_lon"))
    recovery = (_scalar(record, "recovery_lat"), _scalar(record, "recovery_lon"))
    truth_lat, truth_lon = _values(truth, "lat"), _values(truth, "lon")

    # extent from everything drawn, longitudes unwrapped around their circular mean
    all_lat = [lat, src_lat]
    all_lon = [lon, src_lon]
    for pair in (launch, recovery):
        if None not in pair:
            all_lat.append(np.array([pair[0]]))
            all_lon.append(np.array([pair[1]]))
    if truth_lat is not None and truth_lon is not None:
        all_lat.append(truth_lat)
        all_lon.append(truth_lon)
    lats = np.concatenate(all_lat)
    lon0 = _center_lon(np.concatenate(all_lon))
    lons = _wrap(np.concatenate(all_lon), lon0)
    ok = np.isfinite(lats) & np.isfinite(lons)
    if not ok.any():
        raise ValueError("nothing to draw: no finite positions in track, sources or record")
    lat_min, lat_max = lats[ok].min(), lats[ok].max()
    lon_min, lon_max = lons[ok].min(), lons[ok].max()
    pad_lat = max(1.0, 0.12 * (lat_max - lat_min))
    pad_lon = max(2.0, 0.06 * (lon_max - lon_min))
    lat_min, lat_max = max(-89.0, lat_min - pad_lat), min(89.0, lat_max + pad_lat)
    lon_min, lon_max = lon_min - pad_lon, lon_max + pad_lon

    proj = _map_projection(lat_min, lat_max, lon0)
    fig = Figure(figsize=(_MAP_WIDTH_IN + 1.7, 6.8), layout="constrained")
    ax = fig.add_subplot(1, 1, 1, projection=proj)
    assert isinstance(ax, GeoAxes)
    ax.set_extent(
        [lon_min - lon0, lon_max - lon0, lat_min, lat_max],
        crs=ccrs.PlateCarree(central_longitude=lon0),
    )
    ax.set_facecolor(style.OCEAN_COLOR)
    x0, x1, y0, y1 = ax.get_extent()
    fig.set_size_inches(
        _MAP_WIDTH_IN + 1.7, np.clip(_MAP_WIDTH_IN * (y1 - y0) / (x1 - x0) + 1.5, 4, 10)
    )
    data_per_pt = (x1 - x0) / (_MAP_WIDTH_IN * 72.0)

    # land and coastlines from the shipped Natural Earth files, clipped to the visible box
    vis = ax.get_extent(crs=ccrs.PlateCarree(central_longitude=lon0))
    clip = (
        vis[0] + lon0 - 2.0,
        vis[1] + lon0 + 2.0,
        max(vis[2] - 2.0, -90.0),
        min(vis[3] + 2.0, 90.0),
    )
    deg_span = max(vis[3] - vis[2], (vis[1] - vis[0]) * np.cos(np.deg2rad(0.5 * (vis[2] + vis[3]))))
    scale = "50m" if deg_span <= 60.0 else "110m"
    land = ax.add_feature(
        natural_earth_feature(
            "land", scale, extent=clip, facecolor=style.LAND_COLOR, edgecolor="none"
        ),
        zorder=1,
    )
    land.set_gid("land")
    coast = ax.add_feature(
        natural_earth_feature(
            "coastline", scale, extent=clip, edgecolor=style.COAST_COLOR, linewidth=0.6
        ),
        zorder=2,
    )
    coast.set_gid("coastline")

    gl = ax.gridlines(
        crs=ccrs.PlateCarree(),
        draw_labels=True,
        x_inline=False,
        y_inline=False,
        linewidth=0.5,
        color="0.55",
        alpha=0.6,
        linestyle="--",
        xlocs=_nice_degrees(vis[0] + lon0, vis[1] + lon0, (1, 2, 5, 10, 15, 20, 30), 9),
        ylocs=_nice_degrees(vis[2], vis[3], (1, 2, 5, 10, 15, 20, 30), 12),
        rotate_labels=False,
        zorder=2.5,
    )
    gl.top_labels = False
    gl.right_labels = False
    gl.xlabel_style = {"size": 8}
    gl.ylabel_style = {"size": 8}

    handles: list = []
    # uncertainty band: union of the per-cycle 95 % ellipses
    cov = position_covariance_km(track)
    if cov is not None:
        band = _uncertainty_band(proj, lat, lon, cov)
        if band is not None:
            artist = ax.add_geometries(
                [band],
                crs=proj,
                facecolor=style.UNCERTAINTY_COLOR,
                edgecolor="none",
                alpha=0.35,
                zorder=3,
            )
            artist.set_gid("uncertainty")
            handles.append(
                Patch(
                    facecolor=style.UNCERTAINTY_COLOR,
                    alpha=0.35,
                    label=f"{CONFIDENCE:.0%} position uncertainty",
                )
            )

    # track coloured by date
    xy = _project(proj, lon, lat)
    dates = mdates.date2num(times)
    segments = np.stack([xy[:-1], xy[1:]], axis=1)
    keep = np.isfinite(segments).all(axis=(1, 2))
    track_lc = LineCollection(
        segments[keep], cmap=style.TRACK_CMAP, linewidths=2.0, zorder=4, capstyle="round"
    )
    track_lc.set_array(dates[:-1][keep])
    finite_dates = dates[np.isfinite(dates)]
    if finite_dates.size:
        track_lc.set_clim(finite_dates.min(), max(finite_dates.max(), finite_dates.min() + 1))
    track_lc.set_gid("track")
    ax.add_collection(track_lc)
    smoothed = bool(attr_flag(track.attrs, "smoothed"))
    handles.append(
        Line2D(
            [],
            [],
            color=track_lc.cmap(0.5),
            lw=2.0,
            label="estimated track" + (" (smoothed)" if smoothed else ""),
        )
    )

    if truth_lat is not None and truth_lon is not None:
        txy = _project(proj, truth_lon, truth_lat)
        (truth_line,) = ax.plot(
            txy[:, 0],
            txy[:, 1],
            transform=proj,
            color=style.TRUTH_COLOR,
            lw=0.9,
            ls=(0, (4, 2.5)),
            zorder=4.5,
            label="true track",
        )
        truth_line.set_gid("truth")
        handles.append(truth_line)

    # sound sources: filled triangles in the source colour, hollow if inactive over the track
    colors = style.source_colors(len(names))
    finite_t = times[~np.isnat(times)]
    t0, t1 = (finite_t.min(), finite_t.max()) if finite_t.size else (None, None)
    if t0 is not None:
        active, notes = _source_activity(record, len(names), t0, t1)
    else:
        active, notes = np.ones(len(names), dtype=bool), [""] * len(names)
    sxy = _project(proj, src_lon, src_lat)
    face = colors.copy()
    face[~active] = (1.0, 1.0, 1.0, 1.0)
    edge = np.where(active[:, None], np.array([[0.1, 0.1, 0.1, 1.0]]), colors)
    sources_sc = ax.scatter(
        sxy[:, 0],
        sxy[:, 1],
        transform=proj,
        marker="^",
        s=95,
        c=face,
        edgecolors=edge,
        linewidths=0.9,
        zorder=6,
    )
    sources_sc.set_gid("sources")
    texts = [
        f"{name}\n(inactive)" if not active[i] else (f"{name}\n{notes[i]}" if notes[i] else name)
        for i, name in enumerate(names)
    ]
    obstacles = [xy]
    if truth_lat is not None and truth_lon is not None:
        obstacles.append(txy)
    markers = [sxy] + [_project(proj, p[1], p[0]) for p in (launch, recovery) if None not in p]
    placements = _place_labels(
        sxy,
        texts,
        np.concatenate(obstacles),
        np.concatenate(markers),
        data_per_pt,
        (x0, x1, y0, y1),
    )
    for i, text in enumerate(texts):
        if placements[i] is None:
            continue
        dx, dy, ha, va = placements[i]
        ax.annotate(
            text,
            xy=(sxy[i, 0], sxy[i, 1]),
            xycoords=ax.transData,
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=_LABEL_FONTSIZE,
            color="0.1",
            linespacing=0.95,
            path_effects=_HALO,
            zorder=7,
            annotation_clip=True,
        )
    handles.append(
        Line2D(
            [],
            [],
            ls="none",
            marker="^",
            markersize=8,
            markerfacecolor="0.6",
            markeredgecolor="0.1",
            label="sound source",
        )
    )

    for (plat, plon), gid, marker, color, size, label in (
        (launch, "launch", "*", style.LAUNCH_COLOR, 230, "launch"),
        (recovery, "recovery", "s", style.RECOVERY_COLOR, 80, "recovery (surfacing)"),
    ):
        if None in (plat, plon):
            continue
        pxy = _project(proj, plon, plat)
        sc = ax.scatter(
            pxy[:, 0],
            pxy[:, 1],
            transform=proj,
            marker=marker,
            s=size,
            c=color,
            edgecolors="k",
            linewidths=0.8,
            zorder=8,
        )
        sc.set_gid(gid)
        handles.append(
            Line2D(
                [],
                [],
                ls="none",
                marker=marker,
                markersize=11 if marker == "*" else 7,
                markerfacecolor=color,
                markeredgecolor="k",
                label=label,
            )
        )

    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    cbar = fig.colorbar(track_lc, ax=ax, shrink=0.82, pad=0.02, aspect=30)
    cbar.set_label("date of listening cycle", fontsize=9)
    style.date_axis(cbar.ax.yaxis, _span_days(times))
    cbar.ax.tick_params(labelsize=8)
    ax.set_title(_title(track, record, "estimated track"), fontsize=11, loc="left")
    return fig


_LABEL_FONTSIZE = 7.5
_LABEL_CANDIDATES = (
    (7.0, 4.0, "left", "bottom"),
    (-7.0, 4.0, "right", "bottom"),
    (7.0, -4.0, "left", "top"),
    (-7.0, -4.0, "right", "top"),
    (0.0, 9.0, "center", "bottom"),
    (0.0, -9.0, "center", "top"),
)


def _label_box(
    anchor: np.ndarray, cand: tuple[float, float, str, str], w: float, h: float, per_pt: float
) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) of a ``w`` x ``h`` text box placed at ``anchor`` + offset."""
    dx, dy, ha, va = cand
    x, y = anchor[0] + dx * per_pt, anchor[1] + dy * per_pt
    left = {"left": x, "right": x - w, "center": x - w / 2}[ha]
    bottom = {"bottom": y, "top": y - h}[va]
    return left, left + w, bottom, bottom + h


def _place_labels(
    anchors: np.ndarray,
    texts: list[str],
    obstacles: np.ndarray,
    markers: np.ndarray,
    data_per_pt: float,
    bounds: tuple[float, float, float, float],
) -> list[tuple[float, float, str, str] | None]:
    """Greedy label placement: for each anchor (projected x, y) pick the offset among
    ``_LABEL_CANDIDATES`` whose estimated text box covers the fewest obstacle points (the track),
    ``markers`` other than the anchor itself, already placed labels, and stays inside ``bounds``.
    None for NaN anchors."""
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float, str, str] | None] = []
    obstacles = obstacles[np.isfinite(obstacles).all(axis=1)]
    marker_r = 6.0 * data_per_pt
    for anchor, text in zip(anchors, texts, strict=True):
        if not np.isfinite(anchor).all():
            out.append(None)
            continue
        lines = text.split("\n")
        w = (0.56 * _LABEL_FONTSIZE * max(len(line) for line in lines) + 2.0) * data_per_pt
        h = 1.2 * _LABEL_FONTSIZE * len(lines) * data_per_pt
        best, best_box, best_cost = _LABEL_CANDIDATES[0], (0.0, 0.0, 0.0, 0.0), np.inf
        for cand in _LABEL_CANDIDATES:
            box = _label_box(anchor, cand, w, h, data_per_pt)
            inside = (
                (obstacles[:, 0] >= box[0])
                & (obstacles[:, 0] <= box[1])
                & (obstacles[:, 1] >= box[2])
                & (obstacles[:, 1] <= box[3])
            )
            others = markers[np.any(markers != anchor, axis=1)]
            hit_markers = (
                (others[:, 0] >= box[0] - marker_r)
                & (others[:, 0] <= box[1] + marker_r)
                & (others[:, 1] >= box[2] - marker_r)
                & (others[:, 1] <= box[3] + marker_r)
            )
            overlaps = sum(
                box[0] < p[1] and p[0] < box[1] and box[2] < p[3] and p[2] < box[3] for p in placed
            )
            outside = (
                box[0] < bounds[0] or box[1] > bounds[1] or box[2] < bounds[2] or box[3] > bounds[3]
            )
            cost = inside.sum() + 50.0 * hit_markers.sum() + 100.0 * overlaps + 200.0 * outside
            if cost < best_cost:
                best, best_box, best_cost = cand, box, cost
        placed.append(best_box)
        out.append(best)
    return out


def _uncertainty_band(proj, lat: np.ndarray, lon: np.ndarray, cov: np.ndarray):
    """Union (shapely geometry in projected coordinates) of the per-cycle 95 % ellipses."""
    import shapely

    ok = np.isfinite(lat) & np.isfinite(lon) & np.isfinite(cov).all(axis=(1, 2))
    if not ok.any():
        return None
    elat, elon = confidence_ellipses(lat[ok], lon[ok], cov[ok])
    xy = _project(proj, elon.ravel(), elat.ravel()).reshape(elat.shape + (2,))
    polygons = shapely.polygons(xy)
    polygons = polygons[shapely.is_valid(polygons) & (shapely.area(polygons) > 0)]
    if polygons.size == 0:
        return None
    return shapely.union_all(polygons)


def _title(track: xr.Dataset, record: xr.Dataset | None, what: str) -> str:
    times = _times(track)
    finite = times[~np.isnat(times)]
    span = ""
    if finite.size:
        span = (
            f", {np.datetime_as_string(finite.min(), unit='D')}"
            f" to {np.datetime_as_string(finite.max(), unit='D')}"
        )
    simulated = bool(attr_flag(track.attrs, "simulated")) or (
        record is not None and bool(attr_flag(record.attrs, "simulated"))
    )
    extra = " (simulated record)" if simulated else ""
    return f"RAFOS float {_float_id(track, record)}: {what}{span}{extra}"


# --------------------------------------------------------------------------------------------
# TOA diagram
# --------------------------------------------------------------------------------------------


def _arrivals(ax, x, y, probs, rgba, gid: str, **kwargs) -> None:
    """Scatter of arrivals in colour ``rgba`` with opacity 0.15 + 0.85 p (p = probability)."""
    colors = np.tile(np.asarray(rgba, dtype=float), (max(len(x), 1), 1))
    colors[: len(x), 3] = 0.15 + 0.85 * np.nan_to_num(np.clip(probs, 0.0, 1.0), nan=0.0)
    marker = kwargs.pop("marker", "o")
    style_kw = {"linewidths": 0.8} if marker == "x" else {"edgecolors": "none"}
    sc = ax.scatter(x, y, c=colors, marker=marker, zorder=3, **style_kw, **kwargs)
    sc.set_gid(gid)


def toa_diagram(record: xr.Dataset, track: xr.Dataset) -> Figure:
    """Arrival times against date, each arrival coloured by its most probable source.

    Dots: recorded arrivals, in the colour of the source the filter associates them with; the
    opacity grows with the association probability (alpha = 0.15 + 0.85 p). Grey crosses:
    arrivals called clutter. Lines: each source's predicted TOA at the posterior track
    (``predicted_toa``), gaps where the source is inactive. The y range is the listening window
    when ``window_length`` is known.
    """
    names = source_names(track)
    times = _times(track)
    toa_src = track if "toa" in track else record
    toa = np.asarray(toa_src["toa"].transpose("cycle", "rank").values, dtype=float)
    rows = source_table(track)
    labels = np.asarray(track["association"].transpose("cycle", "rank").values)
    probs = np.asarray(track["association_prob"].transpose("cycle", "rank").values, dtype=float)
    if toa.shape != labels.shape:
        raise ValueError(f"'toa' has shape {toa.shape} but 'association' has {labels.shape}")
    tt = np.broadcast_to(times[:, None], toa.shape)
    colors = style.source_colors(len(names))

    fig = Figure(figsize=(11.0, 5.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    predicted = None
    if "predicted_toa" in track:
        predicted = np.asarray(
            track["predicted_toa"].transpose("cycle", "source").values, dtype=float
        )
        for i, name in enumerate(names):
            (line,) = ax.plot(times, predicted[:, i], color=colors[i], lw=0.9, alpha=0.75, zorder=2)
            line.set_gid(f"predicted-{name}")

    recorded = np.isfinite(toa)
    for i, name in enumerate(names):
        mask = recorded & (labels == i)
        _arrivals(ax, tt[mask], toa[mask], probs[mask], colors[i], f"arrivals-{name}", s=11)
    mask = recorded & (labels == CLUTTER)
    clutter_rgba = to_rgba(style.CLUTTER_COLOR)
    _arrivals(ax, tt[mask], toa[mask], probs[mask], clutter_rgba, "clutter", s=14, marker="x")

    window = _scalar(record, "window_length")
    if window is not None:
        ax.set_ylim(0.0, window)
    elif recorded.any():
        lo, hi = np.nanmin(toa), np.nanmax(toa)
        pad = 0.04 * max(hi - lo, 1.0)
        ax.set_ylim(lo - pad, hi + pad)
    finite_t = times[~np.isnat(times)]
    if finite_t.size:
        ax.set_xlim(finite_t.min(), finite_t.max() + np.timedelta64(1, "D"))
    style.date_axis(ax.xaxis, _span_days(times))
    ax.set_ylabel("time of arrival after window start (s)")
    ax.set_xlabel("date")
    ax.grid(True, lw=0.4, color="0.85")
    ax.set_axisbelow(True)

    line_style = "-" if predicted is not None else "none"
    legend_handles = [
        Line2D(
            [],
            [],
            ls=line_style,
            lw=1.1,
            marker="o",
            markersize=5,
            color=colors[i],
            label=f"{name} ({rows[i].arrivals})",
        )
        for i, name in enumerate(names)
    ]
    legend_handles.append(
        Line2D(
            [],
            [],
            ls="none",
            marker="x",
            color="0.3",
            markersize=6,
            label=f"clutter ({rows[-1].arrivals})",
        )
    )
    ax.legend(
        handles=legend_handles,
        title="most probable source\n(count of arrivals)",
        title_fontsize=8,
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    ax.set_title(_title(track, record, "arrival times"), fontsize=11, loc="left", pad=16)
    ax.annotate(
        "dots: recorded arrivals by most probable source (opacity = association probability); "
        "lines: predicted TOA at the estimated track",
        xy=(0.0, 1.0),
        xycoords="axes fraction",
        xytext=(0, 3),
        textcoords="offset points",
        fontsize=8,
        color="0.35",
        va="bottom",
        ha="left",
    )
    return fig


# --------------------------------------------------------------------------------------------
# diagnostics
# --------------------------------------------------------------------------------------------


def diagnostics(track: xr.Dataset) -> Figure:
    """Effective sample size and per-cycle predictive log-likelihood log p(T_t | T_1:t-1) over
    time; cycles where the filter collapsed (see ``track_summary.collapsed_cycles``) in red."""
    times = _times(track)
    ess = _values(track, "ess")
    loglik = _values(track, "loglik")
    if ess is None or loglik is None:
        raise ValueError("track has no 'ess'/'loglik' variables")
    collapsed = collapsed_cycles(track)
    particles = track.attrs.get("particles")

    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    ax_ess, ax_ll = fig.subplots(2, 1, sharex=True)
    (line,) = ax_ess.plot(times, ess, color="#1f4e79", lw=0.9)
    line.set_gid("ess")
    if particles:
        ax_ess.axhline(float(particles), color="0.6", lw=0.8, ls=":")
        ax_ess.text(
            0.995,
            float(particles),
            f"N = {int(particles)} particles",
            ha="right",
            va="top",
            transform=ax_ess.get_yaxis_transform(),
            fontsize=7.5,
            color="0.4",
        )
    ax_ess.set_yscale("log")
    ax_ess.set_ylabel("ESS")

    finite = np.isfinite(loglik)
    (line,) = ax_ll.plot(times, np.where(finite, loglik, np.nan), color="#7b3f00", lw=0.9)
    line.set_gid("loglik")
    ax_ll.set_ylabel(r"$\log p(T_t \mid T_{1:t-1})$")
    ax_ll.set_xlabel("date")
    if collapsed.any():
        for ax in (ax_ess, ax_ll):
            for t in times[collapsed]:
                ax.axvline(t, color="#d62728", lw=0.8, alpha=0.6, zorder=0)
        sc = ax_ess.scatter(
            times[collapsed],
            np.where(np.isfinite(ess[collapsed]), ess[collapsed], 1.0),
            color="#d62728",
            s=14,
            zorder=3,
            label=f"collapse ({int(collapsed.sum())} cycles)",
        )
        sc.set_gid("collapsed")
        ax_ess.legend(fontsize=8, loc="lower left")
    for ax in (ax_ess, ax_ll):
        ax.grid(True, lw=0.4, color="0.85")
    style.date_axis(ax_ll.xaxis, _span_days(times))
    finite_t = times[~np.isnat(times)]
    if finite_t.size:
        ax_ll.set_xlim(finite_t.min(), finite_t.max() + np.timedelta64(1, "D"))
    ax_ess.set_title(_title(track, None, "filter diagnostics"), fontsize=11, loc="left")
    return fig
