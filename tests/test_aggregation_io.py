"""Vote readers and writers: formats, precise errors with line numbers, fuzzing."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import Profile, read_votes, write_preflib, write_votes_csv
from rankmodels.aggregation.io import parse_preflib, parse_votes_csv, read_preflib, read_votes_csv
from rankmodels.errors import InputError


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_votes_csv_with_ties_counts_and_unranked(tmp_path):
    path = write(tmp_path, "v.csv", "count,ranking\n3,A>B=C\n2, C > A > B > D\n\n")
    profile = read_votes(path)
    assert profile.candidates == ("A", "B", "C", "D")
    assert profile.total == 5
    ballots = dict(zip(map(str, profile.weak_orders()), profile.weights, strict=True))
    assert ballots == {"[[0], [1, 2], [3]]": 3.0, "[[2], [0], [1], [3]]": 2.0}


def test_shipped_sample_reads(repo_data):
    profile = read_votes(repo_data / "votes.csv")
    assert profile.n == 4 and profile.total == 40


@pytest.mark.parametrize(
    "text, field, message",
    [
        ("", None, "empty file"),
        ("\n\n", None, "empty file"),
        ("name,count\nA>B,1\n", "line 1", "no 'ranking' column"),
        ("ranking\n", None, "no ballots"),
        ("ranking,count\nA>B,1\nA>B>A,2\n", "line 3", "appears twice"),
        ("ranking,count\nA>>B,1\n", "line 2", "empty candidate name"),
        ("ranking,count\nA>B,0\n", "line 2", "positive"),
        ("ranking,count\nA>B,-3\n", "line 2", "positive"),
        ("ranking,count\nA>B,x\n", "line 2", "not a number"),
        ("ranking,count\nA>B,1\nB>A\n", "line 3", "expected 2 fields"),
        ("ranking,count\n,1\n", "line 2", "empty ranking"),
        ("ranking\nA<B\n", "line 2", "'<'"),
    ],
)
def test_votes_csv_errors_name_file_and_line(tmp_path, text, field, message):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(InputError, match=message) as err:
        read_votes(path)
    assert err.value.path == str(path)
    assert err.value.field == field


def test_votes_csv_unknown_candidate_when_the_list_is_fixed(tmp_path):
    path = write(tmp_path, "v.csv", "ranking\nA>B\nA>Z\n")
    with pytest.raises(InputError, match="unknown candidate 'Z'") as err:
        read_votes(path, candidates=["A", "B"])
    assert err.value.field == "line 3"


PREFLIB = """# FILE NAME: x
# DATA TYPE: {kind}
# NUMBER ALTERNATIVES: 3
# ALTERNATIVE NAME 1: Jaws
# ALTERNATIVE NAME 2: I
# ALTERNATIVE NAME 3: Four Rooms
{body}"""


def test_preflib_toi_with_braces(tmp_path):
    path = write(tmp_path, "a.toi", PREFLIB.format(kind="toi", body="4: 2,{1,3}\n1: {1,2}\n"))
    profile = read_votes(path)
    assert profile.candidates == ("Jaws", "I", "Four Rooms")
    ballots = dict(zip(map(str, profile.weak_orders()), profile.weights, strict=True))
    assert ballots == {"[[1], [0, 2]]": 4.0, "[[0, 1], [2]]": 1.0}


@pytest.mark.parametrize(
    "kind, body, line, message",
    [
        ("soc", "3: 1,2\n", 8, "must rank all 3"),
        ("soi", "3: 1,{2,3}\n", 8, "ties"),
        ("soi", "3: 1,4\n", 8, "unknown candidate 4"),
        ("soi", "3: 1,1\n", 8, "appears twice"),
        ("soi", "0: 1,2\n", 8, "positive"),
        ("soi", "two: 1,2\n", 8, "not an integer"),
        ("soi", "3 1,2\n", 8, "expected 'count: ballot'"),
        ("soi", "3: 1,a\n", 8, "not a candidate number"),
        ("toi", "3: 1,{2,3\n", 8, "unbalanced"),
        ("soi", "3:\n", 8, "empty ballot"),
    ],
)
def test_preflib_errors_name_the_line(tmp_path, kind, body, line, message):
    path = write(tmp_path, f"bad.{kind}", PREFLIB.format(kind=kind, body="1: 1,2,3\n" + body))
    with pytest.raises(InputError, match=message) as err:
        read_votes(path)
    assert err.value.field == f"line {line}"
    assert err.value.path == str(path)


def test_preflib_empty_and_headerless(tmp_path):
    with pytest.raises(InputError, match="empty file"):
        read_votes(write(tmp_path, "e.soc", ""))
    with pytest.raises(InputError, match="before the"):
        read_votes(write(tmp_path, "h.soc", "1: 1,2\n"))
    with pytest.raises(InputError, match="no ballots"):
        read_votes(write(tmp_path, "n.soc", "# NUMBER ALTERNATIVES: 2\n"))
    with pytest.raises(InputError, match="unknown vote file type"):
        read_votes(write(tmp_path, "v.xlsx", "x"))


def test_missing_file_is_a_file_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_votes(tmp_path / "nope.csv")


# ---------------------------------------------------------------- round trips and fuzzing
names = st.text(alphabet="abcdefghXYZ _-.", min_size=1, max_size=6).map(str.strip).filter(bool)


@st.composite
def profiles(draw):
    cands = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    n = len(cands)
    m = draw(st.integers(1, 6))
    ballots = []
    for _ in range(m):
        perm = draw(st.permutations(range(n)))
        keep = draw(st.integers(1, n))
        cuts = sorted(draw(st.sets(st.integers(1, max(keep - 1, 1)), max_size=keep - 1)))
        cuts = [c for c in cuts if c < keep]
        ballots.append([list(g) for g in np.split(np.array(perm[:keep]), cuts) if g.size])
    weights = draw(st.lists(st.integers(1, 50), min_size=m, max_size=m))
    return Profile.from_weak_orders(ballots, weights, cands)


def same_distribution(a: Profile, b: Profile) -> None:
    perm = [b.index(c) for c in a.candidates]
    np.testing.assert_allclose(a.pairwise, b.pairwise[np.ix_(perm, perm)], atol=1e-12)
    np.testing.assert_allclose(a.positional_matrix, b.positional_matrix[perm], atol=1e-12)
    assert a.total == b.total


@given(profiles())
@settings(max_examples=60, deadline=None)
def test_votes_csv_round_trip(profile):
    buffer = io.StringIO()
    write_votes_csv(profile, buffer)
    buffer.seek(0)
    same_distribution(profile, parse_votes_csv(buffer))


@given(profiles())
@settings(max_examples=60, deadline=None)
def test_preflib_round_trip(profile):
    buffer = io.StringIO()
    kind = write_preflib(profile, buffer)
    buffer.seek(0)
    back = parse_preflib(buffer, kind)
    assert back.candidates == profile.candidates
    same_distribution(profile, back)


@given(st.text(alphabet="AB C>=<,\n12{}:#-.", max_size=80))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_csv_reader_fails_only_with_input_error(text):
    try:
        profile = parse_votes_csv(io.StringIO(text), path="fuzz.csv")
    except InputError as err:
        assert "\n" not in str(err)
        return
    assert profile.total > 0


@given(
    st.sampled_from(["soc", "soi", "toc", "toi"]),
    st.text(alphabet="0123 ,{}:\n-", max_size=60),
)
@settings(max_examples=300, deadline=None)
def test_preflib_reader_fails_only_with_input_error(kind, body):
    text = "# NUMBER ALTERNATIVES: 3\n" + body
    try:
        profile = parse_preflib(io.StringIO(text), kind, path=f"fuzz.{kind}")
    except InputError as err:
        assert "\n" not in str(err)
        return
    assert profile.n == 3 and profile.total > 0


def test_byte_order_mark_and_non_utf8(tmp_path):
    bom = tmp_path / "bom.csv"
    bom.write_bytes("ranking,count\nA>B,2\n".encode("utf-8-sig"))
    assert read_votes(bom).candidates == ("A", "B")
    latin = tmp_path / "latin.soi"
    latin.write_bytes(b"# NUMBER ALTERNATIVES: 2\n# ALTERNATIVE NAME 1: F\xe1il\n1: 1,2\n")
    with pytest.raises(InputError, match="not UTF-8") as err:
        read_votes(latin)
    assert err.value.path == str(latin)


@pytest.mark.parametrize("name", ["v.csv", "v.soi"])
def test_progress_reports_every_byte(tmp_path, name):
    if name.endswith(".csv"):
        text = "ranking,count\n" + "".join(f"A>B=C>Dé,{i + 1}\n" for i in range(10_000))
    else:
        text = PREFLIB.format(kind="soi", body="".join(f"{i + 1}: 1,3\n" for i in range(10_000)))
    path = write(tmp_path, name, text)
    calls: list[int] = []
    profile = read_votes(path, progress=calls.append)
    assert sum(calls) == path.stat().st_size  # bytes, not characters ("é" is two)
    assert profile.total == 10_000 * 10_001 / 2
    reader = read_votes_csv if name.endswith(".csv") else read_preflib
    calls.clear()
    assert reader(path, progress=calls.append, chunk_bytes=4096).total == profile.total
    assert sum(calls) == path.stat().st_size
    assert len(calls) > 2 and all(c > 0 for c in calls)  # reported along the way, chunk by chunk


@pytest.mark.parametrize(
    "name, text, line",
    [
        ("big.csv", "ranking,count\nA>B,1e308\nB>A,1e308\n", "line 3"),
        (
            "big.soc",
            PREFLIB.format(kind="soc", body="1: 1,2,3\n" + "9" * 400 + ": 3,2,1\n"),
            "line 8",
        ),
    ],
)
def test_counts_too_large_for_a_float_are_input_errors(tmp_path, name, text, line):
    with pytest.raises(InputError, match="the counts add up to more than 1.8e\\+308") as err:
        read_votes(write(tmp_path, name, text))
    assert err.value.field == line
