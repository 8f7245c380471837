"""The section 4.6 aggregation study (Figure 4.1): the exact part asserts the paper's findings
and checks itself against enumeration and eq. (4.6); the simulated part (slow) converges to
the exact limit; the CLI end to end."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy.stats import norm

from rankmodels.aggregation import Profile, aggregate, score_vector
from rankmodels.permutations import all_permutations
from rankmodels.studies import run_study
from rankmodels.studies.aggregation_study import (
    CANDIDATES,
    STUDY_RULES,
    aggregation_study,
    aggregation_task,
    crossing_table,
    exact_study,
    experiment_mixture,
    score_gaps,
)
from rankmodels_app.cli import cli

CONCAVE, CONVEX = ("antiplurality", "squared"), ("plurality", "log")


@pytest.fixture(scope="module")
def exact() -> xr.Dataset:
    return exact_study()


def test_the_papers_findings_hold_in_the_limit(exact):
    """Concave rules rank A above B from a smaller weight than Borda in experiment 1 and convex
    rules from a larger one; experiment 2 the other way round; Borda is never the worst."""
    w = exact["w_success"].to_pandas()
    for rule in CONCAVE:
        assert w.loc[1, rule] < w.loc[1, "borda"] < min(w.loc[1, r] for r in CONVEX)
    for rule in CONVEX:
        assert w.loc[2, rule] < w.loc[2, "borda"] < min(w.loc[2, r] for r in CONCAVE)
    for experiment in (1, 2):
        assert w.loc[experiment, "borda"] < w.loc[experiment].max()
    # the rules start to succeed only after the majority has turned to A ...
    assert (w.to_numpy() > exact["w_majority"].to_numpy()[:, None]).all()
    # ... and the worst-case epsilon thresholds promise nothing below w = 1 at phi = 0.8
    assert (exact["w_guaranteed"] > 1).all()


def test_success_flips_once_at_the_linear_crossing(exact):
    gap = exact["score_gap"]
    w = exact["weight"]
    expected = (w > exact["w_success"]).astype(float)
    assert (exact["success"] == expected).all()
    assert (np.diff(np.sign(gap), axis=1) >= 0).all()
    # the gap is linear in w and vanishes at w_success
    for e in (1, 2):
        for r, rule in enumerate(STUDY_RULES):
            slope, intercept = np.polyfit(w, gap.sel(experiment=e, rule=rule), 1)
            w_star = float(exact["w_success"].sel(experiment=e, rule=rule))
            assert slope * w_star + intercept == pytest.approx(0, abs=1e-12), (e, r)


def test_exact_part_matches_enumeration():
    """Gap, P(A above B) and the outcome from the n! = 120 rankings of the mixture."""
    weights = [0.6, 0.8, 0.95]
    ds = exact_study(weights)
    perms = all_permutations(5)
    for e in (1, 2):
        for w in weights:
            mixture = experiment_mixture(e, w)
            profile = Profile.from_orders(perms, mixture.pmf(perms), candidates=CANDIDATES)
            assert ds["p_a_above_b"].sel(experiment=e, weight=w) == pytest.approx(
                profile.pairwise[0, 1], abs=1e-12
            )
            for rule in STUDY_RULES:
                result = aggregate(profile, rule)
                omega = float(ds["Omega_h"].sel(rule=rule))
                gap = (result.scores[0] - result.scores[1]) / omega
                cell = ds.sel(experiment=e, weight=w, rule=rule)
                assert float(cell["score_gap"]) == pytest.approx(gap, abs=1e-12)
                above = list(result.ranking).index(0) < list(result.ranking).index(1)
                assert float(cell["success"]) == float(above)


def test_effective_margins_sit_inside_the_eq_4_6_bounds(exact):
    ratio = exact["omega_h"] / exact["Omega_h"]
    assert (exact["omega_eff"] >= ratio - 1e-12).all()
    assert (exact["Omega_eff"] <= 1 + 1e-12).all()
    assert (exact["bound_lower"] <= exact["score_gap"] + 1e-12).all()
    assert (exact["score_gap"] <= exact["bound_upper"] + 1e-12).all()
    gamma = exact["p_a_above_b"]
    rebuilt = gamma * exact["omega_eff"] - (1 - gamma) * exact["Omega_eff"]
    assert np.allclose(rebuilt, exact["score_gap"], atol=1e-12)
    # at the crossing the rule needs exactly P(A above B) = threshold
    table = crossing_table(exact)
    for row in table.itertuples():
        at = exact_study([row.w_success]).sel(experiment=row.experiment, rule=row.rule)
        assert float(at["threshold"].squeeze()) == pytest.approx(row.threshold, abs=1e-9)
    assert sorted(table.query("experiment == 1")["order"]) == [1, 2, 3, 4, 5]


def test_the_epsilon_guarantee_holds_where_it_applies():
    """At phi = 0.1 the majority margin exceeds Borda's epsilon threshold for large w: from
    w_guaranteed on, eq. (4.6) forces success, and it is found."""
    ds = exact_study(np.round(np.arange(0.51, 1.0001, 0.01), 2), phi=0.1)
    w_guar = ds["w_guaranteed"].sel(rule="borda")
    assert (w_guar < 1).all()
    for e in (1, 2):
        past = ds.sel(experiment=e, rule="borda").where(ds["weight"] > w_guar.sel(experiment=e))
        assert (past["bound_lower"].dropna("weight") > 0).all()
        assert (past["success"].dropna("weight") == 1).all()


def test_task_gaps_are_the_aggregated_scores():
    """The vectorised gap of the task equals aggregate() on each sampled profile."""
    rng = np.random.default_rng(4)
    orders = experiment_mixture(2, 0.7).sample(3 * 40, rng).reshape(3, 40, 5)
    gaps = score_gaps(orders)
    for t in range(3):
        profile = Profile.from_orders(orders[t], candidates=CANDIDATES)
        for r, rule in enumerate(STUDY_RULES):
            scores = aggregate(profile, rule).scores
            omega = float(exact_study([0.7])["Omega_h"].sel(rule=rule))
            assert gaps[r, t] == pytest.approx((scores[0] - scores[1]) / omega, abs=1e-12)
    params = {"experiment": 1, "weight": 0.9, "phi": 0.8, "voters": 30, "trials": 4}
    seed = np.random.SeedSequence(5)
    first = aggregation_task(params, seed)
    assert first == aggregation_task(params, np.random.SeedSequence(5))
    assert set(first) == {*STUDY_RULES, "majority"}
    assert all(v in {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1} for v in first.values())


def test_study_rejects_bad_grids():
    with pytest.raises(ValueError, match="weights"):
        aggregation_study(weights=[0.5, 1.2])
    with pytest.raises(ValueError, match="voters"):
        aggregation_study(voters=[0])
    with pytest.raises(ValueError, match="phi"):
        aggregation_study(phi=0.0)
    with pytest.raises(ValueError, match="experiment"):
        experiment_mixture(3, 0.5)


def test_cli_aggregation_end_to_end(tmp_path):
    out = tmp_path / "agg"
    args = ["study", "aggregation", "--weights", "0.6,1.0", "--voters", "20", "--replicates",
            "2", "--trials", "5", "--seed", "1", "--out", str(out)]  # fmt: skip
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output
    records = pd.read_csv(out / "aggregation.csv")
    assert len(records) == 2 * 1 * 2 * 2  # experiments x voters x weights x replicates
    assert set(STUDY_RULES) <= set(records.columns)
    sim = xr.load_dataset(out / "aggregation.nc")
    assert sim["borda"].sizes == {"experiment": 2, "voters": 1, "weight": 2, "replicate": 2}
    ex = xr.load_dataset(out / "aggregation_exact.nc")
    assert {0.6, 0.77, 1.0} <= set(np.round(ex["weight"].values, 2))
    assert (out / "aggregation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "w_success" in run.output and "majority" in run.output


def test_at_phi_1_nothing_crosses_and_everything_ties():
    """phi = 1: both components uniform, so the mixture is the same for every w: every rule
    and the majority tie (success 1/2, P(A above B) = 1/2) and no crossing weight exists."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = exact_study([0.0, 0.6, 1.0], phi=1.0)
        table = crossing_table(ds)
    assert np.allclose(ds["p_a_above_b"], 0.5)
    assert (ds["success"] == 0.5).all()
    for name in ("w_success", "w_majority", "w_guaranteed"):
        assert ds[name].isnull().all(), name
    assert table[["w_success", "threshold", "w_guaranteed", "w_majority"]].isna().all().all()
    assert table["order"].isna().all()
    assert "phi = 1" in ds.attrs["no_crossing"]
    assert exact_study([0.6], phi=0.99).attrs["no_crossing"] == ""


def test_near_phi_0_the_components_are_point_masses_and_nothing_warns():
    """phi -> 0: P(A above B) = w exactly, so w_majority = 1/2; at w = 1 no vote ranks B above
    A, so Omega_eff (conditional on B above A) is undefined: NaN, not inf, and no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = exact_study([0.6, 1.0], phi=1e-300)
        crossing_table(ds)
    assert np.allclose(ds["p_a_above_b"].sel(weight=0.6), 0.6)
    assert np.allclose(ds["w_majority"], 0.5)
    assert ds["Omega_eff"].sel(weight=1.0).isnull().all()
    assert ds["threshold"].sel(weight=0.6).notnull().all()
    # Borda on point masses: gap = w g1 + (1 - w) g0 with the centres' normalised gaps
    h = score_vector("borda", 5)  # the normalisation cancels in the ratio
    g1, g0 = h[2] - h[3], h[4] - h[0]  # Z1 = DEABC: A 3rd, B 4th; Z2 = BCDEA: A 5th, B 1st
    w_star = float(ds["w_success"].sel(experiment=1, rule="borda"))
    assert w_star == pytest.approx(g0 / (g0 - g1))


def test_cli_aggregation_at_phi_1_states_why_there_is_no_crossing(tmp_path):
    args = ["study", "aggregation", "--phi", "1", "--weights", "0.6", "--voters", "5",
            "--replicates", "1", "--trials", "2", "--out", str(tmp_path)]  # fmt: skip
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output
    assert "NaN: phi = 1" in run.stderr  # the summary
    assert run.stdout == "" and "Warning" not in run.stderr
    assert xr.load_dataset(tmp_path / "aggregation_exact.nc")["w_success"].isnull().all()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--weights", "0.6,1.5"], "Invalid value for '--weights': expected numbers in [0, 1]"),
        (["--voters", "2.5"], "--voters: expected positive integers"),
        (["--phi", "0"], "--phi"),
        (["--phi", "nan"], "--phi"),
        (["--voters", "1000000", "--trials", "1000"], "voters x trials must be at most"),
        (["--trials", "0"], "--trials"),
    ],
)
def test_cli_bad_usage_exits_2_with_one_line(tmp_path, extra, message):
    run = CliRunner().invoke(cli, ["study", "aggregation", "--out", str(tmp_path), *extra])
    assert run.exit_code == 2, run.output
    assert message in run.output and "Traceback" not in run.output
    assert len(run.output.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_simulation_converges_to_the_exact_limit():
    """Figure 4.1 with N = 1000 votes: the probability that each rule ranks A above B matches
    the central limit of the exact per-vote score differences, Phi(mean sqrt(N) / sd), with
    mean and sd from the exact joint positions of A and B; the rule order of the limit shows
    up at w = 0.8 in both experiments; and Borda is never the worst at agreeing with the
    majority."""
    voters, profiles = 1000, 8 * 50
    study = aggregation_study(
        weights=[0.6, 0.8, 1.0], voters=[voters], replicates=8, trials=50, seed=11
    )
    mean = run_study(study).summary().set_index(["experiment", "weight", "metric"])["mean"]
    H = {rule: score_vector(rule, 5) / float(exact_study([1.0])["Omega_h"].sel(rule=rule))
         for rule in STUDY_RULES}  # fmt: skip
    for e in (1, 2):
        for w in (0.6, 0.8, 1.0):
            J = experiment_mixture(e, w).pair_positions(0, 1)
            for rule, h in H.items():
                d = h[:, None] - h[None, :]
                mu, var = (J * d).sum(), (J * d**2).sum() - (J * d).sum() ** 2
                predicted = norm.cdf(mu * np.sqrt(voters / var))
                got = mean[(e, w, rule)]
                tolerance = 4 * np.sqrt(predicted * (1 - predicted) / profiles) + 0.03
                assert abs(got - predicted) < tolerance, (e, w, rule, got, predicted)
        # agreeing with the mixture's majority (B below w_majority), Borda is never the worst
        for w in (0.6, 0.8, 1.0):
            agree = {r: mean[(e, w, r)] for r in STUDY_RULES}
            if w < float(exact_study([w])["w_majority"].sel(experiment=e)):
                agree = {r: 1 - v for r, v in agree.items()}
            assert agree["borda"] > min(agree.values()), (e, w, agree)
    at = {rule: mean[(2, 0.8, rule)] for rule in STUDY_RULES}
    assert min(at["plurality"], at["log"]) > max(at["antiplurality"], at["squared"]) + 0.1
    at = {rule: mean[(1, 0.8, rule)] for rule in STUDY_RULES}
    assert min(at["antiplurality"], at["squared"]) > max(at["plurality"], at["log"])
