"""The command-line convention of docs/cli.md, checked over the whole Click tree.

Every command of every console script in ``[project.scripts]`` is found by walking the Click
groups, so a command or option added later is held to the same rules without touching this
file; only a new *command* needs a cheap call in ``CALLS`` (a test says so). The rules:

* output: one option spelled ``-o, --out`` (``FILE`` or a folder ``OUT``), ``--output`` a
  hidden alias that still works;
* ``-q, --quiet`` on every command: with ``-o`` nothing goes to stdout and a summary naming
  the output goes to stderr; with ``-q`` stderr holds nothing but warnings; results without
  ``-o`` go to stdout;
* ``--version`` on every entry point; a mistyped subcommand gets "Did you mean ...?";
* a missing input file is ``PATH: no such file`` whatever reads it;
* JSON (stdout or files) indented by two spaces, without float noise or ``40.0`` counts;
* help text for every option, ranges in click's style (``0<x<=600``), no RST backticks, no
  19-digit seed bound, argument names in the usage as the text spells them;
* a bad option value is refused naming the option.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from rankmodels import __version__
from rankmodels.ltr.model_io import PARAMETER_KEYS
from rankmodels.tracking.experiment_metadata import DIMES_METADATA
from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels_app import help_pages
from rankmodels_app._common import MISSING_FILE, AliasedOption

REPO = Path(__file__).resolve().parents[1]


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in sorted(command.list_commands(ctx)):
            yield from _walk(command.get_command(ctx, name), (*path, name))


def _root(program: str) -> click.Command:
    module, attribute = help_pages.PROGRAMS[program]
    return getattr(importlib.import_module(module), attribute)


TREE = [
    (program, path, command)
    for program in help_pages.PROGRAMS
    for path, command in _walk(_root(program), ())
]
"""(program, subcommand path, command) of every command and group of every program."""
LEAVES = {path: command for program, path, command in TREE if program == "rankmodels"}
LEAVES = {p: c for p, c in LEAVES.items() if not isinstance(c, click.Group)}
GROUPS = [(program, path, c) for program, path, c in TREE if isinstance(c, click.Group)]


def _id(program: str, path: tuple[str, ...]) -> str:
    return " ".join((program, *path))


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def _output_option(command: click.Command) -> click.Option | None:
    found = [p for p in _options(command) if {"-o", "--out", "--output"} & set(p.opts)]
    assert len(found) <= 1
    return found[0] if found else None


# --------------------------------------------------------------------------- static rules
def test_the_programs_are_the_console_scripts():
    scripts = {
        ep.name
        for ep in importlib.metadata.distribution("rankmodels").entry_points
        if ep.group == "console_scripts"
    }
    assert scripts == set(help_pages.PROGRAMS)
    assert {("ltr", "train"), ("float", "import"), ("track-float",)} <= set(LEAVES)


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_the_output_option_is_dash_o_out(path):
    option = _output_option(LEAVES[path])
    if option is None:
        return
    assert isinstance(option, AliasedOption)
    assert option.opts[:2] == ["-o", "--out"] and set(option.opts) == {"-o", "--out", "--output"}
    record = option.get_help_record(click.Context(LEAVES[path]))
    assert record is not None and record[0] in ("-o, --out FILE", "-o, --out OUT")
    assert "--output" not in option.get_error_hint(click.Context(LEAVES[path]))


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_command_takes_quiet(path):
    (quiet,) = [p for p in _options(LEAVES[path]) if "-q" in p.opts]
    assert quiet.opts == ["--quiet", "-q"] and quiet.is_flag


@pytest.mark.parametrize("program, path, command", TREE, ids=[_id(p, c) for p, c, _ in TREE])
def test_every_option_has_help(program, path, command):
    for option in _options(command):
        assert option.hidden or (option.help or "").strip(), (option.opts, "has no help")


_NUMBER = r"-?\d+(?:\.\d+)?"
_RANGE = re.compile(rf"^(?:{_NUMBER}<=?x<=?(?:{_NUMBER}|2\*\*63)|x(?:<|<=|>|>=){_NUMBER})$")


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {key: entry["page"] for key, entry in help_pages.render_pages().items()}


def test_help_pages_keep_one_range_style_and_no_markup(pages):
    assert set(pages) == {_id(p, c) for p, c, _ in TREE}
    for key, page in pages.items():
        assert "`" not in page, key
        assert "9223372036854775807" not in page, key
        flat = re.sub(r"\s+", " ", page)
        for bracket in re.findall(r"\[([^\[\]]*)\]", flat):
            for part in bracket.split(";"):
                part = part.strip()
                if re.search(r"(?:^|[\d ])x ?[<>]|[<>]=? ?x\b", part):
                    assert _RANGE.match(part), f"{key}: range {part!r}"
                    assert not re.search(r"\d\.0(?!\d)", part), f"{key}: range {part!r}"


def _metavar_words(command: click.Command) -> list[str]:
    ctx = click.Context(command)
    return [
        re.sub(r"[\[\].]", "", p.make_metavar(ctx))
        for p in command.params
        if isinstance(p, click.Argument)
    ]


@pytest.mark.parametrize("program, path, command", TREE, ids=[_id(p, c) for p, c, _ in TREE])
def test_the_usage_names_the_arguments_as_the_text_does(program, path, command):
    text = command.help or ""
    for word in _metavar_words(command):
        if word in ("COMMAND", "ARGS"):
            continue
        assert re.search(rf"\b{word}\b", text), f"{word} is not in the help text"
        twin = word[:-1] if word.endswith("S") else word + "S"
        assert not re.search(rf"\b{twin}\b", text), f"the text says {twin}, the usage {word}"


@pytest.mark.parametrize("program, path, group", GROUPS, ids=[_id(p, c) for p, c, _ in GROUPS])
def test_a_mistyped_subcommand_gets_a_suggestion(program, path, group):
    names = group.list_commands(click.Context(group))
    for name in names:
        typo = name[0] + name[2:]  # one letter dropped
        if typo in names:
            continue
        result = CliRunner().invoke(_root(program), [*path, typo], prog_name=program)
        assert result.exit_code == 2
        assert f"'{name}'" in result.output.split("Did you mean", 1)[1], result.output


_VERSION = """
import sys
from importlib.metadata import distribution
(ep,) = [e for e in distribution("rankmodels").entry_points
         if e.group == "console_scripts" and e.name == sys.argv[1]]
sys.argv = [ep.name, "--version"]
ep.load()()
"""


@pytest.mark.parametrize("program", sorted(help_pages.PROGRAMS))
def test_every_entry_point_has_version(program):
    run = subprocess.run(
        [sys.executable, "-c", _VERSION, program], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{program}, version {__version__}\n"


# --------------------------------------------------------------------------- running commands
@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, str]:
    """Small valid inputs of every kind, by placeholder name."""
    root = tmp_path_factory.mktemp("samples")
    record = root / "record.nc"
    write_float(dimes_float767(seed=3, days=5)[0], record)
    letor = root / "letor.txt"
    letor.write_text((REPO / "data" / "letor-sample.txt").read_text())
    runner = CliRunner()
    calls = [
        ["ltr", "train", str(letor), "--max-iter", "2", "-o", str(root / "model.json")],
        ["mallows", "fit", str(REPO / "data" / "election.soi"), "--format", "json"]
        + ["-o", str(root / "mixture.json")],
        ["float", "export", str(record), "-o", str(root / "tables")],
    ]
    from rankmodels_app.cli import cli

    for call in calls:
        result = runner.invoke(cli, call)
        assert result.exit_code == 0, result.output
    return {
        "record": str(record),
        "dimes": str(DIMES_METADATA),
        "votes": str(REPO / "data" / "votes.csv"),
        "election": str(REPO / "data" / "election.soi"),
        "letor": str(letor),
        "model": str(root / "model.json"),
        "mixture": str(root / "mixture.json"),
        "toa": str(root / "tables" / "toa.csv"),
        "sources": str(root / "tables" / "sources.csv"),
        "meta": str(root / "tables" / "meta.csv"),
    }


CALLS: dict[tuple[str, ...], list[str]] = {
    ("aggregate",): ["--rule", "kemeny", "{votes}"],
    ("float", "export"): ["{record}"],
    ("float", "import"): ["--toa", "{toa}", "--sources", "{sources}", "--meta-table", "{meta}"],
    ("ltr", "crossval"): ["{letor}", "--folds", "2", "--max-iter", "2"],
    ("ltr", "evaluate"): ["{letor}", "-m", "{model}"],
    ("ltr", "losses"): [],
    ("ltr", "predict"): ["{letor}", "-m", "{model}"],
    ("ltr", "train"): ["{letor}", "--max-iter", "2"],
    ("mallows", "fit"): ["{election}", "--restarts", "1", "--max-iter", "20"],
    ("mallows", "sample"): ["--centre", "A,B,C", "--phi", "0.5", "-n", "10"],
    ("simulate-experiment",): ["{dimes}", "--floats", "1", "--max-days", "3"],
    ("simulate-float",): ["--days", "3"],
    ("study", "aggregation"): ["--weights", "0.6", "--voters", "5"]
    + ["--replicates", "1", "--trials", "1"],
    ("study", "surrogate-scale"): ["--betas", "1", "--replicates", "1", "--rounds", "2"],
    ("study", "tracking-clutter"): ["--clutter-rates", "1", "--engines", "baseline"]
    + ["--trajectories", "straight", "--replicates", "1", "--particles", "20", "--cycles", "2"],
    ("track-float",): ["{record}", "--particles", "50", "--no-plots", "--no-calibrate"],
}
"""A cheap valid call of every command (``{name}``: a sample input)."""
OUTPUT_PATHS = {"--chart"}
"""Path options that name an output besides ``-o`` (every other path is an input)."""


def _fill(argv: list[str], samples: dict[str, str]) -> list[str]:
    return [a.format(**samples) if a.startswith("{") else a for a in argv]


def _invoke(path: tuple[str, ...], argv: list[str], where: Path, monkeypatch) -> Result:
    from rankmodels_app.cli import cli

    monkeypatch.chdir(where)
    return CliRunner().invoke(cli, [*path, *argv], prog_name="rankmodels")


def _chatter(stderr: str) -> list[str]:
    """stderr lines other than warnings."""
    return [line for line in stderr.splitlines() if not line.startswith("warning:")]


def test_every_command_has_a_cheap_call():
    assert set(CALLS) == set(LEAVES)


def _check_json(key: str, text: str) -> None:
    """JSON as every command writes it: indented by two spaces, no float noise."""
    assert text.startswith(("{\n  ", "[\n  ")), f"{key}: {text[:60]!r}"
    assert not _noise(text), f"{key}: {_noise(text)[:5]}"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_summaries_go_to_stderr_and_quiet_silences_them(path, samples, tmp_path, monkeypatch):
    argv = _fill(CALLS[path], samples)
    output = _output_option(LEAVES[path])
    key = " ".join(path)
    if output is None:
        result = _invoke(path, [*argv, "-q"], tmp_path, monkeypatch)
        assert result.exit_code == 0, result.output
        assert result.stdout and not _chatter(result.stderr)
        return
    target = "out.txt" if output.metavar == "FILE" else "outdir"
    if output.metavar == "FILE" and not output.required:
        (tmp_path / "stdout").mkdir()
        plain = _invoke(path, argv, tmp_path / "stdout", monkeypatch)
        assert plain.exit_code == 0, plain.output
        assert plain.stdout, "without -o the result goes to stdout"
    loud_dir, quiet_dir = tmp_path / "loud", tmp_path / "quiet"
    loud_dir.mkdir()
    quiet_dir.mkdir()
    loud = _invoke(path, [*argv, "-o", target], loud_dir, monkeypatch)
    assert loud.exit_code == 0, loud.output
    assert loud.stdout == "", "with -o nothing goes to stdout"
    assert target in loud.stderr, "the summary names the output"
    quiet = _invoke(path, [*argv, "--output", target, "-q"], quiet_dir, monkeypatch)
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout == "" and not _chatter(quiet.stderr), quiet.stderr
    assert (quiet_dir / target).exists(), "--output still works"
    for file in sorted(loud_dir.rglob("*.json")):
        _check_json(f"{key}: {file.name}", file.read_text())


@pytest.mark.parametrize(
    "path",
    [p for p, c in sorted(LEAVES.items()) for o in _options(c) if o.name == "fmt"],
    ids=" ".join,
)
def test_json_formats_are_pretty(path, samples, tmp_path, monkeypatch):
    argv = _fill(CALLS[path], samples)
    result = _invoke(path, [*argv, "--format", "json"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    _check_json(" ".join(path), result.stdout)


def _noise(text: str) -> list[str]:
    """The float literals of the JSON ``text`` that show noise: more than 12 significant
    digits, or an integral value written as a float. A saved model's parameters
    (:data:`PARAMETER_KEYS`) are exempt: they are kept exactly."""
    document = json.loads(text, parse_float=_Literal)
    exempt = set(_exempt_literals(document))
    noisy = []
    for literal in _all_literals(document):
        if id(literal) in exempt:
            continue
        mantissa = re.split("[eE]", literal)[0].lstrip("-").replace(".", "").lstrip("0")
        if len(mantissa.rstrip("0")) > 12 or float(literal).is_integer():
            noisy.append(str(literal))
    return noisy


class _Literal(str):
    """A float literal of a JSON text, as written."""


def _all_literals(node: Any) -> Iterator[_Literal]:
    if isinstance(node, _Literal):
        yield node
    elif isinstance(node, dict):
        for item in node.values():
            yield from _all_literals(item)
    elif isinstance(node, list):
        for item in node:
            yield from _all_literals(item)


def _exempt_literals(node: Any) -> Iterator[int]:
    if isinstance(node, dict):
        for key, item in node.items():
            if key in PARAMETER_KEYS:
                yield from map(id, _all_literals(item))
            else:
                yield from _exempt_literals(item)
    elif isinstance(node, list):
        for item in node:
            yield from _exempt_literals(item)


def test_the_noise_check_sees_noise():
    text = '{"a": 0.19999999999999996, "b": [40.0, 1e-20, 0.5], "c": 3, "weights": [0.1000000000000001]}'  # noqa: E501
    assert _noise(text) == ["0.19999999999999996", "40.0"]


def _input_paths(command: click.Command) -> list[click.Parameter]:
    return [
        p
        for p in command.params
        if isinstance(p.type, click.Path)
        and p is not _output_option(command)
        and not (isinstance(p, click.Option) and set(p.opts) & OUTPUT_PATHS)
    ]


MISSING_CASES = [
    (path, param.name)
    for path, command in sorted(LEAVES.items())
    for param in _input_paths(command)
]


@pytest.mark.parametrize(
    "path, name", MISSING_CASES, ids=[f"{' '.join(p)} {n}" for p, n in MISSING_CASES]
)
def test_a_missing_input_file_has_one_wording(path, name, samples, tmp_path, monkeypatch):
    (param,) = [p for p in LEAVES[path].params if p.name == name]
    argv = _fill(CALLS[path], samples)
    missing = "missing-input.txt"
    if isinstance(param, click.Argument):
        argv = [
            missing if a in samples.values() and i == _first_positional(argv) else a
            for i, a in enumerate(argv)
        ]
    else:
        argv = _without(argv, param) + [max(param.opts, key=len), missing]
    output = _output_option(LEAVES[path])
    if output is not None and output.required:
        argv += ["-o", "out"]
    result = _invoke(path, argv, tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert line.startswith("Error: ") and line.endswith(f"{missing}: {MISSING_FILE}"), line


def _first_positional(argv: list[str]) -> int:
    for i, token in enumerate(argv):
        if not token.startswith("-") and (i == 0 or not argv[i - 1].startswith("-")):
            return i
    raise AssertionError(f"no argument in {argv}")


def _without(argv: list[str], param: click.Parameter) -> list[str]:
    """``argv`` without ``param``'s option and value, and without the options it excludes
    (``--mixture`` replaces ``--centre``/``--phi``)."""
    drop = set(param.opts) | EXCLUDES.get(max(param.opts, key=len), set())
    kept, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token in drop:
            skip = True
        else:
            kept.append(token)
    return kept


EXCLUDES = {"--mixture": {"--centre", "--phi"}, "--rules": {"--rule"}}
"""Options that an input option replaces in a cheap call."""


def _bad_values(option: click.Option) -> list[str]:
    kind = option.type
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        out = [str(kind.max + 1)] if kind.max is not None else []
        return [*out, str(kind.min - 1)] if kind.min is not None else out
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType, click.Choice)):
        return ["not-a-value"]
    if type(kind).__module__.startswith("rankmodels_app"):  # the commands' own types
        return ["not-a-value"]
    return []


def _shown(option: click.Option) -> list[str]:
    """The names ``--help`` shows of ``option`` (not its hidden aliases)."""
    hidden = getattr(option, "hidden_aliases", ())
    return [name for name in option.opts if name not in hidden]


BAD_VALUES = [
    (path, name, value)
    for path, command in sorted(LEAVES.items())
    for option in _options(command)
    for name in [max(_shown(option), key=len), *getattr(option, "hidden_aliases", ())]
    for value in _bad_values(option)
    if not (isinstance(option.type, click.types.BoolParamType))
]
"""(command, option, bad value): each option by its longest shown name and its old
spellings."""


@pytest.mark.parametrize(
    "path, option, value", BAD_VALUES, ids=[" ".join((*p, o, v)) for p, o, v in BAD_VALUES]
)
def test_a_bad_value_is_refused_naming_the_option(
    path, option, value, samples, tmp_path, monkeypatch
):
    (param,) = [p for p in _options(LEAVES[path]) if option in p.opts]
    argv = [*_fill(CALLS[path], samples), option, value]
    result = _invoke(path, argv, tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert any(re.search(rf"(?<![\w-]){name}(?![\w-])", line) for name in _shown(param)), line
    for alias in getattr(param, "hidden_aliases", ()):  # an old spelling is not named
        assert not re.search(rf"(?<![\w-]){alias}(?![\w-])", line), line


def test_a_weight_above_one_is_refused_naming_the_option(tmp_path, monkeypatch):
    result = _invoke(("study", "aggregation"), ["--weights", "1.5"], tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert result.output == (
        "Error: Invalid value for '--weights': expected numbers in [0, 1], got '1.5'\n"
    )


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_dash_h_is_help_also_for_a_command_run_on_its_own(path):
    """Click caches a command's help option when first built: run outside its group (as a
    test or a script may), the command must still know ``-h``."""
    command = LEAVES[path]
    option = command.get_help_option(click.Context(command))
    assert option is not None and set(option.opts) == {"-h", "--help"}
