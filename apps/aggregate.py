"""``aggregate``: consensus ranking of a votes file, with the axiom report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import numpy as np

from rankmodels import jsontext
from rankmodels.aggregation import RULES, Aggregation, Profile, aggregate, read_votes, score_vector
from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.cvr import CvrConventions
from rankmodels.aggregation.io import FORMATS, PREFLIB_TYPES
from rankmodels.aggregation.result import DEFAULT_MAX_TIES
from rankmodels.text import display_width, pad, printable
from rankmodels.threads import prepare_environment
from rankmodels_app._common import (
    BadInput,
    OneLineCommand,
    atomic_output,
    out_option,
    progressbar,
    quiet_option,
    refuse_to_overwrite,
    reports_bad_input,
    seed_option,
    version_option,
)

COUNTED_RULES = tuple(spec.name for spec in RULES if spec.kind == "counted")
"""``--rule`` choices counted round by round by the election tabulator
(:mod:`rankmodels.aggregation.elections`), printed as a round report."""

# Rule options that have a command-line flag; a rule that takes one needs it, except the
# switches.
_FLAGS = {"k": "--k", "scores": "--scores", "batch_elimination": "--batch-elimination"}
_SWITCHES = {"batch_elimination"}


def _parse_scores(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise BadInput(f"--scores: expected comma-separated numbers, got {text!r}") from None


def _markers(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(m.strip() for m in text.split(","))


def _names(text: str | None) -> list[str] | None:
    """``--candidates``: distinct non-empty names."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise BadInput(f"--candidates: expected distinct non-empty names, got {text!r}")
    return names


def _conventions(
    skipped: str | None,
    overvote: str | None,
    write_in: str | None,
    exhausts: bool,
    count_column: str,
    **settings: Any,
) -> CvrConventions:
    given = {"skipped": _markers(skipped), "overvote": _markers(overvote)}
    given["write_in"] = _markers(write_in)
    try:
        return CvrConventions(
            **{k: v for k, v in given.items() if v is not None},
            overvote_exhausts=exhausts,
            count_column=count_column,
            **settings,
        )
    except ValueError as err:
        raise BadInput(f"--cvr-skipped/--cvr-overvote/--cvr-write-in: {err}") from None


def _check_options(rule: str, given: dict[str, object]) -> None:
    """Each flag goes with the rules that take it, and those rules need it (switches such
    as --batch-elimination are optional)."""
    takes = RULES[rule].options
    for option, flag in _FLAGS.items():
        if given[option] is None and option in takes and option not in _SWITCHES:
            raise BadInput(f"--rule {rule} needs {flag}")
        if given[option] is not None and option not in takes:
            users = ", ".join(spec.name for spec in RULES if option in spec.options)
            raise BadInput(f"{flag} is only for --rule {users}, not --rule {rule}")


def _warn_reversed(h: list[float] | None) -> None:
    """Score vectors list first place first; more points for last place is likely a slip."""
    if h is not None and h[-1] > h[0]:
        click.echo(
            f"warning: --scores gives last place more points than first ({h[-1]:g} > {h[0]:g}), "
            "so it rewards last places; scores are listed first place first",
            err=True,
        )


def _report(
    profile: Profile,
    result: Aggregation,
    h: np.ndarray | None,
    top: int | None,
    until_one_left: bool = False,
) -> dict[str, Any]:
    names = profile.candidates
    ranking = [names[x] for x in result.ranking][:top]
    # with --top, rankings that differ only below the top K show once
    ties = list(dict.fromkeys(tuple(names[x] for x in t[:top]) for t in result.ties))
    scores = (
        {} if result.scores is None else {names[x]: float(result.scores[x]) for x in result.ranking}
    )
    return {
        "rule": result.rule,
        "candidates": list(names),
        "ballots": profile.total,
        "unique_ballots": int(profile.weights.size),
        "ranking": ranking,
        "scores": {k: scores[k] for k in ranking} if scores else {},
        "objective": result.objective,
        "exact": result.exact,
        "bound": result.bound,
        "n_optimal": result.n_optimal,
        "n_optimal_at_least": result.n_optimal_at_least,
        "ties": [list(t) for t in ties] if not result.unique else [],
        **_runoff(names, result, until_one_left),
        "axioms": profile_axiom_report(profile, result, h),
    }


def _runoff(names: tuple[str, ...], result: Aggregation, until_one_left: bool) -> dict[str, Any]:
    """``winners`` and ``rounds`` of the runoff rules (nothing for the other rules), and
    Smith-IRV's ``smith_set``. The rounds stop where a candidate is elected (nobody is
    eliminated in that round) unless ``until_one_left``."""
    if "rounds" not in result.details:
        return {}
    winners = result.details["winners"]
    rounds = []
    for i, r in enumerate(result.details["rounds"], start=1):
        stop = bool(r.elected) and not until_one_left
        rounds.append(
            {
                "round": i,
                "votes": {names[x]: float(r.votes[x]) for x in r.continuing},
                "exhausted": r.exhausted,
                "eliminated": [] if stop else [names[x] for x in r.eliminated],
                "tied": [] if stop else [names[x] for x in r.tied],
                "batch": r.batch and not stop,
                "elected": [names[x] for x in r.elected],
            }
        )
        if stop:
            break
    smith = result.details.get("smith_set")
    return {
        "winners": None if winners is None else [names[x] for x in winners],
        "rounds": rounds,
        **({} if smith is None else {"smith_set": [names[x] for x in smith]}),
    }


def _text(report: dict[str, Any]) -> str:
    lines = [
        f"rule: {report['rule']}   candidates: {len(report['candidates'])}   "
        f"ballots: {report['ballots']:g} ({report['unique_ballots']} unique)"
    ]
    shown = [printable(name) for name in report["ranking"]]
    width = max(map(display_width, shown))
    scores = report["scores"]
    for i, (name, label) in enumerate(zip(report["ranking"], shown, strict=True), start=1):
        score = f"  {scores[name]:.6g}" if scores else ""
        lines.append(f"{i:>4}  {pad(label, width)}{score}".rstrip())
    lines.extend(_optimality_lines(report))
    lines.extend(_round_lines(report))
    ax = report["axioms"]
    honoured = ax["honoured"]

    def premise(name: str | None, ok: bool | None) -> str:
        if name is None:
            return "none"
        return f"{printable(name)} (ranked first: {'yes' if ok else 'NO'})"

    lines.append(f"Condorcet winner: {premise(ax['condorcet_winner'], honoured['condorcet'])}")
    lines.append(f"majority winner: {premise(ax['majority_winner'], honoured['majority'])}")
    pareto = "" if honoured["pareto"] is None else f" (all honoured: {honoured['pareto']})"
    lines.append(f"Pareto-dominated pairs: {len(ax['pareto_pairs'])}{pareto}")
    n_viol = len(honoured["strong_condorcet_violations"])
    lines.append(
        f"majority pairs reversed: {n_viol}"
        + (f" (largest margin {honoured['strong_condorcet_epsilon']:.4g})" if n_viol else "")
    )
    if not honoured["over_all_optimal_rankings"]:
        lines.append(
            f"(judged on the {len(report['ties'])} listed optimal rankings only: "
            "raise --max-ties to judge them all)"
        )
    if "rule" in ax:
        lines.extend(_guarantee_lines(ax["rule"]))
    return "\n".join(lines) + "\n"


def _guarantee_lines(rule: dict[str, float]) -> list[str]:
    """What a positional rule guarantees on every profile, in words (docs/aggregation.md,
    axiom margins): a pair whose majority is wider than ``1/2 + eps_strong_condorcet`` is
    always ordered its way, a candidate first on more than ``1/2 + eps_majority`` of the
    ballots always wins; a threshold of 1/2 means no majority is ever enough."""

    def share(eps: float) -> str:
        return f"more than {100 * (0.5 + eps):.4g} % of the ballots"

    pairs, first = rule["eps_strong_condorcet"], rule["eps_majority"]
    return [
        "guarantees of this rule on every profile: "
        + (
            "none for pairs (no majority, however wide, always puts x above y)"
            if pairs >= 0.5
            else f"x is ranked above y whenever {share(pairs)} rank x above y"
        )
        + "; "
        + (
            "none for the winner (no first-place majority always wins)"
            if first >= 0.5
            else f"a candidate ranked first on {share(first)} wins"
        ),
        f"  (from the score gaps between positions: largest {rule['Omega']:.4g}, smallest "
        f"{rule['omega']:.4g}, smallest lead of first place {rule['omega1']:.4g}; "
        f"eps-IIA / strong Condorcet threshold {pairs:.4g}, eps-majority threshold {first:.4g})",
    ]


def _votes(value: float) -> str:
    """A tally: whole numbers with thousands separators, fractions (split ballots) with two
    decimals."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _round_lines(report: dict[str, Any]) -> list[str]:
    """A runoff's tallies: one column per round, ``*`` marking who goes out; then the
    exhausted ballots, every tie for last place and who is elected as Condorcet winner
    (Benham); Smith-IRV's Smith set first."""
    smith = report.get("smith_set")
    smith_line = [] if smith is None else ["Smith set: " + ", ".join(map(printable, smith))]
    if not report.get("rounds"):
        return smith_line
    rounds = report["rounds"]
    shown = {name: printable(name) for name in report["ranking"]}
    causes = [f"  {cause}" for cause in rounds[0].get("inactive", {})]
    width = max(map(display_width, [*shown.values(), "exhausted", *causes]))
    columns = []
    for r in rounds:
        cells = {
            n: _votes(v) + ("*" if n in r["eliminated"] else " ") for n, v in r["votes"].items()
        }
        cells["exhausted"] = _votes(r["exhausted"]) + " "
        for cause, value in r.get("inactive", {}).items():
            cells[f"  {cause}"] = _votes(value) + " "
        columns.append(cells)
    sizes = [max(len(f"{i}") + 1, *map(len, c.values())) for i, c in enumerate(columns, 1)]
    head = "".join(f"  {i:>{w - 1}} " for i, w in enumerate(sizes, start=1))
    lines = [*smith_line, f"{'round':<{width}}{head}".rstrip()]
    for name in [*report["ranking"], "exhausted", *causes]:
        label = shown.get(name, name)
        row = "".join(f"  {c.get(name, ''):>{w}}" for c, w in zip(columns, sizes, strict=True))
        lines.append(f"{pad(label, width)}{row}".rstrip())
    for i, r in enumerate(rounds, start=1):
        if r["tied"]:
            tied = ", ".join(printable(n) for n in r["tied"])
            gone = ", ".join(printable(n) for n in r["eliminated"])
            lines.append(f"round {i}: tied for fewest votes: {tied}; this ranking drops {gone}")
        elif r["batch"]:
            gone = ", ".join(printable(n) for n in r["eliminated"])
            lines.append(f"round {i}: batch elimination of {gone}")
        if r["elected"] and report["rule"] == "benham":
            lines.append(
                f"round {i}: {printable(r['elected'][0])} beats every continuing candidate "
                "head to head: elected"
            )
        elif r["elected"]:
            who = r["elected"][0]
            counting = sum(r["votes"].values())
            lines.append(
                f"round {i}: {printable(who)} has a majority, {_votes(r['votes'][who])} of "
                f"{_votes(counting)} votes counting: elected"
            )
    if "left_out" in report:
        lines.append(
            "ballots no round counts (no marks, or an overvote or skipped ranks first): "
            f"{_votes(report['left_out'])}"
        )
    winners = report["winners"]
    if winners is not None and len(winners) > 1:
        lines.append("winners over all tie-breakings: " + ", ".join(map(printable, winners)))
    return lines


def _optimality_lines(report: dict[str, Any]) -> list[str]:
    """Expected loss (distance rules), whether a heuristic is proved optimal, and how many
    rankings are optimal: exactly, at least, or unknown."""
    lines = []
    exact, bound = report["exact"], report["bound"]
    if report["objective"] is not None:
        loss = f"{report['objective']:.6g}"
        if bound is None:
            lines.append(f"expected loss: {loss}")
        elif exact:
            lines.append(
                f"expected loss: {loss} (heuristic, proved optimal: equals its lower bound)"
            )
        else:
            lines.append(f"expected loss (heuristic): {loss}, lower bound {bound:.6g}")
    count, at_least, listed = report["n_optimal"], report["n_optimal_at_least"], len(report["ties"])
    where = f"first shown above, {listed} listed with --format json"
    if not exact:
        lines.append(
            "number of optimal rankings: unknown (the heuristic's ranking is not proved optimal)"
        )
    elif count is None:
        lines.append(
            f"not unique: at least {at_least} optimal rankings (too many to count exactly; {where})"
        )
    elif count > 1:
        lines.append(f"not unique: {count} optimal rankings ({where})")
    return lines


@click.command("aggregate", cls=OneLineCommand)
@click.argument("votes", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--rule",
    type=click.Choice(RULES.names),
    default=None,
    help="Aggregation rule [default: borda, or 'scores' when --scores is given]; stv: "
    "single transferable vote with --seats, counted round by round.",
)
@click.option(
    "--rules",
    "rules_config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Count as an RCTab config (JSON) says: its rules, candidates and records (VOTES, "
    "when given, replace the records in order); prints the round report.",
)
@click.option("--seats", type=click.IntRange(min=1), default=None, help="stv: seats to fill.")
@click.option(
    "--decimal-places",
    type=click.IntRange(1, 20),
    default=4,
    show_default=True,
    help="stv: decimal places of the vote arithmetic (rounded down).",
)
@seed_option(help="stv: seed of the tie-breaking draws (Java's Random, as RCTab draws).")
@click.option("--k", "k", type=int, default=None, help="Approved positions for k-approval.")
@click.option("--scores", default=None, help="Custom score vector, first place first: 3,2,1,0.")
@click.option(
    "--batch-elimination",
    is_flag=True,
    default=None,
    help="irv: drop at once every candidate that cannot catch up with the next one.",
)
@click.option(
    "--until-one-left",
    is_flag=True,
    default=False,
    help="irv, smith-irv: show every round until one candidate is left (default: stop at "
    "the round where a candidate has a majority of the votes counting, as tabulators do).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "rctab-csv"]),
    default="text",
    show_default=True,
    help="Output format (rctab-csv: RCTab's detailed report, with --rules or --rule stv).",
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --rules or --rule stv: also write the rounds as a chart, FILE.png, or "
    "FILE.html (the chart and the round tables in one self-contained page).",
)
@click.option("--top", type=click.IntRange(min=1), default=None, help="Show only the top K.")
@click.option(
    "--max-ties",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_TIES,
    show_default=True,
    help="List at most this many optimal rankings.",
)
@out_option("Write the result to this file (atomically) instead of standard output.", name="output")
@click.option(
    "--format-in",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="VOTES format: by extension and header, votes CSV, cast-vote record, or ABIF.",
)
@click.option(
    "--candidates",
    default=None,
    help="The only candidate names allowed, comma-separated (CSV and cast-vote records).",
)
@click.option(
    "--cvr-skipped",
    default=None,
    help="Cast-vote records: markers of a skipped rank, comma-separated (an empty cell "
    "always is one) [default: skipped,undervote].",
)
@click.option(
    "--cvr-overvote", default=None, help="Cast-vote records: overvote markers [default: overvote]."
)
@click.option(
    "--cvr-write-in",
    default=None,
    help="Cast-vote records: write-in markers, all counted for one candidate 'Write-in' "
    "[default: write-in,writein].",
)
@click.option(
    "--overvote",
    type=click.Choice(["exhaust", "skip"]),
    default="exhaust",
    show_default=True,
    help="Cast-vote records: an overvote ends the ballot, or is passed over.",
)
@click.option(
    "--count-column",
    default="count",
    show_default=True,
    help="Cast-vote records: the optional ballot-count column.",
)
@click.option(
    "--skipped-ranks",
    type=click.Choice(["continue", "exhaust-after-2"]),
    default="continue",
    show_default=True,
    help="Cast-vote records: skipped ranks are passed over, or two in a row end the ballot "
    "(Maine, 21-A M.R.S. 723-A).",
)
@click.option(
    "--contest",
    default=None,
    help="Cast-vote records with several contests (DEM Mayor Choice 1 of 5, ...): part of the "
    "rank columns' names of the one to count.",
)
@quiet_option
@version_option("aggregate")
@reports_bad_input
def aggregate_command(
    votes: tuple[Path, ...],
    rule: str | None,
    rules_config: Path | None,
    seats: int | None,
    decimal_places: int,
    seed: int,
    k: int | None,
    scores: str | None,
    batch_elimination: bool | None,
    until_one_left: bool,
    fmt: str,
    chart: Path | None,
    top: int | None,
    max_ties: int,
    output: Path | None,
    format_in: str,
    candidates: str | None,
    cvr_skipped: str | None,
    cvr_overvote: str | None,
    cvr_write_in: str | None,
    overvote: str,
    count_column: str,
    skipped_ranks: str,
    contest: str | None,
    quiet: bool,
) -> None:
    """Aggregate the ranked ballots in VOTES (votes CSV, cast-vote record CSV with rank
    columns, PrefLib .soc/.soi/.toc/.toi, or ABIF .abif) into consensus ranking(s), with
    scores and an axiom report.

    Ties and unranked candidates: a ballot stands for the uniform distribution over its
    linear extensions (see docs/aggregation.md).
    """
    if rules_config is not None or rule in COUNTED_RULES:
        text, counts, contest_name, axioms = _count(
            votes,
            rule,
            rules_config,
            seats,
            decimal_places,
            seed,
            fmt,
            format_in,
            _names(candidates),
            overvote,
            skipped_ranks,
            _conventions(
                cvr_skipped, cvr_overvote, cvr_write_in, True, count_column, contest=contest
            ),
        )
        inputs = [*votes, *([rules_config] if rules_config else [])]
        if chart is not None:
            from rankmodels_app.elections import write_chart

            refuse_to_overwrite(chart, inputs)
            write_chart(counts, contest_name, chart, axioms)
        _write(text, output, inputs, quiet)
        if chart is not None and not quiet:
            click.echo(f"wrote {chart}", err=True)
        return
    if chart is not None:
        raise BadInput("--chart is only for --rules or --rule stv")
    if seats is not None:
        raise BadInput("--seats is only for --rule stv")
    if fmt == "rctab-csv":
        raise BadInput("--format rctab-csv is only for --rules or --rule stv")
    if len(votes) != 1:
        raise BadInput(f"expected one VOTES file, got {len(votes)}")
    (votes,) = votes
    vector = _parse_scores(scores)
    if rule is None:
        rule = "scores" if vector is not None else "borda"
    batch = True if batch_elimination else None
    _check_options(rule, {"k": k, "scores": vector, "batch_elimination": batch})
    if until_one_left and rule not in ("irv", "smith-irv"):
        raise BadInput(f"--until-one-left is only for --rule irv, smith-irv, not --rule {rule}")
    names = _names(candidates)
    if names is not None and format_in == "auto" and votes.suffix.lower()[1:] in PREFLIB_TYPES:
        raise BadInput("--candidates is for CSV files; a PrefLib file names its candidates")
    conventions = _conventions(
        cvr_skipped,
        cvr_overvote,
        cvr_write_in,
        overvote == "exhaust",
        count_column,
        max_skipped_ranks=1 if skipped_ranks == "exhaust-after-2" else None,
        contest=contest,
    )
    cast = _cast_ballots(votes, rule, format_in, names, conventions)
    if cast is not None:  # read once, as cast: the profile and the causes from it
        from rankmodels.aggregation.elections.as_profile import profile_of

        try:
            profile = profile_of(cast, conventions.overvote_exhausts, conventions.max_skipped_ranks)
        except ValueError as err:
            raise BadInput(f"{votes}: {err}") from None
    else:
        with progressbar(votes.stat().st_size, f"reading {printable(votes.name)}", quiet) as bar:
            profile = read_votes(votes, names, bar.update, format_in, conventions)
    try:
        h = score_vector(rule, profile.n, k, vector)
        result = aggregate(
            profile, rule, k=k, scores=vector, max_ties=max_ties, batch_elimination=batch
        )
    except ValueError as err:
        raise BadInput(f"{votes}: --rule {rule}: {err}") from None
    report = _report(profile, result, h, top, until_one_left)
    if cast is not None:
        from rankmodels_app.elections import inactive_causes

        inactive_causes(report, cast, conventions)
    text = jsontext.dumps(report) if fmt == "json" else _text(report)
    _write(text, output, [votes], quiet, lambda: _warn_reversed(vector))


def _cast_ballots(
    votes: Path,
    rule: str,
    format_in: str,
    names: list[str] | None,
    conventions: CvrConventions,
):
    """Instant runoff on a rank-column cast-vote record: its ballots as cast (write-ins
    where they first appear, as the profile reader names candidates); else ``None``."""
    if rule != "irv":
        return None
    from rankmodels_app.elections import is_rank_column_cvr

    if not is_rank_column_cvr(votes, format_in):
        return None
    from rankmodels.aggregation.elections.cvr_csv import read_cvr_ballots

    return read_cvr_ballots(votes, names, conventions, write_ins_last=False)


def _write(
    text: str, output: Path | None, inputs: list[Path], quiet: bool, before_done=None
) -> None:
    """Print ``text`` or write it atomically to ``output``; ``before_done`` runs after
    everything that can fail (so that an error stays one line)."""
    if output is None:
        sys.stdout.write(text)
    else:
        refuse_to_overwrite(output, inputs)
        with atomic_output(output, "w") as handle:
            handle.write(text)
    if before_done is not None:
        before_done()
    if output is not None and not quiet:
        click.echo(f"wrote {output}", err=True)


def _count(
    votes: tuple[Path, ...],
    rule: str | None,
    rules_config: Path | None,
    seats: int | None,
    decimal_places: int,
    seed: int,
    fmt: str,
    format_in: str,
    names: list[str] | None,
    overvote: str,
    skipped_ranks: str,
    conventions: CvrConventions,
) -> tuple[str, list, str, dict[str, Any]]:
    """The round report of a count by an RCTab config or by single transferable vote, the
    counts, the contest's name and the axiom report."""
    from rankmodels.aggregation.elections.axioms import election_axioms
    from rankmodels.aggregation.elections.rules import Rules
    from rankmodels_app.elections import config_count, render, stv_count

    if rules_config is not None:
        if rule is not None:
            raise BadInput("--rules gives the rules: leave out --rule")
        contest, ballots, counts = config_count(rules_config, votes)
        axioms = election_axioms(ballots, contest.rules, counts)
        text = render(counts, contest.name, contest.info, fmt, axioms)
        return text, counts, contest.name, axioms
    if seats is None:
        raise BadInput("--rule stv needs --seats")
    if len(votes) != 1:
        raise BadInput(f"expected one VOTES file, got {len(votes)}")
    rules = Rules(
        seats=seats,
        mode="single" if seats == 1 else "multi-seat",
        overvote="exhaust" if overvote == "exhaust" else "skip",
        max_skipped_ranks=1 if skipped_ranks == "exhaust-after-2" else None,
        decimal_places=decimal_places,
        seed=seed,
    )
    ballots, counts = stv_count(votes[0], rules, names, format_in, conventions)
    axioms = election_axioms(ballots, rules, counts)
    return render(counts, votes[0].stem, {}, fmt, axioms), counts, votes[0].stem, axioms


def aggregate_main() -> None:
    """Console-script entry point for ``aggregate`` (thread policy:
    :func:`rankmodels.threads.prepare_environment`)."""
    prepare_environment()
    aggregate_command(prog_name="aggregate")
