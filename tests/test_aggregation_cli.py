"""The ``aggregate`` command end to end (CliRunner and the installed console scripts)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import counting
from rankmodels_app.aggregate import aggregate_command
from rankmodels_app.cli import cli
from tests._aggregation_helpers import Ballots, optimal_rankings, random_ballots


def run(*args: str):
    return CliRunner().invoke(aggregate_command, list(args))


def test_text_output_lists_ranking_scores_and_axioms(repo_data):
    result = run("--rule", "borda", str(repo_data / "votes.csv"))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].split() == ["1", "Bob", "2.05"]  # (12*2 + 9*3 + 7*2 + 5*1 + 4*3 + 3*0) / 40
    assert "Condorcet winner: Bob (ranked first: yes)" in result.output
    # Borda on 4 candidates: margins Omega = 3, omega = omega1 = 1, so both thresholds are
    # (3 - 1) / (2 (3 + 1)) = 1/4: a 75 % majority is always honoured
    assert (
        "x is ranked above y whenever more than 75 % of the ballots rank x above y; "
        "a candidate ranked first on more than 75 % of the ballots wins"
    ) in result.output
    assert "eps-IIA / strong Condorcet threshold 0.25, eps-majority threshold 0.25" in result.output


def test_text_output_says_when_a_rule_guarantees_nothing(repo_data):
    """Antiplurality: omega = omega1 = 0, both thresholds 1/2, so no majority is enough."""
    result = run("--rule", "antiplurality", str(repo_data / "votes.csv"))
    assert result.exit_code == 0, result.output
    assert "none for pairs" in result.output and "none for the winner" in result.output
    plurality = run("--rule", "plurality", str(repo_data / "votes.csv")).output
    assert "none for pairs" in plurality and "first on more than 50 % of the ballots" in plurality


def test_json_has_the_documented_keys(repo_data):
    result = run("--rule", "plurality", "--format", "json", str(repo_data / "votes.csv"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {"ranking", "scores", "ties", "axioms"} <= set(report)
    assert report["ranking"] == ["Alice", "Bob", "Carol", "Dave"]
    # Alice is first on 12 ballots and shares first place on 3 (Alice=Carol): 13.5 / 40.
    assert report["scores"]["Alice"] == pytest.approx(13.5 / 40)
    assert report["axioms"]["condorcet_winner"] == "Bob"
    assert report["axioms"]["honoured"]["condorcet"] is False
    assert report["ties"] == []


def test_ties_are_listed_not_hidden(tmp_path):
    votes = tmp_path / "cycle.csv"
    votes.write_text("ranking\nA>B>C\nB>C>A\nC>A>B\n")
    result = run("--rule", "kemeny", "--format", "json", str(votes))
    report = json.loads(result.output)
    assert report["n_optimal"] == 3
    assert sorted(map(tuple, report["ties"])) == [("A", "B", "C"), ("B", "C", "A"), ("C", "A", "B")]
    text = run("--rule", "kemeny", str(votes)).output
    assert "not unique: 3 optimal rankings" in text


def test_top_k_custom_scores_and_k_approval(repo_data):
    path = str(repo_data / "votes.csv")
    report = json.loads(run("--scores", "3,2,1,0", "--top", "2", "--format", "json", path).output)
    assert report["ranking"] == ["Bob", "Carol"] and list(report["scores"]) == ["Bob", "Carol"]
    assert report["rule"] == "scores"
    ok = run("--rule", "k-approval", "--k", "2", path)
    assert ok.exit_code == 0


def write_ballots(path, ballots: Ballots, names: str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ") -> None:
    """A votes CSV of raw ballots (tie groups with '=', unranked candidates left out)."""
    rows = [
        ">".join("=".join(names[x] for x in g) for g in groups) + f",{w:g}"
        for groups, w in zip(ballots.groups, ballots.weights, strict=True)
    ]
    path.write_text("ranking,count\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize("rule", ["footrule", "schulze", "ranked-pairs", "kemeny"])
def test_n_optimal_is_the_count_not_the_listing_cap(tmp_path, rule, rng):
    """The number of optimal rankings reported with --max-ties 2 is the true count, found by
    enumeration from the ballots written to the file."""
    for _ in range(20):
        ballots = random_ballots(5, rng, m=2, pool=2, max_weight=1)
        expected = optimal_rankings(rule, ballots)
        if len(expected) > 2:
            break
    votes = tmp_path / "v.csv"
    write_ballots(votes, ballots)
    args = ["--rule", rule, "--max-ties", "2", str(votes)]
    report = json.loads(run("--format", "json", *args).output)
    assert report["n_optimal"] == report["n_optimal_at_least"] == len(expected) > 2
    assert len(report["ties"]) == 2
    text = run(*args).output
    assert f"not unique: {len(expected)} optimal rankings (first shown above, 2 listed" in text


def test_kemeny_heuristic_says_when_it_is_optimal_and_when_it_does_not_know(tmp_path, rng):
    names = [f"c{i}" for i in range(22)]  # one majority component above the DP's 20
    tied = tmp_path / "tied.csv"  # two opposite ballots: every ranking meets the bound
    tied.write_text(f"ranking\n{'>'.join(names)}\n{'>'.join(names[::-1])}\n")
    report = json.loads(run("--rule", "kemeny", "--format", "json", str(tied)).output)
    assert report["exact"] is True and report["bound"] == pytest.approx(report["objective"])
    assert report["n_optimal"] == math.factorial(22)
    text = run("--rule", "kemeny", str(tied)).output
    assert "proved optimal" in text and f"not unique: {math.factorial(22)} optimal" in text
    cyclic = tmp_path / "cyclic.csv"  # three random ballots: majority cycles everywhere
    cyclic.write_text(
        "ranking\n" + "\n".join(">".join(np.array(names)[rng.permutation(22)]) for _ in range(3))
    )
    report = json.loads(run("--rule", "kemeny", "--format", "json", str(cyclic)).output)
    assert report["exact"] is False and report["bound"] < report["objective"]
    assert report["n_optimal"] is None and report["n_optimal_at_least"] == 1
    text = run("--rule", "kemeny", str(cyclic)).output
    assert "expected loss (heuristic)" in text
    assert "number of optimal rankings: unknown" in text


def test_lower_bounds_say_at_least(tmp_path, monkeypatch):
    # Schulze orders A > B > C and D > E > F and leaves the chains free: C(6, 3) = 20 orders,
    # one block of 6 candidates, here counted by listing (blocks above 3 are "too large").
    monkeypatch.setattr(counting, "MAX_COUNT_SIZE", 3)
    votes = tmp_path / "v.csv"
    votes.write_text("ranking\nA>B>C>D>E>F\nD>E>F>A>B>C\n")
    args = ["--rule", "schulze", "--format", "json", str(votes)]
    report = json.loads(run("--max-ties", "5", *args).output)
    assert report["n_optimal"] is None and report["n_optimal_at_least"] == 5
    assert json.loads(run("--max-ties", "50", *args).output)["n_optimal"] == math.comb(6, 3)
    text = run("--rule", "schulze", "--max-ties", "5", str(votes)).output
    assert "not unique: at least 5 optimal rankings (too many to count exactly" in text


def test_axioms_over_a_capped_listing_say_so(tmp_path):
    votes = tmp_path / "v.csv"  # footrule keeps no order relation: judged on the listing
    votes.write_text("ranking\nA>B>C>D\nD>C>B>A\n")
    report = json.loads(
        run("--rule", "footrule", "--max-ties", "2", "--format", "json", str(votes)).stdout
    )
    assert report["n_optimal"] > 2
    assert report["axioms"]["honoured"]["over_all_optimal_rankings"] is False
    assert (
        "judged on the 2 listed optimal rankings only"
        in run("--rule", "footrule", "--max-ties", "2", str(votes)).stdout
    )
    # Borda knows which pairs its score ties leave open: judged on all rankings
    borda = json.loads(
        run("--rule", "borda", "--max-ties", "2", "--format", "json", str(votes)).stdout
    )
    assert borda["n_optimal"] == 24 and borda["axioms"]["honoured"]["over_all_optimal_rankings"]


def test_top_k_lists_each_prefix_once(tmp_path):
    votes = tmp_path / "v.csv"
    votes.write_text("ranking\nA>B>C\nA>C>B\n")  # A first; B and C tie below
    report = json.loads(run("--rule", "borda", "--top", "1", "--format", "json", str(votes)).output)
    assert report["n_optimal"] == 2 and report["ties"] == [["A"]]
    full = json.loads(run("--rule", "borda", "--format", "json", str(votes)).output)
    assert full["ties"] == [["A", "B", "C"], ["A", "C", "B"]]


def test_increasing_scores_warn_that_they_reward_last_places(repo_data):
    path = str(repo_data / "votes.csv")
    result = run("--scores", "0,1,2,3", "--format", "json", path)
    assert result.exit_code == 0
    assert "warning: --scores gives last place more points than first" in result.stderr
    # it still runs: h = 3 - Borda's h, so the Borda order upside down
    borda = json.loads(run("--rule", "borda", "--format", "json", path).stdout)["ranking"]
    assert json.loads(result.stdout)["ranking"] == borda[::-1]
    assert "warning" not in run("--scores", "3,2,1,0", path).stderr
    # a vector that does not fit is an error, alone on its line (no warning before it)
    bad = run("--scores", "0.5,2", path)
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr.startswith("Error: ") and "needs 4 values" in bad.stderr
    clash = run("--scores", "0,1,2,3", "-o", path, path)  # fails writing: still one line
    assert clash.exit_code == 2 and len(clash.stderr.splitlines()) == 1


def test_names_with_control_characters_are_shown_safely(tmp_path):
    votes = tmp_path / "v.csv"
    votes.write_text("ranking\nBell\x07Bob>Tab\tTim\nBell\x07Bob>Tab\tTim\n", encoding="utf-8")
    text = run("--rule", "borda", str(votes)).stdout
    assert "Bell\ufffdBob" in text and "Tab Tim" in text
    assert "\x07" not in text and "\t" not in text
    report = json.loads(run("--rule", "borda", "--format", "json", str(votes)).stdout)
    assert report["ranking"] == ["Bell\x07Bob", "Tab\tTim"]  # JSON escapes, names unchanged


def test_progress_bar_on_a_terminal_only_and_not_with_quiet(repo_data, monkeypatch):
    import rankmodels_app._common as common

    path = str(repo_data / "votes.csv")
    assert "reading" not in run(path).stderr  # CliRunner's stderr is not a terminal
    monkeypatch.setattr(common, "show_progress", lambda quiet: not quiet)
    shown = run(path)
    assert shown.exit_code == 0 and "reading votes.csv" in shown.stderr
    assert "reading" not in run("--quiet", path).stderr


def test_group_command_and_output_file(repo_data, tmp_path):
    out = tmp_path / "res.json"
    args = ["aggregate", "--rule", "schulze", "--format", "json", "-o", str(out)]
    result = CliRunner().invoke(cli, [*args, str(repo_data / "votes.csv")])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["ranking"][0] == "Bob"


@pytest.mark.parametrize(
    "args, content, message",
    [
        ([], "ranking,count\nA>B,0\n", "bad.csv: line 2: count must be a positive number"),
        ([], "", "bad.csv: empty file"),
        ([], "ranking\nA>B>A\n", "bad.csv: line 2: candidate 'A' appears twice"),
        (["--rule", "k-approval"], "ranking\nA>B\n", "--rule k-approval needs --k"),
        (["--rule", "k-approval", "--k", "5"], "ranking\nA>B\n", "needs 1 <= k <= n = 2"),
        (["--scores", "1,x"], "ranking\nA>B\n", "--scores: expected comma-separated numbers"),
        (["--k", "2"], "ranking\nA>B\n", "--k is only for --rule k-approval"),
        (
            ["--scores", "1,0", "--rule", "borda"],
            "ranking\nA>B\n",
            "--scores is only for --rule scores",
        ),
        (["--rule", "scores"], "ranking\nA>B\n", "--rule scores needs --scores"),
        ([], "ranking,count\nA>B,1e308\nB>A,1e308\n", "bad.csv: line 3: the counts add up to more"),
        (["--scores", "1,0,0"], "ranking\nA>B\n", "needs 2 values"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, args, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    result = run(*args, str(path))
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_missing_file_and_output_over_input(tmp_path, repo_data):
    missing = run(str(tmp_path / "none.csv"))
    assert missing.exit_code == 2 and missing.output.endswith("none.csv: no such file\n")
    votes = tmp_path / "v.csv"
    shutil.copy(repo_data / "votes.csv", votes)
    clash = run("-o", str(votes), str(votes))
    assert clash.exit_code == 2 and "refusing" in clash.output
    assert votes.read_text() == (repo_data / "votes.csv").read_text()


@pytest.mark.skipif(shutil.which("aggregate") is None, reason="console script not installed")
def test_console_scripts(repo_data):
    path = str(repo_data / "votes.csv")
    short = subprocess.run(["aggregate", "--rule", "borda", path], capture_output=True, text=True)
    assert short.returncode == 0 and "Bob" in short.stdout.splitlines()[1]
    bad = subprocess.run(["aggregate", "--rule", "nope", path], capture_output=True, text=True)
    assert bad.returncode == 2


@pytest.mark.parametrize("rule", ["borda", "kemeny", "footrule", "mode", "ranked-pairs"])
def test_single_candidate(tmp_path, rule):
    path = tmp_path / "one.csv"
    path.write_text("ranking\nA\n")
    result = run("--rule", rule, "--format", "json", str(path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ranking"] == ["A"]


@given(
    st.text(alphabet="AB C>=,\n1-x", max_size=60),
    st.sampled_from(["borda", "kemeny", "mode", "schulze"]),
)
@settings(max_examples=40, deadline=None)
def test_any_csv_gives_a_result_or_a_one_line_error(text, rule):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_text("ranking,count\n" + text, encoding="utf-8")
        result = CliRunner().invoke(aggregate_command, ["--rule", rule, str(path)])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert len(result.output.strip().splitlines()) == 1
