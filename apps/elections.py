"""``aggregate --rules CONFIG.json [CVR...]`` and ``aggregate --rule stv --seats N VOTES``:
count a contest round by round as certified tabulators count it and print the round
report (text, RCTab's JSON, or RCTab's detailed-report CSV)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rankmodels import jsontext
from rankmodels.aggregation.cvr import WRITE_IN, CvrConventions, rank_columns
from rankmodels.aggregation.elections.axioms import axiom_lines
from rankmodels.aggregation.elections.ballots import (
    UNDECLARED_WRITE_INS,
    CastBallots,
    from_profile,
)
from rankmodels.aggregation.elections.config import Contest, read_config
from rankmodels.aggregation.elections.cvr_csv import read_cvr_ballots
from rankmodels.aggregation.elections.inactive import inactive_by_round
from rankmodels.aggregation.elections.records import read_ballots
from rankmodels.aggregation.elections.report import rctab_csv, rctab_json, text_report
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import Count, Status, TabulationError, tabulate
from rankmodels.aggregation.io import read_votes
from rankmodels_app._common import BadInput, atomic_output

__all__ = [
    "config_count",
    "inactive_causes",
    "is_rank_column_cvr",
    "render",
    "stv_count",
    "write_chart",
]


def config_count(
    config: Path, records: tuple[Path, ...]
) -> tuple[Contest, CastBallots, list[Count]]:
    """Count the contest of an RCTab ``config``; ``records``, when given, replace the
    config's record paths in order. Returns the contest, its ballots and the counts."""
    contest = read_config(config)
    if records:
        if len(records) != len(contest.sources):
            raise BadInput(
                f"{config}: cvrFileSources: the config lists {len(contest.sources)} record(s), "
                f"{len(records)} given"
            )
        for path in records:
            if not path.exists():
                raise BadInput(f"{path}: no such file")
        sources = tuple(replace(s, path=p) for s, p in zip(contest.sources, records, strict=True))
        contest = replace(contest, sources=sources)
    ballots = read_ballots(contest)
    order = [c.name for c in contest.candidates]
    return contest, ballots, _tabulate(config, ballots, contest.rules, order)


def stv_count(
    votes: Path,
    rules: Rules,
    names: list[str] | None,
    format_in: str,
    conventions: CvrConventions,
) -> tuple[CastBallots, list[Count]]:
    """Count a votes file by ``rules``: a rank-column cast-vote record is read as cast,
    the other formats through their profile (tie groups become overvotes). Returns the
    ballots and the counts."""
    ballots: CastBallots
    if is_rank_column_cvr(votes, format_in):
        ballots = read_cvr_ballots(votes, names, conventions)
    else:
        profile = read_votes(votes, names, None, format_in, conventions)
        try:
            ballots = from_profile(profile)
        except ValueError as err:
            raise BadInput(f"{votes}: {err}") from None
    return ballots, _tabulate(votes, ballots, rules, None)


def is_rank_column_cvr(votes: Path, format_in: str) -> bool:
    """Whether ``votes`` is read as a rank-column cast-vote record."""
    return (
        format_in in ("auto", "cvr")
        and votes.suffix.lower() in (".csv", ".txt")
        and (format_in == "cvr" or _has_rank_columns(votes))
    )


def inactive_causes(
    report: dict[str, Any], ballots: CastBallots, conventions: CvrConventions
) -> None:
    """Add to an instant-runoff ``report`` of a rank-column cast-vote record (its
    ``ballots`` as cast) each round's exhausted ballots by cause (``inactive``:
    overvotes, skipped rankings, exhausted choices) and ``left_out``, the ballots no round
    counts (no marks, or an overvote or too many skipped ranks before the first
    candidate)."""
    continuing = [
        [UNDECLARED_WRITE_INS if x == WRITE_IN else x for x in r["votes"]] for r in report["rounds"]
    ]
    found = inactive_by_round(
        ballots,
        continuing,
        "exhaust" if conventions.overvote_exhausts else "skip",
        conventions.max_skipped_ranks,
    )
    if not found:
        return
    first = found[0]  # ballots inactive before any candidate: the profile left them out
    report["left_out"] = sum(first.values())
    for r, causes in zip(report["rounds"], found, strict=True):
        r["inactive"] = {label: causes[status] - first[status] for label, status in _CAUSES.items()}


_CAUSES = {
    "overvotes": Status.OVERVOTE,
    "skipped rankings": Status.SKIPPED_RANKINGS,
    "exhausted choices": Status.EXHAUSTED_CHOICES,
}


def _has_rank_columns(path: Path) -> bool:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        import csv

        header = next(csv.reader(handle), [])
    return bool(rank_columns(header)) and "ranking" not in [h.strip().lower() for h in header]


def _tabulate(
    where: Path, ballots: CastBallots, rules: Rules, order: list[str] | None
) -> list[Count]:
    try:
        return tabulate(ballots, rules, order)
    except (TabulationError, ValueError) as err:
        raise BadInput(f"{where}: {err}") from None


def write_chart(
    counts: list[Count], contest: str, path: Path, axioms: dict[str, Any] | None = None
) -> None:
    """The rounds as a chart at ``path``: ``.png``, or ``.html`` (chart, tables and the
    ``axioms`` report)."""
    suffix = path.suffix.lower()
    if suffix not in (".png", ".html", ".htm"):
        raise BadInput(f"--chart {path}: expected a .png or .html file name")
    from rankmodels.plots.election_rounds import figure_png, rounds_figure, rounds_html

    png = figure_png(rounds_figure(counts, contest))
    with atomic_output(path, "wb") as handle:
        if suffix == ".png":
            handle.write(png)
        else:
            handle.write(rounds_html(counts, contest, png, axioms).encode("utf-8"))


def render(
    counts: list[Count],
    contest: str,
    info: dict[str, str],
    fmt: str,
    axioms: dict[str, Any] | None = None,
) -> str:
    """The report of ``counts`` (several for sequential seats) in ``fmt``: ``text``,
    ``json`` (RCTab's detailed JSON, a list for sequential seats, each with the
    ``axioms`` report of the contest under the key ``axioms``) or ``rctab-csv`` (RCTab's
    layout alone); ``text`` ends with the axiom lines."""
    if fmt == "json":
        reports = [rctab_json(c, contest, info) for c in counts]
        if axioms is not None:
            for report in reports:
                report["axioms"] = axioms
        return jsontext.dumps(reports[0] if len(reports) == 1 else reports)
    if fmt == "rctab-csv":
        return "\n".join(rctab_csv(c, contest, info) for c in counts)
    text = "\n".join(text_report(c, contest) for c in counts)
    return text + ("" if axioms is None else "\n".join(axiom_lines(axioms)) + "\n")
