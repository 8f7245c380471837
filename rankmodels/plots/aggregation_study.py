"""Figure of the aggregation study (:mod:`rankmodels.studies.aggregation_study`), [Pareek2017]
Figure 4.1.

One row per experiment. The first panel is the distributional limit: each rule's exact score
gap ``(f(A) - f(B)) / Omega_h`` against the weight ``w`` of ``Z1``, with the weight at which
the majority turns to A (``P_{A<B} = 1/2``) dotted; a rule ranks A above B right of its zero
crossing (marked by a dot). The other panels are Figure 4.1 proper: the probability that the
rule ranks A above B on a profile of ``N`` sampled votes (mean over replicates, thin bars
+-2 standard errors cut to [0, 1], as the legend says), one panel per ``N``, with the
fraction of profiles whose majority prefers A in grey. Convex rules
(plurality, log) are drawn in blues, concave ones (antiplurality, squared) in reds, Borda in
black. Returns a fresh :class:`matplotlib.figure.Figure` (no pyplot state).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

__all__ = ["RULE_STYLE", "success_versus_weight"]

#: rule -> (colour, line style, legend label)
RULE_STYLE = {
    "borda": ("black", "-", "Borda (linear)"),
    "plurality": ("#08519c", "--", "plurality (convex limit)"),
    "log": ("#6baed6", "-", "log (convex)"),
    "antiplurality": ("#a50f15", "--", "antiplurality (concave limit)"),
    "squared": ("#fb6a4a", "-", "squared (concave)"),
}


def success_versus_weight(exact: xr.Dataset, summary: pd.DataFrame | None = None) -> Figure:
    """The study figure from :func:`~rankmodels.studies.aggregation_study.exact_study` and
    (optionally) the simulated part's :meth:`~rankmodels.studies.StudyResult.summary` rows
    (columns ``experiment, voters, weight, metric, mean, se``)."""
    experiments = [int(x) for x in exact["experiment"].values]
    voters = [] if summary is None else sorted({int(v) for v in summary["voters"]})
    ncols = 1 + len(voters)
    fig = Figure(figsize=(3.6 * ncols, 3.2 * len(experiments) + 0.8), layout="constrained")
    axes = fig.subplots(len(experiments), ncols, squeeze=False)
    rules = [str(r) for r in exact["rule"].values]
    for row, experiment in zip(axes, experiments, strict=True):
        part = exact.sel(experiment=experiment)
        ax = row[0]
        for rule in rules:
            color, dash, label = RULE_STYLE.get(rule, (None, ":", rule))
            ax.plot(
                part["weight"],
                part["score_gap"].sel(rule=rule),
                color=color,
                linestyle=dash,
                label=label,
                gid=f"exact-{experiment}-{rule}",
            )
            ax.plot(float(part["w_success"].sel(rule=rule)), 0.0, "o", color=color, markersize=4)
        ax.axhline(0.0, color="0.5", linewidth=0.8)
        ax.axvline(float(part["w_majority"]), color="0.5", linestyle=":", linewidth=1)
        ax.set_ylabel(f"experiment {experiment}\n" + r"$(f(A) - f(B)) / \Omega_h$")
        ax.set_title("limit of infinitely many votes (exact)", fontsize=9)
        for panel, n_voters in zip(row[1:], voters, strict=True):
            rows = summary[(summary["experiment"] == experiment) & (summary["voters"] == n_voters)]
            for rule in [*rules, "majority"]:
                line = rows[rows["metric"] == rule].sort_values("weight")
                if line.empty:
                    continue
                color, dash, label = RULE_STYLE.get(rule, ("0.6", ":", "majority prefers A"))
                mean = line["mean"].to_numpy(float)
                band = 2.0 * line["se"].fillna(0.0).to_numpy(float)
                panel.plot(line["weight"], mean, color=color, linestyle=dash,
                           label=label, gid=f"sim-{experiment}-{n_voters}-{rule}")  # fmt: skip
                panel.vlines(
                    line["weight"], np.clip(mean - band, 0.0, 1.0),
                    np.clip(mean + band, 0.0, 1.0), color=color, linewidth=0.7, alpha=0.7,
                    gid=f"se-{experiment}-{n_voters}-{rule}",
                )  # fmt: skip
            panel.set_ylim(-0.02, 1.02)
            panel.set_title(f"N = {n_voters} votes: P(A ranked above B)", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel(r"weight $w$ of $Z_1$")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    handles, labels = axes[0, -1].get_legend_handles_labels()
    if voters:
        handles.append(Line2D([], [], color="0.3", marker="|", markersize=9, linestyle="none"))
        labels.append("±2 standard errors over the replicates (cut to [0, 1])")
    fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)), fontsize=8)
    fig.suptitle(
        f"Section 4.6: Mallows mixtures, φ = {float(exact.attrs['phi']):g} (dotted: majority "
        "turns to A)",
        fontsize=10,
    )
    return fig
