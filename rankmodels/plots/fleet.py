"""Overview of a whole experiment tracked by ``track-float FOLDER/``: one map, one page.

``fleet.png`` (:func:`fleet_map`): every tracked float's ``lat``/``lon`` on one cartopy map in
the conventions of :func:`rankmodels.plots.maps.track_map` -- shipped Natural Earth land and
coasts, dashed graticule labelled at the frame, scale bar, sound sources as triangles in their
colours (:func:`rankmodels.plots.style.source_colors`, the order of first appearance over the
floats, which is each report's order when the floats share one array), and, when a source
lies outside the tracks' extent, the inset overview of the whole array. Each float is one line
in its own colour (:func:`float_colors`) with a legend entry, its first position a dot.

``fleet.html`` (:func:`fleet_report`): the map embedded as a base64 PNG and the summary table
(:data:`rankmodels.tracking.batch.SUMMARY_COLUMNS`, one row per float, failed floats with
their reason), each tracked float's name linking its ``NAME/report.html`` by relative path. Like
``report.html`` it refers to no other file or URL except those links. :func:`write_fleet`
writes both into a batch's output folder, atomically.

Artists carrying data have a ``gid``: "fleet-track" (one line per float, labelled with its
name), "fleet-start", "sources" and those of the map layers shared with ``track_map``.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rankmodels.files import atomic_output
from rankmodels.plots import maps
from rankmodels.plots._fields import figure_text, times
from rankmodels.plots.report import _e, format_value, html_document, png_data_uri
from rankmodels.plots.run_report import REPORT_FILE
from rankmodels.plots.track_summary import source_names
from rankmodels.tracking.batch import OK, SUMMARY_COLUMNS, TRACK_FILE

__all__ = [
    "FLEET_FILES",
    "fleet_map",
    "fleet_report",
    "fleet_tracks",
    "float_colors",
    "write_fleet",
]

FLEET_FILES = ("fleet.png", "fleet.html")
_FLEET_CMAP = "turbo"


def float_colors(n: int) -> np.ndarray:
    """``(n, 4)`` RGBA colours, one per float: ``n`` evenly spaced samples of the ``turbo``
    colour map between 0.05 and 0.95 (its darkest and lightest ends left out). The source
    triangles keep the tab palettes of :func:`rankmodels.plots.style.source_colors`."""
    if n < 0:
        raise ValueError(f"number of floats must be >= 0, got {n}")
    positions = np.linspace(0.05, 0.95, n) if n > 1 else np.full(n, 0.05)
    return np.asarray(colormaps[_FLEET_CMAP](positions))


def fleet_sources(tracks: Mapping[str, xr.Dataset]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The sources of all tracks: names in order of first appearance, and their latitudes and
    longitudes ``(S,)`` (a name's first position). ValueError for a track without
    ``source_lat``/``source_lon``."""
    names: list[str] = []
    lat: list[float] = []
    lon: list[float] = []
    for name, track in tracks.items():
        if "source_lat" not in track or "source_lon" not in track:
            raise ValueError(f"track of {name!r} has no 'source_lat'/'source_lon'")
        for source, y, x in zip(
            source_names(track), track["source_lat"].values, track["source_lon"].values,
            strict=True,
        ):  # fmt: skip
            if source not in names:
                names.append(source)
                lat.append(float(y))
                lon.append(float(x))
    return names, np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)


def fleet_map(tracks: Mapping[str, xr.Dataset]) -> Figure:
    """Map of every track of ``tracks`` (float name -> ``track-float`` output with ``lat``,
    ``lon`` (cycle), ``time``, ``source_lat``/``source_lon`` (source)), in the colours of
    :func:`float_colors` in the given order. The extent covers the tracks with the margins of
    :func:`rankmodels.plots.maps.map_frame` (the sources when no track has a finite
    position); sources outside it are shown in the inset overview. ValueError for no tracks."""
    if not tracks:
        raise ValueError("no tracks to draw")
    names, src_lat, src_lon = fleet_sources(tracks)
    lats = {n: np.asarray(t["lat"].values, dtype=float) for n, t in tracks.items()}
    lons = {n: np.asarray(t["lon"].values, dtype=float) for n, t in tracks.items()}
    all_lat, all_lon = np.concatenate(list(lats.values())), np.concatenate(list(lons.values()))
    zoom = (all_lat, all_lon)
    if not (np.isfinite(all_lat) & np.isfinite(all_lon)).any():
        zoom = (src_lat, src_lon)
    frame = maps.map_frame(*zoom)
    maps._draw_land_and_grid(frame)

    handles = []
    paths = []
    for (name, lat), color in zip(lats.items(), float_colors(len(lats)), strict=True):
        xy = frame.project(lons[name], lat)
        paths.append(xy)
        (line,) = frame.ax.plot(
            xy[:, 0], xy[:, 1], color=color, lw=1.6, zorder=4, label=figure_text(name)
        )
        line.set_gid("fleet-track")
        first = np.flatnonzero(np.isfinite(xy).all(axis=1))[:1]
        frame.ax.scatter(
            xy[first, 0], xy[first, 1], s=16, color=color, edgecolors="0.1", linewidths=0.5,
            zorder=4.5,
        ).set_gid("fleet-start")  # fmt: skip
        handles.append(line)
    track_xy = np.concatenate(paths)
    sxy = frame.project(src_lon, src_lat)
    every_time = np.concatenate([times(t) for t in tracks.values()])
    source_handles = maps._draw_sources(
        frame, xr.Dataset(), names, sxy, every_time, track_xy, sxy
    )  # no activity periods in a track: every source drawn as active
    start = Line2D(
        [], [], ls="none", marker="o", markersize=4, markerfacecolor="0.6",
        markeredgecolor="0.1", label="first position",
    )  # fmt: skip
    if not maps.inside_frame(frame, sxy).all():
        nan = np.full(1, np.nan)  # breaks the overview's line between floats
        lat_joined = np.concatenate([np.r_[lat, nan] for lat in lats.values()])
        lon_joined = np.concatenate([np.r_[lons[n], nan] for n in lats])
        maps._draw_overview(frame, src_lat, src_lon, lat_joined, lon_joined, track_xy)

    fig = frame.fig
    legend = [*handles, *source_handles, start]
    ncols = min(len(legend), 6)
    rows = -(-len(legend) // ncols)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + 0.2 * max(rows - 2, 0))
    fig.legend(handles=legend, loc="outside lower center", ncols=ncols, fontsize=8, frameon=False)
    maps._draw_scale_bar(frame)
    frame.ax.set_title(f"{len(tracks)} tracked float(s)", fontsize=11, loc="left")
    return fig


def fleet_tracks(out: str | os.PathLike[str], table: pd.DataFrame) -> dict[str, xr.Dataset]:
    """``out/NAME/track.nc`` of every float of ``table`` (the summary of
    :func:`rankmodels.tracking.batch.track_many`) whose status is ok, in table order."""
    folder = Path(out)
    ok = table.loc[table["status"] == OK, "float"]
    return {str(name): xr.load_dataset(folder / str(name) / TRACK_FILE) for name in ok}


def _cell(column: str, value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return "<td></td>"
    if column == "clutter_fraction":
        return f'<td class="num">{100.0 * float(value):.1f} %</td>'
    if isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_):
        return f'<td class="num">{_e(format_value(value))}</td>'
    return f"<td>{_e(format_value(value))}</td>"


def fleet_report(
    table: pd.DataFrame,
    png: bytes | None,
    links: Mapping[str, str],
    colors: Mapping[str, tuple[float, ...]] | None = None,
) -> str:
    """The fleet page (a complete HTML document): the map ``png`` embedded
    (:func:`~rankmodels.plots.report.png_data_uri`; None: no map), then one row per float of
    the summary ``table`` (:data:`~rankmodels.tracking.batch.SUMMARY_COLUMNS`, each header
    explained in its tooltip). ``links``: float name -> relative path of its report, linked
    from the name; ``colors``: float name -> its RGBA colour on the map, shown as a swatch."""
    colors = colors or {}
    columns = [c for c in SUMMARY_COLUMNS if c in table.columns]
    head = "".join(f'<th title="{_e(SUMMARY_COLUMNS[c])}">{_e(c)}</th>' for c in columns)
    body = []
    for record in table[columns].astype(object).to_dict(orient="records"):
        name = str(record["float"])
        cells = []
        for column in columns:
            if column != "float":
                cells.append(_cell(column, record[column]))
                continue
            text = _e(name)
            if name in links:
                text = f'<a href="{html.escape(links[name], quote=True)}">{text}</a>'
            if name in colors:
                rgb = "".join(f"{round(255 * c):02x}" for c in colors[name][:3])
                text = f'<span class="swatch" style="background:#{rgb}"></span>{text}'
            cells.append(f"<td>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    ok = int((table["status"] == OK).sum())
    title = f"Tracked floats: {ok} of {len(table)}"
    figure = (
        f'<figure id="fig-fleet"><img src="{png_data_uri("fleet", png)}" alt="map of the '
        'tracks"><figcaption>Every tracked float coloured as in the table (dot: first '
        "position) and the sound sources (triangles); failed floats are not drawn."
        "</figcaption></figure>"
        if png is not None
        else "<p>No float was tracked: no map.</p>"
    )
    swatch = ".swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em;"
    swatch += " vertical-align: middle; border: 1px solid #555; }\n"
    rows = "\n".join(body)
    return html_document(
        title,
        f"""<h1>{_e(title)}</h1>
<p class="subtitle">Each float's name links its own report.</p>
{figure}
<h2>Floats</h2>
<table class="fleet">
<tr>{head}</tr>
{rows}
</table>""",
        swatch,
    )


def write_fleet(out: str | os.PathLike[str], table: pd.DataFrame) -> list[str]:
    """Write :data:`FLEET_FILES` into the batch folder ``out`` from its summary ``table`` and
    the floats' ``out/NAME/track.nc``: ``fleet.png`` only when some float was tracked, and
    ``fleet.html`` linking the ``NAME/report.html`` of each tracked float that has one.
    Atomic; returns the names written."""
    from rankmodels.plots.cartopy_data import use_shipped_natural_earth
    from rankmodels.plots.tracking import figure_png

    use_shipped_natural_earth()
    folder = Path(out)
    tracks = fleet_tracks(folder, table)
    colors = dict(zip(tracks, map(tuple, float_colors(len(tracks))), strict=True))
    png = figure_png(fleet_map(tracks)) if tracks else None
    written = []
    if png is not None:
        with atomic_output(folder / FLEET_FILES[0]) as handle:
            handle.write(png)
        written.append(FLEET_FILES[0])
    links = {
        name: f"{quote(name)}/{REPORT_FILE}"
        for name in tracks
        if (folder / name / REPORT_FILE).is_file()
    }
    with atomic_output(folder / FLEET_FILES[1], "w") as handle:
        handle.write(fleet_report(table, png, links, colors))
    written.append(FLEET_FILES[1])
    return written
