"""The ``rankmodels`` command group. Subcommands live in their own modules."""

from __future__ import annotations

import click

from rankmodels import __version__
from rankmodels_app._common import OneLineGroup
from rankmodels_app.aggregate import aggregate_command
from rankmodels_app.float import float_group
from rankmodels_app.ltr import ltr_group
from rankmodels_app.mallows import mallows_group
from rankmodels_app.simulate import simulate_float
from rankmodels_app.study import study_group
from rankmodels_app.track import track_float


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rankmodels")
def cli() -> None:
    """Probabilistic inference over rankings: float tracking, rank aggregation, learning to rank."""


cli.add_command(aggregate_command)
cli.add_command(track_float)
cli.add_command(simulate_float)
cli.add_command(ltr_group)
cli.add_command(mallows_group)
cli.add_command(study_group)
cli.add_command(float_group)


def main() -> None:
    """Console-script entry point for ``rankmodels``."""
    cli()
