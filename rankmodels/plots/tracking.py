"""Figures of a RAFOS float track: map, TOA diagram and filter diagnostics.

All functions build a fresh :class:`matplotlib.figure.Figure` with the object-oriented API (no
pyplot state, thread-safe, nothing leaks); save it with
``fig.savefig(path, dpi=rankmodels.plots.style.FIGURE_DPI)``. The map lives in
:mod:`rankmodels.plots.maps` and is re-exported here.

Inputs follow the tracking contract: ``track`` is the ``track-float`` output (``association``,
``association_prob``, ``toa`` (cycle, rank), ``predicted_toa`` (cycle, source), ``ess``,
``loglik``, optional ``collapsed`` (cycle)); ``record`` the validated float record (optional
``window_length``).

Artists carrying data have a ``gid``: "arrivals-<source>", "clutter", "predicted-<source>",
"silent-sources", "ess", "loglik", "uncertainty-km", "error-km", "collapsed" (and those listed
in :mod:`rankmodels.plots.maps`). Lines mark the points that have no valid neighbour, so a
one-cycle record or a value between gaps is drawn too.
"""

from __future__ import annotations

import io
import textwrap

import numpy as np
import xarray as xr
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rankmodels.plots import style
from rankmodels.plots._fields import (
    figure_text,
    isolated,
    scalar,
    span_days,
    time_limits,
    times,
    title,
    values,
)
from rankmodels.plots.maps import track_map
from rankmodels.plots.track_summary import (
    CLUTTER,
    association_arrays,
    collapsed_cycles,
    source_names,
    source_table,
    track_kind,
)
from rankmodels.plots.uncertainty import CONFIDENCE, ELLIPSE_SCALE, position_covariance_km
from rankmodels.tracking.evaluate import position_error_km
from rankmodels.tracking.geometry import tangent_offsets

__all__ = ["diagnostics", "figure_png", "toa_diagram", "track_figures_png", "track_map"]

REPORT_DPI = 120
"""Resolution of the figures written beside and embedded in the ``track-float`` report."""


def _arrivals(ax, x, y, probs, rgba, gid: str, **kwargs) -> None:
    """Scatter of arrivals in colour ``rgba`` with opacity 0.15 + 0.85 p (p = probability)."""
    colors = np.tile(np.asarray(rgba, dtype=float), (max(len(x), 1), 1))
    colors[: len(x), 3] = 0.15 + 0.85 * np.nan_to_num(np.clip(probs, 0.0, 1.0), nan=0.0)
    marker = kwargs.pop("marker", "o")
    style_kw = {"linewidths": 0.8} if marker == "x" else {"edgecolors": "none"}
    sc = ax.scatter(x, y, c=colors, marker=marker, zorder=3, **style_kw, **kwargs)
    sc.set_gid(gid)


def _series(ax, t: np.ndarray, y: np.ndarray, gid: str, **kwargs) -> Line2D:
    """``y`` against ``t`` as a line, with a marker on each point that has no finite neighbour
    (a line alone would not show it)."""
    alone = np.flatnonzero(isolated(np.isfinite(y)))
    marker = {"marker": "o", "markersize": 3.5, "markevery": list(alone)} if alone.size else {}
    (line,) = ax.plot(t, y, **marker, **kwargs)
    line.set_gid(gid)
    return line


def _wrapped(names: list[str], width: int) -> str:
    """``names`` joined by ", " into lines of at most ``width`` characters (longer names alone)."""
    lines = [""]
    for k, name in enumerate(names):
        piece = name if k == len(names) - 1 else f"{name}, "
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


SUBTITLE_CHARS = 125
"""Characters a line of the TOA diagram's subtitle holds (8 pt over the axes' width): longer
notes wrap instead of running into the legend."""


def toa_limits(values: np.ndarray, window: float | None) -> tuple[float, float]:
    """y limits of the TOA diagram: the finite ``values`` (recorded and predicted TOAs, s)
    with a margin of 4 % of their range (at least 10 s), inside [0, ``window``] when the
    listening window is known; the whole window (or 0..1 s) without any value."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, window if window is not None else 1.0
    lo, hi = float(finite.min()), float(finite.max())
    pad = max(0.04 * (hi - lo), 10.0)
    lo, hi = lo - pad, hi + pad
    if window is not None:
        lo, hi = max(lo, 0.0), min(hi, window)
    return lo, hi


def toa_diagram(record: xr.Dataset, track: xr.Dataset) -> Figure:
    """Arrival times against date, each arrival coloured by its most probable source.

    Dots: recorded arrivals, in the colour of the source the filter associates them with; the
    opacity grows with the association probability (alpha = 0.15 + 0.85 p). Grey crosses:
    arrivals called clutter. Lines: each source's predicted TOA at the posterior track
    (``predicted_toa``, with the calibrated sound speed, clock and source offsets when the
    track was calibrated), gaps where the source is inactive. Sources with no associated arrival
    are neither drawn nor in the legend; a note below the legend names them. The y range fits
    the arrivals and curves (:func:`toa_limits`), inside the listening window when
    ``window_length`` is known.
    """
    names = source_names(track)
    t = times(track)
    toa_src = track if "toa" in track else record
    toa = np.asarray(toa_src["toa"].transpose("cycle", "rank").values, dtype=float)
    rows = source_table(track)
    labels, probs = association_arrays(track)
    if toa.shape != labels.shape:
        raise ValueError(f"'toa' has shape {toa.shape} but 'association' has {labels.shape}")
    tt = np.broadcast_to(t[:, None], toa.shape)
    colors = style.source_colors(len(names))
    recorded = np.isfinite(toa)
    heard = [i for i in range(len(names)) if rows[i].arrivals > 0]
    silent = [figure_text(names[i]) for i in range(len(names)) if rows[i].arrivals == 0]

    fig = Figure(figsize=(11.0, 5.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    predicted = None
    if "predicted_toa" in track:
        predicted = np.asarray(
            track["predicted_toa"].transpose("cycle", "source").values, dtype=float
        )
        for i in heard:
            _series(
                ax, t, predicted[:, i], f"predicted-{names[i]}",
                color=colors[i], lw=0.9, alpha=0.75, zorder=2,
            )  # fmt: skip

    for i in heard:
        name = names[i]
        mask = recorded & (labels == i)
        _arrivals(ax, tt[mask], toa[mask], probs[mask], colors[i], f"arrivals-{name}", s=11)
    mask = recorded & (labels == CLUTTER)
    clutter_rgba = to_rgba(style.CLUTTER_COLOR)
    _arrivals(ax, tt[mask], toa[mask], probs[mask], clutter_rgba, "clutter", s=14, marker="x")

    window = scalar(record, "window_length")
    shown = [toa[recorded]]
    if predicted is not None:
        shown.append(predicted[:, heard].ravel())
    ax.set_ylim(*toa_limits(np.concatenate(shown), window))
    if (limits := time_limits(t)) is not None:
        ax.set_xlim(*limits)
    style.date_axis(ax.xaxis, span_days(t))
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
            label=f"{figure_text(names[i])} ({rows[i].arrivals})",
        )
        for i in heard
    ]
    if rows[-1].arrivals:
        legend_handles.append(
            Line2D(
                [],
                [],
                ls="none",
                marker="x",
                color=style.CLUTTER_COLOR,
                markersize=6,
                label=f"clutter ({rows[-1].arrivals})",
            )
        )
    legend = ax.legend(
        handles=legend_handles,
        title="most probable source\n(count of arrivals)",
        title_fontsize=8,
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    if silent:
        ax.annotate(
            "no arrival associated with\n" + _wrapped(silent, 24),
            xy=(0.0, 0.0), xycoords=legend, xytext=(8, -4), textcoords="offset points",
            fontsize=7.5, color="0.35", va="top", ha="left",
        ).set_gid("silent-sources")  # fmt: skip
    calibrated = str(track.attrs.get("calibrated", "")).replace(",", ", ")
    note = textwrap.wrap(
        "dots: recorded arrivals by most probable source (opacity = association probability); "
        "lines: predicted TOA at the estimated track"
        + (f" (calibrated: {calibrated})" if calibrated else "")
        + (f"; listening window 0–{window:g} s" if window is not None else ""),
        SUBTITLE_CHARS,
    )
    ax.set_title(
        title(track, record, "arrival times"), fontsize=11, loc="left", pad=5 + 11 * len(note)
    )
    ax.annotate(
        "\n".join(note),
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


def diagnostics(track: xr.Dataset, truth: xr.Dataset | None = None) -> Figure:
    """Filter diagnostics over time, one panel each, titled in words with their units.

    1. Effective sample size ESS = 1 / sum_i w_i^2 of the forward filter's normalised particle
       weights after each cycle's update (N particles: ESS = N when all weigh the same, 1 when
       one particle carries all the weight).
    2. Predictive log-likelihood log p(T_t | T_1:t-1) of each cycle's arrival times under the
       forward filter, in nats; it is the log of a density over the m arrival times in seconds
       (units s^-m), 0 for a cycle without arrivals.
    3. When the track has a position covariance: the semi-major axis of its 95 % position
       ellipse (km), of the smoothed or filtered track as the track says; with ``truth`` (same
       cycles) also the distance from the track to the true position (km).
    4. When the track has velocities (the Lagrangian motion): the smoothed velocity east and
       north (cm/s) with its ± 2 standard-error band; with ``truth`` also the true velocity of
       the day into each cycle.

    Cycles where the filter collapsed (``track_summary.collapsed_cycles``) in red.
    """
    t = times(track)
    ess = values(track, "ess")
    loglik = values(track, "loglik")
    if ess is None or loglik is None:
        raise ValueError("track has no 'ess'/'loglik' variables")
    collapsed = collapsed_cycles(track)
    particles = track.attrs.get("particles")
    cov = position_covariance_km(track)
    error = None if truth is None else position_error_km(track, truth)
    kind = track_kind(track)

    third = cov is not None or error is not None
    has_velocity = "velocity_east" in track.data_vars
    panels = 2 + third + has_velocity
    fig = Figure(figsize=(11.0, 1.0 + 1.95 * panels), layout="constrained")
    axes = list(fig.subplots(panels, 1, sharex=True))
    ax_ess, ax_ll = axes[:2]
    _series(ax_ess, t, ess, "ess", color="#1f4e79", lw=0.9)
    n_text = f" (N = {int(particles)} particles)" if particles else ""
    if particles:
        ax_ess.axhline(float(particles), color="0.6", lw=0.8, ls=":")
    ax_ess.set_yscale("log")
    ax_ess.set_ylabel("ESS (particles)")
    ax_ess.set_title(
        "effective sample size ESS = 1 / Σ w² of the forward filter's particle weights after "
        f"each update{n_text}",
        fontsize=9, loc="left",
    )  # fmt: skip

    finite = np.isfinite(loglik)
    _series(ax_ll, t, np.where(finite, loglik, np.nan), "loglik", color="#7b3f00", lw=0.9)
    ax_ll.set_ylabel("nats")
    ax_ll.set_title(
        r"predictive log-likelihood $\log p(T_t \mid T_{1:t-1})$ of each cycle's arrival times "
        r"(forward filter; log of a density in s$^{-m}$ for $m$ arrivals)",
        fontsize=9, loc="left",
    )  # fmt: skip
    if third:
        ax = axes[2]
        parts = []
        if cov is not None:
            major = ELLIPSE_SCALE * np.sqrt(np.clip(np.linalg.eigvalsh(cov)[:, -1], 0.0, None))
            _series(ax, t, major, "uncertainty-km", color="#4b6f96", lw=0.9,
                    label=f"{CONFIDENCE:.0%} ellipse semi-major axis")  # fmt: skip
            parts.append(f"semi-major axis of the {CONFIDENCE:.0%} position ellipse")
        if error is not None:
            _series(ax, t, error, "error-km", color=style.TRUTH_COLOR, lw=0.9, ls=(0, (4, 2)),
                    label="distance to the true position")  # fmt: skip
            parts.append("distance to the true position")
            ax.legend(fontsize=8, loc="upper right")
        ax.set_ylabel("km")
        ax.set_ylim(bottom=0.0)
        ax.set_title(f"{' and '.join(parts)} of the {kind}", fontsize=9, loc="left")
    if has_velocity:
        _velocity_panel(axes[-1], track, truth, t)
    axes[-1].set_xlabel("date")
    if collapsed.any():
        for ax in axes:
            for when in t[collapsed]:
                ax.axvline(when, color="#d62728", lw=0.8, alpha=0.6, zorder=0)
        sc = ax_ess.scatter(
            t[collapsed],
            np.where(np.isfinite(ess[collapsed]), ess[collapsed], 1.0),
            color="#d62728",
            s=14,
            zorder=3,
            label=f"collapse ({int(collapsed.sum())} cycles)",
        )
        sc.set_gid("collapsed")
        ax_ess.legend(fontsize=8, loc="lower left")
    for ax in axes:
        ax.grid(True, lw=0.4, color="0.85")
    style.date_axis(axes[-1].xaxis, span_days(t))
    if (limits := time_limits(t)) is not None:
        axes[-1].set_xlim(*limits)
    fig.suptitle(title(track, None, f"filter diagnostics ({kind})"), fontsize=11, x=0.01, ha="left")
    return fig


def _true_velocity(truth: xr.Dataset, t: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``axis -> (times, m/s)``: the truth's ``velocity_east``/``_north`` at the cycle times
    ``t`` when it holds them, else the day-into-each-cycle velocity of its positions' steps
    (from the second cycle)."""
    if "velocity_east" in truth:
        return {axis: (t, np.asarray(truth[f"velocity_{axis}"].values, dtype=float))
                for axis in ("east", "north")}  # fmt: skip
    lat, lon = truth["lat"].values, truth["lon"].values
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    seconds = np.diff(t).astype("timedelta64[s]").astype(float)
    return {"east": (t[1:], east * 1000.0 / seconds), "north": (t[1:], north * 1000.0 / seconds)}


def _velocity_panel(ax, track: xr.Dataset, truth: xr.Dataset | None, t: np.ndarray) -> None:
    """The smoothed velocity east and north (cm/s, ± 2 standard errors) and, with ``truth``,
    the true velocity: the truth's instantaneous one at the cycles when it states it (a
    drifting float), else that of the day into each cycle (its positions' differences)."""
    cm_s = 100.0  # cm/s per m/s
    for axis, color in (("east", "#1f4e79"), ("north", "#7b3f00")):
        v = np.asarray(track[f"velocity_{axis}"].values, dtype=float) * cm_s
        sd = np.asarray(track[f"velocity_{axis}_std"].values, dtype=float) * cm_s
        ax.fill_between(t, v - 2 * sd, v + 2 * sd, color=color, alpha=0.18, lw=0)
        _series(ax, t, v, f"velocity-{axis}", color=color, lw=0.9, label=f"{axis}ward")
    if truth is not None and truth.sizes.get("cycle") == t.size:
        for name, (times, true_v) in _true_velocity(truth, t).items():
            _series(ax, times, true_v * cm_s, f"true-velocity-{name}", color=style.TRUTH_COLOR,
                    lw=0.6, ls=(0, (4, 2)))  # fmt: skip
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_ylabel("cm/s")
    ax.legend(fontsize=8, loc="upper right", ncols=2)
    truth_text = "; dashed: the true velocity" if truth is not None else ""
    ax.set_title(f"smoothed velocity with ± 2 standard errors{truth_text}", fontsize=9,
                 loc="left")  # fmt: skip


# --------------------------------------------------------------------------------------------
# the figures of a run, as PNG
# --------------------------------------------------------------------------------------------


def figure_png(fig: Figure, dpi: int = REPORT_DPI) -> bytes:
    """The PNG bytes of ``fig`` at ``dpi``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def track_figures_png(
    record: xr.Dataset, track: xr.Dataset, truth: xr.Dataset | None = None, dpi: int = REPORT_DPI
) -> dict[str, bytes]:
    """PNG bytes of the figures of a tracking run, by name: "map" (:func:`track_map`, with the
    true track when ``truth`` is given), "toa" (:func:`toa_diagram`) and "diagnostics"
    (:func:`diagnostics`, with the distance to the truth)."""
    return {
        "map": figure_png(track_map(record, track, truth), dpi),
        "toa": figure_png(toa_diagram(record, track), dpi),
        "diagnostics": figure_png(diagnostics(track, truth), dpi),
    }
