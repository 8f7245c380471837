"""The option tables of docs/tracking.md and docs/simulation.md are the commands' options, read
from the Click app.

Every table of the pages whose header is ``| `COMMAND` option | default | meaning |`` lists
options of that command. Each row's first cell names the option (``-o, --out OUT``,
``--calibrate/--no-calibrate``: every word starting with ``-`` is a name, the rest metavars),
its second cell the default: a cell that starts with a code span (```10000```, ```exact```,
```--smooth``` for an on/off flag) states the code's default, which must be the option's
``default``; any other cell (prose such as "one per CPU", "required", "off") is allowed only
where the code has no fixed default (None, unset, or False). Every name must be one the
command shows (an old spelling kept as a hidden alias, e.g. ``--pd`` for ``--p-detect``, is
not documented), and every option ``track-float`` shows must have a row. Commands written in
the page's code spans and code blocks use only options the command has.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from rankmodels_app.experiment import simulate_experiment
from rankmodels_app.float import float_group
from rankmodels_app.simulate import simulate_float
from rankmodels_app.track import track_float

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = (DOCS / "tracking.md", DOCS / "simulation.md")

COMMANDS: dict[str, click.Command] = {
    "track-float": track_float,
    "simulate-float": simulate_float,
    "simulate-experiment": simulate_experiment,
    "float import": float_group.commands["import"],
    "float export": float_group.commands["export"],
}
"""The commands whose option tables the page may hold, by the name the header gives."""

HEADER = re.compile(r"^\|\s*`([a-z][a-z -]*)` option\s*\|\s*default\s*\|\s*meaning\s*\|\s*$")
CODE = re.compile(r"`([^`]+)`")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def option_tables(text: str) -> dict[str, list[tuple[int, str, str]]]:
    """``command -> [(line number, option cell, default cell)]`` of every option table."""
    tables: dict[str, list[tuple[int, str, str]]] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        header = HEADER.match(line)
        if header is None:
            if re.match(r"^\|[^|]*\boption\s*\|", line):
                form = "| `COMMAND` option | default | meaning |"
                raise AssertionError(f"line {index + 1}: not an option table {form}: {line}")
            continue
        command = header.group(1)
        assert command in COMMANDS, f"line {index + 1}: unknown command {command!r}"
        rows = tables.setdefault(command, [])
        for number in range(index + 2, len(lines)):
            if not lines[number].startswith("|"):
                break
            cells = _cells(lines[number])
            assert len(cells) == 3, f"line {number + 1}: expected 3 cells, got {cells}"
            rows.append((number + 1, cells[0], cells[1]))
    return tables


def shown_names(option: click.Option) -> set[str]:
    """The spellings ``--help`` shows: every name but the hidden aliases."""
    hidden = set(getattr(option, "hidden_aliases", ()))
    return {name for name in (*option.opts, *option.secondary_opts) if name not in hidden}


def visible_options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def documented_names(cell: str) -> list[str]:
    """``-o, --out OUT`` -> ``["-o", "--out"]``; ``--smooth/--no-smooth`` -> both."""
    spans = CODE.findall(cell)
    assert spans, f"the option cell {cell!r} names no option in a code span"
    words = re.split(r"[\s,/]+", " ".join(spans))
    return [word for word in words if word.startswith("-")]


def _no_fixed_default(option: click.Option) -> bool:
    default = option.default
    return default is None or default is False or not isinstance(
        default, (bool, int, float, str, Path)
    )


def stated_default(option: click.Option, cell: str) -> object | None:
    """The default a cell states (None: prose, no value stated)."""
    literal = re.match(r"^`([^`]*)`", cell)
    if literal is None:
        return None
    value = literal.group(1)
    if option.is_flag and option.secondary_opts:
        if value in option.opts:
            return True
        if value in option.secondary_opts:
            return False
        raise AssertionError(f"{value!r} is neither {option.opts} nor {option.secondary_opts}")
    return value


def same_default(option: click.Option, stated: object) -> bool:
    default = option.default
    if isinstance(stated, bool) or isinstance(default, bool):
        return stated == default
    if isinstance(default, (int, float)):
        try:
            return float(str(stated)) == float(default)
        except ValueError:
            return False
    return str(stated) == str(default)


def check_table(command: click.Command, rows: list[tuple[int, str, str]]) -> list[str]:
    """Every mismatch between the table's rows and the command's options, one line each."""
    problems = []
    by_name = {name: option for option in visible_options(command) for name in shown_names(option)}
    hidden = {
        alias: option for option in visible_options(command)
        for alias in getattr(option, "hidden_aliases", ())
    }  # fmt: skip
    seen: set[str] = set()
    for line, option_cell, default_cell in rows:
        names = documented_names(option_cell)
        options = {id(by_name[n]): by_name[n] for n in names if n in by_name}
        for name in names:
            if name in hidden:
                problems.append(f"line {line}: {name} is an old spelling; the option is "
                                f"{hidden[name].opts[0]}")  # fmt: skip
            elif name not in by_name:
                problems.append(f"line {line}: {command.name} has no option {name}")
        if len(options) != 1:
            if len(options) > 1:
                problems.append(f"line {line}: {option_cell} names several options")
            continue
        (option,) = options.values()
        if option.name in seen:
            problems.append(f"line {line}: {option_cell} is documented twice")
        seen.add(option.name or "")
        stated = stated_default(option, default_cell)
        if stated is None:
            if not _no_fixed_default(option):
                problems.append(f"line {line}: {option_cell}: the default is {option.default!r}, "
                                f"the docs give no value ({default_cell!r})")  # fmt: skip
        elif not same_default(option, stated):
            problems.append(f"line {line}: {option_cell}: the docs say the default is "
                            f"{stated!r}, the code's is {option.default!r}")  # fmt: skip
    return problems


TABLES = {
    command: rows
    for page in PAGES
    for command, rows in option_tables(page.read_text(encoding="utf-8")).items()
}


def test_the_page_has_option_tables():
    assert {"track-float", "simulate-float", "simulate-experiment", "float import"} <= set(TABLES)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_documented_option_and_default_is_the_code_s(name):
    assert check_table(COMMANDS[name], TABLES[name]) == []


def test_every_track_float_option_is_documented():
    documented = {n for _, cell, _ in TABLES["track-float"] for n in documented_names(cell)}
    missing = [o.opts[0] for o in visible_options(track_float) if not shown_names(o) & documented]
    assert missing == []


def test_a_wrong_default_fails():
    """The check itself: a planted wrong default, a prose default where the code has one, an
    old spelling and a missing option are all reported."""
    rows = TABLES["track-float"]
    line, cell, _ = next(row for row in rows if "--particles" in row[1])
    assert check_table(track_float, [(line, cell, "`1000`")])
    assert check_table(track_float, [(line, cell, "ten thousand")])
    assert check_table(track_float, [(1, "`--pd P`", "`0.9`")])
    assert check_table(track_float, [(1, "`--no-such-option`", "`1`")])
    line, cell, _ = next(row for row in rows if "--smooth" in row[1])
    assert check_table(track_float, [(line, cell, "`--no-smooth`")])
    assert check_table(track_float, [(line, cell, "`--smooth`")]) == []


# --- commands written in the docs use options their command has -----------------------------

PROGRAMS = {
    "track-float": track_float,
    "rankmodels track-float": track_float,
    "rankmodels simulate-float": simulate_float,
    "rankmodels simulate-experiment": simulate_experiment,
    "rankmodels float import": float_group.commands["import"],
    "rankmodels float export": float_group.commands["export"],
}


def written_commands(text: str) -> list[tuple[click.Command, str]]:
    """``(command, its text)`` of every command line in a code block or code span."""
    pieces = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)
    pieces = [line for block in pieces for line in block.replace("\\\n", " ").splitlines()]
    outside = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    pieces += CODE.findall(" ".join(outside.split()))
    found = []
    for piece in pieces:
        piece = piece.split("#")[0].removeprefix("$ ").strip()
        for program in sorted(PROGRAMS, key=len, reverse=True):
            if piece.startswith(program + " "):
                found.append((PROGRAMS[program], piece))
                break
    return found


@pytest.mark.parametrize("page", ["tracking.md", "simulation.md", "validation.md"])
def test_written_commands_use_the_options_their_command_shows(page):
    path = DOCS / page
    if not path.exists():
        pytest.skip(f"no docs/{page}")
    problems = []
    for command, text in written_commands(path.read_text(encoding="utf-8")):
        names = set().union(*(shown_names(o) for o in visible_options(command)), {"-h", "--help"})
        for word in re.findall(r"(?<![\w-])--?[a-z][\w-]*", text):
            if word not in names:
                problems.append(f"{command.name}: {word} in {text!r}")
    assert problems == []
