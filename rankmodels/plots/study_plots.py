"""Figures of the simulation studies (:mod:`rankmodels.studies`).

:func:`metric_versus_clutter` is [Pareek2017] Figure 5.8: a metric's mean over replicates
against the clutter rate ``lambda`` (top axis ``P_C = lambda / (1 + lambda)``), one line per
likelihood engine with error bars of +-2 standard errors, one panel per trajectory, on one
fixed y scale (log by default: the same scale whatever the numbers of a run, shared by the
panels; the legend below the panels, clear of the bars). :func:`example_tracks` is Figures
5.6a / 5.7a: the true path, the sound sources and the filtered tracks of several engines in
the plane, in km. :func:`tracking_clutter_figures` draws all the
figures of a :func:`rankmodels.studies.tracking_clutter.tracking_clutter_study` run (what
``rankmodels study tracking-clutter`` writes). All return fresh
:class:`matplotlib.figure.Figure` objects (object-oriented API, no pyplot state).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rankmodels.plots.style import TRUTH_COLOR
from rankmodels.studies import StudyResult
from rankmodels.studies import tracking_clutter as clutter_study

__all__ = [
    "ENGINE_LABELS",
    "MSE_LABEL",
    "example_tracks",
    "metric_versus_clutter",
    "tracking_clutter_figures",
]

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


#: y label of the MSE panels (the study's planar units converted: 1 unit =
#: :data:`rankmodels.studies.tracking_clutter.UNIT_KM` km).
MSE_LABEL = "mean squared position error (km²)"


def metric_versus_clutter(
    summary: pd.DataFrame,
    metric: str = "mse",
    *,
    ylabel: str | None = None,
    yscale: str = "log",
) -> Figure:
    """Figure 5.8 from :meth:`rankmodels.studies.StudyResult.summary` rows (columns
    ``trajectory, clutter_rate, engine, metric, n, mean, se``).

    ``yscale`` ("log" or "linear") is fixed, not chosen from the numbers, so runs of a study
    are drawn alike; the panels share it and their y limits. On a log scale a bar whose lower
    end mean - 2 SE is <= 0 cannot be drawn: it is cut at the bottom of the axes, which lies
    a factor 2 below the lowest mean or positive bar end (:func:`log_bars`). The legend sits
    below the panels. Raises ValueError when ``metric`` has no rows, for another ``yscale``,
    or for a log scale with a mean <= 0."""
    if yscale not in ("log", "linear"):
        raise ValueError(f"yscale must be 'log' or 'linear', got {yscale!r}")
    rows = summary[summary["metric"] == metric]
    if rows.empty:
        raise ValueError(f"no summary rows for metric {metric!r}")
    if yscale == "log" and not (rows["mean"] > 0).all():
        raise ValueError(f"{metric!r} has means <= 0: use yscale='linear'")
    trajectories = list(dict.fromkeys(rows["trajectory"]))
    fig = Figure(figsize=(5.2 * len(trajectories), 4.6), layout="constrained")
    axes = fig.subplots(1, len(trajectories), squeeze=False, sharey=True)[0]
    bottom = None
    if yscale == "log":
        bottom, _ = log_bars(rows["mean"].to_numpy(float), rows["se"].fillna(0.0).to_numpy(float))
    for ax, trajectory in zip(axes, trajectories, strict=True):
        part = rows[rows["trajectory"] == trajectory]
        for engine in dict.fromkeys(part["engine"]):
            line = part[part["engine"] == engine].sort_values("clutter_rate")
            color, marker, dash = _STYLE.get(engine, (None, "D", ":"))
            mean, se = line["mean"].to_numpy(float), line["se"].fillna(0.0).to_numpy(float)
            yerr = 2.0 * se if bottom is None else log_bars(mean, se, bottom)[1]
            ax.errorbar(
                line["clutter_rate"],
                mean,
                yerr=yerr,
                color=color,
                marker=marker,
                linestyle=dash,
                capsize=3,
                label=ENGINE_LABELS.get(engine, engine),
                gid=f"engine-{engine}",
            )
        ax.set_yscale(yscale)
        ax.set_xlabel(r"clutter rate $\lambda$ (Poisson mean per window)")
        n = int(part["n"].min())
        ax.set_title(f"{trajectory} trajectory ({n} paired replicates, ±2 SE)", fontsize=10)
        top = ax.secondary_xaxis(
            "top", functions=(_p_clutter, lambda p: p / np.clip(1.0 - p, 1e-9, None))
        )
        lams = np.unique(part["clutter_rate"].to_numpy(dtype=float))
        top.set_xticks(_p_clutter(lams), [f"{p:.2g}" for p in _p_clutter(lams)])
        top.set_xlabel(r"$P_C = \lambda / (1 + \lambda)$ at the studied $\lambda$")
        ax.grid(alpha=0.3, which="both")
    if bottom is not None:
        axes[0].set_ylim(bottom=bottom)
    axes[0].set_ylabel(ylabel or metric)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    return fig


def log_bars(mean: np.ndarray, se: np.ndarray, bottom: float | None = None):
    """For a log axis: its bottom (half the smallest of the means and the positive lower
    ends mean - 2 SE) and the ``(2, n)`` lower / upper bar lengths, the lower ones cut so that
    no bar goes below ``bottom`` (default: that bottom)."""
    low = mean - 2.0 * se
    floor = 0.5 * float(np.min(np.r_[mean, low[low > 0]]))
    bottom = floor if bottom is None else bottom
    return bottom, np.vstack([mean - np.maximum(low, bottom), 2.0 * se])


def _p_clutter(lam: np.ndarray) -> np.ndarray:
    lam = np.clip(np.asarray(lam, dtype=float), 0.0, None)
    return lam / (1.0 + lam)


def example_tracks(
    truth: np.ndarray,
    sources: np.ndarray,
    tracks: Mapping[str, np.ndarray],
    *,
    title: str = "",
    unit: str = "km",
) -> Figure:
    """Figures 5.6a / 5.7a: ``truth`` (T, 2) and each engine's ``tracks[engine]`` (T, 2)
    positions and the sound ``sources`` (s, 2) in the plane, in ``unit``."""
    fig = Figure(figsize=(5.6, 6.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(*sources.T, "k^", markersize=7, label="sound sources", gid="sources")
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
    ax.set_xlabel(f"east ({unit})")
    ax.set_ylabel(f"north ({unit})")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    return fig


def tracking_clutter_figures(result: StudyResult) -> dict[str, Figure]:
    """Every figure of a tracking-clutter study run, by file stem: ``NAME`` (Figure 5.8, the
    MSE in km², the study's planar units² times ``UNIT_KM``²) and, per trajectory,
    ``NAME_example_TRAJECTORY`` (Figures 5.6a / 5.7a in km: replicate 0 at the highest clutter
    rate, re-simulated and tracked by each engine of the run with its particles, cycles and
    seed), ``NAME`` being the study's name."""
    name = result.attrs["study"]
    records = result.records
    km2 = clutter_study.UNIT_KM**2
    mse = result.summary(["mse"]).assign(mean=lambda d: d["mean"] * km2, se=lambda d: d["se"] * km2)
    figures = {name: metric_versus_clutter(mse, "mse", ylabel=MSE_LABEL)}
    highest = float(records["clutter_rate"].max())
    engines = list(dict.fromkeys(records["engine"]))
    for trajectory in dict.fromkeys(records["trajectory"]):
        truth, tracks = clutter_study.example_tracks(
            trajectory,
            clutter_rate=highest,
            engines=engines,
            cycles=int(result.attrs["fixed_cycles"]),
            particles=int(result.attrs["fixed_particles"]),
            seed=int(result.attrs["seed"]),
        )
        unit = clutter_study.UNIT_KM
        figures[f"{name}_example_{trajectory}"] = example_tracks(
            truth * unit,
            clutter_study.beacons() * unit,
            {engine: np.asarray(xy) * unit for engine, xy in tracks.items()},
            title=f"{trajectory}, λ = {highest:g} (replicate 0)",
        )
    return figures
