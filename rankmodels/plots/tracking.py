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
"ess", "loglik", "uncertainty-km", "collapsed" (and those listed in :mod:`rankmodels.plots.maps`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rankmodels.plots import style
from rankmodels.plots._fields import scalar, span_days, time_limits, times, title, values
from rankmodels.plots.maps import track_map
from rankmodels.plots.track_summary import (
    CLUTTER,
    association_arrays,
    collapsed_cycles,
    source_names,
    source_table,
)
from rankmodels.plots.uncertainty import CONFIDENCE, ELLIPSE_SCALE, position_covariance_km
from rankmodels.text import printable

__all__ = ["diagnostics", "toa_diagram", "track_map"]


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
    t = times(track)
    toa_src = track if "toa" in track else record
    toa = np.asarray(toa_src["toa"].transpose("cycle", "rank").values, dtype=float)
    rows = source_table(track)
    labels, probs = association_arrays(track)
    if toa.shape != labels.shape:
        raise ValueError(f"'toa' has shape {toa.shape} but 'association' has {labels.shape}")
    tt = np.broadcast_to(t[:, None], toa.shape)
    colors = style.source_colors(len(names))

    fig = Figure(figsize=(11.0, 5.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    predicted = None
    if "predicted_toa" in track:
        predicted = np.asarray(
            track["predicted_toa"].transpose("cycle", "source").values, dtype=float
        )
        for i, name in enumerate(names):
            (line,) = ax.plot(t, predicted[:, i], color=colors[i], lw=0.9, alpha=0.75, zorder=2)
            line.set_gid(f"predicted-{name}")

    recorded = np.isfinite(toa)
    for i, name in enumerate(names):
        mask = recorded & (labels == i)
        _arrivals(ax, tt[mask], toa[mask], probs[mask], colors[i], f"arrivals-{name}", s=11)
    mask = recorded & (labels == CLUTTER)
    clutter_rgba = to_rgba(style.CLUTTER_COLOR)
    _arrivals(ax, tt[mask], toa[mask], probs[mask], clutter_rgba, "clutter", s=14, marker="x")

    window = scalar(record, "window_length")
    if window is not None:
        ax.set_ylim(0.0, window)
    elif recorded.any():
        lo, hi = np.nanmin(toa), np.nanmax(toa)
        pad = 0.04 * max(hi - lo, 1.0)
        ax.set_ylim(lo - pad, hi + pad)
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
            label=f"{printable(name)} ({rows[i].arrivals})",
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
    ax.set_title(title(track, record, "arrival times"), fontsize=11, loc="left", pad=16)
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
    """Effective sample size, per-cycle predictive log-likelihood log p(T_t | T_1:t-1) and, when
    the track has a position covariance, the semi-major axis of the 95 % position ellipse (km)
    over time; cycles where the filter collapsed (``track_summary.collapsed_cycles``) in red."""
    t = times(track)
    ess = values(track, "ess")
    loglik = values(track, "loglik")
    if ess is None or loglik is None:
        raise ValueError("track has no 'ess'/'loglik' variables")
    collapsed = collapsed_cycles(track)
    particles = track.attrs.get("particles")

    cov = position_covariance_km(track)
    fig = Figure(figsize=(11.0, 4.6 if cov is None else 6.4), layout="constrained")
    axes = list(fig.subplots(2 if cov is None else 3, 1, sharex=True))
    ax_ess, ax_ll = axes[:2]
    (line,) = ax_ess.plot(t, ess, color="#1f4e79", lw=0.9)
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
    (line,) = ax_ll.plot(t, np.where(finite, loglik, np.nan), color="#7b3f00", lw=0.9)
    line.set_gid("loglik")
    ax_ll.set_ylabel(r"$\log p(T_t \mid T_{1:t-1})$")
    if cov is not None:
        major = ELLIPSE_SCALE * np.sqrt(np.clip(np.linalg.eigvalsh(cov)[:, -1], 0.0, None))
        (line,) = axes[2].plot(t, major, color="#4b6f96", lw=0.9)
        line.set_gid("uncertainty-km")
        axes[2].set_ylabel(f"{CONFIDENCE:.0%} ellipse\nsemi-major axis (km)")
        axes[2].set_ylim(bottom=0.0)
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
    ax_ess.set_title(title(track, None, "filter diagnostics"), fontsize=11, loc="left")
    return fig
