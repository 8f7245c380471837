"""``rankmodels --help`` lists the subcommands from a table, without importing them: the
table's sentences must say what the commands' own help says. Every ``--help`` of the
console scripts is a stored page: the pages are click's, and printing them imports none of
the heavy modules."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rankmodels_app import help_pages
from rankmodels_app.cli import _SUBCOMMANDS, _short_help, cli


@pytest.mark.parametrize("name", sorted(_SUBCOMMANDS))
@pytest.mark.parametrize("limit", [30, 45, 60, 200])
def test_listed_summary_is_the_commands_own_short_help(name, limit):
    module, attribute, _ = _SUBCOMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert _short_help(name, limit) == command.get_short_help_str(limit)


def test_help_lists_every_command_as_click_would():
    """The listing equals click's own, made from the imported commands."""
    import click

    commands = {name: cli.get_command(None, name) for name in _SUBCOMMANDS}
    plain = click.Group("rankmodels", commands=commands, help=cli.help)
    plain.params = cli.params
    got = CliRunner().invoke(cli, ["--help"], prog_name="rankmodels")
    want = CliRunner().invoke(plain, ["--help"], prog_name="rankmodels")
    assert got.exit_code == 0
    assert got.output.split("Commands:")[1] == want.output.split("Commands:")[1]


def test_help_imports_no_subcommand():
    code = (
        "import sys\n"
        "from rankmodels_app.cli import cli\n"
        "try:\n"
        "    cli(['--help'], prog_name='rankmodels')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('rankmodels_app.')"
        " or m in ('numba', 'xarray', 'matplotlib', 'pandas', 'scipy')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == str(
        ["rankmodels_app._common", "rankmodels_app.cli", "rankmodels_app.help_pages"]
    )


def _stored() -> dict:
    return json.loads(help_pages.PAGES_FILE.read_text(encoding="utf-8"))


def test_stored_pages_are_the_pages_click_renders():
    """Fails after a command changes until ``python -m rankmodels_app.help_pages`` runs."""
    stored = _stored()
    assert stored["digest"] == help_pages.sources_digest()
    rendered = help_pages.render_pages()
    assert set(stored["pages"]) == set(rendered)  # every command of the three programs
    assert {"rankmodels ltr train", "track-float", "aggregate"} <= set(rendered)
    for key, entry in rendered.items():
        assert stored["pages"][key] == entry, key
        assert entry["page"].startswith(f"Usage: {key} ")


# Each command line runs through its console script's entry point; then the modules loaded.
_SERVE_ALL = """
import contextlib, io, json, sys
from rankmodels_app import cli
entry = {"rankmodels": cli.main, "track-float": cli.track_float_main,
         "aggregate": cli.aggregate_main}
out = {}
for line in json.loads(sys.argv[1]):
    sys.argv = line
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        entry[line[0]]()
    out[" ".join(line)] = buffer.getvalue()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in
               ("numba", "scipy", "xarray", "matplotlib", "pandas", "netCDF4", "dask"))
print(json.dumps({"pages": out, "heavy": heavy}))
"""


def test_every_help_page_is_printed_without_importing_the_commands():
    pages = _stored()["pages"]
    lines = [[*key.split(), flag] for key, entry in pages.items() for flag in entry["flags"]]
    env = {**os.environ, "COLUMNS": "100"}
    run = subprocess.run(
        [sys.executable, "-c", _SERVE_ALL, json.dumps(lines)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    result = json.loads(run.stdout)
    assert result["heavy"] == []
    for line in lines:
        assert result["pages"][" ".join(line)] == pages[" ".join(line[:-1])]["page"]


@pytest.fixture
def current(monkeypatch):
    """The stored pages count as current (whatever the sources say) on an 80-column terminal."""
    digest = _stored()["digest"]
    monkeypatch.setattr(help_pages, "sources_digest", lambda: digest)
    monkeypatch.setenv("COLUMNS", str(help_pages.COLUMNS))


@pytest.mark.parametrize(
    "args",
    [
        ["mallows", "sample", "--phi", "0.5", "--help"],  # an option before the flag
        ["mallows", "nonsense", "--help"],
        ["mallows", "sample"],
        ["--version"],
        [],
    ],
)
def test_other_command_lines_are_left_to_click(args, current):
    assert help_pages.stored_page("rankmodels", ["mallows", "sample", "-h"]) is not None
    assert help_pages.stored_page("rankmodels", args) is None


def test_stale_pages_and_narrow_terminals_are_left_to_click(monkeypatch, current):
    assert help_pages.stored_page("rankmodels", ["mallows", "-h"]).startswith("Usage: ")
    monkeypatch.setenv("COLUMNS", str(help_pages.COLUMNS - 1))
    assert help_pages.stored_page("rankmodels", ["mallows", "-h"]) is None
    monkeypatch.setenv("COLUMNS", str(help_pages.COLUMNS))
    monkeypatch.setattr(help_pages, "sources_digest", lambda: "edited")
    assert help_pages.stored_page("rankmodels", ["mallows", "-h"]) is None


def test_a_program_called_by_another_name_is_left_to_click(monkeypatch, capsys, current):
    monkeypatch.setattr(sys, "argv", ["/usr/bin/python3", "--help"])
    assert not help_pages.serve("rankmodels")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/rankmodels", "--help"])
    assert help_pages.serve("rankmodels")
    assert capsys.readouterr().out == _stored()["pages"]["rankmodels"]["page"]
