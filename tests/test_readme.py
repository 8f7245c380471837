"""Every command in README.md runs as written from a fresh clone.

The commands are the lines of the README's ```bash blocks, run in order in a temporary folder
holding a copy of ``data/`` (so outputs never land in the repository). Setting up -- creating
and activating the virtual environment, ``pip install``, and ``pytest`` itself -- is skipped.

* The default test runs each command in this process through the installed console scripts'
  Click commands, shortened by ``SHORTER`` (fewer particles and days, fewer training
  iterations, no figures): the same code paths in seconds.
* ``-m slow`` runs every line exactly as written, in bash, with the installed scripts on PATH.

The ```python blocks run too, and the sample election equals what its generator writes.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rankmodels_app.aggregate import aggregate_command
from rankmodels_app.cli import cli
from rankmodels_app.track import track_float

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")

SETUP = ("python3 -m venv", "python -m venv", ". ", "source ", "pip ", "pytest")
"""Lines that set up the environment or run the suite: not run here."""

SCRIPTS: dict[str, click.Command] = {
    "rankmodels": cli,
    "track-float": track_float,
    "aggregate": aggregate_command,
}
"""The console scripts and the Click commands behind them."""

SHORTER = [
    (r"--particles \d+", "--particles 300"),
    (r"--days \d+", "--days 20"),
    (r"^(track-float (?!.*--particles).*)$", r"\1 --particles 300"),
    (r"^(track-float .*)$", r"\1 --no-plots"),
    (r"^(rankmodels ltr train .*)$", r"\1 --max-iter 10"),
]
"""Substitutions that make the fast variant fast (applied in order, to each command)."""


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def _commands() -> list[str]:
    """The README's shell commands, in order, without comments and setup lines."""
    commands = []
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(shlex.split(line, comments=True))
            if command and not command.startswith(SETUP):
                commands.append(command)
    return commands


COMMANDS = _commands()


@pytest.fixture
def clone(tmp_path) -> Path:
    """A working folder like a fresh clone's root: a copy of data/."""
    shutil.copytree(REPO / "data", tmp_path / "data")
    return tmp_path


@contextlib.contextmanager
def _cwd(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def test_the_readme_has_a_tour():
    scripts = {c.split()[0] for c in COMMANDS}
    assert scripts == set(SCRIPTS), "every console script appears, and nothing else"
    assert any(c.startswith("aggregate") and ".soi" in c for c in COMMANDS)
    assert any(c.startswith("rankmodels ltr evaluate") for c in COMMANDS)
    assert "minfactor" in README
    assert "Python 3.10" in README and "venv" in README


def test_scripts_are_the_installed_console_scripts():
    installed = {
        ep.name
        for ep in importlib.metadata.distribution("rankmodels").entry_points
        if ep.group == "console_scripts"
    }
    assert installed == set(SCRIPTS)


def test_every_command_runs_shortened(clone):
    with _cwd(clone):
        for command in COMMANDS:
            short = command
            for pattern, replacement in SHORTER:
                short = re.sub(pattern, replacement, short)
            script, *args = shlex.split(short)
            assert not {"&&", "||", "|", ";", ">"} & set(args), f"one command a line: {command}"
            result = CliRunner().invoke(SCRIPTS[script], args, prog_name=script)
            assert result.exit_code == 0, f"{short}\n{result.output}\n{result.exception!r}"
    assert sorted(p.name for p in (clone / "data").iterdir()) == sorted(
        p.name for p in (REPO / "data").iterdir()
    ), "the commands write nothing into data/"
    _assert_ignored(sorted(p for p in clone.iterdir() if p.name != "data"))


def _assert_ignored(outputs: list[Path]) -> None:
    """Outputs the commands leave in the repository root are in .gitignore."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    names = [p.name + ("/" if p.is_dir() else "") for p in outputs]
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *names],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    not_ignored = [
        line.split("\t")[-1] for line in proc.stdout.splitlines() if line.startswith("::")
    ]
    assert names and not not_ignored, f"add to .gitignore: {not_ignored}"


@pytest.mark.slow
def test_every_command_runs_as_written(clone):
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command in COMMANDS:
        proc = subprocess.run(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"


def test_the_ltr_tour_learns(clone):
    """The tour's model tests better than the ridge-regression start it reports beside."""
    (command,) = [c for c in COMMANDS if c.startswith("rankmodels ltr train")]
    with _cwd(clone):
        result = CliRunner().invoke(cli, shlex.split(command)[1:], prog_name="rankmodels")
        assert result.exit_code == 0, result.output
        (model,) = re.findall(r"-o (\S+)", command)
        report = json.loads((clone / model).read_text())
    assert report["ndcg@10"]["test"] > report["ridge_ndcg@10"]["test"] + 0.01


def test_the_python_examples_run(clone):
    for block in _blocks("python"):
        with _cwd(clone), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, "README.md", "exec"), {})


def test_the_documentation_links_exist():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing


def test_the_sample_election_is_what_its_generator_writes():
    spec = importlib.util.spec_from_file_location("make_election", REPO / "data/make_election.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.election_text() == (REPO / "data" / "election.soi").read_text(encoding="utf-8")
