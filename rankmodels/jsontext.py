"""JSON as every command writes it: indented by two spaces, numbers without float noise.

A float is written with at most :data:`DIGITS` significant digits, so the last bits of
binary rounding (``0.19999999999999996``, ``17.303141077999953``) do not show; a float
with an integral value (a count summed in floating point, ``40.0``) is written as an
integer, as JSON has one number type. The relative change is below ``5e-12``, far below
any quantity these files hold. NaN and infinities, which JSON cannot hold, become ``null``.
numpy scalars and arrays are written as the numbers and lists they hold. Fitted parameters
that must read back bit for bit (a model's weights) are named in ``exact`` and written in
full (the shortest text that reads back as the same double).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from typing import Any

import numpy as np

__all__ = ["DIGITS", "clean", "dumps"]

DIGITS = 12
"""Significant digits kept of every float."""


def clean(value: Any, exact: Collection[str] = (), rounded: bool = True) -> Any:
    """``value`` with every float rounded to :data:`DIGITS` significant digits (integral
    ones as ``int``, non-finite ones as ``None``), numpy values as Python ones, tuples as
    lists; dict keys are kept. The values of keys in ``exact`` keep their floats unrounded."""
    if isinstance(value, dict):
        return {
            key: clean(item, exact, rounded and key not in exact) for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [clean(item, exact, rounded) for item in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist(), exact, rounded)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return None
        if not rounded:
            return number
        short = float(f"{number:.{DIGITS}g}")
        return int(short) if short.is_integer() and abs(short) < 2**53 else short
    return value


def dumps(value: Any, exact: Collection[str] = ()) -> str:
    """``value`` as JSON text (see the module docstring), ending with a newline; the values
    of keys in ``exact`` keep their floats in full."""
    return json.dumps(clean(value, exact), indent=2, allow_nan=False) + "\n"
