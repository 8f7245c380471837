"""The ``rankmodels`` command group. Subcommands live in their own modules, imported only
when they run (or when ``--help`` lists them): ``rankmodels aggregate`` does not load the
tracking stack (xarray, matplotlib)."""

from __future__ import annotations

import importlib

import click

from rankmodels import __version__
from rankmodels.threads import prepare_environment
from rankmodels_app._common import OneLineGroup

# Subcommand name -> (module, attribute).
_SUBCOMMANDS = {
    "aggregate": ("rankmodels_app.aggregate", "aggregate_command"),
    "track-float": ("rankmodels_app.track", "track_float"),
    "simulate-float": ("rankmodels_app.simulate", "simulate_float"),
    "ltr": ("rankmodels_app.ltr", "ltr_group"),
    "mallows": ("rankmodels_app.mallows", "mallows_group"),
    "study": ("rankmodels_app.study", "study_group"),
    "float": ("rankmodels_app.float", "float_group"),
}


class _LazyGroup(OneLineGroup):
    """A group whose subcommands are imported from :data:`_SUBCOMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _SUBCOMMANDS:
            return None
        module, attribute = _SUBCOMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rankmodels")
def cli() -> None:
    """Probabilistic inference over rankings: float tracking, rank aggregation, learning to rank."""


def main() -> None:
    """Console-script entry point for ``rankmodels`` (thread policy:
    :func:`rankmodels.threads.prepare_environment`)."""
    prepare_environment()
    cli()
