"""The ``aggregate`` command end to end (CliRunner and the installed console scripts)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels_app.aggregate import aggregate_command
from rankmodels_app.cli import cli


def run(*args: str):
    return CliRunner().invoke(aggregate_command, list(args))


def test_text_output_lists_ranking_scores_and_axioms(repo_data):
    result = run("--rule", "borda", str(repo_data / "votes.csv"))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].split() == ["1", "Bob", "2.05"]  # (12*2 + 9*3 + 7*2 + 5*1 + 4*3 + 3*0) / 40
    assert "Condorcet winner: Bob (ranked first: yes)" in result.output
    assert "eps-IIA/strong Condorcet > 0.25" in result.output


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
        (["--scores", "1,0", "--rule", "borda"], "ranking\nA>B\n", "cannot go with --rule"),
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
    assert missing.exit_code == 2 and "No such file" in missing.output
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
    with CliRunner().isolated_filesystem():
        with open("fuzz.csv", "w", encoding="utf-8") as handle:
            handle.write("ranking,count\n" + text)
        result = CliRunner().invoke(aggregate_command, ["--rule", rule, "fuzz.csv"])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert len(result.output.strip().splitlines()) == 1
