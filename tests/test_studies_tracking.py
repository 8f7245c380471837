"""The Figure 5.8 study (dissertation section 5.5.1): geometry, simulation, known truth, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy.stats import binomtest, wilcoxon

from rankmodels.studies import run_study
from rankmodels.studies.tracking_clutter import (
    P_DETECT,
    SECONDS_PER_UNIT,
    SIGMA_UNITS,
    UNIT_KM,
    PlanarPatch,
    beacons,
    example_tracks,
    simulate_planar,
    tracking_clutter_study,
    tracking_clutter_task,
    true_path,
)
from rankmodels.tracking.geometry import great_circle_km
from rankmodels_app.cli import cli


def test_the_patch_is_planar_to_well_under_the_toa_noise(rng):
    patch = PlanarPatch()
    xy = rng.uniform(-0.1, 1.1, (500, 2))
    lat, lon = patch.to_latlon(xy)
    np.testing.assert_allclose(patch.to_units(lat, lon), xy, atol=1e-12)
    i, j = rng.integers(0, 500, (2, 2000))
    planar = np.linalg.norm(xy[i] - xy[j], axis=1) * UNIT_KM
    sphere = great_circle_km(lat[i], lon[i], lat[j], lon[j])
    assert np.max(np.abs(planar - sphere)) < 0.1  # km; the TOA noise is 0.02 units = 3 km


def test_beacons_and_paths():
    b = beacons()
    assert b.shape == (10, 2) and np.all((b > 0) & (b < 1))
    assert len({tuple(p) for p in b}) == 10
    line = true_path("straight", 40)
    np.testing.assert_allclose(line[[0, -1]], [[0.15, 0.2], [0.85, 0.8]], atol=1e-9)
    steps = np.diff(line, axis=0)
    np.testing.assert_allclose(steps, steps[:1].repeat(40, axis=0), atol=1e-9)  # constant velocity
    spiral = true_path("spiral", 60)
    radius = np.linalg.norm(spiral - 0.5, axis=1)
    np.testing.assert_allclose(radius[[0, -1]], [0.05, 0.3], atol=1e-6)
    angle = np.unwrap(np.arctan2(spiral[:, 1] - 0.5, spiral[:, 0] - 0.5))
    assert angle[-1] - angle[0] == pytest.approx(1.5 * 2 * np.pi, abs=1e-6)
    with pytest.raises(ValueError, match="trajectory"):
        true_path("zigzag", 10)


def test_simulated_arrivals_follow_the_paper_setup(rng):
    record, truth = simulate_planar("straight", 400, 4.0, rng)
    toa = record["toa"].values.astype(float)
    label = record["source_label"].values
    assert toa.shape == (400, 4)
    assert np.all(np.diff(toa, axis=1)[~np.isnan(np.diff(toa, axis=1))] >= 0)
    # source arrivals: distance / speed + N(0, sigma^2), sigma = 0.02 units = 2 s
    xy = PlanarPatch().to_units(truth["lat"].values, truth["lon"].values)
    dist = np.linalg.norm(xy[:, None, :] - beacons()[None], axis=2)
    rows, ranks = np.nonzero(label >= 0)
    resid = toa[rows, ranks] - dist[rows, label[rows, ranks]] * SECONDS_PER_UNIT
    assert abs(resid.mean()) < 0.2
    assert resid.std() == pytest.approx(SIGMA_UNITS * SECONDS_PER_UNIT, rel=0.1)
    # lambda = 4 clutter arrivals per 150 s window: some of them are among the first four
    assert 0.1 < np.mean(label == -1) < 0.6
    assert record.attrs["sim_clutter_rate"] == 4.0


def test_task_is_a_pure_function_of_params_and_seed():
    params = {
        "trajectory": "spiral",
        "cycles": 6,
        "clutter_rate": 1.0,
        "engine": "exact",
        "particles": 200,
    }
    seed = np.random.SeedSequence(5, spawn_key=(0,))
    a = tracking_clutter_task(dict(params), seed)
    b = tracking_clutter_task(dict(params), np.random.SeedSequence(5, spawn_key=(0,)))
    c = tracking_clutter_task(dict(params), np.random.SeedSequence(5, spawn_key=(1,)))
    assert a == b and a != c
    assert a["rmse_km"] == pytest.approx(np.sqrt(a["mse"]) * UNIT_KM)
    assert 0 <= a["arrivals_right"] <= 1


def test_study_rejects_bad_grids():
    with pytest.raises(ValueError, match="engines"):
        tracking_clutter_study(engines=["exact", "minfactor"])
    with pytest.raises(ValueError, match="trajectories"):
        tracking_clutter_study(trajectories=["loop"])
    with pytest.raises(ValueError, match="clutter rates"):
        tracking_clutter_study(lambdas=[0.0, -1.0])
    with pytest.raises(ValueError, match="cycles must be >= 2"):
        tracking_clutter_study(cycles=1)
    tracking_clutter_study(cycles=2)  # the shortest study track: a 150 km/day walk


def test_ranked_model_beats_the_baseline_at_high_clutter():
    """Known truth (Fig. 5.8): on the same simulated records (paired seeds) the ranked-signal
    model tracks better than the order-blind baseline of eq. 5.72 at lambda = 2
    (P_C = 2/3): a one-sided sign test over 16 paired replicates, and the Wilcoxon test."""
    study = tracking_clutter_study(
        lambdas=[2.0], engines=["exact", "baseline"], replicates=16, cycles=50, particles=400
    )
    result = run_study(study)
    cmp = result.compare("mse", "engine", "exact", "baseline").iloc[0]
    assert cmp["n"] == 16
    assert cmp["mean_difference"] < 0
    wins = round(cmp["a_wins"] * 16)
    assert binomtest(wins, 16, 0.5, alternative="greater").pvalue < 0.02
    assert cmp["p_value"] < 0.05
    median = result.summary(["mse"]).set_index("engine")["median"]
    assert median["exact"] < 0.5 * median["baseline"]


def test_example_tracks_follow_the_truth_without_clutter():
    truth, tracks = example_tracks(
        "straight", clutter_rate=0.0, engines=["exact", "baseline"], cycles=15, particles=500
    )
    assert truth.shape == (16, 2) and set(tracks) == {"exact", "baseline"}
    assert all(track.shape == (15, 2) for track in tracks.values())
    rmse = np.sqrt(np.mean(np.sum((tracks["exact"] - truth[1:]) ** 2, axis=1)))
    standing_still = np.sqrt(np.mean(np.sum((truth[:1] - truth[1:]) ** 2, axis=1)))
    assert rmse < 0.5 * standing_still


def test_cli_tracking_clutter_end_to_end(tmp_path):
    out = tmp_path / "res"
    args = [
        "study", "tracking-clutter", "--replicates", "2", "--particles", "150", "--cycles", "5",
        "--clutter-rates", "0,2", "--engines", "exact,baseline", "--seed", "3", "--out", str(out),
    ]  # fmt: skip
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output
    records = pd.read_csv(out / "tracking_clutter.csv")
    assert len(records) == 2 * 2 * 2
    assert set(records["engine"]) == {"exact", "baseline"}
    assert set(records["clutter_rate"]) == {0.0, 2.0}
    summary = pd.read_csv(out / "tracking_clutter_summary.csv")
    row = summary.query("metric == 'mse' and engine == 'exact' and clutter_rate == 2.0")
    expected = records.query("engine == 'exact' and clutter_rate == 2.0")["mse"]
    assert row["mean"].item() == pytest.approx(expected.mean())
    assert row["se"].item() == pytest.approx(expected.std() / np.sqrt(2))
    ds = xr.load_dataset(out / "tracking_clutter.nc")
    assert ds["mse"].sizes == {"trajectory": 1, "clutter_rate": 2, "engine": 2, "replicate": 2}
    assert ds.attrs["fixed_p_detect"] == P_DETECT
    for png in ("tracking_clutter.png", "tracking_clutter_example_straight.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mean MSE" in run.output and "wins_vs_baseline" in run.output
    # the same command again gives the same numbers (seeded), files replaced atomically
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0
    pd.testing.assert_frame_equal(
        records.drop(columns="task_time_s"),
        pd.read_csv(out / "tracking_clutter.csv").drop(columns="task_time_s"),
    )
    assert not list(out.glob(".*"))


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--clutter-rates", "0,x"], "comma-separated numbers"),
        (["--clutter-rates", "0,-1"], ">= 0"),
        (["--clutter-rates", "1,1"], "repeated"),
        (["--clutter-rates", "1,1.0"], "repeated"),  # the same rate spelled twice
        (["--cycles", "1"], "--cycles"),  # the path in one cycle: a 300 km/day walk
        (["--engines", "exact,nope"], "unknown"),
        (["--trajectories", "loop"], "unknown"),
        (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
        (["--replicates", "0"], "replicates"),
    ],
)
def test_cli_bad_usage_exits_2_with_one_line(tmp_path, extra, message):
    run = CliRunner().invoke(cli, ["study", "tracking-clutter", "--out", str(tmp_path), *extra])
    assert run.exit_code == 2
    assert message in run.output
    assert "Traceback" not in run.output
    assert not list(tmp_path.iterdir())


def test_cli_unreachable_scheduler_exits_2(tmp_path):
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        run = CliRunner().invoke(
            cli,
            [
                "study",
                "tracking-clutter",
                "--scheduler",
                "tcp://127.0.0.1:1",
                "--out",
                str(tmp_path),
            ],
        )
    assert run.exit_code == 2, run.output
    assert "tcp://127.0.0.1:1" in run.output and "Traceback" not in run.output
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_full_figure_5_8_study_on_a_local_cluster(tmp_path):
    """The full study of docs/studies.md on a 2-process LocalCluster: both ranked engines beat
    the baseline at every lambda (paired Wilcoxon p < 0.01)."""
    out = tmp_path / "full"
    run = CliRunner().invoke(
        cli, ["study", "tracking-clutter", "--workers", "2", "--out", str(out), "--quiet"]
    )
    assert run.exit_code == 0, run.output
    records = pd.read_csv(out / "tracking_clutter.csv")
    for lam, part in records.groupby("clutter_rate"):
        table = part.pivot(index="replicate", columns="engine", values="mse")
        for engine in ("exact", "bp"):
            d = table[engine] - table["baseline"]
            assert d.mean() < 0, (lam, engine)
            assert wilcoxon(d, alternative="less").pvalue < 0.01, (lam, engine)
