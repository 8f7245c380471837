"""Study figures (rankmodels.plots.study_plots): Figure 5.8 from a summary table, the example
tracks, and that the CLI writes exactly the library's figures."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.text import Text

from rankmodels.plots.aggregation_study import success_versus_weight
from rankmodels.plots.study_plots import (
    MSE_LABEL,
    metric_versus_clutter,
    tracking_clutter_figures,
)
from rankmodels.studies import run_study
from rankmodels.studies.aggregation_study import exact_study
from rankmodels.studies.tracking_clutter import UNIT_KM, example_tracks, tracking_clutter_study
from rankmodels_app.cli import cli

LAMBDAS = (0.0, 1.0, 4.0)


def summary_rows(means: dict[tuple[str, str], list[float]], se: float = 0.001) -> pd.DataFrame:
    """Summary rows (trajectory, clutter_rate, engine, metric, n, mean, se) of given means."""
    rows = [
        {"trajectory": trajectory, "clutter_rate": lam, "engine": engine, "metric": "mse",
         "n": 5, "mean": mean, "se": se}
        for (trajectory, engine), line in means.items()
        for lam, mean in zip(LAMBDAS, line, strict=True)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def error_bars(fig: Figure, engine: str, panel: int):
    """The data line and the vertical error-bar segments of ``engine`` in panel ``panel``."""
    (container,) = [
        c for c in fig.axes[panel].containers if c.lines[0].get_gid() == f"engine-{engine}"
    ]
    data, _, (bars,) = container.lines
    return data, np.asarray(bars.get_segments())


def test_figure_5_8_draws_the_means_with_two_standard_error_bars():
    means = {
        ("straight", "exact"): [0.003, 0.006, 0.03],
        ("straight", "baseline"): [0.05, 0.07, 0.075],
        ("spiral", "exact"): [0.004, 0.01, 0.03],
        ("spiral", "baseline"): [0.02, 0.04, 0.05],
    }
    fig = metric_versus_clutter(summary_rows(means, se=0.0005), "mse", ylabel=MSE_LABEL)
    panels = [ax for ax in fig.axes if ax.get_xlabel().startswith("clutter rate")]
    assert [ax.get_title() for ax in panels][0].startswith("straight trajectory (5 paired")
    for p, trajectory in enumerate(("straight", "spiral")):
        for engine in ("exact", "baseline"):
            line, bars = error_bars(fig, engine, p)
            np.testing.assert_allclose(np.asarray(line.get_xdata(), float), LAMBDAS)
            np.testing.assert_allclose(
                np.asarray(line.get_ydata(), float), means[trajectory, engine]
            )
            np.testing.assert_allclose(bars[:, :, 0], np.c_[LAMBDAS, LAMBDAS])
            np.testing.assert_allclose(bars[:, 0, 1], np.array(means[trajectory, engine]) - 0.001)
            np.testing.assert_allclose(bars[:, 1, 1], np.array(means[trajectory, engine]) + 0.001)
    assert panels[0].get_ylabel() == MSE_LABEL


@pytest.mark.parametrize("spread", [1.5, 200.0])
def test_one_y_scale_whatever_the_numbers(spread):
    """A run whose MSEs span little and one whose MSEs span much get the same (log) scale,
    and the panels share their y limits."""
    means = {
        ("straight", "exact"): [0.01, 0.01 * spread**0.5, 0.01 * spread],
        ("spiral", "exact"): [0.02, 0.02, 0.02],
    }
    fig = metric_versus_clutter(summary_rows(means))
    panels = [ax for ax in fig.axes if ax.get_xlabel().startswith("clutter rate")]
    assert [ax.get_yscale() for ax in panels] == ["log", "log"]
    assert panels[0].get_ylim() == panels[1].get_ylim()
    linear = metric_versus_clutter(summary_rows(means), yscale="linear")
    assert {ax.get_yscale() for ax in linear.axes if ax.get_xlabel()} == {"linear"}


def test_bars_below_zero_are_cut_at_the_log_axis_and_the_legend_covers_none():
    """mean - 2 SE <= 0 cannot be drawn on a log axis: such bars end at the axes' bottom, half
    the lowest mean or positive bar end; the legend is outside every panel."""
    means = {
        ("straight", "exact"): [0.003, 0.006, 0.03],
        ("straight", "baseline"): [0.05, 0.07, 0.075],
    }
    rows = summary_rows(means, se=0.01)  # 2 SE = 0.02 > most means
    fig = metric_versus_clutter(rows)
    (panel,) = [ax for ax in fig.axes if ax.get_xlabel().startswith("clutter rate")]
    low = rows["mean"] - 0.02
    bottom = 0.5 * min(rows["mean"].min(), low[low > 0].min())
    assert panel.get_ylim()[0] == pytest.approx(bottom)
    for engine in ("exact", "baseline"):
        line, bars = error_bars(fig, engine, 0)
        mean = np.array(means["straight", engine])
        np.testing.assert_allclose(bars[:, 0, 1], np.maximum(mean - 0.02, bottom))
        np.testing.assert_allclose(bars[:, 1, 1], mean + 0.02)
    assert panel.get_legend() is None and len(fig.legends) == 1
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    assert not any(legend.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)


def test_aggregation_figure_bars_stay_in_the_unit_interval_and_are_explained():
    exact = exact_study([0.0, 0.5, 1.0])
    rows = [
        {"experiment": e, "voters": n, "weight": w, "metric": m, "mean": mean, "se": 0.2}
        for e in (int(x) for x in exact["experiment"].values)
        for n in (5, 50)
        for w, mean in ((0.0, 0.02), (0.5, 0.5), (1.0, 0.97))
        for m in (*[str(r) for r in exact["rule"].values], "majority")
    ]
    fig = success_versus_weight(exact, pd.DataFrame(rows))
    assert not any(isinstance(c, PolyCollection) for ax in fig.axes for c in ax.collections)
    bars = [c for c in fig.findobj() if str(c.get_gid()).startswith("se-")]
    assert bars
    for c in bars:
        ends = np.concatenate([seg[:, 1] for seg in c.get_segments()])
        assert ends.min() >= 0.0 and ends.max() <= 1.0
    lows = np.concatenate([[seg[0, 1] for seg in c.get_segments()] for c in bars])
    assert (lows == 0.0).any()  # 0.02 - 0.4 was cut
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "±2 standard errors over the replicates (cut to [0, 1])" in labels


def test_figure_5_8_refuses_what_it_cannot_draw():
    rows = summary_rows({("straight", "exact"): [0.01, -0.002, 0.03]})
    with pytest.raises(ValueError, match="means <= 0"):
        metric_versus_clutter(rows)
    metric_versus_clutter(rows, yscale="linear")  # a difference may be negative
    with pytest.raises(ValueError, match="yscale"):
        metric_versus_clutter(rows, yscale="symlog")
    with pytest.raises(ValueError, match="rmse_km"):
        metric_versus_clutter(rows, "rmse_km")


STUDY = {"lambdas": [0.0, 1.5], "engines": ["exact", "baseline"], "replicates": 2,
         "cycles": 4, "particles": 60, "seed": 5}  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run():
    return run_study(tracking_clutter_study(trajectories=["straight", "spiral"], **STUDY))


def test_tracking_clutter_figures_are_figure_5_8_and_the_examples(tiny_run):
    figures = tracking_clutter_figures(tiny_run)
    assert list(figures) == [
        "tracking_clutter",
        "tracking_clutter_example_straight",
        "tracking_clutter_example_spiral",
    ]
    mse = tiny_run.summary(["mse"])
    for p, trajectory in enumerate(("straight", "spiral")):
        for engine in STUDY["engines"]:
            part = mse[(mse["trajectory"] == trajectory) & (mse["engine"] == engine)]
            line, _ = error_bars(figures["tracking_clutter"], engine, p)
            np.testing.assert_allclose(
                np.asarray(line.get_ydata(), float),
                part.sort_values("clutter_rate")["mean"] * UNIT_KM**2,
            )
    # the examples: replicate 0 at the highest clutter rate, re-tracked with the run's settings
    truth, tracks = example_tracks(
        "spiral", clutter_rate=1.5, engines=STUDY["engines"], cycles=4, particles=60, seed=5
    )
    fig = figures["tracking_clutter_example_spiral"]
    (ax,) = fig.axes
    assert ax.get_title() == "spiral, λ = 1.5 (replicate 0)"
    for engine, xy in tracks.items():  # in km
        (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == f"track-{engine}"]
        np.testing.assert_allclose(np.c_[line.get_xdata(), line.get_ydata()], xy * UNIT_KM)
    (true_line,) = [ln for ln in ax.get_lines() if ln.get_gid() == "truth"]
    np.testing.assert_allclose(true_line.get_xdata(), truth[:, 0] * UNIT_KM)
    assert ax.get_xlabel() == "east (km)" and ax.get_ylabel() == "north (km)"
    texts = [t.get_text() for f in figures.values() for t in f.findobj(Text)]
    assert "sound sources" in texts and not any("beacon" in t for t in texts)
    # the MSE in km²: the study's planar units² times UNIT_KM²
    line, _ = error_bars(figures["tracking_clutter"], "exact", 0)
    part = mse[(mse["trajectory"] == "straight") & (mse["engine"] == "exact")]
    np.testing.assert_allclose(
        np.asarray(line.get_ydata(), float),
        part.sort_values("clutter_rate")["mean"] * UNIT_KM**2,
    )
    assert "km²" in figures["tracking_clutter"].axes[0].get_ylabel()


def test_the_cli_writes_the_library_figures(tiny_run, tmp_path):
    args = [
        "study", "tracking-clutter", "--replicates", "2", "--particles", "60", "--cycles", "4",
        "--clutter-rates", "0,1.5", "--engines", "exact,baseline",
        "--trajectories", "straight,spiral", "--seed", "5", "--out", str(tmp_path), "--quiet",
    ]  # fmt: skip
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output
    for stem, fig in tracking_clutter_figures(tiny_run).items():
        png = io.BytesIO()
        fig.savefig(png, dpi=150, format="png")
        assert (tmp_path / f"{stem}.png").read_bytes() == png.getvalue(), stem
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        f"{stem}.png" for stem in tracking_clutter_figures(tiny_run)
    )
