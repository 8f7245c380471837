"""``rankmodels mallows sample|fit`` end to end through click's CliRunner: recovery of known
models through the JSON output, top-k ballots, round trips, and one-line bad-input errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from rankmodels.aggregation import read_votes
from rankmodels_app.cli import cli

CANDIDATES = ["Ash", "Birch", "Cedar", "Elm", "Fir", "Oak", "Pine", "Yew"]
PHI_TOLERANCE = 0.05  # |phi_hat - phi| on ~2,000 ballots of 8 candidates (SE about 0.01)


def invoke(*args: str):
    return CliRunner().invoke(cli, ["mallows", *map(str, args)])


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def write_mixture(path, components) -> None:
    path.write_text(json.dumps({"components": components}))


def test_one_model_is_recovered_through_the_json(tmp_path):
    centre = ["Oak", "Ash", "Yew", "Birch", "Pine", "Elm", "Cedar", "Fir"]
    votes = tmp_path / "votes.csv"
    result = invoke(
        "sample", "--centre", ",".join(centre), "--phi", 0.6, "-n", 2000, "--seed", 3, "-o", votes
    )
    assert result.exit_code == 0, result.output
    assert read_votes(votes).total == 2000
    fit = invoke("fit", votes, "--format", "json")
    assert fit.exit_code == 0, fit.output
    report = json.loads(fit.output)
    (comp,) = report["components"]
    assert comp["centre"] == centre
    assert comp["phi"] == pytest.approx(0.6, abs=PHI_TOLERANCE)
    assert comp["theta"] == pytest.approx(-np.log(comp["phi"]))
    assert report["ballots"] == 2000 and report["top_k_ballots"] == 0
    assert report["bic"] == pytest.approx(
        -2 * report["loglik"] + report["n_parameters"] * np.log(2000)
    )


def test_two_component_mixture_is_recovered_through_the_json(tmp_path):
    first = ["Ash", "Birch", "Cedar", "Elm", "Fir", "Oak", "Pine", "Yew"]
    second = ["Pine", "Oak", "Yew", "Fir", "Ash", "Elm", "Birch", "Cedar"]
    spec = tmp_path / "truth.json"
    write_mixture(
        spec,
        [
            {"weight": 0.65, "centre": first, "phi": 0.5},
            {"weight": 0.35, "centre": second, "theta": float(-np.log(0.6))},
        ],
    )
    votes = tmp_path / "votes.csv"
    assert invoke("sample", "--mixture", spec, "-n", 2000, "--seed", 7, "-o", votes).exit_code == 0
    result = invoke("fit", votes, "--components", "2", "--restarts", 3, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    big, small = report["components"]
    assert big["centre"] == first and small["centre"] == second
    assert big["weight"] == pytest.approx(0.65, abs=0.04)
    assert big["phi"] == pytest.approx(0.5, abs=PHI_TOLERANCE)
    assert small["phi"] == pytest.approx(0.6, abs=PHI_TOLERANCE)
    assert report["converged"] and report["exact_centres"]
    # BIC chooses two components, and the fitted JSON samples again
    auto = json.loads(
        invoke("fit", votes, "--components", "auto", "--max-components", 3, "--restarts", 2,
               "--format", "json").output
    )  # fmt: skip
    assert len(auto["components"]) == 2
    assert set(auto["bic_by_components"]) == {"1", "2", "3"}
    fitted = tmp_path / "fit.json"
    fitted.write_text(result.output)
    again = invoke("sample", "--mixture", fitted, "-n", 50, "--seed", 1)
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[0] == "ranking,count"


def test_top_k_ballots_are_sampled_and_fitted(tmp_path):
    votes = tmp_path / "top3.csv"
    centre = ",".join(CANDIDATES)
    args = ("sample", "--centre", centre, "--phi", 0.5, "-n", 3000, "--top", 3, "--seed", 2)
    assert invoke(*args, "-o", votes).exit_code == 0
    profile = read_votes(votes)
    assert profile.total == 3000
    assert np.all(profile.levels[:, 3:] == 3)  # positions 4..8 are one unranked group
    report = json.loads(invoke("fit", votes, "--format", "json").output)
    assert report["top_k_ballots"] == 3000
    (comp,) = report["components"]
    assert comp["centre"][:3] == CANDIDATES[:3]
    assert comp["phi"] == pytest.approx(0.5, abs=PHI_TOLERANCE)


def test_sampling_is_seeded_and_text_fit_output(tmp_path):
    args = ("sample", "--centre", "A,B,C,D", "--theta", 1.0, "-n", 300, "--seed", 5)
    first, second = invoke(*args), invoke(*args)
    assert first.output == second.output
    votes = tmp_path / "v.csv"
    votes.write_text(first.output)
    text = invoke("fit", votes).output
    assert "A > B > C > D" in text and "BIC" in text


def component(centre=("A", "B"), **fields):
    return {"weight": 1, "centre": list(centre), **fields}


@pytest.mark.parametrize(
    ("components", "expected"),
    [
        ([], "components: expected a non-empty list"),
        ([component(phi=1.5)], r"components\[0\]\.phi: expected a number in \(0, 1\]"),
        ([component(("A", "A"), phi=0.5)], r"components\[0\]\.centre: expected a list of distinct"),
        ([component()], r"components\[0\]: expected phi or theta"),
        ([component(phi=0.5, weight=-1)], r"components\[0\]\.weight"),
        ([component(phi=0.5, theta=2.0)], "disagree"),
        ([component(theta=1e6)], r"components\[0\]\.theta: expected a number in \[0, 700\]"),
        ([component(phi=0.5, weight=1e308)] * 2, "weights add up to more than the largest"),
        (
            [component(phi=0.5), component(("A", "C"), phi=0.5)],
            r"components\[1\]\.centre: expected the candidates of components\[0\]",
        ),
    ],
)
def test_bad_mixture_files_are_one_line_errors(tmp_path, components, expected):
    spec = tmp_path / "mix.json"
    write_mixture(spec, components)
    line = one_line_error(invoke("sample", "--mixture", spec))
    assert str(spec) in line
    assert re.search(expected, line), line


def test_bad_sample_options_are_one_line_errors(tmp_path):
    spec = tmp_path / "broken.json"
    spec.write_text("{not json")
    assert "not a JSON document" in one_line_error(invoke("sample", "--mixture", spec))
    assert "--centre" in one_line_error(invoke("sample", "--centre", "A,B,A", "--phi", 0.5))
    assert "exactly one of --phi and --theta" in one_line_error(
        invoke("sample", "--centre", "A,B", "--phi", 0.5, "--theta", 1)
    )
    for option, value in [("--phi", 0), ("--phi", "nan"), ("--theta", "nan"), ("--theta", "inf")]:
        assert option in one_line_error(invoke("sample", "--centre", "A,B", option, value))
    assert "-n" in one_line_error(invoke("sample", "--centre", "A,B", "--phi", 0.5, "-n", 10**9))
    assert "--top" in one_line_error(invoke("sample", "--centre", "A,B", "--phi", 0.5, "--top", 3))
    assert "--mixture" in one_line_error(invoke("sample"))
    assert "cannot be written to a votes CSV" in one_line_error(
        invoke("sample", "--centre", "A>B,C", "--phi", 0.5)
    )
    missing = tmp_path / "missing.json"
    assert str(missing) in one_line_error(invoke("sample", "--mixture", missing))


def test_bad_fit_inputs_are_one_line_errors(tmp_path):
    ties = tmp_path / "ties.csv"
    ties.write_text("ranking,count\nA>B=C>D,3\nA>B>C>D,2\n")
    line = one_line_error(invoke("fit", ties))
    assert line.startswith(f"Error: {ties}: ballot 'A>B=C>D'") and "top-k" in line
    votes = tmp_path / "v.csv"
    votes.write_text("ranking\nA>B>C\nB>A>C\n")
    assert "2 distinct ballots" in one_line_error(invoke("fit", votes, "--components", 3))
    assert "positive integer or 'auto'" in one_line_error(invoke("fit", votes, "--components", "x"))
    assert "positive integer or 'auto'" in one_line_error(invoke("fit", votes, "--components", 0))
    assert "over the input" in one_line_error(invoke("fit", votes, "-o", votes))
    assert "missing.csv" in one_line_error(invoke("fit", tmp_path / "missing.csv"))
    assert votes.read_text() == "ranking\nA>B>C\nB>A>C\n"
