"""RCTab's regression contests (read-only shared data): every folder whose formats and
rules the package supports is counted from its config and cast-vote records, and every
round -- votes, transfers, eliminations, winners, threshold, inactive ballots by cause --
and the summary must equal RCTab's expected detailed report exactly (as decimal numbers).
Folders that are not supported must fail with the reason ``docs/aggregation.md`` gives.
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

import pytest

from rankmodels.aggregation.elections.config import read_config
from rankmodels.aggregation.elections.records import read_ballots
from rankmodels.aggregation.elections.report import rctab_csv, rctab_json
from rankmodels.aggregation.elections.tabulator import tabulate
from rankmodels.errors import InputError
from tests.conftest import REPO, SHARED_DATA

ROOT = SHARED_DATA / "rcv" / "rctab-test-data"

UNSUPPORTED = {
    "2018_maine_governor_primary": "no such file",
    "dominion_kansas": "no CvrExport",
    "clear_ballot_kansas_primary": "provider 'clearBallot'",
    "clear_ballot_with_inline_comma": "provider 'clearBallot'",
    "hart_cedar_park_school_board": "provider 'hart'",
    "hart_travis_county_officers": "provider 'hart'",
    "generic_csv_test": "provider 'genericCsv'",
    "csv_missing_header_test": "provider 'genericCsv'",
    "multi_seat_bottoms_up_with_cutoff_eliminate": "cutoffElimination",
    "nist_xml_cdf_2": "only the JSON form",
    **{
        f"unisyn_xml_cdf_{office}": "only the JSON form"
        for office in (
            "city_chief_of_police",
            "city_coroner",
            "city_council_member",
            "city_mayor",
            "city_tax_collector",
            "county_coroner",
            "county_sheriff",
        )
    },
}
"""Folder -> a fragment of the one-line error it must give."""

SLOW = {
    "2013_minneapolis_mayor",
    "2013_minneapolis_park",
    "2013_minneapolis_park_bottoms_up",
    "2013_minneapolis_park_hare",
    "2013_minneapolis_park_sequential",
}
"""80,101 ballots each: counted in full with ``-m slow``, the mayor's first rounds by
default."""


def _folders() -> list[str]:
    if not ROOT.is_dir():
        return []
    return sorted(
        d.name
        for d in ROOT.iterdir()
        if any(d.glob("*_config.json")) and any(d.glob("*_expected_detailed_report.json"))
    )


def _comparable(report: dict, rounds: int | None = None) -> tuple:
    """A report's rounds and summary as decimals, the actions of a round as a set."""
    out = []
    for r in report["results"][:rounds]:
        actions = sorted(
            (
                tuple(sorted((k, v) for k, v in a.items() if k != "transfers")),
                tuple(sorted((k, Decimal(v)) for k, v in a["transfers"].items())),
            )
            for a in r["tallyResults"]
        )
        out.append(
            (
                r["round"],
                Decimal(r["threshold"]),
                {k: Decimal(v) for k, v in r["tally"].items()},
                {k: Decimal(v) for k, v in r["inactiveBallots"].items()},
                actions,
            )
        )
    if rounds is not None:
        return tuple(out)
    s = report["summary"]
    summary = (
        Decimal(s["finalThreshold"]),
        s["numWinners"],
        s["numCandidates"],
        Decimal(s["totalNumBallots"]),
        int(s.get("undervotes", 0)),
    )
    return tuple(out), summary


def _count(folder: str, stop_after: int | None = None, csv: bool = False) -> list:
    """RCTab's JSON reports of the folder's count (its CSV reports with ``csv``)."""
    config = next((ROOT / folder).glob("*_config.json"))
    contest = read_config(config)
    if stop_after is not None:
        contest = replace(contest, rules=replace(contest.rules, stop_after_round=stop_after))
    ballots = read_ballots(contest)
    counts = tabulate(ballots, contest.rules, [c.name for c in contest.candidates])
    report = rctab_csv if csv else rctab_json
    return [report(c, contest.name, contest.info) for c in counts]


def _expected(folder: str) -> list[dict]:
    files = sorted((ROOT / folder).glob("*_expected_detailed_report.json"))
    return [json.loads(f.read_text()) for f in files]


def _check(folder: str) -> None:
    if folder in UNSUPPORTED:
        with pytest.raises(InputError, match=UNSUPPORTED[folder]):
            _count(folder)
        return
    got = [_comparable(r) for r in _count(folder)]
    want = [_comparable(r) for r in _expected(folder)]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0]
        assert g[1] == w[1]
    # the CSV layout, line for line, but for the line naming the program
    csvs = sorted((ROOT / folder).glob("*_expected_detailed_report.csv"))
    for text, expected in zip(_count(folder, csv=True), csvs, strict=True):
        lines, wanted = text.splitlines(), expected.read_text().splitlines()
        assert lines[1] == "Generated By,rankmodels"
        assert lines[:1] + lines[2:] == wanted[:1] + wanted[2:]


@pytest.fixture
def folders(shared_data) -> list[str]:
    found = _folders()
    if not found:
        pytest.skip(f"RCTab test data not found at {ROOT}")
    return found


@pytest.mark.parametrize("folder", [f for f in _folders() if f not in SLOW])
def test_reproduces_rctab(folders, folder):
    _check(folder)


@pytest.mark.slow
@pytest.mark.parametrize("folder", sorted(SLOW))
def test_reproduces_rctab_large(folders, folder):
    _check(folder)


def test_minneapolis_mayor_first_rounds(folders):
    """The reduced default of the 80,101-ballot count: its first three rounds (the
    undeclared write-ins alone, then two batch eliminations)."""
    got = _comparable(_count("2013_minneapolis_mayor", stop_after=3)[0], rounds=3)
    want = _comparable(_expected("2013_minneapolis_mayor")[0], rounds=3)
    assert got[:2] == want[:2]
    assert got[2][:4] == want[2][:4]  # round 3's transfers happen in round 4


def test_counts_most_folders(folders):
    """Every folder is either reproduced or listed as unsupported, and the list is short."""
    supported = [f for f in folders if f not in UNSUPPORTED]
    assert set(UNSUPPORTED) <= set(folders)
    assert len(supported) >= 53


def test_docs_list_the_unsupported_folders(folders):
    text = (REPO / "docs" / "aggregation.md").read_text()
    missing = [f for f in UNSUPPORTED if f"`{f}`" not in text]
    assert not missing, f"docs/aggregation.md does not list {missing}"
