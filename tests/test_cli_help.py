"""``rankmodels --help`` lists the subcommands from a table, without importing them: the
table's sentences must say what the commands' own help says."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

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
    assert run.stdout.strip().splitlines()[-1] == "['rankmodels_app._common', 'rankmodels_app.cli']"
