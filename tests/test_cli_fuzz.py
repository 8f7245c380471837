"""Fuzz every command of the ``rankmodels`` group: exit 0 or 2, never a traceback.

The commands are found by walking the Click group, so a new command or option is fuzzed
without touching this file. Each option's value is drawn from its type:

* integers: both ends of the range, the values just outside them, small values around the
  lower end, negative numbers, and int64's edges (``2**63 - 1``, ``2**63``, ``-2**63 - 1``,
  ``10**30``). Sizes -- ``IntRange`` options with a lower bound of at least 1 (particles, days,
  replicates, iterations) -- are always given, and drawn small: the fuzz checks validation, not
  capacity, so a size's upper end is drawn only just outside;
* floats: both ends of the range as Click accepts them (a closed end itself, an open end's
  nearest float inside and the end moved in by 1e-300, a missing end's ``+-1e308`` and
  ``+-inf``), ``nan`` where the type lets it through, and, as wild values, ``nan``, ``inf``,
  ``5e-324``, ``-0.0``, small numbers and non-numbers;
* choices: every choice, and a wrong one;
* strings (and custom types such as comma lists): comma lists of the default's tokens and
  numbers, ``KEY=VALUE`` pairs, and text with control characters (not NUL: an argv cannot
  hold one);
* paths: a missing file (one named with a newline too), an empty file, garbage bytes, a
  folder, a path below a file, a new nested path, and valid samples of every input kind (a
  short simulated float record, votes CSV, PrefLib election, LETOR file, trained model, Mallows
  mixture) -- whatever the option expects.

A run must not raise a ``RuntimeWarning`` either (numpy's ``invalid value``, ``Mean of empty
slice``: a value the command did not think through). Flags take either side, except that
figure-writing ``--plots`` flags are pinned off (plots are tested in their own modules).
Options that start or contact a Dask cluster are left out (tests/test_studies_*.py cover them).
Every example runs in a fresh folder holding copies of the samples, so outputs never land in
the repository. Exit codes an option documents are allowed with it (``--strict``: 3, a failed
track quality check).

A failure known to be fixed elsewhere is listed in ``KNOWN_FAILURES``: its invocation is an
``xfail(strict=True)`` case (the fix makes it pass, which fails the suite until the entry is
removed) and the fuzz skips examples that fail the same way. More examples:
``RANKMODELS_FUZZ_EXAMPLES=500 pytest tests/test_cli_fuzz.py``.
"""

from __future__ import annotations

import math
import os
import shutil
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels_app._common import MAX_SEED
from rankmodels_app.cli import cli

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("RANKMODELS_FUZZ_EXAMPLES", "12"))

# Options not fuzzed: they start a local Dask cluster or wait for a remote scheduler.
UNFUZZED = {"--workers", "--scheduler"}
# Flags pinned to their cheap side: figures cost seconds each.
PINNED_FLAGS = {"--plots": "--no-plots"}
# Exit codes an option documents besides 0 and 2 (track-float --strict: a quality check failed).
DOCUMENTED_EXITS = {"--strict": 3}


def _leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name in sorted(group.list_commands(click.Context(group))):  # the group loads lazily
        command = group.get_command(click.Context(group), name)
        if isinstance(command, click.Group):
            yield from _leaf_commands(command, (*path, name))
        else:
            yield (*path, name)


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    return command


COMMANDS = list(_leaf_commands(cli))
GROUPS = [(), *sorted({p[:-1] for p in COMMANDS if len(p) > 1})]


# --------------------------------------------------------------------------- the samples
_LETOR_RNG = np.random.default_rng(5)
LETOR = "".join(
    f"{int(_LETOR_RNG.integers(0, 3))} qid:{q} "
    + " ".join(f"{f}:{_LETOR_RNG.normal():.3f}" for f in (1, 2, 3))
    + "\n"
    for q in range(1, 7)
    for _ in range(5)
)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    """Valid inputs of every kind, plus bad ones; each example gets a fresh copy."""
    root = tmp_path_factory.mktemp("samples")
    write_float(dimes_float767(seed=3, days=5)[0], root / "record.nc")
    shutil.copy(REPO / "data" / "votes.csv", root / "votes.csv")
    shutil.copy(REPO / "data" / "election.soi", root / "election.soi")
    (root / "letor.txt").write_text(LETOR)
    result = CliRunner().invoke(
        cli, ["ltr", "train", str(root / "letor.txt"), "--max-iter", "3", "-o", str(root / "m")]
    )
    assert result.exit_code == 0, result.output
    (root / "m").rename(root / "model.json")
    mixture = ["mallows", "fit", str(root / "election.soi"), "--format", "json", "-o", "x"]
    result = CliRunner().invoke(cli, mixture[:-1] + [str(root / "mixture.json")])
    assert result.exit_code == 0, result.output
    (root / "empty.txt").write_bytes(b"")
    (root / "garbage.bin").write_bytes(np.random.default_rng(1).bytes(300))
    (root / "a-folder").mkdir()
    return root


PATHS = [
    "record.nc",
    "votes.csv",
    "election.soi",
    "letor.txt",
    "model.json",
    "mixture.json",
    "empty.txt",
    "garbage.bin",
    "a-folder",
    "missing.nc",
    "missing\nname\x1b.txt",
    "garbage.bin/below-a-file",
    "new/nested/out",
]


# --------------------------------------------------------------------------- value strategies
# Valid values reach deep into a command; each example makes at most two options wild, so most
# runs get past argument checking.
INPUTS = {  # the sample a parameter of this name reads; other path parameters get any path
    "file": ["record.nc"],
    "files": ["record.nc"],
    "votes": ["election.soi", "votes.csv"],
    "data": ["letor.txt"],
    "model_path": ["model.json"],
    "mixture": ["mixture.json"],
    "out": ["out", "new/nested/out"],
    "output": ["out.txt", "new/nested/out.txt"],
}
_HUGE_INTS = [2**63 - 1, 2**63, -(2**63) - 1, 10**30, -1, 0]
_ODD_FLOATS = ["nan", "inf", "-inf", "1e308", "-1e308", "5e-324", "-0.0", "0", "x", ""]
_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8
)


def _is_size(kind: click.ParamType) -> bool:
    """Counts such as particles, days, replicates: drawn small, never omitted."""
    return isinstance(kind, click.IntRange) and kind.min is not None and kind.min >= 1


def _int_edges(kind: click.ParamType) -> tuple[list[int], list[int]]:
    """(the ends of an integer range, the values just outside them), open ends moved inside."""
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if low is not None and getattr(kind, "min_open", False):
        low += 1
    if high is not None and getattr(kind, "max_open", False):
        high -= 1
    ends = [b for b in (low, high) if b is not None]
    outside = [b + step for b, step in ((low, -1), (high, 1)) if b is not None]
    return ends, outside


def _ints(kind: click.ParamType, wild: bool) -> st.SearchStrategy[str]:
    ends, outside = _int_edges(kind)
    if _is_size(kind):
        # the upper end of a size is a capacity test (10^8 votes, 3653 days): only its outside
        small = st.integers(ends[0], ends[0] + 5)
        return (st.one_of(small, st.sampled_from(outside)) if wild else small).map(str)
    if wild:
        odd = st.sampled_from(_HUGE_INTS + outside)
        return st.one_of(st.integers(-3, 12), odd).map(str)
    low = ends[0] if getattr(kind, "min", None) is not None else 1
    return st.one_of(st.integers(low, low + 10), st.sampled_from(ends or [low])).map(str)


def _float_edges(kind: click.ParamType) -> list[float]:
    """Both ends of a float range as Click accepts them: a closed end itself; an open end's
    nearest float inside and the end moved inside by 1e-300 (``--phi 1e-300``; dropped where
    that rounds back to the end); an absent end's largest finite value and infinity."""
    edges = []
    for end, open_, inward, sign in (
        (getattr(kind, "min", None), getattr(kind, "min_open", False), math.inf, -1.0),
        (getattr(kind, "max", None), getattr(kind, "max_open", False), -math.inf, 1.0),
    ):
        if end is None:
            edges += [sign * 1e308, sign * math.inf]
        elif open_:
            edges += [math.nextafter(float(end), inward), float(end) - sign * 1e-300]
        else:
            edges.append(float(end))
    return [e for e in edges if _accepts(kind, e)]


def _accepts(kind: click.ParamType, value: float) -> bool:
    try:
        kind.convert(repr(value), None, None)
    except click.BadParameter:
        return False
    return True


def _floats(kind: click.ParamType, wild: bool) -> st.SearchStrategy[str]:
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if wild:
        bounds = [repr(float(b)) for b in (low, high) if b is not None]
        small = st.floats(-3, 3, allow_nan=False).map(repr)
        return st.one_of(st.sampled_from(_ODD_FLOATS + bounds), small)
    # accepted by Click, so the command must cope: the range's edges, and nan where the type
    # lets it through (it passes every range check)
    lo = 0.0 if low is None else float(low)
    hi = lo + 10.0 if high is None else float(high)
    inside = st.floats(
        lo,
        hi,
        exclude_min=getattr(kind, "min_open", False),
        exclude_max=getattr(kind, "max_open", False) or high is None,
    )
    edges = [repr(e) for e in _float_edges(kind)]
    edges += ["nan"] if _accepts(kind, math.nan) else []
    return st.one_of(inside.map(repr), st.sampled_from(edges))


def _strings(param: click.Parameter, wild: bool) -> st.SearchStrategy[str]:
    default = param.default if isinstance(param.default, str) else ""
    tokens = [t for t in default.split(",") if t] + ["0.5", "2", "1"]
    if wild:
        tokens += ["-1", "nan", "1e308", "x"]
    items = st.sampled_from(tokens) if not wild else st.one_of(st.sampled_from(tokens), _TEXT)
    comma_list = st.lists(items, min_size=0 if wild else 1, max_size=4, unique=not wild)
    names = ["sigma", "k", "tau"] + (["x", ""] if wild else [])
    pair = st.tuples(st.sampled_from(names), st.sampled_from(tokens)).map("=".join)
    return st.one_of(comma_list.map(",".join), pair, *([_TEXT] if wild else []))


def _values(param: click.Parameter, wild: bool) -> st.SearchStrategy[str]:
    kind = param.type
    if isinstance(kind, click.Path):
        return st.sampled_from(PATHS if wild else INPUTS.get(param.name or "", PATHS))
    if isinstance(kind, click.Choice):
        return st.sampled_from([*map(str, kind.choices), *(["no-such-choice"] if wild else [])])
    if isinstance(kind, (click.types.IntParamType, click.IntRange)):
        return _ints(kind, wild)
    if isinstance(kind, (click.types.FloatParamType, click.FloatRange)):
        return _floats(kind, wild)
    return _strings(param, wild)


@st.composite
def _argv(draw: st.DrawFn, path: tuple[str, ...]) -> list[str]:
    """An argv for ``path``: arguments, and options in random order; at most two wild."""
    command = _command(path)
    params = [p for p in command.params if max(p.opts, key=len) not in UNFUZZED]
    names = [p.name for p in params]
    wild = draw(st.sets(st.sampled_from(names), max_size=2)) if names else set()
    options: list[list[str]] = []
    arguments: list[str] = []
    for param in params:
        values = _values(param, param.name in wild)
        if isinstance(param, click.Argument):
            count = 1 if param.nargs == 1 else draw(st.integers(0, 2))
            arguments += [draw(values) for _ in range(count)]
            continue
        assert isinstance(param, click.Option)
        name = max(param.opts, key=len)
        if name in PINNED_FLAGS:
            options.append([PINNED_FLAGS[name]])
        elif param.is_flag:
            if draw(st.booleans()):
                options.append([draw(st.sampled_from(param.opts + param.secondary_opts))])
        else:
            low = 1 if (param.required or _is_size(param.type)) else 0
            for _ in range(draw(st.integers(low, 2 if param.multiple else 1))):
                options.append([draw(st.sampled_from(param.opts)), draw(values)])
    order = draw(st.permutations(options))
    return [*path, *[token for option in order for token in option], *arguments]


# --------------------------------------------------------------------------- known failures
@dataclass(frozen=True)
class KnownFailure:
    """A failure being fixed elsewhere: the failing invocation and how it fails.

    ``kind`` is the exception's type name and ``where`` the innermost repository frame
    (``path/in/repo.py:function``) of a crash; or ``kind`` is ``"stderr"`` and ``where`` the
    start of an exit-2 message that is not one ``Error:`` line; or ``kind`` is
    ``"RuntimeWarning"`` and ``where`` the first one's ``path:line: message``.
    """

    argv: tuple[str, ...]
    kind: str
    where: str
    reason: str


KNOWN_FAILURES: list[KnownFailure] = []


def _failure(argv: list[str], result: Result) -> tuple[str, str] | None:
    """How a run breaks the rules: (kind, where) as in :class:`KnownFailure`, or None."""
    caught = getattr(result, "runtime_warnings", [])
    if caught:
        return "RuntimeWarning", caught[0]
    if result.exit_code not in _exit_codes(argv) and result.exc_info is not None:
        exc_type, _, tb = result.exc_info
        where = ""
        for frame in traceback.extract_tb(tb):
            file = Path(frame.filename).resolve()
            if file.is_relative_to(REPO) and "tests" not in file.relative_to(REPO).parts:
                where = f"{file.relative_to(REPO).as_posix()}:{frame.name}"
        return exc_type.__name__, where
    lines = result.stderr.splitlines()
    if result.exit_code == 2 and not (len(lines) == 1 and lines[0].startswith("Error: ")):
        return "stderr", result.stderr
    return None


class FailsAnotherWay(Exception):
    """A known failure's invocation now fails differently: update its entry."""


_RULE_BROKEN = (AssertionError, pytest.fail.Exception)
"""What :func:`_check` raises; the xfail cases expect exactly these."""


def _is_known(failure: tuple[str, str], known: KnownFailure) -> bool:
    kind, where = failure
    if kind in ("stderr", "RuntimeWarning"):
        return known.kind == kind and where.startswith(known.where)
    return (kind, where) == (known.kind, known.where)


def _invoke(argv: list[str], samples: Path, workdir: Path) -> Result:
    """Run ``rankmodels ARGV`` in ``workdir`` holding fresh copies of the samples; the
    ``RuntimeWarning``s it raised (``path:line: message``) in ``result.runtime_warnings``."""
    shutil.copytree(samples, workdir, dirs_exist_ok=True)
    cwd = Path.cwd()
    os.chdir(workdir)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = CliRunner().invoke(cli, argv)
    finally:
        os.chdir(cwd)
    result.runtime_warnings = [  # type: ignore[attr-defined]
        f"{Path(w.filename).name}:{w.lineno}: {w.message}"
        for w in caught
        if issubclass(w.category, RuntimeWarning)
    ]
    return result


def _exit_codes(argv: list[str]) -> set[int]:
    """0 and 2, and the documented codes of the options given (``--strict``: 3)."""
    return {0, 2} | {code for option, code in DOCUMENTED_EXITS.items() if option in argv}


def _check(argv: list[str], result: Result) -> None:
    """Exit 0, or exit 2 with one ``Error: ...`` line on stderr; never a traceback."""
    shown = f"rankmodels {' '.join(map(repr, argv))}"
    caught = getattr(result, "runtime_warnings", [])
    assert not caught, f"{shown}: RuntimeWarning\n" + "\n".join(caught)
    if result.exit_code not in _exit_codes(argv):
        trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        pytest.fail(f"{shown}: exit {result.exit_code}\n{result.output}\n{trace}")
    assert "Traceback" not in result.output, f"{shown}\n{result.output}"
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), f"{shown}\n{result.stderr}"


# --------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
@given(data=st.data())
def test_every_command_exits_0_or_2(path, data, samples, tmp_path_factory):
    argv = data.draw(_argv(path), label="argv")
    result = _invoke(argv, samples, tmp_path_factory.mktemp("run"))
    failure = _failure(argv, result)
    if failure is not None and any(_is_known(failure, k) for k in KNOWN_FAILURES):
        reject()  # tracked by its xfail case below
    _check(argv, result)


@pytest.mark.parametrize(
    "known",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=k.reason, raises=_RULE_BROKEN))
        for k in KNOWN_FAILURES
    ],
    ids=lambda k: " ".join(k.argv),
)
def test_known_failure_is_fixed(known, samples, tmp_path):
    argv = list(known.argv)
    result = _invoke(argv, samples, tmp_path)
    failure = _failure(argv, result)
    if failure is not None and not _is_known(failure, known):
        raise FailsAnotherWay(f"{' '.join(argv)}: {failure}")  # a real failure, not the xfail
    _check(argv, result)


@pytest.mark.parametrize("group", GROUPS, ids=lambda p: " ".join(("rankmodels", *p)))
def test_unknown_subcommands_are_one_line_errors(group, samples, tmp_path):
    argv = [*group, "no-such-command"]
    result = _invoke(argv, samples, tmp_path)
    assert result.exit_code == 2
    _check(argv, result)


def test_the_walk_finds_every_command():
    """Guards the discovery itself: the documented commands are all fuzzed."""
    expected = {
        ("aggregate",),
        ("track-float",),
        ("simulate-float",),
        ("ltr", "train"),
        ("ltr", "evaluate"),
        ("study", "tracking-clutter"),
    }
    assert expected <= set(COMMANDS)


def test_every_seed_is_the_shared_option():
    seeds = {path: p for path in COMMANDS for p in _command(path).params if p.name == "seed"}
    assert {"track-float", "simulate-float", "train", "tracking-clutter"} <= {
        path[-1] for path in seeds
    }
    for path, seed in seeds.items():
        assert isinstance(seed.type, click.IntRange), path
        assert (seed.type.min, seed.type.max) == (0, MAX_SEED), path


# --------------------------------------------------------------------------- the range edges
CHEAP = {
    ("study", "aggregation"): ["--weights", "0.6", "--voters", "5"],
    ("study", "tracking-clutter"): ["--clutter-rates", "1", "--engines", "baseline"],
    ("mallows", "sample"): ["--centre", "A,B,C,D"],
}
"""Grid options (comma lists) made small, and settings a call needs, for the edge sweep."""
COMPANIONS = {
    "--shrinkage": ["--model", "boost"],
    "--k": ["--rule", "k-approval"],
    "--fix-until": ["--fix-every", "1"],
}
"""What an option is only for, given with it in the edge sweep."""


def _minimal_argv(path: tuple[str, ...]) -> list[str]:
    """The cheapest valid call of ``path``: the arguments from the samples, every required
    option and every size with a default at its lower end (or first value), and the small
    grids and the settings of ``CHEAP``."""
    argv = [*path, *CHEAP.get(path, [])]
    for param in _command(path).params:
        if isinstance(param, click.Argument):
            argv.append(INPUTS.get(param.name or "", ["out"])[0])
        elif isinstance(param, click.Option) and max(param.opts, key=len) in PINNED_FLAGS:
            argv.append(PINNED_FLAGS[max(param.opts, key=len)])
        elif isinstance(param, click.Option) and (
            param.required or (_is_size(param.type) and param.to_info_dict()["default"] is not None)
        ):
            if isinstance(param.type, click.Path):
                value = INPUTS.get(param.name or "", ["out"])[0]
            elif isinstance(param.type, click.Choice):
                value = str(param.type.choices[0])
            else:
                value = str(_int_edges(param.type)[0][0])
            argv += [max(param.opts, key=len), value]
    return argv


def _edge_cases() -> Iterator[tuple[tuple[str, ...], str, str]]:
    """(command, option, value) for both ends of every numeric option's range and, for a plain
    number, +-1e308 and +-inf. Not sizes: their lower end is in every minimal call already and
    their upper end is a capacity test; of ``--seed`` (one shared option) only ``2**63 - 1``."""
    for path in COMMANDS:
        for param in _command(path).params:
            name = max(param.opts, key=len)
            if not isinstance(param, click.Option) or name in UNFUZZED:
                continue
            kind = param.type
            if isinstance(kind, (click.types.FloatParamType, click.FloatRange)):
                edges = [repr(e) for e in _float_edges(kind)]
            elif _is_size(kind):
                continue
            elif isinstance(kind, (click.types.IntParamType, click.IntRange)):
                ends = _int_edges(kind)[0] or [-(2**63), 2**63 - 1]
                edges = [str(e) for e in (ends[1:] if name == "--seed" else ends)]
            else:
                continue
            for edge in edges:
                yield path, name, edge


EDGE_CASES = list(_edge_cases())


@pytest.mark.parametrize(
    "path, option, value", EDGE_CASES, ids=[" ".join((*p, o, v)) for p, o, v in EDGE_CASES]
)
def test_every_range_edge_is_honoured_or_refused(path, option, value, samples, tmp_path):
    """Each end of each option's range, alone on the cheapest valid call: it works or is one
    ``Error:`` line (exit 2), without a traceback or a RuntimeWarning (``study aggregation
    --phi 1`` crashed, ``--phi 1e-300`` warned)."""
    argv = [*_minimal_argv(path), *COMPANIONS.get(option, []), option, value]
    _check(argv, _invoke(argv, samples, tmp_path))
