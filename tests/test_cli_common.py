"""The CLI plumbing: atomic outputs, one-line errors, the shared seed option, the install."""

from __future__ import annotations

import importlib.metadata
import os
import stat
import subprocess
import sys
from pathlib import Path

import click
import pytest
import xarray as xr
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels.tracking.records import write_float
from rankmodels.tracking.simulate import dimes_float767
from rankmodels_app._common import (
    MAX_SEED,
    BadInput,
    OneLineCommand,
    atomic_output,
    atomic_path,
    refuse_to_overwrite,
    reports_bad_input,
)
from rankmodels_app.cli import cli
from rankmodels_app.track import track_float

REPO = Path(__file__).resolve().parents[1]


def test_atomic_output_keeps_old_file_when_writer_fails(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target, "w") as handle:
        handle.write("partial")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]  # no temporary left behind


@pytest.mark.parametrize("opener", ["output", "path"])
def test_atomic_outputs_have_ordinary_permissions(tmp_path, opener):
    target = tmp_path / "result.nc"
    umask = os.umask(0o022)
    try:
        if opener == "output":
            with atomic_output(target, "w") as handle:
                handle.write("x")
        else:
            with atomic_path(target) as tmp:
                tmp.write_text("x")
    finally:
        os.umask(umask)
    assert target.read_text() == "x"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_refuse_to_overwrite_an_input(tmp_path):
    src = tmp_path / "votes.csv"
    src.write_text("ranking\nA>B\n")
    with pytest.raises(BadInput, match="over the input"):
        refuse_to_overwrite(tmp_path / "." / "votes.csv", [src])


def test_input_errors_become_one_line_exit_2(tmp_path):
    @click.command()
    @reports_bad_input
    def cmd() -> None:
        raise InputError("must be ascending within each cycle", path="f.nc", field="toa")

    result = CliRunner().invoke(cmd, [])
    assert result.exit_code == 2
    assert result.output.strip() == "Error: f.nc: toa: must be ascending within each cycle"
    assert "Traceback" not in result.output


@pytest.mark.parametrize("below", ["missing/x.txt", "a-file/x.txt"])
def test_output_paths_the_file_system_refuses_are_one_line_errors(tmp_path, below):
    (tmp_path / "a-file").write_text("not a folder")
    target = tmp_path / below

    @click.command()
    @reports_bad_input
    def cmd() -> None:
        with open(target, "w"):
            pass

    result = CliRunner().invoke(cmd, [])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"Error: {target}: " + (
        "no such file" if below.startswith("missing") else "Not a directory"
    )


def test_control_characters_in_a_message_keep_it_one_line():
    @click.command(cls=OneLineCommand)
    @click.argument("path", type=click.File("r"))
    @reports_bad_input
    def cmd(path) -> None:
        raise InputError("bad", path="a\nb\x1b.csv", field="ranking")

    line = _one_error_line(CliRunner().invoke(cmd, ["missing\nfile.csv"]))
    assert line.startswith("Error: ") and "missing file.csv" in line  # click.FileError: exit 2
    line = _one_error_line(CliRunner().invoke(cmd, [os.devnull]))  # opens: InputError
    assert line == "Error: a b\ufffd.csv: ranking: bad"


def _one_error_line(result) -> str:
    """The single ``Error: ...`` line of a failed invocation (asserts there is only that)."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["no-such-command"], "No such command 'no-such-command'"),
        (["ltr", "train", "missing.txt"], "missing.txt: no such file"),
        (["track-float"], "Missing argument 'FILE...'"),
        (["aggregate", "--rule", "magic", "votes.csv"], "'magic' is not one of"),
        (["study", "tracking-clutter", "--clutter-rates", "1,x"], "comma-separated numbers"),
        (["simulate-float", "--days", "1"], "'--days': 1 is not in the range"),
    ],
)
def test_usage_errors_are_one_line(args, expected):
    line = _one_error_line(CliRunner().invoke(cli, args))
    assert expected in line


def test_standalone_commands_have_one_line_usage_errors():
    line = _one_error_line(CliRunner().invoke(track_float, ["x.nc", "--engine", "magic"]))
    assert "'--engine'" in line and "'magic' is not one of" in line


def test_a_bare_group_still_shows_its_help():
    result = CliRunner().invoke(cli, ["ltr"])
    assert "train" in result.output and "evaluate" in result.output


@pytest.fixture(scope="module")
def short_record(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("record") / "short.nc"
    write_float(dimes_float767(seed=5, days=6)[0], path)
    return path


def test_the_largest_seed_runs_and_is_recorded(short_record, tmp_path):
    args = [str(short_record), "--out", str(tmp_path), "--particles", "30", "--no-plots", "-q"]
    result = CliRunner().invoke(track_float, [*args, "--seed", str(MAX_SEED)])
    assert result.exit_code == 0, result.output
    assert xr.load_dataset(tmp_path / "track.nc").attrs["seed"] == MAX_SEED


def test_a_seed_beyond_int64_stops_before_any_work(short_record, tmp_path):
    args = [str(short_record), "--out", str(tmp_path / "out"), "--seed", str(MAX_SEED + 1)]
    line = _one_error_line(CliRunner().invoke(track_float, args))
    assert "'--seed'" in line and "0<=x<2**63" in line
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the install
def test_the_app_installs_as_rankmodels_app_and_not_as_apps(tmp_path):
    """``apps/`` is the source folder; no top-level ``apps`` lands in site-packages."""
    import rankmodels_app

    assert Path(rankmodels_app.__file__).parent.name in ("apps", "rankmodels_app")
    probe = "import importlib.util as u; s = u.find_spec('apps'); print(s and s.origin)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    origin = proc.stdout.strip()
    assert origin == "None" or not origin.startswith(str(REPO)), origin


def test_console_scripts_point_into_rankmodels_app():
    scripts = {
        ep.name: ep
        for ep in importlib.metadata.distribution("rankmodels").entry_points
        if ep.group == "console_scripts"
    }
    assert set(scripts) == {"rankmodels", "track-float", "aggregate"}
    for ep in scripts.values():
        assert ep.module.startswith("rankmodels_app."), ep.value
        assert callable(ep.load())


@pytest.mark.parametrize("script", ["rankmodels", "track-float", "aggregate"])
def test_console_scripts_run(script):
    exe = Path(sys.executable).parent / script
    if not exe.exists():
        pytest.skip(f"{script} is not installed beside {sys.executable}")
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: {script} ")


def test_the_package_list_names_every_package_folder():
    """pyproject lists packages explicitly (apps/ is renamed); a new subpackage must be added."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = sorted(
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "rankmodels").rglob("__init__.py")
    )
    assert sorted(config["packages"]) == [*folders, "rankmodels_app"]
    assert config["package-dir"] == {"rankmodels_app": "apps"}


@pytest.mark.parametrize(
    "argv",
    [
        ["study", "surrogate-scale", "--rounds", "1", "--replicates", "1"],
        ["study", "aggregation", "--replicates", "1"],
        ["study", "tracking-clutter", "--replicates", "1"],
    ],
    ids=lambda argv: argv[1],
)
def test_a_study_refuses_an_out_folder_below_a_file_before_the_work(tmp_path, argv):
    """A regular file where --out's parent should be: one Error line, exit 2, nothing run."""
    from rankmodels_app.cli import cli

    (tmp_path / "garbage.bin").write_bytes(b"\x00")
    out = tmp_path / "garbage.bin" / "below-a-file"
    result = CliRunner().invoke(cli, [*argv, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"Error: {out}: --out: cannot create the folder (Not a directory)"
    ]
