"""Figure of the surrogate-scale study (:mod:`rankmodels.studies.surrogate_scale`),
[Pareek2017] Figure 3.6.

One row per data set. Left: mean test NDCG@N against the cut-off N = 1..10, one line per
scale ``beta`` (Figure 3.6's layout; darker = larger ``beta``). Right: mean test NDCG@1,
@5 and @10 against ``beta`` (log axis), bars +-2 standard errors over the replicates.
Returns a fresh :class:`matplotlib.figure.Figure` (no pyplot state).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

__all__ = ["ndcg_versus_scale"]


def _label(data: str) -> str:
    """A short name of a data path (its folder and file), or the name itself."""
    path = Path(data)
    return f"{path.parent.name}/{path.name}" if path.parent.name else data


def ndcg_versus_scale(summary: pd.DataFrame) -> Figure:
    """The figure from the study's :meth:`~rankmodels.studies.StudyResult.summary` rows
    (columns ``data, beta, metric, mean, se``; metrics ``ndcg@1`` .. ``ndcg@10``)."""
    datasets = list(dict.fromkeys(summary["data"]))
    fig = Figure(figsize=(9.0, 3.2 * len(datasets) + 0.4), layout="constrained")
    axes = fig.subplots(len(datasets), 2, squeeze=False)
    cutoffs = list(range(1, 11))
    for (left, right), data in zip(axes, datasets, strict=True):
        part = summary[summary["data"] == data]
        betas = sorted(set(part["beta"]))
        shades = colormaps["viridis_r"](np.linspace(0.15, 0.95, len(betas)))
        for beta, colour in zip(betas, shades, strict=True):
            rows = part[part["beta"] == beta].set_index("metric")
            means = [rows.loc[f"ndcg@{k}", "mean"] for k in cutoffs]
            left.plot(cutoffs, means, color=colour, marker=".", label=f"β = {beta:g}")
        left.set(xlabel="N", ylabel="test NDCG@N", title=_label(data), xticks=cutoffs)
        left.legend(fontsize="x-small", ncol=2)
        for k, style in ((1, ":"), (5, "--"), (10, "-")):
            rows = part[part["metric"] == f"ndcg@{k}"].sort_values("beta")
            right.errorbar(
                rows["beta"],
                rows["mean"],
                yerr=2 * rows["se"].fillna(0.0),
                linestyle=style,
                color="black",
                capsize=2,
                label=f"NDCG@{k}",
            )
        right.set(xscale="log", xlabel="β (scale of the surrogate)", ylabel="test NDCG")
        right.set_title("mean ± 2 SE over replicates", fontsize="small")
        right.legend(fontsize="x-small")
    return fig
