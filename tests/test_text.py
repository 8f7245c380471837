"""rankmodels.text.printable: control characters replaced, every other character kept."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankmodels.text import REPLACEMENT, printable, with_error

SEPARATORS = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029")


def _noncharacter(ch: str) -> bool:
    code = ord(ch)
    return 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x00", REPLACEMENT),
        ("a\x00b", f"a{REPLACEMENT}b"),
        ("line\none\ttab\r", "line one tab "),
        ("\x1b[31mred", f"{REPLACEMENT}[31mred"),
        ("\x7f\x80\x85\x9f", f"{REPLACEMENT}{REPLACEMENT} {REPLACEMENT}"),
        ("\ud800", REPLACEMENT),
        ("\ufffe\U0010ffff\ufdd0", REPLACEMENT * 3),
        ('<b class="x">&amp;</b>', '<b class="x">&amp;</b>'),
        ("Ünïcødé 中文 🐟 \u200d\u202e", "Ünïcødé 中文 🐟 \u200d\u202e"),
        (767, "767"),
    ],
)
def test_examples(raw, shown):
    assert printable(raw) == shown


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=())))
@example("\x00\ud83d\x9c\u2028")
def test_controls_replaced_and_everything_else_kept(text):
    out = printable(text)
    assert len(out) == len(text)
    out.encode("utf-8")  # lone surrogates are gone
    for before, after in zip(text, out, strict=True):
        category = unicodedata.category(before)
        if before in SEPARATORS:
            assert after == " "
        elif category in ("Cc", "Cs") or _noncharacter(before):
            assert after == REPLACEMENT
        else:
            assert after == before
    assert printable(out) == out


def test_with_error_never_shows_a_bare_nan():
    assert with_error(1480.04, 0.26, 1) == "1480.0 ± 0.3"
    assert with_error(0.02, 0.0012, 4, signed=True) == "+0.0200 ± 0.0012"
    assert with_error(1480.0, float("nan"), 1) == "1480.0 (s.e. unknown)"
    assert with_error(-1.5, float("inf"), 2, signed=True, missing="not estimated") == (
        "-1.50 (not estimated)"
    )
    assert with_error(2.0, float("nan"), 1, signed=True, missing=None) == "+2.0"
    assert with_error(2.0, 0.25, 1, missing=None) == "2.0 ± 0.2"
