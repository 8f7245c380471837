"""Making user-supplied strings safe to show: HTML reports, figure titles, JSON text.

Names in the data (float ids, source and candidate names, file names) can hold any character.
Control characters are not text: HTML forbids NUL and most of C0/C1, a figure title cannot draw
them, and a NUL in a name is silently cut by numpy's fixed-width strings. :func:`printable`
replaces them before a string is shown; markup escaping (``html.escape``) is a separate, later
step.
"""

from __future__ import annotations

import math
import re
import unicodedata

REPLACEMENT = "\ufffd"
"""Shown in place of a control character (the Unicode replacement character)."""

_SPACE_LIKE = re.compile("[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]")
_NONCHARACTERS = "".join(
    chr(plane + 0xFFFE) + chr(plane + 0xFFFF) for plane in range(0, 0x110000, 0x10000)
)
_CONTROL = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ud800-\udfff\ufdd0-\ufdef" + _NONCHARACTERS + "]"
)


def printable(text: object) -> str:
    """``str(text)`` with every control character replaced.

    Line and field separators (tab, newline, vertical tab, form feed, carriage return,
    U+001C-U+001F, NEL, U+2028, U+2029) become a space; the other C0/C1 controls (including NUL
    and DEL), lone surrogates (which cannot be encoded as UTF-8) and Unicode noncharacters
    become U+FFFD. Everything else, including non-Latin scripts, emoji and markup characters,
    is kept unchanged, so the result has the same length as ``str(text)``.
    """
    return _CONTROL.sub(REPLACEMENT, _SPACE_LIKE.sub(" ", str(text)))


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: 2 for East Asian wide and full-width characters
    (CJK ideographs, kana, hangul), 0 for combining marks, 1 for the rest."""
    return sum(
        0
        if unicodedata.combining(ch)
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def pad(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` terminal columns (:func:`display_width`), as
    ``f"{text:<{width}}"`` pads one-column text."""
    return text + " " * max(width - display_width(text), 0)


def with_error(
    value: float,
    std: float,
    digits: int,
    *,
    signed: bool = False,
    missing: str | None = "s.e. unknown",
) -> str:
    """``value ± std`` with ``digits`` decimals (``+`` shown when ``signed``); when ``std`` is
    not finite the value carries ``missing`` in brackets instead (``missing=None``: the bare
    value), never a bare ``± nan``."""
    text = f"{value:{'+' if signed else ''}.{digits}f}"
    if math.isfinite(std):
        return f"{text} ± {std:.{digits}f}"
    return text if missing is None else f"{text} ({missing})"
