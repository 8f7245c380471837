"""ABIF: a hand-written file, errors with their line, writing and reading back random
profiles, and fuzzed corruptions read chunk by chunk against a line-by-line reference."""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import Profile, aggregate, read_votes, write_abif
from rankmodels.aggregation.abif import _DECLARATION_LINE, _uncomment, parse_ballot, read_abif
from rankmodels.aggregation.line_reader import parse_count
from rankmodels.errors import InputError
from rankmodels_app.aggregate import aggregate_command


def write(tmp_path: Path, text: str, name: str = "votes.abif") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def ballots(profile: Profile) -> dict[tuple[tuple[str, ...], ...], float]:
    """Each ballot as its tie groups of names, best first (complete: unranked last)."""
    return {
        tuple(tuple(profile.candidates[x] for x in g) for g in groups): float(w)
        for groups, w in zip(profile.weak_orders(), profile.weights, strict=True)
    }


ELECTION = """# Case 15 of the ABIF test files, ranked
{"title": "City #1"}
=DGM:[Doña García Márquez]
=SBJ:[Steven B. Jensen]   # a comment
=SY:"Sue Ye (蘇業)"
=AM:Adam Muñoz
=ZZ:[Zed, never ranked]

27: DGM > SBJ > SY > AM
26: SBJ>[DGM]=SY   # A tie
24: "SY" > DGM, AM
3:
2 : DGM>SBJ>SY>AM
"""


def test_a_hand_written_file(tmp_path):
    profile = read_votes(write(tmp_path, ELECTION))
    D, S, Y, A, Z = (
        "Doña García Márquez",
        "Steven B. Jensen",
        "Sue Ye (蘇業)",
        "Adam Muñoz",
        "Zed, never ranked",
    )
    assert profile.candidates == (D, S, Y, A, Z)  # declared, in order, even if never ranked
    assert ballots(profile) == {
        ((D,), (S,), (Y,), (A,), (Z,)): 29,  # 4 of 5 ranked: Z is forced last
        ((S,), (D, Y), (A, Z)): 26,
        ((Y,), (D, A), (S, Z)): 24,  # ',' ties like '='
    }  # "3:" ranks nobody: left out
    assert profile.total == 79


def test_without_candidate_lines_the_tokens_are_the_candidates(tmp_path):
    profile = read_votes(write(tmp_path, "3: b > [a c]\n2: d=b\n"))
    assert profile.candidates == ("b", "a c", "d")
    assert ballots(profile) == {(("b",), ("a c",), ("d",)): 3, (("b", "d"), ("a c",)): 2}


def test_candidates_declared_after_their_ballots_keep_the_declared_order(tmp_path):
    text = "2: B = A > C\n1: C\n=A:[Alice]\n=B:[Bob]\n=C:[Carol]\n=D:[Dan]\n"
    for chunk in (1, 9, 1 << 20):
        profile = read_abif(write(tmp_path, text), chunk_bytes=chunk)
        assert profile.candidates == ("Alice", "Bob", "Carol", "Dan")
        assert profile.weak_orders() == [[[0, 1], [2], [3]], [[2], [0, 1, 3]]]
        np.testing.assert_array_equal(profile.weights, [2, 1])


def test_format_option_and_the_command(tmp_path):
    path = write(tmp_path, ELECTION, "election.txt")
    assert read_votes(path, format="abif").total == 79
    result = CliRunner().invoke(
        aggregate_command,
        ["--rule", "benham", "--format-in", "abif", "--format", "json", str(path)],
    )
    report = json.loads(result.output)
    assert report["ballots"] == 79 and report["ranking"][0] == "Doña García Márquez"
    wrong = CliRunner().invoke(
        aggregate_command, ["--candidates", "A,B", "--format-in", "abif", str(path)]
    )
    assert wrong.exit_code == 2
    assert wrong.output.strip() == (
        f"Error: {path}: candidates are for CSV files; an ABIF file declares its candidates"
    )


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("3: A >> B\n", "line 1", "malformed ballot 'A >> B': expected a candidate, got '>'"),
        ("1: A\n3: A > B >\n", "line 2", "'A > B >': it ends with a separator"),
        ("3: A/5 > B\n", "line 1", "ballot 'A/5 > B' has ratings ('/')"),
        ("3: A > [B\n", "line 1", "'[' without its closing ']'"),
        ("3: A B\n", "line 1", "expected '>' or '=' after 'A', got 'B'"),
        ("3: A > a = [A]\n", "line 1", "candidate 'A' appears twice in the ballot"),
        ("3: [ ] > A\n", "line 1", "empty candidate name"),
        ("1: A\n0: A\n", "line 2", "count must be positive, got 0"),
        ("3 A > B\n", "line 1", "expected a ballot line 'count: A > B = C', got '3 A > B'"),
        ("\n-1: A\n", "line 2", "expected a ballot line 'count: A > B = C', a candidate line"),
        ("=A:[Alice]\n=A:[Bob]\n1: A\n", "line 2", "candidate 'A' declared again as 'Bob'"),
        ("=A\n1: A\n", "line 1", "malformed candidate line '=A'; expected '=token:[name]'"),
        ("{title: x\n1: A\n", "line 1", "metadata line '{title: x' does not end with '}'"),
        ("=A:[Al]\n=B:[Al]\n1: A > B\n", "line 2", "candidate name 'Al' given to 'A' and 'B'"),
        ("=A:[Alice]\n1: A\n2: A > B\n5: B\n", "line 3", "candidate 'B' is not declared"),
        ("# nothing\n\n", None, "empty file; expected ballot lines"),
        ("=A:[Alice]\n", None, "no ballot lines in the file"),
        ("3:\n2:  # blank\n", None, "no ballot ranks any candidate"),
        ("1: A\n2: \udcff\n", "line 2", "not UTF-8 text (byte 8 cannot be decoded)"),
    ],
)
def test_errors_name_the_line_and_exit_2(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_abif(path)
    assert message in str(err.value) and err.value.field == line
    assert err.value.path == str(path) and "\n" not in str(err.value)
    result = CliRunner().invoke(aggregate_command, [str(path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {err.value}"


# ---------------------------------------------------------------- round trips
NAMES = [
    "A", "Bob", "Doña Ana", "x]y", 'q"t', "a#b", "A>B", "[c]", "1", "e=f", "Sue Ye (蘇業)",
    "tab\tin", "x,y", "a/b", "{k}", "q:r", "-", "a b c",
]  # fmt: skip


@st.composite
def profiles(draw) -> Profile:
    n = draw(st.integers(1, 5))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n, unique=True))
    types = []
    for _ in range(draw(st.integers(1, 6))):
        perm = draw(st.permutations(range(n)))
        keep = draw(st.integers(1, n))
        cuts = [k for k in range(1, keep) if draw(st.booleans())]
        types.append([list(perm[a:b]) for a, b in zip([0, *cuts], [*cuts, keep], strict=True)])
    weights = draw(st.lists(st.integers(1, 9), min_size=len(types), max_size=len(types)))
    return Profile.from_weak_orders(types, weights, names)


@given(profiles(), st.sampled_from([1, 7, 1 << 20]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_written_profiles_read_back_equal(profile, chunk):
    out = io.StringIO()
    write_abif(profile, out, title="a test")
    with tempfile.TemporaryDirectory() as folder:
        back = read_abif(write(Path(folder), out.getvalue()), chunk_bytes=chunk)
    assert back.candidates == profile.candidates
    assert back.weak_orders() == profile.weak_orders()  # same ballots in the same order
    np.testing.assert_array_equal(back.weights, profile.weights)


def test_names_and_counts_that_cannot_be_written():
    with pytest.raises(ValueError, match="cannot be written to ABIF"):
        write_abif(Profile.from_orders([[0, 1]], candidates=['a]"b', "c"]), io.StringIO())
    with pytest.raises(ValueError, match="cannot be written to ABIF"):
        write_abif(Profile.from_orders([[0, 1]], candidates=[" a", "c"]), io.StringIO())
    with pytest.raises(ValueError, match="integer counts"):
        write_abif(Profile.from_orders([[0, 1]], [0.5], candidates=["a", "c"]), io.StringIO())


# ---------------------------------------------------------------- fuzzing
def reference(text: str):
    """``("ok", candidates, ballots)`` or ``("error", field)``, reading line by line with the
    module's slow-path parsers (the reader's compiled loops and chunking are what is
    tested)."""
    declared: dict[str, tuple[str, int]] = {}
    first: dict[str, int] = {}
    hist: Counter = Counter()
    content = ballot_lines = False
    for number, raw in enumerate(io.StringIO(text, newline=None), start=1):
        line = raw.rstrip("\n")
        field = f"line {number}"
        stripped = line.strip()
        if not stripped or stripped[0] == "#":
            continue
        content = True
        if stripped[0] == "{":
            if not _uncomment(stripped).strip().endswith("}"):
                return ("error", field)
        elif stripped[0] == "=":
            match = _DECLARATION_LINE.fullmatch(_uncomment(stripped).strip())
            if match is None:
                return ("error", field)
            token = next(v for v in match.group("t1", "t2", "t3") if v is not None).strip()
            name = next(v for v in match.group("n1", "n2", "n3") if v is not None).strip()
            if not token or not name or declared.get(token, (name,))[0] != name:
                return ("error", field)
            declared.setdefault(token, (name, number))
        elif "0" <= stripped[0] <= "9":
            count_text, sep, body = line.partition(":")
            try:
                count = parse_count(count_text, None, field)
                groups = parse_ballot(body, None, field)
            except InputError:
                return ("error", field)
            if not sep:
                return ("error", field)
            ballot_lines = True
            for token in (t for g in groups for t in g):
                first.setdefault(token, number)
            if groups:
                hist[tuple(tuple(sorted(g)) for g in groups)] += count
        else:
            return ("error", field)
    if not content:
        return ("error", None)
    if not ballot_lines:
        return ("error", None)
    if not hist:
        return ("error", None)
    tokens = list(first)
    if declared:
        undeclared = [(first[t], t) for t in tokens if t not in declared]
        if undeclared:
            return ("error", f"line {min(undeclared)[0]}")
        names = []
        for name, number in declared.values():
            if name in names:
                return ("error", f"line {number}")
            names.append(name)
        rename = {t: declared[t][0] for t in declared}
        tokens = list(declared)
    else:
        rename = {t: t for t in tokens}
        names = tokens
    index = {t: i for i, t in enumerate(tokens)}
    profile = Profile.from_weak_orders(
        [[[index[t] for t in g] for g in groups] for groups in hist],
        list(hist.values()),
        [rename[t] for t in tokens],
    )
    return ("ok", tuple(names), ballots(profile))


CORRUPTIONS = list('>=,/[]"#:{} \n\r') + ["A", "0", "7", "-", "é", "\u00a0", "=x:[y]\n", "\n9:"]


@given(
    profiles(),
    st.lists(
        st.tuples(
            st.floats(0, 1), st.sampled_from(["insert", "delete"]), st.sampled_from(CORRUPTIONS)
        ),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from([1, 5, 1 << 20]),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_corrupted_files_read_as_the_reference_or_fail_cleanly(profile, edits, chunk):
    out = io.StringIO()
    write_abif(profile, out)
    text = out.getvalue()
    for where, how, what in edits:
        k = int(where * len(text))
        text = text[:k] + what + text[k:] if how == "insert" else text[:k] + text[k + 1 :]
    expected = reference(text)
    with tempfile.TemporaryDirectory() as folder:
        try:
            got = read_abif(write(Path(folder), text), chunk_bytes=chunk)
        except InputError as err:
            assert "\n" not in str(err)
            assert expected == ("error", err.field), str(err)
            return
    assert expected == ("ok", got.candidates, ballots(got))
    aggregate(got, "irv")  # every profile read can be counted


def test_line_numbers_follow_python_line_ends(tmp_path):
    text = "1: A\r\n2: B\r3: C\n4: A >\n"
    with pytest.raises(InputError) as err:
        read_abif(write(tmp_path, text), chunk_bytes=3)
    assert err.value.field == "line 4"
    assert re.search("ends with a separator", str(err.value))
