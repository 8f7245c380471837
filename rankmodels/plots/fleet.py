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
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import shapely
import xarray as xr
from matplotlib import colormaps
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from shapely.geometry.base import BaseGeometry

from rankmodels.files import atomic_output
from rankmodels.plots import maps, style
from rankmodels.plots._fields import figure_text, times
from rankmodels.plots.placement import points_geometry, polyline_geometry
from rankmodels.plots.report import MOTION_ROWS, SIGNAL_ROWS, esc, html_document, png_data_uri
from rankmodels.plots.run_report import REPORT_FILE
from rankmodels.plots.track_summary import source_names
from rankmodels.text import with_error
from rankmodels.tracking.batch import OK, SUMMARY_COLUMNS, TRACK_FILE
from rankmodels.tracking.shared import SOURCE_ERRORS_CAVEAT

__all__ = [
    "FLEET_FILES",
    "fleet_map",
    "fleet_report",
    "shared_section",
    "fleet_tracks",
    "float_colors",
    "write_fleet",
]

FLEET_FILES = ("fleet.png", "fleet.html")
_FLEET_CMAP = "turbo"
MIN_CONTRAST = 3.0
"""Least contrast ratio (WCAG 2: (L1 + 0.05) / (L2 + 0.05), L the relative luminance) of a
float's line against the sea colour, the level asked of graphics."""


def relative_luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG 2 relative luminance of sRGB colours ``(..., 3)`` in [0, 1]:
    0.2126 R + 0.7152 G + 0.0722 B of the linearised channels."""
    c = np.asarray(rgb, dtype=float)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def contrast_ratio(rgb: np.ndarray, background: str | tuple[float, ...]) -> np.ndarray:
    """WCAG 2 contrast ratio of colours ``(..., 3)`` against ``background`` (lighter over
    darker luminance, each + 0.05): 1 to 21."""
    lum = relative_luminance(rgb)
    back = relative_luminance(np.asarray(to_rgb(background)))
    return (np.maximum(lum, back) + 0.05) / (np.minimum(lum, back) + 0.05)


def float_colors(n: int) -> np.ndarray:
    """``(n, 4)`` RGBA colours, one per float: ``n`` evenly spaced samples of the ``turbo``
    colour map between 0.05 and 0.95, each darkened (RGB scaled towards black, hue kept) just
    enough to reach :data:`MIN_CONTRAST` against the sea
    (:data:`rankmodels.plots.style.OCEAN_COLOR`): no pale yellow or lime line on the pale sea.
    The source triangles keep the tab palettes of :func:`rankmodels.plots.style.source_colors`."""
    if n < 0:
        raise ValueError(f"number of floats must be >= 0, got {n}")
    positions = np.linspace(0.05, 0.95, n) if n > 1 else np.full(n, 0.05)
    colors = np.asarray(colormaps[_FLEET_CMAP](positions)).reshape(n, 4)
    lo, hi = np.zeros(n), np.ones(n)  # bisection on the scale factor of each colour
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        ok = contrast_ratio(colors[:, :3] * mid[:, None], style.OCEAN_COLOR) >= MIN_CONTRAST
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    enough = contrast_ratio(colors[:, :3], style.OCEAN_COLOR) >= MIN_CONTRAST
    colors[:, :3] *= np.where(enough, 1.0, lo)[:, None]
    return colors


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


def sources_active(tracks: Mapping[str, xr.Dataset], names: list[str]) -> np.ndarray:
    """``(S,)`` whether each source of ``names`` transmitted during some float's record: a
    finite ``predicted_toa`` (cycle, source) at some cycle of some track (the tracker predicts
    no arrival from a source outside its ``source_start_time`` .. ``source_end_time``). A
    track without ``predicted_toa`` counts all its sources as active."""
    active = np.zeros(len(names), dtype=bool)
    for track in tracks.values():
        own = [names.index(n) for n in source_names(track)]
        if "predicted_toa" not in track:
            active[own] = True
            continue
        predicted = np.asarray(track["predicted_toa"].transpose("cycle", "source").values)
        active[own] |= np.isfinite(predicted).any(axis=0)
    return active


def _span(tracks: Mapping[str, xr.Dataset]) -> str:
    every = np.concatenate([times(t) for t in tracks.values()])
    every = every[~np.isnat(every)]
    if every.size == 0:
        return ""
    first, last = (np.datetime_as_string(v, unit="D") for v in (every.min(), every.max()))
    return f", {first}" if first == last else f", {first} to {last}"


def fleet_map(
    tracks: Mapping[str, xr.Dataset],
    recoveries: Mapping[str, tuple[float, float]] | None = None,
) -> Figure:
    """Map of every track of ``tracks`` (float name -> ``track-float`` output with ``lat``,
    ``lon`` (cycle), ``time``, ``source_lat``/``source_lon`` (source), ``predicted_toa``), in
    the colours of :func:`float_colors` in the given order: each float's first position a
    dot, its last a diamond and its recovery fix (``recoveries``: name -> lat, lon) a black
    square. The title gives the dates the records span. Only the sources that transmitted
    during the records (:func:`sources_active`) are drawn. The extent covers the
    tracks and recovery fixes with the margins of :func:`rankmodels.plots.maps.map_frame` (the
    sources when no track has a finite position); sources outside it are shown in the inset
    overview, placed where it covers nothing drawn. ValueError for no tracks."""
    if not tracks:
        raise ValueError("no tracks to draw")
    recoveries = dict(recoveries or {})
    all_names, all_lat, all_lon = fleet_sources(tracks)
    active = sources_active(tracks, all_names)
    names = [n for n, a in zip(all_names, active, strict=True) if a]
    src_colors = style.source_colors(len(all_names))[active]
    src_lat, src_lon = all_lat[active], all_lon[active]
    lats = {n: np.asarray(t["lat"].values, dtype=float) for n, t in tracks.items()}
    lons = {n: np.asarray(t["lon"].values, dtype=float) for n, t in tracks.items()}
    fix = np.array([recoveries[n] for n in tracks if n in recoveries], dtype=float).reshape(-1, 2)
    zoom_lat = np.concatenate([*lats.values(), fix[:, 0]])
    zoom_lon = np.concatenate([*lons.values(), fix[:, 1]])
    if not (np.isfinite(zoom_lat) & np.isfinite(zoom_lon)).any():
        zoom_lat, zoom_lon = (src_lat, src_lon) if names else (all_lat, all_lon)
    nan = np.full(1, np.nan)  # breaks the lines between floats
    lat_joined = np.concatenate([np.r_[lat, nan] for lat in lats.values()])
    lon_joined = np.concatenate([np.r_[lons[n], nan] for n in lats])

    def view_of(frame: maps.MapFrame) -> maps.Overview | None:
        if maps.inside_frame(frame, frame.project(src_lon, src_lat)).all():
            return None
        return maps.overview_view(frame, src_lat, src_lon, lat_joined, lon_joined)

    def drawn_of(frame: maps.MapFrame) -> BaseGeometry:
        sxy = frame.project(src_lon, src_lat)
        return shapely.union_all(
            [
                polyline_geometry(frame.project(lon_joined, lat_joined), 4.0 * frame.per_pt),
                points_geometry(sxy[maps.inside_frame(frame, sxy)], 6.0 * frame.per_pt),
                points_geometry(frame.project(fix[:, 1], fix[:, 0]), 6.0 * frame.per_pt),
                maps.scale_bar_region(frame),
            ]
        )

    frame, view, box = maps.frame_with_overview(zoom_lat, zoom_lon, view_of, drawn_of)
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
        finite = np.flatnonzero(np.isfinite(xy).all(axis=1))
        for gid, index, marker, size in (
            ("fleet-start", finite[:1], "o", 16),
            ("fleet-end", finite[-1:], "D", 18),
        ):
            frame.ax.scatter(
                xy[index, 0], xy[index, 1], s=size, marker=marker, color=color,
                edgecolors="0.1", linewidths=0.6, zorder=4.5,
            ).set_gid(gid)  # fmt: skip
        handles.append(line)
    track_xy = np.concatenate(paths)
    fix_xy = frame.project(fix[:, 1], fix[:, 0])
    if len(fix_xy):
        frame.ax.scatter(
            fix_xy[:, 0], fix_xy[:, 1], marker="s", s=34, c=style.RECOVERY_COLOR,
            edgecolors="white", linewidths=0.8, zorder=5,
        ).set_gid("fleet-recovery")  # fmt: skip
    sxy = frame.project(src_lon, src_lat)
    left_out = len(all_names) - len(names)
    label = "sound source" + (
        f" ({left_out} not transmitting during the records: not drawn)" if left_out else ""
    )
    source_handles = maps._draw_sources(
        frame, names, sxy, (np.ones(len(names), dtype=bool), [""] * len(names)), track_xy,
        np.concatenate([sxy, fix_xy]), [] if box is None else [box], src_colors, label,
    )  # fmt: skip
    markers = [
        Line2D([], [], ls="none", marker=m, markersize=sz, markerfacecolor=face,
               markeredgecolor=edge, label=text)
        for m, sz, face, edge, text in (
            ("o", 4, "0.6", "0.1", "first position"),
            ("D", 4, "0.6", "0.1", "last position"),
            ("s", 6, style.RECOVERY_COLOR, "white", "recovery fix"),
        )
        if text != "recovery fix" or len(fix_xy)
    ]  # fmt: skip
    if view is not None and box is not None:
        maps._draw_overview(frame, view, box, names, np.ones(len(names), dtype=bool), src_colors)

    fig = frame.fig
    legend = [*handles, *source_handles, *markers]
    ncols = min(len(legend), 6)
    rows = -(-len(legend) // ncols)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + 0.2 * max(rows - 1, 0))
    fig.legend(handles=legend, loc="outside lower center", ncols=ncols, fontsize=8, frameon=False)
    maps._draw_scale_bar(frame)
    floats = f"{len(tracks)} tracked float{'s' if len(tracks) != 1 else ''}"
    frame.ax.set_title(floats + _span(tracks), fontsize=11, loc="left")
    return fig


def fleet_tracks(out: str | os.PathLike[str], table: pd.DataFrame) -> dict[str, xr.Dataset]:
    """``out/NAME/track.nc`` of every float of ``table`` (the summary of
    :func:`rankmodels.tracking.batch.track_many`) whose status is ok, in table order."""
    folder = Path(out)
    ok = table.loc[table["status"] == OK, "float"]
    return {str(name): xr.load_dataset(folder / str(name) / TRACK_FILE) for name in ok}


def fleet_recoveries(table: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Float name -> recovery fix (lat, lon) of every tracked float of ``table`` whose record
    (its ``file``) still reads and has one; a record that no longer reads just gets no
    marker."""
    from rankmodels.errors import InputError
    from rankmodels.tracking.records import read_float

    fixes = {}
    for name, file in table.loc[table["status"] == OK, ["float", "file"]].itertuples(index=False):
        try:
            record = read_float(file)
        except (InputError, OSError):
            continue
        if "recovery_lat" in record and "recovery_lon" in record:
            fixes[str(name)] = (float(record["recovery_lat"]), float(record["recovery_lon"]))
    return fixes


def _empty(value: object) -> bool:
    return (
        value is None
        or value is pd.NA
        or value == ""
        or (isinstance(value, float | np.floating) and np.isnan(value))
    )


def _decimals(digits: int) -> Callable[[object], str]:
    return lambda value: f"{float(value):.{digits}f}"


FLOAT_TABLE: dict[str, tuple[str, Callable[[object], str] | None]] = {
    # summary column -> (header, text of a number; None for text columns)
    "float_id": ("Float ID", None),
    "status": ("Status", None),
    "cycles": ("Cycles", _decimals(0)),
    "arrivals": ("Arrivals", _decimals(0)),
    "clutter_fraction": ("Called clutter (%)", lambda v: f"{100.0 * float(v):.1f}"),
    "mean_ess": ("Mean ESS (particles)", _decimals(0)),
    "collapsed_cycles": ("Collapsed cycles", _decimals(0)),
    "end_distance_km": ("Filtered end to recovery fix (km)", _decimals(1)),
    "quality": ("Quality checks", None),
    "run_time_s": ("Run time (s)", _decimals(1)),
    "warning": ("Reader's warning", None),
}
"""Columns of the page's floats table (in this order; a column without any value is left
out, and so is the float ID when it is every float's folder name)."""


def _header(column: str, text: str) -> str:
    """A header cell: ``text`` (a symbol's ``_X`` as a subscript), its tooltip the summary
    column and its meaning."""
    meaning = SUMMARY_COLUMNS.get(column, "")
    shown = re.sub(r"_(\w+)", r"<sub>\1</sub>", esc(text))
    return f'<th title="{esc(f"summary.csv column {column}: {meaning}")}">{shown}</th>'


def _name_cell(record: Mapping[str, object], links, colors) -> str:
    name = str(record["float"])
    text = esc(name)
    if name in links:
        text = f'<a href="{html.escape(links[name], quote=True)}">{text}</a>'
    if name in colors:
        rgb = "".join(f"{round(255 * c):02x}" for c in colors[name][:3])
        text = f'<span class="swatch" style="background:#{rgb}"></span>{text}'
    return f'<td class="name" title="{esc(record.get("file", ""))}">{text}</td>'


def floats_table(
    table: pd.DataFrame, links: Mapping[str, str], colors: Mapping[str, tuple[float, ...]]
) -> str:
    """The floats table of the page (:data:`FLOAT_TABLE`): one row per float, its name
    linked and with its colour swatch; a failed float's reason spans its other cells."""
    records = table.astype(object).to_dict(orient="records")
    columns = [
        c
        for c in FLOAT_TABLE
        if c in table.columns and any(not _empty(r[c]) for r in records)
        and not (c == "float_id" and all(str(r[c]) == str(r["float"]) for r in records))
    ]  # fmt: skip
    head = _header("float", "Float") + "".join(_header(c, FLOAT_TABLE[c][0]) for c in columns)
    body = []
    for record in records:
        cells = [_name_cell(record, links, colors)]
        if record["status"] != OK:
            before = columns[: columns.index("status") + 1] if "status" in columns else []
            cells += [f"<td>{'' if _empty(record[c]) else esc(record[c])}</td>" for c in before]
            span = len(columns) - len(before)
            cells.append(f'<td class="reason" colspan="{span}">{esc(record["reason"])}</td>')
        else:
            for column in columns:
                value, number = record[column], FLOAT_TABLE[column][1]
                if _empty(value):
                    cells.append("<td></td>")
                elif number is not None:
                    cells.append(f'<td class="num">{esc(number(value))}</td>')
                else:
                    cells.append(f"<td>{esc(value)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows = "\n".join(body)
    return f'<table class="fleet floats">\n<tr>{head}</tr>\n{rows}\n</table>'


def parameters_table(
    table: pd.DataFrame,
    rows: Sequence[tuple[str, str, int, bool]] = SIGNAL_ROWS,
    kind: str = "parameters",
) -> str:
    """The table (``class="fleet KIND"``) of the model parameters ``rows`` (variable, label,
    decimals, signed; default :data:`~rankmodels.plots.report.SIGNAL_ROWS`) each tracked
    float's track used (``PARAMETER`` and ``PARAMETER_std`` columns of the summary), as the
    reports show them: the value with ± its standard error where the calibration estimated
    it; a column no float has is left out, and so is a float with none of them (a random walk's
    float in the motion table). '' when no float was tracked or no float has any of ``rows``."""
    ok = table[table["status"] == OK]
    present = [row for row in rows if row[0] in ok.columns and ok[row[0]].notna().any()]
    if ok.empty or not present:
        return ""
    head = _header("float", "Float") + "".join(_header(name, label) for name, label, *_ in present)
    body = []
    for record in ok.astype(object).to_dict(orient="records"):
        if all(_empty(record[name]) for name, *_ in present):
            continue
        cells = [_name_cell(record, {}, {})]
        for name, _, digits, signed in present:
            value, sd = record[name], record.get(f"{name}_std", np.nan)
            if _empty(value):
                cells.append("<td></td>")
                continue
            value, sd = float(value), float(sd)
            text = with_error(value, sd, digits, signed=signed, missing=None)
            cells.append(f'<td class="num">{esc(text)}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    lines = "\n".join(body)
    return f'<table class="fleet {kind}">\n<tr>{head}</tr>\n{lines}\n</table>'


def shared_section(experiment: Mapping[str, object] | None) -> str:
    """The joint calibration's shared estimates (``summary.json``'s ``"experiment"``,
    :func:`~rankmodels.tracking.experiment.shared_summary`): the sound speed ± its standard
    error and one row per source with its offset and clock-drift corrections ± theirs and
    its evidence (floats that heard it, expected direct arrivals), and what those errors leave
    out when any was estimated (:data:`~rankmodels.tracking.shared.SOURCE_ERRORS_CAVEAT`); ''
    without."""
    if experiment is None:
        return ""
    speed, sd = experiment["sound_speed"], experiment["sound_speed_std"]
    speed_text = f"{with_error(speed, sd, 1)} m/s" if sd is not None else f"{speed:.1f} m/s (kept)"
    reach = experiment.get("polish_reach")
    polished = f", polished {reach:.2f} of a Newton step" if reach is not None else ""
    monte_carlo = experiment.get("sound_speed_monte_carlo_std")
    if sd is not None and monte_carlo is not None:
        speed_text += f" (the EM's Monte Carlo error {monte_carlo:.1f} of it)"
    head = "".join(
        f"<th>{esc(h)}</th>"
        for h in ("Source", "Offset correction (s)", "Drift correction (s/day)", "Floats",
                  "Arrivals")
    )  # fmt: skip
    rows, caveat = [], ""
    for src in experiment["sources"]:
        if src["offset_correction_std"] is not None or src["drift_correction_std"] is not None:
            caveat = f"; {esc(SOURCE_ERRORS_CAVEAT)}"
        cells = [f'<td class="name">{esc(src["source"])}</td>']
        for name, digits in (("offset_correction", 2), ("drift_correction", 4)):
            value, err = src[name], src[f"{name}_std"]
            text = (
                with_error(value, err, digits, signed=True)
                if err is not None
                else f"{value:+.{digits}f} (kept)"
            )
            cells.append(f'<td class="num">{esc(text)}</td>')
        cells.append(f'<td class="num">{int(src["floats"])}</td>')
        cells.append(f'<td class="num">{float(src["arrivals"]):.0f}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    body = "\n".join(rows)
    return (
        '<h2 id="shared">Shared calibration of the experiment</h2>\n'
        f"<p>{int(experiment['floats'])} floats calibrated together (EM pass "
        f"{experiment['kept_pass']} of {experiment['em_passes']} kept{polished}; "
        f"{esc(experiment['stop'])}"
        f"): sound speed {esc(speed_text)}. Each source's corrections, ± the standard error "
        "where the pooled floats determine them (statistical and Monte Carlo error together), "
        "and its evidence: the floats that heard it and their expected direct arrivals from "
        f"it{caveat}.</p>\n"
        f'<table class="fleet sources">\n<tr>{head}</tr>\n{body}\n</table>'
    )


def fleet_report(
    table: pd.DataFrame,
    png: bytes | None,
    links: Mapping[str, str],
    colors: Mapping[str, tuple[float, ...]] | None = None,
    experiment: Mapping[str, object] | None = None,
) -> str:
    """The fleet page (a complete HTML document): the map ``png`` embedded
    (:func:`~rankmodels.plots.report.png_data_uri`; None: no map), then the summary ``table``
    (:data:`~rankmodels.tracking.batch.SUMMARY_COLUMNS`) in tables narrow enough to read
    without scrolling: the floats (:func:`floats_table`), the model parameters their tracks
    used and their Lagrangian motion (:func:`parameters_table`); each header's tooltip names
    its ``summary.csv`` column and meaning, each name's the record file. ``links``: float name
    -> relative path of its report, linked from the name; ``colors``: float name -> its RGBA
    colour on the map, shown as a swatch; ``experiment``: the shared estimates of a joint
    calibration (:func:`shared_section`), shown before the floats."""
    colors = colors or {}
    ok = int((table["status"] == OK).sum())
    title = f"Tracked floats: {ok} of {len(table)}"
    figure = (
        f'<figure id="fig-fleet"><img src="{png_data_uri("fleet", png)}" alt="map of the '
        'tracks"><figcaption>Every tracked float coloured as in the table (dot: first '
        "position, diamond: last position, black square: recovery fix) and the sound sources "
        "that transmitted during the records (triangles); failed floats are not drawn."
        "</figcaption></figure>"
        if png is not None
        else "<p>No float was tracked: no map.</p>"
    )
    parameters = parameters_table(table)
    if parameters:
        parameters = (
            "<h2>Model parameters of the tracks</h2>\n<p>The values each track used: "
            "± the standard error where the calibration estimated the value, else the "
            f"starting value (the record's or the command's).</p>\n{parameters}"
        )
    motion = parameters_table(table, MOTION_ROWS, "motion")
    if motion:
        motion = (
            "<h2>Motion of the floats</h2>\n<p>Each float's Lagrangian motion and "
            "statistics (eddy kinetic energy, single-particle diffusivity K = s²τ): ± the "
            "standard error where the calibration estimated them, else the starting value."
            f"</p>\n{motion}"
        )
    css = (
        ".swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em;"
        " vertical-align: middle; border: 1px solid #555; }\n"
        "table.fleet th { font-size: 0.88em; vertical-align: bottom; }\n"
        "table.fleet td.name, table.fleet td.num { white-space: nowrap; }\n"
        "table.fleet td.reason { color: #8a1c1c; }\n"
    )
    return html_document(
        title,
        f"""<h1>{esc(title)}</h1>
<p class="subtitle">Each float's name links its own report; the numbers are in summary.csv
and summary.json beside this page.</p>
{figure}
{shared_section(experiment)}
<h2>Floats</h2>
{floats_table(table, links, colors)}
{parameters}
{motion}""",
        css,
    )


def write_fleet(
    out: str | os.PathLike[str],
    table: pd.DataFrame,
    experiment: Mapping[str, object] | None = None,
) -> list[str]:
    """Write :data:`FLEET_FILES` into the batch folder ``out`` from its summary ``table`` and
    the floats' ``out/NAME/track.nc``: ``fleet.png`` only when some float was tracked, and
    ``fleet.html`` linking the ``NAME/report.html`` of each tracked float that has one (and
    with ``experiment``, the shared estimates: :func:`shared_section`).
    Atomic; returns the names written."""
    from rankmodels.plots.cartopy_data import use_shipped_natural_earth
    from rankmodels.plots.tracking import figure_png

    use_shipped_natural_earth()
    folder = Path(out)
    tracks = fleet_tracks(folder, table)
    colors = dict(zip(tracks, map(tuple, float_colors(len(tracks))), strict=True))
    png = figure_png(fleet_map(tracks, fleet_recoveries(table))) if tracks else None
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
        handle.write(fleet_report(table, png, links, colors, experiment))
    written.append(FLEET_FILES[1])
    return written
