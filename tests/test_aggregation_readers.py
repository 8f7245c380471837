"""The chunked readers against the line-by-line parsers they replaced (``_aggregation_oracle``).

On generated files -- valid ones with quotes, blank lines, all three line endings, Unicode
names and spaces, and the same files with a few characters changed -- the fast reader must
return the same profile as the old parser or raise the same error (message, file and line),
whatever the chunk size (chunks of a few bytes cut through lines, quoted fields, ``\\r\\n``
pairs and multi-byte characters).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.aggregation.preflib import read_preflib
from rankmodels.aggregation.votes_csv import read_votes_csv
from rankmodels.errors import InputError
from tests import _aggregation_oracle as oracle

CHUNKS = st.sampled_from([1, 2, 3, 5, 16, 64, 1 << 22])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def histogram(profile) -> dict[tuple[tuple[int, ...], tuple[int, ...]], float]:
    return {
        (tuple(o), tuple(lv)): w
        for o, lv, w in zip(
            profile.orders.tolist(), profile.levels.tolist(), profile.weights, strict=True
        )
    }


def outcome(read):
    """``("ok", candidates, histogram)`` or ``("error", message)``."""
    try:
        profile = read()
    except InputError as err:
        return ("error", str(err))
    return ("ok", profile.candidates, histogram(profile))


def compare(text: str, suffix: str, fast, old, newline: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"votes{suffix}"
        path.write_bytes(text.encode("utf-8"))

        def old_read():
            with open(path, newline=newline, encoding="utf-8-sig") as handle:
                return old(handle, path)

        expected = outcome(old_read)
        got = outcome(lambda: fast(path))
    assert got == expected


# ---------------------------------------------------------------- votes CSV
names = st.text(alphabet="abcXYZ é-.\u00a0Ω", min_size=1, max_size=4)
spaces = st.sampled_from(["", " ", "  ", "\t", "\u00a0"])
endings = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def csv_files(draw) -> str:
    pool = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    columns = draw(st.permutations(["ranking", "count", "note"]))
    if draw(st.booleans()):
        columns = [c for c in columns if c != "count"]
    end = draw(endings)
    header = ",".join(draw(spaces) + c.capitalize() if draw(st.booleans()) else c for c in columns)
    lines = [header]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", " ", " , ", "\u00a0"])))
            continue
        order = draw(st.permutations(pool))[: draw(st.integers(1, len(pool)))]
        text = order[0]
        for name in order[1:]:
            text += draw(spaces) + draw(st.sampled_from([">", "="])) + draw(spaces) + name
        cells = {
            "ranking": text,
            "count": draw(st.sampled_from(["1", "2", " 3 ", "2.5", "1e1", "7"])),
            "note": draw(st.sampled_from(["", "x", '"a,b"', '"two\nlines"', 'say ""hi""'])),
        }
        row = []
        for c in columns:
            cell = cells[c]
            if c != "note" and draw(st.integers(0, 3)) == 0:
                cell = '"' + cell.replace('"', '""') + '"'
            row.append(cell)
        lines.append(",".join(row))
    return end.join(lines) + (end if draw(st.booleans()) else "")


def corrupt(draw, text: str, alphabet: str) -> str:
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        what = draw(st.sampled_from(["insert", "replace", "delete"]))
        char = draw(st.sampled_from(alphabet))
        if what == "insert":
            text = text[:at] + char + text[at:]
        elif what == "replace":
            text = text[:at] + char + text[at + 1 :]
        else:
            text = text[:at] + text[at + 1 :]
    return text


def csv_pair(chunk: int, candidates=None):
    return (
        lambda path: read_votes_csv(path, candidates=candidates, chunk_bytes=chunk),
        lambda handle, path: oracle.parse_votes_csv(handle, path=path, candidates=candidates),
    )


@given(csv_files(), CHUNKS)
@SETTINGS
def test_csv_reader_equals_the_old_parser_on_valid_files(text, chunk):
    compare(text, ".csv", *csv_pair(chunk), newline="")


@given(st.data(), csv_files(), CHUNKS)
@SETTINGS
def test_csv_reader_reports_the_old_first_bad_line(data, text, chunk):
    bad = corrupt(data.draw, text, '>=<,"\n\r x1-.\u00a0é\x85\x00')
    compare(bad, ".csv", *csv_pair(chunk), newline="")


@given(st.data(), csv_files(), CHUNKS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_csv_reader_with_a_fixed_candidate_list(data, text, chunk):
    candidates = data.draw(st.lists(names, max_size=4, unique=True))
    compare(text, ".csv", *csv_pair(chunk, candidates), newline="")


# ---------------------------------------------------------------- PrefLib
@st.composite
def preflib_files(draw) -> tuple[str, str]:
    kind = draw(st.sampled_from(["soc", "soi", "toc", "toi"]))
    n = draw(st.integers(1, 5))
    end = draw(endings)
    lines = [f"# DATA TYPE: {kind}", f"# NUMBER ALTERNATIVES: {n}"]
    for i in range(1, n + 1):
        if draw(st.booleans()):
            lines.append(f"# ALTERNATIVE NAME {i}: {draw(names)}")
    for _ in range(draw(st.integers(0, 8))):
        roll = draw(st.integers(0, 7))
        if roll == 0:
            lines.append(draw(st.sampled_from(["", "  ", "# a comment", "\u00a0"])))
            continue
        perm = [str(x) for x in draw(st.permutations(range(1, n + 1)))]
        if kind in ("soi", "toi"):
            perm = perm[: draw(st.integers(1, n))]
        cells = []
        i = 0
        while i < len(perm):
            size = draw(st.integers(1, 3)) if kind in ("toc", "toi") else 1
            group = perm[i : i + size]
            sep = "," + draw(spaces)
            cells.append(group[0] if size == 1 else "{" + sep.join(group) + "}")
            i += size
        count = draw(st.sampled_from(["1", "2", " 3", "10", "+4", "0_7"]))
        lines.append(f"{draw(spaces)}{count}:{draw(spaces)}{','.join(cells)}{draw(spaces)}")
    text = end.join(lines) + (end if draw(st.booleans()) else "")
    return kind, text


def preflib_pair(kind: str, chunk: int):
    return (
        lambda path: read_preflib(path, chunk_bytes=chunk),
        lambda handle, path: oracle.parse_preflib(handle, kind, path=path),
    )


@given(preflib_files(), CHUNKS)
@SETTINGS
def test_preflib_reader_equals_the_old_parser_on_valid_files(file, chunk):
    kind, text = file
    compare(text, f".{kind}", *preflib_pair(kind, chunk), newline=None)


@given(st.data(), preflib_files(), CHUNKS)
@SETTINGS
def test_preflib_reader_reports_the_old_first_bad_line(data, file, chunk):
    kind, text = file
    bad = corrupt(data.draw, text, "0123456789,{}: #\n\r-+_\u00a0é\u0661")
    compare(bad, f".{kind}", *preflib_pair(kind, chunk), newline=None)


# ---------------------------------------------------------------- shared data
def test_real_preflib_files_read_as_before(shared_data):
    folder = shared_data / "preflib"
    for path in sorted(folder.glob("*.so[ci]")):
        with open(path, encoding="utf-8-sig") as handle:
            old = oracle.parse_preflib(handle, path.suffix[1:], path=path)
        for chunk in (4096, 1 << 22):
            new = read_preflib(path, chunk_bytes=chunk)
            assert new.candidates == old.candidates
            assert histogram(new) == histogram(old)


def test_shipped_votes_csv_reads_as_before(repo_data):
    path = repo_data / "votes.csv"
    with open(path, newline="", encoding="utf-8-sig") as handle:
        old = oracle.parse_votes_csv(handle, path=path)
    new = read_votes_csv(path, chunk_bytes=7)
    assert new.candidates == old.candidates and histogram(new) == histogram(old)


@pytest.mark.parametrize("chunk", [3, 1 << 22])
def test_non_utf8_names_its_line_and_byte(tmp_path, chunk):
    path = tmp_path / "v.csv"
    path.write_bytes(b"ranking\nA>B\r\nB>A\nF\xe1il>A\n")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 18 cannot be decoded\)") as err:
        read_votes_csv(path, chunk_bytes=chunk)
    assert err.value.field == "line 4"


def test_merging_is_by_ballot_not_by_text(tmp_path):
    # the same ballot written four ways, and the complete form of a truncated ballot
    path = tmp_path / "v.csv"
    path.write_text('ranking,count\nA>B=C,1\n A > C = B ,2\nA,4\n"A>B=C",8\nB>A>C,16\nB>A,32\n')
    profile = read_votes_csv(path, chunk_bytes=5)
    assert histogram(profile) == {((0, 1, 2), (0, 1, 1)): 15.0, ((1, 0, 2), (0, 1, 2)): 48.0}
    assert np.isclose(profile.total, 63)
