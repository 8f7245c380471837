"""The rounds of a counted election as a newspaper prints them: a bar chart and an HTML page.

The chart (:func:`rounds_figure`) has one horizontal bar per candidate, winners on top,
then the others by the round they went out in (latest first): the dark part is the
candidate's first-choice votes, the light part what transfers added up to the most the
candidate ever had; the label says when the candidate was elected or went out, with those
votes. A dashed line marks the threshold of the last round. A count of several seats in
sequence (one count per seat) gets one panel per seat.

The page (:func:`rounds_html`) is one self-contained HTML file: the chart as an embedded
PNG, then per count the table of votes by round (candidates by first-round votes, then
the inactive ballots by cause, the threshold) and who was elected or eliminated in each
round; with an axiom report, the Condorcet and majority winners and losers, the Smith set
(each with whether it was elected) and the head-to-head counts. Names are escaped;
nothing is loaded from elsewhere.
"""

from __future__ import annotations

import io
import re
from decimal import Decimal
from typing import Any

from matplotlib.figure import Figure

from rankmodels.aggregation.elections.axioms import axiom_lines
from rankmodels.aggregation.elections.ballots import UNDECLARED_WRITE_INS
from rankmodels.aggregation.elections.report import INACTIVE
from rankmodels.aggregation.elections.tabulator import Count
from rankmodels.plots.report import esc, html_document, png_data_uri
from rankmodels.plots.style import FIGURE_DPI
from rankmodels.text import printable

__all__ = ["figure_png", "rounds_figure", "rounds_html", "standings"]

WINNER_COLORS = ("#1b6e3c", "#8fcf9f")
"""First choices and transfers of a winner (dark and light green)."""
OTHER_COLORS = ("#4a5a6a", "#b9c4cf")
"""First choices and transfers of the others (dark and light slate)."""


def standings(count: Count) -> list[tuple[int, Decimal, Decimal, str]]:
    """``(candidate, first-round votes, most votes in any round, outcome)`` in chart order:
    winners in order of election, then the others by the round they went out in, latest
    first (most votes first within a round); ``outcome`` as the label says it."""
    rounds = count.rounds
    first = rounds[0].tally if rounds else {}
    decided: dict[int, tuple[int, str]] = {}
    for r in rounds:
        for x in r.elected:
            decided[x] = (r.number, f"elected in round {r.number}")
        for x in r.eliminated:
            decided[x] = (r.number, f"out in round {r.number}")
    rows = []
    for x in first:
        peak = max(r.tally[x] for r in rounds if x in r.tally)
        number, outcome = decided.get(x, (len(rounds), "in the last round"))
        won = x in count.winners
        order = (0, count.winners.index(x)) if won else (1, -number, -peak)
        rows.append((order, (x, first[x], peak, outcome)))
    return [row for _, row in sorted(rows, key=lambda t: t[0])]


def _panel(ax, count: Count, title: str) -> None:
    names = count.candidates
    rows = standings(count)
    labels = [printable(names[x]) for x, *_ in rows]
    y = list(range(len(rows)))[::-1]  # first row on top
    scale = max([float(peak) for _, _, peak, _ in rows] + [float(count.threshold), 1.0])
    for yi, (x, first, peak, outcome) in zip(y, rows, strict=True):
        dark, light = WINNER_COLORS if x in count.winners else OTHER_COLORS
        ax.barh(yi, float(first), color=dark, height=0.7, gid=f"first-{x}")
        if peak > first:
            ax.barh(yi, float(peak - first), left=float(first), color=light, height=0.7,
                    gid=f"transfer-{x}")  # fmt: skip
        ax.text(float(peak) + 0.01 * scale, yi, f"{_votes(peak)}  {outcome}", va="center",
                fontsize=8, color="0.15")  # fmt: skip
    threshold = float(count.threshold)
    if threshold > 0:
        ax.axvline(threshold, color="#b2182b", linestyle="--", linewidth=1.2)
        ax.text(threshold, len(rows) - 0.4, f" threshold {_votes(count.threshold)}",
                color="#b2182b", fontsize=8, va="bottom")  # fmt: skip
    ax.set_yticks(y, labels, fontsize=8.5)
    ax.set_xlim(0, scale * 1.45)
    ax.set_ylim(-0.7, len(rows) + 0.2)
    ax.set_xlabel("votes")
    ax.set_title(title, fontsize=10, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", alpha=0.25)


def rounds_figure(counts: list[Count], contest: str) -> Figure:
    """The chart of ``counts`` (one, or one per seat in sequence), one panel each."""
    heights = [0.32 * len(c.rounds[0].tally if c.rounds else ()) + 1.2 for c in counts]
    fig = Figure(figsize=(8.0, sum(heights) + 0.6), layout="constrained")
    axes = fig.subplots(len(counts), 1, squeeze=False, height_ratios=heights)[:, 0]
    for i, (ax, count) in enumerate(zip(axes, counts, strict=True)):
        winners = ", ".join(printable(count.candidates[w]) for w in count.winners)
        seat = f"seat {i + 1}: " if len(counts) > 1 else ""
        n = len(count.rounds)
        _panel(ax, count, f"{seat}{winners or 'no winner'} ({n} round{'s' * (n != 1)})")
    fig.suptitle(f"{printable(contest)}: first choices (dark) and transfers (light)", fontsize=11)
    fig.legend(
        handles=[
            _patch(WINNER_COLORS[0], "winner: first choices"),
            _patch(WINNER_COLORS[1], "winner: transfers"),
            _patch(OTHER_COLORS[0], "first choices"),
            _patch(OTHER_COLORS[1], "transfers"),
        ],
        loc="outside lower center",
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    return fig


def _patch(color: str, label: str):
    from matplotlib.patches import Patch

    return Patch(color=color, label=label)


def figure_png(fig: Figure) -> bytes:
    """The PNG bytes of ``fig`` at the package's figure resolution."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=FIGURE_DPI)
    return buffer.getvalue()


def _votes(value: Decimal) -> str:
    """Votes as counted (exact decimals), thousands separated; whole numbers without
    decimals."""
    return f"{int(value):,}" if value == value.to_integral_value() else f"{value:,}"


def _table(count: Count) -> str:
    names = count.candidates
    rounds = count.rounds
    first = rounds[0].tally if rounds else {}
    shown = sorted(first, key=lambda x: (names[x] == UNDECLARED_WRITE_INS, -first[x], names[x]))
    head = "".join(f"<th>round {r.number}</th>" for r in rounds)
    lines = [f"<table><tr><th>candidate</th>{head}</tr>"]
    for x in shown:
        cells = "".join(
            f'<td class="num">{_votes(r.tally[x]) if x in r.tally else ""}</td>' for r in rounds
        )
        lines.append(f"<tr><th>{esc(names[x])}</th>{cells}</tr>")
    for key, status in INACTIVE.items():
        text = re.sub(r"([A-Z])", r" \1", key).lower()  # skippedRankings: skipped rankings
        cells = "".join(f'<td class="num">{_votes(r.inactive[status])}</td>' for r in rounds)
        lines.append(f"<tr><th>inactive: {text}</th>{cells}</tr>")
    cells = "".join(f'<td class="num">{_votes(r.threshold)}</td>' for r in rounds)
    lines.append(f"<tr><th>threshold</th>{cells}</tr></table>")
    events = []
    for r in rounds:
        for x in r.elected:
            events.append(
                f"round {r.number}: {esc(names[x])} elected with {_votes(r.tally[x])}"
            )
        if r.eliminated:
            gone = "; ".join(esc(names[x]) for x in r.eliminated)
            events.append(f"round {r.number}: eliminated {gone}")
    lines.append("<ul>" + "".join(f"<li>{e}</li>" for e in events) + "</ul>")
    return "\n".join(lines)


def _axioms(report: dict[str, Any]) -> str:
    """The axiom report (:func:`~rankmodels.aggregation.elections.axioms.election_axioms`):
    its lines, then the head-to-head table."""
    lines = axiom_lines(report)
    items = "".join(f"<li>{esc(line.strip())}</li>" for line in lines[1:])
    rows = "".join(
        f'<tr><th>{esc(p["x"])} vs {esc(p["y"])}</th><td class="num">{p["x_over_y"]:,}</td>'
        f'<td class="num">{p["y_over_x"]:,}</td></tr>'
        for p in report["pairwise"]
    )
    return (
        f"<h2>Axioms</h2><p>{esc(lines[0])}</p><ul>{items}</ul>"
        f"<table><tr><th>head to head</th><th>first over second</th>"
        f"<th>second over first</th></tr>{rows}</table>"
    )


def rounds_html(
    counts: list[Count], contest: str, png: bytes, axioms: dict[str, Any] | None = None
) -> str:
    """The self-contained page of ``counts``: the chart ``png``, the round tables and,
    when given, the ``axioms`` report."""
    parts = [f"<h1>{esc(contest)}</h1>"]
    total = counts[0].total if counts else 0
    parts.append(
        f'<p class="subtitle">{total:,} ballots, '
        f"{counts[0].undervotes if counts else 0:,} without any ranking</p>"
    )
    alt = f"Rounds of {contest}: votes per candidate"
    parts.append(
        f'<figure><img src="{png_data_uri("rounds", png)}" alt="{esc(alt)}"></figure>'
    )
    for i, count in enumerate(counts):
        winners = ", ".join(esc(count.candidates[w]) for w in count.winners)
        seat = f"Seat {i + 1}: " if len(counts) > 1 else ""
        parts.append(f"<h2>{seat}winners: {winners or 'none'}</h2>")
        parts.append(_table(count))
    if axioms is not None:
        parts.append(_axioms(axioms))
    return html_document(contest, "\n".join(parts))
