"""Self-contained HTML report of a ``track-float`` run.

One HTML file with inline CSS and the figures embedded as base64 PNG ``data:`` URIs: it refers
to nothing outside itself, so it can be mailed or attached to a cruise report on its own. Every
string that comes from data, the summary or the caller has its control characters replaced
(:func:`rankmodels.text.printable`) and is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import math
from collections.abc import Callable, Mapping

import numpy as np
import xarray as xr

from rankmodels.plots.track_summary import (
    COLLAPSE_ESS,
    arrival_count,
    attr_flag,
    clutter_fraction,
    collapsed_cycles,
    source_names,
    source_table,
    truth_comparison,
)
from rankmodels.text import printable, with_error
from rankmodels.tracking.quality import quality_from_track

FIGURE_CAPTIONS: dict[str, str] = {
    "map": (
        "Estimated track coloured by date with its 95 % position uncertainty, the sound sources "
        "(triangles), the launch (white star) and recovery (black square) positions, a scale "
        "bar and, for a simulated record with its truth, the true track (dashed)."
    ),
    "toa": (
        "Recorded arrival times coloured by their most probable source (opacity = association "
        "probability; grey crosses = clutter) and each source's predicted arrival time at the "
        "estimated track; sources with no associated arrival are named below the legend."
    ),
    "diagnostics": (
        "The forward filter's effective sample size and predictive log-likelihood (nats) of "
        "each cycle, and the semi-major axis of the track's 95 % position ellipse (with the "
        "distance to the true position when known); red marks cycles where the filter "
        "collapsed."
    ),
}

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1b1b1b;
       max-width: 1180px; margin: 2em auto; padding: 0 1.2em; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.1em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d8d8d8; padding-bottom: 0.2em; }
.subtitle { color: #555; margin-top: 0; }
.badge { display: inline-block; background: #fff3cd; border: 1px solid #e0c45c; color: #6b5200;
         border-radius: 4px; padding: 0.1em 0.5em; font-size: 0.85em; margin-left: 0.5em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #d8d8d8; padding: 0.3em 0.7em; text-align: left; }
th { background: #f2f4f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.summary th, table.truth th { width: 20em; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e4e4e4; }
figcaption { color: #555; font-size: 0.9em; margin-top: 0.3em; }
.note { background: #fdecea; border-left: 4px solid #d62728; padding: 0.5em 0.9em; }
.ok { background: #eef7ee; border-left: 4px solid #2ca02c; padding: 0.5em 0.9em; }
footer { color: #777; font-size: 0.8em; margin-top: 2.5em; }
"""


def esc(value: object) -> str:
    """``str(value)`` with control characters replaced (:func:`rankmodels.text.printable`) and
    escaped for HTML text and attribute values."""
    return html.escape(printable(value), quote=True)


def format_value(value: object) -> str:
    """Readable text of a summary value: booleans as yes/no, floats with 4 significant digits
    (one decimal from 1000 on), sequences joined by commas, NaN/None as an en dash. Not escaped."""
    if value is None:
        return "–"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            return "–" if math.isnan(value) else str(value)
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.1f}"
    if isinstance(value, list | tuple):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def _count(value: object) -> object:
    """A list of cycle indices shown as its length; anything else unchanged."""
    return len(value) if isinstance(value, list | tuple | np.ndarray) else value


def _seconds(value: object) -> object:
    return f"{float(value):.1f} s" if isinstance(value, int | float | np.number) else value


SUMMARY_KEYS: dict[str, tuple[str, Callable[[object], object] | None]] = {
    # summary-dict key (as returned by rankmodels.tracking.pipeline.track_float) ->
    # (row label in the report, value conversion)
    "float_id": ("Float", None),
    "cycles": ("Listening cycles", None),
    "cycles_without_data": ("Cycles without arrivals", None),
    "arrivals": ("Recorded arrivals", None),
    "mean_ess": ("Mean ESS", None),
    "clutter_fraction": ("Arrivals called clutter", lambda v: _percent(float(v))),
    "collapsed_cycles": ("Collapsed cycles", _count),
    "log_likelihood": ("Total log-likelihood (nats)", None),
    "engine": ("Likelihood engine", None),
    "particles": ("Particles", None),
    "seed": ("Seed", None),
    "smoothed": ("Smoothed", bool),
    "recovery_used": ("Recovery fix used by the smoother", bool),
    "ensemble": ("Smoothing ensemble size", None),
    "simulated": ("Simulated data", bool),
    "run_time_s": ("Run time", _seconds),
}
"""Known summary keys: shown under the same label as the value computed from the track, which
they replace (no duplicate rows). Other keys are shown as given."""


def summary_label(key: str) -> tuple[str, Callable[[object], object] | None]:
    """Row label and shown value for summary entry ``key``."""
    return SUMMARY_KEYS.get(key, (key, None))


def summary_entries(summary: object) -> Mapping[str, object]:
    """The entries of a run summary: a mapping as it is, what an object's ``table()`` gives
    (e.g. :meth:`rankmodels.tracking.summary.TrackSummary.table`), or the fields of a
    dataclass instance. Raises TypeError for anything else."""
    if isinstance(summary, Mapping):
        return summary
    if callable(getattr(summary, "table", None)):
        return summary.table()
    if dataclasses.is_dataclass(summary) and not isinstance(summary, type):
        return {f.name: getattr(summary, f.name) for f in dataclasses.fields(summary)}
    raise TypeError(
        f"summary must be a mapping or a dataclass instance, got {type(summary).__name__}"
    )


SECTIONS: dict[str, tuple[str, ...]] = {
    "settings": (
        "Likelihood engine",
        "Particles",
        "Seed",
        "Smoothing ensemble size",
        "TOA noise σ (s)",
        "Detection probability P_D",
        "Clutter rate λ (per window)",
        "Sound speed (m/s)",
        "Process noise (km per axis, 1-day step)",
        "Multipath share P_M",
        "Mean multipath delay μ_D (s)",
        "Calibration",
        "Smoothed",
        "Recovery fix used by the smoother",
    ),
    "results": (),
    "provenance": (
        "Float",
        "Input file",
        "Simulated data",
        "Run time",
        "rankmodels version",
        "Created",
    ),
}
"""Report tables (in page order) and the row labels each holds; rows not listed in any
(the results computed from the track, and summary keys the report does not know) go to
"results"."""


def split_rows(rows: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """``rows`` (label -> value) divided into the tables of :data:`SECTIONS`, each in the order
    of its label list (results in the order given)."""
    home = {label: name for name, labels in SECTIONS.items() for label in labels}
    out: dict[str, dict[str, object]] = {name: {} for name in SECTIONS}
    for name, labels in SECTIONS.items():
        out[name].update((label, rows[label]) for label in labels if label in rows)
    out["results"].update((k, v) for k, v in rows.items() if k not in home)
    return out


def _fixed(value: float, digits: int) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "–"


def _percent(fraction: float) -> str:
    return f"{100.0 * fraction:.1f} %" if math.isfinite(fraction) else "–"


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_data_uri(name: str, png: bytes) -> str:
    """``data:image/png;base64,...`` of the PNG bytes of figure ``name``; TypeError for
    anything but bytes, ValueError for bytes that do not start with the PNG signature."""
    if not isinstance(png, bytes | bytearray | memoryview):
        raise TypeError(f"image {name!r} must be PNG bytes, got {type(png).__name__}")
    data = bytes(png)
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError(f"image {name!r} is not a PNG (no PNG signature)")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


POSTERIOR_CLUTTER = "Clutter share by posterior probability"
CLUTTER_NOTE = (
    "Two clutter shares: “arrivals called clutter” counts the arrivals whose most probable "
    "origin is clutter; the “clutter share by posterior probability” (the one the "
    "clutter_excess quality check uses) adds up every arrival's posterior probability of being "
    "clutter. They differ because an arrival most probably from a source still adds its small "
    "probability of being clutter, and one called clutter adds less than a whole arrival when "
    "it might be a source."
)


def track_summary_rows(track: xr.Dataset) -> dict[str, object]:
    """The summary entries computed from the track itself (label -> value)."""
    attrs = track.attrs
    times = np.asarray(track["time"].values).astype("datetime64[ns]")
    finite = times[~np.isnat(times)]
    rows: dict[str, object] = {"Float": attrs.get("float_id", "?")}
    if str(attrs.get("source_file", "")):
        rows["Input file"] = attrs["source_file"]
    rows["Listening cycles"] = int(track.sizes["cycle"])
    if finite.size:
        days = (finite.max() - finite.min()) / np.timedelta64(1, "D")
        rows["Time span"] = (
            f"{np.datetime_as_string(finite.min(), unit='D')} to "
            f"{np.datetime_as_string(finite.max(), unit='D')} ({days:.0f} days)"
        )
    rows["Recorded arrivals"] = arrival_count(track)
    rows["Sound sources"] = int(track.sizes.get("source", 0))
    for key, label in (
        ("engine", "Likelihood engine"),
        ("particles", "Particles"),
        ("seed", "Seed"),
        ("ensemble", "Smoothing ensemble size"),
        ("sigma", "TOA noise σ (s)"),
        ("p_detect", "Detection probability P_D"),
        ("clutter_rate", "Clutter rate λ (per window)"),
        ("sound_speed", "Sound speed (m/s)"),
        ("process_noise_km", "Process noise (km per axis, 1-day step)"),
        ("multipath", "Multipath share P_M"),
        ("multipath_delay_s", "Mean multipath delay μ_D (s)"),
    ):
        variable = key.removesuffix("_km").removesuffix("_s")
        if key in attrs and variable not in track.data_vars:  # else below
            rows[label] = attrs[key]
    for key, label in (
        ("smoothed", "Smoothed"),
        ("recovery_used", "Recovery fix used by the smoother"),
    ):
        flag = attr_flag(attrs, key)
        if flag is not None:
            rows[label] = flag
    if "ess" in track:
        ess = np.asarray(track["ess"].values, dtype=float)
        if np.isfinite(ess).any():
            rows["Mean ESS"] = float(np.nanmean(ess))
            rows["Minimum ESS"] = float(np.nanmin(ess))
    if "loglik" in track:
        ll = np.asarray(track["loglik"].values, dtype=float)
        total = float(ll.sum()) if np.isfinite(ll).all() else float("-inf")
        rows["Total log-likelihood (nats)"] = total
    rows.update(calibration_rows(track))
    rows["Arrivals called clutter"] = _percent(clutter_fraction(track))
    if "association_posterior" in track and arrival_count(track):
        clutter = source_table(track)[-1].expected
        rows[POSTERIOR_CLUTTER] = _percent(clutter / arrival_count(track))
    rows["Collapsed cycles"] = int(collapsed_cycles(track).sum())
    rows["Simulated data"] = bool(attr_flag(attrs, "simulated"))
    for key, label in (("rankmodels_version", "rankmodels version"), ("created", "Created")):
        if key in attrs:
            rows[label] = attrs[key]
    return rows


#: (variable, label, decimals, signed) of the scalar parameters :func:`calibration_rows`
#: shows.
SIGNAL_ROWS = (
    ("sound_speed", "Sound speed used (m/s)", 1, False),
    ("clock_offset", "Float clock offset at launch (s)", 2, True),
    ("clock_drift", "Float clock drift (s/day)", 4, True),
    ("sigma", "TOA noise σ (s)", 2, False),
    ("p_detect", "Detection probability P_D", 3, False),
    ("clutter_rate", "Clutter rate λ (per window)", 2, False),
    ("multipath", "Multipath share P_M", 3, False),
    ("multipath_delay", "Mean multipath delay μ_D (s)", 1, False),
    ("process_noise", "Process noise (km per axis, 1-day step)", 2, False),
)
"""(variable, label, decimals, signed) of the clock, sound-speed and signal parameters and
the random walk's step."""
MOTION_ROWS = (
    ("mean_velocity_east", "Mean velocity east (km/day)", 2, True),
    ("mean_velocity_north", "Mean velocity north (km/day)", 2, True),
    ("eddy_speed", "Eddy speed (km/day per axis)", 2, False),
    ("time_scale", "Lagrangian time scale (days)", 1, False),
    ("eddy_kinetic_energy", "Eddy kinetic energy (m²/s²)", 5, False),
    ("diffusivity", "Diffusivity (m²/s)", 0, False),
)
"""(variable, label, decimals, signed) of the Lagrangian motion and its statistics."""
PARAMETER_ROWS = SIGNAL_ROWS + MOTION_ROWS


def calibration_rows(track: xr.Dataset) -> dict[str, object]:
    """Rows of the parameters the predictions used (``sound_speed``, ``clock_offset``,
    ``clock_drift``, ``source_offset_correction``; ± the standard error where estimated) and
    of the calibration's EM iterations; none for a track without them."""
    if "sound_speed" not in track.data_vars:
        return {}

    def value(name: str, digits: int, signed: bool = False) -> str:
        v, sd = float(track[name]), float(track[f"{name}_std"])
        attrs = track[name].attrs
        status, reason = attrs.get("status"), str(attrs.get("status_reason", ""))
        if status == "kept":
            return with_error(
                v, math.nan, digits, signed=signed, missing=f"kept at its starting value: {reason}"
            )
        if status == "estimated" and "start" in attrs:
            text = with_error(v, sd, digits, signed=signed)
            start = float(attrs["start"])
            shown = f"{start:g}" if round(start, digits) == start else f"{start:.{digits}f}"
            return f"{text} (estimated; started at {shown})"
        return with_error(v, sd, digits, signed=signed, missing="not estimated")

    names = source_names(track)
    corrections = np.asarray(track["source_offset_correction"].values, dtype=float)
    rows: dict[str, object] = {
        label: value(name, digits, signed)
        for name, label, digits, signed in PARAMETER_ROWS
        if name in track.data_vars
    }
    rows |= {
        "Source offset corrections (s)": ", ".join(
            f"{name} {c:+.1f}" for name, c in zip(names, corrections, strict=True) if c != 0
        )
        or "none",
    }
    estimated = str(track.attrs.get("calibrated", ""))
    if estimated and "calibration_loglik" in track:
        iterations = track.sizes["iteration"] - 1
        rows["Calibration"] = (
            f"{estimated.replace(',', ', ')}: Monte Carlo EM, iteration "
            f"{track.attrs.get('calibration_best_iteration', '?')} of {iterations} kept "
            f"({track.attrs.get('calibration_stop', '')}; "
            f"{track.attrs.get('calibration_particles', '?')} particles)"
        )
    else:
        rows["Calibration"] = "none (the file's values)"
    return rows


def _summary_table(rows: Mapping[str, object], css_class: str) -> str:
    body = "\n".join(
        f"<tr><th>{esc(k)}</th><td>{esc(format_value(v))}</td></tr>" for k, v in rows.items()
    )
    return f'<table class="summary {css_class}">\n{body}\n</table>'


def _source_section(track: xr.Dataset) -> str:
    table = source_table(track)
    has_expected = "association_posterior" in track
    lat = track["source_lat"].values if "source_lat" in track else None
    lon = track["source_lon"].values if "source_lon" in track else None
    total = sum(r.arrivals for r in table)
    head = "<tr><th>Source</th>"
    if lat is not None and lon is not None:
        head += "<th>Latitude</th><th>Longitude</th>"
    head += "<th>Arrivals associated</th><th>Share</th><th>Mean association probability</th>"
    if has_expected:
        head += "<th>Expected arrivals (Σ posterior)</th>"
    head += "</tr>"
    lines = [head]
    for row in table:
        cells = [f"<td>{esc(row.name)}</td>"]
        if lat is not None and lon is not None:
            if row.index >= 0:
                cells.append(f'<td class="num">{esc(f"{float(lat[row.index]):.3f}")}</td>')
                cells.append(f'<td class="num">{esc(f"{float(lon[row.index]):.3f}")}</td>')
            else:
                cells.append("<td></td><td></td>")
        share = row.arrivals / total if total else float("nan")
        cells.append(f'<td class="num">{row.arrivals}</td>')
        cells.append(f'<td class="num">{esc(_percent(share))}</td>')
        cells.append(f'<td class="num">{esc(_fixed(row.mean_prob, 3))}</td>')
        if has_expected:
            cells.append(f'<td class="num">{esc(_fixed(row.expected, 1))}</td>')
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return '<table class="sources">\n' + "\n".join(lines) + "\n</table>"


def _clutter_note(results: Mapping[str, object]) -> str:
    """:data:`CLUTTER_NOTE` when the results show both clutter shares."""
    if POSTERIOR_CLUTTER in results and "Arrivals called clutter" in results:
        return f'<p class="explain">{esc(CLUTTER_NOTE)}</p>'
    return ""


def _collapse_note(track: xr.Dataset) -> str:
    collapsed = collapsed_cycles(track)
    rule = (
        "as flagged by the filter"
        if "collapsed" in track
        else f"ESS below {COLLAPSE_ESS:g} or non-finite predictive likelihood"
    )
    if not collapsed.any():
        return f'<p class="ok">The filter did not collapse at any cycle ({esc(rule)}).</p>'
    times = np.asarray(track["time"].values).astype("datetime64[ns]")[collapsed]
    cycles = np.flatnonzero(collapsed)
    shown = [
        f"{c} ({np.datetime_as_string(t, unit='D')})"
        for c, t in zip(cycles[:50], times[:50], strict=True)
    ]
    more = f" and {cycles.size - 50} more" if cycles.size > 50 else ""
    return (
        f'<p class="note">The filter collapsed at {cycles.size} cycle'
        f"{'s' if cycles.size != 1 else ''} ({esc(rule)}): {esc(', '.join(shown))}{esc(more)}. "
        "Positions right after a collapse rest on few particles; check the TOA diagram there.</p>"
    )


def _quality_note(track: xr.Dataset) -> str:
    """The track quality checks stored in ``track`` (``quality_*`` variables): a red box when
    one failed, else a green one; each check with its value, threshold and meaning."""
    checks = quality_from_track(track)
    if not checks:
        return ""
    failed = sum(c.passed is False for c in checks)
    skipped = sum(c.passed is None for c in checks)
    if failed:
        box = "note"
        head = (
            f"{failed} of {len(checks)} track quality checks failed: the track may be wrong "
            "even where its uncertainty bands are tight."
        )
    else:
        box = "ok"
        head = f"The track passed {len(checks) - skipped} of {len(checks)} quality checks"
        head += f" ({skipped} could not be computed)." if skipped else "."
    items = "\n".join(
        f"<li><b>{esc(c.name)}</b> {esc(c.status)}: {esc(c.message)} "
        f"(threshold {esc(format_value(c.threshold))}: {esc(c.doc)})</li>"
        for c in checks
    )
    return f'<div class="{box}" id="quality">\n<p>{esc(head)}</p>\n<ul>\n{items}\n</ul>\n</div>'


def _truth_section(track: xr.Dataset, truth: xr.Dataset | None) -> str:
    if truth is None:
        return ""
    rows = truth_comparison(track, truth)
    body = "\n".join(
        f'<tr><th>{esc(k)}</th><td class="num">{esc(v)}</td></tr>' for k, v in rows.items()
    )
    return (
        "<h2>Comparison with the true track</h2>\n"
        "<p>The record is simulated; its true track and arrival labels were read beside it.</p>\n"
        f'<table class="truth">\n{body}\n</table>'
    )


def tracking_report(
    track: xr.Dataset,
    summary: object,
    images: Mapping[str, bytes],
    truth: xr.Dataset | None = None,
) -> str:
    """The HTML report (a complete document as a string).

    ``summary``: extra entries for the tables, a mapping or dataclass
    (:func:`summary_entries`), e.g. the summary of
    :func:`rankmodels.tracking.pipeline.track_float` (``run_time_s``, ``collapsed_cycles``, ...).
    Keys in :data:`SUMMARY_KEYS` replace the row of the same meaning computed from ``track``
    (:func:`track_summary_rows`); other keys are added as given. The rows are shown in three
    tables, settings, results and provenance (:data:`SECTIONS`). ``images``: figure name ->
    PNG bytes, embedded (:func:`png_data_uri`) in the given order; the names "map", "toa" and
    "diagnostics" get standard captions. ``truth``: the true track of a simulated record
    (``lat``, ``lon``, ``true_label``, same cycles), compared with the track in its own table
    (:func:`rankmodels.plots.track_summary.truth_comparison`).
    """
    rows = track_summary_rows(track)
    for key, value in summary_entries(summary).items():
        label, convert = summary_label(str(key))
        rows[label] = convert(value) if convert is not None and value is not None else value
    float_id = rows.get("Float", track.attrs.get("float_id", "?"))
    simulated = bool(rows.get("Simulated data"))
    badge = '<span class="badge">simulated data</span>' if simulated else ""
    figures = []
    for name, png in images.items():
        caption = FIGURE_CAPTIONS.get(str(name), str(name))
        figures.append(
            f'<figure id="fig-{esc(name)}">\n'
            f'<img src="{png_data_uri(str(name), png)}" alt="{esc(caption)}">\n'
            f"<figcaption>{esc(caption)}</figcaption>\n</figure>"
        )
    tables = split_rows(rows)
    title = f"RAFOS float {float_id}: track report"
    subtitle = " · ".join(
        esc(format_value(rows[k])) for k in ("Time span", "Likelihood engine") if k in rows
    )
    return html_document(
        title,
        f"""<h1>{esc(title)}{badge}</h1>
<p class="subtitle">{subtitle}</p>
<h2>Settings</h2>
{_summary_table(tables["settings"], "settings")}
<h2>Results</h2>
{_summary_table(tables["results"], "results")}
{_clutter_note(tables["results"])}
{_collapse_note(track)}
{_quality_note(track)}
{_truth_section(track, truth)}
<h2>Figures</h2>
{"".join(figures) if figures else "<p>No figures.</p>"}
<h2>Association of arrivals to sound sources</h2>
<p>Each recorded arrival is assigned to its most probable origin under the posterior
(a source or clutter); the mean association probability is taken over those arrivals.</p>
{_source_section(track)}
<h2>Provenance</h2>
{_summary_table(tables["provenance"], "provenance")}
<footer>Generated by rankmodels {esc(track.attrs.get("rankmodels_version", ""))}.</footer>""",
    )


def html_document(title: str, body: str, extra_css: str = "") -> str:
    """A complete HTML document: ``title`` (escaped here), the reports' inline style sheet
    followed by ``extra_css``, and ``body`` (HTML, inserted as given)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{_CSS}{extra_css}</style>
</head>
<body>
{body}
</body>
</html>
"""
