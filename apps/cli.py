"""The ``rankmodels`` command group and the console-script entry points. Subcommands live in
their own modules, imported only when they run: ``rankmodels aggregate`` does not load the
tracking stack (xarray, matplotlib), and ``--help`` of any command is a stored page
(:mod:`rankmodels_app.help_pages`) that imports none of them."""

from __future__ import annotations

import importlib

import click

from rankmodels import __version__
from rankmodels.threads import prepare_environment
from rankmodels_app import help_pages
from rankmodels_app._common import OneLineGroup

# Subcommand name -> (module, attribute, the first sentence of its help). ``rankmodels --help``
# lists the sentences without importing the modules (tests check them against the commands).
_SUBCOMMANDS = {
    "aggregate": (
        "rankmodels_app.aggregate",
        "aggregate_command",
        "Aggregate the ranked ballots in VOTES (votes CSV, cast-vote record CSV with rank "
        "columns, PrefLib .soc/.soi/.toc/.toi, or ABIF .abif) into consensus ranking(s), with "
        "scores and an axiom report.",
    ),
    "track-float": (
        "rankmodels_app.track",
        "track_float",
        "Track the RAFOS float recorded in FILE (NetCDF float record); given several files or "
        "a folder of records, track each into its own folder under OUT, in parallel on Dask, "
        "and write OUT/summary.csv and summary.json.",
    ),
    "simulate-float": (
        "rankmodels_app.simulate",
        "simulate_float",
        "Simulate a RAFOS float on the DIMES source array, launched where DIMES float 767 was.",
    ),
    "simulate-experiment": (
        "rankmodels_app.experiment",
        "simulate_experiment",
        "Replay the DIMES experiment: simulate its floats on the real metadata in METADATA.",
    ),
    "ltr": ("rankmodels_app.ltr", "ltr_group", "Learning to rank on LETOR / SVMlight files."),
    "mallows": (
        "rankmodels_app.mallows",
        "mallows_group",
        "Mallows models and mixtures: sample votes, fit models to votes (docs/mallows.md).",
    ),
    "study": (
        "rankmodels_app.study",
        "study_group",
        "Simulation studies that reproduce the papers' experiments.",
    ),
    "float": (
        "rankmodels_app.float",
        "float_group",
        "Float records (NetCDF) from CSV tables or decoder files, and to CSV tables.",
    ),
}


class _LazyGroup(OneLineGroup):
    """A group whose subcommands are imported from :data:`_SUBCOMMANDS` on first use; its
    help lists them from the table."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _SUBCOMMANDS:
            return None
        module, attribute, _ = _SUBCOMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands" section as click writes it, from the table (nothing imported)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, _short_help(name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _short_help(name: str, limit: int) -> str:
    """Subcommand ``name``'s summary, shortened to ``limit`` characters as click shortens a
    command's help."""
    return click.Command(name, help=_SUBCOMMANDS[name][2]).get_short_help_str(limit)


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="rankmodels")
def cli() -> None:
    """Probabilistic inference over rankings: float tracking, rank aggregation, learning to rank."""


def main() -> None:
    """Console-script entry point for ``rankmodels`` (thread policy:
    :func:`rankmodels.threads.prepare_environment`)."""
    if help_pages.serve("rankmodels"):
        return
    prepare_environment()
    cli()


def track_float_main() -> None:
    """Console-script entry point for ``track-float``: a stored help page, or
    :func:`rankmodels_app.track.track_float_main`."""
    if not help_pages.serve("track-float"):
        importlib.import_module("rankmodels_app.track").track_float_main()


def aggregate_main() -> None:
    """Console-script entry point for ``aggregate``: a stored help page, or
    :func:`rankmodels_app.aggregate.aggregate_main`."""
    if not help_pages.serve("aggregate"):
        importlib.import_module("rankmodels_app.aggregate").aggregate_main()
