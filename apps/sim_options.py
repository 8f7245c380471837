"""Options shared by the simulating commands (``simulate-float``, ``simulate-experiment``):
the signal settings and the mismatches between what a record states and what happened."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from rankmodels.errors import InputError
from rankmodels.tracking.simulate import SignalSpec, range_dependent_detection
from rankmodels_app._common import BadInput, NumberRange

F = TypeVar("F")

#: Option names of the settings (:class:`~rankmodels.tracking.simulate.Mismatch` fields and
#: others) that are not spelled alike.
OPTION_NAMES = {
    "clock_drift": "float-drift",
    "clock_offset": "float-clock-offset",
    "source_drift": "source-drift-true",
}


def bad_setting(err: InputError) -> BadInput:
    """The one-line error of a setting the library refused (``err.field`` the setting)."""
    option = "--" + OPTION_NAMES.get(err.field or "", (err.field or "").replace("_", "-"))
    return BadInput(f"{option}: {err.message}")


def make_folder(out: Path) -> None:
    """Create the ``--out`` folder before the work, so that a bad one fails at once."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(f"{out}: --out: cannot create the folder ({err.strerror})") from None


_OPTIONS = (
    click.option(
        "--sigma",
        type=NumberRange(min=0.0, max=60.0, min_open=True),
        default=5.0,
        show_default=True,
        help="Standard deviation (s) of the TOA noise.",
    ),
    click.option(
        "--p-detect",
        type=NumberRange(min=0.0, max=1.0, min_open=True),
        default=0.95,
        show_default=True,
        help="Probability that a source is heard up to 800 km.",
    ),
    click.option(
        "--p-detect-far",
        type=NumberRange(min=0.0, max=1.0),
        default=0.75,
        show_default=True,
        help="Probability that a source is heard from 2,500 km (linear in between).",
    ),
    click.option(
        "--clutter-rate",
        type=NumberRange(min=0.0, max=20.0),
        default=1.0,
        show_default=True,
        help="Mean number of clutter arrivals per listening window (Poisson).",
    ),
    click.option(
        "--true-sound-speed",
        type=float,
        default=None,
        help="Speed (m/s) the signals travel at; the record keeps its nominal sound_speed  "
        "[default: the nominal; 1400<=x<=1600].",
    ),
    click.option(
        "--offset-error",
        type=float,
        default=0.0,
        show_default=True,
        help="Std (s) of the errors of the written source_offset values  [0<=x<=60].",
    ),
    click.option(
        "--multipath",
        type=float,
        default=0.0,
        show_default=True,
        help="Fraction of source arrivals delayed by Uniform(10, 60) s  [0<=x<1].",
    ),
)


def signal_options(func: Callable[..., F]) -> Callable[..., F]:
    """Add the shared options: ``--sigma``, ``--p-detect``, ``--p-detect-far``,
    ``--clutter-rate`` (the signals: :func:`signal_spec`) and ``--true-sound-speed``,
    ``--offset-error``, ``--multipath`` (what the record does not state)."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def signal_spec(
    sigma: float, p_detect: float, p_detect_far: float, clutter_rate: float, **settings: float
) -> SignalSpec:
    """The simulator's signal settings from the shared options (``settings``: the spec's
    other fields, e.g. ``sound_speed``)."""
    return SignalSpec(
        sigma=sigma,
        p_detect=range_dependent_detection(p_detect, p_detect_far),
        clutter_rate=clutter_rate,
        **settings,
    )
