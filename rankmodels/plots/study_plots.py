"""Figures of the simulation studies (:mod:`rankmodels.studies`).

:func:`metric_versus_clutter` is dissertation Figure 5.8: a metric's mean over replicates
against the clutter rate ``lambda`` (top axis ``P_C = lambda / (1 + lambda)``), one line per
likelihood engine with error bars of +-2 standard errors, one panel per trajectory.
:func:`example_tracks` is Figures 5.6a / 5.7a: the true path, the beacons and the filtered
tracks of several engines in the plane. Both return a fresh
:class:`matplotlib.figure.Figure` (object-oriented API, no pyplot state).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rankmodels.plots.style import TRUTH_COLOR

__all__ = ["ENGINE_LABELS", "example_tracks", "metric_versus_clutter"]

#: Legend labels of the likelihood engines.
ENGINE_LABELS = {
    "exact": "ranked model, exact sum",
    "bp": "ranked model, belief propagation (paper)",
    "baseline": "baseline, order ignored (eq. 5.72)",
}
_STYLE = {
    "exact": ("#1f77b4", "o", "-"),
    "bp": ("#2ca02c", "s", "--"),
    "baseline": ("#d62728", "^", "-"),
}


def metric_versus_clutter(
    summary: pd.DataFrame, metric: str = "mse", *, ylabel: str | None = None
) -> Figure:
    """Figure 5.8 from :meth:`rankmodels.studies.StudyResult.summary` rows (columns
    ``trajectory, clutter_rate, engine, metric, n, mean, se``). Raises ValueError when
    ``metric`` has no rows."""
    rows = summary[summary["metric"] == metric]
    if rows.empty:
        raise ValueError(f"no summary rows for metric {metric!r}")
    trajectories = list(dict.fromkeys(rows["trajectory"]))
    fig = Figure(figsize=(5.2 * len(trajectories), 4.2), layout="constrained")
    axes = fig.subplots(1, len(trajectories), squeeze=False)[0]
    positive = bool((rows["mean"] > 0).all())
    spread = rows["mean"].max() / rows["mean"].min() if positive else 1.0
    for ax, trajectory in zip(axes, trajectories, strict=True):
        part = rows[rows["trajectory"] == trajectory]
        for engine in dict.fromkeys(part["engine"]):
            line = part[part["engine"] == engine].sort_values("clutter_rate")
            color, marker, dash = _STYLE.get(engine, (None, "D", ":"))
            ax.errorbar(
                line["clutter_rate"],
                line["mean"],
                yerr=2.0 * line["se"].fillna(0.0),
                color=color,
                marker=marker,
                linestyle=dash,
                capsize=3,
                label=ENGINE_LABELS.get(engine, engine),
                gid=f"engine-{engine}",
            )
        if spread > 20:
            ax.set_yscale("log")
        ax.set_xlabel(r"clutter rate $\lambda$ (Poisson mean per window)")
        ax.set_ylabel(ylabel or metric)
        n = int(part["n"].min())
        ax.set_title(f"{trajectory} trajectory ({n} paired replicates, ±2 SE)", fontsize=10)
        top = ax.secondary_xaxis(
            "top", functions=(_p_clutter, lambda p: p / np.clip(1.0 - p, 1e-9, None))
        )
        lams = np.unique(part["clutter_rate"].to_numpy(dtype=float))
        top.set_xticks(_p_clutter(lams), [f"{p:.2g}" for p in _p_clutter(lams)])
        top.set_xlabel(r"$P_C = \lambda / (1 + \lambda)$ at the studied $\lambda$")
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    return fig


def _p_clutter(lam: np.ndarray) -> np.ndarray:
    lam = np.clip(np.asarray(lam, dtype=float), 0.0, None)
    return lam / (1.0 + lam)


def example_tracks(
    truth: np.ndarray, beacons: np.ndarray, tracks: Mapping[str, np.ndarray], *, title: str = ""
) -> Figure:
    """Figures 5.6a / 5.7a: ``truth`` (T, 2) and each engine's ``tracks[engine]`` (T, 2)
    planar positions, ``beacons`` (s, 2), in planar units."""
    fig = Figure(figsize=(5.6, 6.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(*beacons.T, "k^", markersize=7, label="beacons", gid="beacons")
    ax.plot(*truth.T, color=TRUTH_COLOR, linewidth=2.5, label="true path", gid="truth")
    ax.plot(*truth[0], "o", color=TRUTH_COLOR, markersize=6)
    for engine, xy in tracks.items():
        color, marker, dash = _STYLE.get(engine, (None, "D", ":"))
        ax.plot(
            *np.asarray(xy).T,
            color=color,
            linestyle=dash,
            marker=marker,
            markersize=2.5,
            linewidth=1.2,
            label=ENGINE_LABELS.get(engine, engine),
            gid=f"track-{engine}",
        )
    ax.set_aspect("equal")
    ax.set_xlabel("x (planar units)")
    ax.set_ylabel("y (planar units)")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    return fig
