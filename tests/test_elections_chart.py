"""The rounds chart and page (``aggregate --chart``): bar lengths are the counted votes,
the order is winners then the latest eliminated, the page holds the chart and the round
tables with names escaped; a file type other than PNG or HTML is refused."""

from __future__ import annotations

import base64
from decimal import Decimal

from click.testing import CliRunner

from rankmodels.aggregation.elections.ballots import BallotCounter, ranking_from_marks
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.aggregation.elections.tabulator import tabulate
from rankmodels.plots.election_rounds import figure_png, rounds_figure, rounds_html, standings
from rankmodels_app.aggregate import aggregate_command


def _hand_count(names=("A", "B", "C")):
    """Two seats, 10 ballots: A 6 (A>B), C 3, B 1 (tests/test_elections_units.py): A is
    elected in round 1 (quota 4), B (1 + 6 * 0.3333 = 2.9998) goes in round 2, C is
    elected in round 3."""
    counter = BallotCounter()
    for times, marks in ((6, [(1, 0), (2, 1)]), (3, [(1, 2)]), (1, [(1, 1)])):
        counter.add(ranking_from_marks(marks), times)
    (count,) = tabulate(counter.ballots(list(names)), Rules(seats=2, mode="multi-seat"))
    return count


def test_standings_and_bars_are_the_counted_votes():
    count = _hand_count()
    rows = standings(count)
    assert [(x, first, peak) for x, first, peak, _ in rows] == [
        (0, 6, 6),
        (2, 3, 3),
        (1, 1, Decimal("2.9998")),
    ]
    assert [outcome for *_, outcome in rows] == [
        "elected in round 1",
        "elected in round 3",
        "out in round 2",
    ]
    fig = rounds_figure([count], "Hand count")
    bars = {p.get_gid(): p for p in fig.axes[0].patches}
    assert bars["first-0"].get_width() == 6 and "transfer-0" not in bars
    assert bars["first-1"].get_width() == 1
    assert abs(bars["transfer-1"].get_width() - 1.9998) < 1e-12
    assert bars["transfer-1"].get_x() == 1  # transfers start where first choices end
    assert bars["first-0"].get_y() > bars["first-2"].get_y() > bars["first-1"].get_y()


def test_page_holds_the_chart_and_escaped_tables():
    count = _hand_count(("<b>A</b>", "B", "C"))
    png = figure_png(rounds_figure([count], "Hand <count>"))
    page = rounds_html([count], "Hand <count>", png)
    assert "<title>Hand &lt;count&gt;</title>" in page and "<b>A</b>" not in page
    start = page.index("data:image/png;base64,") + len("data:image/png;base64,")
    assert base64.b64decode(page[start : page.index('"', start)]) == png
    assert '<tr><th>B</th><td class="num">1</td><td class="num">2.9998</td>' in page
    assert "<li>round 2: eliminated B</li>" in page and "http" not in page.split("<body>")[1]


def test_cli_chart(tmp_path):
    votes = tmp_path / "votes.csv"
    votes.write_text("rank1,rank2\n" + "A,B\n" * 6 + "C,\n" * 3 + "B,\n")
    chart = tmp_path / "rounds.png"
    ok = CliRunner().invoke(
        aggregate_command, ["--rule", "stv", "--seats", "2", str(votes), "--chart", str(chart)]
    )
    assert ok.exit_code == 0, ok.output
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    for args, message in (
        (["--rule", "stv", "--seats", "2", "--chart", str(tmp_path / "r.svg")], "a .png or .html"),
        (["--rule", "borda", "--chart", str(chart)], "only for --rules or --rule stv"),
    ):
        bad = CliRunner().invoke(aggregate_command, [*args, str(votes)])
        assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1
        assert bad.output.startswith("Error: ") and message in bad.output
