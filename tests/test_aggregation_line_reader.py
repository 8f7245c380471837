"""The line reader shared by the PrefLib and ABIF readers: line kinds against ``str.strip``,
the token bound against a count, and the first bad line of a file reported whatever its
kind (a ballot line checked in bulk or a line read alone), chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import abif, preflib
from rankmodels.aggregation.line_reader import (
    BALLOT,
    BLANK,
    COMMENT,
    classify_lines,
    separator_table,
    token_arrays,
)
from rankmodels.errors import InputError


def spans(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The UTF-8 bytes of ``texts`` one after the other, and each one's span."""
    data = [t.encode("utf-8") for t in texts]
    lengths = np.array([len(d) for d in data], dtype=np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return np.frombuffer(b"".join(data) or b"\0", np.uint8), starts, ends


def preflib_kind(first: str) -> int:
    return COMMENT if first == "#" else BALLOT


def abif_kind(first: str) -> int:
    own = {"#": COMMENT, "{": abif._METADATA, "=": abif._DECLARATION}
    return own.get(first, BALLOT if first in "0123456789" else abif._OTHER)


LINES = st.lists(st.text(alphabet=" \t\x1f\u00a0\u3000#{=:09aé,", max_size=6), max_size=12)


@given(LINES)
@settings(max_examples=200, deadline=None)
def test_line_kinds_and_colons_follow_str_strip(texts):
    buf, starts, ends = spans(texts)
    for reader, by_first in ((preflib._PrefLib, preflib_kind), (abif._Abif, abif_kind)):
        kind, colon = classify_lines(buf, starts, ends, reader.kinds)
        for i, text in enumerate(texts):
            stripped = text.strip()
            assert kind[i] == (by_first(stripped[0]) if stripped else BLANK), (text, reader)
            at = text.encode("utf-8").find(b":")
            assert colon[i] == (starts[i] + at if at >= 0 else -1)


@given(st.lists(st.text(alphabet="ab,{}>= é", max_size=8), max_size=10))
@settings(max_examples=100, deadline=None)
def test_token_arrays_hold_a_token_per_text_and_per_separator(texts):
    buf, starts, ends = spans(texts)
    for chars in (",{}", ">=,"):
        arrays = token_arrays(buf, starts, ends, separator_table(chars))
        expected = len(texts) + sum(t.count(c) for t in texts for c in chars)
        assert [a.size for a in arrays] == [expected] * 4


def read(tmp_path, text: str, suffix: str, chunk: int):
    path = tmp_path / f"votes{suffix}"
    path.write_text(text, encoding="utf-8")
    reader = abif.read_abif if suffix == ".abif" else preflib.read_preflib
    return reader(path, chunk_bytes=chunk)


# (suffix, good lines, a bad ballot line and its error, a bad line read alone and its error)
CASES = [
    (
        ".toi",
        ["# NUMBER ALTERNATIVES: 2", "3: 1,2"],
        ("1: 1,{2,1}", "candidate 1 appears twice"),
        ("# NUMBER ALTERNATIVES: 3", "given again as 3 after 2"),
    ),
    (
        ".abif",
        ["=a:[A]", "3: a > b"],
        ("1: a > b = a", "candidate 'a' appears twice"),
        ("a > b", "expected a ballot line 'count: A > B = C'"),
    ),
]


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
@pytest.mark.parametrize("ballot_first", [True, False])
@pytest.mark.parametrize(("suffix", "good", "bad_ballot", "bad_line"), CASES)
def test_the_first_bad_line_is_reported(
    tmp_path, suffix, good, bad_ballot, bad_line, ballot_first, chunk
):
    first, second = (bad_ballot, bad_line) if ballot_first else (bad_line, bad_ballot)
    lines = [*good, good[-1], first[0], good[-1], second[0], good[-1]]
    with pytest.raises(InputError, match=first[1]) as err:
        read(tmp_path, "\n".join(lines) + "\n", suffix, chunk)
    assert err.value.field == f"line {len(good) + 2}"


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_a_ballot_before_the_number_of_candidates_is_an_error_even_if_it_follows(tmp_path, chunk):
    text = "# TITLE: t\n\n2: 1\n# NUMBER ALTERNATIVES: 1\n1: 1\n"
    with pytest.raises(InputError, match="ballot before the '# NUMBER ALTERNATIVES") as err:
        read(tmp_path, text, ".soc", chunk)
    assert err.value.field == "line 3"
    profile = read(tmp_path, "# NUMBER ALTERNATIVES: 1\n\n2: 1\n1: 1\n", ".soc", chunk)
    assert profile.total == 3
