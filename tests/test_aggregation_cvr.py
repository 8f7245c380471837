"""Cast-vote records: conventions on hand-made ballots, detection, errors with their line,
and fuzzing against a line-by-line reference written from the documented conventions."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import aggregate, read_votes
from rankmodels.aggregation.cvr import CvrConventions, read_cvr
from rankmodels.errors import InputError
from rankmodels_app.aggregate import aggregate_command


def ballots(profile) -> dict[tuple[str, ...], float]:
    """Each ballot as the names it ranks (a trailing tie of unranked candidates dropped)."""
    out: dict[tuple[str, ...], float] = {}
    for groups, w in zip(profile.weak_orders(), profile.weights, strict=True):
        if len(groups[-1]) > 1:
            groups = groups[:-1]
        assert all(len(g) == 1 for g in groups)  # cast-vote records are strict
        key = tuple(profile.candidates[g[0]] for g in groups)
        out[key] = out.get(key, 0.0) + w
    return out


def write(tmp_path, text: str, name: str = "cvr.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


CITY = """BallotID,Precinct,Choice 1,Choice 2,Choice 3,Choice 4
1,P1,Alice,Bob,,
2,P1,Bob,overvote,Alice,
3,P2,,Carol,carol ,Carol
4,P2,undervote,,,
5,P3,Write-in,Alice,WRITE-IN,Bob
6,P3,Alice,,Bob,Carol
7,P4,overvote,Bob,,
"""


def test_the_documented_conventions(tmp_path):
    profile = read_votes(write(tmp_path, CITY))
    assert profile.candidates == ("Alice", "Bob", "Carol", "carol", "Write-in")
    assert ballots(profile) == {
        ("Alice", "Bob"): 1,  # ballot 1
        ("Bob",): 1,  # 2: the overvote at rank 2 exhausts it
        ("Carol", "carol"): 1,  # 3: skipped rank 1, the repeated Carol passed over
        ("Write-in", "Alice", "Bob"): 1,  # 5: write-ins count for one candidate
        ("Alice", "Bob", "Carol"): 1,  # 6: the skipped rank 2 is passed over
    }  # 4 (all undervotes) and 7 (overvote first) rank nobody: left out
    assert profile.total == 5


def test_overvotes_passed_over_and_custom_markers(tmp_path):
    skip = read_cvr(write(tmp_path, CITY), conventions=CvrConventions(overvote_exhausts=False))
    assert ballots(skip)[("Bob", "Alice")] == 1 and ballots(skip)[("Bob",)] == 1  # 2 and 7
    text = "rank1,rank2,rank3,n\nA,OV,B,2\nA,-,B,3\nUWI,B,,1\n"
    rules = CvrConventions(skipped=("-",), overvote=("OV",), write_in=("UWI",), count_column="n")
    profile = read_cvr(write(tmp_path, text), conventions=rules)
    # of three candidates, a ballot ranking two ranks the third last
    assert ballots(profile) == {("A",): 2, ("A", "B", "Write-in"): 3, ("Write-in", "B", "A"): 1}


def test_detected_from_the_header_or_forced(tmp_path):
    cvr = write(tmp_path, "id,rank1,rank2\n1,A,B\n2,B,A\n3,B,\n")
    assert ballots(read_votes(cvr)) == {("A", "B"): 1, ("B", "A"): 2}  # B>A = B of two
    votes = write(tmp_path, "ranking,rank1\nA>B,x\n", "votes.csv")
    assert ballots(read_votes(votes)) == {("A", "B"): 1}  # a 'ranking' column wins
    assert ballots(read_votes(votes, format="cvr")) == {("x",): 1}
    with pytest.raises(InputError, match="no 'ranking' column"):
        read_votes(cvr, format="csv")


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("rank1,rank2\nA,B\nB,Zed\n", "line 3", "unknown candidate 'Zed' in column 'rank2'"),
        ("id,rank2,rank1\n1,A,B\n", "line 1", "rank columns out of order: column 2 is 'rank2'"),
        ("rank1,rank3\nA,B\n", "line 1", "column 2 is 'rank3' where rank 2 was expected"),
        ("rank1,count\nA,2\n\nB,-1\n", "line 4", "count must be a positive number, got '-1'"),
        ("rank1,count\nA,two\n", "line 2", "count 'two' is not a number"),
        ("rank1,rank2\nA,B\nA\n", "line 3", "expected 2 fields as in the header, got 1"),
        ("\n\n", None, "empty file; expected a header with rank columns"),
        ("rank1,rank2\n", None, "no ballots after the header"),
        ("rank1,rank2\n,\nundervote,\n", None, "no ballot ranks any candidate"),
    ],
)
def test_bad_records_exit_2_with_the_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=message) as err:
        read_cvr(path, candidates=["A", "B"] if "Zed" in text else None)
    assert err.value.field == line and err.value.path == str(path)
    args = ["--format-in", "cvr", str(path)]
    if "Zed" in text:
        args = ["--candidates", "A,B", *args]
    result = CliRunner().invoke(aggregate_command, args)
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {err.value}"


def test_irv_on_a_city_record_end_to_end(tmp_path):
    result = CliRunner().invoke(
        aggregate_command, ["--rule", "irv", "--format", "json", str(write(tmp_path, CITY))]
    )
    report = json.loads(result.output)
    first = report["rounds"][0]
    assert first["votes"] == {"Alice": 2.0, "Bob": 1.0, "Carol": 1.0, "carol": 0.0, "Write-in": 1.0}
    assert report["winners"] == ["Alice"]
    assert report["ballots"] == 5


# ---------------------------------------------------------------- skipped ranks (Maine)
SKIPS = """rank1,rank2,rank3,rank4,rank5
A,,B,,
A,,,B,C
,,A,B,
,A,,,B
A,undervote,skipped,C,
B,C,,,
A,overvote,,C,
D,A,B,C,
"""


def test_two_skipped_ranks_in_a_row_exhaust_the_ballot_in_maine(tmp_path):
    path = write(tmp_path, SKIPS)
    assert ballots(read_cvr(path)) == {
        ("A", "B"): 3,  # skipped ranks passed over
        ("A", "B", "C", "D"): 1,  # A,,,B,C: three of four ranked, D forced last
        ("A", "C"): 1,  # markers are skipped ranks too
        ("B", "C"): 1,
        ("A",): 1,  # the overvote exhausts it
        ("D", "A", "B", "C"): 1,
    }
    maine = read_cvr(path, conventions=CvrConventions(max_skipped_ranks=1))
    # 21-A M.R.S. 723-A: "2 or more sequential skipped rankings before its highest continuing
    # ranking" exhaust the ballot; one does not; trailing blanks skip nothing
    assert ballots(maine) == {
        ("A", "B"): 1,  # A,,B: one skipped rank
        ("A",): 4,  # A,,,B,C  ,A,,,B  A,undervote,skipped,C  and the overvote
        ("B", "C"): 1,
        ("D", "A", "B", "C"): 1,
    }  # ,,A,B, is exhausted before its first choice: left out
    assert maine.total == 7
    # an overvote passed over is not a skipped rank: A,overvote,,C keeps C
    both = CvrConventions(max_skipped_ranks=1, overvote_exhausts=False)
    assert ballots(read_cvr(path, conventions=both))[("A", "C")] == 1


def test_skipped_ranks_option_on_the_command_line(tmp_path):
    path = write(tmp_path, SKIPS)
    args = ["--rule", "irv", "--format", "json", str(path)]
    default = json.loads(CliRunner().invoke(aggregate_command, args).output)
    assert default["ballots"] == 8
    assert default["rounds"][0]["votes"] == {"A": 6.0, "B": 1.0, "C": 0.0, "D": 1.0}
    maine = json.loads(
        CliRunner().invoke(aggregate_command, ["--skipped-ranks", "exhaust-after-2", *args]).output
    )
    assert maine["ballots"] == 7
    assert maine["rounds"][0]["votes"] == {"A": 5.0, "B": 1.0, "C": 0.0, "D": 1.0}
    assert maine["winners"] == ["A"]


# ---------------------------------------------------------------- contests in the header
NYC = (
    "Cast Vote Record,Precinct,"
    "DEM Mayor Choice 1 of 3 Citywide (026916),DEM Mayor Choice 2 of 3 Citywide (026916),"
    "DEM Mayor Choice 3 of 3 Citywide (026916),"
    "DEM Comptroller Choice 1 of 2 Citywide (026918),"
    "DEM Comptroller Choice 2 of 2 Citywide (026918)\n"
    "1,P1,Adams,Garcia,undervote,Lander,overvote\n"
    "2,P1,Garcia,,Wiley,Johnson,Lander\n"
    "3,P2,undervote,undervote,undervote,Lander,Johnson\n"
)


def test_new_york_headers_pick_the_contest(tmp_path):
    path = write(tmp_path, NYC)
    mayor = read_votes(path, conventions=CvrConventions(contest="mayor"))
    assert mayor.candidates == ("Adams", "Garcia", "Wiley")
    assert ballots(mayor) == {("Adams", "Garcia", "Wiley"): 1, ("Garcia", "Wiley", "Adams"): 1}
    comptroller = read_votes(path, conventions=CvrConventions(contest="Comptroller Choice"))
    assert ballots(comptroller) == {("Lander", "Johnson"): 2, ("Johnson", "Lander"): 1}


def test_one_contest_with_text_around_the_number_needs_no_choice(tmp_path):
    text = "id,DEM Mayor Choice 1 of 2 Number 123,DEM Mayor Choice 2 of 2 Number 123\n1,A,B\n"
    assert ballots(read_votes(write(tmp_path, text))) == {("A", "B"): 1}


CONTESTS = (
    "DEM Mayor Choice K of 3 Citywide (026916)', 'DEM Comptroller Choice K of 2 Citywide (026918)"
)


@pytest.mark.parametrize(
    "text, contest, message",
    [
        (NYC, None, f"the header has rank columns of 2 contests ('{CONTESTS}'); name one"),
        (NYC, "DEM", f"contest 'DEM' matches 2 contests of '{CONTESTS}'"),
        (NYC, "Senate", f"contest 'Senate' matches no contest of '{CONTESTS}'"),
        (
            "Choice 1 of 3,Choice 2 of 3\nA,B\n",
            None,
            "contest 'Choice K of 3' has 2 rank columns, but they say 'of 3'",
        ),
        (
            "x,Mayor Choice 2 of 2,Mayor Choice 1 of 2\n1,A,B\n",
            None,
            "rank columns out of order: column 2 is 'Mayor Choice 2 of 2' where rank 1",
        ),
    ],
)
def test_contest_errors_name_the_header_line(tmp_path, text, contest, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_votes(path, conventions=CvrConventions(contest=contest))
    assert message in str(err.value) and err.value.field == "line 1"
    args = ["--format-in", "cvr", str(path)] + ([] if contest is None else ["--contest", contest])
    result = CliRunner().invoke(aggregate_command, args)
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {err.value}"


# ---------------------------------------------------------------- fuzzing
MARKERS = ["", " ", "undervote", "UnderVote", "skipped", "overvote", "write-in", "Writein"]
names = st.sampled_from(["A", "B", "Cé", " A", "D d", "x,y", 'q"t'])


def reference(text: str, rules: CvrConventions, fixed):
    """``("ok", candidates, ballots)`` or ``("error", line)``, line by line with ``csv``."""
    skipped = {m.strip().casefold() for m in ("", *rules.skipped)}
    over = {m.strip().casefold() for m in rules.overvote}
    write_in = {m.strip().casefold() for m in rules.write_in}
    reader = csv.reader(io.StringIO(text, newline=""))
    header, seen, hist = None, list(fixed or []), Counter()
    for row in reader:
        line = f"line {reader.line_num}"
        if not any(c.strip() for c in row):
            continue
        if header is None:
            header = row
            ranks = [c for c, name in enumerate(row) if name.strip().lower().startswith("rank")]
            counted = [c for c, name in enumerate(row) if name.strip().lower() == "count"]
            continue
        if len(row) != len(header):
            return ("error", line)
        count = 1.0
        if counted:
            try:
                count = float(row[counted[0]])
            except ValueError:
                return ("error", line)
            if not 0 < count < float("inf"):
                return ("error", line)
        ballot, stop, run = [], False, 0
        for col in ranks:
            key = row[col].strip().casefold()
            run = run + 1 if key in skipped else 0
            limit = rules.max_skipped_ranks
            stop |= limit is not None and run > limit
            if key in skipped:
                continue
            if key in over:
                stop |= rules.overvote_exhausts
                continue
            name = "Write-in" if key in write_in else row[col].strip()
            if name not in seen:
                if fixed is not None:
                    return ("error", line)
                seen.append(name)
            if not stop and name not in ballot:
                ballot.append(name)
        if ballot:
            hist[tuple(ballot)] += count
    if header is None or not hist:
        return ("error", None)
    complete = Counter()
    for ballot, count in hist.items():
        if len(ballot) == len(seen) - 1:  # only the last candidate is unranked
            ballot = (*ballot, next(x for x in seen if x not in ballot))
        complete[ballot] += count
    return ("ok", tuple(seen), dict(complete))


@st.composite
def cvr_files(draw) -> str:
    k = draw(st.integers(1, 4))
    header = [f"rank{i}" for i in range(1, k + 1)]
    if draw(st.booleans()):
        header.insert(draw(st.integers(0, k)), "count")
    if draw(st.booleans()):
        header.insert(0, "id")
    lines = [",".join(header)]
    for b in range(draw(st.integers(0, 8))):
        cells = []
        for col in header:
            if col == "count":
                cell = draw(st.sampled_from(["1", "2", " 3", "0.5", "0", "-1", "x"]))
            elif col == "id":
                cell = str(b)
            else:
                cell = draw(st.one_of(names, st.sampled_from(MARKERS)))
            if any(c in cell for c in ',"') or draw(st.integers(0, 5)) == 0:
                cell = '"' + cell.replace('"', '""') + '"'
            cells.append(cell)
        if draw(st.integers(0, 9)) == 0:
            cells = cells[:-1]  # a short row
        lines.append(",".join(cells))
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return end.join(lines) + end


@given(
    cvr_files(),
    st.sampled_from([1, 3, 17, 1 << 20]),
    st.booleans(),
    st.sampled_from([None, ["A", "B", "Cé", "Write-in"]]),
    st.sampled_from([None, 0, 1]),
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_reader_equals_the_reference(text, chunk, exhausts, fixed, max_skipped):
    rules = CvrConventions(overvote_exhausts=exhausts, max_skipped_ranks=max_skipped)
    expected = reference(text, rules, fixed)
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), text)
        try:
            profile = read_cvr(path, fixed, conventions=rules, chunk_bytes=chunk)
        except InputError as err:
            assert "\n" not in str(err)
            assert expected == ("error", err.field)
            return
    assert expected == ("ok", profile.candidates, ballots(profile))
    aggregate(profile, "irv")  # every profile read can be counted
