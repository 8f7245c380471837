"""The Common Data Format (XML and streamed JSON) and RCTab's generic CSV: hand-made records
read exactly, the two CDF forms agreeing, the JSON streamer against ``json.load``, every
reader fuzzed (a record either reads or is refused with :class:`InputError`), bad input
on the command line (one ``Error:`` line, exit 2), the instant-runoff profile built from
the ballots as cast equal to the profile reader's, and STV from the rule registry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import aggregate
from rankmodels.aggregation.cvr import CvrConventions, read_cvr
from rankmodels.aggregation.elections import jsonstream
from rankmodels.aggregation.elections.as_profile import profile_of
from rankmodels.aggregation.elections.ballots import OVERVOTE, BallotCounter, from_profile
from rankmodels.aggregation.elections.cdf import read_cdf
from rankmodels.aggregation.elections.config import Candidate, Source
from rankmodels.aggregation.elections.cvr_csv import read_cvr_ballots
from rankmodels.aggregation.elections.generic_csv import read_generic_csv
from rankmodels.aggregation.elections.names import CandidateNames
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import tabulate
from rankmodels.aggregation.profile import Profile
from rankmodels.errors import InputError
from rankmodels_app.aggregate import aggregate_command

NAMES = CandidateNames([Candidate("Ann"), Candidate("Bob"), Candidate("Cy", ("C",))], True)
ANN, BOB, CY, UWI = 0, 1, 2, 3
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CDF_XML = """<?xml version="1.0" encoding="UTF-8"?>
<cdf:CastVoteRecordReport xmlns:cdf="NIST_V0_cast_vote_records.xsd">
 <cdf:CVR><cdf:CurrentSnapshotId>s1</cdf:CurrentSnapshotId>
  <cdf:CVRSnapshot ObjectId="s0"><cdf:CVRContest><cdf:ContestId>K</cdf:ContestId>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sB</cdf:ContestSelectionId>
    <cdf:Rank>1</cdf:Rank></cdf:CVRContestSelection></cdf:CVRContest></cdf:CVRSnapshot>
  <cdf:CVRSnapshot ObjectId="s1"><cdf:CVRContest><cdf:ContestId>K</cdf:ContestId>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sA</cdf:ContestSelectionId>
    <cdf:SelectionPosition><cdf:HasIndication>yes</cdf:HasIndication>
     <cdf:Rank>1</cdf:Rank></cdf:SelectionPosition>
    <cdf:SelectionPosition><cdf:IsAllocable>no</cdf:IsAllocable><cdf:Rank>2</cdf:Rank>
    </cdf:SelectionPosition></cdf:CVRContestSelection>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sC</cdf:ContestSelectionId>
    <cdf:Rank>3</cdf:Rank></cdf:CVRContestSelection>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sW</cdf:ContestSelectionId>
    <cdf:SelectionPosition><cdf:CVRWriteIn><cdf:Text>Zed</cdf:Text></cdf:CVRWriteIn>
     <cdf:Rank>4</cdf:Rank></cdf:SelectionPosition></cdf:CVRContestSelection>
  </cdf:CVRContest></cdf:CVRSnapshot></cdf:CVR>
 <cdf:CVR><cdf:CurrentSnapshotId>t</cdf:CurrentSnapshotId>
  <cdf:CVRSnapshot ObjectId="t"><cdf:CVRContest><cdf:ContestId>K</cdf:ContestId>
   <cdf:CVRContestSelection><cdf:Status>needs-adjudication</cdf:Status>
    <cdf:ContestSelectionId>sA</cdf:ContestSelectionId><cdf:Rank>1</cdf:Rank>
   </cdf:CVRContestSelection>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sB</cdf:ContestSelectionId>
    <cdf:Rank>2</cdf:Rank></cdf:CVRContestSelection>
   <cdf:CVRContestSelection><cdf:ContestSelectionId>sC</cdf:ContestSelectionId>
    <cdf:Rank>2</cdf:Rank></cdf:CVRContestSelection></cdf:CVRContest>
  </cdf:CVRSnapshot></cdf:CVR>
 <cdf:CVR><cdf:CurrentSnapshotId>u</cdf:CurrentSnapshotId>
  <cdf:CVRSnapshot ObjectId="u"><cdf:CVRContest><cdf:ContestId>K</cdf:ContestId>
  </cdf:CVRContest></cdf:CVRSnapshot></cdf:CVR>
 <cdf:CVR><cdf:CurrentSnapshotId>v</cdf:CurrentSnapshotId>
  <cdf:CVRSnapshot ObjectId="v"><cdf:CVRContest><cdf:ContestId>Other</cdf:ContestId>
  </cdf:CVRContest></cdf:CVRSnapshot></cdf:CVR>
 <cdf:Election ObjectId="e">
  <cdf:Candidate ObjectId="cA"><cdf:Name>Ann</cdf:Name></cdf:Candidate>
  <cdf:Candidate ObjectId="cB"><cdf:Name>Bob</cdf:Name></cdf:Candidate>
  <cdf:Candidate ObjectId="cC"><cdf:Name>C</cdf:Name></cdf:Candidate>
  <cdf:Candidate ObjectId="cW"/>
  <cdf:Contest ObjectId="K"><cdf:Name>Mayor</cdf:Name>
   <cdf:ContestSelection ObjectId="sA"><cdf:CandidateIds>cA</cdf:CandidateIds>
   </cdf:ContestSelection>
   <cdf:ContestSelection ObjectId="sB"><cdf:CandidateIds>cB</cdf:CandidateIds>
   </cdf:ContestSelection>
   <cdf:ContestSelection ObjectId="sC"><cdf:CandidateIds>cC</cdf:CandidateIds>
   </cdf:ContestSelection>
   <cdf:ContestSelection ObjectId="sW"><cdf:CandidateIds>cW</cdf:CandidateIds>
   </cdf:ContestSelection>
  </cdf:Contest></cdf:Election>
</cdf:CastVoteRecordReport>
"""
EXPECTED = {
    ((1, (ANN,)), (3, (CY,)), (4, (UWI,))): 1,  # the current snapshot; position 2 not allocable
    ((2, (BOB, CY)),): 1,  # rank 1 needs adjudication; an overvote naming Bob and Cy
    (): 1,  # the contest without marks: an undervote
}  # the record without the contest is no ballot of it


def _xml_as_json(text: str) -> dict:
    """The hand-made XML record in the JSON form (arrays for repeated parts)."""
    import xml.etree.ElementTree as ET

    def convert(elem):
        out = {"@id": elem.attrib["ObjectId"]} if "ObjectId" in elem.attrib else {}
        for child in elem:
            tag = child.tag.rpartition("}")[2]
            value = convert(child) if len(child) or child.attrib else child.text.strip()
            if tag in ("Rank",):
                value = int(value)
            out.setdefault(tag, []).append(value)
        return {k: (v if k.startswith("CVR") or k in ("Candidate", "Contest", "ContestSelection",
                "SelectionPosition", "Election", "CandidateIds", "CVR") or len(v) > 1 else v[0])
                if isinstance(v, list) else v for k, v in out.items()}  # fmt: skip

    return convert(ET.fromstring(text))


def _read(reader, path: Path, **source) -> dict:
    counter = BallotCounter()
    reader(Source(path, source.pop("provider", "cdf"), **source), NAMES, counter)
    ballots = counter.ballots(NAMES.names)
    return dict(zip(ballots.rankings, ballots.counts.tolist(), strict=True))


def test_cdf_xml_and_json_read_exactly_and_agree(tmp_path):
    xml = tmp_path / "cvr.xml"
    xml.write_text(CDF_XML, encoding="utf-8")
    assert _read(read_cdf, xml, contest_id="Mayor", write_in_label="UWI") == EXPECTED
    js = tmp_path / "cvr.json"
    js.write_text(json.dumps(_xml_as_json(CDF_XML)), encoding="utf-8")
    assert _read(read_cdf, js, contest_id="Mayor", write_in_label="UWI") == EXPECTED


def test_cdf_names_what_is_wrong(tmp_path):
    xml = tmp_path / "cvr.xml"
    xml.write_text(CDF_XML, encoding="utf-8")
    with pytest.raises(InputError, match="contest 'Governor' not found"):
        _read(read_cdf, xml, contest_id="Governor")
    xml.write_text(CDF_XML.replace("<cdf:Name>Bob</cdf:Name>", "<cdf:Name>Bo</cdf:Name>"))
    with pytest.raises(InputError, match="'Bo' is not a candidate of the config"):
        _read(read_cdf, xml, contest_id="Mayor")
    xml.write_text(CDF_XML.replace("<cdf:Rank>3</cdf:Rank>", "<cdf:Rank>x</cdf:Rank>"))
    with pytest.raises(InputError, match="Rank 'x' is not a whole number"):
        _read(read_cdf, xml, contest_id="Mayor")
    xml.write_text(CDF_XML[:-200])
    with pytest.raises(InputError, match="not XML"):
        _read(read_cdf, xml, contest_id="Mayor")
    other = tmp_path / "cvr.txt"
    other.write_text("{}")
    with pytest.raises(InputError, match=r"\.json or \.xml"):
        _read(read_cdf, other, contest_id="Mayor")


GENERIC = "id,Ann,Bob,Cy,Write-In\nr1,1,2,,3\nr2,,1,1,\nr3,2,,,1\nr4,,,,\nr5,1,2,,3\n"


def test_generic_csv_reads_ranks_per_candidate(tmp_path):
    path = tmp_path / "cvr.csv"
    path.write_text(GENERIC, encoding="utf-8")
    got = _read(
        read_generic_csv,
        path,
        provider="genericCsv",
        first_vote_column=2,
        write_in_label="Write-In",
    )
    assert got == {
        ((1, (ANN,)), (2, (BOB,)), (3, (UWI,))): 2,
        ((1, (BOB, CY)),): 1,  # two candidates at rank 1: an overvote
        ((1, (UWI,)), (2, (ANN,))): 1,
        (): 1,
    }
    # ballots from row 4 on (the header is row 1)
    later = _read(read_generic_csv, path, provider="genericCsv", first_vote_column=2,
                  first_vote_row=4, write_in_label="Write-In")  # fmt: skip
    assert sum(later.values()) == 3


def _config(tmp_path: Path, provider: str, record: str, contest: str = "") -> Path:
    config = {
        "outputSettings": {"contestName": "Test"},
        "cvrFileSources": [
            {
                "filePath": record,
                "provider": provider,
                "contestId": contest,
                "firstVoteColumnIndex": "2",
                "undeclaredWriteInLabel": "Write-In",
            }
        ],  # fmt: skip
        "candidates": [{"name": "Ann"}, {"name": "Bob"}, {"name": "Cy", "aliases": ["C"]}],
        "rules": {
            "tiebreakMode": "random",
            "randomSeed": "1",
            "overvoteRule": "exhaustImmediately",
            "winnerElectionMode": "singleWinnerMajority",
        },  # fmt: skip
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("provider", "name", "text", "message"),
    [
        ("genericCsv", "cvr.csv", GENERIC.replace("r3,2", "r3,two"), "line 4: column 'Ann'"),
        ("genericCsv", "cvr.csv", GENERIC.replace("Bob", "Rob"), "column 'Rob' is not a candidate"),
        ("genericCsv", "cvr.csv", GENERIC + "r6,1,2,3,4,5\n", "line 7: 6 fields"),
        ("genericCsv", "cvr.csv", "", "no candidate columns"),
        ("cdf", "cvr.xml", "<CastVoteRecordReport>", "not XML"),
        ("cdf", "cvr.xml", "<Other/>", "expected CastVoteRecordReport"),
        ("cdf", "cvr.json", '{"CVR": [1, 2]}', "expected CVR objects"),
        ("cdf", "cvr.json", '{"CVR": [{}], "Election": [', "not JSON"),
        ("cdf", "cvr.json", "[]", "expected a JSON object"),
    ],
)
def test_bad_records_are_one_line_exit_2(tmp_path, provider, name, text, message):
    (tmp_path / name).write_text(text, encoding="utf-8")
    config = _config(tmp_path, provider, name, "Mayor")
    result = CliRunner().invoke(aggregate_command, ["--rules", str(config)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and message in lines[0], lines


def test_generic_csv_counted_end_to_end(tmp_path):
    (tmp_path / "cvr.csv").write_text(GENERIC, encoding="utf-8")
    config = _config(tmp_path, "genericCsv", "cvr.csv")
    result = CliRunner().invoke(aggregate_command, ["--rules", str(config), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # round 1: Ann 2, Undeclared Write-ins 1 (eliminated first), Bob 0; the overvote and
    # the empty row inactive
    assert report["results"][0]["tally"] == {
        "Ann": "2", "Bob": "0", "Cy": "0", "Undeclared Write-ins": "1"
    }  # fmt: skip
    assert report["summary"]["totalNumBallots"] == "5" and report["summary"]["undervotes"] == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@FUZZ
@given(obj=st.dictionaries(st.text(max_size=6), json_values, max_size=5), indent=st.booleans())
def test_json_streamer_equals_json_load(tmp_path_factory, obj, indent):
    path = tmp_path_factory.mktemp("js") / "r.json"
    path.write_text(json.dumps(obj, indent=2 if indent else None), encoding="utf-8")
    block = jsonstream._BLOCK
    jsonstream._BLOCK = 5  # every value is cut by a block's end and read again
    try:
        got: dict = {}
        for key, value in jsonstream.members(path, ("CVR",)):
            if key == "CVR" and isinstance(obj["CVR"], list):
                got.setdefault(key, []).append(value)
            else:
                got[key] = value
    finally:
        jsonstream._BLOCK = block
    assert got == {k: v for k, v in obj.items() if not (k == "CVR" and v == [])}


@FUZZ
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_readers_fuzzed_read_or_refuse(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fz")
    for name, reader, source in (
        ("r.csv", read_generic_csv, {"provider": "genericCsv", "first_vote_column": 2}),
        ("r.xml", read_cdf, {"contest_id": "Mayor"}),
        ("r.json", read_cdf, {"contest_id": "Mayor"}),
    ):
        path = folder / name
        path.write_bytes(data)
        try:
            _read(reader, path, **source)
        except InputError:
            pass


@FUZZ
@given(
    mutation=st.lists(
        st.tuples(st.integers(0, len(CDF_XML) - 1), st.sampled_from(["", "1", "<", "no", "x"])),
        max_size=3,
    )
)
def test_cdf_mutated_read_or_refuse(tmp_path_factory, mutation):
    text = CDF_XML
    for at, insert in mutation:
        text = text[:at] + insert + text[at + 1 :]
    folder = tmp_path_factory.mktemp("mx")
    for name, body in (("r.xml", text), ("r.json", None)):
        if body is None:
            try:
                body = json.dumps(_xml_as_json(text))
            except Exception:  # the mutation broke the XML itself
                continue
        (folder / name).write_text(body, encoding="utf-8")
        try:
            _read(read_cdf, folder / name, contest_id="Mayor", write_in_label="UWI")
        except InputError:
            pass


CELLS = ["Ann", "Bob", "Cy", "", "overvote", "undervote", "write-in", " bob "]


@FUZZ
@given(
    rows=st.lists(st.lists(st.sampled_from(CELLS), min_size=4, max_size=4), min_size=1,
                  max_size=12),
    exhausts=st.booleans(),
    skipped=st.sampled_from([None, 0, 1, 2]),
)  # fmt: skip
def test_profile_from_cast_ballots_equals_the_profile_reader(
    tmp_path_factory, rows, exhausts, skipped
):
    path = tmp_path_factory.mktemp("cvr") / "r.csv"
    path.write_text("rank1,rank2,rank3,rank4\n" + "".join(",".join(r) + "\n" for r in rows))
    conv = CvrConventions(overvote_exhausts=exhausts, max_skipped_ranks=skipped)
    try:
        want = read_cvr(path, conventions=conv)
    except InputError:
        want = None
    cast = read_cvr_ballots(path, conventions=conv, write_ins_last=False)
    try:
        got = profile_of(cast, exhausts, skipped)
    except ValueError:
        got = None
    if want is None or got is None:
        assert want is None and got is None or want is not None and not want.weights.sum()
        return
    assert got.candidates == want.candidates

    def rows_of(p: Profile):
        return sorted(zip(p.orders.tolist(), p.levels.tolist(), p.weights.tolist(), strict=True))

    assert rows_of(got) == rows_of(want)


def test_stv_from_the_registry_is_the_tabulator_count():
    rng = np.random.default_rng(5)
    orders = np.array([rng.permutation(5) for _ in range(60)])
    profile = Profile.from_orders(orders[:, :5], candidates=list("ABCDE"))
    for seats in (1, 2, 3):
        result = aggregate(profile, "stv", seats=seats, seed=3)
        rules = Rules(seats=seats, mode="single" if seats == 1 else "multi-seat", seed=3)
        (count,) = tabulate(from_profile(profile), rules)
        assert result.details["winners"] == count.winners
        assert result.ranking[:seats].tolist() == count.winners
        assert sorted(result.ranking.tolist()) == list(range(5))
        assert result.n_optimal is None and result.n_optimal_at_least == 1
        # the ones eliminated last rank just below the winners and the continuing ones
        gone = [x for r in count.rounds for x in r.eliminated]
        assert result.ranking.tolist()[-len(gone) :] == gone[::-1] if gone else True
    with pytest.raises(ValueError, match="needs seats"):
        aggregate(profile, "stv")
    with pytest.raises(ValueError, match="takes no seats"):
        aggregate(profile, "borda", seats=2)
    assert OVERVOTE == -1  # tie groups of a profile are counted as overvotes
