"""The ``rankmodels`` command group. Subcommands live in their own modules."""

from __future__ import annotations

import click

from apps.aggregate import aggregate_command
from rankmodels import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rankmodels")
def cli() -> None:
    """Probabilistic inference over rankings: float tracking, rank aggregation, learning to rank."""


cli.add_command(aggregate_command)


def main() -> None:
    """Console-script entry point for ``rankmodels``."""
    cli()
