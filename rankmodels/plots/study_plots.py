"""Figures of the simulation studies (:mod:`rankmodels.studies`).

:func:`metric_versus_clutter` is [Pareek2017] Figure 5.8: a metric's mean over replicates
against the clutter rate ``lambda`` (top axis ``P_C = lambda / (1 + lambda)``), one line per
likelihood engine with error bars of +-2 standard errors, one panel per trajectory, on one
fixed y scale (log by default: the same scale whatever the numbers of a run, shared by the
panels). :func:`example_tracks` is Figures 5.6a / 5.7a: the true path, the beacons and the
filtered tracks of several engines in the plane. :func:`tracking_clutter_figures` draws all the
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


#: y label of the MSE panels (planar units of :mod:`rankmodels.studies.tracking_clutter`).
MSE_LABEL = f"MSE (planar units², 1 unit = {clutter_study.UNIT_KM:g} km)"


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
    are drawn alike; the panels share it and their y limits. Raises ValueError when ``metric``
    has no rows, for another ``yscale``, or for a log scale with a mean <= 0."""
    if yscale not in ("log", "linear"):
        raise ValueError(f"yscale must be 'log' or 'linear', got {yscale!r}")
    rows = summary[summary["metric"] == metric]
    if rows.empty:
        raise ValueError(f"no summary rows for metric {metric!r}")
    if yscale == "log" and not (rows["mean"] > 0).all():
        raise ValueError(f"{metric!r} has means <= 0: use yscale='linear'")
    trajectories = list(dict.fromkeys(rows["trajectory"]))
    fig = Figure(figsize=(5.2 * len(trajectories), 4.2), layout="constrained")
    axes = fig.subplots(1, len(trajectories), squeeze=False, sharey=True)[0]
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
    axes[0].set_ylabel(ylabel or metric)
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


def tracking_clutter_figures(result: StudyResult) -> dict[str, Figure]:
    """Every figure of a tracking-clutter study run, by file stem: ``NAME`` (Figure 5.8, the
    MSE) and, per trajectory, ``NAME_example_TRAJECTORY`` (Figures 5.6a / 5.7a: replicate 0 at
    the highest clutter rate, re-simulated and tracked by each engine of the run with its
    particles, cycles and seed), ``NAME`` being the study's name."""
    name = result.attrs["study"]
    records = result.records
    figures = {
        name: metric_versus_clutter(result.summary(["mse"]), "mse", ylabel=MSE_LABEL),
    }
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
        figures[f"{name}_example_{trajectory}"] = example_tracks(
            truth,
            clutter_study.beacons(),
            tracks,
            title=f"{trajectory}, λ = {highest:g} (replicate 0)",
        )
    return figures
