"""Options shared by the simulating commands (``simulate-float``, ``simulate-experiment``):
the signal settings and the mismatches between what a record states and what happened."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rankmodels.tracking.simulate import SignalSpec, range_dependent_detection
from rankmodels_app._common import BadInput
from rankmodels_app.setting_options import setting_options

#: The options every simulating command shares (rows of
#: :data:`rankmodels.tracking.settings.SETTINGS`): the signals, then what the record does not
#: state.
SIGNAL_FIELDS = (
    "sigma", "p_detect", "p_detect_far", "clutter_rate", "true_sound_speed", "offset_error",
    "multipath",
)  # fmt: skip


def make_folder(out: Path) -> None:
    """Create the ``--out`` folder before the work, so that a bad one fails at once."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(f"{out}: --out: cannot create the folder ({err.strerror})") from None


def signal_options(command: str) -> Callable[[Any], Any]:
    """The shared options of ``command``: ``--sigma``, ``--p-detect``, ``--p-detect-far``,
    ``--clutter-rate`` (the signals: :func:`signal_spec`) and ``--true-sound-speed``,
    ``--offset-error``, ``--multipath`` (what the record does not state)."""
    return setting_options(command, *SIGNAL_FIELDS)


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
