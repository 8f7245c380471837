"""One option vocabulary: the tracking commands' settings come from one table
(:data:`rankmodels.tracking.settings.SETTINGS`), a quantity has one option name in every
command, and the old spellings still work as hidden aliases, giving what the new name
gives, with errors that name the new one."""

from __future__ import annotations

import filecmp
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import fields

import click
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.tracking.config import (
    COMMAND_MOTION,
    COMMAND_MULTIPATH,
    COMMAND_PARTICLES,
    LIMITS,
    TrackConfig,
)
from rankmodels.tracking.records import write_float
from rankmodels.tracking.settings import COMMANDS, SETTINGS, option_name, settings_of
from rankmodels.tracking.simulate import MISMATCH_LIMITS, Mismatch, dimes_float767
from rankmodels_app.cli import cli

#: Every old spelling: (command path, alias, the option's name now, a valid value).
ALIASES = [
    (("track-float",), "--pd", "--p-detect", "0.8"),
    (("track-float",), "--clutter", "--clutter-rate", "0.5"),
    (("simulate-float",), "--float-drift", "--float-clock-drift", "0.02"),
    (("simulate-experiment",), "--source-drift-true", "--source-drift-error", "0.01"),
    (("study", "tracking-clutter"), "--lambdas", "--clutter-rates", "0.5"),
]
ALIAS_IDS = [alias for _, alias, _, _ in ALIASES]
#: Each alias with a value its command refuses after parsing (the library's range check, or
#: the option type's own check).
OUT_OF_RANGE = {
    "--pd": "nan",
    "--clutter": "inf",
    "--float-drift": "nan",
    "--source-drift-true": "2",
    "--lambdas": "1,-1",
}


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        command = command.get_command(click.Context(command), name)  # type: ignore[attr-defined]
    return command


def _aliased_options() -> list[tuple[tuple[str, ...], str]]:
    """(command path, hidden alias) of every command reached from ``rankmodels``, but
    ``--output`` (``tests/test_cli_convention.py`` runs it on every command)."""
    found = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(click.Context(command)):
                walk(command.get_command(click.Context(command), name), (*path, name))
            return
        for param in command.params:
            for alias in getattr(param, "hidden_aliases", ()):
                if alias != "--output":
                    found.append((path, alias))

    walk(cli, ())
    return sorted(found)


def _token(option: str) -> re.Pattern[str]:
    """``option`` as a whole word (``--clutter`` is not in ``--clutter-rate``)."""
    return re.compile(rf"(?<![\w-]){re.escape(option)}(?![\w-])")


# --------------------------------------------------------------------------- the table
def test_every_alias_is_listed_here():
    assert _aliased_options() == sorted((path, alias) for path, alias, _, _ in ALIASES)


def test_one_quantity_one_name():
    """Across the table a quantity has one option name and an option name one quantity; no
    old spelling is the name of anything."""
    names, quantities = defaultdict(set), defaultdict(set)
    for setting in SETTINGS:
        names[setting.quantity].add(setting.option)
        quantities[setting.option].add(setting.quantity)
    assert {q: n for q, n in names.items() if len(n) > 1} == {}
    assert {o: q for o, q in quantities.items() if len(q) > 1} == {}
    aliases = [alias for setting in SETTINGS for alias in setting.aliases]
    assert not set(aliases) & set(quantities)
    old = {alias: {s.option for s in SETTINGS if alias in s.aliases} for alias in aliases}
    assert all(len(now) == 1 for now in old.values()), old


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_has_one_row_per_field_and_per_name(command):
    rows = [s for s in SETTINGS if command in s.commands]
    assert len(settings_of(command)) == len(rows)
    spellings = [name for s in rows for name in s.names]
    assert len(set(spellings)) == len(spellings)


def test_track_float_rows_are_the_tracker_settings_with_its_ranges_and_defaults():
    defaults = TrackConfig()
    known = {f.name for f in fields(TrackConfig)}
    command_defaults = {
        "multipath": COMMAND_MULTIPATH,
        "motion": COMMAND_MOTION,
        "particles": COMMAND_PARTICLES,
        "calibrate": True,
    }
    for field, setting in settings_of("track-float").items():
        assert field in known, field
        want = command_defaults.get(field, getattr(defaults, field))
        if field == "calibrate_params":  # the option's text, parsed by TrackConfig
            assert TrackConfig(calibrate_params=setting.default).calibrate_params == want
        else:
            assert setting.default == want, field
        if field in LIMITS:
            limit = LIMITS[field]
            assert (setting.lo, setting.hi, setting.lo_open) == (limit.lo, limit.hi, limit.lo_open)


def test_mismatch_rows_have_the_simulators_ranges():
    mismatch = {f.name for f in fields(Mismatch)}
    for command in ("simulate-float", "simulate-experiment"):
        for field, setting in settings_of(command).items():
            if field in mismatch and setting.checked_by == "command":
                lo, hi, _unit, lo_open, hi_open = MISMATCH_LIMITS[field]
                assert (setting.lo, setting.hi, setting.lo_open, setting.hi_open) == (
                    lo, hi, lo_open, hi_open,
                ), (command, field)  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_row_is_an_option_of_its_command(command):
    """With the row's names (its aliases hidden), and parsed into the row's field."""
    params = {p.name: p for p in _command((command,)).params}
    for field, setting in settings_of(command).items():
        param = params[field]
        assert isinstance(param, click.Option)
        assert param.opts == list(setting.names), field
        if setting.kind == "flag":
            assert param.secondary_opts == [f"--no-{setting.option[2:]}"]
        assert tuple(getattr(param, "hidden_aliases", ())) == setting.aliases


def test_option_name_maps_a_refused_field_to_its_option():
    assert option_name("track-float", "p_detect") == "--p-detect"
    assert option_name("simulate-float", "clock_drift") == "--float-clock-drift"
    assert option_name("simulate-float", "source_drift") == "--source-drift"
    assert option_name("simulate-experiment", "source_drift") == "--source-drift-error"
    assert option_name("track-float", "ensemble") is None


def test_the_library_does_not_import_click():
    code = "import sys, rankmodels.tracking.settings; print('click' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


# --------------------------------------------------------------------------- the aliases
@pytest.mark.parametrize(("path", "alias", "option", "value"), ALIASES, ids=ALIAS_IDS)
def test_an_alias_is_hidden_from_help(path, alias, option, value):
    page = CliRunner().invoke(cli, [*path, "--help"], env={"COLUMNS": "80"}).output
    assert _token(option).search(page)
    assert not _token(alias).search(page)


@pytest.mark.parametrize(("path", "alias", "option", "value"), ALIASES, ids=ALIAS_IDS)
def test_an_alias_parses_into_what_the_name_parses_into(path, alias, option, value):
    command = _command(path)
    extra = ["x.nc"] if path == ("track-float",) else []
    new = command.make_context(path[-1], [*extra, option, value]).params
    old = command.make_context(path[-1], [*extra, alias, value]).params
    default = command.make_context(path[-1], list(extra)).params
    assert old == new and new != default


@pytest.mark.parametrize(("path", "alias", "option", "value"), ALIASES, ids=ALIAS_IDS)
def test_an_alias_names_the_option_in_errors(path, alias, option, value, tmp_path):
    """A value the option type refuses and one the library refuses: both errors name the
    option as ``--help`` shows it."""
    extra = {
        ("track-float",): [str(tmp_path / "record.nc")],
        ("simulate-float",): ["--days", "3"],
        ("simulate-experiment",): ["--floats", "1", "--max-days", "3"],
    }.get(path, [])
    if path == ("track-float",):
        write_float(dimes_float767(seed=3, days=3)[0], extra[0])
    for bad in ("not-a-number", OUT_OF_RANGE[alias]):
        args = [*path, *extra, alias, bad, "-o", str(tmp_path / "out"), "-q"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (bad, result.output)
        (line,) = result.output.splitlines()
        assert _token(option).search(line) and not _token(alias).search(line), line


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    path = tmp_path_factory.mktemp("record") / "record.nc"
    write_float(dimes_float767(seed=3, days=8)[0], path)
    return path


def _run(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "-q"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("alias", ["--pd", "--clutter"])
def test_track_float_aliases_track_as_the_names_do(alias, record, tmp_path):
    option, value = next((a[2], a[3]) for a in ALIASES if a[1] == alias)
    base = [
        "track-float", str(record), "--particles", "50", "--no-plots", "--no-calibrate",
    ]  # fmt: skip
    tracks = {}
    for name in (alias, option):
        _run([*base, name, value, "-o", str(tmp_path / name)])
        tracks[name] = _unstamped(tmp_path / name / "track.nc")
    (setting,) = [s for s in settings_of("track-float").values() if s.option == option]
    assert tracks[option].attrs[setting.field] == float(value)
    assert tracks[alias].identical(tracks[option])


#: attributes that hold the run's clock time
STAMPED = ("created", "date_created", "history")


def _unstamped(path):
    ds = xr.load_dataset(path)
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in STAMPED}
    return ds


def _same_files(a, b) -> None:
    """The same files in folders ``a`` and ``b``: NetCDF files the same but for the clock time
    they were written at, others byte for byte."""
    names = sorted(p.name for p in a.iterdir())
    assert names and names == sorted(p.name for p in b.iterdir())
    for name in names:
        if name.endswith(".nc"):
            assert _unstamped(a / name).identical(_unstamped(b / name)), name
        else:
            assert filecmp.cmp(a / name, b / name, shallow=False), name


def test_simulate_float_float_drift_simulates_as_float_clock_drift(tmp_path):
    for name in ("--float-drift", "--float-clock-drift"):
        _run(["simulate-float", "--days", "4", name, "0.02", "-o", str(tmp_path / name)])
    _same_files(tmp_path / "--float-drift", tmp_path / "--float-clock-drift")
    (truth,) = (tmp_path / "--float-drift").glob("*_truth.nc")
    assert float(xr.load_dataset(truth)["clock_drift"]) == 0.02


def test_simulate_experiment_source_drift_true_replays_as_source_drift_error(tmp_path):
    for name in ("--source-drift-true", "--source-drift-error"):
        out = str(tmp_path / name)
        _run(["simulate-experiment", "--floats", "1", "--max-days", "3", name, "0.01", "-o", out])
    _same_files(tmp_path / "--source-drift-true", tmp_path / "--source-drift-error")
    summary = (tmp_path / "--source-drift-true" / "experiment.json").read_text()
    assert '"source_drift": 0.01' in summary


def test_study_lambdas_runs_as_clutter_rates(tmp_path):
    tables = {}
    for name in ("--lambdas", "--clutter-rates"):
        _run([
            "study", "tracking-clutter", name, "0.5", "--engines", "baseline",
            "--trajectories", "straight", "--replicates", "1", "--particles", "20",
            "--cycles", "2", "-o", str(tmp_path / name),
        ])  # fmt: skip
        table = pd.read_csv(tmp_path / name / "tracking_clutter.csv")
        tables[name] = table.drop(columns="task_time_s")
    assert list(tables["--lambdas"]["clutter_rate"]) == [0.5]
    pd.testing.assert_frame_equal(tables["--lambdas"], tables["--clutter-rates"])
